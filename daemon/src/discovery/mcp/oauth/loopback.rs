//! The loopback listener the authorization redirect comes back to (RFC
//! 8252 §7.3): binds 127.0.0.1 (on the port of a configured `redirectUri`,
//! else any free one), answers the first request to the callback path and
//! hands over its query.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::OAuthError;

pub const CALLBACK_PATH: &str = "/oauth/callback";

pub struct Loopback {
    listener: TcpListener,
    path: String,
    pub redirect_uri: String,
}

impl Loopback {
    /// Binds for `configured` (a `redirectUri` setting) or a free port.
    pub async fn bind(configured: Option<&str>) -> Result<Loopback, OAuthError> {
        let (port, path, host) = match configured {
            Some(uri) => {
                let url = Url::parse(uri).map_err(|_| OAuthError::Url(uri.to_owned()))?;
                let host = url.host_str().unwrap_or("127.0.0.1").to_owned();
                (
                    url.port_or_known_default().unwrap_or(0),
                    url.path().to_owned(),
                    host,
                )
            }
            None => (0, CALLBACK_PATH.to_owned(), "127.0.0.1".to_owned()),
        };
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| super::http_error(&format!("127.0.0.1:{port}"), e))?;
        let port = listener
            .local_addr()
            .map_err(|e| super::http_error("127.0.0.1", e))?
            .port();
        let redirect_uri = format!("http://{host}:{port}{path}");
        Ok(Loopback {
            listener,
            path,
            redirect_uri,
        })
    }

    /// Waits (at most `timeout`) for the redirect; answers it with a page
    /// saying the window can be closed, and returns its query parameters.
    pub async fn wait(self, timeout: Duration) -> Result<BTreeMap<String, String>, OAuthError> {
        tokio::time::timeout(timeout, self.accept_callback())
            .await
            .map_err(|_| OAuthError::Timeout(timeout))?
    }

    async fn accept_callback(self) -> Result<BTreeMap<String, String>, OAuthError> {
        loop {
            let Ok((mut stream, _)) = self.listener.accept().await else {
                continue;
            };
            let mut buf = Vec::with_capacity(2048);
            let mut chunk = [0u8; 2048];
            // The request line and headers; the body (none) is not read.
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf);
            let target = head
                .lines()
                .next()
                .and_then(|line| line.split_whitespace().nth(1))
                .unwrap_or("/")
                .to_owned();
            let Ok(url) = Url::parse(&format!("http://loopback{target}")) else {
                continue;
            };
            if url.path() != self.path {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let params: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
            let body = if params.contains_key("code") {
                "geminid: the login is complete; you can close this window."
            } else {
                "geminid: the login failed; see gemctl for why."
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            return Ok(params);
        }
    }
}
