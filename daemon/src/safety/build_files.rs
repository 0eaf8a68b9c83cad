//! Build files, as Gemini CLI 0.61 knows them (`utils/buildFileUtils.js`):
//! an edit of one asks a person even in autoEdit and yolo.

use std::path::Path;

/// Basenames compared exactly and case-sensitively.
const EXACT: &[&str] = &[
    // Bazel/Blaze
    "BUILD",
    "BUILD.bazel",
    "WORKSPACE",
    "WORKSPACE.bazel",
    "MODULE.bazel",
    ".bazelrc",
    ".blazerc",
    // Make/CMake
    "Makefile",
    "makefile",
    "GNUmakefile",
    "CMakeLists.txt",
    // Node
    "package.json",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    // Python
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    // Go
    "go.mod",
    "go.sum",
    // Rust
    "Cargo.toml",
    "Cargo.lock",
    // JVM
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    // Containers
    "Dockerfile",
    "Containerfile",
];

/// Extensions (lowercased) of build files.
const EXTENSIONS: &[&str] = &["bzl", "bazel", "bzlmod", "mk", "cmake"];

/// Whether `path` names a build file: only its last component counts.
pub fn is_build_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name.trim_end_matches('\0');
    if EXACT.contains(&name)
        || name.starts_with("Dockerfile.")
        || name.starts_with("Containerfile.")
    {
        return true;
    }
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The words in a tool name that make it an edit tool for this check
/// (`mcp_srv_update_file` is one; camelCase `writeFile` is a single word
/// and is not, exactly as in the reference).
const EDIT_WORDS: &[&str] = &[
    "write", "edit", "replace", "patch", "update", "create", "append", "save",
];

/// Whether a tool of this name edits files, by the reference's rule.
pub fn is_edit_tool_name(name: &str) -> bool {
    matches!(name, "write_file" | "replace")
        || name
            .to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| EDIT_WORDS.contains(&word))
}

/// The file a call names, as the reference reads it: `file_path`, else
/// `path`, `filePath`, `file`.
pub fn target_of(args: &serde_json::Value) -> Option<&str> {
    ["file_path", "path", "filePath", "file"]
        .iter()
        .find_map(|key| args.get(key).and_then(serde_json::Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_list() {
        for p in [
            "Cargo.toml",
            "/w/sub/package.json",
            "Makefile",
            "pom.xml",
            "rules.mk",
            "x.BZL",
            "Dockerfile.dev",
            "Containerfile.prod",
            "CMakeLists.txt",
            "go.sum",
            "/w/a/BUILD",
        ] {
            assert!(is_build_file(Path::new(p)), "{p}");
        }
        for p in [
            "cargo.toml",
            "settings.toml",
            "config.json",
            "BUILD.gn",
            "tsconfig.json",
            "src/main.rs",
            "Dockerfile/x",
            "",
        ] {
            assert!(!is_build_file(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn edit_tools_by_name() {
        for n in [
            "write_file",
            "replace",
            "mcp_srv_update_file",
            "fs__create-dir",
            "Save",
        ] {
            assert!(is_edit_tool_name(n), "{n}");
        }
        for n in [
            "read_file",
            "writeFile",
            "run_shell_command",
            "glob",
            "rewrite",
        ] {
            assert!(!is_edit_tool_name(n), "{n}");
        }
    }
}
