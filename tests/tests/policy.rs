//! The policy engine through the daemon: user and admin files, hot reload,
//! broken files, explanations, and "always allow and save".

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use geminid_protocol::EventPayload;
use geminid_protocol::policy::PolicyCheckResult;
use geminid_protocol::tool::{CallState, ConfirmationOutcome};
use geminid_tests::*;
use serde_json::json;

const GIT_STATUS_ALLOWED: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = "git status"
decision = "allow"
priority = 100
"#;

fn policies_dir(d: &TestDaemon) -> PathBuf {
    d.home().join(".gemini/policies")
}

fn write_policy(d: &TestDaemon, name: &str, text: &str) -> PathBuf {
    let dir = policies_dir(d);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

async fn check(client: &Client, command: &str) -> PolicyCheckResult {
    client
        .check_policy(
            None,
            None,
            "run_shell_command".into(),
            Some(json!({"command": command})),
            None,
            None,
        )
        .await
        .unwrap()
}

/// Polls until the policy's decision for `command` is `want` (hot reload is
/// asynchronous), failing after 30 s (a loaded machine is slow to reload).
async fn until_decision(client: &Client, command: &str, want: &str) -> PolicyCheckResult {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let result = check(client, command).await;
        if result.decision == want {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "`{command}` never became {want}: {:?}",
        check(client, command).await
    );
}

#[tokio::test]
async fn a_user_rule_allows_its_prefix_and_nothing_chained_onto_it() {
    let d = TestDaemon::start();
    write_policy(&d, "mine.toml", GIT_STATUS_ALLOWED);
    let c = d.client().await;
    until_decision(&c, "git status -s", "allow").await;

    let table = [
        ("git status", "allow"),
        ("git status && rm -rf ~", "ask_user"),
        ("git status; curl x | sh", "ask_user"),
        ("git statusx", "ask_user"),
        ("git status $(rm -rf ~)", "ask_user"),
        ("bash -c 'rm -rf ~'", "ask_user"),
        ("FOO=1 rm -rf ~", "ask_user"),
    ];
    for (command, want) in table {
        assert_eq!(check(&c, command).await.decision, want, "{command}");
    }
    let explained = check(&c, "git status && rm -rf ~").await;
    let rm = explained
        .subcommands
        .iter()
        .find(|s| s.command == "rm -rf ~")
        .expect("each sub-command is explained");
    assert_eq!(rm.decision, "ask_user");
    let git = explained
        .subcommands
        .iter()
        .find(|s| s.command == "git status")
        .unwrap();
    assert_eq!(git.decision, "allow");
    assert!(git.rule.as_ref().unwrap().file.ends_with("mine.toml"));
    assert_eq!(git.rule.as_ref().unwrap().tier, "user");

    let ni = c
        .check_policy(
            None,
            None,
            "write_file".into(),
            Some(json!({})),
            None,
            Some(false),
        )
        .await
        .unwrap();
    assert_eq!(
        ni.decision, "deny",
        "non-interactive turns ask_user into deny"
    );
}

#[tokio::test]
async fn edited_policy_files_take_effect_and_broken_ones_keep_the_old_rules() {
    let d = TestDaemon::start();
    std::fs::create_dir_all(policies_dir(&d)).unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut events = c.subscribe_session(session.clone(), None).await.unwrap();
    assert_eq!(check(&c, "git status").await.decision, "ask_user");

    let path = write_policy(&d, "mine.toml", GIT_STATUS_ALLOWED);
    until_decision(&c, "git status", "allow").await;

    std::fs::write(&path, "[[rule]]\ntoolName = 3\ndecision = \"allow\"\n").unwrap();
    let notice = collect_until(
        &mut events,
        |e| matches!(&e.payload, EventPayload::Error { message } if message.contains("mine.toml")),
    )
    .await;
    let EventPayload::Error { message } = &notice.last().unwrap().payload else {
        unreachable!()
    };
    assert!(
        message.contains("toolName"),
        "the problem names the field: {message}"
    );
    assert_eq!(
        check(&c, "git status").await.decision,
        "allow",
        "the previous rules stay"
    );

    std::fs::remove_file(&path).unwrap();
    until_decision(&c, "git status", "ask_user").await;
}

#[tokio::test]
async fn proceed_always_and_save_writes_our_own_policy_file() {
    let d = TestDaemon::start();
    let users_own = write_policy(&d, "users-own.toml", GIT_STATUS_ALLOWED);
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut events = c.subscribe_session(session.clone(), None).await.unwrap();
    let call = c
        .call_tool(
            session.clone(),
            "run_shell_command".into(),
            Some(json!({"command": "echo saved-rule"})),
            None,
        )
        .await
        .unwrap()
        .call_id;
    wait_state(&mut events, &call, CallState::AwaitingApproval).await;
    let answer = c
        .confirm_tool(
            session.clone(),
            call.clone(),
            ConfirmationOutcome::ProceedAlwaysAndSave,
            None,
        )
        .await
        .unwrap();
    assert!(answer.accepted);
    wait_state(&mut events, &call, CallState::Success).await;

    let saved = policies_dir(&d).join("geminid-always-allow.toml");
    let text = std::fs::read_to_string(&saved).expect("the saved rule file exists");
    assert!(text.contains("echo"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&users_own).unwrap(),
        GIT_STATUS_ALLOWED,
        "the user's file is untouched"
    );
    let leftovers: Vec<_> = std::fs::read_dir(policies_dir(&d))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".toml"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temp files left behind: {leftovers:?}"
    );
    // Saved means every session, not just this one.
    let result = until_decision(&c, "echo something else", "allow").await;
    assert!(
        result
            .rule
            .unwrap()
            .file
            .ends_with("geminid-always-allow.toml")
    );
}

#[tokio::test]
async fn policy_list_is_ordered_and_an_untrusted_admin_dir_is_ignored() {
    let admin = tempfile::tempdir().unwrap();
    std::fs::write(
        admin.path().join("admin.toml"),
        "[[rule]]\ntoolName = \"read_file\"\ndecision = \"deny\"\npriority = 1\n",
    )
    .unwrap();
    std::fs::set_permissions(admin.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let admin_dir = admin.path().display().to_string();
    let d = TestDaemon::start_with_env(&[("GEMINID_ADMIN_POLICY_DIR", &admin_dir)]);
    write_policy(&d, "mine.toml", GIT_STATUS_ALLOWED);
    let c = d.client().await;
    until_decision(&c, "git status", "allow").await;

    let list = c.list_policy().await.unwrap();
    let priorities: Vec<f64> = list.rules.iter().map(|r| r.source.priority).collect();
    assert!(
        priorities.windows(2).all(|w| w[0] >= w[1]),
        "highest priority first: {priorities:?}"
    );
    assert!(
        list.rules
            .iter()
            .any(|r| r.source.file.ends_with("mine.toml"))
    );
    assert!(
        list.rules.iter().all(|r| r.source.tier != "admin"),
        "a world-writable admin dir is ignored"
    );
    assert!(
        list.problems.iter().any(|p| p.contains(&admin_dir)),
        "{:?}",
        list.problems
    );
    let read = c
        .check_policy(
            None,
            None,
            "read_file".into(),
            Some(json!({"absolute_path": "/x"})),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(read.decision, "allow");
}

#[test]
fn gemctl_policy_check_explains_for_people_and_scripts() {
    let d = TestDaemon::start();
    write_policy(&d, "mine.toml", GIT_STATUS_ALLOWED);
    wait_policy_file_seen(&d);
    let out = d
        .gemctl(&[
            "policy",
            "check",
            "run_shell_command",
            r#"{"command": "git status && rm -rf ~"}"#,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("ask_user"), "{text}");
    assert!(text.contains("mine.toml rule #1"), "{text}");
    let out = d
        .gemctl(&[
            "--json",
            "policy",
            "check",
            "--mode",
            "yolo",
            "write_file",
            "{}",
        ])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["decision"], "allow");
    assert_eq!(json["approvalMode"], "yolo");
}

/// The policy is loaded at start; a file written just after may need the
/// watcher. Wait until `policy list` shows it.
fn wait_policy_file_seen(d: &TestDaemon) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let out = d.gemctl(&["policy", "list"]).output().unwrap();
        if String::from_utf8_lossy(&out.stdout).contains("mine.toml") {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the daemon never loaded mine.toml");
}
