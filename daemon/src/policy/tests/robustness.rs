//! Random token soup must never panic, and unparsable input is never allowed
//! outside yolo.

use crate::policy::{ApprovalMode, Decision, split_command};

const TOKENS: &[&str] = &[
    "git", "status", "rm", "-rf", "~", "ls", "echo", " ", " ", " ", ";", "&&", "||", "|", "&",
    "\n", "$(", ")", "`", "(", "{", "}", "'", "\"", "\\", "\\\n", "<<EOF\n", "EOF\n", "<<<", ">",
    ">>", "2>&1", "<(", ">(", "$", "${", "=", "X=1", "bash", "-c", "eval", "sudo", "env", "xargs",
    "#", "é", "*", "[[", "]]", "if", "then", "fi", "$'\\x41'",
];

#[test]
fn token_soup_never_panics() {
    let allow_all = "[[rule]]\ncommandPrefix = [\"git status\", \"ls\", \"echo\", \"bash\", \"env\", \"eval\"]\ndecision = \"allow\"\npriority = 1\n";
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..1500 {
        let len = 1 + (next() % 14) as usize;
        let command: String = (0..len)
            .map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize])
            .collect();
        let verdict =
            super::common::shell_verdict(allow_all, &command, ApprovalMode::Default, true);
        if split_command(&command).parse_error {
            assert_ne!(verdict.decision, Decision::Allow, "{command:?}");
        }
        let ni = super::common::shell_verdict(allow_all, &command, ApprovalMode::Default, false);
        assert_ne!(ni.decision, Decision::AskUser, "{command:?}");
    }
}
