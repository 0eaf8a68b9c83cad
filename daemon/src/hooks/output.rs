//! What a hook said, read as 0.61 reads it (`hookRunner.js`,
//! `hookAggregator.js`, `types.js`): stdout (else stderr) parsed as JSON
//! (a JSON string holding JSON is parsed again); plain text becomes
//! `allow` + `systemMessage` (exit 0), `allow` + a warning (exit 1) or
//! `deny` with the text as reason (any other status); then the outputs of
//! one firing merged by the event's strategy. Pure.
//!
//! Stricter than 0.61: exit status 2 always blocks (0.61 lets JSON on
//! stdout or an empty output override it), and a hook killed by a signal
//! is an error (0.61 reads it as status 0).

use serde_json::{Map, Value};

use super::config::HookEvent;

/// How one hook process ended, as the runner saw it.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: Option<u64>,
    pub cancelled: bool,
    /// The process could not be started.
    pub spawn_error: Option<String>,
}

/// One hook's result: its output (if any) and what went wrong (if
/// anything). A failed hook's output still counts, as in 0.61.
#[derive(Debug, Clone, PartialEq)]
pub struct HookResult {
    pub output: Option<Map<String, Value>>,
    pub error: Option<String>,
}

impl HookResult {
    /// A word for the event log: `allow`, `deny`, `ask`, `stop`, `error`.
    pub fn decision(&self) -> &'static str {
        let out = self.output.as_ref();
        if out.and_then(|o| o.get("continue")) == Some(&Value::Bool(false)) {
            return "stop";
        }
        match out.and_then(|o| o.get("decision")).and_then(Value::as_str) {
            Some("deny" | "block") => "deny",
            Some("ask") => "ask",
            _ if self.error.is_some() => "error",
            _ => "allow",
        }
    }
}

/// Reads one run.
pub fn interpret(ran: &Ran) -> HookResult {
    if let Some(error) = &ran.spawn_error {
        return failed(format!("could not start: {error}"));
    }
    if let Some(ms) = ran.timed_out {
        return failed(format!("timed out after {ms} ms (killed)"));
    }
    if ran.cancelled {
        return failed("cancelled (killed)".to_owned());
    }
    if let Some(signal) = ran.signal {
        return failed(format!("killed by signal {signal}"));
    }
    let code = ran.code.unwrap_or(0);
    let text = match ran.stdout.trim() {
        "" => ran.stderr.trim(),
        out => out,
    };
    let mut output = None;
    let mut error = None;
    if !text.is_empty() {
        match parse_object(text) {
            Some(object) => output = Some(object),
            None => {
                let mut o = Map::new();
                match code {
                    0 => {
                        o.insert("decision".into(), "allow".into());
                        o.insert("systemMessage".into(), text.into());
                        if !ran.stdout.trim().is_empty() {
                            error = Some(format!(
                                "printed text that is not JSON on stdout: {}",
                                clip(text)
                            ));
                        }
                    }
                    1 => {
                        o.insert("decision".into(), "allow".into());
                        o.insert("systemMessage".into(), format!("Warning: {text}").into());
                    }
                    _ => {
                        o.insert("decision".into(), "deny".into());
                        o.insert("reason".into(), text.into());
                    }
                }
                output = Some(o);
            }
        }
    }
    if code == 2 {
        let o = output.get_or_insert_with(Map::new);
        let blocking = matches!(
            o.get("decision").and_then(Value::as_str),
            Some("deny" | "block")
        );
        if !blocking {
            let reason = match ran.stderr.trim() {
                "" => "the hook exited with status 2".to_owned(),
                stderr => stderr.to_owned(),
            };
            o.insert("decision".into(), "deny".into());
            o.insert("reason".into(), reason.into());
        }
    }
    if code != 0 && error.is_none() {
        error = Some(match ran.stderr.trim() {
            "" => format!("exited with status {code}"),
            stderr => format!("exited with status {code}: {}", clip(stderr)),
        });
    }
    HookResult { output, error }
}

fn failed(error: String) -> HookResult {
    HookResult {
        output: None,
        error: Some(error),
    }
}

fn clip(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn parse_object(text: &str) -> Option<Map<String, Value>> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    if let Value::String(inner) = &value {
        value = serde_json::from_str(inner).ok()?;
    }
    match value {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

/// The merged output of one firing, with 0.61's readers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged(pub Map<String, Value>);

impl Merged {
    fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn specific(&self, key: &str) -> Option<&Value> {
        self.0.get("hookSpecificOutput").and_then(|s| s.get(key))
    }

    pub fn is_blocking(&self) -> bool {
        matches!(self.text("decision"), Some("deny" | "block"))
    }

    pub fn is_ask(&self) -> bool {
        self.text("decision") == Some("ask")
    }

    /// `continue: false`: the agent loop stops.
    pub fn should_stop(&self) -> bool {
        self.0.get("continue") == Some(&Value::Bool(false))
    }

    /// `stopReason`, else `reason`.
    pub fn effective_reason(&self) -> String {
        self.text("stopReason")
            .or(self.text("reason"))
            .unwrap_or("No reason provided")
            .to_owned()
    }

    pub fn system_message(&self) -> Option<&str> {
        self.text("systemMessage")
    }

    /// `hookSpecificOutput.additionalContext`, `<` and `>` escaped as 0.61
    /// does (a hook cannot close the tag it is wrapped in).
    pub fn additional_context(&self) -> Option<String> {
        self.specific("additionalContext")
            .and_then(Value::as_str)
            .map(|c| c.replace('<', "&lt;").replace('>', "&gt;"))
    }

    /// `hookSpecificOutput.tool_input`, when it is an object.
    pub fn tool_input(&self) -> Option<&Map<String, Value>> {
        self.specific("tool_input").and_then(Value::as_object)
    }

    /// Any other `hookSpecificOutput` field.
    pub fn specific_value(&self, key: &str) -> Option<&Value> {
        self.specific(key)
    }
}

/// Merges the outputs of one firing by `event`'s strategy; `None` when no
/// hook printed anything.
pub fn merge(event: HookEvent, outputs: &[Map<String, Value>]) -> Option<Merged> {
    if outputs.is_empty() {
        return None;
    }
    Some(Merged(match event {
        HookEvent::BeforeTool
        | HookEvent::AfterTool
        | HookEvent::BeforeAgent
        | HookEvent::AfterAgent
        | HookEvent::SessionStart => or_decision(outputs),
        HookEvent::BeforeModel | HookEvent::AfterModel => field_replacement(outputs),
        HookEvent::BeforeToolSelection => tool_selection(outputs),
        HookEvent::Notification | HookEvent::SessionEnd | HookEvent::PreCompress => {
            let mut merged = Map::new();
            for o in outputs {
                merged.extend(o.clone());
            }
            merged
        }
    }))
}

/// Any block wins, then any ask; reasons, stop reasons, system messages
/// and additional contexts joined by newlines; other specific fields
/// merged, later winning.
fn or_decision(outputs: &[Map<String, Value>]) -> Map<String, Value> {
    let mut merged = Map::new();
    merged.insert("continue".into(), true.into());
    let (mut stops, mut reasons, mut messages, mut contexts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut block, mut ask, mut stop) = (false, false, false);
    let mut specific = Map::new();
    for output in outputs {
        let text = |k: &str| output.get(k).and_then(Value::as_str).map(str::to_owned);
        if output.get("continue") == Some(&Value::Bool(false)) {
            stop = true;
            merged.insert("continue".into(), false.into());
            stops.extend(text("stopReason"));
        }
        match output.get("decision").and_then(Value::as_str) {
            Some(d @ ("deny" | "block")) => {
                block = true;
                merged.insert("decision".into(), d.into());
            }
            Some("ask") => {
                ask = true;
                if !block {
                    merged.insert("decision".into(), "ask".into());
                }
            }
            _ => {}
        }
        reasons.extend(text("reason"));
        messages.extend(text("systemMessage"));
        if output.get("suppressOutput") == Some(&Value::Bool(true)) {
            merged.insert("suppressOutput".into(), true.into());
        }
        if let Some(Value::Object(s)) = output.get("hookSpecificOutput") {
            for (k, v) in s {
                if k == "additionalContext" {
                    if let Some(c) = v.as_str() {
                        contexts.push(c.to_owned());
                    }
                } else {
                    specific.insert(k.clone(), v.clone());
                }
            }
        }
    }
    if !block && !ask && !stop {
        merged.insert("decision".into(), "allow".into());
    }
    let mut join = |key: &str, parts: Vec<String>| {
        if !parts.is_empty() {
            merged.insert(key.into(), parts.join("\n").into());
        }
    };
    join("stopReason", stops);
    join("reason", reasons);
    join("systemMessage", messages);
    if !contexts.is_empty() {
        specific.insert("additionalContext".into(), contexts.join("\n").into());
    }
    if !specific.is_empty() {
        merged.insert("hookSpecificOutput".into(), specific.into());
    }
    merged
}

fn field_replacement(outputs: &[Map<String, Value>]) -> Map<String, Value> {
    let mut merged = Map::new();
    let mut specific = Map::new();
    for output in outputs {
        for (k, v) in output {
            if k == "hookSpecificOutput" {
                if let Value::Object(s) = v {
                    specific.extend(s.clone());
                }
            } else {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    merged.insert("hookSpecificOutput".into(), specific.into());
    merged
}

/// NONE wins, then ANY, else AUTO; allowed names are the sorted union.
fn tool_selection(outputs: &[Map<String, Value>]) -> Map<String, Value> {
    let (mut none, mut any) = (false, false);
    let mut names = std::collections::BTreeSet::new();
    for output in outputs {
        let Some(config) = output
            .get("hookSpecificOutput")
            .and_then(|s| s.get("toolConfig"))
        else {
            continue;
        };
        match config.get("mode").and_then(Value::as_str) {
            Some("NONE") => none = true,
            Some("ANY") => any = true,
            _ => {}
        }
        if let Some(list) = config.get("allowedFunctionNames").and_then(Value::as_array) {
            names.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
    }
    let (mode, names): (&str, Vec<String>) = if none {
        ("NONE", Vec::new())
    } else if any {
        ("ANY", names.into_iter().collect())
    } else {
        ("AUTO", names.into_iter().collect())
    };
    let mut merged = Map::new();
    merged.insert(
        "hookSpecificOutput".into(),
        serde_json::json!({
            "hookEventName": "BeforeToolSelection",
            "toolConfig": {"mode": mode, "allowedFunctionNames": names}
        }),
    );
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..Ran::default()
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(o) => o,
            _ => Map::new(),
        }
    }

    #[test]
    fn exit_codes_and_text_as_0_61_reads_them() {
        let ok = interpret(&ran(0, r#"{"decision":"deny","reason":"no"}"#, ""));
        assert_eq!(ok.decision(), "deny");
        assert_eq!(ok.error, None);
        let nested = interpret(&ran(0, r#""{\"decision\":\"ask\"}""#, ""));
        assert_eq!(nested.decision(), "ask");
        let garbage = interpret(&ran(0, "hello", ""));
        assert_eq!(garbage.decision(), "error");
        assert_eq!(
            garbage.output,
            Some(obj(json!({"decision": "allow", "systemMessage": "hello"})))
        );
        let warn = interpret(&ran(1, "", "careful"));
        assert_eq!(
            warn.output,
            Some(obj(
                json!({"decision": "allow", "systemMessage": "Warning: careful"})
            ))
        );
        let block = interpret(&ran(2, "", "not this"));
        assert_eq!(
            block.output,
            Some(obj(json!({"decision": "deny", "reason": "not this"})))
        );
        // Stricter than 0.61: status 2 blocks whatever stdout says.
        let block_json = interpret(&ran(2, "{}", "nope"));
        assert_eq!(block_json.decision(), "deny");
        let silent = interpret(&ran(2, "", ""));
        assert_eq!(silent.decision(), "deny");
        let other = interpret(&ran(3, "broken", ""));
        assert_eq!(other.decision(), "deny");
        let crash = interpret(&Ran {
            signal: Some(9),
            ..Ran::default()
        });
        assert_eq!((crash.decision(), crash.output), ("error", None));
        let hang = interpret(&Ran {
            timed_out: Some(50),
            ..Ran::default()
        });
        assert!(
            hang.error
                .unwrap_or_default()
                .contains("timed out after 50 ms")
        );
        let empty = interpret(&ran(0, "  ", ""));
        assert_eq!((empty.output, empty.error), (None, None));
    }

    #[test]
    fn or_decision_merge() {
        let merged = merge(
            HookEvent::BeforeTool,
            &[
                obj(json!({"decision": "ask", "reason": "a", "hookSpecificOutput": {"additionalContext": "x<y>"}})),
                obj(json!({"decision": "deny", "reason": "b", "systemMessage": "m"})),
                obj(json!({"hookSpecificOutput": {"additionalContext": "z", "tool_input": {"k": 1}}})),
            ],
        )
        .expect("merged");
        assert!(merged.is_blocking());
        assert_eq!(merged.effective_reason(), "a\nb");
        assert_eq!(
            merged.additional_context().as_deref(),
            Some("x&lt;y&gt;\nz")
        );
        assert_eq!(merged.tool_input(), Some(&obj(json!({"k": 1}))));
        assert!(!merged.should_stop());
        let allow = merge(HookEvent::AfterTool, &[obj(json!({}))]).expect("merged");
        assert!(!allow.is_blocking() && !allow.is_ask());
        let stop = merge(
            HookEvent::BeforeTool,
            &[obj(json!({"continue": false, "stopReason": "halt"}))],
        )
        .expect("merged");
        assert!(stop.should_stop());
        assert_eq!(stop.effective_reason(), "halt");
    }

    #[test]
    fn tool_selection_merge() {
        let merged = merge(
            HookEvent::BeforeToolSelection,
            &[
                obj(json!({"hookSpecificOutput": {"toolConfig": {"mode": "ANY", "allowedFunctionNames": ["b"]}}})),
                obj(json!({"hookSpecificOutput": {"toolConfig": {"allowedFunctionNames": ["a", "b"]}}})),
            ],
        )
        .expect("merged");
        assert_eq!(
            merged.specific_value("toolConfig"),
            Some(&json!({"mode": "ANY", "allowedFunctionNames": ["a", "b"]}))
        );
    }
}
