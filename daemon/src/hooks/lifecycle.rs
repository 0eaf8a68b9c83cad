//! What SessionStart and SessionEnd mean for a session (0.61's
//! `hookEventHandler.js` and hooks reference): their stdin fields, which
//! `source`/`reason` a session's start and end are, and the context a
//! SessionStart hook adds for the model. Both are advisory: `continue`
//! and `decision` are ignored, a session always starts and ends. Pure.

use serde_json::{Map, Value};

use super::output::Merged;

/// The SessionStart hooks of this actor: running (prompts wait), and the
/// context they added that no prompt has carried yet.
#[derive(Default)]
pub struct SessionStart {
    pub running: bool,
    pub context: Option<String>,
}

/// Why a session's actor starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartReason {
    /// A new session.
    Create,
    /// A stored session taken up for the first time since the daemon
    /// started (0.61's `--resume`: the user comes back to an old session).
    Resume,
    /// A session that left memory while idle, loaded again: invisible to
    /// its users (it fired no SessionEnd when it left either).
    Reload,
}

/// SessionStart's `source` for a start, or `None` when nothing fires:
/// `startup` for a new session, `resume` for a stored one taken up again;
/// an idle reload fires nothing, as its unload fired no SessionEnd.
pub fn start_source(reason: StartReason) -> Option<&'static str> {
    match reason {
        StartReason::Create => Some("startup"),
        StartReason::Resume => Some("resume"),
        StartReason::Reload => None,
    }
}

/// Why a session's actor stops, in 0.61's words: the daemon shutting
/// down is `exit`, a deletion `other`; an unload fires nothing (its
/// reload fires nothing either).
pub fn end_reason(stop_reason: &str) -> Option<&'static str> {
    if stop_reason.contains("shutting down") {
        Some("exit")
    } else if stop_reason == UNLOADED {
        None
    } else {
        Some("other")
    }
}

/// The stop reason of an actor whose handles are all gone.
pub const UNLOADED: &str = "session unloaded";

/// SessionStart's own stdin field.
pub fn start_input(source: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("source".into(), source.into());
    fields
}

/// SessionEnd's own stdin field.
pub fn end_input(reason: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("reason".into(), reason.into());
    fields
}

/// The text the model gets before the session's next prompt: the merged
/// `additionalContext`, escaped and wrapped as AfterTool's is.
pub fn start_context(merged: Option<&Merged>) -> Option<String> {
    merged
        .and_then(Merged::additional_context)
        .filter(|c| !c.trim().is_empty())
        .map(|c| format!("<hook_context>{c}</hook_context>"))
}

/// What BeforeAgent hooks decided about a prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeAgent {
    /// The turn goes on; the text (wrapped) goes after the prompt's parts.
    Proceed(Option<String>),
    /// `decision: deny`/`block` (or exit status 2): the turn ends and the
    /// prompt is not kept in the history.
    Blocked(String),
    /// `continue: false`: the turn ends, the prompt stays in the history.
    Stopped(String),
}

/// BeforeAgent's own stdin field.
pub fn before_agent_input(prompt: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("prompt".into(), prompt.into());
    fields
}

/// Reads BeforeAgent's merged output as 0.61's client does (a stop wins
/// over a block).
pub fn before_agent(merged: Option<&Merged>) -> BeforeAgent {
    let Some(merged) = merged else {
        return BeforeAgent::Proceed(None);
    };
    if merged.should_stop() {
        return BeforeAgent::Stopped(format!(
            "Agent execution stopped by hook: {}",
            merged.effective_reason()
        ));
    }
    if merged.is_blocking() {
        return BeforeAgent::Blocked(format!(
            "Agent execution blocked by hook: {}",
            merged.effective_reason()
        ));
    }
    BeforeAgent::Proceed(start_context(Some(merged)))
}

/// What AfterAgent hooks decided about a turn's final response.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterAgent {
    Done,
    /// `continue: false`: the turn ends with the reason.
    Stopped(String),
    /// `decision: deny`/`block`: the reason goes to the model as the next
    /// request, in the same turn (bounded by the turn's step limit).
    Again(String),
}

/// AfterAgent's own stdin fields.
pub fn after_agent_input(
    prompt: &str,
    response: &str,
    stop_hook_active: bool,
) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("prompt".into(), prompt.into());
    fields.insert("prompt_response".into(), response.into());
    fields.insert("stop_hook_active".into(), stop_hook_active.into());
    fields
}

/// Reads AfterAgent's merged output as 0.61's client does.
pub fn after_agent(merged: Option<&Merged>) -> AfterAgent {
    match merged {
        Some(m) if m.should_stop() => AfterAgent::Stopped(format!(
            "Agent execution stopped by hook: {}",
            m.effective_reason()
        )),
        Some(m) if m.is_blocking() => AfterAgent::Again(m.effective_reason()),
        _ => AfterAgent::Done,
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::HookEvent;
    use super::super::output::merge;
    use super::*;
    use serde_json::json;

    #[test]
    fn sources_and_reasons_are_0_61_words() {
        assert_eq!(start_source(StartReason::Create), Some("startup"));
        assert_eq!(start_source(StartReason::Resume), Some("resume"));
        assert_eq!(start_source(StartReason::Reload), None);
        assert_eq!(end_reason("the daemon is shutting down"), Some("exit"));
        assert_eq!(end_reason("session deleted"), Some("other"));
        assert_eq!(end_reason(UNLOADED), None);
        assert_eq!(start_input("resume")["source"], "resume");
        assert_eq!(end_input("exit")["reason"], "exit");
    }

    #[test]
    fn start_context_is_escaped_and_ignores_flow_control() {
        let outputs = [
            json!({"continue": false, "decision": "deny",
                   "hookSpecificOutput": {"additionalContext": "a <b>"}}),
            json!({"hookSpecificOutput": {"additionalContext": "c"}}),
        ];
        let outputs: Vec<_> = outputs
            .iter()
            .filter_map(|o| o.as_object().cloned())
            .collect();
        let merged = merge(HookEvent::SessionStart, &outputs);
        let context = start_context(merged.as_ref()).unwrap_or_default();
        assert!(
            context.starts_with("<hook_context>a &lt;b&gt;"),
            "{context}"
        );
        assert!(context.contains('c'), "{context}");
        assert_eq!(start_context(None), None);
    }

    #[test]
    fn before_agent_stops_blocks_or_adds_context() {
        let read = |v: Value| {
            let outputs: Vec<_> = v.as_object().cloned().into_iter().collect();
            before_agent(merge(HookEvent::BeforeAgent, &outputs).as_ref())
        };
        assert_eq!(
            read(json!({"decision": "deny", "reason": "no"})),
            BeforeAgent::Blocked("Agent execution blocked by hook: no".into())
        );
        assert_eq!(
            read(json!({"continue": false, "stopReason": "later", "decision": "deny"})),
            BeforeAgent::Stopped("Agent execution stopped by hook: later".into())
        );
        assert_eq!(
            read(json!({"hookSpecificOutput": {"additionalContext": "x"}})),
            BeforeAgent::Proceed(Some("<hook_context>x</hook_context>".into()))
        );
        assert_eq!(before_agent(None), BeforeAgent::Proceed(None));
    }

    #[test]
    fn after_agent_stops_or_asks_again() {
        let read = |v: Value| {
            let outputs: Vec<_> = v.as_object().cloned().into_iter().collect();
            after_agent(merge(HookEvent::AfterAgent, &outputs).as_ref())
        };
        assert_eq!(
            read(json!({"decision": "block", "reason": "again"})),
            AfterAgent::Again("again".into())
        );
        assert_eq!(
            read(json!({"continue": false, "reason": "done"})),
            AfterAgent::Stopped("Agent execution stopped by hook: done".into())
        );
        assert_eq!(read(json!({"decision": "allow"})), AfterAgent::Done);
        let fields = after_agent_input("p", "r", true);
        assert_eq!(fields["stop_hook_active"], true);
    }
}
