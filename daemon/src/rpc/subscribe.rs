//! Forwarding a session's events to one subscriber: stored events first,
//! then live ones, with no gap and no duplicate.
//!
//! The live stream is a broadcast channel; a subscriber that falls behind
//! it does not lose events, it reads what it missed from the store (every
//! broadcast event was persisted first). A client that stops reading
//! altogether is dropped after [`SLOW_CLIENT_TIMEOUT`]; it can resubscribe
//! with `sinceSeq`.

use std::sync::Arc;
use std::time::Duration;

use geminid_protocol::event::SubscriptionClosed;
use jsonrpsee::core::server::helpers::MethodSink;
use jsonrpsee::{SubscriptionMessage, SubscriptionSink};
use serde_json::value::RawValue;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::outbound::Meter;
use crate::session::Subscription;
use crate::store::Store;

/// How long a send may wait for a client to read before it is dropped.
pub const SLOW_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many stored events are read at once during replay.
const REPLAY_CHUNK: u64 = 512;

/// Per-connection facts handed to subscription handlers (through jsonrpsee
/// `Extensions`).
#[derive(Clone, Debug)]
pub struct ConnectionContext {
    pub id: u64,
    /// The connection's outbound queue, for notifications outside a
    /// subscription (`session.closed`).
    pub sink: MethodSink,
    /// Cancel to disconnect the client.
    pub disconnect: CancellationToken,
    /// The name the client gave in `daemon.initialize` (the origin of the
    /// sessions it creates).
    pub client_name: std::sync::Arc<std::sync::OnceLock<String>>,
    /// Fired when answers can no longer reach the client (it went away and
    /// the grace for requests already read is over, or the daemon stops
    /// serving it): work done only for this client (`mcp.probe`) stops.
    pub closed: CancellationToken,
    /// The bytes queued for this client (`rpc/outbound.rs`).
    pub outbound: Arc<Meter>,
}

enum Stop {
    /// The client went away or unsubscribed: nothing to tell it.
    Gone,
    /// The daemon ends the stream: tell the client why.
    Closed(String),
    /// The client does not read: disconnect it.
    TooSlow,
}

struct Forwarder {
    store: Store,
    session_id: String,
    sink: SubscriptionSink,
    /// The connection's queued bytes; `None` outside a connection.
    outbound: Option<Arc<Meter>>,
    /// The last seq delivered.
    last: u64,
}

pub async fn forward(
    store: Store,
    session_id: String,
    since: u64,
    subscription: Subscription,
    sink: SubscriptionSink,
    connection: Option<ConnectionContext>,
) {
    let mut f = Forwarder {
        store,
        session_id,
        sink,
        outbound: connection.as_ref().map(|c| c.outbound.clone()),
        last: since,
    };
    let stop = f.run(subscription).await;
    let reason = match stop {
        Stop::Gone => return,
        Stop::Closed(reason) => reason,
        Stop::TooSlow => {
            tracing::warn!(session = %f.session_id, last_seq = f.last, "dropping a client that stopped reading");
            if let Some(conn) = &connection {
                conn.disconnect.cancel();
            }
            "the client did not read its events in time; resubscribe with sinceSeq".to_owned()
        }
    };
    if let Some(conn) = connection {
        let closed = SubscriptionClosed {
            session_id: f.session_id.clone(),
            reason,
            last_seq: f.last,
        };
        let notification = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "session.closed",
            "params": closed,
        });
        if let Ok(raw) = serde_json::value::to_raw_value(&notification) {
            // Best effort: a full queue means the client is not reading anyway.
            let _ = conn
                .sink
                .send_timeout(raw, Duration::from_millis(100))
                .await;
        }
    }
}

impl Forwarder {
    async fn run(&mut self, subscription: Subscription) -> Stop {
        if let Err(stop) = self.replay_until(subscription.last_seq).await {
            return stop;
        }
        let mut events = subscription.events;
        loop {
            let received = tokio::select! {
                () = self.sink.closed() => return Stop::Gone,
                received = events.recv() => received,
            };
            match received {
                Ok(event) => {
                    if event.seq <= self.last {
                        continue;
                    }
                    if event.seq > self.last + 1
                        && let Err(stop) = self.replay_until(event.seq - 1).await
                    {
                        return stop;
                    }
                    if let Err(stop) = self.send(event.seq, event.json.clone()).await {
                        return stop;
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    // Everything broadcast was persisted first: read the rest
                    // from the store, then continue live (skipping repeats).
                    let upto = match self.store.last_seq(&self.session_id) {
                        Ok(upto) => upto,
                        Err(e) => return Stop::Closed(format!("session store failed: {e}")),
                    };
                    if let Err(stop) = self.replay_until(upto).await {
                        return stop;
                    }
                }
                Err(RecvError::Closed) => {
                    return Stop::Closed(
                        "the session stopped: it was deleted or the daemon is shutting down"
                            .to_owned(),
                    );
                }
            }
        }
    }

    /// Sends stored events with `last < seq <= upto`.
    async fn replay_until(&mut self, upto: u64) -> Result<(), Stop> {
        while self.last < upto {
            let chunk_end = upto.min(self.last + REPLAY_CHUNK);
            let events = self
                .store
                .events_or_damage(&self.session_id, self.last, chunk_end)
                .map_err(|e| Stop::Closed(format!("session store failed: {e}")))?;
            if events.is_empty() {
                return Err(Stop::Closed(format!(
                    "session store is missing events {}..={chunk_end}",
                    self.last + 1
                )));
            }
            for (seq, event) in events {
                // A damaged event is replaced by an `error` event saying so:
                // what is intact is still replayed, in order.
                let json = match event {
                    Ok(json) => json,
                    Err(why) => {
                        tracing::warn!(session = %self.session_id, seq, "{why}");
                        crate::wire::damaged_event(&self.session_id, seq, &why).ok_or_else(
                            || Stop::Closed(format!("event {seq} cannot be replayed: {why}")),
                        )?
                    }
                };
                self.send(seq, json).await?;
            }
        }
        Ok(())
    }

    async fn send(&mut self, seq: u64, json: Box<RawValue>) -> Result<(), Stop> {
        // Queue only what fits in the connection's share of the outbound
        // budget; meanwhile the live stream goes on without this client,
        // which catches up from the store once it reads again.
        if let Some(meter) = &self.outbound
            && !meter.wait_room(json.get().len(), SLOW_CLIENT_TIMEOUT).await
        {
            return Err(Stop::TooSlow);
        }
        match self
            .sink
            .send_timeout(SubscriptionMessage::from(json), SLOW_CLIENT_TIMEOUT)
            .await
        {
            Ok(()) => {
                self.last = seq;
                Ok(())
            }
            Err(jsonrpsee::core::server::SendTimeoutError::Timeout(_)) => Err(Stop::TooSlow),
            Err(jsonrpsee::core::server::SendTimeoutError::Closed(_)) => Err(Stop::Gone),
        }
    }
}
