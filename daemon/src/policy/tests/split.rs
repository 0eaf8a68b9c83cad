//! What `split_command` reports for each construct.

use crate::policy::{Hazard, PartKind, split_command};

/// Expected: (text, kind, output_redirect).
type Row = (&'static str, PartKind, bool);

const C: PartKind = PartKind::Command;
const W: PartKind = PartKind::Wrapper;
const BARE: PartKind = PartKind::BareRedirection;
const ASSIGN: PartKind = PartKind::Evaluated(Hazard::Assignment);
const ARITH: PartKind = PartKind::Evaluated(Hazard::Arithmetic);
const DYN: PartKind = PartKind::Evaluated(Hazard::Dynamic);

fn check(command: &str, parse_error: bool, expected: &[Row]) {
    let split = split_command(command);
    let got: Vec<(&str, PartKind, bool)> = split
        .parts
        .iter()
        .map(|p| (p.text.as_str(), p.kind, p.output_redirect))
        .collect();
    assert_eq!(got, expected, "{command:?}");
    assert_eq!(split.parse_error, parse_error, "{command:?}");
}

#[test]
fn split_table() {
    check("git status", false, &[("git status", C, false)]);
    check(
        "a && b || c; d | e",
        false,
        &[
            ("a", C, false),
            ("b", C, false),
            ("c", C, false),
            ("d", C, false),
            ("e", C, false),
        ],
    );
    check(
        "FOO=1 git 'st'\"atus\" > f",
        false,
        &[("git status", C, true), ("FOO=1", ASSIGN, false)],
    );
    check(
        "echo $(rm x)",
        false,
        &[("echo $(rm x)", C, false), ("rm x", C, false)],
    );
    check(
        "env A=1 nice -n 5 ls",
        false,
        &[
            ("env A=1 nice -n 5 ls", W, false),
            ("env A=1", ASSIGN, false),
            ("nice -n 5 ls", W, false),
            ("ls", C, false),
        ],
    );
    check(
        "bash -c 'a; b'",
        false,
        &[("bash -c a; b", W, false), ("a", C, false), ("b", C, false)],
    );
    check("bash -c \"$X\"", false, &[("bash -c $X", DYN, false)]);
    check("$CMD arg", false, &[("$CMD arg", DYN, false)]);
    check("{ a; } 2>&1 >/dev/null", false, &[("a", C, false)]);
    check("(a) >> log", false, &[("a", C, true)]);
    check("a (", true, &[("a", C, false)]);
    check("", false, &[]);
}

#[test]
fn redirections_belong_to_the_last_command_of_a_pipeline_or_list() {
    check(
        "echo hi | tee log.txt > copy.txt",
        false,
        &[("echo hi", C, false), ("tee log.txt", C, true)],
    );
    check("a && b > f", false, &[("a", C, false), ("b", C, true)]);
    check(
        "a | b | c > f 2>&1",
        false,
        &[("a", C, false), ("b", C, false), ("c", C, true)],
    );
    check("{ a; b; } > f", false, &[("a", C, true), ("b", C, true)]);
    check(
        "git status && >important",
        false,
        &[("git status", C, false), (">important", BARE, false)],
    );
    check("> /dev/null", false, &[]);
    check(
        "a | bash <<'EOF'\nb\nEOF",
        false,
        &[("a", C, false), ("bash", W, false), ("b", C, false)],
    );
}

#[test]
fn evaluated_parts() {
    check(
        "x=1; ls",
        false,
        &[("x=1", ASSIGN, false), ("ls", C, false)],
    );
    check(
        "ls $((x))",
        false,
        &[("ls $((x))", C, false), ("$((x))", ARITH, false)],
    );
    check("ls $((1 + 2))", false, &[("ls $((1 + 2))", C, false)]);
    check(
        "export A=1 B; ls",
        false,
        &[
            ("export A=1 B", C, false),
            ("export A=1", ASSIGN, false),
            ("export B", ASSIGN, false),
            ("ls", C, false),
        ],
    );
    check(
        "for f in *; do ls $f; done",
        false,
        &[("for f", ASSIGN, false), ("ls $f", C, false)],
    );
}

#[test]
fn roots() {
    let split = split_command("git status && ls | git log; $X y; env A=1 grep z");
    assert_eq!(split.roots(), vec!["git", "ls", "grep"]);
}
