//! Shared by `tests/reference_cases.rs` and `examples/record_reference.rs`:
//! materialising a case in a temp dir and running our processor on it.
#![allow(dead_code)]

pub mod cases;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::memory_api::{ImportFormat, ImportOptions, OsFiles, process_imports};
use serde::{Deserialize, Serialize};

pub use cases::{Case, cases};

/// Stands for the temp dir in case inputs and recorded outputs.
pub const ROOT: &str = "{ROOT}";

/// Where the recorded reference outputs live.
pub const FIXTURE: &str = "src/memory/reference_tests/reference.json";

/// What an `imports` request produced, with the temp dir replaced by `{ROOT}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub content: String,
    pub tree: serde_json::Value,
}

pub type Recorded = BTreeMap<String, Outcome>;

/// A case laid out on disk.
pub struct Materialized {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Materialized {
    pub fn root_str(&self) -> String {
        self.root.to_string_lossy().into_owned()
    }

    pub fn fill(&self, text: &str) -> String {
        text.replace(ROOT, &self.root_str())
    }

    pub fn unfill(&self, text: &str) -> String {
        text.replace(&self.root_str(), ROOT)
    }

    pub fn base(&self, case: &Case) -> PathBuf {
        join(&self.root, case.base)
    }

    pub fn project_root(&self, case: &Case) -> Option<PathBuf> {
        case.project_root.map(|r| join(&self.root, r))
    }

    /// The harness request for this case.
    pub fn request(&self, case: &Case) -> serde_json::Value {
        let mut req = serde_json::json!({
            "kind": "imports",
            "id": case.name,
            "content": self.fill(case.content),
            "base_path": self.base(case),
            "import_format": if case.flat { "flat" } else { "tree" },
        });
        if let Some(root) = self.project_root(case) {
            req["project_root"] = serde_json::json!(root);
        }
        if let Some(depth) = case.max_depth {
            req["max_depth"] = serde_json::json!(depth);
        }
        req
    }

    /// Normalise a harness response or our own result.
    pub fn outcome(&self, content: &str, tree: &serde_json::Value) -> std::io::Result<Outcome> {
        let tree = self.unfill(&tree.to_string());
        Ok(Outcome {
            content: self.unfill(content),
            tree: serde_json::from_str(&tree)?,
        })
    }

    /// Run our implementation on the case.
    pub fn ours(&self, case: &Case) -> std::io::Result<Outcome> {
        let options = ImportOptions {
            format: if case.flat {
                ImportFormat::Flat
            } else {
                ImportFormat::Tree
            },
            max_depth: case
                .max_depth
                .unwrap_or(super::memory_api::imports::DEFAULT_MAX_DEPTH),
            project_root: self.project_root(case),
            current_file: None,
        };
        let got = process_imports(
            &OsFiles,
            &self.fill(case.content),
            &self.base(case),
            &options,
        );
        let tree = serde_json::to_value(&got.tree)?;
        self.outcome(&got.content, &tree)
    }
}

fn join(root: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// Create the case's files, directories and links in a fresh temp dir.
pub fn materialize(case: &Case) -> std::io::Result<Materialized> {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    let m = Materialized { _dir: dir, root };
    for d in &case.dirs {
        std::fs::create_dir_all(m.root.join(d))?;
    }
    let texts = case.files.iter().map(|(p, c)| (*p, m.fill(c).into_bytes()));
    let raw = case.bytes.iter().map(|(p, b)| (*p, b.to_vec()));
    for (rel, bytes) in texts.chain(raw) {
        let path = m.root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, bytes)?;
    }
    #[cfg(unix)]
    for (link, target) in &case.symlinks {
        let path = m.root.join(link);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::os::unix::fs::symlink(m.fill(target), path)?;
    }
    Ok(m)
}

/// Load the recorded reference outputs.
pub fn load_recorded(manifest_dir: &Path) -> std::io::Result<Recorded> {
    let text = std::fs::read_to_string(manifest_dir.join(FIXTURE))?;
    Ok(serde_json::from_str(&text)?)
}
