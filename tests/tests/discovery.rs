//! Command-based tool discovery (`tools.discoveryCommand` /
//! `tools.callCommand`) through the daemon.

mod peers;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use peers::*;
use serde_json::json;

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

const DECLARATIONS: &str = r#"cat <<'JSON'
[{"name": "shout", "description": "Upper-cases text",
  "parameters": {"type": "object", "properties": {"text": {"type": "string", "format": "uri"}}, "required": ["text"]}},
 {"functionDeclarations": [{"name": "fail", "description": "Always fails"}]},
 {"description": "no name"},
 {"name": "shout"}]
JSON"#;

const CALL: &str = r#"case "$1" in
  shout) tr a-z A-Z ;;
  fail) echo "went wrong" >&2; exit 3 ;;
  *) echo "unknown $1" >&2; exit 9 ;;
esac"#;

/// A daemon whose settings name the two scripts (written in its home).
fn daemon(discovery_body: &str) -> (TestDaemon, String) {
    let mut d = TestDaemon::start();
    let home = d.home();
    let discover = script(&home, "discover.sh", discovery_body);
    let call = script(&home, "call.sh", CALL);
    d.kill9();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"tools": {"discoveryCommand": discover, "callCommand": call}}).to_string(),
    )
    .unwrap();
    d.spawn();
    (d, discover)
}

#[tokio::test(flavor = "multi_thread")]
async fn discovered_tools_run_the_call_command() {
    let (d, _) = daemon(DECLARATIONS);
    let c = d.client().await;
    let list = wait_list(&c, 30, |l| l.command.is_some()).await;
    let state = list.command.unwrap();
    assert_eq!(state.tools, vec!["shout", "fail"]);
    assert!(
        state.problems.iter().any(|p| p.contains("no name")),
        "{state:#?}"
    );
    assert!(
        state.problems.iter().any(|p| p.contains("duplicate")),
        "{state:#?}"
    );

    let tools = c.list_tools(None).await.unwrap();
    let shout = tools.iter().find(|t| t.name == "shout").expect("shout");
    assert_eq!(shout.source, "discovered");
    assert_eq!(shout.kind, "other");
    assert!(shout.description.contains("discovered from the project"));
    assert!(
        shout.parameters.to_string().find("uri").is_none(),
        "sanitized"
    );

    let sid = session(&c, &d, ApprovalMode::Yolo).await;
    let ok = run(&c, &sid, "shout", json!({"text": "hello"})).await;
    assert_eq!(ok.state, CallState::Success, "{ok:#?}");
    assert!(
        result_json(&ok)
            .to_string()
            .contains("{\\\"TEXT\\\":\\\"HELLO\\\"}"),
        "{ok:#?}"
    );

    let failed = run(&c, &sid, "fail", json!({})).await;
    assert_eq!(failed.state, CallState::Error);
    let error = failed.error.unwrap();
    assert!(error.message.contains("Exit Code: 3"), "{error:?}");
    assert!(error.message.contains("went wrong"), "{error:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_output_is_reported_and_rediscover_replaces_the_set() {
    let (d, discover) = daemon("echo 'this is not json'");
    let c = d.client().await;
    let list = wait_list(&c, 30, |l| l.command.is_some()).await;
    let state = list.command.unwrap();
    assert!(state.tools.is_empty());
    assert!(
        state.problems.iter().any(|p| p.contains("not JSON")),
        "{state:#?}"
    );
    // The registry is intact.
    let tools = c.list_tools(None).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "read_file"));

    // Fixed: the tools appear.
    std::fs::write(&discover, format!("#!/bin/sh\n{DECLARATIONS}\n")).unwrap();
    let state = c.rediscover_tools(None).await.unwrap();
    assert_eq!(state.tools, vec!["shout", "fail"]);

    // Changed: the old set is replaced, not added to.
    std::fs::write(
        &discover,
        "#!/bin/sh\necho '{\"functionDeclarations\": [{\"name\": \"solo\"}]}'\n",
    )
    .unwrap();
    let state = c.rediscover_tools(None).await.unwrap();
    assert_eq!(state.tools, vec!["solo"]);
    let names: Vec<String> = c
        .list_tools(None)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"solo".to_owned()));
    assert!(!names.contains(&"shout".to_owned()));

    // A failing command keeps the set and says why; a built-in name is refused.
    std::fs::write(&discover, "#!/bin/sh\necho boom >&2\nexit 4\n").unwrap();
    let state = c.rediscover_tools(None).await.unwrap();
    assert_eq!(state.tools, vec!["solo"]);
    assert!(
        state
            .problems
            .iter()
            .any(|p| p.contains("exit code 4") && p.contains("boom")),
        "{state:#?}"
    );
    std::fs::write(&discover, "#!/bin/sh\necho '[{\"name\": \"read_file\"}]'\n").unwrap();
    let state = c.rediscover_tools(None).await.unwrap();
    assert!(state.tools.is_empty());
    assert!(
        state.problems.iter().any(|p| p.contains("exists already")),
        "{state:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_discovery_command_is_killed_and_reported() {
    let mut d = TestDaemon::start();
    let home = d.home();
    let marker = home.join("child.pid");
    // The command and a child it leaves behind both hang.
    let discover = script(
        &home,
        "discover.sh",
        &format!("sleep 300 & echo $! > {}\nsleep 300", marker.display()),
    );
    d.kill9();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"tools": {"discoveryCommand": discover, "discoveryTimeout": 500}}).to_string(),
    )
    .unwrap();
    d.spawn();
    let c = d.client().await;
    let list = wait_list(&c, 30, |l| l.command.is_some()).await;
    let state = list.command.unwrap();
    assert!(state.tools.is_empty());
    assert!(
        state.problems.iter().any(|p| p.contains("did not finish")),
        "{state:#?}"
    );
    let child: u32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while alive(child) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command's process group was not killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        c.list_tools(None)
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "read_file")
    );
}
