//! An extension's id as 0.61 derives it (`getExtensionId`): the SHA-256
//! (hex) of its install source (`https://github.com/<owner>/<repo>` for a
//! GitHub git or release install, as `tryParseGithubUrl` reads it), or of
//! its name when it has no install metadata. It names the keychain
//! service of its sensitive settings (`extension_settings.rs`).

/// 0.61's extension id (pure): `source` and `kind` are the install
/// metadata's `source` and `type`, when it has them.
pub fn extension_id(name: &str, source: Option<&str>, kind: Option<&str>) -> String {
    let value = match source {
        None => name.to_owned(),
        Some(source) => match kind {
            Some("git" | "github-release") => github_repo(source)
                .map(|(owner, repo)| format!("https://github.com/{owner}/{repo}"))
                .unwrap_or_else(|| source.to_owned()),
            _ => source.to_owned(),
        },
    };
    let digest = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    hex::encode(digest.as_ref())
}

/// `(owner, repo)` when `source` names a GitHub repository as 0.61's
/// `tryParseGithubUrl` reads it (`owner/repo`, `git@github.com:o/r.git`,
/// `https://github.com/o/r`).
fn github_repo(source: &str) -> Option<(String, String)> {
    let rest = if let Some(rest) = source.strip_prefix("git@") {
        rest.strip_prefix("github.com:")?.to_owned()
    } else {
        source.to_owned()
    };
    let path = match rest.split_once("://") {
        Some((_, after)) => {
            let (authority, path) = after.split_once('/').unwrap_or((after, ""));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            let host = host.strip_suffix(":443").unwrap_or(host);
            if !host.eq_ignore_ascii_case("github.com") {
                return None;
            }
            path.to_owned()
        }
        None => rest,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let owner = parts.next()?.to_owned();
    // 0.61 replaces the first `.git` only.
    let repo = parts.next()?.replacen(".git", "", 1);
    Some((owner, repo))
}
