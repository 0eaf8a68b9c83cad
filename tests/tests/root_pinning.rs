//! A session's root is pinned: `session.create` refuses roots no one
//! means unless forced, and a session loaded after a restart is refused
//! when its path no longer names the directory it was created in (by
//! device and inode), with a clear error, until the directory is back.

use geminid_protocol::error as code;
use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use jsonrpsee::core::client::Error as RpcError;
use serde_json::json;

/// The JSON-RPC code and message of a failed call.
fn rpc_failure<T: std::fmt::Debug>(r: Result<T, RpcError>) -> (i32, String) {
    match r {
        Err(RpcError::Call(e)) => (e.code(), e.message().to_owned()),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_no_one_means_are_refused_unless_forced() {
    let d = TestDaemon::start();
    let c = d.client().await;
    for root in [
        "/",
        "/proc",
        "/proc/1",
        "/sys",
        "/sys/kernel",
        "/dev",
        "/dev/shm",
    ] {
        let (code, message) = rpc_failure(
            c.create_session(root.into(), None, None, Some(false), None, None, None)
                .await,
        );
        assert_eq!(code, code::INVALID_PARAMS, "{root}: {message}");
        assert!(message.contains("force"), "{root}: {message}");
    }
    // Forced, `/` is taken (as the person asked).
    let info = c
        .create_session("/".into(), None, None, Some(false), Some(true), None, None)
        .await
        .unwrap();
    assert_eq!(info.cwd, "/");
    // The CLI says the same and takes --force.
    let out = d
        .gemctl(&["session", "new", "--cwd", "/proc"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("force"));
    let out = d
        .gemctl(&["session", "new", "--cwd", "/", "--force"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// After a restart, a session whose directory was replaced (by another
/// directory, then by a symlink to the old one's copy) is not loaded; put
/// back, it loads and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_root_is_refused_after_a_restart() {
    let mut d = TestDaemon::start();
    let proj = d.workspace.join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "original\n").unwrap();
    let c = d.client().await;
    let session = c
        .create_session(
            proj.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            Some(false),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    drop(c);
    assert_eq!(d.terminate(), Some(0));
    let kept = d.workspace.join("proj.kept");
    std::fs::rename(&proj, &kept).unwrap();
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "impostor\n").unwrap();
    d.spawn();
    let c = d.client().await;
    let (code, message) = rpc_failure(c.get_session(session.clone()).await);
    assert_eq!(code, code::WORKSPACE_CHANGED, "{message}");
    assert!(
        message.contains("is no longer the directory the session was created in"),
        "{message}"
    );
    assert!(message.contains(&proj.display().to_string()), "{message}");
    let (code, _) = rpc_failure(
        c.call_tool(
            session.clone(),
            "read_file".into(),
            Some(json!({"absolute_path": proj.join("a.txt")})),
            Some(true),
        )
        .await,
    );
    assert_eq!(code, code::WORKSPACE_CHANGED);
    // A symlink to the original directory is not the directory either.
    std::fs::remove_dir_all(&proj).unwrap();
    std::os::unix::fs::symlink(&kept, &proj).unwrap();
    let (code, message) = rpc_failure(c.get_session(session.clone()).await);
    assert_eq!(code, code::WORKSPACE_CHANGED, "{message}");
    // The session is still listed, so it can be found and deleted.
    let listed = c.list_sessions().await.unwrap();
    assert!(listed.iter().any(|s| s.session_id == session));
    // Put back, it loads and reads its own file.
    std::fs::remove_file(&proj).unwrap();
    std::fs::rename(&kept, &proj).unwrap();
    let read = c
        .call_tool(
            session.clone(),
            "read_file".into(),
            Some(json!({"absolute_path": proj.join("a.txt")})),
            Some(true),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(read.state, CallState::Success);
    assert!(
        serde_json::to_string(&read.result)
            .unwrap()
            .contains("original")
    );
}
