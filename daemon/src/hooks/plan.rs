//! Which configured hooks run for one firing of an event (0.61's
//! `hookPlanner.js`): the enabled entries of the event in source order,
//! filtered by matcher (a regular expression against the tool name for
//! tool events, an exact string against the trigger for the others; `*`
//! and empty match all), duplicates (same name and command) once, and
//! sequential when any chosen definition asks for it. Pure.

use super::config::{FileHooks, HookEntry, HookEvent};

/// Every hook a session may run, with the switches in force.
#[derive(Debug, Default, Clone)]
pub struct HookSet {
    /// In the order 0.61 runs them: workspace, user, system, extensions.
    pub entries: Vec<HookEntry>,
    /// `hooksConfig.enabled` as merged (default on).
    pub enabled: bool,
    /// `file: field: message` for what could not be read.
    pub problems: Vec<String>,
    /// Whether the workspace's own settings were read.
    pub workspace_trusted: bool,
}

/// The hooks of one firing.
#[derive(Debug, Clone)]
pub struct Plan {
    pub event: HookEvent,
    pub hooks: Vec<HookEntry>,
    pub sequential: bool,
}

/// What a firing is matched on.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A tool event: the tool's name.
    Tool(&'a str),
    /// A lifecycle event's trigger (`startup`, `auto`, `exit`...).
    Trigger(&'a str),
    /// Events without one: every hook of the event runs.
    None,
}

impl HookSet {
    /// Layers lowest precedence first (system defaults, user, workspace,
    /// system overrides); entries are ordered by 0.61's source priority,
    /// `enabled` is the last layer's that sets it, `disabled` the union.
    pub fn from_layers(layers: Vec<FileHooks>) -> HookSet {
        let mut enabled = true;
        let mut disabled: Vec<String> = Vec::new();
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        for layer in layers {
            if let Some(e) = layer.enabled {
                enabled = e;
            }
            disabled.extend(layer.disabled);
            entries.extend(layer.entries);
            problems.extend(layer.problems);
        }
        entries.sort_by_key(|e: &HookEntry| priority(e.source.layer));
        for entry in &mut entries {
            entry.enabled = !disabled.iter().any(|d| d == entry.display_name());
        }
        HookSet {
            entries,
            enabled,
            problems,
            workspace_trusted: false,
        }
    }

    /// Whether any enabled hook listens to `event` (the common case, no
    /// hook, costs this check only).
    pub fn listens(&self, event: HookEvent) -> bool {
        self.enabled && self.entries.iter().any(|e| e.enabled && e.event == event)
    }

    /// The hooks to run for `event` on `subject`, or `None`.
    pub fn plan(&self, event: HookEvent, subject: Subject<'_>) -> Option<Plan> {
        if !self.enabled {
            return None;
        }
        let mut seen = Vec::new();
        let mut hooks = Vec::new();
        let mut sequential = false;
        for entry in &self.entries {
            if entry.event != event || !entry.enabled || !matches(entry, subject) {
                continue;
            }
            let key = entry.key();
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            sequential |= entry.sequential;
            hooks.push(entry.clone());
        }
        (!hooks.is_empty()).then_some(Plan {
            event,
            hooks,
            sequential,
        })
    }
}

fn priority(layer: &str) -> u8 {
    match layer {
        "workspace" => 1,
        "user" => 2,
        "system" | "system-defaults" => 3,
        _ => 4,
    }
}

fn matches(entry: &HookEntry, subject: Subject<'_>) -> bool {
    let Some(matcher) = entry.matcher.as_deref().map(str::trim) else {
        return true;
    };
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    match subject {
        // 0.61 tests the regular expression anywhere in the name; one that
        // does not compile is compared as a literal name.
        Subject::Tool(name) => match regex::Regex::new(matcher) {
            Ok(re) => re.is_match(name),
            Err(_) => matcher == name,
        },
        Subject::Trigger(trigger) => matcher == trigger,
        Subject::None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::{HookSource, read};
    use super::*;
    use serde_json::json;

    fn layer(name: &'static str, settings: serde_json::Value) -> FileHooks {
        read(
            &settings,
            &HookSource {
                layer: name,
                file: format!("/{name}.json"),
            },
        )
    }

    #[test]
    fn tool_matchers_are_regexes_lifecycle_matchers_exact() {
        let set = HookSet::from_layers(vec![layer(
            "user",
            json!({"hooks": {
                "BeforeTool": [
                    {"matcher": "write_.*", "hooks": [{"type": "command", "command": "w"}]},
                    {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "s"}]},
                    {"matcher": "(", "hooks": [{"type": "command", "command": "paren"}]},
                    {"matcher": "*", "hooks": [{"type": "command", "command": "all"}]}
                ],
                "SessionStart": [{"matcher": "start", "hooks": [{"type": "command", "command": "x"}]}]
            }}),
        )]);
        let names = |p: Option<Plan>| -> Vec<String> {
            p.map(|p| p.hooks.into_iter().map(|h| h.command).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            names(set.plan(HookEvent::BeforeTool, Subject::Tool("write_file"))),
            vec!["w", "all"]
        );
        assert_eq!(
            names(set.plan(HookEvent::BeforeTool, Subject::Tool("run_shell_command"))),
            vec!["s", "all"]
        );
        assert_eq!(
            names(set.plan(HookEvent::BeforeTool, Subject::Tool("("))),
            vec!["paren", "all"]
        );
        assert!(
            set.plan(HookEvent::SessionStart, Subject::Trigger("startup"))
                .is_none()
        );
        assert_eq!(
            names(set.plan(HookEvent::SessionStart, Subject::Trigger("start"))),
            vec!["x"]
        );
    }

    #[test]
    fn order_dedup_sequential_and_switches() {
        let hook = json!({"BeforeTool": [{"hooks": [{"type": "command", "command": "same"}]}]});
        let set = HookSet::from_layers(vec![
            layer(
                "user",
                json!({"hooks": hook, "hooksConfig": {"disabled": ["off"]}}),
            ),
            layer(
                "workspace",
                json!({"hooks": {"BeforeTool": [
                    {"sequential": true, "hooks": [{"type": "command", "command": "ws"},
                                                   {"type": "command", "command": "same"},
                                                   {"type": "command", "name": "off", "command": "o"}]}
                ]}}),
            ),
        ]);
        let plan = set
            .plan(HookEvent::BeforeTool, Subject::Tool("x"))
            .expect("a plan");
        let commands: Vec<_> = plan.hooks.iter().map(|h| h.command.as_str()).collect();
        assert_eq!(commands, vec!["ws", "same"]);
        assert!(plan.sequential);
        let off = HookSet::from_layers(vec![
            layer("user", json!({"hooks": hook})),
            layer("workspace", json!({"hooksConfig": {"enabled": false}})),
        ]);
        assert!(!off.listens(HookEvent::BeforeTool));
        assert!(
            off.plan(HookEvent::BeforeTool, Subject::Tool("x"))
                .is_none()
        );
    }
}
