//! The walk over a tree-sitter-bash tree. Every node kind is handled on
//! purpose: structure (lists, pipelines, groups, loops) is inert in itself;
//! commands become parts; assignments, arithmetic, expansions, here-document
//! bodies and redirections are checked for what bash would evaluate; a kind
//! not listed here is reported as unrecognised, so new syntax fails closed.

use super::command::expand;
use super::expansion::{brace_hazard, is_literal_arithmetic};
use super::scan::{Scan, scan_expanding};
use super::types::{Attached, Hazard, Inherit, PartKind, ShellSplit, Word};
use super::words::{children, children_with_fields, text, words_of};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

/// Maximum nesting of re-parsed texts (`bash -c`, `eval`, substitutions in
/// here-documents). Deeper nesting is reported as a parse error.
pub(crate) const MAX_DEPTH: usize = 6;

/// Longer command lines are not parsed (reported as a parse error) so that a
/// huge input cannot stall a check.
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = RefCell::new(new_parser());
}

fn new_parser() -> Option<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    Some(parser)
}

/// How long the parses of one command line may take together, as in 0.61:
/// tree-sitter's error recovery is slow on some inputs (tens of seconds for
/// a here-document of nested `$(`), and a parse that runs out of time is a
/// parse error.
pub(crate) const PARSE_BUDGET: Duration = Duration::from_secs(1);

/// Parses `source`, giving up (`None`) at `deadline`.
pub(crate) fn parse(source: &str, deadline: Instant) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut cell = cell.borrow_mut();
        let parser = cell.as_mut()?;
        let bytes = source.as_bytes();
        let mut read = |i: usize, _| bytes.get(i..).unwrap_or_default();
        let mut out_of_time = |_: &ParseState| Instant::now() >= deadline;
        let options = ParseOptions::new().progress_callback(&mut out_of_time);
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        if tree.is_none() {
            // A halted parse would otherwise be resumed by the next one.
            parser.reset();
        }
        tree
    })
}

/// Parses `source` (nested `depth` levels deep) and appends its parts.
pub(crate) fn split_into(
    source: &str,
    depth: usize,
    deadline: Instant,
    inherit: Inherit,
    out: &mut ShellSplit,
) {
    if depth > MAX_DEPTH || source.len() > MAX_COMMAND_BYTES {
        out.parse_error = true;
        return;
    }
    let Some(tree) = parse(source, deadline) else {
        out.parse_error = true;
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.parse_error = true;
    }
    let mut walker = Walker {
        src: source,
        depth,
        deadline,
        attached: HashMap::new(),
    };
    walker.walk(root, inherit, out);
}

/// Where a node sits, as far as its handling depends on it. (Found on the
/// way down: `Node::parent` searches from the root, which would make the
/// walk quadratic on deep input.)
#[derive(Debug, Clone, Copy)]
struct Scope {
    parent: &'static str,
    in_expansion: bool,
    /// Substitutions, expansions and strings around the node: each level
    /// is a word of the command around it, which copies its text.
    nesting: usize,
}

/// Words nested deeper than this (`ls $(ls $(ls ...))`) are a parse error:
/// every level copies the text inside it, so the parts of a deep nest grow
/// with the square of its length.
pub(crate) const MAX_WORD_NESTING: usize = 64;

fn nests_words(kind: &str) -> bool {
    matches!(
        kind,
        "command_substitution"
            | "process_substitution"
            | "expansion"
            | "arithmetic_expansion"
            | "string"
            | "translated_string"
    )
}

pub(super) struct Walker<'s> {
    pub(super) src: &'s str,
    pub(super) depth: usize,
    pub(super) deadline: Instant,
    /// What redirections attach to the node with that id.
    pub(super) attached: HashMap<usize, Attached>,
}

impl<'s> Walker<'s> {
    pub(super) fn text(&self, node: Node<'_>) -> &'s str {
        text(self.src, node)
    }

    /// Iterative depth-first walk (long `a && b && ...` chains nest deeply).
    fn walk(&mut self, root: Node<'_>, inherit: Inherit, out: &mut ShellSplit) {
        let top = Scope {
            parent: "",
            in_expansion: false,
            nesting: 0,
        };
        let mut stack = vec![(root, inherit, top)];
        while let Some((node, mut ctx, scope)) = stack.pop() {
            if scope.nesting > MAX_WORD_NESTING {
                out.parse_error = true;
                continue;
            }
            if let Some(redirect) = self.attachment(node.id()).map(|a| a.redirect) {
                ctx.redirect |= redirect;
            }
            let mut descend = true;
            match node.kind() {
                "program"
                | "list"
                | "pipeline"
                | "subshell"
                | "do_group"
                | "if_statement"
                | "elif_clause"
                | "else_clause"
                | "while_statement"
                | "case_statement"
                | "case_item"
                | "negated_command"
                | "variable_assignments"
                | "array"
                | "concatenation"
                | "string"
                | "translated_string"
                | "command_name"
                | "subscript"
                | "brace_expression"
                | "binary_expression"
                | "unary_expression"
                | "ternary_expression"
                | "postfix_expression"
                | "parenthesized_expression"
                | "herestring_redirect"
                | "simple_expansion"
                | "ERROR" => {}
                "raw_string" | "ansi_c_string" => {
                    // Inside `"${x:-'...'}"` single quotes are plain
                    // characters and what they hold is expanded;
                    // tree-sitter still parses them as quotes.
                    if scope.in_expansion {
                        let raw = self.text(node);
                        self.scanned(scan_expanding(raw), out);
                    }
                    descend = false;
                }
                "comment"
                | "number"
                | "variable_name"
                | "special_variable_name"
                | "file_descriptor"
                | "test_operator"
                | "heredoc_start"
                | "heredoc_end" => descend = false,
                "command_substitution" if self.text(node).starts_with('`') => {
                    // Inside backticks a backslash quotes `\`, `` ` `` and
                    // `$` before the text is parsed; tree-sitter parses it
                    // as written, so the scan unescapes and splits it again.
                    let raw = self.text(node);
                    self.scanned(scan_expanding(raw), out);
                    descend = false;
                }
                "command_substitution" | "process_substitution" => {
                    // Their output goes to a pipe, not to where the command
                    // around them writes.
                    ctx = Inherit::default();
                }
                "word" | "string_content" | "regex" | "extglob_pattern" | "heredoc_content" => {
                    let raw = self.text(node);
                    self.scanned(scan_expanding(raw), out);
                }
                "compound_statement" => {
                    let raw = self.text(node);
                    if let Some(inner) = raw.strip_prefix("((") {
                        self.arithmetic(inner.strip_suffix("))").unwrap_or(inner), raw, out);
                    }
                }
                "arithmetic_expansion" => {
                    let raw = self.text(node);
                    let inner = raw
                        .strip_prefix("$((")
                        .and_then(|t| t.strip_suffix("))"))
                        .or_else(|| raw.strip_prefix("$[").and_then(|t| t.strip_suffix(']')));
                    self.arithmetic(inner.unwrap_or(raw), raw, out);
                }
                "expansion" => {
                    let raw = self.text(node);
                    let inner = raw
                        .strip_prefix("${")
                        .and_then(|t| t.strip_suffix('}'))
                        .unwrap_or("");
                    if let Some(hazard) = brace_hazard(inner) {
                        out.hazard(hazard, raw);
                    }
                }
                "command" => self.command(node, ctx, out),
                "declaration_command" | "unset_command" => {
                    let parts: Vec<Node<'_>> =
                        children(node).filter(|c| c.kind() != "comment").collect();
                    self.expand(words_of(self.src, &parts), ctx, None, out);
                }
                "variable_assignment" => {
                    let in_declaration =
                        matches!(scope.parent, "declaration_command" | "unset_command");
                    if !in_declaration {
                        out.hazard(Hazard::Assignment, self.text(node));
                    }
                }
                "for_statement" => {
                    let keyword = node.child(0).map_or("for", |k| self.text(k));
                    let variable = node
                        .child_by_field_name("variable")
                        .map_or("", |v| self.text(v));
                    out.hazard(Hazard::Assignment, &format!("{keyword} {variable}"));
                }
                "c_style_for_statement" => self.c_style_for(node, out),
                "function_definition" => {
                    let name = node
                        .child_by_field_name("name")
                        .map_or("", |n| self.text(n));
                    out.hazard(Hazard::Function, &format!("{name}()"));
                }
                "test_command" => self.test_command(node, out),
                "redirected_statement" => self.redirected(node, out),
                "file_redirect" => self.input_redirect(node, out),
                "heredoc_redirect" => self.heredoc_body(node, out),
                "heredoc_body" => {
                    // Only reached outside a here-document redirect (a broken
                    // tree): read it as expanding text.
                    let raw = self.text(node);
                    self.scanned(scan_expanding(raw), out);
                    descend = false;
                }
                _ if !node.is_named() => descend = false,
                other => out.hazard(Hazard::Unrecognised, other),
            }
            if descend {
                let scope = Scope {
                    parent: node.kind(),
                    in_expansion: scope.in_expansion || node.kind() == "expansion",
                    nesting: scope.nesting + usize::from(nests_words(node.kind())),
                };
                let start = stack.len();
                for child in children(node) {
                    if child.kind() != "heredoc_body" || node.kind() != "heredoc_redirect" {
                        stack.push((child, ctx, scope));
                    }
                }
                stack[start..].reverse();
            }
        }
    }

    pub(super) fn attachment(&self, id: usize) -> Option<&Attached> {
        self.attached.get(&id)
    }

    pub(super) fn attach(&mut self, id: usize, more: Attached) {
        let have = self.attached.entry(id).or_default();
        have.redirect |= more.redirect;
        have.args.extend(more.args);
        if more.stdin.is_some() {
            have.stdin = more.stdin;
        }
    }

    /// Adds what a scan found: hazards, commands to check, parse trouble.
    pub(super) fn scanned(&mut self, scan: Scan, out: &mut ShellSplit) {
        for (hazard, text) in scan.hazards {
            out.hazard(hazard, &text);
        }
        for script in scan.scripts {
            split_into(
                &script,
                self.depth + 1,
                self.deadline,
                Inherit::default(),
                out,
            );
        }
        out.parse_error |= scan.unparsable;
    }

    pub(super) fn arithmetic(&self, inner: &str, whole: &str, out: &mut ShellSplit) {
        if !is_literal_arithmetic(inner) {
            out.hazard(Hazard::Arithmetic, whole);
        }
    }

    fn expand(
        &mut self,
        words: Vec<Word>,
        ctx: Inherit,
        stdin: Option<&Word>,
        out: &mut ShellSplit,
    ) {
        let expanded = expand(words, ctx, stdin);
        out.parts.extend(expanded.parts);
        for (script, inherit) in expanded.scripts {
            split_into(&script, self.depth + 1, self.deadline, inherit, out);
        }
    }

    /// A simple command: its words, the redirections written on it and
    /// those its enclosing statement attached to it.
    fn command(&mut self, node: Node<'_>, ctx: Inherit, out: &mut ShellSplit) {
        let attached = self.attachment(node.id()).cloned().unwrap_or_default();
        let mut redirect = ctx.redirect || attached.redirect;
        let mut stdin = attached.stdin;
        let mut heredoc_args = Vec::new();
        let mut parts: Vec<Node<'_>> = Vec::new();
        let mut has_name = false;
        for (child, _) in children_with_fields(node) {
            match child.kind() {
                "variable_assignment" | "comment" => {}
                "file_redirect" => redirect |= self.is_output_redirect(child),
                "herestring_redirect" => stdin = self.here_string(child),
                "heredoc_redirect" => {
                    redirect |= self.heredoc_parts(child, &mut heredoc_args, &mut stdin);
                }
                "command_name" => {
                    if let Some(inner) = child.child(0)
                        && inner.end_byte() > inner.start_byte()
                    {
                        has_name = true;
                        parts.push(inner);
                    }
                }
                _ if child.is_named() => parts.push(child),
                _ => {}
            }
        }
        if !has_name {
            if redirect {
                out.push(PartKind::BareRedirection, self.text(node));
            }
            return;
        }
        let ctx = Inherit { redirect, ..ctx };
        let mut words = words_of(self.src, &parts);
        words.extend(attached.args);
        words.extend(heredoc_args);
        self.expand(words, ctx, stdin.as_ref(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_out_of_time_fails_and_the_next_one_starts_afresh() {
        let long = "ls -la && git status\n".repeat(10_000);
        let past = Instant::now() - Duration::from_millis(1);
        assert!(parse(&long, past).is_none(), "halted by the deadline");
        let later = Instant::now() + PARSE_BUDGET;
        let tree = parse("git status", later).expect("parsed");
        assert_eq!(
            tree.root_node().to_sexp(),
            "(program (command name: (command_name (word)) argument: (word)))"
        );
        assert!(parse(&long, later).is_some());
    }
}
