//! Making jsonrpsee's "Invalid params" errors name the offending field.
//!
//! jsonrpsee answers -32602 with the message "Invalid params" and serde's
//! text as `data`. serde names a missing field, but for a wrong type it only
//! gives a position in the params text; this module finds which top-level
//! key that position belongs to.

use serde_json::Value;

/// Rewrites a -32602 error object (in place) so its message names the field.
pub fn name_the_field(error: &mut Value, params: Option<&str>) {
    let data = match error.get("data") {
        Some(Value::String(data)) => data.clone(),
        _ => return,
    };
    if let Some(message) = describe(&data, params) {
        error["message"] = Value::String(message);
    }
}

fn describe(data: &str, params: Option<&str>) -> Option<String> {
    if let Some(rest) = data.split("missing field `").nth(1) {
        let field = rest.split('`').next()?;
        return Some(format!("invalid params: missing field `{field}`"));
    }
    if let Some(rest) = data.split("unknown variant `").nth(1) {
        let variant = rest.split('`').next()?;
        let field =
            position(data).and_then(|(line, column)| params.and_then(|p| key_at(p, line, column)));
        return Some(match field {
            Some(field) => format!("invalid params: `{field}`: unknown value `{variant}`"),
            None => format!("invalid params: {}", strip_position(data)),
        });
    }
    let (line, column) = position(data)?;
    let field = key_at(params?, line, column)?;
    Some(format!(
        "invalid params: `{field}`: {}",
        strip_position(data)
    ))
}

/// `(line, column)` from serde's "... at line L column C".
fn position(data: &str) -> Option<(usize, usize)> {
    let at = data.rfind(" at line ")?;
    let mut words = data[at..].split_whitespace().skip(2);
    let line = words.next()?.parse().ok()?;
    let column = words.nth(1)?.parse().ok()?;
    Some((line, column))
}

fn strip_position(data: &str) -> &str {
    data.rfind(" at line ").map_or(data, |at| &data[..at])
}

/// The top-level key of the JSON object `text` whose value contains the
/// 1-based `(line, column)` position.
fn key_at(text: &str, line: usize, column: usize) -> Option<String> {
    let offset = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + column.saturating_sub(1);
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    let mut expecting_key = false;
    let mut current: Option<String> = None;
    while i < bytes.len() && i <= offset {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && expecting_key {
                    current = text.get(start..i.min(text.len())).map(str::to_owned);
                    expecting_key = false;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                expecting_key = depth == 1 && bytes[i] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expecting_key = true,
            _ => {}
        }
        i += 1;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_field() {
        let cases = [
            (
                "missing field `cwd`",
                r#"{}"#,
                Some("invalid params: missing field `cwd`"),
            ),
            (
                "invalid type: integer `5`, expected a string at line 1 column 8",
                r#"{"cwd":5}"#,
                Some("invalid params: `cwd`: invalid type: integer `5`, expected a string"),
            ),
            (
                "invalid type: sequence, expected a string at line 1 column 32",
                r#"{"cwd":"/tmp","sessionId":["x"]}"#,
                Some("invalid params: `sessionId`: invalid type: sequence, expected a string"),
            ),
            (
                "unknown variant `nope`, expected one of `default`, `autoEdit`, `yolo` at line 1 column 34",
                r#"{"cwd":"/tmp","approvalMode":"nope"}"#,
                Some("invalid params: `approvalMode`: unknown value `nope`"),
            ),
            ("something else entirely", "{}", None),
        ];
        for (data, params, want) in cases {
            assert_eq!(describe(data, Some(params)).as_deref(), want, "{data}");
        }
    }
}
