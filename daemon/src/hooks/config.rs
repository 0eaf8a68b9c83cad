//! The `hooks` and `hooksConfig` sections of one settings file, read as
//! Gemini CLI 0.61 reads them (`hookRegistry.js`): events by name, each a
//! list of definitions (`matcher`, `sequential`, `hooks`), each hook a
//! command with an optional name, timeout and description. Pure: the
//! caller reads the file. What cannot be read is reported (file, event,
//! entry, field), never silently dropped.

use serde_json::Value;

/// Every event 0.61 defines (`HookEventName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    BeforeTool,
    AfterTool,
    BeforeAgent,
    Notification,
    AfterAgent,
    SessionStart,
    SessionEnd,
    PreCompress,
    BeforeModel,
    AfterModel,
    BeforeToolSelection,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::BeforeTool,
        HookEvent::AfterTool,
        HookEvent::BeforeAgent,
        HookEvent::Notification,
        HookEvent::AfterAgent,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::PreCompress,
        HookEvent::BeforeModel,
        HookEvent::AfterModel,
        HookEvent::BeforeToolSelection,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::BeforeTool => "BeforeTool",
            HookEvent::AfterTool => "AfterTool",
            HookEvent::BeforeAgent => "BeforeAgent",
            HookEvent::Notification => "Notification",
            HookEvent::AfterAgent => "AfterAgent",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompress => "PreCompress",
            HookEvent::BeforeModel => "BeforeModel",
            HookEvent::AfterModel => "AfterModel",
            HookEvent::BeforeToolSelection => "BeforeToolSelection",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Tool events match their matcher as a regular expression against
    /// the tool name; the others compare it exactly with their trigger.
    pub fn matches_tools(self) -> bool {
        matches!(self, HookEvent::BeforeTool | HookEvent::AfterTool)
    }
}

/// Keys of the `hooks` object that are settings, not events (0.61's
/// `HOOKS_CONFIG_FIELDS`).
const CONFIG_FIELDS: [&str; 3] = ["enabled", "disabled", "notifications"];

/// 0.61's default hook timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// Where a hook was configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSource {
    /// `system-defaults`, `user`, `workspace`, `system`, `extension`.
    pub layer: &'static str,
    pub file: String,
}

/// One configured hook, under one event.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEntry {
    pub event: HookEvent,
    pub matcher: Option<String>,
    pub sequential: bool,
    pub name: Option<String>,
    pub command: String,
    pub timeout_ms: u64,
    pub description: Option<String>,
    pub source: HookSource,
    /// False when `hooksConfig.disabled` names it.
    pub enabled: bool,
    /// An extension hook's settings' values (`extension_settings.rs`),
    /// set over the child environment as 0.61 does.
    pub env: Vec<(String, String)>,
}

impl HookEntry {
    /// The name 0.61 shows and `hooksConfig.disabled` lists: the hook's
    /// `name`, else its command.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.command)
    }

    /// Two entries with the same key run once (0.61's `getHookKey`).
    pub fn key(&self) -> (String, String) {
        (self.name.clone().unwrap_or_default(), self.command.clone())
    }
}

/// What one settings file says about hooks.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FileHooks {
    pub entries: Vec<HookEntry>,
    /// `hooksConfig.enabled`, when the file sets it.
    pub enabled: Option<bool>,
    /// `hooksConfig.disabled` (and the older `hooks.disabled`).
    pub disabled: Vec<String>,
    /// What could not be read: `field: message`.
    pub problems: Vec<String>,
}

/// Reads the hook sections of one parsed settings file.
pub fn read(settings: &Value, source: &HookSource) -> FileHooks {
    let mut out = FileHooks::default();
    if let Some(config) = settings.get("hooksConfig") {
        read_switches(config, "hooksConfig", &mut out);
    }
    let Some(hooks) = settings.get("hooks") else {
        return out;
    };
    let Some(hooks) = hooks.as_object() else {
        out.problems
            .push("hooks: not an object: no hook of this file is run".to_owned());
        return out;
    };
    // The older place of the switches (0.61 still skips these keys).
    read_switches(
        settings.get("hooks").unwrap_or(&Value::Null),
        "hooks",
        &mut out,
    );
    for (event_name, definitions) in hooks {
        if CONFIG_FIELDS.contains(&event_name.as_str()) {
            continue;
        }
        let Some(event) = HookEvent::parse(event_name) else {
            out.problems.push(format!(
                "hooks.{event_name}: not an event Gemini CLI knows (skipped)"
            ));
            continue;
        };
        let Some(definitions) = definitions.as_array() else {
            out.problems
                .push(format!("hooks.{event_name}: not an array (skipped)"));
            continue;
        };
        for (d, definition) in definitions.iter().enumerate() {
            read_definition(
                event,
                definition,
                &format!("hooks.{event_name}[{d}]"),
                source,
                &mut out,
            );
        }
    }
    out
}

fn read_switches(config: &Value, at: &str, out: &mut FileHooks) {
    if let Some(enabled) = config.get("enabled") {
        match enabled.as_bool() {
            Some(b) => out.enabled = Some(b),
            None => out
                .problems
                .push(format!("{at}.enabled: not a boolean (ignored)")),
        }
    }
    if let Some(disabled) = config.get("disabled") {
        match disabled.as_array() {
            Some(list) => {
                for (i, name) in list.iter().enumerate() {
                    match name.as_str() {
                        Some(name) => out.disabled.push(name.to_owned()),
                        None => out
                            .problems
                            .push(format!("{at}.disabled[{i}]: not a string (ignored)")),
                    }
                }
            }
            None => out
                .problems
                .push(format!("{at}.disabled: not an array (ignored)")),
        }
    }
}

fn read_definition(
    event: HookEvent,
    definition: &Value,
    at: &str,
    source: &HookSource,
    out: &mut FileHooks,
) {
    let Some(hooks) = definition.get("hooks").and_then(Value::as_array) else {
        out.problems.push(format!(
            "{at}.hooks: missing or not an array (definition skipped)"
        ));
        return;
    };
    let matcher = match definition.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => {
            // A matcher we cannot read would match everything: skipped
            // instead, and said.
            out.problems
                .push(format!("{at}.matcher: not a string (definition skipped)"));
            return;
        }
    };
    let sequential = definition
        .get("sequential")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for (h, hook) in hooks.iter().enumerate() {
        let at = format!("{at}.hooks[{h}]");
        match read_hook(hook, &at) {
            Ok((command, name, timeout_ms, description)) => out.entries.push(HookEntry {
                event,
                matcher: matcher.clone(),
                sequential,
                name,
                command,
                timeout_ms,
                description,
                source: source.clone(),
                enabled: true,
                env: Vec::new(),
            }),
            Err(problem) => out.problems.push(problem),
        }
    }
}

type ReadHook = (String, Option<String>, u64, Option<String>);

fn read_hook(hook: &Value, at: &str) -> Result<ReadHook, String> {
    let kind = hook.get("type").and_then(Value::as_str);
    if kind != Some("command") {
        return Err(format!(
            "{at}.type: {} (only \"command\" hooks run; skipped)",
            kind.map_or("missing".to_owned(), |k| format!("\"{k}\""))
        ));
    }
    let command = match hook.get("command").and_then(Value::as_str) {
        Some(c) if !c.trim().is_empty() => c.to_owned(),
        _ => return Err(format!("{at}.command: missing or empty (skipped)")),
    };
    let text = |key: &str| hook.get(key).and_then(Value::as_str).map(str::to_owned);
    let timeout_ms = match hook.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_MS,
        Some(t) => match t.as_f64() {
            Some(ms) if ms > 0.0 && ms.is_finite() => ms.ceil() as u64,
            _ => {
                return Err(format!(
                    "{at}.timeout: not a positive number of milliseconds (skipped)"
                ));
            }
        },
    };
    Ok((command, text("name"), timeout_ms, text("description")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn src() -> HookSource {
        HookSource {
            layer: "user",
            file: "/h/.gemini/settings.json".to_owned(),
        }
    }

    #[test]
    fn reads_the_documented_shape() {
        let settings = json!({
            "hooksConfig": {"enabled": true, "disabled": ["old"]},
            "hooks": {
                "BeforeTool": [{
                    "matcher": "write_file|replace",
                    "sequential": true,
                    "hooks": [{"name": "sec", "type": "command", "command": "x.sh", "timeout": 5000}]
                }],
                "SessionStart": [{"hooks": [{"type": "command", "command": "y"}]}]
            }
        });
        let read = read(&settings, &src());
        assert!(read.problems.is_empty(), "{:?}", read.problems);
        assert_eq!(read.enabled, Some(true));
        assert_eq!(read.disabled, vec!["old"]);
        assert_eq!(read.entries.len(), 2);
        let before = &read.entries[0];
        assert_eq!(before.event, HookEvent::BeforeTool);
        assert_eq!(before.matcher.as_deref(), Some("write_file|replace"));
        assert!(before.sequential);
        assert_eq!(before.timeout_ms, 5000);
        assert_eq!(before.display_name(), "sec");
        assert_eq!(read.entries[1].timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(read.entries[1].display_name(), "y");
    }

    #[test]
    fn what_cannot_be_read_is_reported_by_field() {
        let settings = json!({
            "hooks": {
                "BeforeTools": [],
                "AfterTool": {"hooks": []},
                "BeforeAgent": [
                    {"matcher": 3, "hooks": [{"type": "command", "command": "a"}]},
                    {"hooks": [{"type": "plugin", "command": "b"}, {"type": "command"},
                               {"type": "command", "command": "c", "timeout": "soon"}]}
                ],
                "disabled": ["z"]
            }
        });
        let read = read(&settings, &src());
        assert!(read.entries.is_empty());
        assert_eq!(read.disabled, vec!["z"]);
        let problems = read.problems.join("\n");
        for field in [
            "hooks.BeforeTools",
            "hooks.AfterTool: not an array",
            "hooks.BeforeAgent[0].matcher",
            "hooks.BeforeAgent[1].hooks[0].type",
            "hooks.BeforeAgent[1].hooks[1].command",
            "hooks.BeforeAgent[1].hooks[2].timeout",
        ] {
            assert!(problems.contains(field), "{field} missing from {problems}");
        }
    }
}
