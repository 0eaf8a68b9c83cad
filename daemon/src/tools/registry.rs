//! The tool registry: every tool the daemon knows, shared by all sessions,
//! and which of them each session may see: an MCP server from a
//! workspace's settings belongs to the sessions of that workspace only.
//! MCP tools live in views: a shared one (user and extension servers) and
//! one per workspace with servers of its own (those plus the shared
//! servers it does not override), each named on its own, so two
//! workspaces may each have a server `db` and each session calls its own.

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
    /// The MCP servers' tools, one view per workspace with servers of its
    /// own (so two workspaces may each have a server of the same name).
    mcp: RwLock<McpViews>,
}

/// The MCP tools of one view and their `server__tool` aliases
/// (`alias -> name`), as `McpManager::sync_registry` names them.
#[derive(Default)]
pub struct McpViewTools {
    pub tools: Vec<Arc<dyn Tool>>,
    pub aliases: Vec<(String, String)>,
}

#[derive(Default)]
struct McpView {
    tools: BTreeMap<String, RegisteredTool>,
    aliases: BTreeMap<String, String>,
}

impl McpView {
    fn compile(view: McpViewTools, problems: &mut Vec<String>) -> McpView {
        let mut tools = BTreeMap::new();
        for tool in view.tools {
            match ArgsValidator::new(tool.name(), tool.parameter_schema()) {
                Ok(validator) => {
                    tools.insert(
                        tool.name().to_owned(),
                        RegisteredTool {
                            tool,
                            validator: Arc::new(validator),
                        },
                    );
                }
                Err(e) => problems.push(format!("{}: {e}", tool.name())),
            }
        }
        let aliases = view
            .aliases
            .into_iter()
            .filter(|(alias, target)| !tools.contains_key(alias) && tools.contains_key(target))
            .collect();
        McpView { tools, aliases }
    }
}

/// Every view: the shared one and each workspace's.
#[derive(Default)]
struct McpViews {
    shared: McpView,
    workspaces: BTreeMap<PathBuf, McpView>,
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

    /// A tool by name, MCP tools from the shared view (what a session in
    /// a workspace without servers of its own sees).
    pub fn get(&self, name: &str) -> Option<RegisteredTool> {
        self.lookup(name, None)
    }

    /// The MCP tools a session rooted at `root` sees: its workspace's view
    /// when its workspace has servers of its own, else the shared one.
    fn mcp_view<'a>(views: &'a McpViews, root: Option<&Path>) -> &'a McpView {
        root.and_then(|r| views.workspaces.get(r))
            .unwrap_or(&views.shared)
    }

    /// `get` for a session rooted at `root`: its own view of the MCP tools
    /// (another workspace's are not there; a same-named server of its own
    /// workspace wins over the user's).
    pub fn get_in(&self, name: &str, root: &Path) -> Option<RegisteredTool> {
        self.lookup(name, Some(root))
    }

    fn lookup(&self, name: &str, root: Option<&Path>) -> Option<RegisteredTool> {
        if let Some(tool) = self.non_mcp(name) {
            return Some(tool);
        }
        let views = self.mcp.read().unwrap_or_else(|e| e.into_inner());
        let view = Self::mcp_view(&views, root);
        view.tools
            .get(name)
            .or_else(|| view.aliases.get(name).and_then(|t| view.tools.get(t)))
            .cloned()
    }

    fn non_mcp(&self, name: &str) -> Option<RegisteredTool> {
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

    /// `all` for a session rooted at `root`.
    pub fn all_in(&self, root: &Path) -> Vec<RegisteredTool> {
        self.listed(Some(root))
    }

    fn listed(&self, root: Option<&Path>) -> Vec<RegisteredTool> {
        let mut all: BTreeMap<String, RegisteredTool> =
            self.tools.read().unwrap_or_else(|e| e.into_inner()).clone();
        let views = self.mcp.read().unwrap_or_else(|e| e.into_inner());
        for (name, tool) in &Self::mcp_view(&views, root).tools {
            all.entry(name.clone()).or_insert_with(|| tool.clone());
        }
        all.into_values().collect()
    }

    /// The names of every tool that is not an MCP server's (built-ins,
    /// discovered tools): an MCP tool named like one is `server__tool`.
    pub fn non_mcp_names(&self) -> std::collections::BTreeSet<String> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Replaces, in one step, every MCP tool: `shared` is what sessions of
    /// a workspace without servers of its own see, `workspaces` each other
    /// workspace's whole view. Returns the problems (a schema that does not
    /// compile); those tools are left out.
    pub fn replace_mcp(
        &self,
        shared: McpViewTools,
        workspaces: BTreeMap<PathBuf, McpViewTools>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let shared = McpView::compile(shared, &mut problems);
        let workspaces = workspaces
            .into_iter()
            .map(|(root, view)| (root, McpView::compile(view, &mut problems)))
            .collect();
        *self.mcp.write().unwrap_or_else(|e| e.into_inner()) = McpViews { shared, workspaces };
        problems.sort();
        problems.dedup();
        problems
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

    /// Every tool, sorted by name, MCP tools from the shared view.
    pub fn all(&self) -> Vec<RegisteredTool> {
        self.listed(None)
    }

    pub fn len(&self) -> usize {
        self.listed(None).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
