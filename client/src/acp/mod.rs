//! `gemctl acp`: an Agent Client Protocol (v1) agent on stdio, backed by
//! the daemon, for editors such as Zed. An ACP session is a daemon session
//! (same id), so a terminal can `gemctl attach` to it while the editor
//! drives it.
//!
//! Wire types are converted in `convert.rs`, the session's event stream is
//! followed in `follow.rs`, and `rpc.rs` frames messages.

mod auth;
mod commands;
mod convert;
mod elicit;
mod follow;
mod rpc;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use geminid_protocol::api::GeminidApiClient;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::Client;
use crate::command::{Failure, Outcome, exit};
use follow::Follow;
use rpc::{Peer, code, daemon_error};

/// The ACP protocol version we speak.
const PROTOCOL_VERSION: u64 = 1;

/// Serves one editor on stdin/stdout until it closes stdin. The daemon is
/// started when none answers (as `gemctl daemon start` does); when it
/// cannot be reached, every request is answered with an error saying why,
/// so the editor shows a message rather than a broken pipe.
pub async fn run(socket: &Path) -> Outcome {
    let ctx = crate::command::Ctx {
        socket: socket.to_path_buf(),
        json: false,
        client: "gemctl acp",
    };
    let (peer, lines) = Peer::new();
    let writer = tokio::spawn(rpc::write_lines(lines));
    let client = match crate::start::connect_or_start(&ctx, None, None).await {
        Ok((client, _)) => Arc::new(client),
        Err(failure) => {
            let status = refuse_all(&peer, &failure.message).await;
            drop(peer);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
            return Err(Failure::new(status, failure.message));
        }
    };
    let agent = Arc::new(Agent {
        client,
        peer: peer.clone(),
        sessions: Mutex::new(HashMap::new()),
        asks: Mutex::new(elicit::EditorAsks::default()),
    });
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match stdin.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => return Err(Failure::new(exit::FAILED, format!("reading stdin: {e}"))),
        };
        if line.trim().is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(e) => {
                peer.respond_error(Value::Null, code::PARSE_ERROR, format!("not JSON: {e}"));
                continue;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) => {
                let agent = agent.clone();
                let (method, id) = (method.to_owned(), id.clone());
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                tokio::spawn(async move { agent.request(&method, id, params).await });
            }
            (Some(method), None) => agent.notification(method, message.get("params")),
            (None, Some(_)) => peer.resolve(&message),
            (None, None) => peer.respond_error(Value::Null, code::INVALID_REQUEST, "not JSON-RPC"),
        }
    }
    // The editor is gone. Turns it started go on in the daemon; whatever
    // is still queued for stdout gets a moment to leave.
    drop(agent);
    drop(peer);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    Ok(exit::OK)
}

/// Without a daemon: answers every request with `message` until the
/// editor closes stdin.
async fn refuse_all(peer: &Arc<Peer>, message: &str) -> u8 {
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = stdin.next_line().await {
        let Ok(message_in) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message_in.get("method").is_some()
            && let Some(id) = message_in.get("id")
        {
            peer.respond_error(
                id.clone(),
                code::INTERNAL_ERROR,
                format!("gemctl acp cannot reach geminid: {message}"),
            );
        }
    }
    exit::UNREACHABLE
}

struct Agent {
    client: Arc<Client>,
    peer: Arc<Peer>,
    /// Followed sessions by id.
    sessions: Mutex<HashMap<String, Arc<Follow>>>,
    /// How the editor can be asked questions (from `initialize`).
    asks: Mutex<elicit::EditorAsks>,
}

/// A request's failure: a JSON-RPC error code and message.
type Refusal = (i64, String);

fn invalid(message: impl Into<String>) -> Refusal {
    (code::INVALID_PARAMS, message.into())
}

fn str_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, Refusal> {
    params[name]
        .as_str()
        .ok_or_else(|| invalid(format!("missing string param `{name}`")))
}

impl Agent {
    async fn request(&self, method: &str, id: Value, params: Value) {
        let answered = match method {
            "initialize" => {
                *self.asks.lock().unwrap_or_else(|e| e.into_inner()) =
                    elicit::EditorAsks::from_initialize(&params);
                Ok(Some(initialize()))
            }
            "authenticate" => self.authenticate(&params).await.map(Some),
            "session/new" => self.new_session(&params).await.map(Some),
            "session/load" => self.load_session(&params, id.clone()).await.map(|()| None),
            "session/prompt" => self.prompt(&params, id.clone()).await.map(|()| None),
            "session/set_mode" => self.set_mode(&params).await.map(Some),
            "session/set_model" => self.set_model(&params).await.map(Some),
            _ => Err((code::METHOD_NOT_FOUND, format!("unknown method `{method}`"))),
        };
        match answered {
            Ok(Some(result)) if method == "session/new" => {
                let session_id = result["sessionId"].as_str().unwrap_or_default().to_owned();
                self.peer.respond(id, result);
                // After the answer: the editor knows the session by then.
                if let Ok(follow) = self.follow(&session_id) {
                    let commands = commands::offered(&self.client, &follow.cwd).await;
                    let update =
                        json!({"sessionId": session_id, "update": commands::update(&commands)});
                    self.peer.notify("session/update", update);
                }
            }
            Ok(Some(result)) => self.peer.respond(id, result),
            // Answered later, by the session's follower.
            Ok(None) => {}
            Err((code, message)) => self.peer.respond_error(id, code, message),
        }
    }

    fn notification(&self, method: &str, params: Option<&Value>) {
        if method != "session/cancel" {
            return;
        }
        let Some(session_id) = params.and_then(|p| p["sessionId"].as_str()) else {
            return;
        };
        let client = self.client.clone();
        let session_id = session_id.to_owned();
        tokio::spawn(async move {
            if let Err(e) = client.cancel_session(session_id).await {
                eprintln!("gemctl acp: session.cancel failed: {}", daemon_error(&e).1);
            }
        });
    }

    fn follow(&self, session_id: &str) -> Result<Arc<Follow>, Refusal> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session_id)
            .cloned()
            .ok_or_else(|| {
                invalid(format!(
                    "unknown session `{session_id}` (session/new or session/load it first)"
                ))
            })
    }

    fn start_follow(
        &self,
        session_id: &str,
        cwd: &str,
        since: u64,
        end: u64,
        load: Option<(Value, Value)>,
    ) {
        let follow = Follow::start(
            self.client.clone(),
            follow::Editor {
                peer: self.peer.clone(),
                asks: *self.asks.lock().unwrap_or_else(|e| e.into_inner()),
            },
            session_id.to_owned(),
            cwd.to_owned(),
            since,
            end,
            load,
        );
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session_id.to_owned(), follow);
    }

    async fn new_session(&self, params: &Value) -> Result<Value, Refusal> {
        let cwd = str_param(params, "cwd")?;
        warn_mcp_servers(params);
        let info = self
            .client
            .create_session(cwd.to_owned(), None, None, Some(true), None, None, None)
            .await
            .map_err(|e| daemon_error(&e))?;
        self.start_follow(
            &info.session_id,
            &info.cwd,
            info.last_seq,
            info.last_seq,
            None,
        );
        let models = self.model_state(info.model.as_deref()).await;
        Ok(
            json!({"sessionId": info.session_id, "modes": convert::mode_state(info.approval_mode), "models": models}),
        )
    }

    async fn load_session(&self, params: &Value, id: Value) -> Result<(), Refusal> {
        let session_id = str_param(params, "sessionId")?;
        warn_mcp_servers(params);
        let info = self
            .client
            .get_session(session_id.to_owned())
            .await
            .map_err(|e| daemon_error(&e))?;
        let models = self.model_state(info.model.as_deref()).await;
        let result = json!({"modes": convert::mode_state(info.approval_mode), "models": models});
        self.start_follow(session_id, &info.cwd, 0, info.last_seq, Some((id, result)));
        Ok(())
    }

    async fn prompt(&self, params: &Value, id: Value) -> Result<(), Refusal> {
        let follow = self.follow(str_param(params, "sessionId")?)?;
        let blocks = params["prompt"]
            .as_array()
            .ok_or_else(|| invalid("missing array param `prompt`"))?;
        // `/<prompt> args`: an MCP prompt's text instead.
        let blocks = commands::expand(&self.client, &follow.cwd, blocks)
            .await
            .map_err(invalid)?;
        let parts = convert::prompt_parts(&blocks).map_err(invalid)?;
        let text = geminid_protocol::turn::shown_prompt("", &parts);
        follow.sending(&text);
        let accepted = match self
            .client
            .prompt_parts(follow.session_id.clone(), None, Some(parts))
            .await
        {
            Ok(accepted) => accepted,
            Err(e) => {
                follow.not_sent(&text);
                return Err(daemon_error(&e));
            }
        };
        follow.await_turn(&self.peer, accepted.turn_id, id);
        Ok(())
    }

    /// `authenticate`: geminid cannot log in for the user; it says whether
    /// the chosen method is usable now and, if not, what to set.
    async fn authenticate(&self, params: &Value) -> Result<Value, Refusal> {
        let method = str_param(params, "methodId")?;
        let Some(wanted) = auth::provider_of(method) else {
            return Err(invalid(format!(
                "unknown authMethod `{method}` ({})",
                auth::METHOD_IDS.join(", ")
            )));
        };
        let status = self.client.status().await.map_err(|e| daemon_error(&e))?;
        auth::check(wanted, status.model.as_ref())?;
        Ok(json!({}))
    }

    /// ACP's model selector: the session's model and those the daemon
    /// offers (`Null` when the daemon cannot say).
    async fn model_state(&self, chosen: Option<&str>) -> Value {
        match self.client.status().await.ok().and_then(|s| s.model) {
            Some(status) => {
                convert::model_state(chosen.unwrap_or(&status.model), &status.available)
            }
            None => Value::Null,
        }
    }

    async fn set_model(&self, params: &Value) -> Result<Value, Refusal> {
        let follow = self.follow(str_param(params, "sessionId")?)?;
        let model = str_param(params, "modelId")?;
        self.client
            .set_model(follow.session_id.clone(), Some(model.to_owned()))
            .await
            .map_err(|e| daemon_error(&e))?;
        Ok(json!({}))
    }

    async fn set_mode(&self, params: &Value) -> Result<Value, Refusal> {
        let follow = self.follow(str_param(params, "sessionId")?)?;
        let mode_id = str_param(params, "modeId")?;
        let mode = convert::mode_from_id(mode_id).ok_or_else(|| {
            invalid(format!(
                "unknown mode `{mode_id}` (default, autoEdit, yolo, plan)"
            ))
        })?;
        self.client
            .set_approval_mode(follow.session_id.clone(), mode)
            .await
            .map_err(|e| daemon_error(&e))?;
        Ok(json!({}))
    }
}

fn initialize() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": true, "embeddedContext": true},
            "mcpCapabilities": {"http": false, "sse": false},
        },
        "authMethods": auth::methods(),
        "agentInfo": {"name": "geminid", "title": "geminid", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The daemon runs the MCP servers of its own settings; those the editor
/// offers are not connected.
fn warn_mcp_servers(params: &Value) {
    if params["mcpServers"]
        .as_array()
        .is_some_and(|s| !s.is_empty())
    {
        eprintln!(
            "gemctl acp: ignoring the editor's mcpServers; geminid uses the mcpServers of its settings.json"
        );
    }
}
