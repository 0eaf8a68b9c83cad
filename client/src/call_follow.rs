//! One tool call followed from start to end, for every front end that runs
//! calls for someone (`gemctl call`, `gemctl mcp serve`): the session's
//! events are subscribed from their current end before the call starts, so
//! its whole stream is seen, and its id is known at once, so it can be
//! cancelled (`tool.cancel`).

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::ToolCallSnapshot;
use jsonrpsee::core::client::Subscription;
use serde_json::Value;

use crate::Client;

/// Why following a call stopped before it finished.
#[derive(Debug)]
pub(crate) enum FollowError {
    /// The daemon sent something that is not an event.
    BadEvent(String),
    /// The daemon closed the stream.
    Closed,
}

/// What following a call brought.
pub(crate) enum Followed {
    /// The call's next snapshot, with the event that carried it.
    Call(SessionEvent, Box<ToolCallSnapshot>),
    /// A question asked or closed in the session.
    Question(SessionEvent),
}

/// A call that has been started, and the events that tell its story.
pub(crate) struct CallFollow {
    pub session_id: String,
    pub call_id: String,
    events: Subscription<SessionEvent>,
}

impl CallFollow {
    /// Subscribes to the session from its current end, then starts the call.
    pub async fn start(
        client: &Client,
        session_id: &str,
        tool: &str,
        args: Value,
    ) -> Result<CallFollow, jsonrpsee::core::ClientError> {
        let info = client.get_session(session_id.to_owned()).await?;
        let events = client
            .subscribe_session(session_id.to_owned(), Some(info.last_seq))
            .await?;
        let started = client
            .call_tool(
                session_id.to_owned(),
                tool.to_owned(),
                Some(args),
                Some(false),
            )
            .await?;
        Ok(CallFollow {
            session_id: session_id.to_owned(),
            call_id: started.call_id,
            events,
        })
    }

    /// The call's next snapshot with the event that carried it, or a
    /// question the session asks (`questionAsked`, `questionClosed`): the
    /// call may be waiting for its answer. Other events are skipped.
    pub async fn next_or_question(&mut self) -> Result<Followed, FollowError> {
        loop {
            let event = match self.events.next().await {
                Some(Ok(event)) => event,
                Some(Err(e)) => return Err(FollowError::BadEvent(e.to_string())),
                None => return Err(FollowError::Closed),
            };
            match &event.payload {
                EventPayload::ToolCall(call) if call.call_id == self.call_id => {
                    let call = call.clone();
                    return Ok(Followed::Call(event, call));
                }
                EventPayload::QuestionAsked { .. } | EventPayload::QuestionClosed { .. } => {
                    return Ok(Followed::Question(event));
                }
                _ => {}
            }
        }
    }

    /// Asks the daemon to cancel the call (`tool.cancel`); true when it was
    /// still running.
    pub async fn cancel(&self, client: &Client) -> Result<bool, jsonrpsee::core::ClientError> {
        Ok(client
            .cancel_tool(self.session_id.clone(), self.call_id.clone())
            .await?
            .ok)
    }
}
