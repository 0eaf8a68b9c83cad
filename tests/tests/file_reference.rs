//! The file-tool differential suite: the cases recorded from Gemini CLI
//! 0.61 (`tests/reference/file_tools/cases.json`, made by `record.mjs`
//! there) replayed through a real daemon on the same workspace. Sensitive
//! paths, ignored targets, build files and editor configuration, through
//! every file tool, non-interactive, plus the interactive decisions for
//! edits in each mode.
//!
//! The figure that matters: no case where geminid allows what the
//! reference does not, except the ones listed in [`LOOSER_ON_PURPOSE`]
//! (and in ARCHITECTURE.md). Where geminid is stricter, the case's class
//! must be one ARCHITECTURE.md lists ([`STRICTER_ON_PURPOSE`]).

use std::collections::BTreeMap;
use std::path::Path;

use geminid_protocol::EventPayload;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::{CallState, ConfirmationOutcome, ContentPart, ToolCallSnapshot};
use geminid_tests::*;
use serde_json::{Value, json};

const RECORDED: &str = include_str!("../reference/file_tools/cases.json");

/// Cases where geminid may allow what the reference refuses: none.
const LOOSER_ON_PURPOSE: &[&str] = &[];

/// Where geminid is stricter on purpose (the start of a case's
/// description, and why); ARCHITECTURE.md lists the same.
const STRICTER_ON_PURPOSE: &[(&str, &str)] = &[
    (
        "glob **/* finds ",
        "walks leave out sensitive paths (0.61's glob returns .env and gha-creds-*.json)",
    ),
    (
        "grep ORIGINAL matches ",
        "search leaves out sensitive paths and .geminiignored files (0.61's git grep fallback reads them)",
    ),
    (
        "list_directory . shows private",
        "a directory hidden by a `dir/` rule is hidden in listings (0.61 passes the name without a slash)",
    ),
];

fn mode(name: &str) -> ApprovalMode {
    match name {
        "yolo" => ApprovalMode::Yolo,
        "autoEdit" => ApprovalMode::AutoEdit,
        "default" => ApprovalMode::Default,
        other => panic!("unknown mode {other}"),
    }
}

/// Our tool and arguments for one neutral call of the recording.
fn our_call(ws: &Path, call: &Value) -> (&'static str, Value) {
    let rel = call["path"].as_str();
    let abs = |rel: &str| {
        if rel.is_empty() {
            ws.display().to_string()
        } else {
            ws.join(rel).display().to_string()
        }
    };
    let with_dir = |mut args: Value| {
        if let Some(rel) = rel {
            args["path"] = json!(abs(rel));
        }
        args
    };
    match call["tool"].as_str().unwrap() {
        "read_file" => ("read_file", json!({"absolute_path": abs(rel.unwrap())})),
        "list_directory" => ("list_directory", json!({"path": abs(rel.unwrap())})),
        "glob" => ("glob", with_dir(json!({"pattern": call["pattern"]}))),
        "grep" => (
            "search_file_content",
            with_dir(json!({"pattern": call["pattern"]})),
        ),
        "read_many_files" => ("read_many_files", json!({"paths": call["paths"]})),
        "shell" => match rel.unwrap() {
            "" => ("run_shell_command", json!({"command": "ls"})),
            dir => (
                "run_shell_command",
                json!({"command": "ls", "directory": dir}),
            ),
        },
        "replace" => {
            let rel = rel.unwrap();
            (
                "replace",
                json!({"file_path": abs(rel), "old_string": format!("ORIGINAL {rel}"), "new_string": format!("CHANGED {rel}")}),
            )
        }
        "write_file" => (
            "write_file",
            json!({"file_path": abs(rel.unwrap()), "content": "WRITTEN\n"}),
        ),
        other => panic!("unknown tool {other}"),
    }
}

fn text_of(s: &ToolCallSnapshot) -> String {
    let Some(result) = &s.result else {
        return String::new();
    };
    result
        .llm_content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The recording's probes, on our output.
fn probe(ws: &Path, probe: &Value, text: &str) -> bool {
    let has_line = |want: &dyn Fn(&str) -> bool| text.lines().any(want);
    match probe["type"].as_str().unwrap() {
        "entry" => {
            let name = probe["name"].as_str().unwrap();
            has_line(&|l| l == format!("[DIR] {name}") || l.starts_with(&format!("{name} (")))
        }
        "hit" => {
            let abs = ws
                .join(probe["rel"].as_str().unwrap())
                .display()
                .to_string();
            has_line(&|l| l == abs)
        }
        "match" => {
            let rel = probe["rel"].as_str().unwrap();
            has_line(&|l| l == format!("File: {rel}"))
        }
        "content" => {
            let abs = ws
                .join(probe["rel"].as_str().unwrap())
                .display()
                .to_string();
            text.contains(&format!("--- {abs} ---"))
        }
        other => panic!("unknown probe {other}"),
    }
}

/// How one interactive call went: `allow`, `ask_user` or `deny`.
async fn decision(c: &Client, session: &str, tool: &str, args: Value) -> String {
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
    match last.state {
        CallState::AwaitingApproval => {
            c.confirm_tool(
                session.into(),
                call.clone(),
                ConfirmationOutcome::Cancel,
                None,
            )
            .await
            .unwrap();
            "ask_user".to_owned()
        }
        CallState::Success => "allow".to_owned(),
        _ if last.error.as_ref().is_some_and(|e| e.kind == "denied") => "deny".to_owned(),
        _ => format!("error: {:?}", last.error),
    }
}

/// 0 deny, 1 ask_user, 2 allow: a higher rank lets more through.
fn rank(decision: &str) -> u8 {
    match decision {
        "allow" => 2,
        "ask_user" => 1,
        _ => 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_never_allow_what_the_reference_refuses() {
    let recorded: Value = serde_json::from_str(RECORDED).unwrap();
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    for file in recorded["files"].as_array().unwrap() {
        let path = ws.join(file["path"].as_str().unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, file["content"].as_str().unwrap()).unwrap();
    }
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .expect("git is needed: apt-get install git");
    assert!(git.success());
    for file in recorded["extra_files"].as_array().unwrap() {
        std::fs::write(
            ws.join(file["path"].as_str().unwrap()),
            file["content"].as_str().unwrap(),
        )
        .unwrap();
    }
    let c = d.client().await;
    let mut sessions: BTreeMap<(String, bool), String> = BTreeMap::new();
    let mut session = async |name: &str, interactive: bool| -> String {
        if let Some(id) = sessions.get(&(name.to_owned(), interactive)) {
            return id.clone();
        }
        let id = c
            .create_session(
                ws.display().to_string(),
                Some(mode(name)),
                None,
                Some(interactive),
                None,
                None,
                None,
            )
            .await
            .unwrap()
            .session_id;
        sessions.insert((name.to_owned(), interactive), id.clone());
        id
    };
    // Every call once, in the recording's order (edits come last).
    let mut outcomes = Vec::new();
    for call in recorded["calls"].as_array().unwrap() {
        let s = session(call["mode"].as_str().unwrap(), false).await;
        let (tool, args) = our_call(&ws, call);
        let snap = c
            .call_tool(s, tool.into(), Some(args), Some(true))
            .await
            .unwrap()
            .outcome
            .unwrap();
        outcomes.push(snap);
    }
    let mut agree = 0;
    let mut stricter: Vec<String> = Vec::new();
    let mut looser: Vec<String> = Vec::new();
    let cases = recorded["cases"].as_array().unwrap();
    for case in cases {
        let snap = &outcomes[case["call"].as_u64().unwrap() as usize];
        let ok = snap.state == CallState::Success;
        let ours = ok
            && case["probe"]
                .as_object()
                .is_none_or(|_| probe(&ws, &case["probe"], &text_of(snap)));
        let theirs = case["reference"]["allowed"].as_bool().unwrap();
        let what = case["what"].as_str().unwrap().to_owned();
        match (ours, theirs) {
            (a, b) if a == b => agree += 1,
            (true, false) => looser.push(format!(
                "{what}: allowed here, refused by the reference ({})",
                case["reference"]["why"]
            )),
            _ => stricter.push(format!(
                "{what}: {:?}",
                snap.error.as_ref().map(|e| &e.message)
            )),
        }
    }
    let decisions = recorded["decisions"].as_array().unwrap();
    for d in decisions {
        let s = session(d["mode"].as_str().unwrap(), true).await;
        let path = ws.join(d["path"].as_str().unwrap());
        let ours = decision(
            &c,
            &s,
            "write_file",
            json!({"file_path": path, "content": "x"}),
        )
        .await;
        let theirs = d["reference"]["decision"].as_str().unwrap();
        let what = format!("{} {} ({}, interactive)", d["tool"], d["path"], d["mode"]);
        match rank(&ours).cmp(&rank(theirs)) {
            std::cmp::Ordering::Equal => agree += 1,
            std::cmp::Ordering::Greater => {
                looser.push(format!("{what}: {ours} here, {theirs} in the reference"))
            }
            std::cmp::Ordering::Less => {
                stricter.push(format!("{what}: {ours} here, {theirs} in the reference"))
            }
        }
    }
    let total = cases.len() + decisions.len();
    println!(
        "file tools vs reference: {total} cases, {agree} agree, {} stricter, {} looser",
        stricter.len(),
        looser.len()
    );
    for s in &stricter {
        println!("  stricter: {s}");
    }
    assert!(total >= 200, "only {total} cases");
    let unexplained_looser: Vec<&String> = looser
        .iter()
        .filter(|l| !LOOSER_ON_PURPOSE.iter().any(|p| l.starts_with(p)))
        .collect();
    assert!(
        unexplained_looser.is_empty(),
        "allowed where the reference refuses:\n{}",
        looser.join("\n")
    );
    let unexplained_stricter: Vec<&String> = stricter
        .iter()
        .filter(|s| !STRICTER_ON_PURPOSE.iter().any(|(p, _)| s.starts_with(p)))
        .collect();
    assert!(
        unexplained_stricter.is_empty(),
        "stricter than the reference without a listed reason:\n{}",
        unexplained_stricter
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
