//! The session's plans directory (0.61's plan mode): where it is, how a
//! plan file's name is spelled into it, and its creation and pinning.
//!
//! 0.61 keeps plans in `~/.gemini/tmp/<project>/<session id>/plans/`,
//! `<project>` a short name it registers per folder. geminid keeps no such
//! registry: `<project>` is the folder's name made a slug as 0.61 makes it,
//! followed by eight hex digits of the SHA-256 of its path, so two folders
//! of one name never share it. The directory is created (0700) and pinned
//! when the session first enters plan mode; from then on it is one of the
//! session's roots (`ToolContext::set_plans`), and in plan mode the only
//! place write tools write (`ToolContext::resolve_for_write`).

use std::path::{Component, Path, PathBuf};

use super::error::{ToolError, ToolErrorKind};
use super::root::PinnedRoot;

/// `~/.gemini/tmp/<project>/<session id>/plans` for the session `session`
/// rooted at `root`.
pub fn plans_dir(user_gemini_dir: &Path, root: &Path, session: &str) -> PathBuf {
    user_gemini_dir
        .join("tmp")
        .join(project_id(root))
        .join(session)
        .join("plans")
}

/// The folder's slug (0.61's `slugify` of its name) and 8 hex digits of
/// its path's SHA-256.
fn project_id(root: &Path) -> String {
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut slug = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && slug.ends_with('-')) {
            slug.push(c);
        }
    }
    let slug = slug.trim_matches('-');
    let slug = if slug.is_empty() { "project" } else { slug };
    let digest = ring::digest::digest(&ring::digest::SHA256, root.as_os_str().as_encoded_bytes());
    let hex: String = digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{slug}-{hex}")
}

/// Creates the plans directory (owner only) and pins it.
pub fn pin(dir: &Path) -> Result<PinnedRoot, String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create the plans directory {}: {e}", dir.display()))?;
    let canonical = dir
        .canonicalize()
        .map_err(|e| format!("cannot resolve the plans directory {}: {e}", dir.display()))?;
    PinnedRoot::open(&canonical).map_err(|e| e.to_string())
}

/// How a plan path the model gave is spelled for resolution beneath the
/// plans directory, as 0.61's `resolveAndValidatePlanPath` reads it: an
/// absolute path as it is; a relative one relative to the project root
/// when that lands in the plans directory, else relative to the plans
/// directory. Resolution (confined to the pinned directory) decides.
pub fn spell(raw: &str, project_root: &Path, plans: &Path) -> String {
    let trimmed = raw.trim();
    if Path::new(trimmed).is_absolute() {
        return trimmed.to_owned();
    }
    let from_root = lexical(&project_root.join(trimmed));
    if from_root.starts_with(plans) {
        return from_root.to_string_lossy().into_owned();
    }
    lexical(&plans.join(trimmed)).to_string_lossy().into_owned()
}

/// `path` with `.` dropped and `..` applied lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// In plan mode, a write tool's declaration says what 0.61's says: it
/// writes plans only, in the plans directory.
pub fn for_plans_only(declaration: &mut serde_json::Value, plans: &Path) {
    let name = declaration["name"].as_str().unwrap_or_default();
    if name != "write_file" && name != "replace" {
        return;
    }
    let description = declaration["description"].as_str().unwrap_or_default();
    declaration["description"] = serde_json::Value::String(format!(
        "ONLY FOR PLANS: {description}. You are currently in Plan Mode and may ONLY use this \
         tool to write or update plans (.md files) in the plans directory: {}/. You cannot use \
         this tool to modify source code directly.",
        plans.display()
    ));
}

/// 0.61's refusal of a plan path outside the plans directory.
pub fn outside_error(raw: &str, plans: &Path) -> ToolError {
    ToolError::new(
        ToolErrorKind::PathNotAllowed,
        format!(
            "Access denied: plan path ({}) must be within the designated plans directory ({}).",
            raw.trim(),
            plans.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_per_folder_and_session() {
        let a = plans_dir(Path::new("/h/.gemini"), Path::new("/w/My App"), "s1");
        let b = plans_dir(Path::new("/h/.gemini"), Path::new("/x/My App"), "s1");
        assert!(a.starts_with("/h/.gemini/tmp"), "{a:?}");
        assert!(a.ends_with("s1/plans"), "{a:?}");
        let project = a.components().nth(4).unwrap().as_os_str().to_string_lossy();
        assert!(project.starts_with("my-app-"), "{project}");
        assert_ne!(a, b, "two folders of one name never share plans");
        let odd = plans_dir(Path::new("/h/.gemini"), Path::new("/"), "s");
        assert!(odd.to_string_lossy().contains("/project-"), "{odd:?}");
    }

    #[test]
    fn write_tools_say_they_write_plans_only() {
        let mut write = serde_json::json!({"name": "write_file", "description": "Writes."});
        let mut read = serde_json::json!({"name": "read_file", "description": "Reads."});
        for_plans_only(&mut write, Path::new("/p/plans"));
        for_plans_only(&mut read, Path::new("/p/plans"));
        assert!(
            write["description"]
                .as_str()
                .unwrap()
                .starts_with("ONLY FOR PLANS: Writes.. You are currently in Plan Mode")
        );
        assert!(write["description"].as_str().unwrap().contains("/p/plans/"));
        assert_eq!(read["description"], "Reads.");
    }

    #[test]
    fn plan_paths_are_spelled_as_0_61_reads_them() {
        let root = Path::new("/w");
        let plans = Path::new("/h/.gemini/tmp/w-1/s/plans");
        assert_eq!(
            spell("plan.md", root, plans),
            "/h/.gemini/tmp/w-1/s/plans/plan.md"
        );
        assert_eq!(
            spell(" ./a.md ", root, plans),
            "/h/.gemini/tmp/w-1/s/plans/a.md"
        );
        assert_eq!(spell("/etc/x.md", root, plans), "/etc/x.md");
        // Out of the directory by `..`: spelled outside, so refused.
        assert_eq!(spell("../../x.md", root, plans), "/h/.gemini/tmp/w-1/x.md");
        // A custom directory inside the project, named from its root.
        let inside = Path::new("/w/.plans");
        assert_eq!(spell(".plans/p.md", root, inside), "/w/.plans/p.md");
    }
}
