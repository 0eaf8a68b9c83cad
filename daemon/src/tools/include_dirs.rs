//! `context.includeDirectories` of the user's settings as 0.61 reads them
//! (`~` expanded, relative entries against the workspace): extra roots of
//! a session, pinned like the workspace root, so file tools accept paths
//! beneath them. A directory that is missing, not a directory, or one no
//! workspace is meant to be (`/`, `/proc`...) is left out and reported,
//! never fatal. The workspace's own settings are not read for it: a
//! cloned repository must not widen what its sessions may touch.

use std::path::{Path, PathBuf};

use super::root::{PinnedRoot, unmeant_file_system, unmeant_root};

/// The include directories `settings` names, resolved (not yet opened).
pub fn named(settings: &serde_json::Value, workspace: &Path, home: &Path) -> Vec<PathBuf> {
    let Some(list) = settings
        .pointer("/context/includeDirectories")
        .and_then(serde_json::Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let expanded = match s.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                    home.join(rest.trim_start_matches('/'))
                }
                _ => PathBuf::from(s),
            };
            if expanded.is_absolute() {
                expanded
            } else {
                workspace.join(expanded)
            }
        })
        .collect()
}

/// Whether `settings` asks for memory from the include directories
/// (`context.loadMemoryFromIncludeDirectories`, default false).
pub fn load_memory(settings: &serde_json::Value) -> bool {
    settings
        .pointer("/context/loadMemoryFromIncludeDirectories")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// The include directories whose memory files load too (0.61's
/// `context.loadMemoryFromIncludeDirectories`): those [`pin`] accepts,
/// when the user's settings ask for it; none otherwise.
pub fn memory_dirs(user_settings: &Path, workspace: &Path) -> Vec<PathBuf> {
    let asked = std::fs::read_to_string(user_settings)
        .ok()
        .and_then(|t| crate::jsonc::parse(&t).ok())
        .is_some_and(|settings| load_memory(&settings));
    if !asked {
        return Vec::new();
    }
    pin(user_settings, workspace)
        .0
        .iter()
        .map(|root| root.path().to_path_buf())
        .collect()
}

/// Reads the user's settings file and pins each include directory; the
/// problems say which were left out and why.
pub fn pin(user_settings: &Path, workspace: &Path) -> (Vec<PinnedRoot>, Vec<String>) {
    let home = user_settings
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"));
    let Some(settings) = std::fs::read_to_string(user_settings)
        .ok()
        .and_then(|t| crate::jsonc::parse(&t).ok())
    else {
        return (Vec::new(), Vec::new());
    };
    let mut roots: Vec<PinnedRoot> = Vec::new();
    let mut problems = Vec::new();
    for dir in named(&settings, workspace, home) {
        let shown = dir.display().to_string();
        let canonical = match dir.canonicalize() {
            Ok(c) if c.is_dir() => c,
            Ok(_) => {
                problems.push(format!(
                    "context.includeDirectories: {shown} is not a directory (left out)"
                ));
                continue;
            }
            Err(e) => {
                problems.push(format!(
                    "context.includeDirectories: {shown}: {e} (left out)"
                ));
                continue;
            }
        };
        if let Some(why) = unmeant_root(&canonical) {
            problems.push(format!(
                "context.includeDirectories: {shown}: {why} (left out)"
            ));
            continue;
        }
        if canonical == workspace || roots.iter().any(|r| r.path() == canonical) {
            continue;
        }
        match PinnedRoot::open(&canonical) {
            Ok(root) => match unmeant_file_system(&root) {
                Some(why) => problems.push(format!(
                    "context.includeDirectories: {shown}: {why} (left out)"
                )),
                None => roots.push(root),
            },
            Err(e) => problems.push(format!(
                "context.includeDirectories: {shown}: {e} (left out)"
            )),
        }
    }
    (roots, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_expanded_and_resolved_as_0_61() {
        let settings = serde_json::json!({"context": {"includeDirectories": [
            "~/lib", "/abs", "rel/dir", "", 3
        ]}});
        let got = named(&settings, Path::new("/ws"), Path::new("/home/u"));
        assert_eq!(
            got,
            vec![
                PathBuf::from("/home/u/lib"),
                PathBuf::from("/abs"),
                PathBuf::from("/ws/rel/dir")
            ]
        );
        assert!(!load_memory(&settings));
    }

    #[test]
    fn a_missing_directory_is_left_out_and_named() {
        let home = tempfile::tempdir().unwrap();
        let gemini = home.path().join(".gemini");
        std::fs::create_dir_all(&gemini).unwrap();
        let extra = tempfile::tempdir().unwrap();
        std::fs::write(
            gemini.join("settings.json"),
            serde_json::json!({"context": {"includeDirectories": [
                extra.path(), "/no/such/dir", "/"
            ]}})
            .to_string(),
        )
        .unwrap();
        let (roots, problems) = pin(&gemini.join("settings.json"), Path::new("/ws"));
        assert_eq!(roots.len(), 1);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("/no/such/dir"));
    }
}
