//! MCP resources as the daemon hands them on: the list the model gets from
//! `list_mcp_resources` and a `resources/read` answer as model parts (0.61's
//! `list-mcp-resources.js` and `read-mcp-resource.js` words).

use serde_json::Value;

use crate::tools::ContentPart;

/// One resource of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub server: String,
    /// The server's scope (`user`, `workspace:<root>`, ...).
    pub scope: String,
    /// The resource as `resources/list` gave it.
    pub resource: Value,
}

impl Listed {
    pub fn uri(&self) -> &str {
        self.field("uri").unwrap_or_default()
    }

    pub fn name(&self) -> Option<&str> {
        self.field("name")
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.resource
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
}

/// `list_mcp_resources`' text: `- server:uri | name | description` lines.
pub fn list_text(listed: &[Listed], server: Option<&str>) -> String {
    if listed.is_empty() {
        return match server {
            Some(name) => format!("No resources found for server: {name}"),
            None => "No MCP resources found.".to_owned(),
        };
    }
    let mut text = String::from("Available MCP Resources:\n");
    for item in listed {
        text.push_str(&format!("- {}:{}", item.server, item.uri()));
        if let Some(name) = item.name() {
            text.push_str(&format!(" | {name}"));
        }
        if let Some(description) = item.field("description") {
            text.push_str(&format!(" | {description}"));
        }
        text.push('\n');
    }
    text
}

/// `read_mcp_resource`'s text: each text content on a line, a blob named
/// by its media type.
pub fn read_text(result: &Value) -> String {
    let mut text = String::new();
    for content in contents(result) {
        let get = |key: &str| content.get(key).and_then(Value::as_str);
        if let Some(t) = get("text").filter(|t| !t.is_empty()) {
            text.push_str(t);
            text.push('\n');
        } else if get("blob").is_some_and(|b| !b.is_empty()) {
            text.push_str(&format!(
                "[Binary Data ({})]\n",
                get("mimeType").unwrap_or("undefined")
            ));
        }
    }
    if text.is_empty() {
        "No content returned from resource.".to_owned()
    } else {
        text
    }
}

/// A `resources/read` answer as parts for a prompt (`@server:uri`): text
/// as text, blobs as inline data.
pub fn read_parts(result: &Value) -> Vec<ContentPart> {
    contents(result)
        .iter()
        .filter_map(|content| {
            let get = |key: &str| content.get(key).and_then(Value::as_str);
            if let Some(text) = get("text") {
                Some(ContentPart::Text {
                    text: text.to_owned(),
                })
            } else {
                get("blob").map(|blob| ContentPart::InlineData {
                    mime_type: get("mimeType")
                        .unwrap_or("application/octet-stream")
                        .to_owned(),
                    data: blob.to_owned(),
                })
            }
        })
        .collect()
}

fn contents(result: &Value) -> Vec<Value> {
    result
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_list_reads_as_the_reference_words_it() {
        let listed = vec![
            Listed {
                server: "ev".into(),
                scope: "user".into(),
                resource: json!({"uri": "test://1", "name": "One", "description": "first"}),
            },
            Listed {
                server: "fs".into(),
                scope: "user".into(),
                resource: json!({"uri": "file:///a", "name": ""}),
            },
        ];
        assert_eq!(
            list_text(&listed, None),
            "Available MCP Resources:\n- ev:test://1 | One | first\n- fs:file:///a\n"
        );
        assert_eq!(list_text(&[], None), "No MCP resources found.");
        assert_eq!(
            list_text(&[], Some("ev")),
            "No resources found for server: ev"
        );
    }

    #[test]
    fn a_read_becomes_text_for_the_tool_and_parts_for_a_prompt() {
        let result = json!({"contents": [
            {"uri": "a", "text": "hello"},
            {"uri": "b", "blob": "AAAA", "mimeType": "image/png"}
        ]});
        assert_eq!(read_text(&result), "hello\n[Binary Data (image/png)]\n");
        assert_eq!(
            read_parts(&result),
            [
                ContentPart::Text {
                    text: "hello".into()
                },
                ContentPart::InlineData {
                    mime_type: "image/png".into(),
                    data: "AAAA".into()
                }
            ]
        );
        assert_eq!(
            read_text(&json!({"contents": []})),
            "No content returned from resource."
        );
    }
}
