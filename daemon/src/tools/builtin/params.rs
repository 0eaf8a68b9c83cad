//! Argument parsing against a tool's own schema, so that every error names
//! the parameter at fault (serde's messages do not, for type errors).

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::contract::ToolError;

/// Checks `args` against the top-level properties of `schema` (known names,
/// JSON types, required names), then deserializes it. `null` counts as
/// absent for optional parameters.
pub fn parse<T: DeserializeOwned>(schema: &Value, args: &Value) -> Result<T, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| ToolError::invalid("arguments must be a JSON object"))?;
    let props = schema.get("properties").and_then(Value::as_object);
    for (name, value) in obj {
        let Some(prop) = props.and_then(|p| p.get(name)) else {
            return Err(ToolError::invalid(format!("unknown parameter `{name}`")));
        };
        if value.is_null() {
            continue;
        }
        if let Some(ty) = prop.get("type").and_then(Value::as_str)
            && !type_matches(ty, value)
        {
            return Err(ToolError::invalid(format!("`{name}` must be of type {ty}")));
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if obj.get(name).is_none_or(Value::is_null) {
            return Err(ToolError::invalid(format!("`{name}` is required")));
        }
    }
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::invalid(format!("invalid arguments: {e}")))
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize)]
    struct P {
        #[allow(dead_code)]
        a: String,
    }

    #[test]
    fn names_the_parameter() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}, "required": ["a"]});
        let err = |args: Value| parse::<P>(&schema, &args).err().unwrap().message;
        assert!(err(json!({"a": 1})).contains("`a`"));
        assert!(err(json!({"a": "x", "b": "y"})).contains("`b`"));
        assert!(err(json!({"b": true})).contains("`a` is required"));
        assert!(err(json!({"a": "x", "c": 1})).contains("`c`"));
        assert!(err(json!([1])).contains("object"));
        assert!(parse::<P>(&schema, &json!({"a": "x", "b": null})).is_ok());
    }
}
