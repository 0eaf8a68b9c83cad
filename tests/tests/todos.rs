//! `write_todos` through a real daemon and the fake model: the list the
//! model sets is the session's, every subscriber sees it, `session.get`
//! returns it, and a list 0.61 would refuse changes nothing.

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_protocol::turn::TodoItem;
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::json;

fn todos_in(events: &[SessionEvent]) -> Vec<Vec<TodoItem>> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::TodosUpdated { todos } => Some(todos.clone()),
            _ => None,
        })
        .collect()
}

fn item(description: &str, status: &str) -> TodoItem {
    TodoItem {
        description: description.into(),
        status: status.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_todo_list_is_session_state_every_client_sees() {
    let list = json!({"todos": [
        {"description": "read the code", "status": "completed"},
        {"description": "write the fix", "status": "in_progress"},
        {"description": "run the tests", "status": "pending"},
    ]});
    let refused = json!({"todos": [
        {"description": "a", "status": "in_progress"},
        {"description": "b", "status": "in_progress"},
    ]});
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("write_todos", list)]),
        gemini::call_reply(&[("write_todos", refused)]),
        gemini::answer(&["planned"]),
    ])
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    let a = d.client().await;
    let b = d.client().await;
    let session = a
        .create_session(
            d.workspace.display().to_string(),
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    a.set_approval_mode(session.clone(), ApprovalMode::Yolo)
        .await
        .unwrap();
    let mut sub_a = a.subscribe_session(session.clone(), None).await.unwrap();
    let mut sub_b = b.subscribe_session(session.clone(), None).await.unwrap();
    let turn = a
        .prompt(session.clone(), "fix the bug".into())
        .await
        .unwrap()
        .turn_id;
    let done = |e: &SessionEvent| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn);
    let seen_a = collect_until(&mut sub_a, done).await;
    let seen_b = collect_until(&mut sub_b, done).await;

    let want = vec![
        item("read the code", "completed"),
        item("write the fix", "in_progress"),
        item("run the tests", "pending"),
    ];
    assert_eq!(
        todos_in(&seen_a),
        vec![want.clone()],
        "one update, the valid one"
    );
    assert_eq!(
        todos_in(&seen_b),
        vec![want.clone()],
        "the other client too"
    );
    let calls: Vec<CallState> = seen_a
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolCall(c) if c.state.is_terminal() => Some(c.state),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], CallState::Success);
    assert_ne!(calls[1], CallState::Success, "two in progress is refused");

    // The model was told the list, and why the second one was refused.
    let seen = fake.seen();
    let second = seen[1].body.to_string();
    assert!(
        second.contains("Successfully updated the todo list. The current list is now:\\n1. [completed] read the code"),
        "{second}"
    );
    let third = seen[2].body.to_string();
    assert!(third.contains("Only one task can be"), "{third}");

    // The list is the session's: session.get, from either client.
    let info = b.get_session(session.clone()).await.unwrap();
    assert_eq!(info.todos, want);
}
