//! The discovery part of `settings.json`: `mcpServers` and
//! `tools.discoveryCommand` / `tools.callCommand`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// The reference's default MCP call timeout: 10 minutes.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(600);

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Legacy HTTP+SSE (`url`).
    Sse { url: String },
    /// Streamable HTTP (`httpUrl`).
    Http { url: String },
}

impl Transport {
    pub fn label(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Sse { .. } => "sse",
            Transport::Http { .. } => "http",
        }
    }
}

/// One `mcpServers` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub headers: BTreeMap<String, String>,
    /// Per-call timeout.
    pub timeout: Duration,
    pub trust: bool,
    pub include_tools: Option<Vec<String>>,
    pub exclude_tools: Vec<String>,
    /// `user`, or `workspace:<root>`.
    pub scope: String,
    /// The entry's `sandbox` (stdio servers only; `jail.rs`).
    pub sandbox: super::jail::ServerSandbox,
    /// The `oauth` block (HTTP and SSE servers).
    pub oauth: Option<crate::discovery::mcp::oauth::OAuthSettings>,
}

impl ServerConfig {
    /// Whether the server's tool `name` is enabled. Entries match the name or
    /// `name(...)`, as in the reference; `excludeTools` wins.
    pub fn tool_enabled(&self, name: &str) -> bool {
        let matches = |entry: &String| {
            entry == name
                || entry
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('('))
        };
        if self.exclude_tools.iter().any(matches) {
            return false;
        }
        match &self.include_tools {
            Some(list) => list.iter().any(matches),
            None => true,
        }
    }
}

/// The discovery settings of one settings file.
#[derive(Debug, Clone, Default)]
pub struct DiscoverySettings {
    pub servers: Vec<ServerConfig>,
    pub discovery_command: Option<String>,
    pub call_command: Option<String>,
    /// `tools.discoveryTimeout` (ms): how long the discovery command may
    /// run (our extension; the reference has no limit).
    pub discovery_timeout: Option<Duration>,
    /// Entries that could not be used, with why.
    pub problems: Vec<String>,
    /// The file could not be read or parsed at all: nothing in it is
    /// known, so what was in force stays.
    pub broken: bool,
    /// `mcp.allowed`: only these servers start (when given).
    pub allowed: Option<Vec<String>>,
    /// `mcp.excluded`: these servers never start.
    pub excluded: Vec<String>,
}

impl DiscoverySettings {
    /// Whether `mcp.allowed` / `mcp.excluded` of this file let `server`
    /// start (`excluded` wins).
    pub fn admits(&self, server: &str) -> bool {
        !self.excluded.iter().any(|n| n == server)
            && self
                .allowed
                .as_ref()
                .is_none_or(|list| list.iter().any(|n| n == server))
    }
}

/// Reads `path`; a missing file is empty settings, a broken one a problem.
pub fn load(path: &Path, scope: &str) -> DiscoverySettings {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DiscoverySettings::default(),
        Err(e) => {
            return DiscoverySettings {
                problems: vec![format!("{}: cannot read: {e}", path.display())],
                broken: true,
                ..Default::default()
            };
        }
    };
    match crate::jsonc::parse(&text) {
        Ok(value) => parse(&value, scope),
        Err(e) => DiscoverySettings {
            problems: vec![format!("{}: not valid JSON: {e}", path.display())],
            broken: true,
            ..Default::default()
        },
    }
}

/// Parses the discovery settings out of a settings document.
pub fn parse(value: &Value, scope: &str) -> DiscoverySettings {
    let mut out = DiscoverySettings::default();
    let string_at = |nested: &str, legacy: &str| {
        value
            .pointer(nested)
            .or_else(|| value.get(legacy))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    out.discovery_command = string_at("/tools/discoveryCommand", "toolDiscoveryCommand");
    out.call_command = string_at("/tools/callCommand", "toolCallCommand");
    out.discovery_timeout = value
        .pointer("/tools/discoveryTimeout")
        .and_then(Value::as_u64)
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis);
    let names = |pointer: &str| {
        value.pointer(pointer).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        })
    };
    out.allowed = names("/mcp/allowed");
    out.excluded = names("/mcp/excluded").unwrap_or_default();
    if let Some(servers) = value.get("mcpServers").and_then(Value::as_object) {
        for (name, entry) in servers {
            match server(name, entry, scope) {
                Ok(config) => out.servers.push(config),
                Err(problem) => out.problems.push(format!("mcpServers.{name}: {problem}")),
            }
        }
    }
    out
}

fn server(name: &str, entry: &Value, scope: &str) -> Result<ServerConfig, String> {
    if name.is_empty() || name.contains("__") {
        return Err("server names must be non-empty and must not contain `__`".into());
    }
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let strings = |key: &str| -> Option<Vec<String>> {
        entry.get(key).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
    };
    let map = |key: &str| -> BTreeMap<String, String> {
        entry
            .get(key)
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), expand_env(v))))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut env = map("env");
    // As 0.61: an `env` entry that makes the child run other code
    // (`LD_PRELOAD`, `NODE_OPTIONS`, ...) is dropped.
    env.retain(|key, _| {
        let dangerous = crate::child_env::is_dangerous_override(key);
        if dangerous {
            tracing::warn!(server = name, key, "dangerous environment override dropped");
        }
        !dangerous
    });
    // The reference's precedence: httpUrl, then url, then command.
    let transport = if let Some(url) = text("httpUrl") {
        Transport::Http { url }
    } else if let Some(url) = text("url") {
        Transport::Sse { url }
    } else if let Some(command) = text("command") {
        Transport::Stdio {
            command,
            args: strings("args").unwrap_or_default(),
            env,
            cwd: text("cwd").map(PathBuf::from),
        }
    } else {
        return Err("needs `command`, `url` or `httpUrl`".into());
    };
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => DEFAULT_MCP_TIMEOUT,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => return Err("`timeout` must be a positive number of milliseconds".into()),
        },
    };
    // A `sandbox` we cannot read leaves the server out (reported), never
    // unsandboxed.
    let sandbox = match super::jail::ServerSandbox::parse(entry.get("sandbox")) {
        (choice, None) => choice,
        (_, Some(problem)) => return Err(problem),
    };
    let oauth = match entry.get("oauth") {
        None | Some(Value::Null) => None,
        Some(block) => Some(crate::discovery::mcp::oauth::settings::parse(block)?),
    };
    Ok(ServerConfig {
        sandbox,
        oauth,
        name: name.to_owned(),
        transport,
        headers: map("headers"),
        timeout,
        trust: entry.get("trust").and_then(Value::as_bool).unwrap_or(false),
        include_tools: strings("includeTools"),
        exclude_tools: strings("excludeTools").unwrap_or_default(),
        scope: scope.to_owned(),
    })
}

/// `$VAR` and `${VAR}` from the daemon's environment without its secrets
/// (`child_env`), as the reference does for `env` and `headers` values: a
/// secret must be written into the entry itself to reach the server.
fn expand_env(text: &str) -> String {
    let re = regex::Regex::new(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))");
    let Ok(re) = re else {
        return text.to_owned();
    };
    re.replace_all(text, |caps: &regex::Captures<'_>| {
        let name = caps
            .get(1)
            .or_else(|| caps.get(2))
            .map_or("", |m| m.as_str());
        std::env::var(name)
            .ok()
            .filter(|value| !crate::child_env::redacts_now(name, value))
            .unwrap_or_default()
    })
    .into_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_each_transport_and_filters() {
        let s = parse(
            &json!({
                "tools": {"discoveryCommand": "list", "callCommand": "call"},
                "mcpServers": {
                    "a": {"command": "srv", "args": ["x"], "timeout": 500, "trust": true,
                          "includeTools": ["echo", "add(x)"], "excludeTools": ["add"]},
                    "b": {"url": "http://h/sse"},
                    "c": {"httpUrl": "http://h/mcp", "url": "ignored"},
                    "d": {},
                    "e__x": {"command": "x"}
                }
            }),
            "user",
        );
        assert_eq!(s.discovery_command.as_deref(), Some("list"));
        assert_eq!(s.servers.len(), 3);
        assert_eq!(s.problems.len(), 2);
        let a = &s.servers[0];
        assert_eq!(a.timeout, Duration::from_millis(500));
        assert!(a.trust && a.tool_enabled("echo") && !a.tool_enabled("add"));
        assert!(!a.tool_enabled("other"));
        assert_eq!(s.servers[1].transport.label(), "sse");
        assert_eq!(s.servers[2].transport.label(), "http");
    }
}
