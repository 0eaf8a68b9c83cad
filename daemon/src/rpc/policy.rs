//! `policy.check` and `policy.list`.

use geminid_protocol::error as code;
use geminid_protocol::policy::{PolicyCheckResult, PolicyList};
use geminid_protocol::session::ApprovalMode;
use jsonrpsee::core::RpcResult;
use serde_json::Value;

use super::rpc_error;
use crate::daemon::Daemon;
use crate::policy::{SessionAllowlist, check_tool};
use crate::wire;

pub struct CheckRequest {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub tool_name: String,
    pub args: Option<Value>,
    pub approval_mode: Option<ApprovalMode>,
    pub interactive: Option<bool>,
}

pub async fn check(daemon: &Daemon, req: CheckRequest) -> RpcResult<PolicyCheckResult> {
    let args = req
        .args
        .unwrap_or_else(|| Value::Object(Default::default()));
    let mode = req.approval_mode.map(wire::approval_mode_from);
    if let Some(session_id) = req.session_id {
        let handle = daemon.sessions.get(&session_id)?;
        let check = handle
            .check_policy(req.tool_name, args, mode, req.interactive)
            .await?;
        return Ok(wire::policy_check(
            &check.verdict,
            check.mode,
            check.interactive,
        ));
    }
    if let Some(cwd) = &req.cwd
        && !std::path::Path::new(cwd).is_dir()
    {
        return Err(rpc_error(
            code::INVALID_PARAMS,
            format!("`cwd` {cwd} is not a directory"),
        ));
    }
    let mode = mode.unwrap_or_default();
    let interactive = req.interactive.unwrap_or(true);
    let verdict = check_tool(
        &daemon.policy.engine(),
        &daemon.registry,
        &req.tool_name,
        &args,
        mode,
        interactive,
        &SessionAllowlist::new(),
    );
    Ok(wire::policy_check(&verdict, mode, interactive))
}

pub fn list(daemon: &Daemon) -> PolicyList {
    let engine = daemon.policy.engine();
    PolicyList {
        rules: engine.rules().iter().map(wire::policy_rule).collect(),
        problems: daemon.policy.problems(),
    }
}
