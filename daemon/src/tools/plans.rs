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

/// The folders of a project's `.gemini` Gemini CLI takes instructions
/// from (a plan written there would be read as one).
const INSTRUCTION_DIRS: &[&str] = &[
    "agents",
    "commands",
    "skills",
    "policies",
    "extensions",
    "hooks",
    "tmp",
];

/// `general.plan.directory` of the settings document `settings` (the file
/// `file`) for the project `root` (canonical): `None` when not set, else
/// the directory or why it is refused (file and field named; the caller
/// keeps the managed directory). As 0.61: relative to the project root,
/// and inside it. Stricter: not the root itself, not in `.git`, not
/// `.gemini` nor one of its instruction folders, and no symbolic link on
/// the way (the part that exists is its own real path).
pub fn configured_dir(
    settings: &serde_json::Value,
    file: &str,
    root: &Path,
) -> Option<Result<PathBuf, String>> {
    let refuse = |why: String| {
        Some(Err(format!(
            "{file}: `general.plan.directory` {why}; plans stay in the managed directory under ~/.gemini/tmp"
        )))
    };
    let raw = match settings.pointer("/general/plan/directory") {
        None | Some(serde_json::Value::Null) => return None,
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => return None,
        Some(serde_json::Value::String(s)) => s.trim(),
        Some(other) => return refuse(format!("must be a path, got {other}")),
    };
    let dir = lexical(&root.join(raw));
    let Ok(inside) = dir.strip_prefix(root) else {
        return refuse(format!(
            "`{raw}` resolves to {}, which is outside the project root {}",
            dir.display(),
            root.display()
        ));
    };
    let names: Vec<String> = inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() {
        return refuse(format!(
            "`{raw}` is the project root itself: plan mode could write any Markdown file of the project"
        ));
    }
    if names.iter().any(|n| n == ".git") {
        return refuse(format!("`{raw}` is inside .git"));
    }
    if let Some(at) = names.iter().position(|n| n == ".gemini") {
        match names.get(at + 1) {
            None => return refuse(format!("`{raw}` is a .gemini folder itself")),
            Some(next) if INSTRUCTION_DIRS.contains(&next.as_str()) => {
                return refuse(format!(
                    "`{raw}` is inside .gemini/{next}, which Gemini CLI reads instructions from"
                ));
            }
            Some(_) => {}
        }
    }
    // Every part that exists must be its own real path: a link could lead
    // out of the project or into .git.
    let mut at = root.to_path_buf();
    for name in &names {
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return refuse(format!("`{raw}`: {} is a symbolic link", at.display()));
            }
            Ok(meta) if !meta.is_dir() => {
                return refuse(format!("`{raw}`: {} is not a directory", at.display()));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return refuse(format!("`{raw}`: {}: {e}", at.display())),
        }
    }
    Some(Ok(dir))
}

/// [`configured_dir`] of the settings file at `path` (unreadable or broken
/// files are reported by the settings loader; here they set nothing).
pub fn configured_dir_in(path: &Path, root: &Path) -> Option<Result<PathBuf, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let value = crate::jsonc::parse(&text).ok()?;
    configured_dir(&value, &path.display().to_string(), root)
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
    fn a_configured_directory_must_be_a_real_folder_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let set = |value: serde_json::Value| {
            configured_dir(
                &serde_json::json!({"general": {"plan": {"directory": value}}}),
                "/h/settings.json",
                &root,
            )
        };
        assert_eq!(configured_dir(&serde_json::json!({}), "f", &root), None);
        assert_eq!(set(serde_json::json!(" ")), None);
        assert_eq!(
            set(serde_json::json!(".gemini/plans")),
            Some(Ok(root.join(".gemini/plans")))
        );
        let absolute = root.join("docs/plans").display().to_string();
        assert_eq!(
            set(serde_json::json!(absolute)),
            Some(Ok(root.join("docs/plans")))
        );
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(root.join(".git"), root.join("gitlink")).unwrap();
        std::os::unix::fs::symlink("/tmp", root.join("out")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        for (value, why) in [
            (
                serde_json::json!("../elsewhere"),
                "outside the project root",
            ),
            (serde_json::json!("/etc"), "outside the project root"),
            (serde_json::json!("."), "the project root itself"),
            (serde_json::json!("a/.."), "the project root itself"),
            (serde_json::json!(".git/plans"), "inside .git"),
            (serde_json::json!(".gemini"), ".gemini folder itself"),
            (serde_json::json!(".gemini/agents"), ".gemini/agents"),
            (serde_json::json!(".gemini/commands/x"), ".gemini/commands"),
            (serde_json::json!("gitlink"), "symbolic link"),
            (serde_json::json!("out/plans"), "symbolic link"),
            (serde_json::json!("file/plans"), "not a directory"),
            (serde_json::json!(7), "must be a path"),
        ] {
            match set(value.clone()) {
                Some(Err(e)) => {
                    assert!(e.contains(why), "{value}: {e}");
                    assert!(
                        e.starts_with("/h/settings.json: `general.plan.directory`"),
                        "{e}"
                    );
                }
                other => panic!("{value}: {other:?}"),
            }
        }
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
