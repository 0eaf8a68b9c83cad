//! After a kill -9 of the daemon: which daemon ran last on a data dir
//! (`<data dir>/run`: its pid and start time), and, when the next one
//! starts, the end of everything the shell commands of that one left
//! running (found by their `GEMINID_RUN=<pid>.<n>` marker, see
//! `shell_proc.rs`): the command that was streaming and its background
//! jobs, `setsid`ed or not.

use std::path::Path;

use super::shell_proc::{Marked, start_time, terminate_marked};

/// The file naming the daemon running on a data dir.
const RUN_FILE: &str = "run";

/// The daemon a run file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    pid: u32,
    started: u64,
}

impl Run {
    fn parse(text: &str) -> Option<Run> {
        let mut words = text.split_whitespace();
        let pid = words.next()?.parse().ok()?;
        let started = words.next()?.parse().ok()?;
        Some(Run { pid, started })
    }

    /// Whether that very process still runs (not another one with its pid).
    fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.started)
    }
}

/// Ends what the commands of the daemon that ran before on `data_dir` left
/// running, when that daemon is gone, then records this daemon as the one
/// running. Returns how many processes were ended.
pub async fn reap_previous_run(data_dir: &Path) -> usize {
    let path = data_dir.join(RUN_FILE);
    let previous = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| Run::parse(&text));
    let mut ended = 0;
    if let Some(previous) = previous
        && previous.pid != std::process::id()
        && !previous.alive()
    {
        ended = terminate_marked(Marked::AnyOfDaemon(previous.pid)).await;
        if ended > 0 {
            tracing::warn!(
                previous_pid = previous.pid,
                processes = ended,
                "ended processes the shell commands of a daemon that did not stop cleanly left running"
            );
        }
    }
    let me = std::process::id();
    match start_time(me) {
        Some(started) => {
            let temp = data_dir.join(format!(".{RUN_FILE}.{me}"));
            let written = std::fs::write(&temp, format!("{me} {started}\n"))
                .and_then(|()| std::fs::rename(&temp, &path));
            if let Err(e) = written {
                tracing::warn!(file = %path.display(), error = %e, "cannot record the daemon's pid; after a crash its commands will not be ended by the next start");
            }
        }
        None => tracing::warn!("cannot read this process's start time"),
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_names_one_process() {
        let me = std::process::id();
        let started = start_time(me).expect("own start time");
        let run = Run::parse(&format!("{me} {started}\n")).expect("parses");
        assert!(run.alive());
        assert!(
            !Run {
                pid: me,
                started: started + 1
            }
            .alive(),
            "a reused pid is not the daemon"
        );
        assert_eq!(Run::parse("12 x"), None);
    }
}
