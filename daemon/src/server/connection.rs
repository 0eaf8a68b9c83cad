//! One client connection: NDJSON in, JSON-RPC dispatch over jsonrpsee
//! `Methods`, NDJSON out through one writer task.
//!
//! Bad input never ends the connection: malformed JSON gets -32700, an
//! invalid request -32600, an unknown method -32601, bad params -32602 (from
//! jsonrpsee, naming the field), an over-long line an error, and anything
//! before `daemon.initialize` -32002.

use futures::StreamExt;
use geminid_protocol::error as code;
use geminid_protocol::framing::{MAX_LINE_BYTES, OUTBOUND_QUEUE};
use jsonrpsee::Extensions;
use jsonrpsee::core::id_providers::RandomIntegerIdProvider;
use jsonrpsee::core::server::helpers::MethodSink;
use jsonrpsee::core::server::{
    BoundedSubscriptions, ConnectionId, MethodCallback, MethodResponse, Methods, SubscriptionState,
};
use jsonrpsee::types::{ErrorObjectOwned, Id, Params, Request};
use serde_json::value::RawValue;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::rpc::ConnectionContext;

/// Subscriptions one connection may hold at once.
const MAX_SUBSCRIPTIONS: u32 = 1024;
/// The largest response the daemon sends.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

pub struct Connection {
    pub id: u64,
    pub methods: Methods,
    /// Fired when the daemon stops serving connections.
    pub shutdown: CancellationToken,
}

impl Connection {
    pub async fn serve(self, stream: UnixStream) {
        let (read, write) = stream.into_split();
        let (tx, rx) = mpsc::channel::<Box<RawValue>>(OUTBOUND_QUEUE);
        let sink = MethodSink::new_with_limit(tx, MAX_RESPONSE_BYTES as u32);
        let disconnect = self.shutdown.child_token();
        let requests = TaskTracker::new();
        let writer = tokio::spawn(write_loop(write, rx, disconnect.clone()));

        let mut extensions = Extensions::new();
        extensions.insert(ConnectionId(self.id as usize));
        extensions.insert(ConnectionContext {
            id: self.id,
            sink: sink.clone(),
            disconnect: disconnect.clone(),
        });
        let mut state = State {
            methods: self.methods,
            sink,
            extensions,
            subscriptions: BoundedSubscriptions::new(MAX_SUBSCRIPTIONS),
            conn_id: ConnectionId(self.id as usize),
            initialized: false,
            requests: requests.clone(),
        };
        let mut lines = FramedRead::new(read, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
        loop {
            let line = tokio::select! {
                () = disconnect.cancelled() => break,
                line = lines.next() => line,
            };
            match line {
                None => break,
                Some(Ok(line)) => state.handle_line(&line).await,
                Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                    // The codec discards the rest of the line by itself.
                    state
                        .reply_error(
                            Id::Null,
                            code::LINE_TOO_LONG,
                            format!("line longer than {MAX_LINE_BYTES} bytes; discarded"),
                        )
                        .await;
                }
                Some(Err(LinesCodecError::Io(e))) => {
                    tracing::debug!(conn = self.id, error = %e, "read failed");
                    break;
                }
            }
        }
        // Let answers to requests already read go out, then stop writing.
        requests.close();
        tokio::select! {
            () = requests.wait() => {}
            () = disconnect.cancelled() => {}
        }
        drop(state);
        disconnect.cancel();
        let _ = writer.await;
    }
}

struct State {
    methods: Methods,
    sink: MethodSink,
    extensions: Extensions,
    subscriptions: BoundedSubscriptions,
    conn_id: ConnectionId,
    initialized: bool,
    requests: TaskTracker,
}

impl State {
    async fn handle_line(&mut self, line: &str) {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return;
        }
        let request: Request<'_> = match serde_json::from_str(line) {
            Ok(request) => request,
            Err(e) => {
                let (code, id) = classify_bad_line(line);
                let message = match code {
                    code::PARSE_ERROR => format!("parse error: {e}"),
                    _ => format!("invalid JSON-RPC request: {e}"),
                };
                return self.reply_error(id, code, message).await;
            }
        };
        let method = request.method_name().to_owned();
        let id = request.id.clone().into_owned();
        let is_initialize = method == "daemon.initialize";
        if !self.initialized && !is_initialize {
            return self
                .reply_error(
                    id,
                    code::NOT_INITIALIZED,
                    format!("call daemon.initialize before `{method}`"),
                )
                .await;
        }
        if self.initialized && is_initialize {
            return self
                .reply_error(
                    id,
                    code::ALREADY_INITIALIZED,
                    "daemon.initialize was already called on this connection",
                )
                .await;
        }
        let params = Params::new(request.params.as_ref().map(|p| p.get())).into_owned();
        let Some((_, callback)) = self.methods.method_with_name(&method) else {
            return self
                .reply_error(
                    id,
                    code::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                )
                .await;
        };
        let ext = self.extensions.clone();
        match callback.clone() {
            MethodCallback::Sync(cb) => {
                let response = cb(id, params, MAX_RESPONSE_BYTES, ext);
                self.send(response).await;
            }
            MethodCallback::Async(cb) => {
                let conn_id = self.conn_id;
                let future = cb(id, params, conn_id, MAX_RESPONSE_BYTES, ext);
                if is_initialize {
                    // The handshake is answered in order, before anything else.
                    let response = future.await;
                    self.initialized = response.is_success();
                    self.send(response).await;
                } else {
                    // Other calls (some wait for a tool) must not hold up the
                    // connection's next requests.
                    let sink = self.sink.clone();
                    self.requests.spawn(async move {
                        send_response(&sink, future.await).await;
                    });
                }
            }
            MethodCallback::Subscription(cb) => {
                let Some(permit) = self.subscriptions.acquire() else {
                    return self
                        .reply_error(
                            id,
                            code::INVALID_REQUEST,
                            format!(
                                "too many subscriptions on one connection (max {MAX_SUBSCRIPTIONS})"
                            ),
                        )
                        .await;
                };
                let state = SubscriptionState {
                    conn_id: self.conn_id,
                    id_provider: &RandomIntegerIdProvider,
                    subscription_permit: permit,
                };
                let response = cb(id, params, self.sink.clone(), state, ext).await;
                // Accepted and rejected subscriptions were answered through
                // the sink already; anything else was not.
                if !response.is_subscription() {
                    self.send(response).await;
                }
            }
            MethodCallback::Unsubscription(cb) => {
                let response = cb(id, params, self.conn_id, MAX_RESPONSE_BYTES, ext);
                self.send(response).await;
            }
        }
    }

    async fn send(&self, response: MethodResponse) {
        send_response(&self.sink, response).await;
    }

    async fn reply_error(&self, id: Id<'_>, code: i32, message: impl Into<String>) {
        let error = ErrorObjectOwned::owned(code, message.into(), None::<()>);
        self.send(MethodResponse::error(id, error)).await;
    }
}

async fn send_response(sink: &MethodSink, response: MethodResponse) {
    let is_success = response.is_success();
    let (json, notify, _) = response.into_parts();
    let _ = sink.send(json).await;
    if let Some(notify) = notify {
        notify.notify(is_success);
    }
}

/// For a line that is not a request: -32700 when it is not JSON at all,
/// -32600 (with the request's id when it has one) when it is JSON.
fn classify_bad_line(line: &str) -> (i32, Id<'static>) {
    match serde_json::from_str::<serde_json::Value>(line) {
        Err(_) => (code::PARSE_ERROR, Id::Null),
        Ok(value) => {
            let id = match value.get("id") {
                Some(serde_json::Value::Number(n)) => {
                    n.as_u64().map(Id::Number).unwrap_or(Id::Null)
                }
                Some(serde_json::Value::String(s)) => Id::Str(s.clone().into()),
                _ => Id::Null,
            };
            (code::INVALID_REQUEST, id)
        }
    }
}

/// Drains the outbound queue onto the socket, flushing when it runs dry.
async fn write_loop(
    write: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Box<RawValue>>,
    disconnect: CancellationToken,
) {
    let mut out = BufWriter::with_capacity(64 * 1024, write);
    loop {
        let message = tokio::select! {
            message = rx.recv() => message,
            () = disconnect.cancelled() => None,
        };
        let Some(message) = message else {
            break;
        };
        if write_line(&mut out, &message).await.is_err() {
            break;
        }
        while let Ok(message) = rx.try_recv() {
            if write_line(&mut out, &message).await.is_err() {
                disconnect.cancel();
                return;
            }
        }
        if out.flush().await.is_err() {
            break;
        }
    }
    // Whatever is queued when the connection ends goes out if it can.
    while let Ok(message) = rx.try_recv() {
        if write_line(&mut out, &message).await.is_err() {
            break;
        }
    }
    let _ = out.flush().await;
    disconnect.cancel();
}

async fn write_line(
    out: &mut BufWriter<OwnedWriteHalf>,
    message: &RawValue,
) -> std::io::Result<()> {
    out.write_all(message.get().as_bytes()).await?;
    out.write_all(b"\n").await
}
