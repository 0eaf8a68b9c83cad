//! The HTTP reads of discovery: the server's challenge and the two
//! metadata documents.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;

use super::challenge::{self, Challenge};
use super::{OAuthError, http_error};

pub fn client() -> Result<reqwest::Client, OAuthError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| http_error("(client)", e))
}

/// RFC 9728 protected-resource metadata (the fields used).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceMetadata {
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 / OIDC authorization-server metadata (the fields used).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServerMetadata {
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub grant_types_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// SEP-991: a URL may be the client id.
    pub client_id_metadata_document_supported: Option<bool>,
}

/// Asks the server without a token: `Some` when it answers 401 (or 403)
/// with what its `WWW-Authenticate` says. Streamable HTTP gets an
/// `initialize` POST, legacy SSE a GET of its stream.
pub async fn challenge(
    http: &reqwest::Client,
    url: &str,
    sse: bool,
    headers: &BTreeMap<String, String>,
) -> Result<Option<(u16, Challenge)>, OAuthError> {
    let mut request = if sse {
        http.get(url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
    } else {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "geminid", "version": env!("CARGO_PKG_VERSION")}}
        });
        http.post(url)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .json(&body)
    };
    for (k, v) in headers {
        if !k.eq_ignore_ascii_case("authorization") {
            request = request.header(k, v);
        }
    }
    let response = request.send().await.map_err(|e| http_error(url, e))?;
    let status = response.status().as_u16();
    if status != 401 && status != 403 {
        return Ok(None);
    }
    let header = response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Some((status, challenge::parse(&header))))
}

/// The first of `urls` that answers 2xx with a JSON document of type `T`.
pub async fn first_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    urls: &[Url],
) -> Option<(Url, T)> {
    for url in urls {
        let Ok(response) = http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .header("MCP-Protocol-Version", "2025-11-25")
            .send()
            .await
        else {
            continue;
        };
        if !response.status().is_success() {
            continue;
        }
        match response.json::<T>().await {
            Ok(doc) => return Some((url.clone(), doc)),
            Err(e) => tracing::debug!(url = %url, error = %e, "metadata is not what it should be"),
        }
    }
    None
}
