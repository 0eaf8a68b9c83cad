//! Command-based discovery (seed 000 section 3.3.2): `tools.discoveryCommand`
//! prints function declarations; each becomes a tool whose call runs
//! `tools.callCommand NAME` with the JSON arguments on stdin.
//!
//! Both commands run through `sh -c` in their own process group (see
//! `process`), which is killed as a whole on timeout or cancellation.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::process::run;
use super::schema;
use crate::tools::{
    ConfirmationDetails, OutputSink, Tool, ToolContext, ToolError, ToolErrorKind, ToolInvocation,
    ToolKind, ToolLocation, ToolResult, ToolSource,
};

/// How long the discovery command may run unless `tools.discoveryTimeout`
/// says otherwise.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call may run.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("cannot run the discovery command: {0}")]
    Spawn(std::io::Error),
    #[error("the discovery command did not finish within {0:?} and was killed")]
    Timeout(Duration),
    #[error("the discovery command failed ({status}): {stderr}")]
    Failed { status: String, stderr: String },
    #[error("the discovery command's output is not JSON: {0}")]
    NotJson(String),
    #[error(
        "the discovery command's output must be an array of function declarations or {{\"functionDeclarations\": [...]}}"
    )]
    Shape,
    #[error("the discovery command was not run: {0}")]
    Sandbox(String),
}

/// One discovered declaration.
#[derive(Debug, Clone)]
pub struct Declaration {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// Parses discovery output: declarations, and problems with entries that
/// were skipped (no name, duplicate name).
pub fn parse(stdout: &str) -> Result<(Vec<Declaration>, Vec<String>), DiscoveryError> {
    let value: Value =
        serde_json::from_str(stdout.trim()).map_err(|e| DiscoveryError::NotJson(e.to_string()))?;
    let mut raw = Vec::new();
    let mut collect = |items: &[Value]| {
        for item in items {
            match item
                .get("functionDeclarations")
                .or_else(|| item.get("function_declarations"))
                .and_then(Value::as_array)
            {
                Some(nested) => raw.extend(nested.iter().cloned()),
                None => raw.push(item.clone()),
            }
        }
    };
    match &value {
        Value::Array(items) => collect(items),
        Value::Object(_) => match value.get("functionDeclarations").and_then(Value::as_array) {
            Some(items) => collect(items),
            None => return Err(DiscoveryError::Shape),
        },
        _ => return Err(DiscoveryError::Shape),
    }
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for (i, item) in raw.iter().enumerate() {
        let Some(name) = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            problems.push(format!("declaration #{}: no name; skipped", i + 1));
            continue;
        };
        if !seen.insert(name.to_owned()) {
            problems.push(format!("declaration {name:?}: duplicate name; skipped"));
            continue;
        }
        out.push(Declaration {
            name: name.to_owned(),
            description: item
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            schema: schema::sanitize(
                item.get("parameters")
                    .or_else(|| item.get("parametersJsonSchema")),
            ),
        });
    }
    Ok((out, problems))
}

/// Runs the discovery command in `cwd` and parses what it prints.
/// The command runs in the sandbox when the user's settings turn it on
/// (`discovery/jail.rs`): it may write the temp dirs and
/// `sandbox.allowWrite` only (`cwd` is the daemon's, which may be `/`).
pub async fn discover(
    command: &str,
    cwd: &Path,
    timeout: Duration,
) -> Result<(Vec<Declaration>, Vec<String>), DiscoveryError> {
    let applied = super::jail::prepare(&[], Some(cwd), None).map_err(DiscoveryError::Sandbox)?;
    if let Some(note) = &applied.note {
        tracing::warn!("discovery command: {note}");
    }
    let done = run(
        command,
        &[],
        cwd,
        b"",
        timeout,
        &CancellationToken::new(),
        applied.prepared,
    )
    .await
    .map_err(DiscoveryError::Spawn)?;
    if done.timed_out {
        return Err(DiscoveryError::Timeout(timeout));
    }
    if done.code != Some(0) {
        return Err(DiscoveryError::Failed {
            status: match (done.code, done.signal) {
                (Some(code), _) => format!("exit code {code}"),
                (None, Some(signal)) => format!("signal {signal}"),
                (None, None) => "unknown status".into(),
            },
            stderr: done.stderr.trim().chars().take(500).collect(),
        });
    }
    parse(&done.stdout)
}

/// A tool found by the discovery command.
pub struct DiscoveredTool {
    decl: Declaration,
    description: String,
    call_command: Option<String>,
    cwd: PathBuf,
}

impl DiscoveredTool {
    pub fn new(decl: Declaration, discovery: &str, call: Option<&str>, cwd: &Path) -> Arc<Self> {
        let call_text = call.map_or_else(
            || "no `tools.callCommand` is configured, so it cannot be called".to_owned(),
            |c| {
                format!(
                    "When called, this tool will execute the command `{c} {}` on project root.",
                    decl.name
                )
            },
        );
        let description = format!(
            "{}\n\nThis tool was discovered from the project by executing the command `{discovery}` on project root.\n{call_text}",
            decl.description
        );
        Arc::new(DiscoveredTool {
            decl,
            description,
            call_command: call.map(str::to_owned),
            cwd: cwd.to_owned(),
        })
    }
}

impl Tool for DiscoveredTool {
    fn name(&self) -> &str {
        &self.decl.name
    }
    fn display_name(&self) -> &str {
        &self.decl.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.decl.schema
    }
    fn source(&self) -> ToolSource {
        ToolSource::Discovered
    }
    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let call = self.call_command.clone().ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::Unavailable,
                "no `tools.callCommand` is configured",
            )
        })?;
        Ok(Box::new(DiscoveredCall {
            name: self.decl.name.clone(),
            call,
            cwd: self.cwd.clone(),
            args: args.clone(),
            sandbox: ctx.sandbox.clone(),
            roots: ctx.roots().to_vec(),
        }))
    }
}

struct DiscoveredCall {
    name: String,
    call: String,
    cwd: PathBuf,
    args: Value,
    /// The session's sandbox, applied to the call command as to shell
    /// commands.
    sandbox: crate::sandbox::SessionSandbox,
    roots: Vec<crate::tools::PinnedRoot>,
}

#[async_trait]
impl ToolInvocation for DiscoveredCall {
    fn description(&self) -> String {
        format!("{} {}", self.name, self.args)
    }
    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }
    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Exec {
            title: format!("Confirm discovered tool: {}", self.name),
            command: format!("{} {}", self.call, self.name),
            root_commands: self
                .call
                .split_whitespace()
                .next()
                .map(str::to_owned)
                .into_iter()
                .collect(),
        })
    }
    async fn execute(
        self: Box<Self>,
        cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let script = format!("{} \"$1\"", self.call);
        // The call command runs in the workspace by path (`run`); the
        // sandbox checks it enters that same directory.
        let here = rustix::fs::stat(&self.cwd).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Unavailable,
                format!("cannot stat {}: {e}", self.cwd.display()),
            )
        })?;
        let jail = crate::tools::builtin::shell_sandbox::Jail::decide(
            &self.sandbox,
            &self.roots,
            &self.cwd,
            (here.st_dev, here.st_ino),
            false,
        )?;
        let done = run(
            &script,
            &[&self.name],
            &self.cwd,
            self.args.to_string().as_bytes(),
            CALL_TIMEOUT,
            &cancel,
            jail.prepared,
        )
        .await
        .map_err(|e| {
            ToolError::new(
                ToolErrorKind::Unavailable,
                format!("cannot run the call command: {e}"),
            )
        })?;
        if done.cancelled {
            return Err(ToolError::new(
                ToolErrorKind::Cancelled,
                "the call was cancelled",
            ));
        }
        if done.timed_out {
            return Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!("the call command was killed after {CALL_TIMEOUT:?}"),
            ));
        }
        if done.code == Some(0) && done.stderr.is_empty() {
            return Ok(ToolResult::text(done.stdout));
        }
        // The reference's report of a failed (or noisy) call.
        let show = |v: Option<i32>| v.map_or_else(|| "(none)".to_owned(), |v| v.to_string());
        let mut text = format!(
            "Stdout: {}\nStderr: {}\nError: (none)\nExit Code: {}\nSignal: {}",
            if done.stdout.is_empty() {
                "(empty)"
            } else {
                &done.stdout
            },
            if done.stderr.is_empty() {
                "(empty)"
            } else {
                &done.stderr
            },
            show(done.code),
            show(done.signal),
        );
        // What the sandbox was and refused (the output names it).
        text.push_str(
            &jail
                .report
                .finish(&format!("{}\n{}", done.stdout, done.stderr)),
        );
        if done.code == Some(0) {
            return Ok(ToolResult::text(text));
        }
        Err(ToolError::execution(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_shapes_and_reports_bad_entries() {
        let (d, p) = parse(r#"[{"name":"a","parameters":{"type":"object"}},{"functionDeclarations":[{"name":"b"},{"name":"a"}]},{"description":"x"}]"#).expect("ok");
        assert_eq!(
            d.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(p.len(), 2);
        let (d, _) = parse(r#"{"functionDeclarations":[{"name":"c"}]}"#).expect("ok");
        assert_eq!(d[0].name, "c");
        assert!(matches!(parse("garbage"), Err(DiscoveryError::NotJson(_))));
        assert!(matches!(parse("42"), Err(DiscoveryError::Shape)));
    }
}
