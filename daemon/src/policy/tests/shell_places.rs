//! Tables for the places commands hide in (issue 22), with the helpers and
//! policy of `shell_classes.rs`: here-documents, redirections, nested
//! commands, interpreters and wrappers, and what can never be allowed.

use super::shell_classes::{D, check, denied, inert, needs, never};
use crate::policy::Decision;

#[test]
fn heredocs_and_herestrings() {
    needs("ls <<EOF\n$(touch P)\nEOF");
    needs("ls <<EOF\n`touch P`\nEOF");
    needs("ls <<EOF\nx `touch P` y\nEOF");
    needs("ls <<EOF\n${x:-`touch P`}\nEOF");
    needs("ls <<EOF\n${!x}\nEOF");
    needs("ls <<EOF\n$((x))\nEOF");
    needs("ls <<-EOF\n\t$(touch P)\n\tEOF");
    needs("ls <<EOF\n'$(touch P)'\nEOF");
    never("ls <<EOF; ls <<EOF2\nx\nEOF\n$(touch P)\nEOF2");
    needs("ls <<< \"$(touch P)\"");
    needs("ls <<< ${!x}");
    needs("ls <<< $((x))");
    inert("ls <<'EOF'\n$(touch P) `touch P` ${!x}\nEOF");
    inert("ls <<\"EOF\"\n$(touch P)\nEOF");
    inert("ls <<\\EOF\n`touch P`\nEOF");
    inert("ls <<EOF\nplain $HOME ${USER} \\$(not) \\`not\\`\nEOF");
    inert("ls <<EOF\n$(ls)\nEOF");
    inert("ls <<< 'text' && ls <<< \"$HOME\"");
    denied("ls <<EOF\n$(rm -rf x)\nEOF");
    denied("ls <<EOF\n`rm -rf x`\nEOF");
}

#[test]
fn redirections() {
    needs("ls > out");
    needs("ls >> out");
    needs("ls &> out");
    needs("ls >| out");
    needs("ls 2> err");
    needs("ls > $(echo out)");
    needs("ls < $f");
    needs("ls < /dev/tcp/example.com/80");
    needs("ls <(touch P)");
    needs("ls >(touch P)");
    needs("echo hi | tee log.txt > copy.txt");
    inert("ls 2>&1");
    inert("ls > /dev/null 2>&1");
    inert("ls 2>/dev/null");
    inert("ls >&2");
    inert("ls < in.txt");
    inert("ls <(ls)");
    inert("ls | ls > /dev/null");
    never("> important");
    never(">> important; ls");
    never("ls; > important");
    never("ls & > important");
    never("git status && &> important");
    never("git status | > important");
    check("> /dev/null", D, Decision::AskUser);
    inert("ls && 2>&1");
}

#[test]
fn nested_commands() {
    needs("ls $(touch P)");
    needs("ls `touch P`");
    needs("ls \"$(touch P)\"");
    needs("ls \"a `touch P` b\"");
    needs("ls ${x:-$(touch P)}");
    needs("ls ${x:-`touch P`}");
    needs("ls \"${x:-`touch P`}\"");
    needs("ls ${x#$(touch P)}");
    needs("ls ${a[$(touch P)]}");
    needs("a[$(touch P)]=1");
    needs("ls $(( $(touch P) ))");
    needs("[[ $(touch P) == x ]] && ls");
    needs("[[ x =~ $(touch P) ]] && ls");
    needs("case $(touch P) in x) ls;; esac");
    needs("for x in $(touch P); do ls; done");
    // Inside double quotes, quotes in an operand are plain characters.
    needs("ls \"${x:-'$(touch P)'}\"");
    needs("ls \"${x:-$'$(touch P)'}\"");
    // Backslashes inside backticks are removed before the text is parsed.
    needs("ls `ls \\`touch P\\``");
    needs("ls \"`ls \\`touch P\\``\"");
    inert("ls \\`touch P\\` \"\\`touch P\\`\"");
    inert("ls $(ls) `ls` \"$(ls)\" ${x:-$(ls)} ${x:-`ls`}");
    inert("ls $(ls $(ls `ls`))");
    denied("ls ${x:-`rm -rf x`}");
    denied("ls \"${x:=`rm -rf x`}\"");
    denied("ls $(( $(rm x) ))");
}

#[test]
fn interpreters_and_wrappers() {
    inert("eval ls");
    inert("eval 'ls; git status'");
    needs("eval \"$x\"");
    needs("eval $x");
    needs("source x.sh");
    needs(". x.sh");
    needs("trap 'touch P' EXIT; ls");
    needs("trap \"$x\" EXIT; ls");
    needs("f() { touch P; }; ls");
    needs("ls() { git status; }; ls");
    needs("ls(){ ls|ls& };ls");
    needs("alias ls='touch P'; ls");
    needs("exec > out");
    needs("exec 3>&1; ls");
    needs("command -p touch P");
    needs("bash -c \"$x\"");
    needs("bash -c 'touch P'");
    needs("sh -c 'ls; touch P'");
    needs("bash <<EOF\n$x\nEOF");
    needs("ls | bash");
    needs("bash script.sh");
    needs("echo ls | xargs sh");
    needs("ls | xargs touch");
    needs("ls | xargs -I{} sh -c 'ls {}'");
    needs("ls | xargs -I{} {}");
    needs("ls | xargs env");
    needs("ls | xargs timeout 5");
    needs("ls | xargs find .");
    needs("find . -exec touch {} \\;");
    needs("find . -name \"$x\"");
    needs("env -S 'touch P' ls");
    needs("env -C /tmp/evil git status");
    needs("time touch P");
    needs("nice touch P");
    needs("{ touch P; }");
    needs("(touch P)");
    inert("command -p ls");
    inert("command ls");
    inert("bash -c 'ls'");
    inert("bash -c 'ls && git status'");
    inert("sh -c \"git status\"");
    inert("bash <<'EOF'\nls\nEOF");
    inert("bash <<< 'ls'");
    inert("(ls) && { git status; }");
    inert("if ls; then git status; else ls; fi");
    inert("while ls; do git status; done");
    inert("! ls | ls");
    inert("ls | xargs ls");
    inert("ls | xargs -I{} ls {}");
    inert("time ls");
    inert("nice -n 5 ls");
    inert("env -i ls");
    inert("env ls");
    inert("timeout 5 git status");
    denied("bash -c 'rm -rf x'");
    denied("eval 'rm -rf x'");
    denied("trap 'rm -rf x' EXIT; ls");
    denied("ls | xargs rm");
    denied("find . -exec rm {} +");
    denied("f() { rm -rf x; }; ls");
}

#[test]
fn unparsable_and_bare_redirections_are_never_allowed() {
    never("git status &&");
    never("ls (");
    never("ls 'unterminated");
    never("ls \"unterminated");
    never("ls $(");
    never("ls )");
    never("ls `unterminated");
    never("ls <<EOF\n$(ls # )\nls)\nEOF");
    never("git status && > x");
    never("git status > $(ls) && > x");
    never("bash -c '> x'");
    never("eval '> x'");
    never("git status\nls (");
    // tree-sitter-bash does not know `<>` (read-write, creating the file).
    never("ls <> f");
    never("2> f");
    // What is not a command at all is asked about like an empty line.
    check("", D, Decision::AskUser);
    check("# only a comment", D, Decision::AskUser);
}

#[test]
fn deep_nesting_is_never_allowed_and_never_exhausts_the_stack() {
    let n = 60_000;
    let cases = vec![
        format!("ls \"${{x:-'{}'}}\"", "$(".repeat(n)),
        format!("ls \"${{x:-'{}'}}\"", "$(\"".repeat(n)),
        format!("ls \"${{x:-'{}'}}\"", "${x:-".repeat(n)),
        format!("ls <<EOF\n{}\nEOF", "$(".repeat(n)),
        format!("[[ {}-f x{} ]] && ls", "( ".repeat(n), " )".repeat(n)),
        format!("[[ {}-f x{} ]] && ls", "( ".repeat(100), " )".repeat(100)),
        format!("ls {}", "`ls \\".repeat(n)),
    ];
    // Smaller than a tokio worker's stack, so that there is room to spare.
    let worker = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            for command in cases {
                let verdict = super::common::shell_verdict(
                    "[[rule]]\ncommandPrefix = \"ls\"\ndecision = \"allow\"\npriority = 1\n",
                    &command,
                    D,
                    true,
                );
                assert_ne!(verdict.decision, Decision::Allow, "{}", &command[..80]);
            }
            // Each level of `ls $(ls $(...))` copies the text inside it.
            let nested = format!("ls {}x{}", "$(ls ".repeat(n / 2), ")".repeat(n / 2));
            let split = crate::policy::split_command(&nested);
            assert!(split.parse_error, "too deep to be allowed");
            assert!(split.parts.len() < 200, "{} parts", split.parts.len());
            // Literal arithmetic, however deep, is inert.
            let deep = format!("ls $(({}1{}))", "(".repeat(n), ")".repeat(n));
            let verdict = super::common::shell_verdict(
                "[[rule]]\ncommandPrefix = \"ls\"\ndecision = \"allow\"\npriority = 1\n",
                &deep,
                D,
                true,
            );
            assert_eq!(verdict.decision, Decision::Allow);
        })
        .expect("spawn");
    worker.join().expect("no stack overflow");
}
