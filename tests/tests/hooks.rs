//! Hooks (settings `hooks`, Gemini CLI 0.61's contract) through a real
//! daemon with real bash and Python hook scripts: BeforeTool blocks,
//! rewrites (checked by the policy again), asks; AfterTool hides or adds
//! to a result; what the model receives; a hook that hangs, crashes or
//! prints garbage; cancel; Notification for a call awaiting approval in a
//! session nobody is attached to; the environment; untrusted workspaces.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::{CallState, ContentPart, ToolCallSnapshot};
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

fn one(event: &str, matcher: &str, command: &Path, timeout: Option<u64>) -> Value {
    let mut hook = json!({"type": "command", "command": command.display().to_string()});
    if let Some(ms) = timeout {
        hook["timeout"] = json!(ms);
    }
    json!({ event: [{"matcher": matcher, "hooks": [hook]}] })
}

fn started(env: &[(&str, &str)], setup: impl FnOnce(&TestDaemon)) -> TestDaemon {
    let mut d = TestDaemon::prepared(env);
    setup(&d);
    d.spawn();
    d
}

fn llm_text(s: &ToolCallSnapshot) -> String {
    match &s.result {
        Some(r) => r
            .llm_content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect(),
        None => s
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default(),
    }
}

async fn events(c: &Client, session: &str) -> Vec<SessionEvent> {
    let mut sub = c
        .subscribe_session(session.to_owned(), Some(0))
        .await
        .unwrap();
    let last = c.get_session(session.to_owned()).await.unwrap().last_seq;
    collect_until(&mut sub, |e| e.seq >= last).await
}

/// The `hookRun` events: (event, decision, error).
fn runs(events: &[SessionEvent]) -> Vec<(String, String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::HookRun {
                event,
                decision,
                error,
                ..
            } => Some((event.clone(), decision.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

const BLOCK_RM: &str = r#"#!/bin/bash
input=$(cat)
cmd=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["command"])')
case "$cmd" in
  rm*) echo '{"decision":"deny","reason":"rm is not for agents"}' ;;
  *) echo '{"decision":"allow"}' ;;
esac
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_before_tool_block_is_what_the_model_reads_and_nothing_runs() {
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("run_shell_command", json!({"command": "rm -f keep.txt"}))]),
        gemini::answer(&["understood"]),
    ])
    .await;
    let d = started(
        &[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
        ],
        |d| {
            let hook = home_script(d, "block.sh", BLOCK_RM);
            write_user_hooks(d, one("BeforeTool", "run_shell_.*", &hook, None));
        },
    );
    std::fs::write(d.workspace.join("keep.txt"), "kept").unwrap();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let turn = run_turn(&c, &session, "clean up").await;
    assert!(
        d.workspace.join("keep.txt").exists(),
        "the hook's deny ran nothing"
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    let sent = seen[1].body.to_string();
    assert!(
        sent.contains("Tool execution blocked: rm is not for agents"),
        "the model reads the hook's reason: {sent}"
    );
    assert_eq!(
        runs(&turn),
        vec![("BeforeTool".into(), "deny".into(), None)],
        "the run is an event"
    );
}

const REWRITE_PY: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
assert data["hook_event_name"] == "BeforeTool"
new = sys.argv[1] if len(sys.argv) > 1 else "echo rewritten"
print(json.dumps({"hookSpecificOutput": {"tool_input": {"command": new}}}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_command_runs_and_the_model_is_told() {
    let fake = FakeModel::scripted(vec![
        gemini::call_reply(&[("run_shell_command", json!({"command": "echo original"}))]),
        gemini::answer(&["done"]),
    ])
    .await;
    let d = started(
        &[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
        ],
        |d| {
            let hook = home_script(d, "rewrite.py", REWRITE_PY);
            write_user_hooks(d, one("BeforeTool", "run_shell_command", &hook, None));
        },
    );
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    run_turn(&c, &session, "say something").await;
    let sent = fake.seen()[1].body.to_string();
    assert!(sent.contains("rewritten"), "{sent}");
    assert!(!sent.contains("original\\n"), "{sent}");
    assert!(
        sent.contains("Tool input parameters were modified by a hook before execution"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_is_checked_by_the_policy_again() {
    let d = started(&[], |d| {
        let hook = home_script(d, "rewrite.py", REWRITE_PY);
        let mut hooks = one("BeforeTool", "run_shell_command", &hook, None);
        hooks["BeforeTool"][0]["hooks"][0]["command"] =
            json!(format!("{} 'rm -f keep.txt'", hook.display()));
        write_user_hooks(d, hooks);
        let policies = d.home().join(".gemini/policies");
        std::fs::create_dir_all(&policies).unwrap();
        std::fs::write(
            policies.join("no-rm.toml"),
            "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"rm\"\ndecision = \"deny\"\npriority = 900\n",
        )
        .unwrap();
    });
    std::fs::write(d.workspace.join("keep.txt"), "kept").unwrap();
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let done = shell_call(&c, &session, "echo harmless").await;
    assert_eq!(done.state, CallState::Error, "{done:?}");
    assert_eq!(done.error.as_ref().map(|e| e.kind.as_str()), Some("denied"));
    assert_eq!(
        done.args["command"], "rm -f keep.txt",
        "the call shows what it became"
    );
    assert!(
        d.workspace.join("keep.txt").exists(),
        "a hook never gets past a deny rule"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_makes_a_person_decide_or_refuses_when_nobody_can() {
    let d = started(&[], |d| {
        let hook = home_script(
            d,
            "ask.sh",
            "#!/bin/bash\ncat >/dev/null\necho '{\"decision\":\"ask\",\"systemMessage\":\"check this\"}'\n",
        );
        write_user_hooks(d, one("BeforeTool", "", &hook, None));
    });
    let c = d.client().await;
    // Yolo would run it; the hook's ask makes it wait for a person.
    let session = yolo_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let started = c
        .call_tool(
            session.clone(),
            "run_shell_command".into(),
            Some(json!({"command": "echo hi"})),
            Some(false),
        )
        .await
        .unwrap();
    let seen = wait_state(&mut sub, &started.call_id, CallState::AwaitingApproval).await;
    let waiting = seen
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::ToolCall(s) if s.call_id == started.call_id => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        waiting
            .decided_by
            .unwrap_or_default()
            .contains("check this"),
        "people see why"
    );
    // A session nobody answers refuses instead.
    let headless = session_in(
        &c,
        &d.workspace,
        Some(geminid_protocol::session::ApprovalMode::Yolo),
        Some(false),
    )
    .await;
    let done = shell_call(&c, &headless, "echo hi").await;
    assert_eq!(done.state, CallState::Error);
    assert!(llm_text(&done).contains("not interactive"), "{done:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_tool_hides_a_result_or_adds_context() {
    let d = started(&[], |d| {
        let hide = home_script(
            d,
            "hide.py",
            "#!/usr/bin/env python3\nimport json,sys\nd=json.load(sys.stdin)\nout=d['tool_response']['llmContent']\nif 'SECRET' in out:\n    print(json.dumps({'decision':'deny','reason':'[redacted]'}))\nelse:\n    print(json.dumps({'hookSpecificOutput':{'additionalContext':'tests pass'}}))\n",
        );
        write_user_hooks(d, one("AfterTool", "run_shell_command", &hide, None));
    });
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let hidden = shell_call(&c, &session, "echo SECRET").await;
    assert_eq!(hidden.state, CallState::Error);
    let text = llm_text(&hidden);
    assert!(
        text.contains("Tool result blocked: [redacted]") && !text.contains("SECRET"),
        "{text}"
    );
    let added = shell_call(&c, &session, "echo fine").await;
    assert_eq!(added.state, CallState::Success);
    assert!(
        llm_text(&added).contains("<hook_context>tests pass</hook_context>"),
        "{added:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_hangs_crashes_or_prints_garbage_never_holds_a_call() {
    for (name, body, timeout, error) in [
        (
            "hang.sh",
            "#!/bin/bash\nsleep 30\n",
            Some(300),
            "timed out after 300 ms",
        ),
        (
            "crash.sh",
            "#!/bin/bash\nkill -9 $$\n",
            None,
            "killed by signal 9",
        ),
        (
            "garbage.py",
            "#!/usr/bin/env python3\nprint('this is { not json')\n",
            None,
            "not JSON",
        ),
        (
            "fails.sh",
            "#!/bin/bash\necho oops >&2\nexit 1\n",
            None,
            "exited with status 1",
        ),
    ] {
        let d = started(&[], |d| {
            let hook = home_script(d, name, body);
            write_user_hooks(d, one("BeforeTool", "run_shell_command", &hook, timeout));
        });
        let c = d.client().await;
        let session = yolo_session(&c, &d.workspace).await;
        let begun = Instant::now();
        let done = shell_call(&c, &session, "echo still-ran").await;
        assert!(begun.elapsed() < Duration::from_secs(10), "{name}");
        // The documented default: the call goes on.
        assert_eq!(done.state, CallState::Success, "{name}: {done:?}");
        assert!(llm_text(&done).contains("still-ran"), "{name}");
        let runs = runs(&events(&c, &session).await);
        assert_eq!(runs.len(), 1, "{name}: {runs:?}");
        assert_eq!(runs[0].1, "error", "{name}: {runs:?}");
        assert!(
            runs[0].2.as_deref().unwrap_or_default().contains(error),
            "{name}: {runs:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_status_two_blocks_with_stderr_as_the_reason() {
    let d = started(&[], |d| {
        let hook = home_script(
            d,
            "two.sh",
            "#!/bin/bash\necho 'not on my watch' >&2\nexit 2\n",
        );
        write_user_hooks(d, one("BeforeTool", "run_shell_command", &hook, None));
    });
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let done = shell_call(&c, &session, "touch made").await;
    assert_eq!(done.state, CallState::Error);
    assert!(llm_text(&done).contains("Tool execution blocked: not on my watch"));
    assert!(!d.workspace.join("made").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_kills_its_hook() {
    let d = started(&[], |d| {
        let hook = home_script(
            d,
            "slow.sh",
            "#!/bin/bash\necho $$ > \"$GEMINI_PROJECT_DIR/hook.pid\"\nsleep 60\n",
        );
        write_user_hooks(d, one("BeforeTool", "run_shell_command", &hook, None));
    });
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let started = c
        .call_tool(
            session.clone(),
            "run_shell_command".into(),
            Some(json!({"command": "echo hi"})),
            Some(false),
        )
        .await
        .unwrap();
    let pid_file = d.workspace.join("hook.pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pid_file.exists()
        || std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .is_empty()
    {
        assert!(Instant::now() < deadline, "the hook never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    c.cancel_tool(session.clone(), started.call_id.clone())
        .await
        .unwrap();
    collect_until(&mut sub, |e| is_final(e, &started.call_id)).await;
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while proc.exists()
        && !std::fs::read_to_string(proc.join("stat"))
            .unwrap_or_default()
            .contains(") Z")
    {
        assert!(
            Instant::now() < deadline,
            "the hook {pid} outlived its call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_hook_pages_for_a_call_waiting_in_a_background_session() {
    let d = started(&[], |d| {
        let page = home_script(
            d,
            "page.sh",
            "#!/bin/bash\ncat > \"$GEMINI_PROJECT_DIR/paged-$GEMINI_SESSION_ID.json\"\n",
        );
        write_user_hooks(d, one("Notification", "", &page, None));
    });
    let c = d.client().await;
    // Nobody subscribes to this session: a background agent.
    let session = session_in(&c, &d.workspace, None, Some(true)).await;
    let started = c
        .call_tool(
            session.clone(),
            "run_shell_command".into(),
            Some(json!({"command": "touch asked"})),
            Some(false),
        )
        .await
        .unwrap();
    let paged = d.workspace.join(format!("paged-{session}.json"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let input: Value = loop {
        if let Some(v) = std::fs::read(&paged)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            break v;
        }
        assert!(Instant::now() < deadline, "no page");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "ToolPermission");
    assert_eq!(input["session_id"], session.as_str());
    assert_eq!(input["details"]["type"], "exec");
    assert_eq!(input["details"]["command"], "touch asked");
    assert_eq!(input["details"]["callId"], started.call_id.as_str());
    assert!(
        input["message"]
            .as_str()
            .unwrap()
            .ends_with("requires execution")
    );
    assert!(
        !d.workspace.join("asked").exists(),
        "a page answers nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_get_the_sanitized_environment_and_their_variables() {
    let d = started(&[("MY_SERVICE_TOKEN", "hunter2")], |d| {
        let env = home_script(
            d,
            "env.sh",
            "#!/bin/bash\ncat > \"$GEMINI_CWD/stdin.json\"\nenv > \"$GEMINI_PROJECT_DIR/env.txt\"\necho '{}'\n",
        );
        write_user_hooks(d, one("BeforeTool", "read_.*", &env, None));
    });
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    std::fs::write(d.workspace.join("a.txt"), "a").unwrap();
    let path = d.workspace.join("a.txt").display().to_string();
    call_and_wait(&c, &session, "read_file", json!({"absolute_path": path})).await;
    let env = std::fs::read_to_string(d.workspace.join("env.txt")).unwrap();
    assert!(
        env.contains(&format!("GEMINI_SESSION_ID={session}")),
        "{env}"
    );
    assert!(env.contains(&format!("GEMINI_PROJECT_DIR={}", d.workspace.display())));
    assert!(env.contains(&format!("CLAUDE_PROJECT_DIR={}", d.workspace.display())));
    assert!(!env.contains("hunter2"), "no secret reaches a hook");
    let stdin: Value =
        serde_json::from_slice(&std::fs::read(d.workspace.join("stdin.json")).unwrap()).unwrap();
    assert_eq!(stdin["tool_name"], "read_file");
    assert_eq!(stdin["tool_input"]["absolute_path"], path.as_str());
    assert_eq!(stdin["cwd"], d.workspace.display().to_string());
    assert!(stdin["timestamp"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_runs_none_of_its_hooks_and_disabled_hooks_do_not_run() {
    let d = started(&[("GEMINI_CLI_TRUST_WORKSPACE", "")], |d| {
        let block = home_script(d, "block-all.sh", "#!/bin/bash\nexit 2\n");
        let ws = d.workspace.join(".gemini");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("settings.json"),
            serde_json::to_vec(
                &one("BeforeTool", "", &block, None)
                    .as_object()
                    .map(|h| json!({"hooks": h}))
                    .unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        // The user's own hook is disabled by name.
        let dir = d.home().join(".gemini");
        std::fs::create_dir_all(&dir).unwrap();
        let mut hooks = one("BeforeTool", "", &block, None);
        hooks["BeforeTool"][0]["hooks"][0]["name"] = json!("blocker");
        std::fs::write(
            dir.join("settings.json"),
            serde_json::to_vec(&json!({"hooks": hooks, "hooksConfig": {"disabled": ["blocker"]}}))
                .unwrap(),
        )
        .unwrap();
    });
    let c = d.client().await;
    let session = yolo_session(&c, &d.workspace).await;
    let done = shell_call(&c, &session, "echo ran").await;
    assert_eq!(done.state, CallState::Success, "{done:?}");
    assert!(runs(&events(&c, &session).await).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemctl_hooks_list_shows_each_hook_its_file_and_whether_it_runs() {
    let d = started(&[], |d| {
        let dir = d.home().join(".gemini");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("settings.json"),
            serde_json::to_vec(&json!({
                "hooksConfig": {"disabled": ["quiet"]},
                "hooks": {
                    "BeforeTool": [{"matcher": "write_.*", "sequential": true,
                                    "hooks": [{"type": "command", "command": "check.sh", "timeout": 5000}]}],
                    "AfterAgent": [{"hooks": [{"type": "command", "name": "quiet", "command": "q.sh"}]}],
                    "BeforeTools": []
                }
            }))
            .unwrap(),
        )
        .unwrap();
        let ws = d.workspace.join(".gemini");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("settings.json"),
            r#"{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "hello.sh"}]}]}}"#,
        )
        .unwrap();
    });
    let out = d
        .gemctl(&[
            "--json",
            "hooks",
            "list",
            "--cwd",
            &d.workspace.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = list["hooks"].as_array().unwrap();
    let summary: Vec<(String, String, String, bool)> = hooks
        .iter()
        .map(|h| {
            (
                h["event"].as_str().unwrap().to_owned(),
                h["name"].as_str().unwrap().to_owned(),
                h["layer"].as_str().unwrap().to_owned(),
                h["enabled"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "SessionStart".into(),
                "hello.sh".into(),
                "workspace".into(),
                true
            ),
            ("AfterAgent".into(), "quiet".into(), "user".into(), false),
            ("BeforeTool".into(), "check.sh".into(), "user".into(), true),
        ]
    );
    assert_eq!(hooks[2]["matcher"], "write_.*");
    assert_eq!(hooks[2]["timeoutMs"], 5000);
    assert_eq!(hooks[2]["sequential"], true);
    assert!(
        hooks[2]["source"]
            .as_str()
            .unwrap()
            .ends_with(".gemini/settings.json")
    );
    let problems = list["problems"].to_string();
    assert!(problems.contains("hooks.BeforeTools"), "{problems}");
    let text = d
        .gemctl(&["hooks", "list", "--cwd", &d.workspace.display().to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("off AfterAgent") && text.contains("problem: "),
        "{text}"
    );
}
