//! Splitting a shell command into the simple commands it would run, using
//! tree-sitter-bash.
//!
//! Every `command` node anywhere in the tree becomes a [`ShellCommand`]:
//! parts of `&&`, `||`, `;`, `|`, newlines, `$(...)`, backticks, `<(...)`,
//! `>(...)`, subshells, brace groups, `if`/`while`/`for`/`case` bodies,
//! function bodies and here-doc bodies. Wrappers (`env`, `sudo`, `xargs`,
//! ...), `bash -c` / `sh -c` payloads and `eval` arguments are expanded by
//! the `wrappers` module.
//!
//! Output redirection: `>`, `>>`, `>|`, `&>`, `&>>` and `>&FILE` to anything
//! but `/dev/null`, `/dev/stdout` or `/dev/stderr` count. Descriptor
//! duplication (`2>&1`, `>&-`) and input redirection do not.

use crate::policy::unquote::{
    has_expansion_chars, strip, unescape_ansi_c, unescape_double, unescape_unquoted,
};
use crate::policy::wrappers::{Inherit, Word, expand};
use std::cell::RefCell;
use tree_sitter::{Node, Parser, Tree};

/// Maximum nesting of re-parsed payloads (`bash -c`, `eval`). Deeper nesting
/// is reported as a parse error.
pub(crate) const MAX_DEPTH: usize = 6;

/// Longer command lines are not parsed (reported as a parse error) so that a
/// huge input cannot stall a check.
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;

/// How a sub-command takes part in the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandRole {
    /// An actual command that runs: its decision always counts.
    Leaf,
    /// A transparent wrapper around other sub-commands (`env X`, `bash -c
    /// '...'`, `eval ...`): only rules that look at the command text count.
    Context,
}

/// One simple command found in a shell command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    /// Unquoted words: command name and arguments, without leading
    /// `NAME=value` assignments and redirections.
    pub words: Vec<String>,
    /// The words joined by single spaces; what rules match against.
    pub text: String,
    /// How this command's decision counts.
    pub role: CommandRole,
    /// Output goes to a file.
    pub output_redirect: bool,
    /// The command runs with `NAME=value` environment assignments.
    pub env_assignments: bool,
    /// The command name or a payload cannot be known statically (`$CMD`,
    /// `bash -c "$X"`, globs in the name): it can never be allowed.
    pub opaque: bool,
}

/// The result of splitting a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellSplit {
    /// All simple commands found, outer ones before the ones they contain.
    pub commands: Vec<ShellCommand>,
    /// The parser reported errors (ERROR/MISSING nodes), nesting was too deep
    /// or the parser was unavailable.
    pub parse_error: bool,
    /// A construct whose effect cannot be checked statically: arithmetic
    /// contexts (`[[ ]]`, `(( ))`, `$(( ))`, `let`, `declare`) whose text
    /// contains `$(` or a backtick, since bash evaluates subscripts such as
    /// `'a[$(cmd)]'` there even inside quotes.
    pub unverifiable: bool,
}

impl ShellSplit {
    /// The distinct command names of the sub-commands that run on their own
    /// (leaf, statically known), in order: what an "always allow" prompt
    /// can offer (`git`, `ls`).
    pub fn roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = Vec::new();
        for command in &self.commands {
            if command.role != CommandRole::Leaf || command.opaque {
                continue;
            }
            if let Some(name) = command.words.first()
                && !roots.contains(name)
            {
                roots.push(name.clone());
            }
        }
        roots
    }
}

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

fn parse(source: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        cell.borrow_mut()
            .as_mut()
            .and_then(|p| p.parse(source, None))
    })
}

/// Splits `source` into the simple commands it would run.
pub fn split_command(source: &str) -> ShellSplit {
    let mut out = ShellSplit::default();
    split_into(source, 0, Inherit::default(), &mut out);
    out
}

/// Parses `source` (nested `depth` levels deep) and appends its commands.
pub(crate) fn split_into(source: &str, depth: usize, inherit: Inherit, out: &mut ShellSplit) {
    if depth > MAX_DEPTH || source.len() > MAX_COMMAND_BYTES {
        out.parse_error = true;
        return;
    }
    let Some(tree) = parse(source) else {
        out.parse_error = true;
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.parse_error = true;
    }
    let walker = Walker { src: source, depth };
    walker.walk(root, inherit, out);
}

struct Walker<'s> {
    src: &'s str,
    depth: usize,
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src
            .get(node.start_byte()..node.end_byte())
            .unwrap_or("")
    }

    /// Iterative depth-first walk (long `a && b && ...` chains nest deeply).
    fn walk(&self, root: Node<'_>, inherit: Inherit, out: &mut ShellSplit) {
        let mut stack = vec![(root, inherit)];
        while let Some((node, ctx)) = stack.pop() {
            let mut children: Vec<(Node<'_>, Inherit)> = Vec::new();
            match node.kind() {
                "comment" => {}
                "command" => {
                    self.emit_command(node, &[], None, ctx, out);
                    push_children(node, ctx, &mut children);
                }
                "declaration_command" | "unset_command" => {
                    out.unverifiable |= has_substitution_text(self.text(node));
                    let words = (0..node.child_count())
                        .filter_map(|i| node.child(i))
                        .filter(|c| c.kind() != "comment")
                        .map(|c| self.word(c))
                        .collect();
                    expand(words, ctx, None, self.depth, out);
                    push_children(node, ctx, &mut children);
                }
                "redirected_statement" => self.redirected(node, ctx, out, &mut children),
                "test_command"
                | "arithmetic_expansion"
                | "c_style_for_statement"
                | "compound_statement"
                    if node.kind() != "compound_statement" || self.text(node).starts_with("((") =>
                {
                    let text = self.text(node);
                    let inner = text.strip_prefix("$((").unwrap_or(text);
                    out.unverifiable |= has_substitution_text(inner);
                    push_children(node, ctx, &mut children);
                }
                _ => push_children(node, ctx, &mut children),
            }
            stack.extend(children.into_iter().rev());
        }
    }

    fn redirected<'t>(
        &self,
        node: Node<'t>,
        ctx: Inherit,
        out: &mut ShellSplit,
        children: &mut Vec<(Node<'t>, Inherit)>,
    ) {
        let mut redirect = false;
        let mut extra_args = Vec::new();
        let mut stdin = None;
        for i in 0..node.child_count() {
            let Some(child) = node.child(i) else { continue };
            if node.field_name_for_child(i as u32) != Some("redirect") {
                continue;
            }
            redirect |= self.is_output_redirect(child);
            if child.kind() == "herestring_redirect" {
                stdin = self.here_string(child);
            }
            if child.kind() == "heredoc_redirect" {
                redirect |= self.heredoc_parts(child, &mut extra_args, &mut stdin);
            }
        }
        let body_ctx = Inherit {
            redirect: ctx.redirect || redirect,
            ..ctx
        };
        for i in 0..node.child_count() {
            let Some(child) = node.child(i) else { continue };
            let is_body = node.field_name_for_child(i as u32) == Some("body");
            if is_body && child.kind() == "command" {
                self.emit_command(child, &extra_args, stdin.as_ref(), body_ctx, out);
                push_children(child, body_ctx, children);
            } else if is_body {
                children.push((child, body_ctx));
            } else {
                children.push((child, ctx));
            }
        }
    }

    /// Collects a here-doc's trailing arguments (`cat <<EOF file`) and body;
    /// returns whether it also redirects output (`cat <<EOF > file`).
    fn heredoc_parts<'t>(
        &self,
        node: Node<'t>,
        args: &mut Vec<Node<'t>>,
        stdin: &mut Option<Word>,
    ) -> bool {
        let mut redirect = false;
        for j in 0..node.child_count() {
            let Some(part) = node.child(j) else { continue };
            match node.field_name_for_child(j as u32) {
                Some("redirect") => redirect |= self.is_output_redirect(part),
                Some("argument") => args.push(part),
                _ if part.kind() == "heredoc_body" => *stdin = Some(self.heredoc(part)),
                _ => {}
            }
        }
        redirect
    }

    /// The content of `<<< word`.
    fn here_string(&self, node: Node<'_>) -> Option<Word> {
        let count = node.named_child_count();
        let last = node.named_child(count.checked_sub(1)?)?;
        (last.kind() != "file_descriptor").then(|| self.word(last))
    }

    /// The text of a here-doc body; static unless it contains expansions
    /// or backslashes (which an unquoted delimiter would process).
    fn heredoc(&self, body: Node<'_>) -> Word {
        let text = self.text(body);
        let dynamic = (0..body.named_child_count())
            .filter_map(|i| body.named_child(i))
            .any(|c| c.kind() != "heredoc_content");
        Word {
            text: text.to_owned(),
            is_static: !dynamic && !text.contains('\\'),
        }
    }

    fn is_output_redirect(&self, node: Node<'_>) -> bool {
        if node.kind() != "file_redirect" {
            return false;
        }
        let op = (0..node.child_count())
            .filter_map(|i| node.child(i))
            .find(|c| !c.is_named())
            .map(|c| self.text(c))
            .unwrap_or("");
        let dest = node
            .child_by_field_name("destination")
            .map(|d| self.word(d));
        let to_null = |w: &Option<Word>| {
            w.as_ref().is_some_and(|w| {
                w.is_static
                    && matches!(w.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr")
            })
        };
        match op {
            ">" | ">>" | ">|" | "&>" | "&>>" => !to_null(&dest),
            ">&" => {
                let dup = dest.as_ref().is_some_and(|w| {
                    w.is_static && (w.text == "-" || w.text.chars().all(|c| c.is_ascii_digit()))
                });
                !dup && !to_null(&dest)
            }
            _ => false,
        }
    }

    fn emit_command(
        &self,
        node: Node<'_>,
        extra_args: &[Node<'_>],
        stdin: Option<&Word>,
        ctx: Inherit,
        out: &mut ShellSplit,
    ) {
        let mut ctx = ctx;
        let mut here_string = None;
        let mut heredoc_args = Vec::new();
        let mut parts: Vec<Node<'_>> = Vec::new();
        for i in 0..node.child_count() {
            let Some(child) = node.child(i) else { continue };
            match child.kind() {
                "variable_assignment" => ctx.env = true,
                "file_redirect" => ctx.redirect |= self.is_output_redirect(child),
                "herestring_redirect" => here_string = self.here_string(child),
                "heredoc_redirect" => {
                    ctx.redirect |= self.heredoc_parts(child, &mut heredoc_args, &mut here_string);
                }
                "comment" => {}
                "command_name" => {
                    if let Some(inner) = child.child(0) {
                        parts.push(inner);
                    }
                }
                _ if child.is_named() => parts.push(child),
                _ => {}
            }
        }
        parts.extend_from_slice(extra_args);
        parts.extend(heredoc_args);
        let mut words: Vec<Word> = Vec::new();
        let mut prev_end: Option<usize> = None;
        for part in parts {
            let word = self.word(part);
            let gap = prev_end.and_then(|end| self.src.get(end..part.start_byte()));
            prev_end = Some(part.end_byte());
            match (gap, words.last_mut()) {
                // `gi\<newline>t` is one word for bash; tree-sitter splits it.
                (Some("\\\n" | "\\\r\n"), Some(last)) => {
                    last.text.push_str(&word.text);
                    last.is_static &= word.is_static;
                }
                _ => words.push(word),
            }
        }
        expand(words, ctx, here_string.as_ref().or(stdin), self.depth, out);
    }

    /// The unquoted text of a word node and whether it is static.
    fn word(&self, node: Node<'_>) -> Word {
        let raw = self.text(node);
        match node.kind() {
            "word" => Word {
                text: unescape_unquoted(raw),
                is_static: !has_expansion_chars(raw),
            },
            "number" => Word::fixed(raw),
            "raw_string" => Word::fixed(strip(raw, 1, 1)),
            "ansi_c_string" => {
                let (text, is_static) = unescape_ansi_c(strip(raw, 2, 1));
                Word { text, is_static }
            }
            "string" | "translated_string" => {
                let dynamic = (0..node.named_child_count())
                    .filter_map(|i| node.named_child(i))
                    .any(|c| c.kind() != "string_content");
                let open = if node.kind() == "string" { 1 } else { 2 };
                Word {
                    text: unescape_double(strip(raw, open, 1)),
                    is_static: !dynamic,
                }
            }
            "concatenation" => {
                let mut text = String::new();
                let mut is_static = true;
                for i in 0..node.child_count() {
                    if let Some(child) = node.child(i) {
                        let part = self.word(child);
                        text.push_str(&part.text);
                        is_static &= part.is_static;
                    }
                }
                Word { text, is_static }
            }
            _ => Word {
                text: raw.to_owned(),
                is_static: false,
            },
        }
    }
}

/// `$(` or a backtick anywhere in the text, quoted or not.
pub(crate) fn has_substitution_text(text: &str) -> bool {
    text.contains("$(") || text.contains('`')
}

fn push_children<'t>(node: Node<'t>, ctx: Inherit, children: &mut Vec<(Node<'t>, Inherit)>) {
    for i in 0..node.child_count() {
        if let Some(child) = node.child(i) {
            children.push((child, ctx));
        }
    }
}
