//! The system instruction: who the agent is, the workspace, and the
//! workspace's memory (GEMINI.md files).

/// The system instruction for a turn in `workspace` with `memory` (the
/// merged GEMINI.md text, possibly empty).
pub fn system_instruction(workspace: &str, memory: &str) -> String {
    let mut out = format!(
        "You are an interactive coding agent working in a software project on the \
         user's machine. Help the user with software engineering tasks safely and \
         efficiently.\n\n\
         # Workspace\n\
         The project root is `{workspace}`. File tools take absolute paths inside \
         this root; build them by joining the root and the relative path.\n\n\
         # How to work\n\
         - Read before you change: use the search and read tools to understand the \
         code, its conventions and its tests before editing.\n\
         - Make the smallest change that does the job, in the style of the \
         surrounding code.\n\
         - Explain shell commands that change the system before running them; the \
         user may be asked to approve some tool calls, and may refuse.\n\
         - Calls that do not depend on each other may be made in one response; \
         they run in parallel.\n\
         - Be concise; answer in plain text or Markdown.\n"
    );
    let memory = memory.trim();
    if !memory.is_empty() {
        out.push_str("\n---\n\n# Context from the user's memory files (GEMINI.md)\n\n");
        out.push_str(memory);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_follows_the_preamble_only_when_present() {
        let bare = system_instruction("/ws", "  ");
        assert!(bare.contains("`/ws`"));
        assert!(!bare.contains("GEMINI.md"));
        let with = system_instruction("/ws", "--- Context from: GEMINI.md ---\nuse tabs");
        assert!(with.ends_with("use tabs\n"));
    }
}
