//! What this machine's kernel lets the sandbox do, found once: the
//! Landlock ABI, and whether a child can enter new user, mount and network
//! namespaces (a real self-test: `/bin/true` run fully sandboxed).

use std::path::PathBuf;
use std::sync::OnceLock;

use super::child;
use super::plan::Plan;
use super::settings::Limits;

/// The kernel's support for the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// 0 without Landlock.
    pub landlock_abi: i32,
    /// Why commands cannot be sandboxed here; `None` when they can.
    pub missing: Option<String>,
}

impl Support {
    pub fn available(&self) -> bool {
        self.missing.is_none()
    }
}

/// Found on first use, then kept (the kernel does not change under us).
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

fn probe() -> Support {
    let landlock_abi = child::landlock_abi();
    if landlock_abi == 0 {
        return Support {
            landlock_abi,
            missing: Some("the kernel has no Landlock (or it is not enabled)".to_owned()),
        };
    }
    let missing = self_test().err();
    Support {
        landlock_abi,
        missing,
    }
}

/// Runs `true` in a sandbox with the network off; the error says which
/// step failed.
pub fn self_test() -> Result<(), String> {
    let plan = Plan {
        writable: vec![std::env::temp_dir()],
        hidden: Vec::new(),
        read_only: Vec::new(),
        network: false,
        limits: Limits::default(),
        notes: Vec::new(),
        roots: Vec::new(),
    };
    let prep = child::prepare(&plan, child::landlock_abi(), None)
        .map_err(|e| format!("preparing the sandbox failed: {e}"))?;
    let mut cmd = std::process::Command::new(true_binary());
    child::install_std(&mut cmd, prep.prepared);
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("a sandboxed `true` failed ({s})")),
        Err(e) => Err(format!(
            "entering user, mount and network namespaces with Landlock failed: {e}"
        )),
    }
}

fn true_binary() -> PathBuf {
    ["/usr/bin/true", "/bin/true"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("true"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The sandbox's own cost: preparing it and spawning `true` in it,
    /// against spawning `true` plainly, interleaved (BENCHMARKS.md).
    #[test]
    fn added_latency_of_a_sandboxed_spawn() {
        assert!(support().available(), "{:?}", support().missing);
        let plan = Plan {
            writable: vec![std::env::temp_dir()],
            hidden: vec![std::env::temp_dir().join("geminid-no-such-dir")],
            read_only: Vec::new(),
            network: std::env::var_os("SANDBOX_NET").is_some(),
            limits: Limits::default(),
            notes: Vec::new(),
            roots: Vec::new(),
        };
        let script = std::env::var("SANDBOX_CMD").ok();
        let rounds: usize = std::env::var("SANDBOX_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(40);
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for i in 0..rounds {
            for sandboxed in [i % 2 == 0, i % 2 == 1] {
                let start = Instant::now();
                let mut cmd = match &script {
                    Some(s) => {
                        let mut c = std::process::Command::new("bash");
                        c.arg("-c").arg(s);
                        c
                    }
                    None => std::process::Command::new(true_binary()),
                };
                if sandboxed {
                    let prep = child::prepare(&plan, support().landlock_abi, None).unwrap();
                    child::install_std(&mut cmd, prep.prepared);
                }
                assert!(cmd.status().unwrap().success());
                let ms = start.elapsed().as_secs_f64() * 1000.0;
                if sandboxed { on.push(ms) } else { off.push(ms) }
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let (m_on, m_off) = (median(&mut on), median(&mut off));
        println!(
            "sandboxed spawn of true: p50 {m_on:.2} ms; plain: p50 {m_off:.2} ms; added {:.2} ms ({rounds} interleaved rounds)",
            m_on - m_off
        );
        assert!(m_on - m_off < 50.0);
    }
}
