//! Property test of the shell policy (issue 22): compositions of
//! assignments, arithmetic, expansions, here-documents, redirections,
//! substitutions, separators and wrappers around commands a user policy
//! allows (`git status`, `ls`) are allowed exactly when every generated
//! part is in an inert class; what is never allowed (bare output
//! redirections, unparsable text) is denied in yolo too.
//!
//! The labels are checked against bash itself: every composition judged
//! inert is run by real bash, with hostile values in the environment
//! (`x='a[$(touch marker)]'`), and must not create the marker.
//!
//! `GEMINID_SHELL_CASES=N` sets the number of compositions (default 600).

use std::cell::Cell;
use std::path::Path;
use std::process::{Command, Stdio};

use geminid::policy::{
    ApprovalMode, Decision, PolicyEngine, PolicyInput, Tier, ToolKind, default_rules, parse_policy,
    split_command,
};
use geminid_tests::shell_corpus::*;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

const RULES: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "ls"]
decision = "allow"
priority = 100
"#;

fn engine() -> PolicyEngine {
    let (mut rules, errors) = parse_policy(RULES, "user.toml", Tier::User);
    assert!(errors.is_empty(), "{errors:?}");
    rules.extend(default_rules());
    PolicyEngine::new(rules)
}

fn decide(engine: &PolicyEngine, command: &str, mode: ApprovalMode, interactive: bool) -> Decision {
    let args = json!({ "command": command });
    engine
        .check(&PolicyInput {
            tool_name: "run_shell_command",
            args: &args,
            server_name: None,
            remote_name: None,
            annotations: None,
            tool_kind: ToolKind::Execute,
            mode,
            interactive,
        })
        .decision
}

fn allowed_segment(inert: bool) -> BoxedStrategy<Segment> {
    let args = select(indices(ARGS, inert));
    let redirects = select(indices(REDIRECTS, inert));
    let heredocs = select(heredoc_indices(inert));
    (
        0..ALLOWED.len(),
        prop::collection::vec(args, 0..3),
        prop::option::weighted(0.3, redirects),
        prop::option::weighted(0.2, heredocs),
    )
        .prop_map(|(command, args, redirect, heredoc)| Segment::Allowed {
            command,
            args,
            redirect,
            heredoc,
        })
        .boxed()
}

fn segment(inert: bool) -> BoxedStrategy<Segment> {
    let statements = select(indices(STATEMENTS, inert)).prop_map(Segment::Statement);
    prop_oneof![3 => allowed_segment(inert), 1 => statements].boxed()
}

/// Inert fragments only, around at least one allowed command.
fn inert_composition() -> impl Strategy<Value = Composition> {
    (
        allowed_segment(true),
        prop::collection::vec(segment(true), 0..4),
        0..5usize,
        prop::collection::vec(0..SEPARATORS.len(), 4),
    )
        .prop_map(|(allowed, mut segments, at, separators)| {
            segments.insert(at % (segments.len() + 1), allowed);
            Composition {
                segments,
                separators,
            }
        })
}

/// A non-inert fragment put into an inert composition.
#[derive(Debug, Clone)]
enum Injection {
    Arg(usize, usize),
    Redirect(usize, usize),
    Heredoc(usize, usize),
    Statement(usize, usize),
    Unparsable(usize),
}

fn injection() -> impl Strategy<Value = Injection> {
    let at = 0..8usize;
    prop_oneof![
        4 => (select(indices(ARGS, false)), at.clone()).prop_map(|(f, a)| Injection::Arg(f, a)),
        2 => (select(indices(REDIRECTS, false)), at.clone())
            .prop_map(|(f, a)| Injection::Redirect(f, a)),
        2 => (select(heredoc_indices(false)), at.clone())
            .prop_map(|(f, a)| Injection::Heredoc(f, a)),
        4 => (select(indices(STATEMENTS, false)), at).prop_map(|(f, a)| Injection::Statement(f, a)),
        1 => (0..UNPARSABLE.len()).prop_map(Injection::Unparsable),
    ]
}

/// An inert composition with one to three non-inert fragments put in.
fn mixed_composition() -> impl Strategy<Value = Composition> {
    (
        inert_composition(),
        prop::collection::vec(injection(), 1..4),
    )
        .prop_map(|(mut c, injections)| {
            let mut unparsable = None;
            for injection in injections {
                match injection {
                    Injection::Arg(f, at) => allowed_at(&mut c, at, |args, _, _| args.push(f)),
                    Injection::Redirect(f, at) => allowed_at(&mut c, at, |_, r, _| *r = Some(f)),
                    Injection::Heredoc(f, at) => allowed_at(&mut c, at, |_, _, h| *h = Some(f)),
                    Injection::Statement(f, at) => {
                        let at = at % (c.segments.len() + 1);
                        c.segments.insert(at, Segment::Statement(f));
                    }
                    // Last, so that nothing after it can complete it.
                    Injection::Unparsable(u) => unparsable = Some(u),
                }
            }
            if let Some(u) = unparsable {
                c.segments.push(Segment::Unparsable(u));
            }
            while c.separators.len() < c.segments.len() {
                c.separators.push(0);
            }
            c
        })
}

type Edit<'a> = dyn FnOnce(&mut Vec<usize>, &mut Option<usize>, &mut Option<usize>) + 'a;

/// Applies `edit` to the allowed command at `at`, or to a new `ls` there.
fn allowed_at(
    c: &mut Composition,
    at: usize,
    edit: impl FnOnce(&mut Vec<usize>, &mut Option<usize>, &mut Option<usize>),
) {
    let at = at % c.segments.len();
    if !matches!(c.segments[at], Segment::Allowed { .. }) {
        c.segments.insert(
            at,
            Segment::Allowed {
                command: 0,
                args: Vec::new(),
                redirect: None,
                heredoc: None,
            },
        );
    }
    if let Segment::Allowed {
        args,
        redirect,
        heredoc,
        ..
    } = &mut c.segments[at]
    {
        let edit: Box<Edit<'_>> = Box::new(edit);
        edit(args, redirect, heredoc);
    }
}

/// Runs `command` with bash in `dir`, with a hostile `x` in the
/// environment; whether `marker` appeared.
fn bash_creates_marker(command: &str, dir: &Path, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    let status = Command::new("timeout")
        .args(["10", "bash", "-c", command])
        .current_dir(dir)
        .env("x", format!("a[$(touch {})]", marker.display()))
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run bash (apt-get install bash coreutils)");
    assert_ne!(status.code(), Some(124), "bash timed out on {command:?}");
    marker.exists()
}

fn require(tool: &str, install: &str) {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{tool} is needed for this test: {install}");
}

#[test]
fn compositions_are_allowed_only_when_every_part_is_inert() {
    require("bash", "apt-get install bash");
    require("git", "apt-get install git");
    require("timeout", "apt-get install coreutils");
    let cases: u32 = std::env::var("GEMINID_SHELL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().canonicalize().expect("canonical");
    let evil = dir.join("evil");
    std::fs::create_dir_all(&evil).expect("evil dir");
    let marker = dir.join("MARKER");
    let marker_text = marker.display().to_string();
    let evil_text = evil.display().to_string();
    let engine = engine();
    let (inert, hazardous) = (Cell::new(0u32), Cell::new(0u32));
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop_oneof![inert_composition(), mixed_composition()];
    let result = runner.run(&strategy, |c| {
        let command = c.render(&marker_text, &evil_text);
        let hazards = c.hazards();
        let never = hazards.iter().any(|h| h.never_allowed());
        let default = decide(&engine, &command, ApprovalMode::Default, true);
        let headless = decide(&engine, &command, ApprovalMode::Default, false);
        let yolo = decide(&engine, &command, ApprovalMode::Yolo, true);
        if hazards.is_empty() {
            inert.set(inert.get() + 1);
            prop_assert_eq!(default, Decision::Allow, "{:?} is inert", command);
            prop_assert_eq!(headless, Decision::Allow, "{:?} is inert", command);
            prop_assert_eq!(yolo, Decision::Allow, "{:?} is inert", command);
            if bash_creates_marker(&command, &dir, &marker) {
                return Err(TestCaseError::fail(format!(
                    "labelled inert, but bash ran the payload: {command:?}"
                )));
            }
        } else {
            hazardous.set(hazardous.get() + 1);
            prop_assert_eq!(
                default,
                Decision::AskUser,
                "{:?} holds {:?}",
                command,
                hazards
            );
            prop_assert_eq!(
                headless,
                Decision::Deny,
                "{:?} holds {:?}",
                command,
                hazards
            );
            let unparsable = split_command(&command).parse_error;
            let want_yolo = if never || unparsable {
                Decision::Deny
            } else {
                Decision::Allow
            };
            prop_assert_eq!(yolo, want_yolo, "{:?} in yolo holds {:?}", command, hazards);
        }
        Ok(())
    });
    let (inert, hazardous) = (inert.get(), hazardous.get());
    println!("{inert} inert compositions (run by bash), {hazardous} with non-inert parts");
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        inert > cases / 5 && hazardous > cases / 5,
        "both kinds drawn"
    );
}
