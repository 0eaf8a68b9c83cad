//! What BeforeTool and AfterTool hooks mean for one call (0.61's
//! `hook-utils.js` and `coreToolHookTriggers.js`): the stdin fields they
//! get, and how a merged output blocks, stops, asks about, rewrites or
//! adds to a call. Pure. A rewritten call goes through validation and
//! the policy again (the driver does that): a hook never lets a call
//! past a rule that denies what it became.

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::output::Merged;
use crate::scheduler::{CallError, CallErrorKind};
use crate::tools::{ConfirmationDetails, ContentPart, ToolDisplay, ToolErrorKind, ToolResult};

/// What hooks did to one call so far.
pub struct CallHooks {
    /// BeforeTool has run: the next prepare goes to the policy.
    pub before_done: bool,
    /// A BeforeTool hook said `ask` (why, for people).
    pub ask: Option<String>,
    /// A BeforeTool hook rewrote the arguments.
    pub modified: bool,
    /// Kills the call's hook processes.
    pub cancel: CancellationToken,
}

/// What BeforeTool hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// The call goes on to the policy: with new arguments when a hook
    /// rewrote them, asked of a person when a hook said `ask`.
    Proceed {
        args: Option<Value>,
        ask: Option<String>,
    },
    /// Refused; the text is what the model reads.
    Blocked(String),
    /// `continue: false`: refused, and the turn stops.
    Stopped(String),
}

/// BeforeTool's own stdin fields.
pub fn before_input(tool_name: &str, args: &Value) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("tool_name".into(), tool_name.into());
    fields.insert("tool_input".into(), args.clone());
    fields
}

/// AfterTool's own stdin fields: the arguments the tool ran with and its
/// response (`llmContent`, `returnDisplay`, `error`).
pub fn after_input(
    tool_name: &str,
    args: &Value,
    outcome: &Result<ToolResult, CallError>,
) -> Map<String, Value> {
    let mut fields = before_input(tool_name, args);
    let response = match outcome {
        Ok(result) => json!({
            "llmContent": llm_text(&result.llm_content),
            "returnDisplay": display_text(&result.display),
        }),
        Err(error) => json!({
            "llmContent": error.message,
            "returnDisplay": error.message,
            "error": {"message": error.message},
        }),
    };
    fields.insert("tool_response".into(), response);
    fields
}

/// Reads BeforeTool's merged output against the call's `args`.
pub fn before(merged: Option<&Merged>, args: &Value) -> Before {
    let Some(merged) = merged else {
        return Before::Proceed {
            args: None,
            ask: None,
        };
    };
    if merged.should_stop() {
        return Before::Stopped(format!(
            "Agent execution stopped by hook: {}",
            merged.effective_reason()
        ));
    }
    if merged.is_blocking() {
        return Before::Blocked(format!(
            "Tool execution blocked: {}",
            merged.effective_reason()
        ));
    }
    let ask = merged.is_ask().then(|| {
        merged
            .system_message()
            .map_or("a BeforeTool hook asked for approval".to_owned(), |m| {
                format!("a BeforeTool hook asked for approval: {m}")
            })
    });
    // The hook's fields merge over the model's (the documented contract).
    let args = merged.tool_input().map(|input| {
        let mut merged_args = args.as_object().cloned().unwrap_or_default();
        merged_args.extend(input.clone());
        Value::Object(merged_args)
    });
    Before::Proceed { args, ask }
}

/// 0.61's note after a result whose arguments a hook changed.
pub const MODIFIED_NOTE: &str =
    "\n\n[System] Tool input parameters were modified by a hook before execution.";

/// Applies AfterTool's merged output (and the rewrite note) to a call's
/// outcome. A cancelled call stays cancelled.
pub fn after(
    merged: Option<&Merged>,
    modified: bool,
    outcome: Result<ToolResult, CallError>,
) -> Result<ToolResult, CallError> {
    if matches!(&outcome, Err(e) if e.kind == CallErrorKind::Cancelled) {
        return outcome;
    }
    let failed = |message: String| {
        Err(CallError::new(
            CallErrorKind::Tool(ToolErrorKind::Execution),
            message,
        ))
    };
    if let Some(merged) = merged {
        if merged.should_stop() {
            return failed(format!(
                "Agent execution stopped by hook: {}",
                merged.effective_reason()
            ));
        }
        if merged.is_blocking() {
            return failed(format!(
                "Tool result blocked: {}",
                merged.effective_reason()
            ));
        }
    }
    let mut extra = String::new();
    if modified {
        extra.push_str(MODIFIED_NOTE);
    }
    if let Some(context) = merged.and_then(Merged::additional_context) {
        extra.push_str(&format!("\n\n<hook_context>{context}</hook_context>"));
    }
    if extra.is_empty() {
        return outcome;
    }
    match outcome {
        Ok(mut result) => {
            match result.llm_content.iter_mut().rev().find_map(|p| match p {
                ContentPart::Text { text } => Some(text),
                ContentPart::InlineData { .. } => None,
            }) {
                Some(text) => text.push_str(&extra),
                None => result.llm_content.push(ContentPart::Text { text: extra }),
            }
            Ok(result)
        }
        Err(mut error) => {
            error.message.push_str(&extra);
            Err(error)
        }
    }
}

/// Notification's own stdin fields when a call starts waiting for
/// approval (0.61's `ToolPermission`: its message and serialized details).
pub fn permission_input(
    call_id: &str,
    tool_name: &str,
    details: &ConfirmationDetails,
) -> Map<String, Value> {
    let (message, mut detail) = match details {
        ConfirmationDetails::Edit { title, diff } => (
            format!("Tool {title} requires editing"),
            json!({"type": "edit", "title": title, "fileName": diff.file_name,
                   "filePath": diff.file_path, "fileDiff": diff.diff,
                   "originalContent": diff.original_content, "newContent": diff.new_content}),
        ),
        ConfirmationDetails::Exec {
            title,
            command,
            root_commands,
        } => (
            format!("Tool {title} requires execution"),
            json!({"type": "exec", "title": title, "command": command,
                   "rootCommand": root_commands.join(", ")}),
        ),
        ConfirmationDetails::Mcp {
            title,
            server_name,
            tool_name,
        } => (
            format!("Tool {title} requires MCP"),
            json!({"type": "mcp", "title": title, "serverName": server_name,
                   "toolName": tool_name, "toolDisplayName": tool_name}),
        ),
        ConfirmationDetails::Info {
            title,
            prompt,
            urls,
        } => (
            format!("Tool {title} requires information"),
            json!({"type": "info", "title": title, "prompt": prompt, "urls": urls}),
        ),
        ConfirmationDetails::Plan {
            title, plan_path, ..
        } => (
            format!("Tool {title} requires plan approval"),
            json!({"type": "exit_plan_mode", "title": title, "planPath": plan_path}),
        ),
    };
    // Which call and tool, so a page can name them.
    if let Value::Object(d) = &mut detail {
        d.insert("callId".into(), call_id.into());
        d.insert(
            "toolName".into(),
            d.get("toolName")
                .cloned()
                .unwrap_or_else(|| tool_name.into()),
        );
    }
    let mut fields = Map::new();
    fields.insert("notification_type".into(), "ToolPermission".into());
    fields.insert("message".into(), message.into());
    fields.insert("details".into(), detail);
    fields
}

fn llm_text(parts: &[ContentPart]) -> Value {
    match parts {
        [ContentPart::Text { text }] => text.clone().into(),
        parts => serde_json::to_value(parts).unwrap_or(Value::Null),
    }
}

fn display_text(display: &ToolDisplay) -> Value {
    match display {
        ToolDisplay::Text { text } | ToolDisplay::Markdown { text } => text.clone().into(),
        ToolDisplay::FileDiff(diff) => json!({
            "fileName": diff.file_name,
            "fileDiff": diff.diff,
            "originalContent": diff.original_content,
            "newContent": diff.new_content,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::HookEvent;
    use super::super::output::merge;
    use super::*;

    fn merged(v: Value) -> Option<Merged> {
        merge(
            HookEvent::BeforeTool,
            &[v.as_object().cloned().unwrap_or_default()],
        )
    }

    #[test]
    fn before_reads_block_stop_ask_and_rewrites() {
        let args = json!({"command": "ls", "dir_path": "."});
        assert_eq!(
            before(
                merged(json!({"decision": "block", "reason": "no"})).as_ref(),
                &args
            ),
            Before::Blocked("Tool execution blocked: no".into())
        );
        assert_eq!(
            before(
                merged(json!({"continue": false, "stopReason": "halt"})).as_ref(),
                &args
            ),
            Before::Stopped("Agent execution stopped by hook: halt".into())
        );
        assert_eq!(
            before(
                merged(json!({"decision": "ask", "hookSpecificOutput": {"tool_input": {"command": "pwd"}}}))
                    .as_ref(),
                &args
            ),
            Before::Proceed {
                args: Some(json!({"command": "pwd", "dir_path": "."})),
                ask: Some("a BeforeTool hook asked for approval".into()),
            }
        );
        assert_eq!(
            before(None, &args),
            Before::Proceed {
                args: None,
                ask: None
            }
        );
    }

    #[test]
    fn after_blocks_or_adds_context() {
        let ok = || Ok(ToolResult::text("out"));
        let blocked = after(
            merged(json!({"decision": "deny", "reason": "secret"})).as_ref(),
            false,
            ok(),
        );
        assert_eq!(
            blocked.map_err(|e| e.message),
            Err("Tool result blocked: secret".to_owned())
        );
        let added = after(
            merged(json!({"hookSpecificOutput": {"additionalContext": "<b>"}})).as_ref(),
            true,
            ok(),
        )
        .map(|r| r.llm_content);
        assert_eq!(
            added,
            Ok(vec![ContentPart::Text {
                text: format!("out{MODIFIED_NOTE}\n\n<hook_context>&lt;b&gt;</hook_context>")
            }])
        );
        let cancelled = Err(CallError::new(CallErrorKind::Cancelled, "c"));
        assert_eq!(
            after(
                merged(json!({"decision": "deny"})).as_ref(),
                false,
                cancelled.clone()
            ),
            cancelled
        );
    }
}
