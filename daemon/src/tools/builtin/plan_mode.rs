//! `enter_plan_mode` and `exit_plan_mode`, as Gemini CLI 0.61 declares
//! them and words their results. Entering switches the session to plan
//! mode (read-only research; plans are written only in the plans
//! directory, `tools/plans.rs`); exiting presents the plan file for
//! approval, and the person's answer (approved with the mode to switch
//! to, or rejected with feedback) reaches the model in the result. The
//! session applies the switch when the call succeeds
//! (`ToolResult::session_change`, `session/actor.rs`); the policy decides
//! when each may be called (`policy/defaults.toml`, 0.61's `plan.toml`).

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, PersonAnswer, SessionChange, Tool, ToolContext, ToolDisplay,
    ToolError, ToolInvocation, ToolKind, ToolLocation, ToolResult,
};
use crate::policy::ApprovalMode;

pub const ENTER_PLAN_MODE: &str = "enter_plan_mode";
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

pub struct EnterPlanModeTool {
    schema: Value,
}

impl Default for EnterPlanModeTool {
    fn default() -> Self {
        EnterPlanModeTool {
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "reason": {
                        "type": "string",
                        "description": "Short reason explaining why you are entering plan mode."
                    }
                }
            }),
        }
    }
}

impl Tool for EnterPlanModeTool {
    fn name(&self) -> &str {
        ENTER_PLAN_MODE
    }
    fn display_name(&self) -> &str {
        "Enter Plan Mode"
    }
    fn description(&self) -> &str {
        "Switch to Plan Mode to safely research, design, and plan complex changes using read-only tools."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let reason = match args.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.is_empty()),
            Some(_) => return Err(ToolError::invalid("`reason` must be a string")),
        };
        Ok(Box::new(EnterPlanMode { reason }))
    }
}

struct EnterPlanMode {
    reason: Option<String>,
}

#[async_trait]
impl ToolInvocation for EnterPlanMode {
    fn description(&self) -> String {
        self.reason
            .clone()
            .unwrap_or_else(|| "Initiating Plan Mode".to_owned())
    }
    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }
    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Enter Plan Mode".to_owned(),
            prompt: "This will restrict the agent to read-only tools to allow for safe planning."
                .to_owned(),
            urls: Vec::new(),
        })
    }
    async fn execute(
        self: Box<Self>,
        _cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let mut result = ToolResult::text("Switching to Plan mode.");
        result.display = ToolDisplay::Text {
            text: match &self.reason {
                Some(reason) => format!("Switching to Plan mode: {reason}"),
                None => "Switching to Plan mode".to_owned(),
            },
        };
        result.session_change = Some(SessionChange::ApprovalMode(ApprovalMode::Plan));
        Ok(result)
    }
}

pub struct ExitPlanModeTool {
    schema: Value,
}

impl Default for ExitPlanModeTool {
    fn default() -> Self {
        ExitPlanModeTool {
            schema: serde_json::json!({
                "type": "object",
                "required": ["plan_filename"],
                "properties": {
                    "plan_filename": {
                        "type": "string",
                        "description": "The filename of the finalized plan (e.g., \"feature-x.md\"). Do not provide an absolute path."
                    }
                }
            }),
        }
    }
}

impl Tool for ExitPlanModeTool {
    fn name(&self) -> &str {
        EXIT_PLAN_MODE
    }
    fn display_name(&self) -> &str {
        "Exit Plan Mode"
    }
    fn description(&self) -> &str {
        "Finalizes the planning phase and transitions to implementation by presenting the plan for formal user approval. You MUST reach an informal agreement with the user in the chat regarding the proposed strategy BEFORE calling this tool. This tool MUST be used to exit Plan Mode before any source code edits can be performed."
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    /// Checks the plan as 0.61 does before asking: beneath the plans
    /// directory, existing, not empty. The plan is read (confined) now,
    /// for the person asked and for the result.
    fn build(&self, ctx: &ToolContext, args: &Value) -> Result<Box<dyn ToolInvocation>, ToolError> {
        let raw = args
            .get("plan_filename")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if raw.trim().is_empty() {
            return Err(ToolError::invalid("plan_filename is required."));
        }
        let Some(plans) = ctx.plans() else {
            // Never in plan mode: the policy refuses the call (0.61's
            // "You are not currently in Plan Mode"); should a rule let it
            // run, it fails saying why.
            return Ok(Box::new(ExitPlanMode {
                plan: Plan::NotInPlanMode("You are not currently in Plan Mode. Use enter_plan_mode first to design a plan.".to_owned()),
                shown: raw.to_owned(),
                answer: None,
                interactive: ctx.interactive,
            }));
        };
        let spelled = crate::tools::plans::spell(raw, &ctx.workspace_root, plans.path());
        let path = super::path::resolve_in_workspace(plans, &spelled, "plan_filename")
            .map_err(|_| crate::tools::plans::outside_error(raw, plans.path()))?;
        // 0.61 checks the file before anyone is asked and, when it cannot
        // be approved, asks nobody and answers with why (a result, not an
        // error); the model then writes it and asks again.
        let plan = match super::path::read_confined(plans, &path) {
            Ok(bytes) => match String::from_utf8_lossy(&bytes).into_owned() {
                text if text.trim().is_empty() => Plan::Invalid(
                    "Plan file is empty. You must write content to the plan file before requesting approval.".to_owned(),
                ),
                text => Plan::Ready(path, text),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Plan::Invalid(format!(
                "Plan file does not exist: {raw}. You must create the plan file before requesting approval."
            )),
            Err(e) => Plan::Invalid(format!("Failed to read plan file: {e}")),
        };
        Ok(Box::new(ExitPlanMode {
            plan,
            // 0.61 describes the call by the name joined to the directory.
            shown: plans.path().join(raw).display().to_string(),
            answer: None,
            interactive: ctx.interactive,
        }))
    }
}

/// The plan a call presents.
enum Plan {
    /// Its path and text: it can be approved.
    Ready(PathBuf, String),
    /// Missing, empty or unreadable: the result says so (0.61's words),
    /// nobody is asked and the mode stays.
    Invalid(String),
    /// The session is not in plan mode: the call fails saying so.
    NotInPlanMode(String),
}

struct ExitPlanMode {
    plan: Plan,
    /// The plan as the call is described when it cannot be presented.
    shown: String,
    /// What a person answered, when one was asked.
    answer: Option<PersonAnswer>,
    interactive: bool,
}

/// 0.61's words for each mode, in "Switching to ...".
fn mode_words(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::AutoEdit => "Auto-Edit mode (edits will be applied automatically)",
        ApprovalMode::Default => "Default mode (edits will require confirmation)",
        ApprovalMode::Plan => "Plan mode (read-only planning)",
        ApprovalMode::Yolo => "YOLO mode (all tool calls auto-approved)",
    }
}

#[async_trait]
impl ToolInvocation for ExitPlanMode {
    fn description(&self) -> String {
        match &self.plan {
            Plan::Ready(path, _) => format!("Requesting plan approval for: {}", path.display()),
            Plan::Invalid(_) | Plan::NotInPlanMode(_) => {
                format!("Requesting plan approval for: {}", self.shown)
            }
        }
    }
    fn locations(&self) -> Vec<ToolLocation> {
        match &self.plan {
            Plan::Ready(path, _) => vec![ToolLocation {
                path: path.clone(),
                line: None,
            }],
            Plan::Invalid(_) | Plan::NotInPlanMode(_) => Vec::new(),
        }
    }
    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        match &self.plan {
            Plan::Ready(path, text) => Ok(ConfirmationDetails::Plan {
                title: "Plan Approval".to_owned(),
                plan_path: path.clone(),
                plan: text.clone(),
            }),
            Plan::Invalid(why) | Plan::NotInPlanMode(why) => Err(ToolError::invalid(why.clone())),
        }
    }
    fn asks_nobody(&self) -> bool {
        matches!(self.plan, Plan::Invalid(_))
    }
    fn take_answer(&mut self, answer: &PersonAnswer) -> bool {
        self.answer = Some(answer.clone());
        true
    }
    async fn execute(
        self: Box<Self>,
        _cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let path = match self.plan {
            Plan::Ready(path, _) => path,
            Plan::Invalid(why) => {
                let mut result = ToolResult::text(why);
                result.display = ToolDisplay::Text {
                    text: "Error: Invalid plan".to_owned(),
                };
                return Ok(result);
            }
            Plan::NotInPlanMode(why) => return Err(ToolError::execution(why)),
        };
        let path = path.display();
        // Allowed by the policy without asking: 0.61 approves, into yolo
        // when nobody is there to approve what follows.
        let answer = self.answer.unwrap_or(PersonAnswer {
            approved: true,
            mode: Some(if self.interactive {
                ApprovalMode::Default
            } else {
                ApprovalMode::Yolo
            }),
            feedback: None,
        });
        if answer.approved {
            let mode = answer.mode.unwrap_or(ApprovalMode::Default);
            if mode == ApprovalMode::Plan {
                return Err(ToolError::execution("Unexpected approval mode: plan"));
            }
            let mut result = ToolResult::text(format!(
                "Plan approved. Switching to {}.\n\nThe approved implementation plan is stored at: {path}\nRead and follow the plan strictly during implementation.",
                mode_words(mode)
            ));
            result.display = ToolDisplay::Text {
                text: format!("Plan approved: {path}"),
            };
            result.session_change = Some(SessionChange::ApprovalMode(mode));
            return Ok(result);
        }
        let feedback = answer
            .feedback
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty());
        let (llm, shown) = match feedback {
            Some(feedback) => (
                format!(
                    "Plan rejected. User feedback: {feedback}\n\nThe plan is stored at: {path}\nRevise the plan based on the feedback."
                ),
                format!("Feedback: {feedback}"),
            ),
            None => (
                format!(
                    "Plan rejected. No feedback provided.\n\nThe plan is stored at: {path}\nAsk the user for specific feedback on how to improve the plan."
                ),
                "Rejected (no feedback)".to_owned(),
            ),
        };
        let mut result = ToolResult::text(llm);
        result.display = ToolDisplay::Text { text: shown };
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(answer: Option<PersonAnswer>, interactive: bool) -> Box<ExitPlanMode> {
        Box::new(ExitPlanMode {
            plan: Plan::Ready("/p/plans/a.md".into(), "# plan".into()),
            shown: "a.md".into(),
            answer,
            interactive,
        })
    }

    async fn run(call: Box<ExitPlanMode>) -> ToolResult {
        call.execute(CancellationToken::new(), OutputSink::discard())
            .await
            .unwrap()
    }

    fn text(result: &ToolResult) -> &str {
        match &result.llm_content[0] {
            crate::tools::ContentPart::Text { text } => text,
            crate::tools::ContentPart::InlineData { .. } => "",
        }
    }

    #[tokio::test]
    async fn answers_reach_the_model_in_0_61_words() {
        let approved = run(exit(
            Some(PersonAnswer {
                approved: true,
                mode: Some(ApprovalMode::AutoEdit),
                feedback: None,
            }),
            true,
        ))
        .await;
        assert!(text(&approved).starts_with(
            "Plan approved. Switching to Auto-Edit mode (edits will be applied automatically).\n\nThe approved implementation plan is stored at: /p/plans/a.md"
        ));
        assert_eq!(
            approved.session_change,
            Some(SessionChange::ApprovalMode(ApprovalMode::AutoEdit))
        );
        let rejected = run(exit(
            Some(PersonAnswer {
                approved: false,
                mode: None,
                feedback: Some(" add tests ".into()),
            }),
            true,
        ))
        .await;
        assert_eq!(
            text(&rejected),
            "Plan rejected. User feedback: add tests\n\nThe plan is stored at: /p/plans/a.md\nRevise the plan based on the feedback."
        );
        assert_eq!(rejected.session_change, None);
        let silent = run(exit(
            Some(PersonAnswer {
                approved: false,
                mode: None,
                feedback: None,
            }),
            true,
        ))
        .await;
        assert!(text(&silent).starts_with("Plan rejected. No feedback provided."));
        let missing = Box::new(ExitPlanMode {
            plan: Plan::Invalid("Plan file does not exist: a.md. You must create the plan file before requesting approval.".into()),
            shown: "a.md".into(),
            answer: None,
            interactive: true,
        });
        assert!(missing.asks_nobody());
        let missing = run(missing).await;
        assert!(text(&missing).starts_with("Plan file does not exist: a.md."));
        assert_eq!(missing.session_change, None, "the mode stays");
        assert!(
            matches!(&missing.display, ToolDisplay::Text { text } if text == "Error: Invalid plan")
        );
        // Unattended and allowed by the policy: into yolo, as 0.61.
        let unattended = run(exit(None, false)).await;
        assert_eq!(
            unattended.session_change,
            Some(SessionChange::ApprovalMode(ApprovalMode::Yolo))
        );
    }
}
