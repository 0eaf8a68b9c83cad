//! The tool registry: every tool the daemon knows, shared by all sessions,
//! and which of them each session may see: an MCP server from a
//! workspace's settings belongs to the sessions of that workspace only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::contract::{Tool, ToolContext, ToolError, ToolInvocation, ToolSource};
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
    /// Extra names that reach a registered tool without being listed (an
    /// MCP tool registered under its bare name is also `server__tool`).
    aliases: RwLock<BTreeMap<String, String>>,
    /// MCP servers that belong to one workspace: server name -> root.
    scopes: RwLock<BTreeMap<String, PathBuf>>,
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
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
        if let Some(tool) = tools.get(name) {
            return Some(tool.clone());
        }
        let aliases = self.aliases.read().unwrap_or_else(|e| e.into_inner());
        aliases
            .get(name)
            .and_then(|target| tools.get(target))
            .cloned()
    }

    /// Marks `server`'s tools as belonging to the sessions rooted at
    /// `root` (`None`: to every session).
    pub fn set_server_scope(&self, server: &str, root: Option<&Path>) {
        let mut scopes = self.scopes.write().unwrap_or_else(|e| e.into_inner());
        match root {
            Some(root) => scopes.insert(server.to_owned(), root.to_path_buf()),
            None => scopes.remove(server),
        };
    }

    /// The workspace `server` belongs to, when it belongs to one.
    pub fn server_scope(&self, server: &str) -> Option<PathBuf> {
        self.scopes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .cloned()
    }

    /// Whether a session rooted at `root` may see `tool`.
    fn visible(&self, tool: &RegisteredTool, root: &Path) -> bool {
        let Some(server) = tool.tool.source().server().map(str::to_owned) else {
            return true;
        };
        let scopes = self.scopes.read().unwrap_or_else(|e| e.into_inner());
        scopes.get(&server).is_none_or(|owner| owner == root)
    }

    /// `get` for a session rooted at `root`: another workspace's MCP tools
    /// are not there.
    pub fn get_in(&self, name: &str, root: &Path) -> Option<RegisteredTool> {
        self.get(name).filter(|t| self.visible(t, root))
    }

    /// `all` for a session rooted at `root`.
    pub fn all_in(&self, root: &Path) -> Vec<RegisteredTool> {
        self.all()
            .into_iter()
            .filter(|t| self.visible(t, root))
            .collect()
    }

    /// Replaces, in one step, every tool whose source satisfies `owned` (and
    /// the aliases pointing at them) with `tools` and `aliases` (`alias ->
    /// name`). Callers never see a half-replaced set. Returns the problems
    /// (a schema that does not compile); those tools are left out.
    pub fn replace_by_source(
        &self,
        owned: impl Fn(&ToolSource) -> bool,
        tools: Vec<Arc<dyn Tool>>,
        aliases: Vec<(String, String)>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let mut compiled = Vec::new();
        for tool in tools {
            match ArgsValidator::new(tool.name(), tool.parameter_schema()) {
                Ok(validator) => compiled.push(RegisteredTool {
                    tool,
                    validator: Arc::new(validator),
                }),
                Err(e) => problems.push(format!("{}: {e}", tool.name())),
            }
        }
        let mut map = self.tools.write().unwrap_or_else(|e| e.into_inner());
        let mut alias_map = self.aliases.write().unwrap_or_else(|e| e.into_inner());
        let removed: Vec<String> = map
            .iter()
            .filter(|(_, t)| owned(&t.tool.source()))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &removed {
            map.remove(name);
        }
        alias_map.retain(|_, target| !removed.contains(target));
        for tool in compiled {
            map.insert(tool.tool.name().to_owned(), tool);
        }
        for (alias, target) in aliases {
            if !map.contains_key(&alias) && map.contains_key(&target) {
                alias_map.insert(alias, target);
            }
        }
        problems
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
