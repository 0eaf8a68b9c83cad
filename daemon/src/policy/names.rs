//! Tool names as users write them: 0.61's names as aliases of the seed's
//! (`grep_search` is `search_file_content`), and the name patterns a rule
//! or a settings list may hold (`*`, `mcp_*`, `mcp_srv_*`, `mcp_srv_tool`,
//! the seed's `srv__*` and `srv__tool`, and other wildcards).
//!
//! Pure: no IO. The matcher and the index use [`NamePattern`]; the loader
//! and the settings rules use [`canonical`].

use crate::policy::rule::SHELL_TOOL_NAME;

/// 0.61's names for the seed's tools (and the shell tool's old name).
const ALIASES: &[(&str, &str)] = &[
    ("grep_search", "search_file_content"),
    ("ShellTool", SHELL_TOOL_NAME),
];

/// The seed's name for a tool a user named by its 0.61 name; any other
/// name unchanged.
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, seed)| seed)
}

/// 0.61's prefix of MCP tool names (`mcp_<server>_<tool>`).
pub const MCP_PREFIX: &str = "mcp_";

/// A tool-name pattern of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamePattern<'a> {
    /// `*`: every tool.
    Any,
    /// `mcp_*`: every MCP tool.
    AnyMcp,
    /// `srv__*` or `mcp_srv_*`: every tool of one MCP server.
    Server(&'a str),
    /// `mcp_srv_tool`: one MCP tool by 0.61's name.
    McpName(&'a str),
    /// Any other name with a `*`: a glob over the names a call has. 0.61
    /// matches these literally, so only rules that deny or ask use them
    /// as globs (a stricter reading); an `allow` matches them literally.
    Glob(&'a str),
    /// A plain name (`read_file`, `srv__tool`, a discovered tool).
    Exact(&'a str),
}

impl<'a> NamePattern<'a> {
    /// Classifies a (canonical) pattern.
    pub fn parse(pattern: &'a str) -> Self {
        if pattern == "*" {
            return Self::Any;
        }
        if pattern == "mcp_*" {
            return Self::AnyMcp;
        }
        if let Some(server) = pattern.strip_suffix("__*")
            && !server.contains('*')
            && !server.is_empty()
        {
            return Self::Server(server);
        }
        if let Some(rest) = pattern.strip_prefix(MCP_PREFIX) {
            if let Some(server) = rest.strip_suffix("_*")
                && !server.contains('*')
                && !server.is_empty()
            {
                return Self::Server(server);
            }
            if !rest.contains('*') {
                return Self::McpName(pattern);
            }
        }
        if pattern.contains('*') {
            Self::Glob(pattern)
        } else {
            Self::Exact(pattern)
        }
    }
}

/// The names of one call a pattern is compared with.
#[derive(Debug, Clone, Copy)]
pub struct CallNames<'a> {
    /// The name as called (registered name).
    pub tool_name: &'a str,
    /// `server__tool` for MCP tools, otherwise the tool name.
    pub qualified: &'a str,
    /// The MCP server, if any.
    pub server: Option<&'a str>,
    /// The tool's own name on its MCP server.
    pub remote: Option<&'a str>,
}

impl CallNames<'_> {
    /// 0.61's name of an MCP tool, `mcp_<server>_<tool>`.
    fn mcp_name(&self) -> Option<String> {
        let server = self.server?;
        let tool = self.remote.or_else(|| {
            self.qualified
                .strip_prefix(server)
                .and_then(|rest| rest.strip_prefix("__"))
        })?;
        Some(format!("{MCP_PREFIX}{server}_{tool}"))
    }
}

/// Whether `pattern` names the call. `as_glob`: whether a pattern with a
/// `*` that 0.61 reads literally is read as a glob.
pub fn pattern_matches(pattern: &str, call: &CallNames<'_>, as_glob: bool) -> bool {
    match NamePattern::parse(pattern) {
        NamePattern::Any => true,
        NamePattern::AnyMcp => call.server.is_some(),
        NamePattern::Server(server) => call.server == Some(server),
        NamePattern::McpName(name) => {
            call.mcp_name().is_some_and(|n| n == name)
                || (call.server.is_none() && name == call.tool_name)
        }
        NamePattern::Glob(glob) => {
            if !as_glob {
                return call.server.is_none() && glob == call.tool_name;
            }
            let mcp = call.mcp_name();
            [Some(call.tool_name), Some(call.qualified), mcp.as_deref()]
                .into_iter()
                .flatten()
                .any(|name| glob_matches(glob, name))
        }
        NamePattern::Exact(name) => {
            name == call.qualified || (call.server.is_none() && name == call.tool_name)
        }
    }
}

/// `*` matches any run of characters (none included); nothing else is special.
pub fn glob_matches(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
        return glob == text;
    };
    if parts.len() == 1 {
        return glob == text;
    }
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp<'a>(server: &'a str, tool: &'a str, qualified: &'a str) -> CallNames<'a> {
        CallNames {
            tool_name: tool,
            qualified,
            server: Some(server),
            remote: Some(tool),
        }
    }

    fn builtin(name: &str) -> CallNames<'_> {
        CallNames {
            tool_name: name,
            qualified: name,
            server: None,
            remote: None,
        }
    }

    #[test]
    fn both_mcp_namings_and_wildcards() {
        let call = mcp("srv", "danger", "srv__danger");
        for pattern in [
            "*",
            "mcp_*",
            "mcp_srv_*",
            "srv__*",
            "mcp_srv_danger",
            "srv__danger",
        ] {
            assert!(pattern_matches(pattern, &call, false), "{pattern}");
        }
        for pattern in [
            "mcp_other_*",
            "other__*",
            "mcp_srv_safe",
            "danger_x",
            "read_file",
        ] {
            assert!(!pattern_matches(pattern, &call, true), "{pattern}");
        }
        assert!(pattern_matches("mcp_*_danger", &call, true));
        assert!(!pattern_matches("mcp_*_danger", &call, false));
        assert!(!pattern_matches("mcp_*", &builtin("read_file"), true));
        assert!(pattern_matches("*", &builtin("read_file"), false));
        assert!(pattern_matches("read_*", &builtin("read_file"), true));
        assert!(!pattern_matches("read_*", &builtin("read_file"), false));
    }

    #[test]
    fn aliases() {
        assert_eq!(canonical("grep_search"), "search_file_content");
        assert_eq!(canonical("ShellTool"), SHELL_TOOL_NAME);
        assert_eq!(canonical("read_file"), "read_file");
    }

    #[test]
    fn globs() {
        assert!(glob_matches("a*c", "abc"));
        assert!(glob_matches("a*c", "ac"));
        assert!(!glob_matches("a*c", "ab"));
        assert!(glob_matches("*x*", "axb"));
        assert!(!glob_matches("ab*ba", "aba"));
    }
}
