//! One table per class of evaluated text (issue 22): under a user policy
//! that allows only `git status` and `ls`, a command line is allowed only
//! when every part bash evaluates is inert or itself allowed.
//!
//! * `inert(cmd)`: allowed, interactive or not.
//! * `needs(cmd)`: ask_user (deny when non-interactive); yolo allows it.
//! * `never(cmd)`: ask_user (deny when non-interactive), and deny in yolo:
//!   no rule can allow it (unparsable, bare output redirection).
//! * `check(cmd, mode, decision)` for anything else.

use crate::policy::{ApprovalMode, Decision};

pub(super) const D: ApprovalMode = ApprovalMode::Default;
const Y: ApprovalMode = ApprovalMode::Yolo;
const AE: ApprovalMode = ApprovalMode::AutoEdit;

/// The issue's policy: only `git status` and `ls`.
const RULES: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "ls"]
decision = "allow"
priority = 100
"#;

/// The same plus a deny for `rm`.
const DENY_RM: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "ls"]
decision = "allow"
priority = 100

[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm"
decision = "deny"
priority = 200
"#;

fn decide(rules: &str, command: &str, mode: ApprovalMode, interactive: bool) -> Decision {
    super::common::shell_verdict(rules, command, mode, interactive).decision
}

pub(super) fn check(command: &str, mode: ApprovalMode, expected: Decision) {
    let verdict = super::common::shell_verdict(RULES, command, mode, true);
    assert_eq!(
        verdict.decision, expected,
        "{command:?} in {mode:?}: {verdict:#?}"
    );
}

#[track_caller]
pub(super) fn inert(command: &str) {
    for interactive in [true, false] {
        let verdict = super::common::shell_verdict(RULES, command, D, interactive);
        assert_eq!(
            verdict.decision,
            Decision::Allow,
            "{command:?} (interactive: {interactive}) should be allowed: {verdict:#?}"
        );
    }
}

#[track_caller]
pub(super) fn needs(command: &str) {
    let verdict = super::common::shell_verdict(RULES, command, D, true);
    assert_eq!(
        verdict.decision,
        Decision::AskUser,
        "{command:?}: {verdict:#?}"
    );
    assert_eq!(
        decide(RULES, command, D, false),
        Decision::Deny,
        "{command:?} NI"
    );
    assert_eq!(
        decide(RULES, command, Y, true),
        Decision::Allow,
        "{command:?} yolo"
    );
}

#[track_caller]
pub(super) fn never(command: &str) {
    let verdict = super::common::shell_verdict(RULES, command, D, true);
    assert_eq!(
        verdict.decision,
        Decision::AskUser,
        "{command:?}: {verdict:#?}"
    );
    assert_eq!(
        decide(RULES, command, D, false),
        Decision::Deny,
        "{command:?} NI"
    );
    assert_eq!(
        decide(RULES, command, AE, true),
        Decision::AskUser,
        "{command:?} autoEdit"
    );
    let yolo = super::common::shell_verdict(RULES, command, Y, true);
    assert_eq!(yolo.decision, Decision::Deny, "{command:?} yolo: {yolo:#?}");
}

#[track_caller]
pub(super) fn denied(command: &str) {
    for (mode, interactive) in [(D, true), (D, false), (Y, true)] {
        assert_eq!(
            decide(DENY_RM, command, mode, interactive),
            Decision::Deny,
            "{command:?} in {mode:?} (interactive: {interactive})"
        );
    }
}

#[test]
fn the_issues_commands() {
    needs("PATH=/tmp/evil:$PATH; git status");
    needs("HOME=/tmp/evil; git status");
    needs("x=1; ls");
    needs("x='a[$(touch /tmp/P)]'; ls $((x))");
    needs("git status -- $((x+1))");
    needs("ls ${!x}");
    needs("ls ${a[x]}");
    needs("[[ $x -eq 0 ]]; ls");
    needs("(( x )); ls");
    needs("x='$(touch /tmp/P)'; ls ${x@P}");
    needs("git status <<EOF\n`touch /tmp/P`\nEOF");
    needs("\"${x:=`touch /tmp/P`}\"");
    needs("ls \"${x:=`touch /tmp/P`}\"");
    never("git status && >important");
    never("git status &&");
    never("ls (");
    never("ls 'unterminated");
    inert("git status");
    inert("ls -la");
}

#[test]
fn assignments() {
    needs("x=1");
    needs("FOO=1 ls");
    needs("FOO=1 BAR=2 git status");
    needs("git status && PATH=/x");
    needs("ls && x=1");
    needs("a[1]=2; ls");
    needs("a+=(x); ls");
    needs("export PATH=/tmp; ls");
    needs("declare -x FOO=1; ls");
    needs("local x=1");
    needs("readonly x=1; ls");
    needs("typeset x=1; ls");
    needs("unset PATH; git status");
    needs("env FOO=1 ls");
    needs("env -u HOME git status");
    needs("read x <<< y; ls");
    needs("mapfile lines < f; ls");
    needs("printf -v PATH /tmp/evil; git status");
    needs("for HOME in /tmp/evil; do git status; done");
    needs("select x in a; do ls; done");
    needs("ls ${x:=/tmp}");
    needs("ls ${x=1}");
    needs("coproc ls");
    needs("IFS=/ ls");
    inert("ls $x ${x} \"$@\" ${#x} ${x%.txt} ${x/a/b} ${x^^} ${x:-default}");
}

#[test]
fn arithmetic() {
    needs("ls $((x))");
    needs("ls $((x + 1))");
    needs("ls $(( $x ))");
    needs("ls $(($(ls)))");
    needs("ls $[x]");
    needs("((x)); ls");
    needs("(( x = 1 )); ls");
    needs("let x=1; ls");
    needs("let 1+x; ls");
    needs("for ((i = 0; i < 3; i++)); do ls; done");
    needs("[[ $x -eq 1 ]] && ls");
    needs("[[ 'a[$(touch P)]' -eq 1 ]] && ls");
    needs("[[ 1 -lt $n ]] && ls");
    never("ls ${x:$n}");
    needs("ls ${x:n}");
    needs("ls ${x:0:n}");
    needs("ls ${@:x}");
    needs("case 1 in $((x))) ls;; esac");
    inert("ls $((1 + 2)) $(( 16#ff * 2 )) $[3] $((0x1f))");
    inert("((1)) && ls");
    inert("[[ 1 -eq 1 ]] && ls");
    inert("ls ${x:1} ${x:0:2} ${x: -1}");
    inert("for ((;;)); do ls; done");
}

#[test]
fn expansions() {
    needs("ls ${!x}");
    needs("ls ${!x[0]}");
    needs("ls \"${!x}\"");
    needs("ls ${a[x]}");
    needs("ls ${a[$i]}");
    needs("ls ${#a[i]}");
    needs("ls ${a[i]:-x}");
    needs("ls ${x@P}");
    needs("ls \"${x@P}\"");
    needs("ls ${x:-${!y}}");
    needs("ls \"${x:-${y:=1}}\"");
    // tree-sitter-bash does not parse these: never allowed.
    never("ls ${x@Z}");
    inert("ls ${!x*} ${!x@} ${!a[@]} ${!a[*]}");
    inert("ls ${a[0]} ${a[@]} ${a[*]} ${#a[@]} ${a[-1]}");
    inert("ls ${x@Q} ${x@E} ${x@U} ${x@L} ${x@a}");
    inert("ls $'\\x41' $'a\\tb' \"$HOME\" ~ ~/x *.rs {a,b} {1..3}");
    inert("ls $? $$ $! $# $- $_ $0 $1");
}

#[test]
fn variable_names_in_builtins() {
    needs("test -v 'a[$(touch P)]'; ls");
    needs("[ -v 'a[$(touch P)]' ] && ls");
    needs("[ -v \"$x\" ] && ls");
    needs("[[ -v $x ]] && ls");
    needs("[[ -v a[$(touch P)] ]] && ls");
    // `test` takes its operators from its arguments: `$_` can be `-v`.
    // tree-sitter-bash cannot parse an operator it does not see.
    never("ls -v; [ $_ 'a[$(touch P)]' ]");
    needs("ls -v; [ -n $_ ]");
    needs("ls -v; test $_ 'a[$(touch P)]'");
    needs("[ $x ] && ls");
    never("[ \"$a\" \"$b\" \"$c\" ] && ls");
    inert("[ -f x ] && ls");
    inert("[ -v x ] && ls");
    inert("[[ -v x ]] && ls");
    inert("[ \"$x\" ] && ls");
    inert("[ -n \"$x\" ] && ls");
    inert("[ \"$x\" = \"$y\" ] && ls");
    inert("[[ $x == y* && -f $f ]] && ls");
    inert("[[ $x =~ ^a.*$ ]] && ls");
}

/// Commands whose arguments bash or the command itself evaluate are allowed
/// here by name; what they evaluate still needs approval.
const BUILTINS: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["test", "printf", "read", "export", "unset", "find", "xargs", "env", "bash", "eval", "echo", "let", "wait", "ls"]
decision = "allow"
priority = 100
"#;

#[track_caller]
fn by_name(command: &str, expected: Decision) {
    let verdict = super::common::shell_verdict(BUILTINS, command, D, true);
    assert_eq!(verdict.decision, expected, "{command:?}: {verdict:#?}");
}

#[test]
fn allowed_commands_keep_their_evaluated_arguments() {
    const ALLOW: Decision = Decision::Allow;
    const ASK: Decision = Decision::AskUser;
    by_name("printf '%s' \"$x\"", ALLOW);
    by_name("printf -v PATH /tmp/evil", ASK);
    by_name("printf -v x y", ASK);
    by_name("printf $x y", ASK);
    by_name("test -f x", ALLOW);
    by_name("test -v x", ALLOW);
    by_name("test -v 'a[$(touch P)]'", ASK);
    by_name("test $x 'a[$(touch P)]'", ASK);
    by_name("test \"$x\" = y", ALLOW);
    by_name("read x", ASK);
    by_name("export -p", ALLOW);
    by_name("export X=1", ASK);
    by_name("unset X", ASK);
    by_name("let 1+2", ALLOW);
    by_name("let x", ASK);
    by_name("wait", ALLOW);
    by_name("wait -p 'a[$(touch P)]'", ASK);
    by_name("find . -name '*.rs'", ALLOW);
    by_name("find . -name \"$x\"", ASK);
    by_name("find . -exec ls {} +", ALLOW);
    by_name("find . -exec touch {} +", ASK);
    by_name("find . -exec sh -c 'ls {}' \\;", ASK);
    by_name("ls | xargs ls", ALLOW);
    by_name("ls | xargs find .", ASK);
    by_name("ls | xargs env", ASK);
    by_name("ls | xargs bash", ASK);
    by_name("ls | xargs bash -c 'ls \"$@\"' _", ALLOW);
    by_name("ls | xargs printf", ASK);
    by_name("ls | xargs -I{} echo {}", ALLOW);
    by_name("ls | xargs -I{} bash -c 'echo {}'", ASK);
    by_name("env ls", ALLOW);
    by_name("env -C /tmp ls", ALLOW);
    by_name("env X=1 ls", ASK);
    by_name("bash -c 'echo $((x))'", ASK);
    by_name("eval 'echo ${!x}'", ASK);
    by_name("echo $x \"$@\" ${x:-y} ~ *", ALLOW);
}
