//! Word-level expansion of a simple command: command wrappers (`env`,
//! `sudo`, `xargs`, `timeout N`, ...), shells run with `-c`, `eval` and
//! `find -exec`. The wrapped command is emitted as a sub-command of its own.

use crate::policy::shell::{
    CommandRole, ShellCommand, ShellSplit, has_substitution_text, split_into,
};

/// A word of a command after unquoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// Unquoted text (raw text when not static).
    pub text: String,
    /// The value is known without running anything (no expansions, globs).
    pub is_static: bool,
}

impl Word {
    pub(crate) fn fixed(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            is_static: true,
        }
    }
}

/// Properties inherited from enclosing constructs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Inherit {
    /// Output of the enclosing statement is redirected to a file.
    pub redirect: bool,
    /// Environment assignments apply.
    pub env: bool,
}

/// Transparent wrappers: (name, flags without argument, flags taking one).
const WRAPPERS: &[(&str, &[&str], &[&str])] = &[
    ("command", &["-p", "-v", "-V"], &[]),
    ("exec", &["-c", "-l"], &["-a"]),
    ("nohup", &[], &[]),
    ("builtin", &[], &[]),
    ("busybox", &[], &[]),
    ("coproc", &[], &[]),
    (
        "time",
        &[
            "-p",
            "-v",
            "-q",
            "-a",
            "--verbose",
            "--quiet",
            "--append",
            "--portability",
        ],
        &["-o", "-f", "--output", "--format"],
    ),
    ("nice", &[], &["-n", "--adjustment"]),
    (
        "env",
        &["-i", "-0", "-", "--ignore-environment", "--null"],
        &["-u", "-C", "--unset", "--chdir"],
    ),
    (
        "timeout",
        &["-v", "--preserve-status", "--foreground", "--verbose"],
        &["-s", "-k", "--signal", "--kill-after"],
    ),
    (
        "xargs",
        &[
            "-0",
            "-r",
            "-t",
            "-p",
            "-x",
            "-o",
            "--null",
            "--no-run-if-empty",
            "--verbose",
            "--interactive",
            "--exit",
            "--open-tty",
        ],
        &[
            "-I",
            "-n",
            "-L",
            "-P",
            "-d",
            "-E",
            "-s",
            "-a",
            "--max-args",
            "--max-lines",
            "--max-procs",
            "--delimiter",
            "--eof",
            "--max-chars",
            "--arg-file",
            "--replace",
        ],
    ),
    (
        "stdbuf",
        &[],
        &["-i", "-o", "-e", "--input", "--output", "--error"],
    ),
];

/// Privilege escalation: the outer command always counts.
const ESCALATORS: &[(&str, &[&str], &[&str])] = &[
    (
        "sudo",
        &[
            "-E",
            "-H",
            "-n",
            "-S",
            "-b",
            "-k",
            "-K",
            "-P",
            "-A",
            "--preserve-env",
            "--non-interactive",
            "--stdin",
            "--set-home",
        ],
        &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
            "--chdir", "--prompt",
        ],
    ),
    ("doas", &["-n", "-s"], &["-u", "-C"]),
];

const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish"];

/// Emits `words` as a sub-command and expands what it wraps.
/// `stdin` is the text of a here-doc or here-string feeding the command.
pub(crate) fn expand(
    words: Vec<Word>,
    ctx: Inherit,
    stdin: Option<&Word>,
    depth: usize,
    out: &mut ShellSplit,
) {
    expand_role(words, ctx, CommandRole::Leaf, stdin, depth, out);
}

fn basename(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn push(words: &[Word], ctx: Inherit, role: CommandRole, opaque: bool, out: &mut ShellSplit) {
    let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
    let name_dynamic = words.first().is_some_and(|w| !w.is_static);
    out.commands.push(ShellCommand {
        text: texts.join(" "),
        words: texts,
        role,
        output_redirect: ctx.redirect,
        env_assignments: ctx.env,
        opaque: opaque || name_dynamic,
    });
}

fn expand_role(
    words: Vec<Word>,
    ctx: Inherit,
    role: CommandRole,
    stdin: Option<&Word>,
    depth: usize,
    out: &mut ShellSplit,
) {
    let Some(first) = words.first() else {
        if ctx.redirect {
            // `> file` alone truncates a file: check it as an empty command.
            push(&words, ctx, CommandRole::Leaf, false, out);
        }
        return;
    };
    let name = basename(&first.text).to_owned();
    let args = &words[1..];
    if let Some((_, plain, with_arg)) = WRAPPERS.iter().find(|(w, _, _)| *w == name) {
        let (start, known, env) = skip_options(args, plain, with_arg, &name);
        let inner_ctx = Inherit {
            env: ctx.env || env,
            ..ctx
        };
        let inner = &args[start..];
        let transparent = known && !inner.is_empty();
        let outer_role = if transparent {
            CommandRole::Context
        } else {
            role
        };
        push(&words, ctx, outer_role, !known, out);
        if !inner.is_empty() {
            expand_role(
                inner.to_vec(),
                inner_ctx,
                CommandRole::Leaf,
                stdin,
                depth,
                out,
            );
        }
        return;
    }
    if let Some((_, plain, with_arg)) = ESCALATORS.iter().find(|(w, _, _)| *w == name) {
        let (start, known, env) = skip_options(args, plain, with_arg, &name);
        push(&words, ctx, role, !known, out);
        let inner = &args[start..];
        if !inner.is_empty() {
            let inner_ctx = Inherit {
                env: ctx.env || env,
                ..ctx
            };
            expand_role(
                inner.to_vec(),
                inner_ctx,
                CommandRole::Leaf,
                stdin,
                depth,
                out,
            );
        }
        return;
    }
    if SHELLS.contains(&name.as_str()) {
        shell_payload(&words, ctx, role, stdin, depth, out);
        return;
    }
    if name == "trap" {
        // `trap 'cmd' SIGNAL` runs cmd later: check it now.
        push(&words, ctx, role, false, out);
        match args.first() {
            Some(payload) if payload.is_static => split_into(&payload.text, depth + 1, ctx, out),
            Some(_) => out.parse_error = true,
            None => {}
        }
        return;
    }
    if name == "eval" {
        let all_static = args.iter().all(|w| w.is_static);
        if all_static && !args.is_empty() {
            push(&words, ctx, CommandRole::Context, false, out);
            let payload: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            split_into(&payload.join(" "), depth + 1, ctx, out);
        } else {
            push(&words, ctx, role, !args.is_empty(), out);
        }
        return;
    }
    if name == "let" && args.iter().any(|w| has_substitution_text(&w.text)) {
        out.unverifiable = true;
    }
    push(&words, ctx, role, false, out);
    if name == "find" {
        find_exec(args, ctx, depth, out);
    }
}

/// `bash [options] -c 'payload' [args]`: the payload is parsed recursively.
fn shell_payload(
    words: &[Word],
    ctx: Inherit,
    role: CommandRole,
    stdin: Option<&Word>,
    depth: usize,
    out: &mut ShellSplit,
) {
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
                        'e' | 'u' | 'x' | 'l' | 'v' | 'f' | 'n' | 'a' | 'i' | 'p' | 'h' | 'B'
                        | 'C' | 'E' | 'H' | 'T' | 'm' | 'b' | 'k' | 't' | 's' => {}
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
    match payload {
        Some(p) if has_c && p.is_static => {
            let outer = if known { CommandRole::Context } else { role };
            push(words, ctx, outer, false, out);
            split_into(&p.text, depth + 1, ctx, out);
        }
        Some(_) if has_c => push(words, ctx, role, true, out),
        Some(_) => push(words, ctx, role, !known, out),
        // No `-c` and no script file: the shell runs its standard input.
        None => match stdin {
            Some(script) if script.is_static && !has_c => {
                push(words, ctx, role, !known, out);
                split_into(&script.text, depth + 1, ctx, out);
            }
            _ => push(words, ctx, role, true, out),
        },
    }
}

/// `find ... -exec CMD ... ;` runs CMD: check it as a sub-command.
fn find_exec(args: &[Word], ctx: Inherit, depth: usize, out: &mut ShellSplit) {
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
            .filter(|w| w.text != "{}")
            .cloned()
            .collect();
        expand_role(inner, ctx, CommandRole::Leaf, None, depth, out);
    }
}

/// Skips a wrapper's options. Returns the index of the wrapped command,
/// whether every option was recognised, and whether `NAME=value` words
/// (for `env`) were seen.
fn skip_options(
    args: &[Word],
    plain: &[&str],
    with_arg: &[&str],
    name: &str,
) -> (usize, bool, bool) {
    let mut known = true;
    let mut env = false;
    let mut i = 0;
    let mut need_duration = name == "timeout";
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if !word.is_static {
            known = false;
        }
        if text == "--" {
            i += 1;
            break;
        }
        if name == "env" && is_assignment(text) {
            env = true;
            i += 1;
            continue;
        }
        if name == "env" && (text == "-S" || text.starts_with("--split-string")) {
            // `env -S 'cmd args'` re-splits a string: not expanded, so opaque.
            return (args.len(), false, env);
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
                known = false;
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
    (i.min(args.len()), known, env)
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
