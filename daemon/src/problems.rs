//! What is wrong with the configuration now: one `ConfigProblem` per thing
//! a file says that the daemon could not use (file, line when known, what
//! was kept instead), and `Problems`, the daemon's current list, which
//! tells which problems are new so each is logged and announced once per
//! change, never on every reload.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// One configuration problem.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigProblem {
    /// The file (or directory) it is in.
    pub file: String,
    /// 1-based line, when the parser knows it.
    pub line: Option<u64>,
    /// What is wrong, without the file name.
    pub message: String,
    /// What the daemon uses instead (the last good content, nothing, a
    /// stricter default).
    pub kept: Option<String>,
}

impl ConfigProblem {
    pub fn new(file: impl Into<String>, message: impl Into<String>) -> Self {
        let file = file.into();
        let message = message.into();
        // Messages of the policy loader start with the file name already.
        let message = message
            .strip_prefix(&format!("{file}: "))
            .map(str::to_owned)
            .unwrap_or(message);
        ConfigProblem {
            file,
            line: None,
            message,
            kept: None,
        }
    }

    pub fn at_line(mut self, line: Option<u64>) -> Self {
        self.line = line;
        self
    }

    pub fn kept(mut self, kept: impl Into<String>) -> Self {
        self.kept = Some(kept.into());
        self
    }
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(kept) = &self.kept {
            write!(f, " ({kept})")?;
        }
        Ok(())
    }
}

/// The problems of every configuration area (`policy`, `settings`, `mcp`,
/// ...), as last found.
#[derive(Default)]
pub struct Problems {
    by_area: Mutex<BTreeMap<String, Vec<ConfigProblem>>>,
}

impl Problems {
    /// Replaces the problems of `area`; returns the ones not there before,
    /// which are logged here (once).
    pub fn set(&self, area: &str, now: Vec<ConfigProblem>) -> Vec<ConfigProblem> {
        let mut by_area = self.by_area.lock().unwrap_or_else(|e| e.into_inner());
        let before = by_area.remove(area).unwrap_or_default();
        let fresh: Vec<ConfigProblem> = now
            .iter()
            .filter(|p| !before.contains(p))
            .cloned()
            .collect();
        for problem in &fresh {
            tracing::warn!(area, problem = %problem, "configuration");
        }
        if !now.is_empty() {
            by_area.insert(area.to_owned(), now);
        }
        fresh
    }

    /// Every current problem, by area.
    pub fn all(&self) -> Vec<(String, ConfigProblem)> {
        self.by_area
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .flat_map(|(area, list)| list.iter().map(|p| (area.clone(), p.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_problems_are_fresh() {
        let problems = Problems::default();
        let a = ConfigProblem::new("/f", "/f: bad").kept("the rules it had");
        assert_eq!(a.message, "bad");
        assert_eq!(a.to_string(), "/f: bad (the rules it had)");
        assert_eq!(problems.set("policy", vec![a.clone()]).len(), 1);
        assert!(problems.set("policy", vec![a.clone()]).is_empty());
        let b = ConfigProblem::new("/g", "worse").at_line(Some(3));
        assert_eq!(problems.set("policy", vec![a, b.clone()]), vec![b]);
        assert_eq!(problems.all().len(), 2);
        assert!(problems.set("policy", Vec::new()).is_empty());
        assert!(problems.all().is_empty());
    }
}
