//! Shell command fragments for the policy bypass tests (issue 22), each
//! labelled with whether bash evaluates something in it that a policy
//! allowing only `git status` and `ls` did not allow.
//!
//! `@M` in a fragment stands for a marker file the fragment tries to create
//! (the payload); `@D` for a directory an attacker controls. Non-inert
//! fragments either run the payload when bash evaluates them, or do
//! something no rule allowed (set a variable, evaluate arithmetic on a
//! value, write a file). Inert fragments carry the payload where bash never
//! runs it (quotes, quoted here-documents), or hold expansions that only
//! produce text.

/// What a fragment is, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Nothing in it runs or changes anything beyond the allowed command.
    Inert,
    /// Sets, exports or removes a variable.
    Assignment,
    /// Arithmetic on values (recursively evaluated, subscripts included).
    Arithmetic,
    /// `${!x}`, `${x@P}`, `${a[x]}`: expansions that evaluate text.
    Expansion,
    /// An unquoted here-document or here-string that runs something.
    Heredoc,
    /// Output to a file.
    Redirection,
    /// `$(...)`, backticks, `<(...)`: a command that is not allowed.
    Substitution,
    /// `eval`, `bash -c`, `trap`, `source`, functions, `xargs`, `find
    /// -exec`: code run from text or from other commands.
    Interpreter,
    /// A plain command that is not allowed.
    Command,
    /// An output redirection without a command: never allowed.
    BareRedirection,
    /// Text tree-sitter-bash cannot parse: never allowed.
    Unparsable,
}

impl Class {
    /// No rule can allow it, yolo included.
    pub fn never_allowed(self) -> bool {
        matches!(self, Class::BareRedirection | Class::Unparsable)
    }
}

/// A fragment of a command line.
#[derive(Debug, Clone, Copy)]
pub struct Fragment {
    pub text: &'static str,
    pub class: Class,
}

const fn f(text: &'static str, class: Class) -> Fragment {
    Fragment { text, class }
}

use Class::*;

/// Commands the test policy allows.
pub const ALLOWED: &[&str] = &["ls", "ls -la", "git status", "git status -s"];

/// Arguments of an allowed command.
pub const ARGS: &[Fragment] = &[
    f("\"$x\"", Inert),
    f("$x", Inert),
    f("${x}", Inert),
    f("${x:-d}", Inert),
    f("\"${x:-d}\"", Inert),
    f("${#x}", Inert),
    f("${x%.rs}", Inert),
    f("${x/a/b}", Inert),
    f("${x^^}", Inert),
    f("${x@Q}", Inert),
    f("${!x*}", Inert),
    f("${a[0]}", Inert),
    f("${a[@]}", Inert),
    f("$'\\x41'", Inert),
    f("{a,b}", Inert),
    f("*.rs", Inert),
    f("~", Inert),
    f("$((1 + 2))", Inert),
    f("'$(touch @M)'", Inert),
    f("'`touch @M`'", Inert),
    f("\\`touch @M\\`", Inert),
    f("\"$(ls)\"", Inert),
    f("`ls`", Inert),
    f("${x:-$(ls)}", Inert),
    f("<(ls)", Inert),
    f("--", Inert),
    f("\"$@\"", Inert),
    f("$((x))", Arithmetic),
    f("$((x + 1))", Arithmetic),
    f("$[x]", Arithmetic),
    f("${y:x}", Arithmetic),
    f("${#a[x]}", Expansion),
    f("${a[x]}", Expansion),
    f("${!x}", Expansion),
    f("${x@P}", Expansion),
    f("${z:=1}", Assignment),
    f("${z=1}", Assignment),
    f("$(touch @M)", Substitution),
    f("`touch @M`", Substitution),
    f("\"$(touch @M)\"", Substitution),
    f("\"${x:-`touch @M`}\"", Substitution),
    f("\"${z:=`touch @M`}\"", Substitution),
    f("${x:-$(touch @M)}", Substitution),
    f("\"${x:-'$(touch @M)'}\"", Substitution),
    f("`ls \\`touch @M\\``", Substitution),
    f("<(touch @M)", Substitution),
    f(">(touch @M)", Substitution),
    f("$(( $(touch @M) ))", Substitution),
];

/// Redirections and here-strings after an allowed command.
pub const REDIRECTS: &[Fragment] = &[
    f("2>&1", Inert),
    f(">/dev/null", Inert),
    f("2>/dev/null", Inert),
    f("&>/dev/null", Inert),
    f("<<< 'text $(touch @M)'", Inert),
    f("<<< \"$HOME\"", Inert),
    f("> @M", Redirection),
    f(">> @M", Redirection),
    f("&> @M", Redirection),
    f(">| @M", Redirection),
    f("2> @M", Redirection),
    f("> $(touch @M)", Substitution),
    f("<<< \"$(touch @M)\"", Heredoc),
    f("<<< $((x))", Heredoc),
    f("<<< `touch @M`", Heredoc),
];

/// Here-documents after an allowed command: (operator, body).
pub const HEREDOCS: &[(&str, &str, Class)] = &[
    ("<<'EOF'", "$(touch @M) `touch @M` ${!x}", Inert),
    ("<<\"EOF\"", "$(touch @M)", Inert),
    ("<<\\EOF", "`touch @M`", Inert),
    ("<<EOF", "plain $HOME ${x:-d}", Inert),
    ("<<EOF", "$(ls)", Inert),
    ("<<EOF", "$(touch @M)", Heredoc),
    ("<<EOF", "`touch @M`", Heredoc),
    ("<<EOF", "a ${x:-`touch @M`} b", Heredoc),
    ("<<EOF", "${!x}", Heredoc),
    ("<<EOF", "$((x))", Heredoc),
    ("<<EOF", "'$(touch @M)'", Heredoc),
];

/// Statements of their own.
pub const STATEMENTS: &[Fragment] = &[
    f("ls", Inert),
    f("git status", Inert),
    f("(ls)", Inert),
    f("{ ls; }", Inert),
    f("[[ -f x ]]", Inert),
    f("[ -n \"$x\" ]", Inert),
    f("((1))", Inert),
    f("if ls; then git status; fi", Inert),
    f("command ls", Inert),
    f("env ls", Inert),
    f("nice -n 5 ls", Inert),
    f("bash -c 'ls'", Inert),
    f("eval 'git status'", Inert),
    f("x=1", Assignment),
    f("PATH=@D:$PATH", Assignment),
    f("HOME=@D", Assignment),
    f("FOO=1 ls", Assignment),
    f("export X=1", Assignment),
    f("declare X=1", Assignment),
    f("readonly R=1", Assignment),
    f("unset x", Assignment),
    f("read r <<< v", Assignment),
    f("for i in a; do ls; done", Assignment),
    f("for HOME in @D; do git status; done", Assignment),
    f("printf -v v x", Assignment),
    f("env X=1 ls", Assignment),
    f("((x))", Arithmetic),
    f("let x", Arithmetic),
    f("[[ $x -eq 1 ]]", Arithmetic),
    f("for ((i=0;i<1;i++)); do ls; done", Arithmetic),
    f("[ -v \"$x\" ]", Expansion),
    f("touch @M", Command),
    f("eval \"$x\"", Interpreter),
    f("eval 'touch @M'", Interpreter),
    f("bash -c 'touch @M'", Interpreter),
    f("bash -c \"$x\"", Interpreter),
    f("trap 'touch @M' EXIT", Interpreter),
    f("f() { ls; }", Interpreter),
    f("ls() { touch @M; }", Interpreter),
    f("source @M", Interpreter),
    f("ls | xargs touch", Interpreter),
    f("find . -maxdepth 0 -exec touch @M \\;", Interpreter),
    f("env -S 'touch @M'", Interpreter),
    f("coproc ls", Assignment),
    f("exec > @M", Redirection),
    f("> @M", BareRedirection),
    f(">> @M", BareRedirection),
];

/// Texts that do not parse; each tries to run the payload first.
pub const UNPARSABLE: &[&str] = &[
    "touch @M\nls (",
    "touch @M\ngit status &&",
    "touch @M\nls 'unterminated",
    "touch @M; ls )",
    "touch @M\nls $(",
    "git status\ntouch @M\nls `x",
];

/// Separators between statements.
pub const SEPARATORS: &[&str] = &["; ", " && ", " || ", " | ", "\n", " & "];

/// Replaces the placeholders.
pub fn fill(text: &str, marker: &str, dir: &str) -> String {
    text.replace("@M", marker).replace("@D", dir)
}

/// One statement of a composition.
#[derive(Debug, Clone)]
pub enum Segment {
    /// An allowed command with arguments, redirections and a here-document
    /// (indices into [`ALLOWED`], [`ARGS`], [`REDIRECTS`], [`HEREDOCS`]).
    Allowed {
        command: usize,
        args: Vec<usize>,
        redirect: Option<usize>,
        heredoc: Option<usize>,
    },
    /// A statement of [`STATEMENTS`].
    Statement(usize),
    /// A text of [`UNPARSABLE`].
    Unparsable(usize),
}

/// Statements joined by separators (indices into [`SEPARATORS`]).
#[derive(Debug, Clone)]
pub struct Composition {
    pub segments: Vec<Segment>,
    pub separators: Vec<usize>,
}

impl Composition {
    /// The classes of every fragment in it.
    pub fn classes(&self) -> Vec<Class> {
        let mut out = Vec::new();
        for segment in &self.segments {
            match segment {
                Segment::Allowed {
                    args,
                    redirect,
                    heredoc,
                    ..
                } => {
                    out.extend(args.iter().map(|&a| ARGS[a].class));
                    out.extend(redirect.map(|r| REDIRECTS[r].class));
                    out.extend(heredoc.map(|h| HEREDOCS[h].2));
                }
                Segment::Statement(s) => out.push(STATEMENTS[*s].class),
                Segment::Unparsable(_) => out.push(Unparsable),
            }
        }
        out
    }

    /// The classes that are not inert.
    pub fn hazards(&self) -> Vec<Class> {
        let mut out: Vec<Class> = self.classes().into_iter().filter(|c| *c != Inert).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The command line, with `marker` and `dir` in place of `@M` and `@D`.
    pub fn render(&self, marker: &str, dir: &str) -> String {
        let mut out = String::new();
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                let previous_heredoc = matches!(
                    self.segments[i - 1],
                    Segment::Allowed {
                        heredoc: Some(_),
                        ..
                    }
                );
                let sep = self.separators.get(i - 1).map_or("; ", |&s| SEPARATORS[s]);
                out.push_str(if previous_heredoc { "\n" } else { sep });
            }
            out.push_str(&segment_text(segment));
        }
        fill(&out, marker, dir)
    }
}

fn segment_text(segment: &Segment) -> String {
    match segment {
        Segment::Allowed {
            command,
            args,
            redirect,
            heredoc,
        } => {
            let mut text = ALLOWED[*command].to_owned();
            for &a in args {
                text.push(' ');
                text.push_str(ARGS[a].text);
            }
            if let Some(r) = redirect {
                text.push(' ');
                text.push_str(REDIRECTS[*r].text);
            }
            if let Some(h) = heredoc {
                let (op, body, _) = HEREDOCS[*h];
                text.push_str(&format!(" {op}\n{body}\nEOF"));
            }
            text
        }
        Segment::Statement(s) => STATEMENTS[*s].text.to_owned(),
        Segment::Unparsable(u) => UNPARSABLE[*u].to_owned(),
    }
}

/// Indices of the fragments of `list` whose class is (or is not) inert.
pub fn indices(list: &[Fragment], inert: bool) -> Vec<usize> {
    (0..list.len())
        .filter(|&i| (list[i].class == Inert) == inert)
        .collect()
}

/// Indices of the here-documents whose class is (or is not) inert.
pub fn heredoc_indices(inert: bool) -> Vec<usize> {
    (0..HEREDOCS.len())
        .filter(|&i| (HEREDOCS[i].2 == Inert) == inert)
        .collect()
}
