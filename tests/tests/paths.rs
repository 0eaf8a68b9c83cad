//! Workspace confinement through the daemon: every file tool refuses paths
//! that leave the session's workspace, however they are spelled, and
//! nothing outside is read or written. The session is in yolo mode so a
//! path that slipped through would really run.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::{Value, json};

const SECRET: &str = "TOPSECRET-outside-the-workspace\n";

struct Fixture {
    d: TestDaemon,
    c: Client,
    session: String,
    /// `<tmp>/outside`, next to the workspace, with `secret.txt` in it.
    outside: PathBuf,
}

async fn fixture() -> Fixture {
    let d = TestDaemon::start();
    let outside = d.workspace.parent().unwrap().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(d.workspace.join("inside.txt"), "inside\n").unwrap();
    symlink(outside.join("secret.txt"), d.workspace.join("link_file")).unwrap();
    symlink(&outside, d.workspace.join("link_dir")).unwrap();
    symlink(outside.join("nothing"), d.workspace.join("dangling")).unwrap();
    let c = d.client().await;
    let session = c
        .create_session(
            d.workspace.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    Fixture {
        d,
        c,
        session,
        outside,
    }
}

impl Fixture {
    /// `{ws}` and `{out}` in `template` become the workspace and outside dir.
    fn expand(&self, template: &str) -> String {
        template
            .replace("{ws}", &self.d.workspace.display().to_string())
            .replace("{out}", &self.outside.display().to_string())
    }

    /// Calls `tool` with `args` (templates expanded); says what is wrong
    /// unless it was refused as a path outside the workspace.
    async fn check(&self, tool: &str, args: Value) -> Option<String> {
        let args: Value = serde_json::from_str(&self.expand(&args.to_string())).unwrap();
        let done = self
            .c
            .call_tool(
                self.session.clone(),
                tool.into(),
                Some(args.clone()),
                Some(true),
            )
            .await
            .unwrap()
            .outcome
            .unwrap();
        let kind = done.error.as_ref().map(|e| e.kind.as_str()).unwrap_or("");
        let leaked = format!("{:?}{:?}", done.result, done.error).contains("TOPSECRET");
        (done.state != CallState::Error || kind != "path_not_allowed" || leaked).then(|| {
            format!(
                "{tool} {args}: want error path_not_allowed, got {:?} {:?}",
                done.state, done.error
            )
        })
    }

    /// Nothing outside the workspace changed.
    fn assert_outside_untouched(&self) {
        let mut names: Vec<String> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["secret.txt"], "nothing was created outside");
        let secret = std::fs::read_to_string(self.outside.join("secret.txt")).unwrap();
        assert_eq!(secret, SECRET, "the secret was not modified");
        let base = self.d.workspace.parent().unwrap();
        assert!(!base.join("escaped.txt").exists());
        assert!(!PathBuf::from("/etc/geminid-escaped").exists());
        assert!(!PathBuf::from("/tmp/geminid-escaped-by-proc").exists());
    }
}

#[tokio::test]
async fn every_file_tool_refuses_paths_outside_the_workspace() {
    let f = fixture().await;
    let cases = [
        // read_file
        ("read_file", json!({"absolute_path": "inside.txt"})),
        (
            "read_file",
            json!({"absolute_path": "../outside/secret.txt"}),
        ),
        (
            "read_file",
            json!({"absolute_path": "{ws}/../outside/secret.txt"}),
        ),
        ("read_file", json!({"absolute_path": "{ws}/link_file"})),
        (
            "read_file",
            json!({"absolute_path": "{ws}/link_dir/secret.txt"}),
        ),
        ("read_file", json!({"absolute_path": "{out}/secret.txt"})),
        ("read_file", json!({"absolute_path": "/etc/passwd"})),
        (
            "read_file",
            json!({"absolute_path": "/proc/self/root/etc/passwd"}),
        ),
        (
            "read_file",
            json!({"absolute_path": "/proc/self/root{out}/secret.txt"}),
        ),
        // write_file
        (
            "write_file",
            json!({"file_path": "new.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{ws}/../escaped.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{ws}/missing/../../escaped.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{ws}/link_file", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{ws}/link_dir/new.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{ws}/link_dir/secret.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{ws}/dangling", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "{out}/new.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "/etc/geminid-escaped", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "/proc/self/root/tmp/geminid-escaped-by-proc", "content": "x"}),
        ),
        // list_directory
        ("list_directory", json!({"path": "."})),
        ("list_directory", json!({"path": "{ws}/.."})),
        ("list_directory", json!({"path": "{ws}/link_dir"})),
        ("list_directory", json!({"path": "{out}"})),
        ("list_directory", json!({"path": "/etc"})),
        ("list_directory", json!({"path": "/proc/self/root/etc"})),
        // replace
        (
            "replace",
            json!({"file_path": "inside.txt", "old_string": "inside", "new_string": "x"}),
        ),
        (
            "replace",
            json!({"file_path": "{ws}/../outside/secret.txt", "old_string": "TOPSECRET", "new_string": "x"}),
        ),
        (
            "replace",
            json!({"file_path": "{ws}/link_file", "old_string": "TOPSECRET", "new_string": "x"}),
        ),
        (
            "replace",
            json!({"file_path": "{ws}/link_dir/secret.txt", "old_string": "TOPSECRET", "new_string": "x"}),
        ),
        (
            "replace",
            json!({"file_path": "{out}/secret.txt", "old_string": "TOPSECRET", "new_string": "x"}),
        ),
        (
            "replace",
            json!({"file_path": "/etc/passwd", "old_string": "geminid-no-such-text", "new_string": "x"}),
        ),
        (
            "replace",
            json!({"file_path": "/proc/self/root{out}/secret.txt", "old_string": "TOPSECRET", "new_string": "x"}),
        ),
        // read_many_files (relative patterns are normal here; escapes are not)
        (
            "read_many_files",
            json!({"paths": ["../outside/secret.txt"]}),
        ),
        (
            "read_many_files",
            json!({"paths": ["{ws}/../outside/secret.txt"]}),
        ),
        ("read_many_files", json!({"paths": ["link_file"]})),
        ("read_many_files", json!({"paths": ["link_dir/secret.txt"]})),
        ("read_many_files", json!({"paths": ["link_dir/*.txt"]})),
        ("read_many_files", json!({"paths": ["{out}/secret.txt"]})),
        ("read_many_files", json!({"paths": ["/etc/passwd"]})),
        (
            "read_many_files",
            json!({"paths": ["/proc/self/root/etc/passwd"]}),
        ),
        (
            "read_many_files",
            json!({"paths": ["inside.txt"], "include": ["../outside/*"]}),
        ),
    ];
    let mut wrong = Vec::new();
    for (tool, args) in cases {
        wrong.extend(f.check(tool, args).await);
    }
    assert!(wrong.is_empty(), "not refused: {wrong:#?}");
    f.assert_outside_untouched();
    assert_eq!(
        std::fs::read_to_string(f.d.workspace.join("inside.txt")).unwrap(),
        "inside\n"
    );
}

#[tokio::test]
async fn a_glob_walk_does_not_follow_symlinks_out_of_the_workspace() {
    let f = fixture().await;
    for paths in [json!(["**"]), json!(["**/*.txt"]), json!(["*"])] {
        let done =
            f.c.call_tool(
                f.session.clone(),
                "read_many_files".into(),
                Some(json!({"paths": paths})),
                Some(true),
            )
            .await
            .unwrap()
            .outcome
            .unwrap();
        let text = format!("{done:?}");
        assert!(
            !text.contains("TOPSECRET"),
            "{paths} leaked the secret: {text}"
        );
    }
    f.assert_outside_untouched();
}
