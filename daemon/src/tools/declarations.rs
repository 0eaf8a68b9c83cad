//! Tools as Gemini API `FunctionDeclaration`s (`{name, description,
//! parameters}`), with each parameter schema sanitized the way the
//! reference does before sending it (seed 000 section 3.3.3):
//!
//! * `default` is dropped where `anyOf` is present;
//! * `enum` is only allowed on strings: the type becomes `string` and the
//!   values are turned into strings;
//! * on strings, `format` is kept only when it is `enum` or `date-time`
//!   (on numbers only `int32`, `int64`, `float`, `double`);
//! * keys the API's `Schema` object does not know (`$schema`,
//!   `additionalProperties`, `$id`, `$defs`, `const`, ...) are dropped;
//! * all of this recursively, through `properties`, `items` and `anyOf`.
//!
//! Everything here is pure: a schema in, a schema out.

use serde_json::{Map, Value, json};

use super::contract::Tool;
use super::registry::ToolRegistry;

/// The fields of the Gemini API `Schema` object (an OpenAPI 3.0 subset).
/// Anything else is refused by the API, so it is dropped.
const ALLOWED_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// `format` values the API accepts on strings.
const STRING_FORMATS: &[&str] = &["enum", "date-time"];
/// `format` values the API accepts on numbers.
const NUMBER_FORMATS: &[&str] = &["int32", "int64", "float", "double"];

/// The declaration the Gemini API expects for `tool`.
pub fn function_declaration(tool: &dyn Tool) -> Value {
    json!({
        "name": tool.name(),
        "description": tool.description(),
        "parameters": sanitize_schema(tool.parameter_schema()),
    })
}

/// Declarations of every registered tool, sorted by name.
pub fn declarations(registry: &ToolRegistry) -> Vec<Value> {
    declarations_where(registry, |_| true)
}

/// The declarations of the tools `shown` keeps (a session's: the tools
/// its policy does not deny outright), sorted by name.
pub fn declarations_where(
    registry: &ToolRegistry,
    shown: impl Fn(&dyn Tool) -> bool,
) -> Vec<Value> {
    declare(registry.all(), shown)
}

/// Declarations of the tools a session rooted at `root` may use (another
/// workspace's MCP servers left out) that `shown` keeps (those its policy
/// does not deny outright), sorted by name.
pub fn declarations_in(
    registry: &ToolRegistry,
    root: &std::path::Path,
    shown: impl Fn(&dyn Tool) -> bool,
) -> Vec<Value> {
    declare(registry.all_in(root), shown)
}

/// The declarations of `tools` that `shown` keeps, sorted by name.
fn declare(
    mut tools: Vec<super::registry::RegisteredTool>,
    shown: impl Fn(&dyn Tool) -> bool,
) -> Vec<Value> {
    tools.retain(|t| shown(t.tool.as_ref()));
    tools.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
    tools
        .iter()
        .map(|t| function_declaration(t.tool.as_ref()))
        .collect()
}

/// A copy of `schema` the Gemini API accepts. Non-object values (a bare
/// `true` schema) become an empty object schema.
pub fn sanitize_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(sanitize_object(map)),
        _ => json!({}),
    }
}

fn sanitize_object(src: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in src {
        if !ALLOWED_KEYS.contains(&key.as_str()) {
            continue;
        }
        let value = match key.as_str() {
            "properties" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, s)| (name.clone(), sanitize_schema(s)))
                        .collect(),
                ),
                _ => continue,
            },
            "items" => match value {
                Value::Object(_) => sanitize_schema(value),
                // Tuple validation (`items: [..]`) has no equivalent: keep
                // the first schema, which is what a model can use.
                Value::Array(list) => match list.first() {
                    Some(first) => sanitize_schema(first),
                    None => continue,
                },
                _ => continue,
            },
            "anyOf" => match value {
                Value::Array(list) => Value::Array(list.iter().map(sanitize_schema).collect()),
                _ => continue,
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }

    // `const: x` is an enum of one.
    if let Some(c) = src.get("const")
        && !out.contains_key("enum")
    {
        out.insert("enum".to_owned(), Value::Array(vec![c.clone()]));
    }

    // `type: ["string", "null"]` is a nullable string; with several
    // non-null types the first one is kept.
    if let Some(Value::Array(types)) = out.get("type").cloned() {
        let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if non_null.len() < types.len() {
            out.insert("nullable".to_owned(), Value::Bool(true));
        }
        match non_null.first() {
            Some(t) => out.insert("type".to_owned(), (*t).clone()),
            None => out.remove("type"),
        };
    }

    // No `default` together with `anyOf`.
    if out.contains_key("anyOf") {
        out.remove("default");
    }

    // `enum` only on strings, with string values.
    if let Some(Value::Array(values)) = out.get("enum").cloned() {
        let strings = values.iter().map(enum_string).collect();
        out.insert("enum".to_owned(), Value::Array(strings));
        out.insert("type".to_owned(), Value::String("string".to_owned()));
    } else if out.contains_key("enum") {
        out.remove("enum");
    }

    // Only the formats the API knows for the type.
    if let Some(format) = out.get("format").and_then(Value::as_str) {
        let ty = out.get("type").and_then(Value::as_str).unwrap_or("");
        let keep = match ty {
            "string" => STRING_FORMATS.contains(&format),
            "number" | "integer" => NUMBER_FORMATS.contains(&format),
            _ => false,
        };
        if !keep {
            out.remove("format");
        }
    }

    // `required` may only name declared properties.
    if let Some(Value::Array(required)) = out.get("required").cloned() {
        let props = out.get("properties").and_then(Value::as_object);
        let kept: Vec<Value> = required
            .into_iter()
            .filter(|r| {
                r.as_str()
                    .is_some_and(|name| props.is_some_and(|p| p.contains_key(name)))
            })
            .collect();
        if kept.is_empty() {
            out.remove("required");
        } else {
            out.insert("required".to_owned(), Value::Array(kept));
        }
    }
    out
}

fn enum_string(v: &Value) -> Value {
    match v {
        Value::String(_) => v.clone(),
        other => Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (what, input, expected), one row a line.
    #[rustfmt::skip]
    #[test]
    fn sanitizing_table() {
        let cases: Vec<(&str, Value, Value)> = vec![
            ("plain object is unchanged", json!({"type": "object", "properties": {"a": {"type": "string", "description": "d"}}, "required": ["a"]}), json!({"type": "object", "properties": {"a": {"type": "string", "description": "d"}}, "required": ["a"]})),
            ("default dropped with anyOf", json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "default": "x"}), json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})),
            ("default kept without anyOf", json!({"type": "integer", "default": 3}), json!({"type": "integer", "default": 3})),
            ("enum on integer becomes string", json!({"type": "integer", "enum": [1, 2]}), json!({"type": "string", "enum": ["1", "2"]})),
            ("enum without type becomes string", json!({"enum": ["a", "b"]}), json!({"type": "string", "enum": ["a", "b"]})),
            ("enum on string kept", json!({"type": "string", "enum": ["a"]}), json!({"type": "string", "enum": ["a"]})),
            ("string format uri dropped", json!({"type": "string", "format": "uri"}), json!({"type": "string"})),
            ("string format date-time kept", json!({"type": "string", "format": "date-time"}), json!({"type": "string", "format": "date-time"})),
            ("string format enum kept", json!({"type": "string", "format": "enum", "enum": ["a"]}), json!({"type": "string", "format": "enum", "enum": ["a"]})),
            ("integer format int64 kept", json!({"type": "integer", "format": "int64"}), json!({"type": "integer", "format": "int64"})),
            ("integer format uint dropped", json!({"type": "integer", "format": "uint"}), json!({"type": "integer"})),
            ("$schema and additionalProperties dropped", json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": false, "properties": {}}), json!({"type": "object", "properties": {}})),
            ("unknown keywords dropped", json!({"type": "number", "exclusiveMinimum": 0, "$id": "x", "$comment": "c", "examples": [1]}), json!({"type": "number"})),
            ("const is an enum of one", json!({"const": "only"}), json!({"type": "string", "enum": ["only"]})),
            ("nullable type list", json!({"type": ["string", "null"]}), json!({"type": "string", "nullable": true})),
            ("recurses into properties", json!({"type": "object", "properties": {"u": {"type": "string", "format": "email", "additionalProperties": true}}}), json!({"type": "object", "properties": {"u": {"type": "string"}}})),
            ("recurses into items", json!({"type": "array", "items": {"type": "boolean", "enum": [true]}}), json!({"type": "array", "items": {"type": "string", "enum": ["true"]}})),
            ("tuple items keep the first", json!({"type": "array", "items": [{"type": "string", "format": "uri"}, {"type": "integer"}]}), json!({"type": "array", "items": {"type": "string"}})),
            ("recurses into anyOf", json!({"anyOf": [{"type": "string", "format": "hostname"}, {"type": "object", "additionalProperties": false}]}), json!({"anyOf": [{"type": "string"}, {"type": "object"}]})),
            ("deep nesting", json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {"b": {"anyOf": [{"type": "integer", "enum": [1]}], "default": 1}}}}}}), json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {"b": {"anyOf": [{"type": "string", "enum": ["1"]}]}}}}}})),
            ("required names only declared properties", json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost"]}), json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})),
            ("required with nothing left is dropped", json!({"type": "object", "required": ["ghost"]}), json!({"type": "object"})),
            ("a property named like a keyword survives", json!({"type": "object", "properties": {"default": {"type": "string"}, "format": {"type": "string"}}}), json!({"type": "object", "properties": {"default": {"type": "string"}, "format": {"type": "string"}}})),
            ("non-object schema", json!(true), json!({})),
        ];
        for (what, input, expected) in cases {
            assert_eq!(sanitize_schema(&input), expected, "{what}");
        }
    }

    #[test]
    fn input_is_not_modified_and_result_is_stable() {
        let input = json!({"type": "integer", "enum": [1], "format": "x", "$schema": "s"});
        let copy = input.clone();
        let once = sanitize_schema(&input);
        assert_eq!(input, copy);
        assert_eq!(sanitize_schema(&once), once, "sanitizing is idempotent");
    }

    #[test]
    fn every_builtin_declares_cleanly() {
        let mut config = crate::config::DaemonConfig::from_env();
        config.gemini.api_key = Some("test-key".to_owned());
        let registry = ToolRegistry::new();
        for tool in super::super::builtin::all(&config) {
            registry.register(tool).unwrap();
        }
        let decls = declarations(&registry);
        assert_eq!(decls.len(), registry.len());
        let names: Vec<&str> = decls.iter().map(|d| d["name"].as_str().unwrap()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "sorted by name");
        assert!(names.contains(&"google_web_search"), "{names:?}");
        for d in &decls {
            assert!(
                d["description"].as_str().is_some_and(|s| !s.is_empty()),
                "{d}"
            );
            assert_eq!(d["parameters"]["type"], "object", "{d}");
            assert_eq!(d.as_object().unwrap().len(), 3, "{d}");
            let text = d.to_string();
            for banned in ["\"$schema\"", "\"additionalProperties\"", "\"$ref\""] {
                assert!(!text.contains(banned), "{banned} in {d}");
            }
            assert_eq!(sanitize_schema(&d["parameters"]), d["parameters"], "{d}");
        }
    }
}
