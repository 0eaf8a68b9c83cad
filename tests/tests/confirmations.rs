//! Confirmations and the fixed default policy, through the daemon:
//! every outcome of `tool.confirm`, `session.cancel`, approval modes,
//! non-interactive sessions and calls that never get that far.

use geminid_protocol::EventPayload;
use geminid_protocol::error as code;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ToolCallSnapshot};
use geminid_tests::*;
use jsonrpsee::core::client::Subscription;
use serde_json::{Value, json};

/// A client, a session (created with `mode`/`interactive`) and its event
/// stream, plus the call helpers every test uses.
struct Fixture {
    d: TestDaemon,
    c: Client,
    session: String,
    sub: Subscription<geminid_protocol::SessionEvent>,
}

impl Fixture {
    async fn new(mode: Option<ApprovalMode>, interactive: Option<bool>) -> Fixture {
        let d = TestDaemon::start();
        let c = d.client().await;
        let session = c
            .create_session(
                d.workspace.display().to_string(),
                mode,
                None,
                interactive,
                None,
                None,
                None,
            )
            .await
            .unwrap()
            .session_id;
        let sub = c.subscribe_session(session.clone(), None).await.unwrap();
        Fixture { d, c, session, sub }
    }

    fn path(&self, name: &str) -> String {
        self.d.workspace.join(name).display().to_string()
    }

    fn write_args(&self, name: &str, content: &str) -> Value {
        json!({"file_path": self.path(name), "content": content})
    }

    /// `tool.call` with `wait: true`: the final snapshot.
    async fn run(&self, tool: &str, args: Value) -> ToolCallSnapshot {
        let started = self
            .c
            .call_tool(self.session.clone(), tool.into(), Some(args), Some(true))
            .await
            .unwrap();
        started.outcome.expect("wait:true carries the outcome")
    }

    /// Starts a call and waits until it asks for approval.
    async fn ask(&mut self, tool: &str, args: Value) -> String {
        let call = self
            .c
            .call_tool(self.session.clone(), tool.into(), Some(args), None)
            .await
            .unwrap()
            .call_id;
        wait_state(&mut self.sub, &call, CallState::AwaitingApproval).await;
        call
    }

    async fn confirm(
        &self,
        call: &str,
        outcome: ConfirmationOutcome,
        modified: Option<Value>,
    ) -> Result<bool, jsonrpsee::core::ClientError> {
        self.c
            .confirm_tool(self.session.clone(), call.into(), outcome, modified)
            .await
            .map(|r| r.accepted)
    }

    /// The call's snapshots up to its final one.
    async fn finish(&mut self, call: &str) -> Vec<ToolCallSnapshot> {
        collect_until(&mut self.sub, |e| is_final(e, call))
            .await
            .into_iter()
            .filter_map(|e| match e.payload {
                EventPayload::ToolCall(c) if c.call_id == call => Some(ToolCallSnapshot::clone(&c)),
                _ => None,
            })
            .collect()
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.d.workspace.join(name)).ok()
    }
}

fn error_kind(s: &ToolCallSnapshot) -> &str {
    s.error.as_ref().map(|e| e.kind.as_str()).unwrap_or("")
}

#[tokio::test]
async fn modify_with_editor_runs_the_modified_args() {
    let mut f = Fixture::new(None, None).await;
    let call = f
        .ask("write_file", f.write_args("a.txt", "original\n"))
        .await;
    let modified = f.write_args("a.txt", "modified\n");
    let accepted = f.confirm(&call, ConfirmationOutcome::ModifyWithEditor, Some(modified));
    assert!(accepted.await.unwrap());
    let last = f.finish(&call).await.pop().unwrap();
    assert_eq!(last.state, CallState::Success, "{last:?}");
    assert_eq!(f.read("a.txt").as_deref(), Some("modified\n"));
}

#[tokio::test]
async fn invalid_modified_args_are_refused_and_the_call_keeps_waiting() {
    let mut f = Fixture::new(None, None).await;
    let call = f
        .ask("write_file", f.write_args("a.txt", "original\n"))
        .await;
    for bad in [
        json!({"file_path": 3, "content": "x"}),
        json!({"content": "x"}),
    ] {
        let err = f
            .confirm(
                &call,
                ConfirmationOutcome::ModifyWithEditor,
                Some(bad.clone()),
            )
            .await
            .expect_err("invalid modifiedArgs are an error");
        let jsonrpsee::core::ClientError::Call(err) = err else {
            panic!("{bad}: not a call error: {err:?}")
        };
        assert_eq!(err.code(), code::INVALID_PARAMS, "{bad}: {err:?}");
    }
    let missing = f.confirm(&call, ConfirmationOutcome::ModifyWithEditor, None);
    assert!(
        missing.await.is_err(),
        "modify_with_editor needs modifiedArgs"
    );
    assert!(
        f.confirm(&call, ConfirmationOutcome::ProceedOnce, None)
            .await
            .unwrap()
    );
    let last = f.finish(&call).await.pop().unwrap();
    assert_eq!(last.state, CallState::Success, "{last:?}");
    assert_eq!(f.read("a.txt").as_deref(), Some("original\n"));
}

#[tokio::test]
async fn proceed_always_lets_the_next_call_of_that_tool_run_without_asking() {
    let mut f = Fixture::new(None, None).await;
    let call = f.ask("write_file", f.write_args("a.txt", "one\n")).await;
    assert!(
        f.confirm(&call, ConfirmationOutcome::ProceedAlways, None)
            .await
            .unwrap()
    );
    f.finish(&call).await;
    let next = f.run("write_file", f.write_args("b.txt", "two\n")).await;
    assert_eq!(next.state, CallState::Success, "{next:?}");
    let states: Vec<_> = f
        .finish(&next.call_id)
        .await
        .iter()
        .map(|s| s.state)
        .collect();
    assert!(!states.contains(&CallState::AwaitingApproval), "{states:?}");
    assert_eq!(f.read("b.txt").as_deref(), Some("two\n"));
    // Only that tool: replace still asks.
    f.ask(
        "replace",
        json!({"file_path": f.path("b.txt"), "old_string": "two", "new_string": "2"}),
    )
    .await;
}

/// "Always" remembers the command names it saw, never the shell tool
/// itself: a command with no static name (`x=1`, `$CMD`, a bare
/// redirection) is approved once and later commands still ask, with and
/// without "save".
#[tokio::test]
async fn always_on_a_nameless_shell_command_allows_nothing_later() {
    for outcome in [
        ConfirmationOutcome::ProceedAlways,
        ConfirmationOutcome::ProceedAlwaysTool,
        ConfirmationOutcome::ProceedAlwaysAndSave,
    ] {
        for nameless in ["$CMD -l", "${X:-ls}"] {
            let mut f = Fixture::new(None, None).await;
            let call = f
                .ask("run_shell_command", json!({"command": nameless}))
                .await;
            assert!(f.confirm(&call, outcome, None).await.unwrap());
            let last = f.finish(&call).await.pop().unwrap();
            let decided = last.decided_by.clone().unwrap_or_default();
            assert!(
                decided.contains("approved once"),
                "{outcome:?} {nameless}: {decided}"
            );
            // Another command, never approved, still asks.
            f.ask("run_shell_command", json!({"command": "touch pwned"}))
                .await;
            let saved =
                f.d.home()
                    .join(".gemini/policies/geminid-always-allow.toml");
            assert!(
                !saved.exists(),
                "{outcome:?} {nameless}: nothing may be saved: {:?}",
                std::fs::read_to_string(&saved)
            );
        }
    }
}

#[tokio::test]
async fn the_cancel_outcome_cancels_the_call() {
    let mut f = Fixture::new(None, None).await;
    let call = f.ask("write_file", f.write_args("a.txt", "x")).await;
    assert!(
        f.confirm(&call, ConfirmationOutcome::Cancel, None)
            .await
            .unwrap()
    );
    let last = f.finish(&call).await.pop().unwrap();
    assert_eq!(last.state, CallState::Cancelled, "{last:?}");
    assert_eq!(f.read("a.txt"), None);
}

#[tokio::test]
async fn session_cancel_cancels_a_call_awaiting_approval() {
    let mut f = Fixture::new(None, None).await;
    let call = f.ask("write_file", f.write_args("a.txt", "x")).await;
    let ack = f.c.cancel_session(f.session.clone()).await.unwrap();
    assert!(ack.ok, "something was cancelled");
    let last = f.finish(&call).await.pop().unwrap();
    assert_eq!(last.state, CallState::Cancelled, "{last:?}");
    assert_eq!(f.read("a.txt"), None);
    let late = f
        .confirm(&call, ConfirmationOutcome::ProceedOnce, None)
        .await;
    assert!(!late.unwrap(), "a cancelled call cannot be approved");
}

#[tokio::test]
async fn auto_edit_and_yolo_run_write_file_without_asking() {
    for mode in [ApprovalMode::AutoEdit, ApprovalMode::Yolo] {
        let f = Fixture::new(Some(mode), None).await;
        let done = f.run("write_file", f.write_args("a.txt", "auto\n")).await;
        assert_eq!(done.state, CallState::Success, "{mode}: {done:?}");
        assert_eq!(f.read("a.txt").as_deref(), Some("auto\n"), "{mode}");
    }
}

#[tokio::test]
async fn set_approval_mode_applies_and_emits_an_event() {
    let mut f = Fixture::new(None, None).await;
    let info =
        f.c.set_approval_mode(f.session.clone(), ApprovalMode::Yolo)
            .await
            .unwrap();
    assert_eq!(info.approval_mode, ApprovalMode::Yolo);
    collect_until(&mut f.sub, |e| {
        matches!(
            e.payload,
            EventPayload::ApprovalModeChanged {
                approval_mode: ApprovalMode::Yolo
            }
        )
    })
    .await;
    let done = f.run("write_file", f.write_args("a.txt", "yolo\n")).await;
    assert_eq!(done.state, CallState::Success, "{done:?}");
    let stored = f.c.get_session(f.session.clone()).await.unwrap();
    assert_eq!(stored.approval_mode, ApprovalMode::Yolo);
}

#[tokio::test]
async fn a_non_interactive_session_denies_what_would_ask() {
    let f = Fixture::new(None, Some(false)).await;
    let done = f.run("write_file", f.write_args("a.txt", "x")).await;
    assert_eq!(done.state, CallState::Error, "{done:?}");
    assert_eq!(error_kind(&done), "denied", "{done:?}");
    assert_eq!(f.read("a.txt"), None);
    // Reads still run.
    let listed = f.run("list_directory", json!({"path": f.path("")})).await;
    assert_eq!(listed.state, CallState::Success, "{listed:?}");
}

#[tokio::test]
async fn calls_that_cannot_be_built_fail_with_their_kind() {
    let f = Fixture::new(None, None).await;
    let unknown = f.run("no_such_tool", json!({})).await;
    assert_eq!(unknown.state, CallState::Error);
    assert_eq!(error_kind(&unknown), "unknown_tool", "{unknown:?}");

    let cases = [
        ("read_file", json!({"absolute_path": 3}), "absolute_path"),
        ("read_file", json!({}), "absolute_path"),
        (
            "write_file",
            json!({"file_path": f.path("a.txt")}),
            "content",
        ),
        ("list_directory", json!({"path": ["x"]}), "path"),
    ];
    for (tool, args, param) in cases {
        let done = f.run(tool, args.clone()).await;
        assert_eq!(done.state, CallState::Error, "{tool} {args}: {done:?}");
        assert_eq!(
            error_kind(&done),
            "invalid_params",
            "{tool} {args}: {done:?}"
        );
        let message = &done.error.as_ref().unwrap().message;
        assert!(message.contains(param), "{tool} {args}: {message}");
    }
}
