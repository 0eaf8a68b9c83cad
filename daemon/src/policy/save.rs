//! Persisting an "always allow" answer to a policy file the daemon owns.
//!
//! The file is rewritten atomically: the new content goes to a temporary file
//! in the same directory, which is then renamed over the target.

use crate::policy::error::PolicySaveError;
use crate::policy::load::parse_policy;
use crate::policy::rule::{SHELL_TOOL_NAME, Tier};
use std::io::Write;
use std::path::Path;

/// Default priority of saved rules (User tier: final 2.950).
pub const SAVED_RULE_PRIORITY: u16 = 950;

/// An allow rule to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedRule {
    /// Tool name (for MCP tools the plain tool name plus `mcp_name`, or
    /// `server__*` for a whole server).
    pub tool_name: String,
    /// MCP server name.
    pub mcp_name: Option<String>,
    /// Shell command prefix (shell tool only).
    pub command_prefix: Option<String>,
    /// Priority 0..=999.
    pub priority: u16,
}

impl SavedRule {
    /// Allows a tool.
    pub fn tool(name: &str) -> Self {
        Self {
            tool_name: name.to_owned(),
            mcp_name: None,
            command_prefix: None,
            priority: SAVED_RULE_PRIORITY,
        }
    }

    /// Allows shell commands starting with `prefix`.
    pub fn command_prefix(prefix: &str) -> Self {
        Self {
            command_prefix: Some(prefix.to_owned()),
            ..Self::tool(SHELL_TOOL_NAME)
        }
    }

    /// Allows every tool of an MCP server.
    pub fn server(server: &str) -> Self {
        Self {
            mcp_name: Some(server.to_owned()),
            ..Self::tool(&format!("{server}__*"))
        }
    }

    /// The rule as a `[[rule]]` TOML block.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        let mut table = toml::Table::new();
        table.insert("toolName".into(), self.tool_name.clone().into());
        if let Some(server) = &self.mcp_name {
            table.insert("mcpName".into(), server.clone().into());
        }
        if let Some(prefix) = &self.command_prefix {
            table.insert("commandPrefix".into(), prefix.clone().into());
        }
        table.insert("decision".into(), "allow".into());
        table.insert("priority".into(), i64::from(self.priority.min(999)).into());
        let mut doc = toml::Table::new();
        doc.insert(
            "rule".into(),
            toml::Value::Array(vec![toml::Value::Table(table)]),
        );
        toml::to_string(&doc)
    }
}

/// Appends `rule` to the policy file at `path` (created if absent), keeping
/// the existing rules. The result is validated before it replaces the file.
pub fn save_always_allow(path: &Path, rule: &SavedRule) -> Result<(), PolicySaveError> {
    let file = path.display().to_string();
    let io = |source| PolicySaveError::Io {
        file: file.clone(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| PolicySaveError::NoParent { file: file.clone() })?;
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(io(err)),
    };
    if let Some(source) = parse_policy(&text, &file, Tier::User).1.into_iter().next() {
        return Err(PolicySaveError::Invalid {
            file,
            source: Box::new(source),
        });
    }
    let block = rule.to_toml().map_err(|err| PolicySaveError::Serialize {
        file: file.clone(),
        message: err.to_string(),
    })?;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&block);
    if let Some(source) = parse_policy(&text, &file, Tier::User).1.into_iter().next() {
        return Err(PolicySaveError::Invalid {
            file,
            source: Box::new(source),
        });
    }
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    temp.write_all(text.as_bytes()).map_err(io)?;
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(path).map_err(|err| io(err.error))?;
    Ok(())
}
