//! Reading a `WWW-Authenticate: Bearer ...` challenge (RFC 6750 §3, RFC
//! 9728 §5.1): `resource_metadata`, `scope`, `error`.

/// What a 401 or 403 said about how to authorize.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// Parses the `Bearer` challenge of a `WWW-Authenticate` value (other
/// schemes in the same value are skipped). Parameters are `name=value` or
/// `name="quoted value"`, comma-separated.
pub fn parse(header: &str) -> Challenge {
    let mut out = Challenge::default();
    let Some(start) = find_scheme(header, "bearer") else {
        return out;
    };
    let mut rest = &header[start..];
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim().to_ascii_lowercase();
        // A new scheme (`Basic realm=...`) ends the Bearer parameters.
        if name.contains(' ') {
            break;
        }
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            text.push(next);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => text.push(c),
                }
            }
            value = text;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_owned();
            rest = &rest[end..];
        }
        match name.as_str() {
            "resource_metadata" => out.resource_metadata = Some(value),
            "scope" => out.scope = Some(value),
            "error" => out.error = Some(value),
            _ => {}
        }
    }
    out
}

fn find_scheme(header: &str, scheme: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(scheme) {
        let at = from + at;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',');
        let end = at + scheme.len();
        let after_ok = end == lower.len() || lower.as_bytes()[end] == b' ';
        if before_ok && after_ok {
            return Some(end);
        }
        from = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parameters_quoted_or_not() {
        let c = parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        let c = parse("bearer scope=read,error=invalid_token");
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(parse(r#"Basic realm="x""#), Challenge::default());
        let c = parse(r#"Basic realm="x", Bearer scope="s\"q""#);
        assert_eq!(c.scope.as_deref(), Some("s\"q"));
        assert_eq!(parse("Bearer"), Challenge::default());
    }
}
