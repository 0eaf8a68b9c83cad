//! `tools/list`, `prompts/list` and `resources/list` answers to what the daemon keeps. Works
//! on their JSON, so fields newer protocol versions add do no harm.

use serde_json::Value;

use crate::discovery::schema;
use crate::discovery::settings::ServerConfig;

/// A tool as the server declares it (schema already sanitized).
#[derive(Debug, Clone)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub schema: Value,
    /// The whole declaration (title, annotations, output schema...), with
    /// `inputSchema` replaced by the sanitized `schema`.
    pub declared: Value,
}

#[derive(Debug, Clone)]
pub struct PromptInfo {
    pub name: String,
    pub description: Option<String>,
    pub arguments: Vec<String>,
}

/// The server's tools that `includeTools`/`excludeTools` let through.
pub fn tools(listed: &[rmcp::model::Tool], config: &ServerConfig) -> Vec<RemoteTool> {
    listed
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .filter_map(|mut t| {
            let name = t.get("name")?.as_str()?.to_owned();
            if !config.tool_enabled(&name) {
                return None;
            }
            let schema = schema::sanitize(t.get("inputSchema"));
            let description = t
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(map) = t.as_object_mut() {
                map.insert("inputSchema".into(), schema.clone());
            }
            Some(RemoteTool {
                name,
                description,
                schema,
                declared: t,
            })
        })
        .collect()
}

/// Listed items (resources, templates) as the JSON the server sent.
pub fn as_json<T: serde::Serialize>(listed: Vec<T>) -> Vec<Value> {
    listed
        .iter()
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect()
}

/// Prompts with their argument names (required ones marked `*`).
pub fn prompts(listed: &[rmcp::model::Prompt]) -> Vec<PromptInfo> {
    listed
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .filter_map(|p| {
            let arguments = p
                .get("arguments")
                .and_then(Value::as_array)
                .map(|args| args.iter().filter_map(argument).collect())
                .unwrap_or_default();
            Some(PromptInfo {
                name: p.get("name")?.as_str()?.to_owned(),
                description: p
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                arguments,
            })
        })
        .collect()
}

fn argument(a: &Value) -> Option<String> {
    let name = a.get("name")?.as_str()?;
    let required = a.get("required").and_then(Value::as_bool) == Some(true);
    Some(if required {
        format!("{name}*")
    } else {
        name.to_owned()
    })
}
