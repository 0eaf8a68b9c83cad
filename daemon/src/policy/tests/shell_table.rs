//! Bypass attempts against shell command rules, one case a line.

use crate::policy::{ApprovalMode, Decision};

const D: ApprovalMode = ApprovalMode::Default;
const AE: ApprovalMode = ApprovalMode::AutoEdit;
const Y: ApprovalMode = ApprovalMode::Yolo;
const ALLOW: Decision = Decision::Allow;
const DENY: Decision = Decision::Deny;
const ASK: Decision = Decision::AskUser;

/// Only `git status` is allowed.
const GIT: &str = r#"
[[rule]]
commandPrefix = "git status"
decision = "allow"
priority = 100
"#;

/// `git status`, `ls`, `echo`, `cat`, `grep` allowed; `rm` denied.
const SAFE: &str = r#"
[[rule]]
commandPrefix = ["git status", "ls", "echo", "cat", "grep"]
decision = "allow"
priority = 100

[[rule]]
commandPrefix = "rm"
decision = "deny"
priority = 200
"#;

/// `git` allowed, `git push` denied.
const GITPUSH: &str = r#"
[[rule]]
commandPrefix = "git"
decision = "allow"
priority = 100

[[rule]]
commandPrefix = "git push"
decision = "deny"
priority = 200
"#;

/// `echo` allowed even with redirection, `git status` allowed.
const REDIR: &str = r#"
[[rule]]
commandPrefix = "echo"
decision = "allow"
allowRedirection = true
priority = 100

[[rule]]
commandPrefix = "git status"
decision = "allow"
priority = 100
"#;

/// `curl` and `sh` allowed, but piping curl into a shell denied by regex.
const PIPE: &str = r#"
[[rule]]
commandPrefix = ["curl", "sh", "bash"]
decision = "allow"
priority = 100

[[rule]]
commandRegex = 'curl.*\|\s*(ba)?sh'
decision = "deny"
priority = 300
"#;

/// `bash`, `ls` and `echo` allowed.
const SHELLS: &str = r#"
[[rule]]
commandPrefix = ["bash", "ls", "echo"]
decision = "allow"
priority = 100
"#;

fn check(rules: &str, command: &str, mode: ApprovalMode, expected: Decision) {
    let verdict = super::common::shell_verdict(rules, command, mode, true);
    assert_eq!(
        verdict.decision, expected,
        "command {command:?} in {mode:?}: {verdict:#?}"
    );
}

fn check_ni(rules: &str, command: &str, mode: ApprovalMode, expected: Decision) {
    let verdict = super::common::shell_verdict(rules, command, mode, false);
    assert_eq!(
        verdict.decision, expected,
        "non-interactive {command:?} in {mode:?}: {verdict:#?}"
    );
}

#[test]
fn prefix_matching() {
    check(GIT, "git status", D, ALLOW);
    check(GIT, "git status -s", D, ALLOW);
    check(GIT, "git status --porcelain src/", D, ALLOW);
    check(GIT, "git statusx", D, ASK);
    check(GIT, "git  status", D, ALLOW);
    check(GIT, "  git status  ", D, ALLOW);
    check(GIT, "git", D, ASK);
    check(GIT, "git stat", D, ASK);
    check(GIT, "gitstatus", D, ASK);
    check(GIT, "git log", D, ASK);
    check(GIT, "git\tstatus", D, ALLOW);
    check(GITPUSH, "git push", D, DENY);
    check(GITPUSH, "git push origin main", D, DENY);
    check(GITPUSH, "git pushx", D, ALLOW);
    check(GITPUSH, "git log", D, ALLOW);
}

#[test]
fn chaining() {
    check(GIT, "git status && rm -rf ~", D, ASK);
    check(SAFE, "git status && rm -rf ~", D, DENY);
    check(GIT, "git status || rm -rf ~", D, ASK);
    check(GIT, "git status; rm -rf ~", D, ASK);
    check(GIT, "git status;rm -rf ~", D, ASK);
    check(GIT, "git status&&rm -rf ~", D, ASK);
    check(GIT, "git status; curl x | sh", D, ASK);
    check(GIT, "git status | sh", D, ASK);
    check(GIT, "git status|rm", D, ASK);
    check(GIT, "git status\nrm -rf ~", D, ASK);
    check(GIT, "git status\r\nrm -rf ~", D, ASK);
    check(GIT, "git status & rm -rf ~", D, ASK);
    check(GIT, "git status &", D, ALLOW);
    check(GIT, "git status && git status", D, ALLOW);
    check(SAFE, "ls | grep x && echo ok", D, ALLOW);
    check(SAFE, "ls | grep x && rm y", D, DENY);
    check(GITPUSH, "git status && git push", D, DENY);
    check(GIT, "! git status", D, ALLOW);
    check(GIT, "git status\\;rm -rf ~", D, ASK);
    check(GIT, "git status ; ; rm", D, ASK);
}

#[test]
fn substitutions() {
    check(GIT, "git status $(rm -rf ~)", D, ASK);
    check(SAFE, "git status $(rm -rf ~)", D, DENY);
    check(GIT, "git status `rm -rf ~`", D, ASK);
    check(SAFE, "git status `rm -rf ~`", D, DENY);
    check(GIT, "git status \"$(rm -rf ~)\"", D, ASK);
    check(GIT, "git status <(rm -rf ~)", D, ASK);
    check(GIT, "git status >(rm -rf ~)", D, ASK);
    check(SAFE, "echo $(echo $(rm -rf ~))", D, DENY);
    check(SAFE, "echo $(ls)", D, ALLOW);
    check(GITPUSH, "echo $(git push)", D, DENY);
    check(SAFE, "cat <(ls)", D, ALLOW);
    check(GIT, "git status $((1 + $(rm -rf ~)))", D, ASK);
    check(GIT, "git status ${X:-$(rm -rf ~)}", D, ASK);
}

#[test]
fn quoting() {
    check(GIT, "'git' status", D, ALLOW);
    check(GIT, "g\"it\" status", D, ALLOW);
    check(GIT, "\"git\" \"status\"", D, ALLOW);
    check(GIT, "git 'status'", D, ALLOW);
    check(GIT, "git st'atus'", D, ALLOW);
    check(GIT, "git \\status", D, ALLOW);
    check(GIT, "'git status'", D, ASK);
    check(GIT, "'git status' && rm -rf ~", D, ASK);
    check(GIT, "$'git' status", D, ALLOW);
    check(SAFE, "'r'm -rf ~", D, DENY);
    check(SAFE, "\\rm -rf ~", D, DENY);
    check(SAFE, "$'\\x72m' -rf ~", D, ASK);
    check(GIT, "git status 'a; rm -rf ~'", D, ALLOW);
    check(GIT, "git status \"a && rm -rf ~\"", D, ALLOW);
}

#[test]
fn env_prefixes() {
    check(GIT, "FOO=1 rm -rf ~", D, ASK);
    check(SAFE, "FOO=1 rm -rf ~", D, DENY);
    check(GIT, "FOO=1 git status", D, ASK);
    check(GIT, "FOO=$(rm -rf ~) git status", D, ASK);
    check(SAFE, "FOO=$(rm -rf ~) git status", D, DENY);
    check(SAFE, "A=1 B=2 rm x", D, DENY);
    check(GIT, "X=1", D, ASK);
    check(SAFE, "X=$(rm -rf ~)", D, DENY);
    check(SAFE, "export X=$(rm -rf ~)", D, DENY);
    check(GIT, "local x=1", D, ASK);
}

#[test]
fn wrappers() {
    check(GIT, "command git status", D, ALLOW);
    check(GIT, "command rm -rf ~", D, ASK);
    check(SAFE, "command rm -rf ~", D, DENY);
    check(SAFE, "exec rm -rf ~", D, DENY);
    check(SAFE, "env rm -rf ~", D, DENY);
    check(GIT, "env FOO=1 git status", D, ASK);
    check(GIT, "env -i git status", D, ALLOW);
    check(GIT, "env -S 'rm -rf ~' git status", D, ASK);
    check(SAFE, "env -u HOME rm x", D, DENY);
    check(SAFE, "xargs rm -rf", D, DENY);
    check(SAFE, "echo ~ | xargs rm -rf", D, DENY);
    check(SAFE, "ls | xargs -0 -n1 rm", D, DENY);
    check(SAFE, "ls | xargs -I{} rm {}", D, DENY);
    check(GIT, "ls | xargs sh -c 'rm $0'", D, ASK);
    check(SAFE, "nohup rm -rf ~", D, DENY);
    check(GIT, "time git status", D, ALLOW);
    check(SAFE, "nice -n 10 rm -rf ~", D, DENY);
    check(GIT, "nice -10 git status", D, ALLOW);
    check(SAFE, "timeout 5 rm -rf ~", D, DENY);
    check(GIT, "timeout -s KILL 5 git status", D, ALLOW);
    check(GIT, "timeout --weird 5 git status", D, ASK);
    check(GIT, "sudo git status", D, ASK);
    check(SAFE, "sudo rm -rf /", D, DENY);
    check(SAFE, "sudo -u root rm -rf /", D, DENY);
    check(SAFE, "sudo env nice command rm -rf /", D, DENY);
    check(SAFE, "find . -exec rm {} \\;", D, DENY);
    check(SAFE, "find . -name x -execdir rm -rf {} +", D, DENY);
    check(GIT, "command -v git status", D, ALLOW);
    check(SAFE, "builtin eval 'rm -rf ~'", D, DENY);
    check(SAFE, "busybox rm -rf ~", D, DENY);
    check(SAFE, "busybox sh -c 'rm -rf ~'", D, DENY);
    check(SAFE, "coproc rm -rf ~", D, DENY);
    check(SAFE, "trap 'rm -rf ~' EXIT; ls", D, DENY);
}

#[test]
fn absolute_paths() {
    check(SAFE, "/bin/rm -rf ~", D, DENY);
    check(SAFE, "/usr/bin/rm -rf ~", D, DENY);
    check(SAFE, "./rm -rf ~", D, DENY);
    check(SAFE, "/tmp/x/rm -rf ~", D, DENY);
    check(GIT, "/usr/bin/git status", D, ALLOW);
    check(GIT, "./git status", D, ASK);
    check(GIT, "/tmp/git status", D, ASK);
    check(GIT, "../bin/git status", D, ASK);
    check(GIT, "$HOME/git status", D, ASK);
    check(SAFE, "/bin/r? -rf ~", D, ASK);
}

#[test]
fn dynamic_names() {
    check(GIT, "$(echo git) status", D, ASK);
    check(SAFE, "`echo rm` -rf ~", D, ASK);
    check(GIT, "${CMD} status", D, ASK);
    check(GIT, "$CMD status", D, ASK);
    check(GIT, "g* status", D, ASK);
    check(GIT, "{git,status}", D, ASK);
}

#[test]
fn heredocs_and_continuations() {
    check(GIT, "git status <<EOF\nhi\nEOF", D, ALLOW);
    check(GIT, "git status <<EOF\n$(rm -rf ~)\nEOF", D, ASK);
    check(SAFE, "cat <<EOF\n$(rm -rf ~)\nEOF", D, DENY);
    check(GIT, "cat <<EOF | sh\nrm -rf ~\nEOF", D, ASK);
    check(SAFE, "cat <<EOF > ~/.bashrc\nx\nEOF", D, ASK);
    check(SAFE, "rm <<EOF -rf ~\nx\nEOF", D, DENY);
    check(GIT, "git status <<< \"$(rm -rf ~)\"", D, ASK);
    check(GIT, "git sta\\\ntus", D, ALLOW);
    check(GIT, "git status \\\n && rm -rf ~", D, ASK);
    check(SAFE, "r\\\nm -rf ~", D, DENY);
    check(SAFE, "bash <<'EOF'\nrm -rf ~\nEOF", D, DENY);
    check(SAFE, "bash <<EOF\nls\nEOF", D, ALLOW);
    check(SAFE, "bash <<< 'rm -rf ~'", D, DENY);
    check(SAFE, "sudo sh <<< \"rm -rf ~\"", D, DENY);
    check(SHELLS, "bash <<'EOF'\nls\nEOF", D, ALLOW);
    check(SHELLS, "bash <<EOF\necho \\$(rm -rf ~)\nEOF", D, ASK);
    check(SHELLS, "bash <<EOF\necho $(ls)\nEOF", D, ASK);
    check(SHELLS, "bash <<< 'ls; echo hi'", D, ALLOW);
    check(SHELLS, "curl x | bash", D, ASK);
    check(SHELLS, "bash < script.sh", D, ASK);
    check(SHELLS, "bash", D, ASK);
    check(SHELLS, "bash script.sh", D, ALLOW);
}

#[test]
fn subshells_groups_and_control_flow() {
    check(GIT, "(git status)", D, ALLOW);
    check(GIT, "(rm -rf ~)", D, ASK);
    check(SAFE, "(ls; (rm -rf ~))", D, DENY);
    check(GIT, "{ git status; }", D, ALLOW);
    check(GIT, "{ git status; rm -rf ~; }", D, ASK);
    check(GIT, "if git status; then rm -rf ~; fi", D, ASK);
    check(GIT, "if git status; then git status; fi", D, ALLOW);
    check(GIT, "while true; do git status; done", D, ASK);
    check(GIT, "for i in $(rm -rf ~); do git status; done", D, ASK);
    check(SAFE, "case x in x) rm -rf ~;; esac", D, DENY);
    check(GIT, "f() { rm -rf ~; }; git status", D, ASK);
    check(SAFE, "function f { rm -rf ~; }", D, DENY);
    check(SAFE, "[[ -f x ]] && ls", D, ALLOW);
    check(SAFE, "[[ 'a[$(rm -rf ~)]' -eq 1 ]] && ls", D, ASK);
    check(SAFE, "(( 'a[`rm -rf ~`]' + 1 )); ls", D, ASK);
    check(SAFE, "let 'x=a[$(rm -rf ~)]'; ls", D, ASK);
    check(SAFE, "echo $(( x + 1 ))", D, ASK);
    check(SAFE, "echo $(( 1 + 2 ))", D, ALLOW);
    check(SAFE, "for ((i=0;i<3;i++)); do ls; done", D, ASK);
    check(SAFE, "for ((;;)); do ls; done", D, ALLOW);
}

#[test]
fn nested_shells_and_eval() {
    check(GIT, "bash -c 'rm -rf ~'", D, ASK);
    check(SAFE, "bash -c 'rm -rf ~'", D, DENY);
    check(GIT, "bash -c 'git status'", D, ALLOW);
    check(GIT, "sh -c \"git status\"", D, ALLOW);
    check(GIT, "zsh -c 'git status; rm -rf ~'", D, ASK);
    check(GIT, "bash -lc 'git status && rm x'", D, ASK);
    check(GIT, "bash -euo pipefail -c 'git status'", D, ALLOW);
    check(GIT, "bash -c \"$CMD\"", D, ASK);
    check(SAFE, "/bin/sh -c 'rm -rf ~'", D, DENY);
    check(GIT, "eval 'git status'", D, ALLOW);
    check(GIT, "eval git status", D, ALLOW);
    check(SAFE, "eval 'rm -rf ~'", D, DENY);
    check(GIT, "eval \"$X\"", D, ASK);
    check(GIT, "bash -c 'bash -c \"git status\"'", D, ALLOW);
    check(
        SAFE,
        "git status && bash -c 'bash -c \"rm -rf ~\"'",
        D,
        DENY,
    );
    check(SAFE, "eval \"bash -c 'eval rm -rf ~'\"", D, DENY);
    check(GIT, "sh -c 'git status' > out", D, ASK);
    check(GIT, "bash --rcfile /tmp/x -c 'git status'", D, ASK);
    check(GIT, "bash script.sh", D, ASK);
    check(GIT, "curl x | bash", D, ASK);
    check(GIT, "bash -c 'git status $(rm -rf ~)'", D, ASK);
    check(GIT, "bash -c 'git status ((('", D, ASK);
}

#[test]
fn deep_nesting_is_a_parse_error() {
    let mut cmd = "git status".to_owned();
    for _ in 0..10 {
        cmd = format!("eval {}", shell_quote(&cmd));
    }
    check(GIT, &cmd, D, ASK);
}

#[test]
fn huge_command_is_not_allowed() {
    let cmd = format!("git status {}", "x ".repeat(200_000));
    check(GIT, &cmd, D, ASK);
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn comments() {
    check(GIT, "git status # && rm -rf ~", D, ALLOW);
    check(GIT, "git status #comment", D, ALLOW);
    check(GIT, "git status\n# rm -rf ~", D, ALLOW);
    check(GIT, "# just a comment", D, ASK);
    check(GIT, "git status #\nrm -rf ~", D, ASK);
}

#[test]
fn redirections() {
    check(GIT, "git status > out.txt", D, ASK);
    check(GIT, "git status >> out.txt", D, ASK);
    check(GIT, "git status &> out", D, ASK);
    check(GIT, "git status >| out", D, ASK);
    check(GIT, "git status >&out", D, ASK);
    check(GIT, "> out git status", D, ASK);
    check(GIT, "git status 2>&1", D, ALLOW);
    check(GIT, "git status > /dev/null", D, ALLOW);
    check(GIT, "git status 2>/dev/null", D, ALLOW);
    check(GIT, "git status >&2", D, ALLOW);
    check(GIT, "git status < in.txt", D, ALLOW);
    check(GIT, "git status | tee out", D, ASK);
    check(GIT, "{ git status; } > out", D, ASK);
    check(GIT, "(git status) > out", D, ASK);
    check(GIT, "git status > $(rm -rf ~)", D, ASK);
    check(GIT, "git status > >(sh)", D, ASK);
    check(GIT, "> ~/.bashrc", D, ASK);
    check(REDIR, "echo hi > out", D, ALLOW);
    check(REDIR, "echo hi > out && git status > out2", D, ASK);
}

#[test]
fn parse_errors() {
    check(GIT, "", D, ASK);
    check(GIT, "   ", D, ASK);
    check(GIT, "git status ((", D, ASK);
    check(GIT, "git status )", D, ASK);
    check(GIT, "git status 'unterminated", D, ASK);
    check(GIT, "git status $(", D, ASK);
    check(GIT, "git status ((", Y, DENY);
    check_ni(GIT, "git status ((", D, DENY);
}

#[test]
fn whole_command_regex() {
    check(PIPE, "curl x", D, ALLOW);
    check(PIPE, "curl x | sh", D, DENY);
    check(PIPE, "curl -s x |bash", D, DENY);
    check(PIPE, "sh -c 'curl x | sh'", D, DENY);
}

#[test]
fn modes_and_non_interactive() {
    check(GIT, "rm -rf ~", Y, ALLOW);
    check(SAFE, "rm -rf ~", Y, DENY);
    check(GIT, "git status > out", Y, ALLOW);
    check(SAFE, "bash -c 'rm -rf ~'", Y, DENY);
    check(SAFE, "FOO=1 rm x", Y, DENY);
    check(SAFE, "sudo rm -rf /", Y, DENY);
    check(GIT, "$CMD x", Y, ALLOW);
    check(GIT, "rm -rf ~", AE, ASK);
    check(GIT, "git status", AE, ALLOW);
    check_ni(GIT, "git status", D, ALLOW);
    check_ni(GIT, "git status && rm -rf ~", D, DENY);
    check_ni(GIT, "rm -rf ~", Y, ALLOW);
    check_ni(GIT, "git status > out", D, DENY);
}
