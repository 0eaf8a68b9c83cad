//! Running a discovery or call command: `sh -c` in its own process group,
//! stdin written and closed, stdout and stderr collected, the whole group
//! killed on timeout or cancellation (and after exit, for stragglers).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// What one run of a command printed and how it ended.
pub struct Finished {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// Runs `sh -c script` (plus `args` as `$1`...) in `cwd` in a new process
/// group, with `stdin` written and closed, until exit, `timeout` or `cancel`;
/// its environment is `cwd`'s (`child_env::for_child_in`: the `.env` 0.61
/// reads there, sanitized).
pub async fn run(
    script: &str,
    args: &[&str],
    cwd: &Path,
    stdin: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
    sandbox: Option<crate::sandbox::Prepared>,
) -> std::io::Result<Finished> {
    use std::os::unix::process::ExitStatusExt;
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(args)
        .env_clear()
        .envs(crate::child_env::for_child_in(cwd))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(prepared) = sandbox {
        crate::sandbox::install(&mut command, prepared);
    }
    let mut child = command.spawn()?;
    drop(command);
    let group = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32));
    let kill_group = || {
        if let Some(pid) = group {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    let mut input = child.stdin.take();
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let data = stdin.to_vec();
    let io = async move {
        if let Some(mut input) = input.take() {
            // A command that does not read its stdin is not an error.
            let _ = input.write_all(&data).await;
        }
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let read_out = async {
            if let Some(out) = out.as_mut() {
                let _ = out.read_to_end(&mut o).await;
            }
        };
        let read_err = async {
            if let Some(err) = err.as_mut() {
                let _ = err.read_to_end(&mut e).await;
            }
        };
        tokio::join!(read_out, read_err);
        (o, e)
    };
    let (mut timed_out, mut cancelled) = (false, false);
    let finished = {
        let work = async { tokio::join!(io, child.wait()) };
        tokio::select! {
            done = work => Some(done),
            () = tokio::time::sleep(timeout) => { timed_out = true; None }
            () = cancel.cancelled() => { cancelled = true; None }
        }
    };
    let ((o, e), status) = match finished {
        Some(done) => done,
        None => {
            kill_group();
            ((Vec::new(), Vec::new()), child.wait().await)
        }
    };
    // Whatever the command left behind in its group goes too.
    kill_group();
    let status = status?;
    Ok(Finished {
        stdout: String::from_utf8_lossy(&o).into_owned(),
        stderr: String::from_utf8_lossy(&e).into_owned(),
        code: status.code(),
        signal: status.signal(),
        timed_out,
        cancelled,
    })
}
