//! What `split_command` reports for each construct.

use crate::policy::{CommandRole, split_command};

/// Expected: (text, role, output_redirect, env_assignments, opaque).
type Row = (&'static str, CommandRole, bool, bool, bool);

const L: CommandRole = CommandRole::Leaf;
const C: CommandRole = CommandRole::Context;

fn check(command: &str, parse_error: bool, expected: &[Row]) {
    let split = split_command(command);
    let got: Vec<Row> = split
        .commands
        .iter()
        .map(|c| {
            let text: &'static str = Box::leak(c.text.clone().into_boxed_str());
            (text, c.role, c.output_redirect, c.env_assignments, c.opaque)
        })
        .collect();
    assert_eq!(got, expected, "{command:?}");
    assert_eq!(split.parse_error, parse_error, "{command:?}");
}

#[test]
fn split_table() {
    check(
        "git status",
        false,
        &[("git status", L, false, false, false)],
    );
    check(
        "a && b || c; d | e",
        false,
        &[
            ("a", L, false, false, false),
            ("b", L, false, false, false),
            ("c", L, false, false, false),
            ("d", L, false, false, false),
            ("e", L, false, false, false),
        ],
    );
    check(
        "FOO=1 git 'st'\"atus\" > f",
        false,
        &[("git status", L, true, true, false)],
    );
    check(
        "echo $(rm x)",
        false,
        &[
            ("echo $(rm x)", L, false, false, false),
            ("rm x", L, false, false, false),
        ],
    );
    check(
        "env A=1 nice -n 5 ls",
        false,
        &[
            ("env A=1 nice -n 5 ls", C, false, false, false),
            ("nice -n 5 ls", C, false, true, false),
            ("ls", L, false, true, false),
        ],
    );
    check(
        "bash -c 'a; b'",
        false,
        &[
            ("bash -c a; b", C, false, false, false),
            ("a", L, false, false, false),
            ("b", L, false, false, false),
        ],
    );
    check(
        "bash -c \"$X\"",
        false,
        &[("bash -c $X", L, false, false, true)],
    );
    check("$CMD arg", false, &[("$CMD arg", L, false, false, true)]);
    check(
        "{ a; } 2>&1 >/dev/null",
        false,
        &[("a", L, false, false, false)],
    );
    check("(a) >> log", false, &[("a", L, true, false, false)]);
    check("a (", true, &[("a", L, false, false, false)]);
    check("", false, &[]);
}

#[test]
fn roots() {
    let split = split_command("git status && ls | git log; $X y; env A=1 grep z");
    assert_eq!(split.roots(), vec!["git", "ls", "grep"]);
}
