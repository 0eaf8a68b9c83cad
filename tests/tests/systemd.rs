//! The systemd units: they pass `systemd-analyze verify`, and geminid
//! serves the socket systemd hands it (socket activation).

use std::path::Path;
use std::process::{Command, Stdio};

use geminid_tests::*;

fn units_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../systemd")
}

#[test]
fn units_verify_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    // ExecStart must name an existing binary for verify to pass: point it at
    // the one under test, leave everything else as shipped.
    let service = std::fs::read_to_string(units_dir().join("geminid.service"))
        .unwrap()
        .replace(
            "%h/.cargo/bin/geminid",
            &geminid_bin().display().to_string(),
        );
    std::fs::write(dir.path().join("geminid.service"), service).unwrap();
    std::fs::copy(
        units_dir().join("geminid.socket"),
        dir.path().join("geminid.socket"),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(dir.path().join("geminid.socket"))
        .arg(dir.path().join("geminid.service"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("systemd-analyze (Debian package systemd; .ci/install-deps installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "verify failed: {stderr}");
    // verify reports bad directives as warnings and still exits 0.
    assert!(stderr.trim().is_empty(), "verify complained: {stderr}");
}

#[tokio::test]
async fn geminid_serves_the_socket_systemd_passes_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("activated.sock");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .args(["-E", "GEMINID_LOG=warn", "-E"])
        .arg(format!("HOME={}", home.display()))
        .arg(geminid_bin())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .spawn()
        .expect("systemd-socket-activate (Debian package systemd)");
    wait_for_socket(&socket);
    // The first connection starts geminid on the inherited descriptor.
    let client = Client::connect(&socket)
        .await
        .expect("activated daemon answers");
    let status = client.status().await.unwrap();
    assert_eq!(
        std::path::Path::new(&status.socket),
        socket,
        "status reports the socket systemd listens on"
    );
    assert_eq!(
        status.pid,
        activator.id(),
        "systemd-socket-activate execs geminid in its own process"
    );
    client.shutdown().await.unwrap();
    let exit = activator.wait().unwrap();
    assert!(exit.success(), "an activated daemon stops cleanly: {exit}");
    assert!(
        socket.exists(),
        "the socket belongs to systemd: geminid leaves it in place"
    );
}
