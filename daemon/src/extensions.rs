//! Installed extensions as 0.61 reads them: `~/.gemini/extensions/<dir>/`
//! with a `gemini-extension.json` manifest (or a linked install:
//! `.gemini-extension-install.json` `{"type": "link", "source": ...}`),
//! enabled unless `extensions/extension-enablement.json` disables it for
//! the path (0.61's overrides: `"!/home/u/*"` disables below a directory,
//! `"/w/*"` enables again, the last matching one wins).
//!
//! What each contributes: `mcpServers` (started like the user's, which win
//! on a name clash; `trust` ignored), its context file (`contextFileName`,
//! else `GEMINI.md` when present) added to memory, `excludeTools` (deny
//! rules, `policy/live.rs`), and `policies/*.toml` (the Extension tier).
//! `${extensionPath}` and `${/}` / `${pathSeparator}` are substituted in
//! the manifest, as 0.61 does; `${workspacePath}` is kept until a
//! workspace is known: an MCP server entry naming it runs once per
//! workspace ([`names_workspace`], [`for_workspace`]). This module reads
//! the files; callers turn the result into servers, rules and memory.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::problems::ConfigProblem;

/// The manifest's file name.
pub const MANIFEST: &str = "gemini-extension.json";
/// A linked install's metadata.
pub const INSTALL_METADATA: &str = ".gemini-extension-install.json";
/// The enablement file in the extensions directory.
pub const ENABLEMENT: &str = "extension-enablement.json";

/// One installed extension.
#[derive(Debug, Clone, Default)]
pub struct Extension {
    /// The manifest's `name` (the directory's name when it has none).
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The directory under `~/.gemini/extensions`.
    pub install_dir: PathBuf,
    /// Where its files are (the link's source for a linked install).
    pub path: PathBuf,
    /// The manifest's `mcpServers`, variables substituted.
    pub mcp_servers: serde_json::Map<String, Value>,
    /// Context files that exist.
    pub context_files: Vec<PathBuf>,
    pub exclude_tools: Vec<String>,
    /// The manifest's `settings[].envVar`: the variables of its `.env`
    /// its stdio servers get (0.61's `resolvedSettings`).
    pub setting_vars: Vec<String>,
    /// `policies/` when it exists (read whether or not the manifest is).
    pub policy_dir: Option<PathBuf>,
    /// Enablement overrides for this extension, in order.
    pub overrides: Vec<String>,
    /// Something that may exclude tools could not be read: every tool
    /// asks until it is fixed.
    pub broken: bool,
    /// The manifest was read (a directory without one is no extension).
    pub loaded: bool,
    pub problems: Vec<ConfigProblem>,
    /// 0.61's id (`extension_id.rs`): names its
    /// keychain service.
    pub id: String,
    /// Each declared setting's `name`, by its `envVar`.
    pub setting_names: Vec<(String, String)>,
    /// The declared settings marked `sensitive: true` (their values are
    /// in the keychain).
    pub sensitive_vars: Vec<String>,
    /// `experimental.extensionConfig` is false: its settings get no
    /// values (`extension_settings::scope_values`), as in 0.61.
    pub settings_off: bool,
}

impl Extension {
    /// Whether it is enabled for `dir` (0.61's `isEnabled`).
    pub fn enabled_for(&self, dir: &Path) -> bool {
        enabled_by(&self.overrides, dir)
    }

    /// The manifest file (a problem names it).
    pub fn manifest(&self) -> PathBuf {
        self.path.join(MANIFEST)
    }

    /// Where 0.61 keeps the values of the extension's settings.
    pub fn env_file(&self) -> PathBuf {
        self.install_dir.join(".env")
    }
}

/// Every extension under `dir`, by directory name; problems of the
/// enablement file are returned apart.
pub fn load_all(dir: &Path) -> (Vec<Extension>, Vec<ConfigProblem>) {
    let (enablement, mut problems) = read_enablement(&dir.join(ENABLEMENT));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (Vec::new(), problems);
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for install_dir in dirs {
        let mut ext = load_one(&install_dir);
        ext.overrides = enablement
            .get(&ext.name)
            .and_then(|v| v.get("overrides"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        out.push(ext);
    }
    problems.extend(duplicate_names(&out));
    (out, problems)
}

/// The files whose edits change what [`load_all`] returns.
pub fn watched_files(dir: &Path, found: &[Extension]) -> Vec<PathBuf> {
    let mut files = vec![dir.join(ENABLEMENT)];
    for ext in found {
        files.push(ext.install_dir.join(MANIFEST));
        files.push(ext.install_dir.join(INSTALL_METADATA));
        files.push(ext.manifest());
        files.push(ext.env_file());
        files.extend(ext.context_files.iter().cloned());
        // Its hooks (`hooks/book.rs` reads them).
        files.push(ext.path.join("hooks").join("hooks.json"));
    }
    // Sensitive settings' values (0.61's FileKeychain).
    if let Some(gemini_dir) = dir.parent() {
        files.push(gemini_dir.join(crate::keychain::CREDENTIALS_FILE));
    }
    files.sort();
    files.dedup();
    files
}

fn read_enablement(path: &Path) -> (serde_json::Map<String, Value>, Vec<ConfigProblem>) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Default::default(),
        Err(e) => {
            return (
                Default::default(),
                vec![
                    ConfigProblem::new(path.display().to_string(), format!("cannot read: {e}"))
                        .kept("every extension is enabled"),
                ],
            );
        }
    };
    match crate::jsonc::parse(&text) {
        Ok(Value::Object(map)) => (map, Vec::new()),
        Ok(_) => (
            Default::default(),
            vec![
                ConfigProblem::new(path.display().to_string(), "not a JSON object")
                    .kept("every extension is enabled"),
            ],
        ),
        Err(e) => (
            Default::default(),
            vec![
                ConfigProblem::new(
                    path.display().to_string(),
                    format!("not valid JSON: {}", e.message),
                )
                .at_line(Some(e.line))
                .kept("every extension is enabled"),
            ],
        ),
    }
}

fn load_one(install_dir: &Path) -> Extension {
    let dir_name = install_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut ext = Extension {
        name: dir_name.clone(),
        install_dir: install_dir.to_path_buf(),
        path: install_dir.to_path_buf(),
        ..Default::default()
    };
    // A linked install: the files are at the link's source.
    let metadata = install_dir.join(INSTALL_METADATA);
    let mut install: (Option<String>, Option<String>) = (None, None);
    if let Ok(text) = std::fs::read_to_string(&metadata) {
        match crate::jsonc::parse(&text) {
            Ok(value) => {
                let field = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
                install = (field("source"), field("type"));
                if let (Some(source), Some("link")) = (&install.0, install.1.as_deref()) {
                    ext.path = PathBuf::from(source);
                }
            }
            Err(e) => ext.problems.push(
                ConfigProblem::new(
                    metadata.display().to_string(),
                    format!("not valid JSON: {}", e.message),
                )
                .at_line(Some(e.line)),
            ),
        }
    }
    // Policies load even beside a manifest that cannot be read (they may
    // deny): never looser.
    let policies = ext.path.join("policies");
    if policies.is_dir() {
        ext.policy_dir = Some(policies);
    }
    let manifest = ext.manifest();
    let text = match std::fs::read_to_string(&manifest) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            ext.problems.push(
                ConfigProblem::new(manifest.display().to_string(), "no manifest")
                    .kept("the directory is not an extension"),
            );
            return ext;
        }
        Err(e) => {
            ext.broken = true;
            ext.problems.push(
                ConfigProblem::new(manifest.display().to_string(), format!("cannot read: {e}"))
                    .kept("the extension is not loaded"),
            );
            return ext;
        }
    };
    let value = match crate::jsonc::parse(&text) {
        Ok(value) => hydrate(value, &ext.path),
        Err(e) => {
            ext.broken = true;
            ext.problems.push(
                ConfigProblem::new(
                    manifest.display().to_string(),
                    format!("not valid JSON: {}", e.message),
                )
                .at_line(Some(e.line))
                .kept("the extension is not loaded"),
            );
            return ext;
        }
    };
    ext.loaded = true;
    read_manifest(&mut ext, &value, &manifest, &dir_name);
    ext.id =
        crate::extension_id::extension_id(&ext.name, install.0.as_deref(), install.1.as_deref());
    ext
}

fn read_manifest(ext: &mut Extension, value: &Value, manifest: &Path, dir_name: &str) {
    let file = manifest.display().to_string();
    let mut problem = |message: String, kept: &str| {
        ext.problems
            .push(ConfigProblem::new(file.clone(), message).kept(kept));
    };
    match value.get("name").and_then(Value::as_str) {
        Some(name) if !name.trim().is_empty() => ext.name = name.to_owned(),
        _ => problem("no `name`".to_owned(), "the directory's name is used"),
    }
    if ext.name != dir_name && ext.path == ext.install_dir {
        problem(
            format!(
                "`name` {:?} is not the directory's name {dir_name:?}",
                ext.name
            ),
            "the manifest's name is used",
        );
    }
    ext.version = value
        .get("version")
        .and_then(Value::as_str)
        .map(str::to_owned);
    ext.description = value
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match value.get("mcpServers") {
        None => {}
        Some(Value::Object(map)) => ext.mcp_servers = map.clone(),
        Some(other) => problem(
            format!("mcpServers is {other}, not an object"),
            "no MCP server of it starts",
        ),
    }
    ext.setting_vars = value
        .get("settings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("envVar").and_then(Value::as_str))
        .filter(|v| !v.trim().is_empty())
        .map(str::to_owned)
        .collect();
    ext.setting_names = value
        .get("settings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let var = s.get("envVar").and_then(Value::as_str)?;
            let name = s.get("name").and_then(Value::as_str).unwrap_or(var);
            Some((var.to_owned(), name.to_owned()))
        })
        .collect();
    ext.sensitive_vars = value
        .get("settings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.get("sensitive").and_then(Value::as_bool) == Some(true))
        .filter_map(|s| s.get("envVar").and_then(Value::as_str))
        .filter(|v| !v.trim().is_empty())
        .map(str::to_owned)
        .collect();
    match value.get("excludeTools") {
        None => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) if !s.trim().is_empty() => ext.exclude_tools.push(s.to_owned()),
                    _ => {
                        ext.broken = true;
                        problem(
                            format!("excludeTools[{i}] is {item}, not a tool name"),
                            "every tool asks (denied when non-interactive) until it is fixed",
                        );
                    }
                }
            }
        }
        Some(other) => {
            ext.broken = true;
            problem(
                format!("excludeTools is {other}, not a list of tool names"),
                "every tool asks (denied when non-interactive) until it is fixed",
            );
        }
    }
    // `contextFileName`: one name or a list; else GEMINI.md when present.
    let names: Vec<String> = match value.get("contextFileName") {
        None => vec![crate::memory::DEFAULT_FILE_NAME.to_owned()],
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(other) => {
            problem(
                format!("contextFileName is {other}, not a file name"),
                "no context file of it is loaded",
            );
            Vec::new()
        }
    };
    let explicit = value.get("contextFileName").is_some();
    for name in names {
        let path = ext.path.join(&name);
        if path.is_file() {
            ext.context_files.push(path);
        } else if explicit {
            problem(
                format!("contextFileName {name:?} is not a file in the extension"),
                "no context from it",
            );
        }
    }
}

/// Substitutes `${extensionPath}`, `${/}` and `${pathSeparator}` in every
/// string of the manifest.
fn hydrate(value: Value, path: &Path) -> Value {
    match value {
        Value::String(s) => Value::String(
            s.replace("${extensionPath}", &path.display().to_string())
                .replace("${pathSeparator}", "/")
                .replace("${/}", "/"),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| hydrate(v, path)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, hydrate(v, path)))
                .collect(),
        ),
        other => other,
    }
}

/// The variable 0.61 replaces with the workspace's path.
pub const WORKSPACE_PATH: &str = "${workspacePath}";

/// Whether some string of `entry` (an MCP server entry: command, args,
/// env, cwd, url, headers, ...) names `${workspacePath}`.
pub fn names_workspace(entry: &Value) -> bool {
    match entry {
        Value::String(s) => s.contains(WORKSPACE_PATH),
        Value::Array(items) => items.iter().any(names_workspace),
        Value::Object(map) => map.values().any(names_workspace),
        _ => false,
    }
}

/// `entry` with `${workspacePath}` replaced by `root` in every string
/// (0.61's substitution, for the workspace a session opened).
pub fn for_workspace(entry: &Value, root: &Path) -> Value {
    match entry {
        Value::String(s) => Value::String(s.replace(WORKSPACE_PATH, &root.display().to_string())),
        Value::Array(items) => Value::Array(items.iter().map(|v| for_workspace(v, root)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), for_workspace(v, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Which extension servers run: the shared entries of each extension
/// enabled at home or in an open workspace, and for each open trusted
/// workspace where an extension is enabled, its entries naming
/// `${workspacePath}`, substituted for that workspace (0.61 connects no
/// MCP server in an untrusted folder: no instance is made for one).
#[derive(Default)]
pub struct ServerPlan<'a> {
    pub shared: Vec<(&'a Extension, serde_json::Map<String, Value>)>,
    pub per_workspace: Vec<(PathBuf, &'a Extension, serde_json::Map<String, Value>)>,
}

/// The servers of `found` with the user's `home`, the workspaces
/// sessions have `opened` and which of them are `trusted`.
pub fn server_plan<'a>(
    found: &'a [Extension],
    home: &Path,
    opened: &[PathBuf],
    trusted: &dyn Fn(&Path) -> bool,
) -> ServerPlan<'a> {
    let mut plan = ServerPlan::default();
    // A name an earlier extension in the plan declares is its (0.61 skips
    // the later one; reported by `server_name_clashes`).
    let mut claimed = std::collections::BTreeSet::new();
    for ext in found.iter().filter(|e| e.loaded) {
        let here: Vec<&PathBuf> = opened.iter().filter(|r| ext.enabled_for(r)).collect();
        if !ext.enabled_for(home) && here.is_empty() {
            continue;
        }
        let (per_workspace, shared): (Vec<_>, Vec<_>) = ext
            .mcp_servers
            .iter()
            .filter(|(name, _)| !claimed.contains(name.as_str()))
            .map(|(name, entry)| (name.clone(), entry.clone()))
            .partition(|(_, entry)| names_workspace(entry));
        claimed.extend(ext.mcp_servers.keys().map(String::as_str));
        if !shared.is_empty() {
            plan.shared.push((ext, shared.into_iter().collect()));
        }
        if per_workspace.is_empty() {
            continue;
        }
        for root in here.into_iter().filter(|r| trusted(r)) {
            let entries = per_workspace
                .iter()
                .map(|(name, entry)| (name.clone(), for_workspace(entry, root)))
                .collect();
            plan.per_workspace.push((root.clone(), ext, entries));
        }
    }
    plan
}

/// 0.61's overrides: `!` disables, a trailing `*` covers the directories
/// below, the last rule that matches decides; none: enabled.
pub fn enabled_by(overrides: &[String], dir: &Path) -> bool {
    let target = with_slashes(&dir.display().to_string());
    let mut enabled = true;
    for rule in overrides {
        let (disable, rest) = match rule.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, rule.as_str()),
        };
        let (below, base) = match rest.strip_suffix('*') {
            Some(base) => (true, base),
            None => (false, rest),
        };
        let base = with_slashes(base);
        let matches = if below {
            target.starts_with(&base)
        } else {
            target == base
        };
        if matches {
            enabled = !disable;
        }
    }
    enabled
}

fn with_slashes(path: &str) -> String {
    let mut out = String::new();
    if !path.starts_with('/') {
        out.push('/');
    }
    out.push_str(path);
    if !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// The MCP servers of loaded extensions that do not start because their
/// name is taken: by the user's settings (`user_servers`; 0.61 lets the
/// user's entry override the extension's) or by an extension read
/// before it (by directory name; 0.61 skips a server whose name another
/// extension already declared). Reported on the losing manifest.
pub fn server_name_clashes(found: &[Extension], user_servers: &[String]) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    let loaded: Vec<&Extension> = found.iter().filter(|e| e.loaded).collect();
    for (i, ext) in loaded.iter().enumerate() {
        for name in ext.mcp_servers.keys() {
            let problem = if user_servers.contains(name) {
                ConfigProblem::new(
                    ext.manifest().display().to_string(),
                    format!("MCP server {name:?} is also in the user settings"),
                )
                .kept("the user settings entry; this extension's entry does not start")
            } else if let Some(first) = loaded[..i]
                .iter()
                .find(|e| e.mcp_servers.contains_key(name))
            {
                ConfigProblem::new(
                    ext.manifest().display().to_string(),
                    format!(
                        "MCP server {name:?} is also declared by extension {:?} ({})",
                        first.name,
                        first.manifest().display()
                    ),
                )
                .kept(format!(
                    "the entry of {:?} (read first); this one does not start while that extension is enabled",
                    first.name
                ))
            } else {
                continue;
            };
            problems.push(problem);
        }
    }
    problems
}

fn duplicate_names(found: &[Extension]) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    for (i, ext) in found.iter().enumerate() {
        if found[..i].iter().any(|e| e.name == ext.name) {
            problems.push(
                ConfigProblem::new(
                    ext.manifest().display().to_string(),
                    format!("another extension is named {:?}", ext.name),
                )
                .kept("both are loaded; their MCP servers of the same name start once"),
            );
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enablement_overrides_as_0_61() {
        let rules = vec!["!/home/u/*".to_owned(), "/home/u/work/*".to_owned()];
        assert!(!enabled_by(&rules, Path::new("/home/u")));
        assert!(!enabled_by(&rules, Path::new("/home/u/other")));
        assert!(enabled_by(&rules, Path::new("/home/u/work/x")));
        assert!(enabled_by(&rules, Path::new("/elsewhere")));
        assert!(enabled_by(&[], Path::new("/x")));
        let exact = vec!["!/w/".to_owned()];
        assert!(!enabled_by(&exact, Path::new("/w")));
        assert!(enabled_by(&exact, Path::new("/w/sub")));
    }

    #[test]
    fn a_manifest_is_read_with_its_variables() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join("tools-ext");
        std::fs::create_dir_all(ext.join("policies")).unwrap();
        std::fs::write(
            ext.join(MANIFEST),
            r#"{"name": "tools-ext", "version": "1.2.0",
                "mcpServers": {"s": {"command": "node", "args": ["${extensionPath}${/}s.js"]}},
                "contextFileName": "CTX.md", "excludeTools": ["web_fetch"]}"#,
        )
        .unwrap();
        std::fs::write(ext.join("CTX.md"), "ctx").unwrap();
        std::fs::write(
            dir.path().join(ENABLEMENT),
            r#"{"tools-ext": {"overrides": ["!/nope/*"]}}"#,
        )
        .unwrap();
        let (found, problems) = load_all(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        let e = &found[0];
        assert!(e.problems.is_empty(), "{:?}", e.problems);
        assert_eq!(e.version.as_deref(), Some("1.2.0"));
        assert_eq!(e.context_files, vec![ext.join("CTX.md")]);
        assert_eq!(e.exclude_tools, vec!["web_fetch"]);
        assert_eq!(
            e.mcp_servers["s"]["args"][0],
            format!("{}/s.js", ext.display())
        );
        assert!(e.policy_dir.is_some());
        assert!(!e.enabled_for(Path::new("/nope/x")));
        assert!(e.enabled_for(Path::new("/yes")));
    }

    #[test]
    fn a_server_naming_the_workspace_is_substituted_per_workspace() {
        let entry = serde_json::json!({
            "command": "${workspacePath}/bin/srv",
            "args": ["--root", "${workspacePath}"],
            "env": {"ROOT": "at ${workspacePath}"},
            "timeout": 5
        });
        assert!(names_workspace(&entry));
        assert!(!names_workspace(
            &serde_json::json!({"command": "srv", "args": ["${x}"]})
        ));
        let done = for_workspace(&entry, Path::new("/w/a"));
        assert_eq!(done["command"], "/w/a/bin/srv");
        assert_eq!(done["args"][1], "/w/a");
        assert_eq!(done["env"]["ROOT"], "at /w/a");
        assert_eq!(done["timeout"], 5);
        assert!(!names_workspace(&done));
    }

    #[test]
    fn a_workspace_server_runs_once_per_open_workspace_where_enabled() {
        let ext = Extension {
            name: "e".into(),
            loaded: true,
            mcp_servers: serde_json::json!({
                "shared": {"command": "srv"},
                "mine": {"command": "srv", "env": {"ROOT": "${workspacePath}"}}
            })
            .as_object()
            .cloned()
            .unwrap(),
            overrides: vec!["!/w/off/*".into()],
            ..Default::default()
        };
        let found = [ext];
        let opened = [
            PathBuf::from("/w/a"),
            PathBuf::from("/w/off"),
            PathBuf::from("/w/b"),
            PathBuf::from("/w/untrusted"),
        ];
        let trusted = |r: &Path| !r.ends_with("untrusted");
        let plan = server_plan(&found, Path::new("/home/u"), &opened, &trusted);
        assert_eq!(plan.shared.len(), 1);
        assert!(plan.shared[0].1.contains_key("shared"));
        assert!(!plan.shared[0].1.contains_key("mine"));
        let roots: Vec<_> = plan
            .per_workspace
            .iter()
            .map(|(r, _, _)| r.clone())
            .collect();
        assert_eq!(roots, [PathBuf::from("/w/a"), PathBuf::from("/w/b")]);
        assert_eq!(plan.per_workspace[1].2["mine"]["env"]["ROOT"], "/w/b");
        // No workspace open: no instance, the shared server still runs.
        let plan = server_plan(&found, Path::new("/home/u"), &[], &trusted);
        assert!(plan.per_workspace.is_empty());
        assert_eq!(plan.shared.len(), 1);
    }

    #[test]
    fn a_server_name_taken_is_kept_by_the_first_and_reported() {
        let ext = |dir: &str, servers: Value| Extension {
            name: dir.into(),
            install_dir: PathBuf::from("/x").join(dir),
            path: PathBuf::from("/x").join(dir),
            loaded: true,
            mcp_servers: servers.as_object().cloned().unwrap(),
            ..Default::default()
        };
        let found = [
            ext("a", serde_json::json!({"s": {"command": "from-a"}})),
            ext(
                "b",
                serde_json::json!({"s": {"command": "from-b"}, "u": {"command": "b"}, "t": {"command": "b"}}),
            ),
        ];
        let plan = server_plan(&found, Path::new("/home/u"), &[], &|_| true);
        assert_eq!(plan.shared[0].1["s"]["command"], "from-a");
        assert!(!plan.shared[1].1.contains_key("s"));
        assert!(plan.shared[1].1.contains_key("t"));
        let problems = server_name_clashes(&found, &["u".to_owned()]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems
                .iter()
                .all(|p| p.file == "/x/b/gemini-extension.json")
        );
        assert!(problems[0].message.contains("\"s\"") && problems[0].message.contains("/x/a/"));
        assert!(problems[1].message.contains("user settings"));
        // The first one disabled everywhere: the second's entry starts.
        let mut off = found.clone();
        off[0].overrides = vec!["!/*".into()];
        let plan = server_plan(&off, Path::new("/home/u"), &[], &|_| true);
        assert_eq!(plan.shared[0].1["s"]["command"], "from-b");
    }

    #[test]
    fn a_broken_manifest_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("b").join(MANIFEST), "{\n \"name\": ").unwrap();
        let (found, _) = load_all(dir.path());
        assert!(found[0].broken);
        assert_eq!(found[0].problems[0].line, Some(2));
        std::fs::write(
            dir.path().join("b").join(MANIFEST),
            r#"{"name": "b", "excludeTools": "glob"}"#,
        )
        .unwrap();
        let (found, _) = load_all(dir.path());
        assert!(found[0].broken);
        assert!(found[0].problems[0].message.contains("excludeTools"));
    }
}
