//! Built-in file tools. Each tool lives in its own file; `common` and
//! `walk` hold what they share.

use std::sync::Arc;

// Re-exported to the tool files as `super::contract` / `super::path`, so
// they keep compiling when this directory moves under another module.
use super::{contract, path};

use contract::Tool;

pub mod ask_user;
pub(crate) mod atomic_write;
pub mod cached_walk;
pub mod common;
pub mod diff;
pub mod dir_cache;
pub mod glob;
mod glob_walk;
pub mod grep;
mod grep_search;
pub mod list_directory;
mod params;
pub mod plan_mode;
pub mod read_file;
pub mod read_many_files;
pub mod replace;
pub mod replace_match;
pub mod save_memory;
pub mod search_walk;
pub mod shell;
mod shell_exec;
pub mod shell_output;
mod shell_proc;
pub mod shell_reap;
pub mod shell_sandbox;
pub mod walk;
pub mod web_fetch;
pub mod web_fetch_guard;
pub mod web_fetch_http;
pub mod web_search;
pub mod write_file;
pub mod write_todos;

#[cfg(test)]
mod test_util;

pub use list_directory::ListDirectoryTool;
pub use read_file::ReadFileTool;
pub use read_many_files::ReadManyFilesTool;
pub use replace::ReplaceTool;
pub use save_memory::SaveMemoryTool;
pub use write_file::WriteFileTool;

/// Every built-in tool, configured for this daemon.
pub fn all(config: &crate::config::DaemonConfig) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(SaveMemoryTool::new(
            config.user_gemini_dir.join("GEMINI.md"),
        )),
        Arc::new(ReadFileTool::new()),
        Arc::new(WriteFileTool::new()),
        Arc::new(ListDirectoryTool::new()),
        Arc::new(ReplaceTool::new()),
        Arc::new(ReadManyFilesTool::new()),
        Arc::new(shell::ShellTool::new(shell_exec::ShellConfig {
            spill_dir: config.shell_output_dir(),
            timeout: config.shell_timeout,
            ..shell_exec::ShellConfig::default()
        })),
        Arc::new(grep::GrepTool::default()),
        Arc::new(glob::GlobTool::default()),
        Arc::new(web_fetch::WebFetchTool::default()),
        Arc::new(write_todos::WriteTodosTool::new()),
        Arc::new(plan_mode::EnterPlanModeTool::default()),
        Arc::new(plan_mode::ExitPlanModeTool::default()),
        Arc::new(ask_user::AskUserTool::new()),
    ];
    // Needs the Gemini API: only with an API key.
    if let Some(search) = web_search::WebSearchConfig::from_gemini(&config.gemini) {
        tools.push(Arc::new(web_search::WebSearchTool::new(search)));
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every schema is an object schema whose required names are declared
    /// properties with descriptions, and every name is unique.
    #[test]
    fn schemas_are_well_formed() {
        let mut config = crate::config::DaemonConfig::from_env();
        config.gemini.api_key = Some("k".to_owned());
        let tools = all(&config);
        let mut names = std::collections::HashSet::new();
        for t in &tools {
            assert!(names.insert(t.name().to_owned()), "duplicate {}", t.name());
            let s = t.parameter_schema();
            assert_eq!(s["type"], "object", "{}", t.name());
            let props = s["properties"].as_object().unwrap();
            for (name, p) in props {
                // 0.61 declares `ask_user.questions` without one; kept so.
                if t.name() == ask_user::ASK_USER && name == "questions" {
                    continue;
                }
                assert!(p["description"].is_string(), "{}.{name}", t.name());
            }
            for r in s["required"].as_array().into_iter().flatten() {
                assert!(props.contains_key(r.as_str().unwrap()), "{}: {r}", t.name());
            }
        }
        assert_eq!(names.len(), 15);
        assert!(names.contains("google_web_search"));
        config.gemini.api_key = None;
        let without: Vec<_> = all(&config).iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(without.len(), 14);
        assert!(!without.iter().any(|n| n == "google_web_search"));
    }
}
