//! Plan mode through a real daemon and the fake model: `enter_plan_mode`
//! (approved by one client) switches the session to plan mode, where the
//! only writes are plan files in the session's plans directory; the plan
//! is presented by `exit_plan_mode` to every client, a rejection's
//! feedback reaches the model in the function response, and an approval
//! from another client switches the session to the mode chosen. An
//! unattended session goes through without anyone, into yolo, as 0.61.

use std::path::{Path, PathBuf};

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ConfirmationRequest};
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::json;

const PLAN: &str = "# Plan\n\n1. Add the parser.\n2. Test it.\n";

/// The plan files under the daemon's `~/.gemini/tmp`.
fn plan_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![home.join(".gemini/tmp")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

fn awaiting<'a>(name: &'a str) -> impl FnMut(&SessionEvent) -> bool + 'a {
    move |e| {
        matches!(&e.payload, EventPayload::ToolCall(c)
        if c.name == name && c.state == CallState::AwaitingApproval && c.output_delta.is_none())
    }
}

fn call_id_of(events: &[SessionEvent]) -> (String, Option<ConfirmationRequest>) {
    match &events.last().map(|e| &e.payload) {
        Some(EventPayload::ToolCall(c)) => (c.call_id.clone(), c.confirmation.clone()),
        _ => panic!("no call: {events:#?}"),
    }
}

fn modes(events: &[SessionEvent]) -> Vec<ApprovalMode> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ApprovalModeChanged { approval_mode } => Some(*approval_mode),
            _ => None,
        })
        .collect()
}

async fn daemon(fake: &FakeModel) -> TestDaemon {
    TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_written_only_in_the_plans_dir_and_approved_from_another_client() {
    let d_workspace = tempfile::tempdir().unwrap();
    let workspace = d_workspace.path().canonicalize().unwrap();
    let outside = workspace.join("src.txt");
    // Spelled like a plans directory (the policy lets it through) but not
    // the session's: the write tool's confinement refuses it.
    let lookalike = workspace.join(".gemini/tmp/p/s/plans/evil.md");
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("enter_plan_mode", json!({"reason": "design the parser"}))]),
        gemini::call_reply(&[
            (
                "write_file",
                json!({"file_path": outside.display().to_string(), "content": "code"}),
            ),
            (
                "write_file",
                json!({"file_path": lookalike.display().to_string(), "content": "x"}),
            ),
            // In the plans directory but not a plan: the policy refuses.
            (
                "write_file",
                json!({"file_path": "notes.txt", "content": "x"}),
            ),
            (
                "write_file",
                json!({"file_path": "parser-plan.md", "content": PLAN}),
            ),
        ]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "parser-plan.md"}))]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "parser-plan.md"}))]),
        gemini::answer(&["implementing"]),
    ])
    .await;
    let d = daemon(&fake).await;
    let a = d.client().await;
    let b = d.client().await;
    let session = a
        .create_session(
            workspace.display().to_string(),
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
    let mut sub_a = a.subscribe_session(session.clone(), None).await.unwrap();
    let mut sub_b = b.subscribe_session(session.clone(), None).await.unwrap();
    let turn = a
        .prompt(session.clone(), "plan the parser".into())
        .await
        .unwrap()
        .turn_id;

    // Entering asks; the first client approves.
    let seen = collect_until(&mut sub_a, awaiting("enter_plan_mode")).await;
    let (enter, _) = call_id_of(&seen);
    let ok = a
        .confirm_tool(
            session.clone(),
            enter,
            ConfirmationOutcome::ProceedOnce,
            None,
        )
        .await
        .unwrap();
    assert!(ok.accepted);

    // The plan is shown to the other client, who rejects it with words.
    let mut events = collect_until(&mut sub_b, awaiting("exit_plan_mode")).await;
    let (first_exit, request) = call_id_of(&events);
    match request {
        Some(ConfirmationRequest::Plan {
            plan, plan_path, ..
        }) => {
            assert_eq!(plan, PLAN);
            assert!(plan_path.ends_with("/plans/parser-plan.md"), "{plan_path}");
            assert!(plan_path.contains(&session), "{plan_path}");
        }
        other => panic!("not a plan to approve: {other:?}"),
    }
    let rejected = b
        .confirm_answer(
            session.clone(),
            first_exit,
            ConfirmationOutcome::Cancel,
            None,
            Some("add a test for empty input first".into()),
            None,
        )
        .await
        .unwrap();
    assert!(rejected.accepted);

    // Presented again; approved from the second client, into autoEdit.
    let more = collect_until(&mut sub_b, awaiting("exit_plan_mode")).await;
    let (second_exit, _) = call_id_of(&more);
    events.extend(more);
    let approved = b
        .confirm_answer(
            session.clone(),
            second_exit,
            ConfirmationOutcome::ProceedOnce,
            None,
            None,
            Some(ApprovalMode::AutoEdit),
        )
        .await
        .unwrap();
    assert!(approved.accepted);
    let done = |e: &SessionEvent| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn);
    events.extend(collect_until(&mut sub_b, done).await);
    let seen_a = collect_until(&mut sub_a, done).await;

    // Plan mode, then the mode the approval chose; both clients saw it.
    assert_eq!(
        modes(&events),
        vec![ApprovalMode::Plan, ApprovalMode::AutoEdit]
    );
    assert_eq!(modes(&seen_a).last(), Some(&ApprovalMode::AutoEdit));
    let info = a.get_session(session.clone()).await.unwrap();
    assert_eq!(info.approval_mode, ApprovalMode::AutoEdit);

    // Only the plan was written, in this session's plans directory.
    assert!(!outside.exists(), "a source file was written in plan mode");
    assert!(!lookalike.exists(), "a lookalike plans path was written");
    let files = plan_files(&d.home());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].ends_with(format!("{session}/plans/parser-plan.md")),
        "{files:?}"
    );
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), PLAN);

    // The model was told why each write was refused, the feedback, and
    // the approval.
    let seen = fake.seen();
    let writes = seen[2].body.to_string();
    let outside_refusal = format!(
        "Access denied: plan path ({}) must be within the designated plans directory",
        outside.display()
    );
    assert!(writes.contains(&outside_refusal), "{writes}");
    assert!(
        writes.contains("evil.md) must be within the designated plans directory"),
        "{writes}"
    );
    assert!(
        writes.contains("You are in Plan Mode and cannot modify source code"),
        "{writes}"
    );
    let feedback = seen[3].body.to_string();
    assert!(
        feedback.contains("Plan rejected. User feedback: add a test for empty input first"),
        "{feedback}"
    );
    assert!(
        feedback.contains("Revise the plan based on the feedback."),
        "{feedback}"
    );
    let approval = seen[4].body.to_string();
    assert!(
        approval.contains(
            "Plan approved. Switching to Auto-Edit mode (edits will be applied automatically)."
        ),
        "{approval}"
    );
    assert!(approval.contains("parser-plan.md"), "{approval}");

    // Within the one turn, each request offers the plan tool that can be
    // called then and says which mode the session is in.
    let declared = |n: usize| -> Vec<String> {
        seen[n].body["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let system = |n: usize| seen[n].body["systemInstruction"].to_string();
    assert!(declared(0).contains(&"enter_plan_mode".to_owned()));
    assert!(!declared(0).contains(&"exit_plan_mode".to_owned()));
    assert!(
        declared(1).contains(&"exit_plan_mode".to_owned()),
        "{:?}",
        declared(1)
    );
    assert!(!declared(1).contains(&"enter_plan_mode".to_owned()));
    assert!(!declared(1).contains(&"run_shell_command".to_owned()));
    assert!(system(1).contains("`plan` approval mode"), "{}", system(1));
    let tools1 = seen[1].body["tools"].to_string();
    assert!(tools1.contains("ONLY FOR PLANS: "), "{tools1}");
    assert!(tools1.contains(&format!("{session}/plans/")), "{tools1}");
    assert!(!seen[4].body["tools"].to_string().contains("ONLY FOR PLANS"));
    assert!(declared(4).contains(&"enter_plan_mode".to_owned()));
    assert!(
        system(4).contains("`autoEdit` approval mode"),
        "{}",
        system(4)
    );

    // The plans go with the session, as in 0.61.
    a.delete_session(session.clone()).await.unwrap();
    assert!(!files[0].exists(), "{:?} outlived its session", files[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unattended_session_plans_and_leaves_plan_mode_into_yolo() {
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("enter_plan_mode", json!({}))]),
        gemini::call_reply(&[("write_file", json!({"file_path": "p.md", "content": PLAN}))]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "p.md"}))]),
        gemini::answer(&["done"]),
    ])
    .await;
    let d = daemon(&fake).await;
    let a = d.client().await;
    let session = a
        .create_session(
            d.workspace.display().to_string(),
            None,
            None,
            Some(false),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let mut sub = a.subscribe_session(session.clone(), None).await.unwrap();
    let turn = a
        .prompt(session.clone(), "plan".into())
        .await
        .unwrap()
        .turn_id;
    let done = |e: &SessionEvent| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn);
    let events = collect_until(&mut sub, done).await;
    assert_eq!(modes(&events), vec![ApprovalMode::Plan, ApprovalMode::Yolo]);
    let seen = fake.seen();
    let last = seen[3].body.to_string();
    assert!(
        last.contains("Plan approved. Switching to YOLO mode (all tool calls auto-approved)."),
        "{last}"
    );
}

/// A person at `gemctl attach` (a real terminal) sees the plan, answers
/// `n` and a line of feedback, which the model reads; then `a` approves
/// it into autoEdit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_rejects_a_plan_with_a_line_of_feedback_then_approves_it() {
    use geminid_tests::tmux::Tmux;
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("write_file", json!({"file_path": "t.md", "content": PLAN}))]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "t.md"}))]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "t.md"}))]),
        gemini::answer(&["on it"]),
    ])
    .await;
    let d = daemon(&fake).await;
    let c = d.client().await;
    let session = c
        .create_session(
            d.workspace.display().to_string(),
            Some(ApprovalMode::Plan),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    let tmux = Tmux::new(d.dir.path());
    tmux.start(
        "b",
        &format!(
            "cd '{ws}' && env HOME='{home}' TERM=tmux-256color '{bin}' --socket '{socket}' attach {session}",
            ws = d.workspace.display(),
            home = d.home().display(),
            bin = gemctl_bin().display(),
            socket = d.socket.display(),
        ),
    );
    tmux.wait_for("b", "attached to").await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let turn = c
        .prompt(session.clone(), "plan it".into())
        .await
        .unwrap()
        .turn_id;
    collect_until(&mut sub, awaiting("exit_plan_mode")).await;
    let screen = tmux.wait_for("b", "Allow exit_plan_mode?").await;
    assert!(screen.contains("Plan Approval"), "{screen}");
    assert!(screen.contains("│ 1. Add the parser."), "{screen}");
    assert!(screen.contains("accept edits automatically"), "{screen}");
    tmux.line("b", "n");
    tmux.wait_for("b", "what should change in the plan?").await;
    tmux.line("b", "split step 2 in two");
    collect_until(&mut sub, awaiting("exit_plan_mode")).await;
    tmux.line("b", "a");
    let done = |e: &SessionEvent| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn);
    let events = collect_until(&mut sub, done).await;
    assert_eq!(modes(&events), vec![ApprovalMode::AutoEdit]);
    let seen = fake.seen();
    let feedback = seen[2].body.to_string();
    assert!(
        feedback.contains("Plan rejected. User feedback: split step 2 in two"),
        "{feedback}"
    );
    let approval = seen[3].body.to_string();
    assert!(
        approval.contains("Plan approved. Switching to Auto-Edit mode"),
        "{approval}"
    );
}

/// A plan that cannot be approved (missing, then empty) is not presented
/// to anyone: the call completes with 0.61's words, which the model reads,
/// and the session stays in plan mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_empty_plan_is_reported_to_the_model_without_asking_anyone() {
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "missing.md"}))]),
        gemini::call_reply(&[(
            "write_file",
            json!({"file_path": "empty.md", "content": " \n\n"}),
        )]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "empty.md"}))]),
        gemini::answer(&["I will write the plan"]),
    ])
    .await;
    let d = daemon(&fake).await;
    let a = d.client().await;
    let session = session_in(&a, &d.workspace, Some(ApprovalMode::Plan), Some(true)).await;
    let events = run_turn(&a, &session, "plan it").await;
    let end = events.iter().rev().find_map(|e| match &e.payload {
        EventPayload::TurnFinished { reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert_eq!(end.as_deref(), Some("completed"), "{events:#?}");
    let exits: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolCall(c) if c.name == "exit_plan_mode" => Some(c),
            _ => None,
        })
        .collect();
    assert!(
        exits
            .iter()
            .all(|c| c.state != CallState::AwaitingApproval && c.state != CallState::Error),
        "nobody is asked and nothing fails: {exits:#?}"
    );
    assert_eq!(
        exits
            .iter()
            .filter(|c| c.state == CallState::Success)
            .count(),
        2,
        "{exits:#?}"
    );
    assert!(
        exits.iter().any(|c| c
            .description
            .as_deref()
            .is_some_and(|d| d.starts_with("Requesting plan approval for: /")
                && d.ends_with("/plans/missing.md"))),
        "described as 0.61 does: {exits:#?}"
    );
    assert!(modes(&events).is_empty(), "the mode stays plan");
    let seen = fake.seen();
    let after_missing = seen[1].body.to_string();
    assert!(
        after_missing.contains(
            "Plan file does not exist: missing.md. You must create the plan file before requesting approval."
        ),
        "{after_missing}"
    );
    let after_empty = seen[3].body.to_string();
    assert!(
        after_empty.contains(
            "Plan file is empty. You must write content to the plan file before requesting approval."
        ),
        "{after_empty}"
    );
    let info = a.get_session(session.clone()).await.unwrap();
    assert_eq!(info.approval_mode, ApprovalMode::Plan);
}

/// The user's settings, with `general.plan.directory` set to `dir`.
fn plans_in(d: &TestDaemon, dir: &str) {
    let gemini = d.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        json!({"general": {"plan": {"directory": dir}}}).to_string(),
    )
    .unwrap();
}

/// An unattended session that plans `p.md` and leaves plan mode.
async fn plan_unattended(d: &TestDaemon) -> (Client, String, Vec<SessionEvent>) {
    let c = d.client().await;
    let session = session_in(&c, &d.workspace, Some(ApprovalMode::Plan), Some(false)).await;
    let events = run_turn(&c, &session, "plan it").await;
    (c, session, events)
}

fn planning_replies() -> Vec<geminid_tests::fake_model::Reply> {
    vec![
        gemini::call_reply(&[("write_file", json!({"file_path": "p.md", "content": PLAN}))]),
        gemini::call_reply(&[("exit_plan_mode", json!({"plan_filename": "p.md"}))]),
        gemini::answer(&["done"]),
    ]
}

/// `general.plan.directory` (0.61's setting) inside the project: plans
/// are written there (the model names them by bare name) and approved
/// from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_plans_directory_inside_the_project_holds_the_plans() {
    let fake = FakeModel::scripted(planning_replies()).await;
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ]);
    plans_in(&d, ".gemini/plans");
    d.spawn();
    let (c, _, events) = plan_unattended(&d).await;
    assert_eq!(modes(&events), vec![ApprovalMode::Yolo], "{events:#?}");
    let plan = d.workspace.join(".gemini/plans/p.md");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), PLAN);
    assert!(
        !plan_files(&d.home()).iter().any(|f| f.ends_with("p.md")),
        "nothing in the managed directory"
    );
    let approved = fake.seen()[2].body.to_string();
    assert!(
        approved.contains(&format!(
            "The approved implementation plan is stored at: {}",
            plan.display()
        )),
        "{approved}"
    );
    let status = c.status().await.unwrap();
    assert!(
        !status
            .config_problems
            .iter()
            .any(|p| p.message.contains("plan.directory")),
        "{status:?}"
    );
    assert!(
        !status.unused_settings.iter().any(|k| k.contains("plan")),
        "{:?}",
        status.unused_settings
    );
}

/// A configured directory that leads out of the project, or into `.git`
/// through a link, is refused: `daemon.status` names the file and the
/// field, and plans stay in the managed directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsafe_plans_directory_is_refused_and_reported() {
    for (setting, why) in [
        ("../elsewhere", "outside the project root"),
        ("notes", "symbolic link"),
    ] {
        let fake = FakeModel::scripted(planning_replies()).await;
        let mut d = TestDaemon::prepared(&[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
        ]);
        std::fs::create_dir_all(d.workspace.join(".git")).unwrap();
        std::os::unix::fs::symlink(d.workspace.join(".git"), d.workspace.join("notes")).unwrap();
        plans_in(&d, setting);
        d.spawn();
        let (c, _, events) = plan_unattended(&d).await;
        assert_eq!(modes(&events), vec![ApprovalMode::Yolo], "{events:#?}");
        let files = plan_files(&d.home());
        assert!(
            files.iter().any(|f| f.ends_with("plans/p.md")),
            "{setting}: {files:?}"
        );
        assert!(!d.workspace.join(".git/p.md").exists());
        assert!(!d.workspace.parent().unwrap().join("elsewhere").exists());
        let problems = c.status().await.unwrap().config_problems;
        let problem = problems
            .iter()
            .find(|p| p.message.contains("`general.plan.directory`"))
            .unwrap_or_else(|| panic!("{setting}: {problems:?}"));
        assert!(
            problem.file.ends_with(".gemini/settings.json"),
            "{problem:?}"
        );
        assert!(problem.message.contains(why), "{problem:?}");
    }
}
