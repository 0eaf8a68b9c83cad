//! Where metadata is looked for, in the order the MCP authorization spec
//! (2025-11-25) gives: RFC 9728 protected-resource metadata (path-aware,
//! then at the root), and RFC 8414 / OIDC authorization-server metadata
//! (path-inserted forms first, then OIDC's path-appended form).

use reqwest::Url;

/// The protected-resource metadata URLs of the MCP server at `server`.
pub fn resource_metadata(server: &Url) -> Vec<Url> {
    inserted(server, "oauth-protected-resource")
}

/// The authorization-server metadata URLs of `issuer`.
pub fn server_metadata(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| {
        let mut u = issuer.clone();
        u.set_query(None);
        u.set_fragment(None);
        u.set_path(&p);
        u
    };
    if path.is_empty() {
        return vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ];
    }
    vec![
        at(format!("/.well-known/oauth-authorization-server{path}")),
        at(format!("/.well-known/openid-configuration{path}")),
        at(format!("{path}/.well-known/openid-configuration")),
    ]
}

/// `/.well-known/<name><path>`, then `/.well-known/<name>` (the second only
/// when the path is not empty).
fn inserted(base: &Url, name: &str) -> Vec<Url> {
    let path = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    let mut with_path = base.clone();
    with_path.set_query(None);
    with_path.set_fragment(None);
    with_path.set_path(&format!("/.well-known/{name}{path}"));
    urls.push(with_path);
    if !path.is_empty() {
        let mut root = base.clone();
        root.set_query(None);
        root.set_fragment(None);
        root.set_path(&format!("/.well-known/{name}"));
        urls.push(root);
    }
    urls
}

/// The origin of `url` (scheme, host, port) as a URL with path `/`.
pub fn origin(url: &Url) -> Url {
    let mut o = url.clone();
    o.set_path("/");
    o.set_query(None);
    o.set_fragment(None);
    o
}

/// The canonical resource identifier of an MCP server URL (RFC 8707 as
/// the spec uses it): no fragment, no trailing slash on a bare origin.
pub fn canonical_resource(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    let text = u.to_string();
    if u.path() == "/" && u.query().is_none() {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    }
}

/// Whether the resource a server advertises covers the server's URL: same
/// origin, and the server's path under the resource's path.
pub fn covers(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() {
        return false;
    }
    let base = resource.path().trim_end_matches('/');
    let path = server.path();
    path == base || base.is_empty() || path.starts_with(&format!("{base}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn resource_metadata_is_path_aware_then_root() {
        assert_eq!(
            strings(resource_metadata(&url("http://h:1/mcp?x=1"))),
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            strings(resource_metadata(&url("http://h:1/"))),
            ["http://h:1/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_in_the_spec_order() {
        assert_eq!(
            strings(server_metadata(&url("https://a/tenant1"))),
            [
                "https://a/.well-known/oauth-authorization-server/tenant1",
                "https://a/.well-known/openid-configuration/tenant1",
                "https://a/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(server_metadata(&url("https://a"))),
            [
                "https://a/.well-known/oauth-authorization-server",
                "https://a/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_own_paths_only() {
        assert!(covers(&url("http://h:1/mcp"), &url("http://h:1/mcp")));
        assert!(covers(&url("http://h:1/"), &url("http://h:1/mcp")));
        assert!(covers(&url("http://h:1/a"), &url("http://h:1/a/b")));
        assert!(!covers(&url("http://h:1/ab"), &url("http://h:1/a")));
        assert!(!covers(&url("http://h:2/mcp"), &url("http://h:1/mcp")));
        assert!(!covers(&url("https://evil/mcp"), &url("http://h:1/mcp")));
        assert_eq!(canonical_resource(&url("http://h:1/")), "http://h:1");
        assert_eq!(
            canonical_resource(&url("http://h:1/mcp#x")),
            "http://h:1/mcp"
        );
    }
}
