//! One connection to an MCP server that need not be configured
//! (`mcp.probe`, behind `gemctl mcp probe`): open it, list what it offers,
//! call one tool if asked, close it.
//!
//! It goes through a [`Server`] like every configured server (the same
//! connect, `initialize`, listing, call, timeout and content conversion),
//! only opened once instead of kept warm, and registers nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::connect::Hooks;
use super::oauth::{OAuthSettings, TokenStore, server_auth::ServerAuth};
use super::server::{Events, Server, Status};
use crate::discovery::settings::{DEFAULT_MCP_TIMEOUT, ServerConfig, Transport};
use crate::tools::{ContentPart, OutputSink, ToolError};

/// The longest a probe's call may run.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("nothing to probe: give a URL or a command")]
    NoTarget,
    /// Connecting, `initialize` or `tools/list` failed (the message says
    /// which).
    #[error("{0}")]
    Open(String),
    #[error("{0}")]
    Call(ToolError),
    #[error("the probe was cancelled (the client went away)")]
    Cancelled,
}

/// What to probe and how.
pub struct ProbeRequest {
    /// A URL (`.../sse` means legacy SSE, else streamable HTTP) or a
    /// command line (program and arguments, or one string of them).
    pub target: Vec<String>,
    /// A tool to call after listing, with its arguments.
    pub call: Option<(String, Map<String, Value>)>,
    pub headers: BTreeMap<String, String>,
    /// Where a command runs.
    pub cwd: Option<PathBuf>,
    /// Environment for a command, over the daemon's.
    pub env: BTreeMap<String, String>,
    /// Answer elicitations with each property's default instead of
    /// declining them.
    pub accept_elicitation_defaults: bool,
    /// OAuth settings, as a server entry's `oauth` block (a client id and
    /// secret registered beforehand).
    pub oauth: Option<OAuthSettings>,
}

/// What the probe found.
pub struct ProbeReport {
    /// The server's answer to `initialize`.
    pub server: Option<Value>,
    /// Every tool as declared, schema sanitized.
    pub tools: Vec<Value>,
    /// The call's result, when one was asked for.
    pub result: Option<ProbeCall>,
    /// The call's progress, as the batches a session's output would get.
    pub progress: Vec<String>,
}

pub struct ProbeCall {
    pub tool: String,
    pub content: Vec<ContentPart>,
    pub structured: Option<Value>,
}

/// Status changes of a probed server go nowhere: nobody lists it.
struct Unlisted;

impl Events for Unlisted {
    fn status(&self, server: &str, _scope: &str, status: Status, message: Option<&str>) {
        tracing::debug!(server, status = status.as_str(), message, "mcp probe");
    }

    fn tools_changed(&self) {}
}

fn transport_for(request: &ProbeRequest) -> Result<Transport, ProbeError> {
    let target = &request.target;
    let first = target.first().ok_or(ProbeError::NoTarget)?;
    if target.len() == 1 && (first.starts_with("http://") || first.starts_with("https://")) {
        let path = first.split(['?', '#']).next().unwrap_or(first);
        if path.trim_end_matches('/').ends_with("/sse") {
            return Ok(Transport::Sse { url: first.clone() });
        }
        return Ok(Transport::Http { url: first.clone() });
    }
    // One argument with spaces is a whole command line.
    let words: Vec<String> = if target.len() == 1 {
        first.split_whitespace().map(str::to_owned).collect()
    } else {
        target.to_vec()
    };
    let (command, args) = words.split_first().ok_or(ProbeError::NoTarget)?;
    Ok(Transport::Stdio {
        command: command.clone(),
        args: args.to_vec(),
        env: request.env.clone(),
        cwd: request.cwd.clone(),
    })
}

/// Runs the probe; `cancel` (the client went away) ends it early, and the
/// server is told about a call in flight.
pub async fn probe(
    request: ProbeRequest,
    cancel: CancellationToken,
) -> Result<ProbeReport, ProbeError> {
    let transport = transport_for(&request)?;
    let config = ServerConfig {
        sandbox: crate::discovery::jail::ServerSandbox::default(),
        name: "probe".into(),
        transport,
        headers: request.headers.clone(),
        timeout: DEFAULT_MCP_TIMEOUT.min(CALL_TIMEOUT),
        trust: false,
        include_tools: None,
        exclude_tools: Vec::new(),
        scope: "probe".into(),
        oauth: request.oauth.clone(),
    };
    let hooks = Hooks::default();
    // Tokens live as long as the probe; a login follows the authorization
    // URL itself (the server under test approves at once).
    let auth = ServerAuth::new(Arc::new(TokenStore::memory()), true);
    let server = Server::with_hooks(config, hooks, auth);
    let open = tokio::select! {
        () = cancel.cancelled() => return Err(ProbeError::Cancelled),
        open = server.open(&Unlisted) => open.map_err(ProbeError::Open)?,
    };
    let tools = server.tools().into_iter().map(|t| t.declared).collect();
    let progress = Arc::new(Mutex::new(Vec::new()));
    let outcome = match request.call {
        Some((name, args)) => {
            let sink = {
                let progress = progress.clone();
                OutputSink::new(move |batch| {
                    progress
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(batch);
                })
            }
            .with_asker(probe_asker(request.accept_elicitation_defaults));
            server
                .call(&name, &name, Value::Object(args), cancel.clone(), sink)
                .await
                .map(|result| {
                    Some(ProbeCall {
                        tool: name,
                        content: result.llm_content,
                        structured: result.structured,
                    })
                })
        }
        None => Ok(None),
    };
    let peer_info = server.peer_info();
    server.close(open, &Unlisted, "the probe is over").await;
    let result = outcome.map_err(|e| {
        if cancel.is_cancelled() {
            ProbeError::Cancelled
        } else {
            ProbeError::Call(e)
        }
    })?;
    let progress = std::mem::take(&mut *progress.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(ProbeReport {
        server: peer_info,
        tools,
        result,
        progress,
    })
}

/// The probe's people: an elicitation reaches it by the daemon's own path
/// (the call's asker, `connect.rs`) and is answered with each field's
/// default when the probe asked for that (`acceptElicitationDefaults`),
/// else declined. A form whose required fields have no default cannot be
/// answered by defaults: declined too.
fn probe_asker(accept_defaults: bool) -> crate::questions::Asker {
    use crate::questions::{Action, Answer, Asker};
    Asker::new("probe".into(), None, move |question, reply| {
        let answer = match accept_defaults.then(|| question.form.check(None)) {
            Some(Ok(content)) => Answer {
                action: Action::Accept,
                content: Some(content),
            },
            Some(Err(why)) => {
                tracing::info!(message = %question.message, "probe: declined an elicitation its defaults cannot answer: {why}");
                Answer::decline()
            }
            None => Answer::decline(),
        };
        tracing::info!(message = %question.message, action = answer.action.as_str(), "probe: answered an elicitation");
        let _ = reply.send(answer);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(target: &[&str]) -> ProbeRequest {
        ProbeRequest {
            target: target.iter().map(|s| s.to_string()).collect(),
            call: None,
            headers: BTreeMap::new(),
            cwd: Some(PathBuf::from("/work")),
            env: BTreeMap::from([("K".to_owned(), "v".to_owned())]),
            accept_elicitation_defaults: false,
            oauth: None,
        }
    }

    #[test]
    fn a_target_names_its_transport() {
        let http = |url: &str| Transport::Http { url: url.into() };
        let sse = |url: &str| Transport::Sse { url: url.into() };
        let cases = [
            (vec!["http://h:1/mcp"], http("http://h:1/mcp")),
            (vec!["https://h/"], http("https://h/")),
            (vec!["http://h:1/sse"], sse("http://h:1/sse")),
            (vec!["http://h:1/sse/?x=1"], sse("http://h:1/sse/?x=1")),
        ];
        for (target, want) in cases {
            assert_eq!(
                transport_for(&request(&target)).unwrap(),
                want,
                "{target:?}"
            );
        }
        let stdio = |command: &str, args: &[&str]| Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::from([("K".to_owned(), "v".to_owned())]),
            cwd: Some(PathBuf::from("/work")),
        };
        let cases = [
            (vec!["npx  srv --x"], stdio("npx", &["srv", "--x"])),
            (vec!["python3", "a b.py"], stdio("python3", &["a b.py"])),
            // Two words are a command even when the first looks like a URL.
            (vec!["http://h", "x"], stdio("http://h", &["x"])),
        ];
        for (target, want) in cases {
            assert_eq!(
                transport_for(&request(&target)).unwrap(),
                want,
                "{target:?}"
            );
        }
        for empty in [vec![], vec!["   "]] {
            assert!(matches!(
                transport_for(&request(&empty)),
                Err(ProbeError::NoTarget)
            ));
        }
    }
}
