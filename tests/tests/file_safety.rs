//! What file tools refuse, through a real daemon, as Gemini CLI 0.61
//! refuses it: sensitive paths (`.env`, `.git`, `node_modules`,
//! `gha-creds-*.json`) for every tool, ignored files for `read_file` (with
//! the `context.fileFiltering` opt-outs), and build-file edits that ask
//! even in autoEdit and yolo. (`web_fetch_safety.rs` does the network.)

use std::path::Path;

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ToolCallSnapshot};
use geminid_tests::*;
use serde_json::{Value, json};

const SECRET: &str = "SENSITIVE-4d2c91";

async fn session(c: &Client, root: &Path, mode: ApprovalMode, interactive: bool) -> String {
    c.create_session(
        root.display().to_string(),
        Some(mode),
        None,
        Some(interactive),
        None,
        None,
        None,
    )
    .await
    .unwrap()
    .session_id
}

/// The call's snapshot once it waits for a person (then cancelled) or ended.
async fn attempt(c: &Client, session: &str, tool: &str, args: Value) -> ToolCallSnapshot {
    let mut sub = c.subscribe_session(session.into(), None).await.unwrap();
    let call = c
        .call_tool(session.into(), tool.into(), Some(args), None)
        .await
        .unwrap()
        .call_id;
    let events = collect_until(&mut sub, |e| {
        matches!(&e.payload, EventPayload::ToolCall(t)
            if t.call_id == call && (t.state == CallState::AwaitingApproval || t.state.is_terminal()))
    })
    .await;
    let Some(EventPayload::ToolCall(last)) = events.last().map(|e| e.payload.clone()) else {
        panic!("no snapshot for {call}");
    };
    if last.state == CallState::AwaitingApproval {
        c.confirm_tool(
            session.into(),
            call.clone(),
            ConfirmationOutcome::Cancel,
            None,
        )
        .await
        .unwrap();
        collect_until(&mut sub, |e| is_final(e, &call)).await;
    }
    *last
}

fn text(s: &ToolCallSnapshot) -> String {
    serde_json::to_string(&s.result).unwrap()
}

fn error(s: &ToolCallSnapshot) -> (String, String) {
    s.error
        .as_ref()
        .map(|e| (e.kind.clone(), e.message.clone()))
        .unwrap_or_default()
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sensitive_paths_are_refused_by_every_file_tool() {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    for rel in [
        ".env",
        "sub/.env",
        "node_modules/dep/index.js",
        "gha-creds-123.json",
        ".git/HEAD",
    ] {
        write(&ws, rel, &format!("{SECRET}\n"));
    }
    write(&ws, ".env.local", "LOCAL=1\n");
    write(&ws, "src/main.rs", "fn main() {} // ordinary\n");
    let c = d.client().await;
    let s = session(&c, &ws, ApprovalMode::Yolo, true).await;
    let p = |rel: &str| ws.join(rel).display().to_string();
    // Named directly: refused.
    let refused = [
        ("read_file", json!({"absolute_path": p(".env")})),
        ("read_file", json!({"absolute_path": p("sub/.env")})),
        ("read_file", json!({"absolute_path": p(".ENV")})),
        (
            "read_file",
            json!({"absolute_path": p("node_modules/dep/index.js")}),
        ),
        (
            "read_file",
            json!({"absolute_path": p("gha-creds-123.json")}),
        ),
        ("read_file", json!({"absolute_path": p(".git/HEAD")})),
        (
            "write_file",
            json!({"file_path": p(".env"), "content": "X=1"}),
        ),
        (
            "write_file",
            json!({"file_path": p("new/.git/x"), "content": "x"}),
        ),
        (
            "replace",
            json!({"file_path": p("gha-creds-9.json"), "old_string": "", "new_string": "x"}),
        ),
        ("list_directory", json!({"path": p(".git")})),
        ("list_directory", json!({"path": p("node_modules")})),
        ("glob", json!({"pattern": "*", "path": p("node_modules")})),
        (
            "search_file_content",
            json!({"pattern": "x", "path": p(".git")}),
        ),
        (
            "run_shell_command",
            json!({"command": "ls", "directory": ".git"}),
        ),
    ];
    for (tool, args) in refused {
        let snap = attempt(&c, &s, tool, args.clone()).await;
        let (kind, message) = error(&snap);
        assert_eq!(kind, "path_not_allowed", "{tool} {args}: {snap:?}");
        assert!(
            message.contains("sensitive path"),
            "{tool} {args}: {message}"
        );
    }
    // Walks and listings never show them, nor their content.
    let walks = [
        ("list_directory", json!({"path": p("")})),
        ("glob", json!({"pattern": "**/*"})),
        (
            "search_file_content",
            json!({"pattern": "SENSITIVE|ordinary"}),
        ),
        (
            "read_many_files",
            json!({"paths": ["**"], "useDefaultExcludes": false}),
        ),
        ("read_many_files", json!({"paths": [".env", "src/main.rs"]})),
    ];
    for (tool, args) in walks {
        let snap = attempt(&c, &s, tool, args.clone()).await;
        assert_eq!(snap.state, CallState::Success, "{tool} {args}: {snap:?}");
        let out = text(&snap);
        assert!(!out.contains(SECRET), "{tool} {args}: {out}");
        for name in ["gha-creds-123.json", "index.js", "HEAD"] {
            assert!(!out.contains(name), "{tool} {args} named {name}: {out}");
        }
    }
    // Look-alikes 0.61 allows stay readable.
    let local = attempt(
        &c,
        &s,
        "read_file",
        json!({"absolute_path": p(".env.local")}),
    )
    .await;
    assert_eq!(local.state, CallState::Success, "{local:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join(".env")).unwrap(),
        format!("{SECRET}\n")
    );
    assert!(!ws.join("new").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_files_are_refused_to_read_file_unless_the_settings_say_otherwise() {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    write(&ws, ".gitignore", "*.log\n");
    write(&ws, ".geminiignore", "private/\n");
    write(&ws, ".myignore", "*.secret\n");
    write(&ws, "build.log", "log\n");
    write(&ws, "private/key.txt", "key\n");
    write(&ws, "x.secret", "s\n");
    write(&ws, "ok.txt", "ok\n");
    let c = d.client().await;
    let p = |rel: &str| ws.join(rel).display().to_string();
    let s = session(&c, &ws, ApprovalMode::Yolo, false).await;
    for (rel, rules) in [
        ("build.log", ".gitignore"),
        ("private/key.txt", ".geminiignore"),
    ] {
        let snap = attempt(&c, &s, "read_file", json!({"absolute_path": p(rel)})).await;
        let (kind, message) = error(&snap);
        assert_eq!(kind, "path_not_allowed", "{rel}: {snap:?}");
        assert!(
            message.contains(&format!("is ignored by {rules}")),
            "{message}"
        );
        assert!(message.contains("context.fileFiltering"), "{message}");
    }
    for rel in ["ok.txt", "x.secret"] {
        let snap = attempt(&c, &s, "read_file", json!({"absolute_path": p(rel)})).await;
        assert_eq!(snap.state, CallState::Success, "{rel}: {snap:?}");
    }
    // The user's settings turn the flags off and add an ignore file; a
    // session loaded from then on follows them.
    write(
        &d.home(),
        ".gemini/settings.json",
        r#"{"context": {"fileFiltering": {"respectGitIgnore": false, "respectGeminiIgnore": false, "customIgnoreFilePaths": [".myignore"]}}}"#,
    );
    let s = session(&c, &ws, ApprovalMode::Yolo, false).await;
    for rel in ["build.log", "private/key.txt"] {
        let snap = attempt(&c, &s, "read_file", json!({"absolute_path": p(rel)})).await;
        assert_eq!(snap.state, CallState::Success, "{rel}: {snap:?}");
    }
    let snap = attempt(&c, &s, "read_file", json!({"absolute_path": p("x.secret")})).await;
    assert!(
        error(&snap).1.contains("is ignored by .myignore"),
        "{snap:?}"
    );
    let snap = attempt(&c, &s, "glob", json!({"pattern": "*"})).await;
    assert!(
        text(&snap).contains("build.log") && !text(&snap).contains("x.secret"),
        "{snap:?}"
    );
}

/// (mode, interactive, tool, file, what must happen)
type BuildRow = (ApprovalMode, bool, &'static str, &'static str, &'static str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_file_edits_ask_even_in_auto_edit_and_yolo() {
    use ApprovalMode::{AutoEdit, Default as Def, Yolo};
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    for rel in [
        "Cargo.toml",
        "package.json",
        "sub/Makefile",
        "rules.mk",
        "src/main.rs",
    ] {
        write(&ws, rel, "old\n");
    }
    let c = d.client().await;
    let message = "Modifying build configuration files requires explicit user confirmation";
    let rows: Vec<BuildRow> = vec![
        (AutoEdit, true, "write_file", "Cargo.toml", "ask"),
        (AutoEdit, false, "write_file", "Cargo.toml", "deny"),
        (AutoEdit, false, "replace", "package.json", "deny"),
        (AutoEdit, true, "replace", "sub/Makefile", "ask"),
        (Yolo, true, "write_file", "rules.mk", "ask"),
        (Yolo, false, "write_file", "Cargo.toml", "deny"),
        (Yolo, false, "write_file", "sub/Dockerfile.dev", "deny"),
        // The policy asks anyway in default mode (and denies headless).
        (Def, true, "write_file", "Cargo.toml", "policy ask"),
        (Def, false, "write_file", "Cargo.toml", "policy deny"),
        // Not build files, or not edits.
        (AutoEdit, false, "write_file", "src/main.rs", "run"),
        (AutoEdit, false, "write_file", "cargo.toml", "run"),
        (Yolo, false, "read_file", "Cargo.toml", "run"),
    ];
    for (mode, interactive, tool, rel, want) in rows {
        let s = session(&c, &ws, mode, interactive).await;
        let path = ws.join(rel).display().to_string();
        let args = match tool {
            "write_file" => json!({"file_path": path, "content": "new\n"}),
            "replace" => json!({"file_path": path, "old_string": "old", "new_string": "new"}),
            _ => json!({"absolute_path": path}),
        };
        let snap = attempt(&c, &s, tool, args).await;
        let decided = snap.decided_by.clone().unwrap_or_default();
        let (kind, msg) = error(&snap);
        let ok = match want {
            "ask" => {
                snap.state == CallState::AwaitingApproval
                    && decided == format!("safety (Build File Protection): {message}")
            }
            "deny" => kind == "denied" && msg.contains(message),
            "policy ask" => {
                snap.state == CallState::AwaitingApproval && !decided.contains("safety")
            }
            "policy deny" => kind == "denied" && !msg.contains("safety"),
            _ => snap.state == CallState::Success,
        };
        assert!(
            ok,
            "{mode:?} interactive={interactive} {tool} {rel}: want {want}, got {snap:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("Cargo.toml")).unwrap(),
        "old\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("package.json")).unwrap(),
        "old\n"
    );
    // `policy.check` (gemctl policy check) explains the same decisions.
    let cargo = json!({"file_path": ws.join("Cargo.toml"), "content": "x"});
    for (mode, interactive, want) in [(Yolo, true, "ask_user"), (AutoEdit, false, "deny")] {
        let r = c
            .check_policy(
                None,
                Some(ws.display().to_string()),
                "write_file".into(),
                Some(cargo.clone()),
                Some(mode),
                Some(interactive),
            )
            .await
            .unwrap();
        assert_eq!(r.decision, want, "{r:?}");
        assert!(
            r.reason.starts_with("safety (Build File Protection)"),
            "{r:?}"
        );
    }
    let s = session(&c, &d.home(), Yolo, true).await;
    let r = c
        .check_policy(
            Some(s),
            None,
            "write_file".into(),
            Some(json!({"file_path": d.home().join(".gemini/policies/x.toml"), "content": "x"})),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.decision, "ask_user", "{r:?}");
    assert!(r.reason.starts_with("safety (Protected Files)"), "{r:?}");
}
