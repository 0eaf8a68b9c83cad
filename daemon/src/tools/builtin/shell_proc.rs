//! Process-group bookkeeping for `run_shell_command`: finding what a command
//! left behind and killing all of it.
//!
//! A command runs as the leader of its own process group, so one `killpg`
//! reaches everything that stayed in that group. Processes that moved to a
//! group of their own (`setsid`, `set -m`) are found by walking the parent
//! chain in `/proc` before any signal is sent, because once the shell dies
//! they are re-parented and the link is lost.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use rustix::process::{Pid, Signal, getpgrp, kill_process_group};

/// How long processes get to exit on SIGTERM before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(200);

/// One line of `/proc/<pid>/stat`, the fields we use.
#[derive(Debug, Clone, Copy)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// `Z` for zombies, which are dead but not yet reaped.
    pub state: char,
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
/// then SIGKILL whatever is left. `extra` adds groups known from elsewhere
/// (background PIDs reported by the shell).
pub async fn terminate_tree(pgid: i32, extra: &[i32]) {
    let mut groups = descendant_groups(pgid);
    for pid in extra {
        if let Some(stat) = read_stat(*pid) {
            groups.insert(stat.pgrp);
        }
    }
    let own = getpgrp().as_raw_nonzero().get();
    groups.retain(|g| *g > 1 && *g != own);
    signal_groups(&groups, Signal::TERM);
    tokio::time::sleep(TERM_GRACE).await;
    // Children forked during the grace period may sit in new groups.
    groups.extend(descendant_groups(pgid).into_iter().filter(|g| *g != own));
    signal_groups(&groups, Signal::KILL);
}

/// Parses the PID list the wrapper script wrote (`pgrep -g 0`), dropping the
/// shell itself.
pub fn parse_background_pids(text: &str, shell_pid: i32) -> Vec<i32> {
    let mut pids: Vec<i32> = text
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|p| *p != shell_pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Quotes `s` for bash as one word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pid_lists() {
        assert_eq!(parse_background_pids("10\n 7\n10\nx\n3\n", 3), vec![7, 10]);
        assert!(parse_background_pids("", 1).is_empty());
    }

    #[test]
    fn quotes_for_bash() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
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
