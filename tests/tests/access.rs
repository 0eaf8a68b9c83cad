//! Access: only the daemon's own user gets in. The socket is 0600 in a
//! 0700 directory, the data dir is 0700, and another uid (65534, through
//! `setpriv`) can neither connect nor read a byte of the store. With the
//! modes loosened on purpose, the peer uid check still turns it away.
//!
//! Switching uid needs root; the tests fail, saying so, otherwise.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use geminid_tests::*;

const NOBODY: &str = "65534";

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// Runs `cmd` as uid/gid 65534 with no supplementary groups.
fn as_nobody(program: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(program)
        .args(args)
        .output()
        .expect("setpriv")
}

/// Fails the test unless it can act as another uid (root and setpriv).
fn need_to_switch_uid() {
    assert!(
        rustix::process::geteuid().is_root(),
        "the access tests switch to uid {NOBODY} and need root (CI runs them \
         as root): run `cargo test -p geminid-tests --test access` as root"
    );
    let tried = as_nobody(Path::new("/bin/true"), &[]);
    assert!(
        tried.status.success(),
        "setpriv cannot switch to uid {NOBODY}: {tried:?}"
    );
}

/// A copy of `gemctl` that uid 65534 can run (the build tree may sit
/// where that uid cannot look).
fn gemctl_for_anyone(d: &TestDaemon) -> PathBuf {
    let copy = d.dir.path().join("gemctl");
    std::fs::copy(gemctl_bin(), &copy).unwrap();
    chmod(&copy, 0o755);
    copy
}

/// Every file and directory under `dir`.
fn all_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.symlink_metadata().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// A daemon whose temp base (normally 0700) is opened to everyone, so only
/// the daemon's own modes stand between another user and its files.
async fn exposed_daemon() -> TestDaemon {
    let d = TestDaemon::start();
    chmod(d.dir.path(), 0o755);
    // Give the store something to hold.
    let c = d.client().await;
    new_session(&c, &d.workspace).await;
    d
}

#[tokio::test(flavor = "multi_thread")]
async fn files_the_daemon_creates_are_private() {
    let d = exposed_daemon().await;
    let run_dir = d.socket.parent().unwrap();
    assert_eq!(mode(&d.socket), 0o600, "socket");
    assert_eq!(mode(run_dir), 0o700, "socket directory");
    let mut lock = d.socket.as_os_str().to_owned();
    lock.push(".lock");
    assert_eq!(mode(Path::new(&lock)) & 0o077, 0, "lock file");
    assert_eq!(mode(&d.data_dir), 0o700, "data dir");
    // A data dir that existed with loose modes is tightened at start.
    let mut d = d;
    d.kill9();
    chmod(&d.data_dir, 0o755);
    d.spawn();
    assert_eq!(mode(&d.data_dir), 0o700, "data dir after a restart");

    need_to_switch_uid();
    let files = all_under(&d.data_dir);
    assert!(files.len() > 2, "the store made files: {files:?}");
    // Reading a directory's list or a file's first byte must fail.
    for f in files.iter().chain([&d.data_dir]) {
        let shown = f.display().to_string();
        let out = if f.is_dir() {
            as_nobody(Path::new("/bin/ls"), &[&shown])
        } else {
            as_nobody(Path::new("/usr/bin/head"), &["-c1", &shown])
        };
        assert!(!out.status.success(), "uid {NOBODY} can read {shown}");
    }
    // The workspace is the user's, not the daemon's: it stays reachable,
    // which proves the probe above could have succeeded.
    let ws = as_nobody(
        Path::new("/bin/ls"),
        &["-d", &d.workspace.display().to_string()],
    );
    assert!(ws.status.success(), "control: {ws:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_uid_cannot_connect() {
    need_to_switch_uid();
    let d = exposed_daemon().await;
    let gemctl = gemctl_for_anyone(&d);
    let socket = d.socket.display().to_string();
    let status = ["--socket", socket.as_str(), "daemon", "status"];
    // The binary itself must be runnable by the other uid for this to
    // prove anything.
    let version = as_nobody(&gemctl, &["--version"]);
    assert!(
        version.status.success(),
        "uid {NOBODY} cannot run {}: {version:?}",
        gemctl.display()
    );
    let denied = as_nobody(&gemctl, &status);
    let err = String::from_utf8_lossy(&denied.stderr).to_lowercase();
    assert!(!denied.status.success(), "uid {NOBODY} got in: {denied:?}");
    assert!(err.contains("permission denied"), "{err}");

    // With the file modes opened wide, the kernel lets the connection
    // through, and the daemon's peer uid check closes it unanswered.
    chmod(d.socket.parent().unwrap(), 0o777);
    chmod(&d.socket, 0o777);
    let refused = as_nobody(&gemctl, &status);
    let err = String::from_utf8_lossy(&refused.stderr).to_lowercase();
    assert!(
        !refused.status.success(),
        "uid {NOBODY} got in: {refused:?}"
    );
    assert!(
        !err.contains("permission denied"),
        "modes should not stop it: {err}"
    );
    println!("peer check: {}", err.trim());
    // The owner still gets in.
    let ok = d.gemctl(&["daemon", "status"]).output().unwrap();
    assert!(ok.status.success(), "{ok:?}");
}
