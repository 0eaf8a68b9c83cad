//! The tool registry: every tool the daemon knows, shared by all sessions.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::contract::{Tool, ToolContext, ToolError, ToolInvocation};
use super::schema::ArgsValidator;

/// A tool with its compiled argument validator.
#[derive(Clone)]
pub struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    validator: Arc<ArgsValidator>,
}

impl RegisteredTool {
    /// Checks `args` against the schema, then lets the tool build the call.
    pub fn build(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<Box<dyn ToolInvocation>, ToolError> {
        self.validator.check(args)?;
        self.tool.build(ctx, args)
    }
}

/// All registered tools, by name.
#[derive(Default)]
pub struct ToolRegistry {
    tools: RwLock<BTreeMap<String, RegisteredTool>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool`, replacing one of the same name (with a warning).
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), String> {
        let validator = Arc::new(ArgsValidator::new(tool.name(), tool.parameter_schema())?);
        let name = tool.name().to_owned();
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        if tools.contains_key(&name) {
            tracing::warn!(tool = %name, "tool registered twice; the newer one replaces the older");
        }
        tools.insert(name, RegisteredTool { tool, validator });
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<RegisteredTool> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Every tool, sorted by name.
    pub fn all(&self) -> Vec<RegisteredTool> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
