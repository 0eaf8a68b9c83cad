//! The calls in flight on one MCP connection, and the one rule that says
//! whose a request of the server is: an elicitation (a question to the
//! session's people), a sampling request (the session's model) and a
//! progress notification (the call's output) all look here.
//!
//! The rule ([`attribute`], pure): the call the request's related
//! progress token names; else, when every call in flight that can be
//! asked belongs to one owner (a session, or a probe), that owner (one
//! call: that call); else nobody, and the request is refused with the
//! reason. A request never goes to a guessed session. (The related
//! request id of the TypeScript SDK does not travel on the wire over
//! stdio, and rmcp does not show the HTTP stream a request came on, so
//! the progress token is the one relation a request can carry.)
//!
//! A call enters before its request is sent, so a request the server
//! makes at once already finds it; its progress token is known once the
//! request is queued.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};

use super::progress::{self, Progress};
use crate::questions::Asker;
use crate::tools::OutputSink;

/// One call in flight as the rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct InFlight<'a> {
    /// Who answers its requests (none: a call nobody can be asked for).
    pub owner: Option<&'a str>,
    /// Its progress token, once known.
    pub token: Option<&'a str>,
}

/// Whose a request is: an index into the calls given to [`attribute`].
#[derive(Debug, PartialEq, Eq)]
pub enum Whose {
    /// That call's.
    Call(usize),
    /// The owner of that call's, not tied to one call (several calls of
    /// one owner are in flight).
    Owner(usize),
}

/// Why a request is nobody's.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No call of any session is in flight.
    NoCall,
    /// Calls of this many owners are, and the request names none.
    Several(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NoCall => write!(f, "no session's tool call to it is running"),
            Refused::Several(n) => write!(
                f,
                "tool calls of {n} sessions are running and the request names none, so the session that asked cannot be told"
            ),
        }
    }
}

/// The one attribution rule (see the module comment).
pub fn attribute(calls: &[InFlight<'_>], token: Option<&str>) -> Result<Whose, Refused> {
    let owned: Vec<(usize, &str)> = calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.owner.map(|o| (i, o)))
        .collect();
    if let Some(token) = token
        && let Some((i, _)) = owned.iter().find(|(i, _)| calls[*i].token == Some(token))
    {
        return Ok(Whose::Call(*i));
    }
    match owned.as_slice() {
        [] => Err(Refused::NoCall),
        [(i, _)] => Ok(Whose::Call(*i)),
        [(first, owner), rest @ ..] if rest.iter().all(|(_, o)| o == owner) => {
            Ok(Whose::Owner(*first))
        }
        _ => Err(Refused::Several(
            owned
                .iter()
                .map(|(_, o)| *o)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
        )),
    }
}

struct Entry {
    token: Option<String>,
    progress: Arc<Progress>,
}

/// The calls in flight on one connection.
#[derive(Default)]
pub struct Calls {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    calls: BTreeMap<u64, Entry>,
}

impl Calls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call starts; its progress (once its token is set) goes to
    /// `output`, its requests are answered through `output`'s asker. The
    /// call is over when the guard is dropped.
    pub fn enter(&self, output: OutputSink) -> CallGuard<'_> {
        let mut table = self.lock();
        let id = table.next;
        table.next += 1;
        table.calls.insert(
            id,
            Entry {
                token: None,
                progress: Progress::new(output),
            },
        );
        CallGuard { calls: self, id }
    }

    /// Whose a request is: the asker of the call (or, for an owner with
    /// several calls in flight, the owner's asker tied to none of them).
    pub fn asker_for(&self, token: Option<&ProgressToken>) -> Result<Asker, Refused> {
        let token = token.map(token_key);
        let table = self.lock();
        let entries: Vec<&Entry> = table.calls.values().collect();
        let askers: Vec<Option<&Asker>> =
            entries.iter().map(|e| e.progress.sink().asker()).collect();
        let in_flight: Vec<InFlight<'_>> = entries
            .iter()
            .zip(&askers)
            .map(|(e, a)| InFlight {
                owner: a.map(|a| a.owner.as_str()),
                token: e.token.as_deref(),
            })
            .collect();
        let (i, whole_owner) = match attribute(&in_flight, token.as_deref())? {
            Whose::Call(i) => (i, false),
            Whose::Owner(i) => (i, true),
        };
        let Some(asker) = askers[i] else {
            return Err(Refused::NoCall);
        };
        let mut asker = asker.clone();
        if whole_owner {
            asker.call_id = None;
        }
        Ok(asker)
    }

    /// Sends one progress notification to the call that asked for it
    /// (called in arrival order, see `ordered.rs`).
    pub fn route_progress(&self, params: &ProgressNotificationParam) {
        let key = token_key(&params.progress_token);
        let progress = self
            .lock()
            .calls
            .values()
            .find(|e| e.token.as_deref() == Some(key.as_str()))
            .map(|e| e.progress.clone());
        if let Some(progress) = progress {
            progress.push(progress::line(params));
        }
    }
}

/// A call in flight until dropped; then what is left of its progress is
/// sent.
pub struct CallGuard<'a> {
    calls: &'a Calls,
    id: u64,
}

impl CallGuard<'_> {
    /// The call's request went out with this progress token.
    pub fn set_token(&self, token: &ProgressToken) {
        if let Some(entry) = self.calls.lock().calls.get_mut(&self.id) {
            entry.token = Some(token_key(token));
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let entry = self.calls.lock().calls.remove(&self.id);
        if let Some(entry) = entry {
            entry.progress.flush();
        }
    }
}

fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(owner: &'a str, token: &'a str) -> InFlight<'a> {
        InFlight {
            owner: Some(owner),
            token: Some(token),
        }
    }

    #[test]
    fn the_named_call_wins_over_everything_else() {
        let calls = [call("s1", "1"), call("s2", "2"), call("s2", "3")];
        assert_eq!(attribute(&calls, Some("2")), Ok(Whose::Call(1)));
        // A token of no call in flight names nobody: the rest of the rule.
        assert_eq!(attribute(&calls, Some("9")), Err(Refused::Several(2)));
    }

    #[test]
    fn without_a_token_the_one_owner_with_calls_in_flight() {
        assert_eq!(attribute(&[], None), Err(Refused::NoCall));
        assert_eq!(attribute(&[call("s1", "1")], None), Ok(Whose::Call(0)));
        assert_eq!(
            attribute(&[call("s1", "1"), call("s1", "2")], None),
            Ok(Whose::Owner(0))
        );
        assert_eq!(
            attribute(&[call("s1", "1"), call("s2", "2"), call("s1", "3")], None),
            Err(Refused::Several(2))
        );
    }

    #[test]
    fn calls_nobody_can_be_asked_for_do_not_count() {
        let anonymous = InFlight {
            owner: None,
            token: Some("1"),
        };
        assert_eq!(attribute(&[anonymous], Some("1")), Err(Refused::NoCall));
        assert_eq!(
            attribute(&[anonymous, call("s1", "2")], None),
            Ok(Whose::Call(1))
        );
        // A call whose token is not known yet still counts for its owner.
        let fresh = InFlight {
            owner: Some("s1"),
            token: None,
        };
        assert_eq!(attribute(&[fresh], None), Ok(Whose::Call(0)));
    }

    fn sink_of(owner: &str, call: &str) -> OutputSink {
        OutputSink::new(|_| {}).with_asker(Asker::new(owner.into(), Some(call.into()), |_, _| {}))
    }

    #[test]
    fn the_registry_answers_with_the_call_s_asker_and_forgets_ended_calls() {
        let calls = Calls::default();
        let token = |n| ProgressToken(rmcp::model::NumberOrString::Number(n));
        assert_eq!(calls.asker_for(None).unwrap_err(), Refused::NoCall);
        let a = calls.enter(sink_of("s1", "c1"));
        a.set_token(&token(1));
        let b = calls.enter(sink_of("s1", "c2"));
        let asker = calls.asker_for(None).unwrap();
        assert_eq!((asker.owner.as_str(), asker.call_id), ("s1", None));
        let c = calls.enter(sink_of("s2", "c3"));
        assert_eq!(calls.asker_for(None).unwrap_err(), Refused::Several(2));
        let asker = calls.asker_for(Some(&token(1))).unwrap();
        assert_eq!(asker.call_id.as_deref(), Some("c1"));
        drop(a);
        drop(b);
        let asker = calls.asker_for(Some(&token(1))).unwrap();
        assert_eq!(asker.call_id.as_deref(), Some("c3"));
        drop(c);
        assert_eq!(calls.asker_for(None).unwrap_err(), Refused::NoCall);
    }
}
