//! Commands that run text as code: shells (`bash -c 'payload'`, a script
//! on standard input), `eval` and `trap`. A static payload is split like the
//! command line itself; one only known at run time is dynamic.

use super::command::{Expanded, join};
use super::types::{Hazard, Inherit, PartKind, Word};

impl Expanded {
    /// `eval args`: bash joins the arguments and runs them.
    pub(super) fn eval(&mut self, words: &[Word], ctx: Inherit) {
        let args = &words[1..];
        if args.is_empty() {
            self.push(words, ctx, PartKind::Command);
        } else if args.iter().all(|w| w.is_static) {
            self.push(words, ctx, PartKind::Wrapper);
            self.script(&join(args), ctx);
        } else {
            self.push(words, ctx, PartKind::Evaluated(Hazard::Dynamic));
        }
    }

    /// `trap 'cmd' SIGNAL` runs cmd later: it is checked now.
    pub(super) fn trap(&mut self, words: &[Word], ctx: Inherit) {
        self.push(words, ctx, PartKind::Command);
        let mut args = words[1..].iter().peekable();
        if args.peek().is_some_and(|w| w.is_static && w.text == "--") {
            args.next();
        }
        match args.next() {
            Some(payload) if payload.is_static && payload.text.starts_with('-') => {}
            Some(payload) if payload.is_static => self.script(&payload.text, ctx),
            Some(payload) => self.hazard(Hazard::Dynamic, &payload.text),
            None => {}
        }
    }

    /// `bash [options] -c 'payload' [args]`, `bash script`, `bash <<EOF`.
    pub(super) fn shell(&mut self, words: &[Word], ctx: Inherit, stdin: Option<&Word>) {
        let mut has_c = false;
        let mut known = true;
        let mut payload: Option<&Word> = None;
        let mut i = 1;
        while let Some(word) = words.get(i) {
            i += 1;
            let text = word.text.as_str();
            if !word.is_static {
                known = false;
                if text.starts_with('-') {
                    continue;
                }
            }
            match text {
                "--" => {
                    payload = words.get(i);
                    break;
                }
                "-o" | "+o" => i += 1,
                "--norc" | "--noprofile" | "--login" | "--posix" | "--noediting" | "-" => {}
                _ if text.starts_with("--") => known = false,
                _ if text.len() > 1 && (text.starts_with('-') || text.starts_with('+')) => {
                    for c in text.chars().skip(1) {
                        match c {
                            'c' => has_c = true,
                            'o' => i += 1,
                            'e' | 'u' | 'x' | 'l' | 'v' | 'f' | 'n' | 'a' | 'i' | 'p' | 'h'
                            | 'B' | 'C' | 'E' | 'H' | 'T' | 'm' | 'b' | 'k' | 't' | 's' => {}
                            _ => known = false,
                        }
                    }
                }
                _ => {
                    payload = Some(word);
                    break;
                }
            }
        }
        let dynamic = PartKind::Evaluated(Hazard::Dynamic);
        let ran = if known { PartKind::Command } else { dynamic };
        let wraps = if known { PartKind::Wrapper } else { dynamic };
        match (payload, stdin) {
            (Some(p), _) if has_c && p.is_static => {
                self.push(words, ctx, wraps);
                self.script(&p.text, ctx);
            }
            (Some(_), _) if has_c => self.push(words, ctx, dynamic),
            // `bash script.sh`: the rule allowing the shell allows the file.
            (Some(_), _) if !ctx.runtime_args => self.push(words, ctx, ran),
            // No `-c` and no script file: the shell runs its standard input.
            (None, Some(script)) if script.is_static && !has_c && !ctx.runtime_args => {
                self.push(words, ctx, wraps);
                self.script(&script.text, ctx);
            }
            _ => self.push(words, ctx, dynamic),
        }
    }
}
