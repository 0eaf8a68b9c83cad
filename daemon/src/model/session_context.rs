//! The session context part: what the model is told about where it runs
//! before the conversation (the date, the OS, the temporary directory,
//! the workspace directories and a bounded tree of their folders), sent
//! as the first user content of every request and never stored. The
//! walk (`folder_tree`) is the IO edge; the rest is pure.

use std::path::Path;

/// At most this many files and folders in the tree (the reference's).
pub const MAX_TREE_ITEMS: usize = 200;
/// How deep the tree goes.
const MAX_DEPTH: usize = 4;

/// What goes into the part.
pub struct SessionContext<'a> {
    /// Milliseconds since the Unix epoch.
    pub now_ms: u64,
    pub os: &'a str,
    pub temp_dir: &'a str,
    pub workspaces: &'a [String],
    /// Each workspace's tree, as `folder_tree` drew it.
    pub trees: &'a [String],
}

/// The part's text.
pub fn render(ctx: &SessionContext<'_>) -> String {
    let mut out = String::from("<session_context>\n");
    out.push_str(
        "This is geminid, running the Gemini CLI tools for this session. The context of our chat:\n",
    );
    out.push_str(&format!("Today's date is {}.\n", date(ctx.now_ms)));
    out.push_str(&format!("My operating system is: {}\n", ctx.os));
    out.push_str(&format!(
        "The temporary directory for scratch files is: {}\n",
        ctx.temp_dir
    ));
    out.push_str("- **Workspace Directories:**\n");
    for dir in ctx.workspaces {
        out.push_str(&format!("  - {dir}\n"));
    }
    out.push_str("- **Directory Structure:**\n\n");
    for tree in ctx.trees {
        out.push_str(tree);
        out.push('\n');
    }
    out.push_str("</session_context>");
    out
}

/// `Thursday, November 26, 2026` (UTC).
pub fn date(now_ms: u64) -> String {
    const DAYS: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let days = (now_ms / 86_400_000) as i64;
    // Civil from days (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {} {day}, {year}",
        DAYS[(days.rem_euclid(7)) as usize],
        MONTHS[(month - 1) as usize]
    )
}

/// A tree line per entry (in walk order: a folder, then what it holds).
/// `entries` are paths relative to the root, `/`-terminated for folders.
pub fn draw_tree(root: &str, entries: &[String], truncated: bool) -> String {
    let mut out = format!("Showing up to {MAX_TREE_ITEMS} items (files + folders).\n\n{root}/\n");
    for entry in entries {
        let depth = entry.trim_end_matches('/').matches('/').count();
        let name = entry
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(entry);
        let slash = if entry.ends_with('/') { "/" } else { "" };
        out.push_str(&format!("{}├───{name}{slash}\n", "│   ".repeat(depth)));
    }
    if truncated {
        out.push_str("...\n");
    }
    out
}

/// The workspace's entries (IO): respects `.gitignore`, `.geminiignore`
/// and hidden names; never follows links; at most [`MAX_TREE_ITEMS`].
pub fn folder_tree(root: &Path) -> String {
    let mut entries = Vec::new();
    let mut truncated = false;
    let walk = ignore::WalkBuilder::new(root)
        .max_depth(Some(MAX_DEPTH))
        .follow_links(false)
        .add_custom_ignore_filename(".geminiignore")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walk.flatten() {
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        if entries.len() >= MAX_TREE_ITEMS {
            truncated = true;
            break;
        }
        let mut name = rel.to_string_lossy().into_owned();
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            name.push('/');
        }
        entries.push(name);
    }
    draw_tree(&root.display().to_string(), &entries, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(date(0), "Thursday, January 1, 1970");
        // 2026-11-26T00:47:01Z
        assert_eq!(date(1_795_654_021_000), "Thursday, November 26, 2026");
        assert_eq!(date(951_782_400_000), "Tuesday, February 29, 2000");
    }

    #[test]
    fn the_part_names_everything_and_the_tree_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..250 {
            std::fs::write(dir.path().join(format!("f{i:03}.txt")), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "f1*.txt\n").unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let tree = folder_tree(dir.path());
        assert!(tree.contains("├───f000.txt"), "{tree}");
        assert!(!tree.contains("f100.txt"), "ignored files are left out");
        assert!(!tree.contains(".git"), "hidden names are left out");
        assert!(tree.lines().filter(|l| l.contains("├───")).count() <= MAX_TREE_ITEMS);
        let text = render(&SessionContext {
            now_ms: 0,
            os: "linux",
            temp_dir: "/tmp",
            workspaces: &["/ws".to_owned()],
            trees: &[tree],
        });
        assert!(text.starts_with("<session_context>") && text.ends_with("</session_context>"));
        assert!(text.contains("January 1, 1970") && text.contains("  - /ws\n"));
    }
}
