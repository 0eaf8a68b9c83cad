//! `policy.check` and `policy.list`.

use geminid_protocol::error as code;
use geminid_protocol::policy::{PolicyCheckResult, PolicyList};
use geminid_protocol::session::ApprovalMode;
use jsonrpsee::core::RpcResult;
use serde_json::Value;

use super::rpc_error;
use crate::daemon::Daemon;
use crate::policy::{Decision, SessionAllowlist, check_tool};
use crate::tools::ToolKind;
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
        let (record, _) = handle.info().await?;
        let check = handle
            .check_policy(req.tool_name.clone(), args.clone(), mode, req.interactive)
            .await?;
        let mut result = wire::policy_check(&check.verdict, check.mode, check.interactive);
        let root = std::path::PathBuf::from(&record.cwd);
        apply_safety(daemon, &req.tool_name, &args, &root, &mut result);
        return Ok(result);
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
    let engine = match &req.cwd {
        Some(cwd) => daemon.policy.engine_for(std::path::Path::new(cwd)),
        None => daemon.policy.engine(),
    };
    let verdict = check_tool(
        &engine,
        &daemon.registry,
        req.cwd.as_deref().map(std::path::Path::new),
        &req.tool_name,
        &args,
        mode,
        interactive,
        &SessionAllowlist::new(),
    );
    let mut result = wire::policy_check(&verdict, mode, interactive);
    let root = req
        .cwd
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/"));
    apply_safety(daemon, &req.tool_name, &args, &root, &mut result);
    Ok(result)
}

/// The safety checks a call would meet after the policy, on the call's
/// path arguments as given (a dry run resolves no symlinks): a stricter
/// decision replaces the policy's, and the reason says which check.
fn apply_safety(
    daemon: &Daemon,
    tool_name: &str,
    args: &Value,
    root: &std::path::Path,
    result: &mut PolicyCheckResult,
) {
    let decision = match result.decision.as_str() {
        "allow" => Decision::Allow,
        "ask_user" => Decision::AskUser,
        _ => return,
    };
    let tool_kind = daemon
        .registry
        .get(tool_name)
        .map_or(ToolKind::Other, |t| t.tool.kind());
    let facts = crate::safety::CallFacts {
        tool_name,
        tool_kind,
        args,
        locations: Vec::new(),
        root,
        mode: wire::approval_mode_from(result.approval_mode),
        interactive: result.interactive,
        plans: None,
    };
    if let Some(safety) = daemon.guard.check(&facts, decision) {
        result.decision = safety.decision.as_str().to_owned();
        result.reason = safety.explain();
    }
}

pub fn list(daemon: &Daemon) -> PolicyList {
    let engine = daemon.policy.engine();
    PolicyList {
        rules: engine.rules().iter().map(wire::policy_rule).collect(),
        problems: daemon.policy.problems(),
    }
}
