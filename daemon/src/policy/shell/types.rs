//! What the splitter reports: the parts of a command line bash would
//! evaluate, and the words they are made of.

/// What one evaluated part of a command line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// A simple command that runs: rules match its words.
    Command,
    /// A command that only hands its arguments to another one (`env X`,
    /// `bash -c '...'`, `eval ...`): only a rule naming it counts.
    Wrapper,
    /// Text bash evaluates that is neither a command nor provably inert: no
    /// rule about particular commands can allow it.
    Evaluated(Hazard),
    /// An output redirection without a command (`> file`): it creates or
    /// truncates a file, and no rule can allow it.
    BareRedirection,
}

/// Why an evaluated part is not provably inert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hazard {
    /// Sets, exports or removes a shell variable (`x=1`, `FOO=1 cmd`,
    /// `export`, `read`, `for x in`, `${x:=...}`, `printf -v`).
    Assignment,
    /// Arithmetic on more than literal numbers: bash evaluates a variable's
    /// value as an expression there, and subscripts in it run `$(...)`.
    Arithmetic,
    /// `${a[i]}` and friends: the subscript of an indexed array is
    /// arithmetic.
    Subscript,
    /// `${!x}`: the value of `x` names what is expanded, subscripts included.
    Indirection,
    /// `${x@P}`: the value is expanded like a prompt, `$(...)` included.
    PromptExpansion,
    /// A builtin given a variable name that is not a plain identifier
    /// (`test -v 'a[$(cmd)]'`) or that is only known at run time.
    VariableName,
    /// Defines a function, which later words may call instead of a command.
    Function,
    /// A command whose name, or the code it runs (`bash -c "$X"`, `eval`,
    /// a shell reading a pipe, `find` or `xargs` with arguments only known at
    /// run time), is only known at run time.
    Dynamic,
    /// Reads from a file only known at run time or from a network socket
    /// (`< /dev/tcp/...`).
    Input,
    /// Syntax the splitter does not recognise inside an expansion or word.
    Unrecognised,
}

impl Hazard {
    /// Why this part needs approval, for people.
    pub fn explain(self) -> &'static str {
        match self {
            Self::Assignment => "it sets a shell variable, which changes what later commands do",
            Self::Arithmetic => {
                "bash evaluates it as arithmetic, where a variable's value can run commands"
            }
            Self::Subscript => "an array subscript is arithmetic, where a value can run commands",
            Self::Indirection => "an indirect expansion evaluates the name a variable holds",
            Self::PromptExpansion => "prompt expansion runs the command substitutions in a value",
            Self::VariableName => "a variable name with a subscript can run commands",
            Self::Function => "it defines a function that later words may call",
            Self::Dynamic => "what it runs is only known at run time",
            Self::Input => "it reads from a file only known at run time or from the network",
            Self::Unrecognised => "it contains an expansion the splitter does not recognise",
        }
    }
}

/// One part of a command line that bash evaluates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellPart {
    /// What it is.
    pub kind: PartKind,
    /// Commands: the unquoted words (name first, without `NAME=value`
    /// prefixes and redirections). Other parts: their source text as one
    /// word.
    pub words: Vec<String>,
    /// The words joined by single spaces; what rules match against.
    pub text: String,
    /// Commands: output goes to a file.
    pub output_redirect: bool,
}

impl ShellPart {
    /// A part of `kind` whose text is `text`.
    pub(crate) fn evaluated(kind: PartKind, text: &str) -> Self {
        let text = text.trim().to_owned();
        Self {
            kind,
            words: vec![text.clone()],
            text,
            output_redirect: false,
        }
    }
}

/// The result of splitting a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellSplit {
    /// Every part found, outer ones before the ones they contain.
    pub parts: Vec<ShellPart>,
    /// The parser reported errors (ERROR/MISSING nodes), nesting was too
    /// deep, the line too long, or a nested text could not be delimited.
    pub parse_error: bool,
}

impl ShellSplit {
    /// The distinct command names of the commands that run (statically
    /// known), in order: what an "always allow" answer can offer (`git`,
    /// `ls`).
    pub fn roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = Vec::new();
        for part in &self.parts {
            if part.kind != PartKind::Command {
                continue;
            }
            if let Some(name) = part.words.first()
                && !name.is_empty()
                && !roots.contains(name)
            {
                roots.push(name.clone());
            }
        }
        roots
    }

    pub(crate) fn push(&mut self, kind: PartKind, text: &str) {
        self.parts.push(ShellPart::evaluated(kind, text));
    }

    pub(crate) fn hazard(&mut self, hazard: Hazard, text: &str) {
        self.push(PartKind::Evaluated(hazard), text);
    }
}

/// A word of a command after unquoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// Unquoted text (raw text where it is not static).
    pub text: String,
    /// The value is known without running anything (no expansions, globs).
    pub is_static: bool,
    /// Stays one word: static, or its expansions are inside double quotes
    /// (no word splitting, no globbing).
    pub single: bool,
}

impl Word {
    pub(crate) fn fixed(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            is_static: true,
            single: true,
        }
    }

    pub(crate) fn dynamic(text: &str, single: bool) -> Self {
        Self {
            text: text.to_owned(),
            is_static: false,
            single,
        }
    }
}

/// Properties a part inherits from the constructs around it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Inherit {
    /// Output of an enclosing statement goes to a file.
    pub redirect: bool,
    /// The command gets more arguments at run time (it runs under `xargs`).
    pub runtime_args: bool,
}

/// Redirections a `redirected_statement` hands to the command they belong
/// to.
#[derive(Debug, Default, Clone)]
pub(super) struct Attached {
    pub(super) redirect: bool,
    pub(super) stdin: Option<Word>,
    /// Arguments written after a here-document operator (`rm <<EOF -rf x`).
    pub(super) args: Vec<Word>,
}
