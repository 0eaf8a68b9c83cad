//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05), which rmcp no
//! longer has: GET the event stream, read the `endpoint` event, then POST
//! each JSON-RPC message to that endpoint; answers arrive as `message`
//! events on the stream.
//!
//! It is handed to rmcp as a (sink, stream) pair of channels. Two tasks do
//! the IO: the reader ends (closing the stream, so rmcp sees the server
//! gone) when the event stream ends; the writer ends when rmcp drops the
//! sink, and its end also stops the reader.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("bad URL {0:?}")]
    Url(String),
    #[error("GET {url}: {source}")]
    Get { url: String, source: reqwest::Error },
    #[error("GET {url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("the event stream ended before the `endpoint` event")]
    NoEndpoint,
    #[error("bad endpoint {0:?}")]
    Endpoint(String),
}

use crate::sse::Parser;

pub type Pair = (
    mpsc::Sender<ClientJsonRpcMessage>,
    mpsc::Receiver<ServerJsonRpcMessage>,
);

/// Opens the event stream and waits for the endpoint.
pub async fn connect(url: &str, headers: &BTreeMap<String, String>) -> Result<Pair, SseError> {
    let base = reqwest::Url::parse(url).map_err(|_| SseError::Url(url.to_owned()))?;
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|source| SseError::Get {
            url: url.to_owned(),
            source,
        })?;
    let mut get = http
        .get(base.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream");
    for (k, v) in headers {
        get = get.header(k, v);
    }
    let response = get.send().await.map_err(|source| SseError::Get {
        url: url.to_owned(),
        source,
    })?;
    if !response.status().is_success() {
        return Err(SseError::Status {
            url: url.to_owned(),
            status: response.status().as_u16(),
        });
    }
    let mut body = response.bytes_stream();
    let mut parser = Parser::default();
    let mut early = Vec::new();
    let endpoint = 'found: loop {
        let Some(Ok(chunk)) = body.next().await else {
            return Err(SseError::NoEndpoint);
        };
        let mut events = parser.push(&chunk).into_iter();
        while let Some(event) = events.next() {
            if event.event == "endpoint" {
                early.extend(events);
                break 'found event.data;
            }
        }
    };
    let endpoint = base
        .join(endpoint.trim())
        .map_err(|_| SseError::Endpoint(endpoint.clone()))?;

    let (to_server, mut outgoing) = mpsc::channel::<ClientJsonRpcMessage>(32);
    let (mut incoming, from_server) = mpsc::channel::<ServerJsonRpcMessage>(32);
    let stop = CancellationToken::new();

    let reader_stop = stop.clone();
    tokio::spawn(async move {
        let mut pending = early;
        loop {
            for event in pending.drain(..) {
                if event.event != "message" {
                    continue;
                }
                match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                    Ok(message) => {
                        if futures::SinkExt::send(&mut incoming, message)
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "ignoring a bad SSE message"),
                }
            }
            let chunk = tokio::select! {
                () = reader_stop.cancelled() => return,
                chunk = body.next() => chunk,
            };
            match chunk {
                Some(Ok(bytes)) => pending = parser.push(&bytes),
                // The stream is gone: dropping `incoming` tells rmcp.
                Some(Err(_)) | None => return,
            }
        }
    });

    let headers = headers.clone();
    tokio::spawn(async move {
        // Stop the reader once rmcp is done with the connection.
        let _stop = stop.drop_guard();
        while let Some(message) = outgoing.next().await {
            let mut post = http.post(endpoint.clone()).json(&message);
            for (k, v) in &headers {
                post = post.header(k, v);
            }
            match post.send().await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => {
                    tracing::warn!(status = r.status().as_u16(), "SSE POST refused");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "SSE POST failed");
                    return;
                }
            }
        }
    });
    Ok((to_server, from_server))
}
