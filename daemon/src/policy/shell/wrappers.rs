//! Commands that run the rest of their words as another command: `env`,
//! `nice`, `timeout`, `sudo`, `xargs`, `find -exec`. The wrapped command is
//! a part of its own.

use super::command::{Expanded, basename, join};
use super::types::{Hazard, Inherit, PartKind, Word};

impl Expanded {
    /// `env`, `nice`, `sudo`, ...: the wrapper, then what it wraps.
    pub(super) fn wrapper(
        &mut self,
        words: &[Word],
        ctx: Inherit,
        stdin: Option<&Word>,
        plain: &[&str],
        with_arg: &[&str],
        escalates: bool,
    ) {
        let name = basename(&words[0].text);
        let args = &words[1..];
        let opts = skip_options(args, plain, with_arg, name);
        let inner = args.get(opts.start..).unwrap_or(&[]);
        let kind = if !opts.known {
            PartKind::Evaluated(Hazard::Dynamic)
        } else if opts.transparent && !escalates && !inner.is_empty() {
            PartKind::Wrapper
        } else {
            PartKind::Command
        };
        self.push(words, ctx, kind);
        for assignment in &opts.assignments {
            self.hazard(Hazard::Assignment, &format!("{name} {assignment}"));
        }
        if inner.is_empty() && ctx.runtime_args {
            self.hazard(Hazard::Dynamic, &join(words));
        }
        if !inner.is_empty() {
            self.command(inner.to_vec(), ctx, stdin);
        }
    }

    /// `xargs [options] cmd args`: `cmd` gets more arguments at run time,
    /// or, with `-I R`, every word holding `R` is only known at run time.
    pub(super) fn xargs(
        &mut self,
        words: &[Word],
        ctx: Inherit,
        plain: &[&str],
        with_arg: &[&str],
    ) {
        let args = &words[1..];
        let mut replace: Option<String> = None;
        let mut known = true;
        let mut i = 0;
        while let Some(word) = args.get(i) {
            let text = word.text.as_str();
            known &= word.is_static;
            i += 1;
            match text {
                "--" => break,
                "-I" => {
                    replace = args.get(i).map(|w| w.text.clone());
                    i += 1;
                }
                "-i" | "--replace" => replace = Some("{}".to_owned()),
                _ if text.starts_with("--replace=") => {
                    replace = text.strip_prefix("--replace=").map(str::to_owned);
                }
                _ if text.starts_with("-I") || text.starts_with("-i") => {
                    replace = text.get(2..).map(str::to_owned);
                }
                _ if plain.contains(&text) => {}
                _ if with_arg.contains(&text) => i += 1,
                _ if text.len() > 1 && text.starts_with('-') => {
                    let attached = with_arg
                        .iter()
                        .any(|opt| !opt.starts_with("--") && text.starts_with(opt));
                    known &= attached
                        || with_arg.iter().any(|opt| {
                            opt.starts_with("--") && text.starts_with(&format!("{opt}="))
                        });
                }
                _ => {
                    i -= 1;
                    break;
                }
            }
        }
        let inner = args.get(i..).unwrap_or(&[]);
        let kind = match (known, inner.is_empty()) {
            (false, _) => PartKind::Evaluated(Hazard::Dynamic),
            (true, false) => PartKind::Wrapper,
            (true, true) => PartKind::Command,
        };
        self.push(words, ctx, kind);
        if inner.is_empty() {
            return;
        }
        let inner: Vec<Word> = match &replace {
            Some(r) if !r.is_empty() => inner
                .iter()
                .map(|w| match w.text.contains(r.as_str()) {
                    true => Word::dynamic(&w.text, w.single),
                    false => w.clone(),
                })
                .collect(),
            _ => inner.to_vec(),
        };
        let inner_ctx = Inherit {
            runtime_args: ctx.runtime_args || replace.is_none(),
            ..ctx
        };
        self.command(inner, inner_ctx, None);
    }

    /// `find ... -exec CMD ... ;` runs CMD (with `{}` only known at run
    /// time); an argument only known at run time could be `-exec` itself.
    pub(super) fn find(&mut self, args: &[Word], ctx: Inherit) {
        if args.iter().any(|w| !w.is_static) {
            self.hazard(Hazard::Dynamic, &format!("find {}", join(args)));
        }
        let ctx = Inherit {
            runtime_args: false,
            ..ctx
        };
        let mut i = 0;
        while i < args.len() {
            let is_exec = matches!(
                args[i].text.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            );
            i += 1;
            if !is_exec {
                continue;
            }
            let start = i;
            while i < args.len() && !matches!(args[i].text.as_str(), ";" | "+") {
                i += 1;
            }
            let inner: Vec<Word> = args[start..i]
                .iter()
                .map(|w| match w.text.contains("{}") {
                    true => Word::dynamic(&w.text, w.single),
                    false => w.clone(),
                })
                .collect();
            self.command(inner, ctx, None);
        }
    }
}

/// What `skip_options` found.
struct Options {
    /// Index of the wrapped command.
    start: usize,
    /// Every option was recognised.
    known: bool,
    /// The wrapper changes nothing but how the command runs (not `env -C`).
    transparent: bool,
    /// `NAME=value` words and `-u NAME` options (for `env`).
    assignments: Vec<String>,
}

/// Skips a wrapper's options.
fn skip_options(args: &[Word], plain: &[&str], with_arg: &[&str], name: &str) -> Options {
    let mut opts = Options {
        start: 0,
        known: true,
        transparent: true,
        assignments: Vec::new(),
    };
    let mut i = 0;
    let mut need_duration = name == "timeout";
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if !word.is_static {
            opts.known = false;
        }
        if text == "--" {
            i += 1;
            break;
        }
        if name == "env" {
            if is_assignment(text) {
                opts.assignments.push(text.to_owned());
                i += 1;
                continue;
            }
            if text == "-S" || text.starts_with("--split-string") {
                // `env -S 'cmd args'` re-splits a string: not followed.
                opts.known = false;
                i = args.len();
                break;
            }
            if matches!(text, "-C" | "--chdir") || text.starts_with("--chdir=") {
                // Like `cd`: the command runs somewhere else.
                opts.transparent = false;
                i += if text.contains('=') { 1 } else { 2 };
                continue;
            }
            if matches!(text, "-u" | "--unset") {
                let unset = args.get(i + 1).map_or("", |w| w.text.as_str());
                opts.assignments.push(format!("{text} {unset}"));
                i += 2;
                continue;
            }
        }
        if text.len() > 1 && text.starts_with('-') {
            i += 1;
            if plain.contains(&text) {
                continue;
            }
            if with_arg.contains(&text) {
                i += 1;
                continue;
            }
            let attached = with_arg.iter().any(|opt| {
                text.starts_with(opt)
                    && (opt.starts_with("--") && text[opt.len()..].starts_with('=')
                        || !opt.starts_with("--"))
            });
            let nice_level = name == "nice" && text[1..].chars().all(|c| c.is_ascii_digit());
            if !(attached || nice_level) {
                opts.known = false;
            }
            if name == "env" && text.starts_with("-u") {
                opts.assignments.push(text.to_owned());
            }
            continue;
        }
        if need_duration {
            need_duration = false;
            i += 1;
            continue;
        }
        break;
    }
    opts.start = i.min(args.len());
    opts
}

fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}
