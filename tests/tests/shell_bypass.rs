//! The shell policy boundary through a real daemon (issue 22): a user
//! policy allows only `git status` and `ls` (`~/.gemini/policies/`), a
//! non-interactive session gets a generated corpus of command lines that
//! each try to create a marker file (assignments, arithmetic, expansions,
//! here-documents, redirections, substitutions, interpreters and wrappers
//! around the allowed commands), and afterwards no marker exists and every
//! call was either denied or allowed and inert. The attacks are real: the
//! daemon's environment holds `x='a[$(touch marker)]'` (arithmetic on it
//! and `${!x}` run the payload), the workspace is a git repository, and an
//! attacker's directory holds a `git` that touches a marker and a
//! `.gitconfig` whose `core.fsmonitor` does (`PATH=...`, `HOME=...`).
//!
//! A yolo session then gets what no rule can allow (bare output
//! redirections, text that does not parse after a payload line): all
//! denied, no marker.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use geminid_protocol::tool::{CallState, ToolCallSnapshot};
use geminid_tests::shell_corpus::*;
use geminid_tests::*;
use serde_json::json;

const RULES: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "ls"]
decision = "allow"
priority = 100
"#;

/// One command line of the corpus.
struct Case {
    command: String,
    class: Class,
}

/// Every fragment in the contexts an attacker would use; `@M` becomes a
/// marker of the case's own.
fn corpus(marks: &Path, evil: &Path) -> Vec<Case> {
    let mut templates: Vec<(String, Class)> = Vec::new();
    for a in ARGS {
        for context in ["ls {}", "git status {}", "ls -la {}; git status"] {
            templates.push((context.replace("{}", a.text), a.class));
        }
    }
    for r in REDIRECTS {
        for context in ["ls {}", "git status {}"] {
            templates.push((context.replace("{}", r.text), r.class));
        }
    }
    for (op, body, class) in HEREDOCS {
        for command in ["ls", "git status"] {
            templates.push((format!("{command} {op}\n{body}\nEOF"), *class));
        }
        templates.push((
            format!("git status; ls {op}\n{body}\nEOF\ngit status"),
            *class,
        ));
    }
    for s in STATEMENTS {
        for context in ["{}; git status", "git status; {}; ls", "ls && {}", "{}\nls"] {
            templates.push((context.replace("{}", s.text), s.class));
        }
    }
    for u in UNPARSABLE {
        templates.push((u.to_string(), Class::Unparsable));
    }
    // The issue's own strings (the environment holds the hostile `x`).
    for (text, class) in [
        ("PATH=@D:$PATH; git status", Class::Assignment),
        ("HOME=@D; git status", Class::Assignment),
        ("x=1; ls", Class::Assignment),
        ("x='a[$(touch @M)]'; ls $((x))", Class::Assignment),
        ("git status -- $((x+1))", Class::Arithmetic),
        ("ls ${!x}", Class::Expansion),
        ("ls ${a[x]}", Class::Expansion),
        ("[[ $x -eq 0 ]]; ls", Class::Arithmetic),
        ("(( x )); ls", Class::Arithmetic),
        ("ls ${x@P}", Class::Expansion),
        ("git status <<EOF\n`touch @M`\nEOF", Class::Heredoc),
        ("\"${x:=`touch @M`}\"", Class::Substitution),
        ("git status && >@M", Class::BareRedirection),
        ("git status &&", Class::Unparsable),
        ("ls (", Class::Unparsable),
        ("ls 'unterminated", Class::Unparsable),
    ] {
        templates.push((text.to_owned(), class));
    }
    templates
        .into_iter()
        .enumerate()
        .map(|(i, (text, class))| {
            let marker = marks.join(format!("case-{i}"));
            Case {
                command: fill(
                    &text,
                    &marker.display().to_string(),
                    &evil.display().to_string(),
                ),
                class,
            }
        })
        .collect()
}

/// What never parses or redirects without a command, for the yolo run.
fn never_corpus(marks: &Path) -> Vec<String> {
    let mut out: Vec<String> = UNPARSABLE.iter().map(|u| u.to_string()).collect();
    out.extend(
        [
            "> @M",
            ">> @M",
            ">| @M",
            "&> @M",
            "ls; > @M",
            "git status && > @M",
            "git status || > @M",
            "ls | > @M",
            "ls & > @M",
            "ls\n> @M",
            "git status && &>> @M",
            "bash -c '> @M'",
            "eval '> @M'",
        ]
        .map(str::to_owned),
    );
    out.into_iter()
        .enumerate()
        .map(|(i, text)| {
            fill(
                &text,
                &marks.join(format!("yolo-{i}")).display().to_string(),
                "/nonexistent",
            )
        })
        .collect()
}

fn denied(outcome: &ToolCallSnapshot) -> bool {
    outcome.state == CallState::Error && outcome.error.as_ref().is_some_and(|e| e.kind == "denied")
}

fn markers(marks: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(marks)
        .expect("marks dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

fn run(cmd: &str, args: &[&str], dir: &Path) {
    let status = std::process::Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{cmd} is needed for this test (apt-get install {cmd}): {e}"));
    assert!(status.success(), "{cmd} {args:?}");
}

#[derive(Default)]
struct Counts {
    attempts: u32,
    denied: u32,
    allowed: u32,
    escapes: u32,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_command_line_runs_what_the_policy_did_not_allow() {
    let lab = tempfile::tempdir().expect("tempdir");
    let lab = lab.path().canonicalize().expect("canonical");
    let marks = lab.join("marks");
    let evil = lab.join("evil");
    std::fs::create_dir_all(&marks).expect("marks");
    std::fs::create_dir_all(&evil).expect("evil");
    let hijack = format!("#!/bin/sh\ntouch {}/evil-git\n", marks.display());
    std::fs::write(evil.join("git"), hijack).expect("evil git");
    run("chmod", &["+x", "git"], &evil);
    let gitconfig = format!(
        "[core]\n\tfsmonitor = \"touch {}/evil-fsmonitor; false\"\n",
        marks.display()
    );
    std::fs::write(evil.join(".gitconfig"), gitconfig).expect("evil gitconfig");
    let hostile = format!("a[$(touch {}/env-x)]", marks.display());
    let d = TestDaemon::start_with_env(&[("x", hostile.as_str()), ("y", "abc")]);
    run("git", &["init", "-q", "."], &d.workspace);
    let policies = d.home().join(".gemini/policies");
    std::fs::create_dir_all(&policies).expect("policies dir");
    std::fs::write(policies.join("only-git-status-and-ls.toml"), RULES).expect("policy");
    let c = d.client().await;
    wait_until_allowed(&c, "git status").await;

    // The attack is real: the same payloads do run when bash gets them.
    for probe in [
        "HOME=@D; git status",
        "PATH=@D:$PATH; git status",
        "ls $((x))",
    ] {
        let text = fill(probe, "/dev/null", &evil.display().to_string());
        std::process::Command::new("bash")
            .args(["-c", &text])
            .current_dir(&d.workspace)
            .env("x", &hostile)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("bash (apt-get install bash)");
    }
    assert_eq!(
        markers(&marks),
        ["env-x", "evil-fsmonitor", "evil-git"],
        "the probes ran"
    );
    for m in markers(&marks) {
        std::fs::remove_file(marks.join(m)).expect("remove probe marker");
    }

    let session = c
        .create_session(
            d.workspace.display().to_string(),
            None,
            None,
            Some(false),
            None,
            None,
            None,
        )
        .await
        .expect("session.create")
        .session_id;
    let cases = corpus(&marks, &evil);
    assert!(cases.len() >= 300, "corpus of {}", cases.len());
    let mut counts: BTreeMap<Class, Counts> = BTreeMap::new();
    let mut wrong = Vec::new();
    let started = Instant::now();
    for case in &cases {
        let outcome = call_and_wait(
            &c,
            &session,
            "run_shell_command",
            json!({"command": case.command}),
        )
        .await
        .outcome
        .expect("final snapshot");
        let count = counts.entry(case.class).or_default();
        count.attempts += 1;
        if denied(&outcome) {
            count.denied += 1;
            if case.class == Class::Inert {
                wrong.push(format!("inert but denied: {:?}", case.command));
            }
        } else {
            count.allowed += 1;
            if case.class != Class::Inert {
                wrong.push(format!(
                    "{:?} allowed: {:?} -> {:?}",
                    case.class, case.command, outcome.state
                ));
            }
        }
    }
    let elapsed = started.elapsed();
    // Background jobs (`&`) finish after their call.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let escaped = markers(&marks);
    // `env-x`, `evil-git` and `evil-fsmonitor` are shared by many cases.
    let mut shared_escapes = Vec::new();
    for name in &escaped {
        let case = name
            .strip_prefix("case-")
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| cases.get(i));
        match case {
            Some(case) => counts.entry(case.class).or_default().escapes += 1,
            None => shared_escapes.push(name.clone()),
        }
    }
    println!("| class | attempts | denied | allowed (inert) | escapes |");
    println!("|---|---|---|---|---|");
    for (class, n) in &counts {
        println!(
            "| {class:?} | {} | {} | {} | {} |",
            n.attempts, n.denied, n.allowed, n.escapes
        );
    }
    println!(
        "{} calls in {:.1} s; shared payloads run: {shared_escapes:?}",
        cases.len(),
        elapsed.as_secs_f64()
    );
    assert!(escaped.is_empty(), "markers created: {escaped:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // Yolo: no rule can allow a bare output redirection or unparsable text.
    let yolo = c
        .create_session(
            d.workspace.display().to_string(),
            Some(geminid_protocol::session::ApprovalMode::Yolo),
            None,
            Some(false),
            None,
            None,
            None,
        )
        .await
        .expect("yolo session")
        .session_id;
    let never = never_corpus(&marks);
    for command in &never {
        let outcome = call_and_wait(&c, &yolo, "run_shell_command", json!({"command": command}))
            .await
            .outcome
            .expect("final snapshot");
        assert!(denied(&outcome), "yolo ran {command:?}: {outcome:?}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        markers(&marks).is_empty(),
        "yolo markers: {:?}",
        markers(&marks)
    );
    println!(
        "yolo: {} bare redirections and unparsable lines, all denied",
        never.len()
    );

    // The same session still runs what is allowed.
    let ok = call_and_wait(
        &c,
        &yolo,
        "run_shell_command",
        json!({"command": "ls > /dev/null"}),
    )
    .await
    .outcome
    .expect("final snapshot");
    assert_eq!(ok.state, CallState::Success, "{ok:?}");
}

async fn wait_until_allowed(c: &Client, command: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let verdict = c
            .check_policy(
                None,
                None,
                "run_shell_command".into(),
                Some(json!({"command": command})),
                None,
                Some(false),
            )
            .await
            .expect("policy.check");
        if verdict.decision == "allow" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the user policy never allowed {command:?}");
}
