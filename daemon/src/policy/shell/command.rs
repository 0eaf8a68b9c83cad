//! Word-level analysis of one simple command: which command it is, what
//! it wraps (`wrappers.rs`), which texts it runs as code (`payloads.rs`),
//! and what its builtin arguments evaluate (`builtins.rs`). Texts bash will
//! parse and run (static `bash -c`, `eval` and `trap` payloads) are handed
//! back for the walker to split.

use super::builtins::{builtin_hazards, is_inspected};
use super::types::{Hazard, Inherit, PartKind, ShellPart, Word};
use super::wrapper_names::{ESCALATORS, SHELLS, WRAPPERS};

/// What a simple command expands to.
#[derive(Debug, Default)]
pub(crate) struct Expanded {
    /// Its parts, outer before inner.
    pub parts: Vec<ShellPart>,
    /// Texts bash parses and runs as commands, with what they inherit.
    pub scripts: Vec<(String, Inherit)>,
}

/// Analyses the command `words` (name first). `stdin` is the text of a
/// here-document or here-string feeding it.
pub(crate) fn expand(words: Vec<Word>, ctx: Inherit, stdin: Option<&Word>) -> Expanded {
    let mut out = Expanded::default();
    out.command(words, ctx, stdin);
    out
}

pub(super) fn basename(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

pub(super) fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Expanded {
    pub(super) fn push(&mut self, words: &[Word], ctx: Inherit, kind: PartKind) {
        let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        self.parts.push(ShellPart {
            kind,
            text: texts.join(" "),
            words: texts,
            output_redirect: ctx.redirect,
        });
    }

    pub(super) fn hazard(&mut self, hazard: Hazard, text: &str) {
        self.parts
            .push(ShellPart::evaluated(PartKind::Evaluated(hazard), text));
    }

    pub(super) fn script(&mut self, text: &str, ctx: Inherit) {
        let ctx = Inherit {
            runtime_args: false,
            ..ctx
        };
        self.scripts.push((text.to_owned(), ctx));
    }

    pub(super) fn command(&mut self, words: Vec<Word>, ctx: Inherit, stdin: Option<&Word>) {
        let Some(first) = words.first() else {
            return;
        };
        if !first.is_static {
            self.push(&words, ctx, PartKind::Evaluated(Hazard::Dynamic));
            return;
        }
        let name = basename(&first.text).to_owned();
        let args = &words[1..];
        if let Some((_, plain, with_arg)) = WRAPPERS.iter().find(|(w, _, _)| *w == name) {
            if name == "xargs" {
                self.xargs(&words, ctx, plain, with_arg);
            } else {
                self.wrapper(&words, ctx, stdin, plain, with_arg, false);
            }
            return;
        }
        if let Some((_, plain, with_arg)) = ESCALATORS.iter().find(|(w, _, _)| *w == name) {
            self.wrapper(&words, ctx, stdin, plain, with_arg, true);
            return;
        }
        if SHELLS.contains(&name.as_str()) {
            self.shell(&words, ctx, stdin);
            return;
        }
        let text = join(&words);
        let runtime = ctx.runtime_args
            && (is_inspected(&name) || matches!(name.as_str(), "find" | "eval" | "trap"));
        match name.as_str() {
            "eval" => self.eval(&words, ctx),
            "trap" => self.trap(&words, ctx),
            "coproc" => {
                self.push(&words, ctx, PartKind::Wrapper);
                self.hazard(Hazard::Assignment, "coproc");
                self.command(args.to_vec(), ctx, stdin);
            }
            _ => self.push(&words, ctx, PartKind::Command),
        }
        if runtime {
            // Arguments appended at run time could be exactly what this
            // command is inspected for (`-exec`, `-v`, a payload).
            self.hazard(Hazard::Dynamic, &text);
        }
        for (hazard, text) in builtin_hazards(&name, args, &text) {
            self.hazard(hazard, &text);
        }
        if name == "find" {
            self.find(args, ctx);
        }
    }
}
