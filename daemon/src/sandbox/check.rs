//! `sandbox.check`: what a sandboxed command may do on this machine and a
//! self-test of it, each probe a real command run through the same
//! preparation as `run_shell_command`'s (blocking; run it off the runtime).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::child;
use super::plan::{DaemonPlaces, Plan};
use super::settings::{Mode, SandboxSettings};
use super::support::{Support, support};

/// One self-test probe: something the sandbox must allow or refuse.
#[derive(Debug, Clone)]
pub struct SandboxProbe {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// What `sandbox.check` found.
#[derive(Debug, Clone)]
pub struct SandboxCheck {
    pub status: Support,
    pub workspace: PathBuf,
    pub mode: Option<Mode>,
    pub plan: Plan,
    pub problems: Vec<String>,
    pub probes: Vec<SandboxProbe>,
}

/// The plan for a sandboxed session of `workspace`, and the self-test.
pub fn check(
    workspace: &Path,
    settings: &SandboxSettings,
    problems: Vec<String>,
    places: &DaemonPlaces,
) -> SandboxCheck {
    let mode = match settings.mode {
        Some(Mode::Off) | None => Mode::WorkspaceWrite,
        Some(m) => m,
    };
    let roots = [workspace.to_path_buf()];
    let plan = Plan::new(mode, settings, settings.network, &roots, places);
    let status = support().clone();
    let probes = if status.available() {
        self_test(places)
    } else {
        Vec::new()
    };
    SandboxCheck {
        status,
        workspace: workspace.to_path_buf(),
        mode: settings.mode,
        plan,
        problems,
        probes,
    }
}

/// What a probe must see.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Allowed,
    Refused,
    /// Refused, or nothing to see (a hidden place is an empty tmpfs; a
    /// root user's capabilities in its own namespace list it as empty).
    Nothing,
}

/// Runs `script` with bash in a sandbox of `plan`, in `cwd`; its exit
/// status and output.
fn run(plan: &Plan, cwd: &Path, script: &str) -> Result<(bool, String), String> {
    let prep = child::prepare(
        plan,
        support().landlock_abi,
        Some(child::WorkDir {
            path: cwd,
            identity: None,
            pinned: &[],
        }),
    )
    .map_err(|e| e.to_string())?;
    let mut cmd = std::process::Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null());
    child::install_std(&mut cmd, prep.prepared);
    let out = cmd.output().map_err(|e| e.to_string())?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text.trim().to_owned()))
}

/// A fresh workspace (with a `.git/config`, and a second root inside it
/// without `.git`) and the probes.
fn self_test(places: &DaemonPlaces) -> Vec<SandboxProbe> {
    let mut probes = Vec::new();
    let ws = match tempfile::Builder::new()
        .prefix("geminid-sandbox-check-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            probes.push(SandboxProbe {
                name: "a workspace for the self-test".into(),
                passed: false,
                detail: e.to_string(),
            });
            return probes;
        }
    };
    let root = ws
        .path()
        .canonicalize()
        .unwrap_or_else(|_| ws.path().to_path_buf());
    let _ = std::fs::create_dir_all(root.join(".git"));
    let _ = std::fs::write(root.join(".git/config"), "[core]\n");
    // A second root, without `.git`.
    let plain = root.join("plain");
    let _ = std::fs::create_dir_all(&plain);
    let plan = Plan::new(
        Mode::WorkspaceWrite,
        &SandboxSettings::default(),
        false,
        &[root.clone(), plain],
        places,
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").ok();
    let port = listener
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.port());
    // Outside anything writable: the home directory, unless it is.
    let outside = [
        places.home.clone(),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/"),
    ]
    .into_iter()
    .find(|p| p.is_dir() && !plan.writable.iter().any(|w| p.starts_with(w)))
    .map(|p| p.join(format!(".geminid-sandbox-probe-{}", std::process::id())));
    let hidden = plan.hidden.iter().find(|h| h.exists()).cloned();
    let mut cases: Vec<(String, String, Expect)> = vec![
        (
            "write inside the workspace".into(),
            "echo ok > probe.txt && cat probe.txt".into(),
            Expect::Allowed,
        ),
        (
            ".git/config stays read-only".into(),
            "echo '[core] fsmonitor = x' >> .git/config".into(),
            Expect::Refused,
        ),
        (
            "a root without .git cannot be given one".into(),
            "mkdir plain/.git".into(),
            Expect::Refused,
        ),
    ];
    if let Some(o) = &outside {
        cases.push((
            format!("write outside the workspace ({})", o.display()),
            format!("echo x > '{}'", o.display()),
            Expect::Refused,
        ));
    }
    if let Some(h) = &hidden {
        cases.push((
            format!("read a hidden place ({})", h.display()),
            format!("ls -A '{}'", h.display()),
            Expect::Nothing,
        ));
    }
    if let Some(p) = port {
        cases.push((
            format!("connect to 127.0.0.1:{p} outside the sandbox"),
            format!("exec 3<>/dev/tcp/127.0.0.1/{p}"),
            Expect::Refused,
        ));
    }
    for (name, script, expect) in cases {
        let (passed, detail) = match run(&plan, &root, &script) {
            Ok((ok, text)) => (
                match expect {
                    Expect::Allowed => ok,
                    Expect::Refused => !ok,
                    Expect::Nothing => !ok || text.is_empty(),
                },
                format!(
                    "{} ({})",
                    if ok { "allowed" } else { "refused" },
                    if text.is_empty() { "no output" } else { &text }
                ),
            ),
            Err(e) => (false, format!("could not run: {e}")),
        };
        probes.push(SandboxProbe {
            name,
            passed,
            detail,
        });
    }
    if let Some(o) = &outside {
        let _ = std::fs::remove_file(o);
    }
    probes
}
