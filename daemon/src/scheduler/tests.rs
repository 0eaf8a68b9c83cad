use serde_json::json;

use super::*;
use crate::tools::ToolErrorKind;

fn submit(s: &mut Scheduler, id: &str) -> Vec<Effect> {
    s.submit(ToolCall::new(id.into(), "t".into(), json!({})))
}

fn allowed() -> Prepared {
    Prepared::Allowed {
        description: "d".into(),
        locations: vec![],
        decided_by: "policy".into(),
    }
}

fn ask() -> Prepared {
    Prepared::Ask {
        decided_by: None,
        description: "d".into(),
        locations: vec![],
        details: ConfirmationDetails::Info {
            title: "t".into(),
            prompt: "p".into(),
            urls: vec![],
        },
    }
}

fn executes(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Execute { call_id } => Some(call_id.clone()),
            _ => None,
        })
        .collect()
}

/// The (call id, state) of every Publish effect, in order.
fn published(effects: &[Effect]) -> Vec<(String, &'static str)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Publish { call, .. } => Some((call.id.clone(), state_name(&call.state))),
            _ => None,
        })
        .collect()
}

fn state_name(state: &CallState) -> &'static str {
    match state {
        CallState::Validating => "validating",
        CallState::Scheduled => "scheduled",
        CallState::AwaitingApproval(_) => "awaiting_approval",
        CallState::Executing => "executing",
        CallState::Success(_) => "success",
        CallState::Error(_) => "error",
        CallState::Cancelled(_) => "cancelled",
        CallState::Interrupted => "interrupted",
    }
}

#[test]
fn every_transition_is_published_with_its_own_state() {
    let mut s = Scheduler::new(1);
    submit(&mut s, "a");
    assert_eq!(
        published(&s.prepared("a", allowed())),
        vec![("a".to_owned(), "executing")]
    );
    submit(&mut s, "b");
    // No free slot: "b" is seen waiting in scheduled.
    assert_eq!(
        published(&s.prepared("b", allowed())),
        vec![("b".to_owned(), "scheduled")]
    );
    assert_eq!(
        published(&s.finished("a", Ok(ToolResult::text("x")))),
        vec![("a".to_owned(), "success"), ("b".to_owned(), "executing")]
    );
}

fn state(s: &Scheduler, id: &str) -> CallState {
    s.call(id).map(|c| c.state.clone()).unwrap()
}

/// The state a call ended in: its last Publish. The scheduler has
/// forgotten it (the Publish took it).
fn ended(s: &Scheduler, effects: &[Effect], id: &str) -> CallState {
    assert!(s.call(id).is_none(), "{id} must be forgotten once it ends");
    effects
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::Publish { call, .. } if call.id == id => Some(call.state.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Publish for {id}"))
}

#[test]
fn allowed_calls_run_in_parallel_up_to_the_limit_then_queue() {
    let mut s = Scheduler::new(2);
    let mut started = Vec::new();
    for id in ["a", "b", "c"] {
        let effects = submit(&mut s, id);
        assert_eq!(published(&effects), vec![(id.to_owned(), "validating")]);
        assert_eq!(effects[1], Effect::Prepare { call_id: id.into() });
        started.extend(executes(&s.prepared(id, allowed())));
    }
    assert_eq!(started, vec!["a", "b"]);
    assert_eq!(state(&s, "c"), CallState::Scheduled);
    let effects = s.finished("a", Ok(ToolResult::text("ok")));
    assert_eq!(executes(&effects), vec!["c"]);
    assert!(effects.contains(&Effect::Retire {
        call_id: "a".into()
    }));
    assert!(matches!(ended(&s, &effects, "a"), CallState::Success(_)));
}

#[test]
fn awaiting_approval_blocks_nothing_and_first_answer_wins() {
    let mut s = Scheduler::new(1);
    submit(&mut s, "w");
    s.prepared("w", ask());
    assert!(matches!(state(&s, "w"), CallState::AwaitingApproval(_)));
    submit(&mut s, "r");
    assert_eq!(executes(&s.prepared("r", allowed())), vec!["r"]);

    let (accepted, effects) = s.answer(
        "w",
        Answer::Proceed {
            decided_by: "p".into(),
        },
    );
    assert!(accepted);
    // The only slot is taken by "r": "w" waits in scheduled.
    assert!(executes(&effects).is_empty());
    let (again, _) = s.answer("w", Answer::Cancel);
    assert!(!again, "a second answer must not be accepted");
    assert_eq!(
        executes(&s.finished("r", Ok(ToolResult::text("x")))),
        vec!["w"]
    );
}

#[test]
fn cancel_in_every_state() {
    let mut s = Scheduler::new(4);
    submit(&mut s, "validating");
    submit(&mut s, "waiting");
    s.prepared("waiting", ask());
    submit(&mut s, "running");
    s.prepared("running", allowed());

    let effects = s.cancel_all("stop");
    assert!(effects.contains(&Effect::Abort {
        call_id: "running".into()
    }));
    assert!(matches!(
        ended(&s, &effects, "validating"),
        CallState::Cancelled(_)
    ));
    assert!(matches!(
        ended(&s, &effects, "waiting"),
        CallState::Cancelled(_)
    ));
    assert_eq!(state(&s, "running"), CallState::Executing);
    // Preparation that finishes after a cancel changes nothing.
    assert!(s.prepared("validating", allowed()).is_empty());
    let effects = s.finished(
        "running",
        Err(CallError::new(CallErrorKind::Cancelled, "stop")),
    );
    assert!(matches!(
        ended(&s, &effects, "running"),
        CallState::Cancelled(_)
    ));
    assert!(effects.contains(&Effect::Retire {
        call_id: "running".into()
    }));
    // Answering a cancelled call is not accepted.
    assert!(!s.answer("waiting", Answer::Cancel).0);
}

#[test]
fn invalid_denied_and_failed_calls_end_in_error() {
    let mut s = Scheduler::new(4);
    submit(&mut s, "bad");
    let effects = s.prepared(
        "bad",
        Prepared::Invalid(CallError::new(
            CallErrorKind::Tool(ToolErrorKind::InvalidParams),
            "x",
        )),
    );
    assert!(matches!(ended(&s, &effects, "bad"), CallState::Error(_)));
    submit(&mut s, "denied");
    let effects = s.prepared(
        "denied",
        Prepared::Denied {
            reason: "no".into(),
        },
    );
    assert!(matches!(
        ended(&s, &effects, "denied"),
        CallState::Error(CallError {
            kind: CallErrorKind::Denied,
            ..
        })
    ));
    submit(&mut s, "fails");
    s.prepared("fails", allowed());
    let effects = s.finished(
        "fails",
        Err(CallError::new(
            CallErrorKind::Tool(ToolErrorKind::Execution),
            "boom",
        )),
    );
    assert!(matches!(ended(&s, &effects, "fails"), CallState::Error(_)));
}

#[test]
fn output_only_flows_while_executing() {
    let mut s = Scheduler::new(4);
    submit(&mut s, "a");
    assert!(s.output("a", "early".into()).is_empty());
    s.prepared("a", allowed());
    match s.output("a", "hi".into()).as_slice() {
        [
            Effect::Publish {
                call,
                output_delta: Some(delta),
            },
        ] => {
            assert_eq!((call.id.as_str(), delta.as_str()), ("a", "hi"));
        }
        other => panic!("unexpected effects {other:?}"),
    }
}

#[test]
fn a_nested_call_runs_beyond_the_limit_and_frees_its_slot_after() {
    let mut s = Scheduler::new(1);
    submit(&mut s, "outer");
    assert_eq!(executes(&s.prepared("outer", allowed())), vec!["outer"]);
    // The running call waits on a nested one (a sampling request): it
    // starts at once, after its approval, though the one slot is taken.
    s.submit_nested(ToolCall::new("inner".into(), "t".into(), json!({})));
    assert!(executes(&s.prepared("inner", ask())).is_empty());
    let (accepted, effects) = s.answer(
        "inner",
        Answer::Proceed {
            decided_by: "a person".into(),
        },
    );
    assert!(accepted);
    assert_eq!(executes(&effects), vec!["inner"]);
    // A plain call still waits for a free slot.
    submit(&mut s, "plain");
    assert!(executes(&s.prepared("plain", allowed())).is_empty());
    let done = Ok(ToolResult::text("ok"));
    assert!(executes(&s.finished("inner", done.clone())).is_empty());
    assert_eq!(executes(&s.finished("outer", done)), vec!["plain"]);
}
