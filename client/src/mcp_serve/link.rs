//! The daemon behind `gemctl mcp serve`: connected on first use (starting
//! geminid when none answers, as `gemctl daemon start` does), connected
//! again after the daemon restarted, and the session the calls run in,
//! found once and kept (with `--cwd`, the newest `mcp serve` session of
//! that directory is reused unless `--new-session`).

use std::path::PathBuf;
use std::sync::Arc;

use geminid_protocol::api::GeminidApiClient;
use geminid_protocol::session::ApprovalMode;
use tokio::sync::Mutex;

use crate::Client;
use crate::command::{Ctx, Failure};

/// The title (and mark) of the sessions `mcp serve` creates.
pub const SESSION_TITLE: &str = "MCP server";

/// Which session calls run in.
#[derive(Clone, Debug)]
pub enum Target {
    /// An existing session (an id or a unique prefix).
    Session(String),
    /// A session rooted at this directory.
    Cwd {
        cwd: PathBuf,
        mode: Option<ApprovalMode>,
        interactive: bool,
        fresh: bool,
    },
}

pub struct Link {
    socket: PathBuf,
    target: Target,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    client: Option<Arc<Client>>,
    session_id: Option<String>,
}

impl Link {
    pub fn new(socket: PathBuf, target: Target) -> Self {
        Link {
            socket,
            target,
            state: Mutex::new(State::default()),
        }
    }

    /// A live connection and the session id, connecting (and starting the
    /// daemon) when there is none or the last one was lost.
    pub async fn get(&self) -> Result<(Arc<Client>, String), Failure> {
        let mut state = self.state.lock().await;
        if let (Some(client), Some(id)) = (&state.client, &state.session_id)
            && client.is_connected()
        {
            return Ok((client.clone(), id.clone()));
        }
        let ctx = Ctx {
            socket: self.socket.clone(),
            json: false,
            client: "gemctl mcp serve",
        };
        let (client, _) = crate::start::connect_or_start(&ctx, None, None).await?;
        let client = Arc::new(client);
        let id = match &state.session_id {
            Some(id) => id.clone(),
            None => self.find_session(&client).await?,
        };
        state.client = Some(client.clone());
        state.session_id = Some(id.clone());
        Ok((client, id))
    }

    async fn find_session(&self, client: &Client) -> Result<String, Failure> {
        match &self.target {
            Target::Session(given) => crate::command::resolve_session(client, given).await,
            Target::Cwd {
                cwd,
                mode,
                interactive,
                fresh,
            } => {
                let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.clone());
                let canonical = std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
                if !fresh {
                    let reusable = client.list_sessions().await?.into_iter().find(|s| {
                        s.title.as_deref() == Some(SESSION_TITLE)
                            && std::path::Path::new(&s.cwd) == canonical
                            && s.interactive == *interactive
                            && mode.is_none_or(|m| m == s.approval_mode)
                    });
                    if let Some(session) = reusable {
                        eprintln!(
                            "gemctl mcp serve: session {} reused (approve calls with `gemctl attach {}`)",
                            session.session_id, session.session_id
                        );
                        return Ok(session.session_id);
                    }
                }
                let info = client
                    .create_session(
                        cwd.display().to_string(),
                        *mode,
                        Some(SESSION_TITLE.to_owned()),
                        Some(*interactive),
                        None,
                        None,
                        None,
                    )
                    .await?;
                eprintln!(
                    "gemctl mcp serve: session {} (approve calls with `gemctl attach {}`)",
                    info.session_id, info.session_id
                );
                Ok(info.session_id)
            }
        }
    }
}
