//! One client connection: NDJSON in, JSON-RPC dispatch over jsonrpsee
//! `Methods`, NDJSON out through one writer task.
//!
//! Bad input never ends the connection: malformed JSON gets -32700, an
//! invalid request -32600, an unknown method -32601, bad params -32602 (from
//! jsonrpsee, naming the field), an over-long line an error, and anything
//! before `daemon.initialize` -32002.

use futures::StreamExt;
use geminid_protocol::error as code;
use geminid_protocol::framing::MAX_LINE_BYTES;
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
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::admission::Activity;
use super::framing::{Frame, LineFramer};
use crate::rpc::{AnswerSlot, ConnectionContext, Meter, OutboundBudget, SplitResult};
use std::sync::Arc;
use std::time::Duration;

/// Messages handed to the pump and not yet counted (`rpc/outbound.rs`):
/// few, so that a sender cannot get far ahead of the count while the pump
/// waits for a core.
const HANDOFF_QUEUE: usize = 16;

/// Subscriptions one connection may hold at once.
const MAX_SUBSCRIPTIONS: u32 = 1024;
/// The largest response the daemon sends.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

pub struct Connection {
    pub id: u64,
    pub methods: Methods,
    /// Fired when the daemon stops serving connections.
    pub shutdown: CancellationToken,
    /// The memory all connections' outbound queues share.
    pub outbound: Arc<OutboundBudget>,
    /// What the connection does, for the admission's shedding.
    pub activity: Arc<Activity>,
    /// How long the client has to complete `daemon.initialize`.
    pub initialize_timeout: Duration,
}

/// How long answers to requests already read may take once the connection
/// is closing (client EOF or daemon shutdown).
const CLOSE_GRACE: Duration = Duration::from_secs(5);

impl Connection {
    pub async fn serve(self, stream: UnixStream) {
        let (read, write) = stream.into_split();
        let (tx, rx) = mpsc::channel::<Box<RawValue>>(HANDOFF_QUEUE);
        let sink = MethodSink::new_with_limit(tx, MAX_RESPONSE_BYTES as u32);
        let (split_tx, split_rx) = mpsc::channel::<SplitAnswer>(HANDOFF_QUEUE);
        // `kill` drops the client at once (it stopped reading); `close` lets
        // the writer drain what is queued and end.
        let kill = CancellationToken::new();
        let close = CancellationToken::new();
        let closed = CancellationToken::new();
        let requests = TaskTracker::new();
        // Everything queued for the client is counted (`rpc/outbound.rs`):
        // the pump takes messages from jsonrpsee's queue as they come and
        // counts them, the writer uncounts them as they are written.
        let meter = self.outbound.meter();
        let (counted_tx, counted_rx) = mpsc::unbounded_channel();
        let pump = tokio::spawn(pump(
            Outbox {
                rx,
                split_rx,
                split_first: false,
            },
            counted_tx,
            meter.clone(),
            kill.clone(),
            close.clone(),
        ));
        let writer = tokio::spawn(write_loop(write, counted_rx, meter.clone(), kill.clone()));

        let mut extensions = Extensions::new();
        extensions.insert(ConnectionId(self.id as usize));
        extensions.insert(ConnectionContext {
            id: self.id,
            sink: sink.clone(),
            disconnect: kill.clone(),
            closed: closed.clone(),
            client_name: Default::default(),
            outbound: meter.clone(),
        });
        let mut state = State {
            methods: self.methods,
            sink,
            split: split_tx,
            extensions,
            subscriptions: BoundedSubscriptions::new(MAX_SUBSCRIPTIONS),
            conn_id: ConnectionId(self.id as usize),
            initialized: false,
            requests: requests.clone(),
            activity: self.activity.clone(),
        };
        let initialize_by = tokio::time::Instant::now() + self.initialize_timeout;
        let mut frames = FramedRead::new(read, LineFramer::new(MAX_LINE_BYTES));
        loop {
            // A client that does not read its answers gets no more read
            // from it until it does.
            if meter.over_share() {
                tokio::select! {
                    () = kill.cancelled() => break,
                    () = self.shutdown.cancelled() => break,
                    () = meter.wait_within_share() => {}
                }
            }
            let frame = tokio::select! {
                () = kill.cancelled() => break,
                () = self.shutdown.cancelled() => break,
                () = self.activity.shed.cancelled() => {
                    tracing::info!(conn = self.id, "shed an idle connection: the daemon is at its connection limit");
                    state.reply_error(
                        Id::Null,
                        code::CONNECTION_CLOSED,
                        "the daemon is at its connection limit and closed this idle connection",
                    ).await;
                    break;
                }
                () = tokio::time::sleep_until(initialize_by), if !state.initialized => {
                    tracing::debug!(conn = self.id, "closed a connection that did not initialize in time");
                    state.reply_error(
                        Id::Null,
                        code::CONNECTION_CLOSED,
                        format!(
                            "daemon.initialize did not come within {:?}; connection closed",
                            self.initialize_timeout
                        ),
                    ).await;
                    break;
                }
                frame = frames.next() => frame,
            };
            match frame {
                None => break,
                Some(Ok(Frame::Line(line))) => state.handle_line(&line).await,
                Some(Ok(Frame::TooLong)) => {
                    state
                        .reply_error(
                            Id::Null,
                            code::LINE_TOO_LONG,
                            format!("line longer than {MAX_LINE_BYTES} bytes; discarded"),
                        )
                        .await;
                }
                Some(Ok(Frame::NotUtf8)) => {
                    state
                        .reply_error(
                            Id::Null,
                            code::PARSE_ERROR,
                            "parse error: the line is not UTF-8",
                        )
                        .await;
                }
                Some(Err(e)) => {
                    tracing::debug!(conn = self.id, error = %e, "read failed");
                    break;
                }
            }
        }
        // Answers to requests already read still go out (bounded), then the
        // writer drains its queue and the connection ends.
        requests.close();
        tokio::select! {
            () = requests.wait() => {}
            () = kill.cancelled() => {}
            () = tokio::time::sleep(CLOSE_GRACE) => {
                tracing::warn!(conn = self.id, "requests still running at close; dropping their answers");
            }
        }
        // Their answers can no longer go out: work done only for this
        // client stops.
        closed.cancel();
        drop(state);
        close.cancel();
        if tokio::time::timeout(CLOSE_GRACE, writer).await.is_err() {
            kill.cancel();
        }
        let _ = pump.await;
        // Whatever still holds the meter, the queue is gone.
        meter.close();
    }
}

struct State {
    methods: Methods,
    sink: MethodSink,
    /// Answers written in pieces (see `rpc::AnswerSlot`).
    split: mpsc::Sender<SplitAnswer>,
    extensions: Extensions,
    subscriptions: BoundedSubscriptions,
    conn_id: ConnectionId,
    initialized: bool,
    requests: TaskTracker,
    activity: Arc<Activity>,
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
                let (code, id) = match classify_bad_line(line) {
                    BadLine::Notification => {
                        // JSON-RPC: notifications are never answered, and we
                        // define none that clients send.
                        tracing::debug!("ignored a notification");
                        return;
                    }
                    BadLine::Error(code, id) => (code, id),
                };
                let message = match code {
                    code::PARSE_ERROR => format!("parse error: {e}"),
                    _ => format!("invalid JSON-RPC request: {e}"),
                };
                return self.reply_error(id, code, message).await;
            }
        };
        let params_text = request.params.as_ref().map(|p| p.get().to_owned());
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
        let in_flight = self.activity.request();
        let Some((_, callback)) = self.methods.method_with_name(&method) else {
            return self
                .reply_error(
                    id,
                    code::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                )
                .await;
        };
        let mut ext = self.extensions.clone();
        match callback.clone() {
            MethodCallback::Sync(cb) => {
                let response = cb(id, params, MAX_RESPONSE_BYTES, ext);
                send_response(&self.sink, response, params_text.as_deref()).await;
            }
            MethodCallback::Async(cb) => {
                let conn_id = self.conn_id;
                let slot = AnswerSlot::default();
                ext.insert(slot.clone());
                let answer_id = id.clone();
                let future = cb(id, params, conn_id, MAX_RESPONSE_BYTES, ext);
                if is_initialize {
                    // The handshake is answered in order, before anything else.
                    let response = future.await;
                    self.initialized = response.is_success();
                    if self.initialized {
                        self.activity.initialized();
                    }
                    send_response(&self.sink, response, params_text.as_deref()).await;
                } else {
                    // Other calls (some wait for a tool) must not hold up the
                    // connection's next requests.
                    let sink = self.sink.clone();
                    let split = self.split.clone();
                    self.requests.spawn(async move {
                        let response = future.await;
                        drop(in_flight);
                        match slot.take() {
                            Some(result) => {
                                let answer = SplitAnswer {
                                    id: answer_id,
                                    result,
                                };
                                let _ = split.send(answer).await;
                            }
                            None => send_response(&sink, response, params_text.as_deref()).await,
                        }
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
                if response.is_subscription() {
                    self.activity.subscribed();
                } else {
                    send_response(&self.sink, response, params_text.as_deref()).await;
                }
            }
            MethodCallback::Unsubscription(cb) => {
                let response = cb(id, params, self.conn_id, MAX_RESPONSE_BYTES, ext);
                send_response(&self.sink, response, params_text.as_deref()).await;
            }
        }
    }

    async fn reply_error(&self, id: Id<'_>, code: i32, message: impl Into<String>) {
        let error = ErrorObjectOwned::owned(code, message.into(), None::<()>);
        send_response(&self.sink, MethodResponse::error(id, error), None).await;
    }
}

/// Sends a response; an invalid-params error first gets a message that
/// names the field (from the request's `params` text).
async fn send_response(sink: &MethodSink, response: MethodResponse, params: Option<&str>) {
    let is_success = response.is_success();
    let (mut json, notify, _) = response.into_parts();
    if !is_success {
        json = explain_invalid_params(json, params);
    }
    let _ = sink.send(json).await;
    if let Some(notify) = notify {
        notify.notify(is_success);
    }
}

fn explain_invalid_params(json: Box<RawValue>, params: Option<&str>) -> Box<RawValue> {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(json.get()) else {
        return json;
    };
    match value.get_mut("error") {
        Some(error) if error.get("code") == Some(&serde_json::json!(code::INVALID_PARAMS)) => {
            super::invalid_params::name_the_field(error, params);
            serde_json::value::to_raw_value(&value).unwrap_or(json)
        }
        Some(_) | None => json,
    }
}

/// What a line that did not parse as a request is.
enum BadLine {
    /// A well-formed notification (no `id`): not answered.
    Notification,
    /// -32700 when it is not JSON at all, -32600 (with the request's id
    /// when it has one) when it is JSON.
    Error(i32, Id<'static>),
}

fn classify_bad_line(line: &str) -> BadLine {
    match serde_json::from_str::<serde_json::Value>(line) {
        Err(_) => BadLine::Error(code::PARSE_ERROR, Id::Null),
        Ok(value) => {
            let is_notification = value.get("jsonrpc") == Some(&serde_json::json!("2.0"))
                && value
                    .get("method")
                    .is_some_and(serde_json::Value::is_string)
                && value.get("id").is_none();
            if is_notification {
                return BadLine::Notification;
            }
            let id = match value.get("id") {
                Some(serde_json::Value::Number(n)) => {
                    n.as_u64().map(Id::Number).unwrap_or(Id::Null)
                }
                Some(serde_json::Value::String(s)) => Id::Str(s.clone().into()),
                _ => Id::Null,
            };
            BadLine::Error(code::INVALID_REQUEST, id)
        }
    }
}

/// A success answer whose result the handler left split (see
/// `rpc::AnswerSlot`).
struct SplitAnswer {
    id: Id<'static>,
    result: SplitResult,
}

/// What the writer sends: jsonrpsee's answers and notifications, and
/// answers in pieces. Answers to different requests are not ordered
/// among themselves, so neither queue waits for the other; they take
/// turns, so that a stream of notifications cannot hold an answer back.
struct Outbox {
    rx: mpsc::Receiver<Box<RawValue>>,
    split_rx: mpsc::Receiver<SplitAnswer>,
    /// Whether the split queue goes first next time.
    split_first: bool,
}

enum Outbound {
    Json(Box<RawValue>),
    Split(SplitAnswer),
}

impl Outbound {
    /// The memory the message holds (what the outbound budget counts).
    fn bytes(&self) -> usize {
        match self {
            Outbound::Json(json) => json.get().len(),
            Outbound::Split(SplitAnswer { result, .. }) => {
                result.head.len() + result.shared.get().len() + result.tail.len()
            }
        }
    }
}

impl Outbox {
    /// The next message, once one is queued; None when both queues are
    /// closed and empty.
    async fn next(&mut self) -> Option<Outbound> {
        tokio::select! {
            Some(message) = self.rx.recv() => Some(Outbound::Json(message)),
            Some(answer) = self.split_rx.recv() => Some(Outbound::Split(answer)),
            else => None,
        }
    }

    /// The next message already queued.
    fn try_next(&mut self) -> Option<Outbound> {
        self.split_first = !self.split_first;
        let json = |rx: &mut mpsc::Receiver<Box<RawValue>>| rx.try_recv().ok().map(Outbound::Json);
        let split = |rx: &mut mpsc::Receiver<SplitAnswer>| rx.try_recv().ok().map(Outbound::Split);
        if self.split_first {
            split(&mut self.split_rx).or_else(|| json(&mut self.rx))
        } else {
            json(&mut self.rx).or_else(|| split(&mut self.split_rx))
        }
    }
}

/// Moves messages from the outbound queues into the counted queue as soon
/// as they arrive, counting their bytes. Ends on `kill` at once, or on
/// `close` once the queues are empty.
async fn pump(
    mut outbox: Outbox,
    counted: mpsc::UnboundedSender<Outbound>,
    meter: Arc<Meter>,
    kill: CancellationToken,
    close: CancellationToken,
) {
    loop {
        let message = tokio::select! {
            biased;
            () = kill.cancelled() => return,
            message = outbox.next() => message,
            () = close.cancelled() => None,
        };
        let Some(message) = message else {
            return;
        };
        let bytes = message.bytes();
        meter.add(bytes);
        if counted.send(message).is_err() {
            meter.sub(bytes);
            return;
        }
        while let Some(message) = outbox.try_next() {
            let bytes = message.bytes();
            meter.add(bytes);
            if counted.send(message).is_err() {
                meter.sub(bytes);
                return;
            }
        }
    }
}

/// Drains the counted queue onto the socket, flushing when it runs dry.
/// Ends on `kill` at once, or once the pump has ended and the queue is
/// empty.
async fn write_loop(
    write: OwnedWriteHalf,
    mut queue: mpsc::UnboundedReceiver<Outbound>,
    meter: Arc<Meter>,
    kill: CancellationToken,
) {
    let mut out = BufWriter::with_capacity(64 * 1024, write);
    loop {
        let message = tokio::select! {
            biased;
            () = kill.cancelled() => return,
            message = queue.recv() => message,
        };
        let Some(message) = message else {
            break;
        };
        let mut written = write_message(&mut out, &message).await;
        meter.sub(message.bytes());
        drop(message);
        while written.is_ok()
            && let Ok(message) = queue.try_recv()
        {
            written = write_message(&mut out, &message).await;
            meter.sub(message.bytes());
        }
        if written.is_err() || out.flush().await.is_err() {
            // The client is gone: stop everything that writes to it.
            kill.cancel();
            return;
        }
    }
    let _ = out.flush().await;
    let _ = out.shutdown().await;
    kill.cancel();
}

/// Writes one message and its newline.
async fn write_message(
    out: &mut BufWriter<OwnedWriteHalf>,
    message: &Outbound,
) -> std::io::Result<()> {
    match message {
        Outbound::Json(json) => out.write_all(json.get().as_bytes()).await?,
        Outbound::Split(SplitAnswer { id, result }) => {
            // What jsonrpsee's `Response` would serialize, in its order.
            let id = serde_json::to_string(id).map_err(std::io::Error::other)?;
            out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":").await?;
            out.write_all(id.as_bytes()).await?;
            out.write_all(b",\"result\":").await?;
            out.write_all(result.head.as_bytes()).await?;
            out.write_all(result.shared.get().as_bytes()).await?;
            out.write_all(result.tail.as_bytes()).await?;
            out.write_all(b"}").await?;
        }
    }
    out.write_all(b"\n").await
}
