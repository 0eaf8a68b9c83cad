//! A tool-name index over the sorted rules, so a check only looks at rules
//! that can match the tool.

use crate::policy::names::NamePattern;
use crate::policy::rule::PolicyRule;
use std::collections::HashMap;

/// Rule positions (into the priority-sorted rule list) by tool name.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleIndex {
    /// Rules naming the tool exactly (`write_file`, `server__tool`).
    by_name: HashMap<String, Vec<u32>>,
    /// Rules with a `server__*` pattern, by server.
    by_server: HashMap<String, Vec<u32>>,
    /// Rules without tool names: they may match any tool.
    any_tool: Vec<u32>,
}

fn push_once(list: &mut Vec<u32>, i: u32) {
    if list.last() != Some(&i) {
        list.push(i);
    }
}

impl RuleIndex {
    /// Indexes `rules`, which must already be in evaluation order.
    pub(crate) fn build(rules: &[PolicyRule]) -> Self {
        let mut index = Self::default();
        for (i, rule) in rules.iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            if rule.tool_names.is_empty() {
                index.any_tool.push(i);
            }
            for pattern in &rule.tool_names {
                match NamePattern::parse(pattern) {
                    NamePattern::Server(server) => {
                        push_once(index.by_server.entry(server.to_owned()).or_default(), i)
                    }
                    NamePattern::Exact(name) => {
                        push_once(index.by_name.entry(name.to_owned()).or_default(), i)
                    }
                    // Wildcards and 0.61's MCP names: the matcher decides.
                    NamePattern::Any
                    | NamePattern::AnyMcp
                    | NamePattern::McpName(_)
                    | NamePattern::Glob(_) => push_once(&mut index.any_tool, i),
                }
            }
        }
        index
    }

    /// Positions of the rules that may match a call, in evaluation order.
    pub(crate) fn candidates(
        &self,
        tool_name: &str,
        qualified: &str,
        server: Option<&str>,
    ) -> Vec<u32> {
        let mut out = self.any_tool.clone();
        if let Some(list) = self.by_name.get(qualified) {
            out.extend_from_slice(list);
        }
        if server.is_none()
            && tool_name != qualified
            && let Some(list) = self.by_name.get(tool_name)
        {
            out.extend_from_slice(list);
        }
        if let Some(list) = server.and_then(|s| self.by_server.get(s)) {
            out.extend_from_slice(list);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
