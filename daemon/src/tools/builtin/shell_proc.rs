//! Process-group bookkeeping for `run_shell_command`: finding what a command
//! left behind and killing all of it.
//!
//! A command runs as the leader of its own process group, so one `killpg`
//! reaches everything that stayed in that group. Processes that moved to a
//! group of their own (`setsid`, `set -m`) are found by walking the parent
//! chain in `/proc` before any signal is sent, because once the shell dies
//! they are re-parented and the link is lost.
//!
//! Every process a command starts also inherits `GEMINID_RUN=<daemon
//! pid>.<n>` in its environment. That finds what the parent chain cannot:
//! jobs that double-forked or `setsid`ed away from a shell that already
//! exited. A process that scrubs its environment (`env -i`) and leaves the
//! tree escapes both; that is the known limit without cgroups.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal, getpgrp, kill_process_group};

/// How long processes get to exit on SIGTERM before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(200);

/// How long to wait, after SIGKILL, for the kernel to finish ending what
/// was signalled. Delivery is asynchronous: on a busy machine a killed
/// process can still be running its exit for a few milliseconds.
const KILL_SETTLE: Duration = Duration::from_secs(2);

/// One line of `/proc/<pid>/stat`, the fields we use.
#[derive(Debug, Clone, Copy)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// `Z` for zombies, which are dead but not yet reaped.
    pub state: char,
}

/// The environment variable that marks a command's processes.
pub const MARKER_VAR: &str = "GEMINID_RUN";

/// A fresh marker value for one command: `<daemon pid>.<n>`.
pub fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// What a marker must match: one command's, or every command of this daemon.
#[derive(Debug, Clone, Copy)]
pub enum Marked<'a> {
    Run(&'a str),
    AnyOfThisDaemon,
    /// Every command of the daemon with this pid (one that ran before).
    AnyOfDaemon(u32),
}

/// Live processes (never the daemon itself) whose environment carries a
/// marker that `which` matches.
pub fn marked_processes(which: Marked<'_>) -> Vec<i32> {
    let me = std::process::id() as i32;
    let daemon = match which {
        Marked::AnyOfDaemon(pid) => pid,
        Marked::Run(_) | Marked::AnyOfThisDaemon => std::process::id(),
    };
    let daemon_prefix = format!("{MARKER_VAR}={daemon}.");
    let exact = match which {
        Marked::Run(m) => Some(format!("{MARKER_VAR}={m}")),
        Marked::AnyOfThisDaemon | Marked::AnyOfDaemon(_) => None,
    };
    all_processes()
        .into_iter()
        .filter(|p| p.pid != me)
        .filter(|p| {
            let Ok(env) = std::fs::read(format!("/proc/{}/environ", p.pid)) else {
                return false;
            };
            env.split(|b| *b == 0).any(|var| match &exact {
                Some(e) => var == e.as_bytes(),
                None => var.starts_with(daemon_prefix.as_bytes()),
            })
        })
        .map(|p| p.pid)
        .collect()
}

/// When process `pid` started (clock ticks since boot, `/proc/<pid>/stat`
/// field 22): with the pid, it names one process, whatever reuses the pid
/// later.
pub fn start_time(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may
/// itself contain spaces or parentheses, so fields are read after the last `)`.
pub fn read_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        pgrp,
        state,
    })
}

/// Every live (non-zombie) process visible in `/proc`.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .filter(|s| s.state != 'Z')
        .collect()
}

/// Live processes whose process group is `pgid`.
#[cfg(test)]
pub fn group_members(pgid: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|s| s.pgrp == pgid)
        .map(|s| s.pid)
        .collect()
}

/// The process groups of `root` and all its live descendants, never
/// including the daemon's own group.
pub fn descendant_groups(root: i32) -> BTreeSet<i32> {
    let procs = all_processes();
    let mut children: HashMap<i32, Vec<&ProcStat>> = HashMap::new();
    for p in &procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let own = getpgrp().as_raw_nonzero().get();
    let mut groups = BTreeSet::new();
    let mut stack = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        for child in children.get(&pid).into_iter().flatten() {
            groups.insert(child.pgrp);
            stack.push(child.pid);
        }
    }
    groups.insert(root);
    groups.retain(|g| *g > 1 && *g != own);
    groups
}

/// Sends `signal` to each group; groups that are already gone are ignored.
pub fn signal_groups(groups: &BTreeSet<i32>, signal: Signal) {
    for g in groups {
        if let Some(pid) = Pid::from_raw(*g) {
            // ESRCH (group already empty) is the expected outcome for many.
            let _ = kill_process_group(pid, signal);
        }
    }
}

/// SIGTERM everything the command started, give it [`TERM_GRACE`] to exit,
/// then SIGKILL whatever is left: the group of `pgid`, the groups its
/// descendants moved to, and every process carrying the command's marker
/// (with its group).
pub async fn terminate_tree(pgid: i32, marker: &str) {
    let mut groups = descendant_groups(pgid);
    let mut pids = marked_processes(Marked::Run(marker));
    add_groups(&mut groups, &pids);
    signal_all(&groups, &pids, Signal::TERM);
    tokio::time::sleep(TERM_GRACE).await;
    // Children forked during the grace period may sit in new groups.
    groups.extend(descendant_groups(pgid));
    pids.extend(marked_processes(Marked::Run(marker)));
    add_groups(&mut groups, &pids);
    signal_all(&groups, &pids, Signal::KILL);
    settle(&groups, &pids).await;
}

/// At daemon shutdown: ends every process any command of this daemon
/// started and left behind (background jobs of finished commands too).
/// Returns how many there were.
pub async fn terminate_all_marked() -> usize {
    terminate_marked(Marked::AnyOfThisDaemon).await
}

/// Ends every process carrying a marker `which` matches (TERM, a grace,
/// then KILL); returns how many there were.
pub async fn terminate_marked(which: Marked<'_>) -> usize {
    let mut pids = marked_processes(which);
    if pids.is_empty() {
        return 0;
    }
    let found = pids.len();
    let mut groups = BTreeSet::new();
    add_groups(&mut groups, &pids);
    signal_all(&groups, &pids, Signal::TERM);
    tokio::time::sleep(TERM_GRACE).await;
    pids.extend(marked_processes(which));
    add_groups(&mut groups, &pids);
    signal_all(&groups, &pids, Signal::KILL);
    settle(&groups, &pids).await;
    found
}

/// Waits until nothing signalled is still alive, so that a call reported as
/// cancelled or timed out has no process left, or until [`KILL_SETTLE`]
/// passes (a process stuck in uninterruptible sleep dies when it wakes).
async fn settle(groups: &BTreeSet<i32>, pids: &[i32]) {
    let deadline = tokio::time::Instant::now() + KILL_SETTLE;
    while any_alive(groups, pids) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn any_alive(groups: &BTreeSet<i32>, pids: &[i32]) -> bool {
    all_processes()
        .iter()
        .any(|p| groups.contains(&p.pgrp) || pids.contains(&p.pid))
}

/// Adds the process group of each pid (never the daemon's own).
fn add_groups(groups: &mut BTreeSet<i32>, pids: &[i32]) {
    groups.extend(pids.iter().filter_map(|p| read_stat(*p)).map(|s| s.pgrp));
    let own = getpgrp().as_raw_nonzero().get();
    groups.retain(|g| *g > 1 && *g != own);
}

fn signal_all(groups: &BTreeSet<i32>, pids: &[i32], signal: Signal) {
    signal_groups(groups, signal);
    for pid in pids.iter().filter_map(|p| Pid::from_raw(*p)) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// The live members of process group `pgid` but its leader (the shell,
/// which has exited): the command's background jobs. One `killpg(pgid, 0)`
/// answers the usual case, an empty group; only a group that still has
/// members is looked for in `/proc` (this replaced a `pgrep -g 0` the
/// shell ran after every command, a fork and exec each time).
pub fn background_members(pgid: i32) -> Vec<i32> {
    let Some(group) = Pid::from_raw(pgid) else {
        return Vec::new();
    };
    if rustix::process::test_kill_process_group(group).is_err() {
        return Vec::new();
    }
    let mut pids: Vec<i32> = all_processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid && p.pid != pgid)
        .map(|p| p.pid)
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_a_groups_members_but_its_leader() {
        use std::os::unix::process::CommandExt;
        // A leader that leaves a member behind, as a shell leaves a job.
        let mut leader = std::process::Command::new("bash")
            .args(["-c", "sleep 30 >/dev/null & echo $!"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        let mut out = String::new();
        std::io::Read::read_to_string(leader.stdout.as_mut().unwrap(), &mut out).unwrap();
        leader.wait().unwrap();
        let job: i32 = out.trim().parse().unwrap();
        assert_eq!(background_members(pgid), vec![job]);
        let _ = rustix::process::kill_process_group(Pid::from_raw(pgid).unwrap(), Signal::KILL);
        // An empty group has no members.
        let done = std::process::Command::new("true")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = done.id() as i32;
        done.wait_with_output().unwrap();
        assert!(background_members(pgid).is_empty());
    }

    #[test]
    fn reads_own_stat() {
        let me = std::process::id() as i32;
        let stat = read_stat(me).unwrap();
        assert_eq!(stat.pid, me);
        assert_ne!(stat.state, 'Z');
        assert!(!descendant_groups(me).contains(&getpgrp().as_raw_nonzero().get()));
    }
}
