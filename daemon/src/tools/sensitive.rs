//! Paths no file tool reads, lists or writes, whatever the policy says:
//! `.env` files, `.git` (its config and hooks run commands), `node_modules`
//! and CI credential files (`gha-creds-*.json`), at any depth and in any
//! case, as Gemini CLI 0.61 refuses them (`hasBlockedPathSegment`). A pure
//! check of the path relative to its workspace root, after resolution.

use std::path::Path;

use super::error::{ToolError, ToolErrorKind};

/// The segment of `rel` that makes it sensitive, if one does. Segments are
/// compared as 0.61 compares them: split on `/` and `\`, an NTFS stream
/// suffix (`:x`) and trailing dots and spaces dropped, case ignored, and
/// 8.3 short names (`GIT~1`) counted too.
pub fn blocked_segment(rel: &Path) -> Option<String> {
    let text = rel.to_string_lossy();
    text.split(['/', '\\'])
        .find(|segment| is_blocked(segment))
        .map(str::to_owned)
}

fn is_blocked(segment: &str) -> bool {
    let head = segment.split(':').next().unwrap_or_default();
    let clean = head.trim_end_matches([' ', '.']).to_lowercase();
    matches!(clean.as_str(), ".git" | ".env" | "node_modules")
        || short_name(&clean, "git", "gi", false)
        || short_name(&clean, "env", "en", false)
        || short_name(&clean, "node_m", "no", false)
        || (clean.starts_with("gha-creds-") && clean.ends_with(".json"))
        || short_name(&clean, "gha-cr", "gh", true)
}

/// An 8.3 short name of a blocked name: `<six>~N` or `<two><4 hex>~N`
/// (`json` short names end in `.jso` or `.json`).
fn short_name(clean: &str, six: &str, two: &str, json: bool) -> bool {
    let clean = if json {
        match clean
            .strip_suffix(".json")
            .or_else(|| clean.strip_suffix(".jso"))
        {
            Some(stem) => stem,
            None => return false,
        }
    } else {
        clean
    };
    let Some((stem, number)) = clean.split_once('~') else {
        return false;
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    stem == six
        || stem.strip_prefix(two).is_some_and(|hex| {
            hex.len() == 4 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

/// Refuses `path` (resolved, spelled under `root`) when it is sensitive.
pub fn refuse_sensitive(root: &Path, path: &Path, param: &str) -> Result<(), ToolError> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    match blocked_segment(rel) {
        None => Ok(()),
        Some(segment) => Err(sensitive_error(path, param, &segment)),
    }
}

pub fn sensitive_error(path: &Path, param: &str, segment: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::PathNotAllowed,
        format!(
            "Access to sensitive path \"{}\" in argument \"{param}\" is blocked: `{segment}` \
             (.env files, .git, node_modules and gha-creds-*.json are never read or written by file tools)",
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_segments() {
        let blocked = [
            ".env",
            "sub/.env/inner.txt",
            ".ENV",
            ".env.",
            ".env  ",
            ".env:stream",
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            "a\\.git\\config",
            "node_modules/x/a.js",
            "a/NODE_MODULES",
            "gha-creds-abc.json",
            "ci/GHA-CREDS-1.JSON",
            "GIT~1/config",
            "gi1a2b~3",
            "ENV~1",
            "NODE_M~2",
            "no12ab~1/x",
            "GHA-CR~1.JSO",
            "gh00ff~12.json",
        ];
        for p in blocked {
            assert!(blocked_segment(Path::new(p)).is_some(), "{p}");
        }
        let allowed = [
            ".env.local",
            ".envrc",
            ".gitignore",
            ".github/workflows/ci.yml",
            ".vscode/settings.json",
            ".idea",
            "env",
            "git",
            "node_module",
            "gha-creds.json",
            "gha-creds-x.txt",
            "git~",
            "git~x",
            "gizzzz~1",
            "src/main.rs",
            "",
        ];
        for p in allowed {
            assert_eq!(blocked_segment(Path::new(p)), None, "{p}");
        }
    }
}
