//! The `.env` file Gemini CLI 0.61 reads for a workspace, and its parsing.
//!
//! Which file: from the workspace upwards, in each directory
//! `.gemini/.env` first, then `.env`; at the filesystem root, the home
//! directory's `.gemini/.env`, then `~/.env`. Only the first file found is
//! read (files are not merged), and a variable already in the daemon's
//! environment wins over the file. A project file (one not inside a
//! `.gemini` directory) may not set `advanced.excludedEnvVars` (default
//! `DEBUG`, `DEBUG_MODE`).
//!
//! Stricter than the reference: a file found in a workspace (its `.env`
//! or its `.gemini/.env`) may not move the model's endpoint
//! (`GOOGLE_GEMINI_BASE_URL`, `GOOGLE_VERTEX_BASE_URL`), since a cloned
//! repository could otherwise send the user's key to a host of its
//! choosing; those come from the environment, the user's own
//! `~/.gemini/.env` or `~/.env`, or settings.
//!
//! Pure parsing; the finder is the only IO, a few `stat`s per lookup.

use std::path::{Path, PathBuf};

/// Variables that only the user's own files may set.
pub const ENDPOINT_VARS: [&str; 2] = ["GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"];

/// 0.61's `advanced.excludedEnvVars` default.
pub const DEFAULT_EXCLUDED: [&str; 2] = ["DEBUG", "DEBUG_MODE"];

/// One `.env` file, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DotEnv {
    pub path: PathBuf,
    /// In file order; a later duplicate wins, as in dotenv.
    pub vars: Vec<(String, String)>,
    /// A project's file in 0.61's sense (not inside a `.gemini`
    /// directory): excluded variables are not read from it.
    pub project: bool,
    /// The user's own file (`~/.env`, `~/.gemini/.env`), not one a
    /// workspace brought.
    pub users_own: bool,
}

impl DotEnv {
    /// The value of `name` the file supplies, with the exclusions for
    /// project files applied.
    pub fn get(&self, name: &str, excluded: &[String]) -> Option<&str> {
        if self.refuses(name, excluded) {
            return None;
        }
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.trim().is_empty())
    }

    /// The variables the file sets but may not.
    pub fn refused(&self, excluded: &[String]) -> Vec<&str> {
        self.vars
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| self.refuses(k, excluded))
            .collect()
    }

    fn refuses(&self, name: &str, excluded: &[String]) -> bool {
        (self.project && excluded.iter().any(|e| e == name))
            || (!self.users_own && ENDPOINT_VARS.contains(&name))
    }
}

/// The file 0.61 would read for `workspace`, if any.
pub fn find(workspace: &Path, home: &Path) -> Option<PathBuf> {
    let mut dir = Some(workspace);
    while let Some(current) = dir {
        for candidate in [current.join(".gemini").join(".env"), current.join(".env")] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        dir = current.parent();
    }
    find_home(home)
}

/// The user's own file 0.61 falls back to (`~/.gemini/.env`, then
/// `~/.env`): what a child of no workspace gets (a user-scope MCP server).
pub fn find_home(home: &Path) -> Option<PathBuf> {
    [home.join(".gemini").join(".env"), home.join(".env")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Whether `path` is a project file in 0.61's sense (not in `.gemini/`).
fn is_project_file(path: &Path) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .is_none_or(|n| n != ".gemini")
}

/// Whether `path` is one of the user's own files, not a workspace's.
fn is_users_own(path: &Path, home: &Path) -> bool {
    path == home.join(".env") || path == home.join(".gemini").join(".env")
}

/// Parses dotenv text: `KEY=value` lines, an optional `export ` prefix,
/// `#` comments, single-, double- and back-quoted values (double quotes
/// expand `\n`), unquoted values ending at ` #`. Lines that are not
/// assignments are skipped, as dotenv does.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, rest)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty()
            || key.starts_with('#')
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        {
            continue;
        }
        let rest = rest.trim_start();
        let value = match rest.chars().next() {
            Some(quote @ ('"' | '\'' | '`')) => {
                let mut body = rest[1..].to_owned();
                // A quoted value may span lines until its closing quote.
                while !body.contains(quote) {
                    match lines.next() {
                        Some(next) => {
                            body.push('\n');
                            body.push_str(next);
                        }
                        None => break,
                    }
                }
                let end = body.find(quote).unwrap_or(body.len());
                let inner = &body[..end];
                if quote == '"' {
                    inner.replace("\\n", "\n").replace("\\r", "\r")
                } else {
                    inner.to_owned()
                }
            }
            _ => {
                let end = rest.find(" #").unwrap_or(rest.len());
                rest[..end].trim_end().to_owned()
            }
        };
        vars.push((key.to_owned(), value));
    }
    vars
}

/// Reads `path` as a `.env` file.
pub fn read(path: &Path, home: &Path) -> std::io::Result<DotEnv> {
    let text = std::fs::read_to_string(path)?;
    Ok(DotEnv {
        path: path.to_path_buf(),
        vars: parse(&text),
        project: is_project_file(path),
        users_own: is_users_own(path, home),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_dotenv_parses() {
        let text = "# comment\nGEMINI_API_KEY=abc\nexport GOOGLE_CLOUD_PROJECT=\"my-proj\"\n\
                    SPACED = 'x y' \nTRAIL=v # note\nMULTI=\"a\nb\"\nESC=\"1\\n2\"\nnot a line\nEMPTY=\n";
        let vars = parse(text);
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GEMINI_API_KEY"), Some("abc"));
        assert_eq!(get("GOOGLE_CLOUD_PROJECT"), Some("my-proj"));
        assert_eq!(get("SPACED"), Some("x y"));
        assert_eq!(get("TRAIL"), Some("v"));
        assert_eq!(get("MULTI"), Some("a\nb"));
        assert_eq!(get("ESC"), Some("1\n2"));
        assert_eq!(get("EMPTY"), Some(""));
        assert_eq!(vars.len(), 7);
    }

    #[test]
    fn finds_the_first_file_upwards_then_home() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let ws = root.path().join("repo/sub");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        assert_eq!(find(&ws, &home), None);
        std::fs::write(home.join(".env"), "A=1").unwrap();
        assert_eq!(find(&ws, &home), Some(home.join(".env")));
        std::fs::write(home.join(".gemini/.env"), "A=1").unwrap();
        assert_eq!(find(&ws, &home), Some(home.join(".gemini/.env")));
        std::fs::write(root.path().join("repo/.env"), "A=1").unwrap();
        assert_eq!(find(&ws, &home), Some(root.path().join("repo/.env")));
        std::fs::create_dir_all(root.path().join("repo/.gemini")).unwrap();
        std::fs::write(root.path().join("repo/.gemini/.env"), "A=1").unwrap();
        assert_eq!(
            find(&ws, &home),
            Some(root.path().join("repo/.gemini/.env"))
        );
    }

    #[test]
    fn a_project_file_may_not_move_the_endpoint_or_set_excluded_vars() {
        let home = Path::new("/home/u");
        let excluded: Vec<String> = DEFAULT_EXCLUDED.iter().map(|s| (*s).to_owned()).collect();
        let vars = parse("GEMINI_API_KEY=k\nGOOGLE_GEMINI_BASE_URL=https://evil\nDEBUG=1\n");
        let file = |path: &str| DotEnv {
            path: path.into(),
            vars: vars.clone(),
            project: is_project_file(Path::new(path)),
            users_own: is_users_own(Path::new(path), home),
        };
        let project = file("/home/u/repo/.env");
        assert!(project.project && !project.users_own);
        assert_eq!(project.get("GEMINI_API_KEY", &excluded), Some("k"));
        assert_eq!(project.get("GOOGLE_GEMINI_BASE_URL", &excluded), None);
        assert_eq!(project.get("DEBUG", &excluded), None);
        assert_eq!(
            project.refused(&excluded),
            vec!["GOOGLE_GEMINI_BASE_URL", "DEBUG"]
        );
        // 0.61 reads excluded variables from any `.gemini/.env`; the
        // endpoint only from the user's own files.
        let repo_gemini = file("/home/u/repo/.gemini/.env");
        assert_eq!(repo_gemini.get("DEBUG", &excluded), Some("1"));
        assert_eq!(repo_gemini.get("GOOGLE_GEMINI_BASE_URL", &excluded), None);
        assert_eq!(file("/home/u/.env").get("DEBUG", &excluded), None);
        for own in ["/home/u/.env", "/home/u/.gemini/.env"] {
            assert_eq!(
                file(own).get("GOOGLE_GEMINI_BASE_URL", &excluded),
                Some("https://evil"),
                "{own}"
            );
        }
    }
}
