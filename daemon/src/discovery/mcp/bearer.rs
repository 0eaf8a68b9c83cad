//! The OAuth access token a streamable HTTP connection sends, read at each
//! request rather than fixed when the connection opened: a token stored by
//! a scope step-up (or a refresh) applies to the open connection at once,
//! so the refused request can be sent again on it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use futures::stream::BoxStream;
use reqwest13::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

/// One server's current access token, shared by its auth and its
/// connection.
#[derive(Clone, Default, Debug)]
pub struct LiveToken(Arc<RwLock<Option<String>>>);

impl LiveToken {
    pub fn get(&self) -> Option<String> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set(&self, token: Option<String>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = token;
    }
}

/// rmcp's reqwest client with the `Authorization` header taken from a
/// [`LiveToken`] at each request.
#[derive(Clone)]
pub struct BearerClient {
    http: reqwest13::Client,
    token: LiveToken,
}

/// The most redirects one request follows.
const MAX_REDIRECTS: usize = 10;

impl BearerClient {
    /// As rmcp's default client: no idle pooling (delayed-ACK stalls), and
    /// only same-origin 307/308 redirects (a POST body is kept and the
    /// token never goes to another host).
    pub fn new(token: LiveToken) -> Result<BearerClient, String> {
        let policy = reqwest13::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest13::StatusCode::TEMPORARY_REDIRECT
                    | reqwest13::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let http = reqwest13::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(policy)
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        Ok(BearerClient { http, token })
    }
}

type Post = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest13::Error>>;
type Stream =
    Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest13::Error>>;

impl StreamableHttpClient for BearerClient {
    type Error = reqwest13::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Post> + Send + '_ {
        self.http
            .post_message(uri, message, session_id, self.token.get(), custom_headers)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Post> + Send + '_ {
        self.http.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            self.token.get(),
            custom_headers,
            max_sse_event_size,
        )
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.http
            .delete_session(uri, session_id, self.token.get(), custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Stream> + Send + '_ {
        self.http.get_stream(
            uri,
            session_id,
            last_event_id,
            self.token.get(),
            custom_headers,
        )
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Stream> + Send + '_ {
        self.http.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            self.token.get(),
            custom_headers,
            max_sse_event_size,
        )
    }
}
