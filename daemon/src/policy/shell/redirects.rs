//! Redirections: which command they belong to, whether they write a file,
//! what they read, and the here-documents they carry.

use super::scan::scan_expanding;
use super::types::{Attached, Hazard, PartKind, ShellSplit, Word};
use super::walk::Walker;
use super::words::{children_with_fields, named_children, redirect_operator, text, word};
use tree_sitter::Node;

pub(super) fn is_descriptor(word: &Word) -> bool {
    word.is_static && (word.text == "-" || word.text.chars().all(|c| c.is_ascii_digit()))
}

/// A here-document with a quoted delimiter (`<<'EOF'`, `<<"EOF"`,
/// `<<\EOF`) is not expanded.
pub(super) fn heredoc_quoted(src: &str, node: Node<'_>) -> bool {
    named_children(node)
        .find(|c| c.kind() == "heredoc_start")
        .is_some_and(|start| text(src, start).contains(['\'', '"', '\\']))
}

/// The command a redirection of `node` belongs to: the last one of a
/// pipeline or list, else `node` itself.
pub(super) fn last_command(mut node: Node<'_>) -> Node<'_> {
    while matches!(node.kind(), "pipeline" | "list" | "negated_command") {
        let last = named_children(node).rev().find(|c| c.kind() != "comment");
        match last {
            Some(last) => node = last,
            None => break,
        }
    }
    node
}

impl Walker<'_> {
    /// `body > file`, `body <<EOF`: bash attaches the redirections to the
    /// last command of a pipeline or list (`a | b > f` writes `b`'s output),
    /// and to the whole of a group, subshell or loop.
    pub(super) fn redirected(&mut self, node: Node<'_>, out: &mut ShellSplit) {
        let mut attached = Attached::default();
        for (child, field) in children_with_fields(node) {
            if field != Some("redirect") {
                continue;
            }
            match child.kind() {
                "file_redirect" => attached.redirect |= self.is_output_redirect(child),
                "herestring_redirect" => attached.stdin = self.here_string(child),
                "heredoc_redirect" => {
                    let mut args = Vec::new();
                    attached.redirect |= self.heredoc_parts(child, &mut args, &mut attached.stdin);
                    attached.args.extend(args);
                }
                _ => {}
            }
        }
        match node.child_by_field_name("body") {
            Some(body) => self.attach(last_command(body).id(), attached),
            None if attached.redirect => out.push(PartKind::BareRedirection, self.text(node)),
            None => {}
        }
    }

    /// Collects a here-document's trailing arguments (`cat <<EOF file`) and
    /// text; returns whether it also redirects output (`cat <<EOF > file`).
    pub(super) fn heredoc_parts(
        &self,
        node: Node<'_>,
        args: &mut Vec<Word>,
        stdin: &mut Option<Word>,
    ) -> bool {
        let mut redirect = false;
        for (part, field) in children_with_fields(node) {
            match field {
                Some("redirect") => redirect |= self.is_output_redirect(part),
                Some("argument") => args.push(word(self.src, part)),
                _ if part.kind() == "heredoc_body" => {
                    let body = self.text(part);
                    let is_static = heredoc_quoted(self.src, node) || !scan_expanding(body).expands;
                    *stdin = Some(Word {
                        text: body.to_owned(),
                        is_static,
                        single: true,
                    });
                }
                _ => {}
            }
        }
        redirect
    }

    /// An unquoted here-document body is expanded like double quotes.
    pub(super) fn heredoc_body(&mut self, node: Node<'_>, out: &mut ShellSplit) {
        if heredoc_quoted(self.src, node) {
            return;
        }
        let body = named_children(node).find(|c| c.kind() == "heredoc_body");
        if let Some(body) = body {
            let raw = self.text(body);
            self.scanned(scan_expanding(raw), out);
        }
    }

    /// The content of `<<< word`.
    pub(super) fn here_string(&self, node: Node<'_>) -> Option<Word> {
        let count = node.named_child_count();
        let last = node.named_child(count.checked_sub(1)?)?;
        (last.kind() != "file_descriptor").then(|| word(self.src, last))
    }

    pub(super) fn destination(&self, node: Node<'_>) -> Option<Word> {
        node.child_by_field_name("destination")
            .map(|d| word(self.src, d))
    }

    /// Output redirection: `>`, `>>`, `>|`, `&>`, `&>>` and `>&FILE` to
    /// anything but `/dev/null`, `/dev/stdout` or `/dev/stderr`. Descriptor
    /// duplication (`2>&1`, `>&-`) and input are not.
    pub(super) fn is_output_redirect(&self, node: Node<'_>) -> bool {
        if node.kind() != "file_redirect" {
            return false;
        }
        let dest = self.destination(node);
        let to_null = dest.as_ref().is_some_and(|w| {
            w.is_static && matches!(w.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr")
        });
        match redirect_operator(self.src, node) {
            ">" | ">>" | ">|" | "&>" | "&>>" => !to_null,
            ">&" => !to_null && !dest.as_ref().is_some_and(is_descriptor),
            _ => false,
        }
    }

    /// Input from a file only known at run time, or from `/dev/tcp`.
    pub(super) fn input_redirect(&self, node: Node<'_>, out: &mut ShellSplit) {
        let op = redirect_operator(self.src, node);
        if !matches!(op, "<" | "<&") {
            return;
        }
        let inert = self.destination(node).is_some_and(|w| {
            w.is_static
                && !w.text.starts_with("/dev/tcp/")
                && !w.text.starts_with("/dev/udp/")
                && (op == "<" || is_descriptor(&w))
        });
        if !inert {
            out.hazard(Hazard::Input, self.text(node));
        }
    }
}
