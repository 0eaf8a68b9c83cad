//! `gemctl acp`: the Agent Client Protocol agent, driven over stdio the
//! way an editor drives it, against a real geminid and the fake model;
//! then by two real ACP clients, `acp-client.mjs` (the ACP SDK) and `acpx`.

mod acp_setup;
mod peers;
mod stdio;

use acp_setup::{Setup, prompt, text_of, updates, writes_a_file};
use geminid_protocol::event::EventPayload;
use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::fake_model::{Reply, gemini};
use geminid_tests::*;
use serde_json::{Value, json};
use stdio::is_request;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_text_and_a_tool_call_approved_by_the_editor() {
    let s = Setup::new(writes_a_file()).await;
    let mut agent = s.agent().await;
    let session = s.new_session(&mut agent).await;

    // A terminal attaches to the same session (the ACP id is the daemon's).
    let terminal = s.d.client().await;
    let mut events = terminal
        .subscribe_session(session.clone(), None)
        .await
        .expect("a terminal subscribes to the ACP session");

    let id = agent
        .request("session/prompt", prompt(&session, "write hello"))
        .await;
    let before = agent
        .until(|m| is_request(m, "session/request_permission"))
        .await;
    let ask = before.last().unwrap();
    let call = &ask["params"]["toolCall"];
    assert_eq!(ask["params"]["sessionId"], session.as_str());
    assert_eq!(call["kind"], "edit", "{ask}");
    assert_eq!(call["status"], "pending");
    let diff = &call["content"][0];
    assert_eq!(diff["type"], "diff", "{ask}");
    assert_eq!(diff["path"], format!("{}/hello.txt", s.ws()));
    assert_eq!(diff["newText"], "hi\n");
    assert_eq!(diff["oldText"], Value::Null, "a new file");
    let kinds: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(text_of(&before, "agent_thought_chunk"), "a file is needed");
    let first = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("a tool_call update");
    assert_eq!(first["kind"], "edit");
    assert_eq!(first["rawInput"]["content"], "hi\n");
    assert_eq!(first["toolCallId"], call["toolCallId"]);

    agent
        .respond(
            &ask["id"],
            json!({"outcome": {"outcome": "selected", "optionId": "proceed_once"}}),
        )
        .await;
    let rest = agent.until(|m| stdio::is_response(m, id)).await;
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "end_turn");
    let all: Vec<Value> = before.iter().chain(&rest).cloned().collect();
    assert_eq!(text_of(&all, "agent_message_chunk"), "Writing it. Done.");
    assert_eq!(
        text_of(&all, "user_message_chunk"),
        "",
        "no echo of our prompt"
    );
    let done = updates(&rest)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .expect("the call completed");
    assert_eq!(done["content"][0]["type"], "diff", "{done}");
    assert_eq!(done["content"][0]["newText"], "hi\n");
    assert_eq!(
        std::fs::read_to_string(s.d.workspace.join("hello.txt")).unwrap(),
        "hi\n"
    );

    // The terminal saw the same turn.
    let seen = collect_until(&mut events, |e| {
        matches!(e.payload, EventPayload::TurnFinished { .. })
    })
    .await;
    let text: String = seen
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelText { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Writing it. Done.");
    assert!(seen.iter().any(|e| matches!(&e.payload,
        EventPayload::ToolCall(c) if c.state == CallState::Success && c.decided_by.is_some())));

    // Unknown methods are errors, and the agent goes on.
    let (r, _) = agent.call("session/fly", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(agent.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_answering_first_withdraws_the_editors_question() {
    let s = Setup::new(writes_a_file()).await;
    let mut agent = s.agent().await;
    let session = s.new_session(&mut agent).await;
    let id = agent
        .request("session/prompt", prompt(&session, "write hello"))
        .await;
    let ask = agent
        .until(|m| is_request(m, "session/request_permission"))
        .await;
    let ask = ask.last().unwrap().clone();
    let call_id = ask["params"]["toolCall"]["toolCallId"].as_str().unwrap();

    let terminal = s.d.client().await;
    let confirmed = terminal
        .confirm_tool(
            session.clone(),
            call_id.into(),
            ConfirmationOutcome::ProceedOnce,
            None,
        )
        .await
        .unwrap();
    assert!(confirmed.accepted);
    let withdrawn = agent.until(|m| m["method"] == "$/cancel_request").await;
    assert_eq!(withdrawn.last().unwrap()["params"]["requestId"], ask["id"]);
    // The editor's late answer is harmless.
    agent
        .respond(
            &ask["id"],
            json!({"outcome": {"outcome": "selected", "optionId": "cancel"}}),
        )
        .await;
    let rest = agent.until(|m| stdio::is_response(m, id)).await;
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "end_turn");
    assert!(
        s.d.workspace.join("hello.txt").exists(),
        "the terminal's yes won"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_turn_as_cancelled() {
    let s = Setup::new(vec![Reply::StreamThenHang {
        events: vec![gemini::text("Thinking very hard")],
    }])
    .await;
    let mut agent = s.agent().await;
    let session = s.new_session(&mut agent).await;
    let id = agent
        .request("session/prompt", prompt(&session, "go slowly"))
        .await;
    agent
        .until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .await;
    agent
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let rest = agent.until(|m| stdio::is_response(m, id)).await;
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_switch_and_a_loaded_session_replays_its_history() {
    let s = Setup::new(vec![gemini::answer(&["Hello ", "there."])]).await;
    let mut agent = s.agent().await;
    let session = s.new_session(&mut agent).await;

    // The mode update may come before or after the answer.
    let is_mode = |m: &Value| m["params"]["update"]["sessionUpdate"] == "current_mode_update";
    let (r, mut seen) = agent
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "yolo"}),
        )
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    if !seen.iter().any(is_mode) {
        seen = agent.until(is_mode).await;
    }
    let changed = seen.iter().find(|m| is_mode(m)).unwrap();
    assert_eq!(changed["params"]["update"]["currentModeId"], "yolo");
    let info =
        s.d.client()
            .await
            .get_session(session.clone())
            .await
            .unwrap();
    assert_eq!(info.approval_mode.as_str(), "yolo");
    let (bad, _) = agent
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "warp"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    let (r, _) = agent.call("session/prompt", prompt(&session, "hi")).await;
    // The answer comes after the turn's updates, which `call` read past.
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(agent.close().await, Some(0));

    // Another editor loads it: the history first, then the answer.
    let mut other = s.agent().await;
    let (r, replayed) = other
        .call(
            "session/load",
            json!({"sessionId": session, "cwd": s.ws(), "mcpServers": []}),
        )
        .await;
    assert_eq!(r["result"]["modes"]["currentModeId"], "yolo", "{r}");
    assert_eq!(text_of(&replayed, "user_message_chunk"), "hi");
    assert_eq!(text_of(&replayed, "agent_message_chunk"), "Hello there.");
    let (missing, _) = other
        .call(
            "session/load",
            json!({"sessionId": "0".repeat(32), "cwd": s.ws(), "mcpServers": []}),
        )
        .await;
    assert!(missing.get("error").is_some(), "{missing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_selector_lists_and_switches_the_session_model() {
    let s = Setup::new(vec![gemini::answer(&["ok"])]).await;
    let mut agent = s.agent().await;
    let (r, _) = agent
        .call("session/new", json!({"cwd": s.ws(), "mcpServers": []}))
        .await;
    let models = &r["result"]["models"];
    assert_eq!(models["currentModelId"], "gemini-2.5-flash", "{r}");
    assert_eq!(models["availableModels"][0]["modelId"], "gemini-2.5-flash");
    let session = r["result"]["sessionId"].as_str().unwrap().to_owned();
    let (r, _) = agent
        .call(
            "session/set_model",
            json!({"sessionId": session, "modelId": "gemini-2.5-pro"}),
        )
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    let info =
        s.d.client()
            .await
            .get_session(session.clone())
            .await
            .unwrap();
    assert_eq!(info.model.as_deref(), Some("gemini-2.5-pro"));
    let (r, _) = agent.call("session/prompt", prompt(&session, "hi")).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let seen = s.fake.seen();
    assert!(
        seen.last()
            .unwrap()
            .path
            .contains("/models/gemini-2.5-pro:"),
        "{}",
        seen.last().unwrap().path
    );
    assert_eq!(agent.close().await, Some(0));
}

/// Runs a peer command in the peers folder (so `npx` finds Node 22).
async fn run_peer(peers: &std::path::Path, program: &str, args: &[&str]) -> (bool, String) {
    let home = tempfile::tempdir().expect("home");
    let out = tokio::process::Command::new(program)
        .args(args)
        .current_dir(peers)
        // acpx keeps its sessions under $HOME.
        .env("HOME", home.path())
        .output()
        .await
        .expect("run peer");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn agent_command(s: &Setup) -> String {
    format!(
        "{} --socket {} acp",
        gemctl_bin().display(),
        s.d.socket.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acp_sdk_client_runs_a_turn_with_a_permission() {
    let p = peers::peers();
    let s = Setup::new(writes_a_file()).await;
    let node = p.join("node_modules/.bin/node").display().to_string();
    let script = p.join("acp-client.mjs").display().to_string();
    let agent = agent_command(&s);
    let ws = s.ws();
    let mut args = vec![
        script.as_str(),
        "--cwd",
        &ws,
        "--prompt",
        "write hello",
        "--",
    ];
    args.extend(agent.split(' '));
    let (ok, text) = run_peer(&p, &node, &args).await;
    assert!(ok, "{text}");
    assert!(text.contains(r#"chose":"proceed_once""#), "{text}");
    assert!(text.contains(r#""sessionUpdate":"tool_call""#), "{text}");
    assert!(
        text.contains(r#"session/prompt {"stopReason":"end_turn"}"#),
        "{text}"
    );
    assert!(s.d.workspace.join("hello.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acpx_runs_a_turn_with_a_permission() {
    let p = peers::peers();
    let s = Setup::new(writes_a_file()).await;
    let agent = agent_command(&s);
    let ws = s.ws();
    let args = [
        "acpx",
        "--agent",
        &agent,
        "--cwd",
        &ws,
        "--approve-all",
        "exec",
        "write hello",
    ];
    let (ok, text) = run_peer(&p, "npx", &args).await;
    assert!(ok, "{text}");
    assert!(text.contains("Done."), "{text}");
    assert!(s.d.workspace.join("hello.txt").exists(), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_a_hook_ends_is_a_refusal_or_an_end_with_its_reason_shown() {
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new(Vec::new()).await;
    // A BeforeAgent hook: `deny` refuses the prompt, `continue: false`
    // ends the turn (written before the first session reads hooks).
    let gate = s.d.home().join("gate.sh");
    std::fs::write(
        &gate,
        r#"#!/bin/bash
input=$(cat)
case "$input" in
  *secret*) echo '{"decision": "deny", "reason": "no secrets"}' ;;
  *pause*) echo '{"continue": false, "stopReason": "paused"}' ;;
esac
"#,
    )
    .unwrap();
    std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = s.d.home().join(".gemini");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        json!({"hooks": {"BeforeAgent": [{"hooks": [
            {"type": "command", "command": gate.display().to_string()}]}]}})
        .to_string(),
    )
    .unwrap();
    let mut agent = s.agent().await;
    let session = s.new_session(&mut agent).await;

    let id = agent
        .request("session/prompt", prompt(&session, "tell the secret"))
        .await;
    let refused = agent.until(|m| stdio::is_response(m, id)).await;
    let answer = refused.last().unwrap();
    assert_eq!(answer["result"]["stopReason"], "refusal", "{answer}");
    assert_eq!(
        text_of(&refused, "agent_message_chunk"),
        "Agent execution blocked by hook: no secrets"
    );

    let id = agent
        .request("session/prompt", prompt(&session, "pause here"))
        .await;
    let stopped = agent.until(|m| stdio::is_response(m, id)).await;
    let answer = stopped.last().unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        text_of(&stopped, "agent_message_chunk"),
        "Agent execution stopped by hook: paused"
    );
    assert!(s.fake.seen().is_empty(), "neither reached the model");
}
