//! Validation of call arguments against a tool's JSON schema, before the
//! tool's own checks, with errors that name the parameter.

use serde_json::Value;

use super::contract::ToolError;

/// A compiled parameter schema.
pub struct ArgsValidator {
    validator: jsonschema::Validator,
}

impl ArgsValidator {
    /// Compiles `schema`; a tool with an invalid schema cannot be registered.
    pub fn new(tool: &str, schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| ArgsValidator { validator })
            .map_err(|e| format!("tool `{tool}` has an invalid parameter schema: {e}"))
    }

    /// Checks `args`; the error names the first offending parameter.
    pub fn check(&self, args: &Value) -> Result<(), ToolError> {
        if !args.is_object() {
            return Err(ToolError::invalid(format!(
                "arguments must be a JSON object, got {}",
                kind_of(args)
            )));
        }
        match self.validator.iter_errors(args).next() {
            None => Ok(()),
            Some(error) => {
                let pointer = error.instance_path().to_string();
                let param = pointer.trim_start_matches('/').replace('/', ".");
                let message = if param.is_empty() {
                    format!("invalid arguments: {error}")
                } else {
                    format!("invalid parameter `{param}`: {error}")
                };
                Err(ToolError::invalid(message))
            }
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_the_parameter() {
        let schema = json!({
            "type": "object",
            "properties": {"absolute_path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["absolute_path"]
        });
        let v = ArgsValidator::new("t", &schema).unwrap();
        assert!(v.check(&json!({"absolute_path": "/x"})).is_ok());
        let e = v.check(&json!({"absolute_path": 3})).unwrap_err();
        assert!(e.message.contains("`absolute_path`"), "{}", e.message);
        let e = v
            .check(&json!({"absolute_path": "/x", "limit": 0}))
            .unwrap_err();
        assert!(e.message.contains("`limit`"), "{}", e.message);
        let e = v.check(&json!({})).unwrap_err();
        assert!(e.message.contains("absolute_path"), "{}", e.message);
        let e = v.check(&json!([1])).unwrap_err();
        assert!(e.message.contains("JSON object"), "{}", e.message);
    }
}
