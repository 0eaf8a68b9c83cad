//! Connecting to the daemon and the handshake.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use geminid_protocol::PROTOCOL_VERSION;
use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::{ClientInfo, InitializeResult};
use jsonrpsee::core::client::async_client::{Client as RpcClient, ClientBuilder};
use tokio::net::UnixStream;

use crate::transport::{Receiver, Sender};

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("geminid is not reachable at {path}: {source} (start it with `gemctl daemon start`)")]
    Unreachable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Rpc(#[from] jsonrpsee::core::ClientError),
}

/// A connection to `geminid`, initialized and ready.
pub struct Client {
    rpc: RpcClient,
    /// What the daemon said in the handshake.
    pub daemon: InitializeResult,
}

impl Deref for Client {
    type Target = RpcClient;

    fn deref(&self) -> &RpcClient {
        &self.rpc
    }
}

impl Client {
    /// Connects to the socket and performs `daemon.initialize`.
    pub async fn connect(socket: &Path) -> Result<Client, ClientError> {
        Self::connect_as(socket, "gemctl-lib").await
    }

    /// Like [`Client::connect`], naming the client in the daemon's logs.
    pub async fn connect_as(socket: &Path, name: &str) -> Result<Client, ClientError> {
        let stream =
            UnixStream::connect(socket)
                .await
                .map_err(|source| ClientError::Unreachable {
                    path: socket.to_path_buf(),
                    source,
                })?;
        let (read, write) = stream.into_split();
        let rpc = ClientBuilder::default()
            // Calls may wait for a person to approve them.
            .request_timeout(Duration::from_secs(24 * 60 * 60))
            .max_buffer_capacity_per_subscription(65_536)
            .build_with_tokio(Sender(write), Receiver::new(read));
        let daemon = rpc
            .initialize(Some(ClientInfo {
                name: Some(name.to_owned()),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                protocol_version: Some(PROTOCOL_VERSION),
            }))
            .await?;
        Ok(Client { rpc, daemon })
    }
}

/// `$GEMINID_SOCKET`, else `$XDG_RUNTIME_DIR/geminid.sock`, else a
/// per-user path under /tmp (the daemon's own default).
pub fn default_socket() -> PathBuf {
    if let Some(path) = std::env::var_os("GEMINID_SOCKET").filter(|v| !v.is_empty()) {
        return PathBuf::from(path);
    }
    geminid_protocol::paths::default_socket()
}
