//! MCP prompts as slash commands in `gemctl chat` (in tmux), with two
//! real server-everything servers (so every prompt name clashes and is
//! server-qualified) and the fake model: `/help` lists them, `/<prompt>`
//! with named and positional arguments sends the prompt's text as the
//! turn, a missing argument is said and nothing is sent. Then through
//! `gemctl acp`: the prompts offered as `available_commands_update`, and
//! an ACP prompt starting with `/name` run as one.

mod peers;
mod stdio;

use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::tmux::Tmux;
use geminid_tests::*;
use peers::*;
use serde_json::json;

/// A daemon on the fake model whose settings name `servers`
/// server-everything servers.
fn daemon(fake: &FakeModel, p: &std::path::Path, servers: &[&str]) -> TestDaemon {
    let mut d = TestDaemon::prepared(&[
        ("GEMINI_API_KEY", "k"),
        ("GOOGLE_GEMINI_BASE_URL", &fake.base_url),
    ]);
    let dir = d.home().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let servers: serde_json::Map<String, serde_json::Value> = servers
        .iter()
        .map(|name| ((*name).to_owned(), json!({"command": everything(p)})))
        .collect();
    std::fs::write(
        dir.join("settings.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
    d.spawn();
    d
}

fn chat_command(d: &TestDaemon) -> String {
    let home = d.home();
    format!(
        "cd '{ws}' && env HOME='{home}' XDG_STATE_HOME='{home}/state' TERM=tmux-256color '{bin}' --socket '{socket}' chat",
        ws = d.workspace.display(),
        home = home.display(),
        bin = gemctl_bin().display(),
        socket = d.socket.display(),
    )
}

/// The user's text (the last part of the last user content: the
/// session's context comes before it) of every model request.
fn user_texts(fake: &FakeModel) -> Vec<String> {
    fake.seen()
        .iter()
        .filter_map(|s| s.body["contents"].as_array().cloned())
        .filter_map(|contents| contents.last().cloned())
        .filter(|c| c["role"] == "user")
        .filter_map(|c| {
            c["parts"]
                .as_array()
                .and_then(|parts| parts.last())
                .and_then(|p| p["text"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_runs_from_chat_as_a_slash_command() {
    let p = peers();
    let fake = FakeModel::scripted(vec![
        gemini::answer(&["Sunny in Paris."]),
        gemini::answer(&["Rainy in Oslo."]),
    ])
    .await;
    let d = daemon(&fake, &p, &["everything", "second"]);
    let c = d.client().await;
    connected(&c, &["everything", "second"]).await;

    let tmux = Tmux::new(d.dir.path());
    tmux.start("a", &chat_command(&d));
    tmux.wait_for("a", "gemctl chat session").await;

    // /help lists the prompts; both servers offer the same names, so each
    // is qualified by its server.
    tmux.line("a", "/help");
    let screen = tmux.wait_for("a", "MCP prompts:").await;
    let screen = if screen.contains("/second.simple-prompt") {
        screen
    } else {
        tmux.wait_for("a", "/second.simple-prompt").await
    };
    assert!(
        screen.contains("/everything.args-prompt --city [--state]"),
        "{screen}"
    );

    // Positional and named arguments; the prompt's text is the turn.
    tmux.line("a", "/everything.args-prompt Paris --state=TX");
    tmux.wait_for("a", "Sunny in Paris.").await;
    assert_eq!(user_texts(&fake), ["What's weather in Paris, TX?"]);

    // A missing required argument is said; nothing reaches the model.
    tmux.line("a", "/second.args-prompt --state=TX");
    tmux.wait_for("a", "Missing required argument(s): --city")
        .await;
    // The unqualified name is not a command when it clashes.
    tmux.line("a", "/args-prompt Oslo");
    tmux.wait_for("a", "unknown command /args-prompt").await;
    // `/<prompt> help` lists the arguments.
    tmux.line("a", "/second.args-prompt help");
    tmux.wait_for("a", "--city (required: yes)").await;

    tmux.line("a", "/second.args-prompt --city=\"Oslo\"");
    tmux.wait_for("a", "Rainy in Oslo.").await;
    assert_eq!(
        user_texts(&fake),
        ["What's weather in Paris, TX?", "What's weather in Oslo?"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_offers_prompts_as_commands_and_runs_them() {
    let p = peers();
    let fake = FakeModel::scripted(vec![gemini::answer(&["Sunny in Paris."])]).await;
    let d = daemon(&fake, &p, &["everything"]);
    let c = d.client().await;
    connected(&c, &["everything"]).await;

    let mut agent = stdio::StdioPeer::spawn(d.gemctl(&["acp"]));
    agent
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let (created, _) = agent
        .call(
            "session/new",
            json!({"cwd": d.workspace.display().to_string(), "mcpServers": []}),
        )
        .await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let offered = agent
        .until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await
        .pop()
        .unwrap();
    assert_eq!(offered["params"]["sessionId"], session.as_str());
    let commands = offered["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap();
    let args = commands
        .iter()
        .find(|c| c["name"] == "args-prompt")
        .unwrap_or_else(|| panic!("args-prompt offered: {offered}"));
    assert_eq!(args["input"]["hint"], "--city [--state]");
    assert!(commands.iter().any(|c| c["name"] == "simple-prompt"));

    // `/args-prompt ...` runs the prompt; its text is the turn.
    let id = agent
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/args-prompt --city=Paris --state=TX"}]}),
        )
        .await;
    let answered = agent.until(|m| stdio::is_response(m, id)).await;
    assert_eq!(answered.last().unwrap()["result"]["stopReason"], "end_turn");
    assert_eq!(user_texts(&fake), ["What's weather in Paris, TX?"]);

    // A missing argument is the request's error; nothing is sent.
    let (refused, _) = agent
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/args-prompt --state=TX"}]}),
        )
        .await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Missing required argument(s): --city"),
        "{refused}"
    );
    assert_eq!(user_texts(&fake).len(), 1);
    agent.close().await;
}
