//! Parameter schemas of discovered tools, made acceptable to the Gemini API
//! (seed 000 section 3.3.3) while still validating the same arguments.

use serde_json::{Map, Value};

/// Sanitizes `schema` in place and returns it; a missing or non-object
/// schema becomes an empty object schema.
///
/// * `default` is dropped next to `anyOf` (the API rejects the pair);
/// * `format` on strings is kept only for `enum` and `date-time`;
/// * `$schema` and `$id` are dropped (the API does not know them).
///
/// The reference also turns every `enum` into a string enum; that would
/// make our own validation reject numeric enum values the server expects,
/// so it is not done here.
pub fn sanitize(schema: Option<&Value>) -> Value {
    let mut schema = match schema {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => Value::Object(Map::new()),
    };
    walk(&mut schema);
    if let Value::Object(map) = &mut schema
        && !map.contains_key("type")
    {
        map.insert("type".into(), Value::String("object".into()));
    }
    schema
}

fn walk(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("$id");
            if map.contains_key("anyOf") {
                map.remove("default");
            }
            let is_string = map.get("type").and_then(Value::as_str) == Some("string");
            let format_ok = matches!(
                map.get("format").and_then(Value::as_str),
                Some("enum" | "date-time")
            );
            if is_string && !format_ok {
                map.remove("format");
            }
            for child in map.values_mut() {
                walk(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(walk),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn drops_what_the_api_rejects() {
        let s = sanitize(Some(&json!({
            "$schema": "x",
            "properties": {
                "a": {"type": "string", "format": "uri"},
                "b": {"type": "string", "format": "date-time"},
                "c": {"anyOf": [{"type": "string"}], "default": "x"}
            }
        })));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "format": "date-time"},
                "c": {"anyOf": [{"type": "string"}]}
            }})
        );
        assert_eq!(sanitize(None), json!({"type": "object"}));
    }
}
