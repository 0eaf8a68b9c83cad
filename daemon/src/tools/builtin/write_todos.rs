//! `write_todos`: the model's list of subtasks for the current request, as
//! Gemini CLI 0.61 defines it (same declaration, checks and answer). The
//! call replaces the whole list; the session keeps the list as its state
//! and announces it to every client (`session/driver.rs`).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::contract::{
    ConfirmationDetails, OutputSink, Tool, ToolContext, ToolDisplay, ToolError, ToolInvocation,
    ToolKind, ToolLocation, ToolResult,
};

pub const WRITE_TODOS: &str = "write_todos";

/// The statuses a todo may have, in 0.61's order.
pub const STATUSES: [&str; 5] = [
    "pending",
    "in_progress",
    "completed",
    "cancelled",
    "blocked",
];

/// One subtask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub description: String,
    pub status: String,
}

pub struct WriteTodosTool {
    schema: Value,
}

impl Default for WriteTodosTool {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteTodosTool {
    pub fn new() -> Self {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete list of todo items. This will replace the existing list.",
                    "items": {
                        "type": "object",
                        "description": "A single todo item.",
                        "properties": {
                            "description": {"type": "string", "description": "The description of the task."},
                            "status": {"type": "string", "description": "The current status of the task.", "enum": STATUSES}
                        },
                        "required": ["description", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        });
        WriteTodosTool { schema }
    }
}

/// The list `args` sets, checked as 0.61 checks it.
pub fn todos_of(args: &Value) -> Result<Vec<Todo>, String> {
    let Some(items) = args.get("todos").and_then(Value::as_array) else {
        return Err("`todos` parameter must be an array".to_owned());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if !item.is_object() {
            return Err("Each todo item must be an object".to_owned());
        }
        let description = item["description"].as_str().unwrap_or_default();
        if description.trim().is_empty() {
            return Err("Each todo must have a non-empty description string".to_owned());
        }
        let status = item["status"].as_str().unwrap_or_default();
        if !STATUSES.contains(&status) {
            return Err(format!(
                "Each todo must have a valid status ({})",
                STATUSES.join(", ")
            ));
        }
        out.push(Todo {
            description: description.to_owned(),
            status: status.to_owned(),
        });
    }
    if out.iter().filter(|t| t.status == "in_progress").count() > 1 {
        return Err(
            "Invalid parameters: Only one task can be \"in_progress\" at a time.".to_owned(),
        );
    }
    Ok(out)
}

/// The list as the model and people read it: `1. [status] description`.
pub fn render(todos: &[Todo]) -> String {
    todos
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{}. [{}] {}", i + 1, t.status, t.description))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Tool for WriteTodosTool {
    fn name(&self) -> &str {
        WRITE_TODOS
    }
    fn display_name(&self) -> &str {
        "WriteTodos"
    }
    fn description(&self) -> &str {
        "Lists the subtasks of the current request and their progress (pending, in_progress, completed, cancelled, blocked), so you keep track of complex, multi-step work and every person following the session sees where it stands. Each call replaces the whole list; mark a subtask in_progress just before starting it (one at a time) and completed, cancelled or blocked as soon as that is true. Do not use it for simple requests that take fewer than two steps."
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
        let todos = todos_of(args).map_err(ToolError::invalid)?;
        Ok(Box::new(WriteTodosInvocation { todos }))
    }
}

pub struct WriteTodosInvocation {
    todos: Vec<Todo>,
}

#[async_trait]
impl ToolInvocation for WriteTodosInvocation {
    fn description(&self) -> String {
        match self.todos.len() {
            0 => "Cleared todo list".to_owned(),
            n => format!("Set {n} todo(s)"),
        }
    }

    fn locations(&self) -> Vec<ToolLocation> {
        Vec::new()
    }

    async fn confirmation(&self) -> Result<ConfirmationDetails, ToolError> {
        Ok(ConfirmationDetails::Info {
            title: "Confirm the todo list".to_owned(),
            prompt: render(&self.todos),
            urls: Vec::new(),
        })
    }

    async fn execute(
        self: Box<Self>,
        _cancel: CancellationToken,
        _output: OutputSink,
    ) -> Result<ToolResult, ToolError> {
        let list = render(&self.todos);
        let llm = if self.todos.is_empty() {
            "Successfully cleared the todo list.".to_owned()
        } else {
            format!("Successfully updated the todo list. The current list is now:\n{list}")
        };
        let mut result = ToolResult::text(llm);
        result.display = ToolDisplay::Markdown { text: list };
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_are_checked_as_0_61_checks_them() {
        let ok = json!({"todos": [
            {"description": "read", "status": "completed"},
            {"description": "write", "status": "in_progress"},
        ]});
        assert_eq!(todos_of(&ok).unwrap().len(), 2);
        assert_eq!(todos_of(&json!({"todos": []})).unwrap(), vec![]);
        for bad in [
            json!({}),
            json!({"todos": ["x"]}),
            json!({"todos": [{"description": " ", "status": "pending"}]}),
            json!({"todos": [{"description": "x", "status": "done"}]}),
            json!({"todos": [
                {"description": "a", "status": "in_progress"},
                {"description": "b", "status": "in_progress"},
            ]}),
        ] {
            assert!(todos_of(&bad).is_err(), "{bad}");
        }
        let list = todos_of(&ok).unwrap();
        assert_eq!(render(&list), "1. [completed] read\n2. [in_progress] write");
    }
}
