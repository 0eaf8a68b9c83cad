//! The IO edge of hooks: one hook is `bash -c <command>` in the session's
//! folder, in a process group of its own, with the sanitized environment
//! and the workspace's `.env` as other children get them
//! (`child_env::for_child_in`) plus 0.61's `GEMINI_*` variables, the firing's JSON on
//! stdin. It is killed (the whole group) on timeout and on cancel, and
//! after it exits (what it left behind goes too), so no hook leaves a call
//! waiting. A plan's hooks run in parallel, or in order when sequential
//! (each then sees the input as the previous one changed it).
//! When the user's `sandbox.mode` is on, a hook runs in the sandbox as the
//! discovery command does (`discovery/jail.rs`): it may write where the
//! session's shell commands may (the session's workspace roots, pinned,
//! with their instruction places held; the temp dirs and
//! `sandbox.allowWrite`), never the denied places; network as
//! `sandbox.network`. A sandbox that cannot be had under
//! `"required"` (or broken settings) means the hook does not run.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::config::{HookEntry, HookEvent};
use super::output::{HookResult, Merged, Ran, interpret, merge};
use super::plan::Plan;

/// What a hook may print before the rest is dropped (per stream).
const OUTPUT_CAP: usize = 1 << 20;

/// The session a hook runs for.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub session_id: String,
    pub cwd: PathBuf,
    pub transcript_path: String,
    pub plans_dir: PathBuf,
    /// The session's workspace roots, pinned (the primary first, then its
    /// include directories): where a sandboxed hook may write, as the
    /// session's shell commands may. Empty: the session's folder alone.
    pub roots: Vec<crate::tools::PinnedRoot>,
}

/// One hook run, for the session's event log.
#[derive(Debug, Clone)]
pub struct HookRun {
    pub event: HookEvent,
    pub name: String,
    pub command: String,
    pub source: String,
    pub duration_ms: u64,
    pub result: HookResult,
}

/// Every run of one firing and their merged output.
#[derive(Debug, Clone, Default)]
pub struct Fired {
    pub runs: Vec<HookRun>,
    pub merged: Option<Merged>,
}

/// Runs `plan` with `fields` (the event's own input fields) added to the
/// common ones.
pub async fn fire(
    plan: &Plan,
    env: &HookEnv,
    fields: Map<String, Value>,
    cancel: &CancellationToken,
) -> Fired {
    let mut input = base_input(plan.event, env);
    input.extend(fields);
    let runs = if plan.sequential {
        let mut runs = Vec::new();
        for hook in &plan.hooks {
            let run = run_one(hook, env, &input, cancel).await;
            if let Some(output) = &run.result.output {
                apply_to_input(plan.event, &mut input, output);
            }
            runs.push(run);
        }
        runs
    } else {
        futures::future::join_all(plan.hooks.iter().map(|h| run_one(h, env, &input, cancel))).await
    };
    let outputs: Vec<Map<String, Value>> = runs
        .iter()
        .filter_map(|r| r.result.output.clone())
        .collect();
    Fired {
        merged: merge(plan.event, &outputs),
        runs,
    }
}

fn base_input(event: HookEvent, env: &HookEnv) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("session_id".into(), env.session_id.clone().into());
    input.insert("transcript_path".into(), env.transcript_path.clone().into());
    input.insert("cwd".into(), env.cwd.to_string_lossy().into_owned().into());
    input.insert("hook_event_name".into(), event.name().into());
    input.insert("timestamp".into(), iso_now().into());
    input
}

/// 0.61's `applyHookOutputToInput`: what a sequential hook changed is what
/// the next one sees.
fn apply_to_input(event: HookEvent, input: &mut Map<String, Value>, output: &Map<String, Value>) {
    let Some(Value::Object(specific)) = output.get("hookSpecificOutput") else {
        return;
    };
    match event {
        HookEvent::BeforeAgent => {
            if let (Some(Value::String(extra)), Some(Value::String(prompt))) =
                (specific.get("additionalContext"), input.get_mut("prompt"))
            {
                prompt.push_str("\n\n");
                prompt.push_str(extra);
            }
        }
        HookEvent::BeforeModel => {
            if let (Some(Value::Object(part)), Some(Value::Object(request))) =
                (specific.get("llm_request"), input.get_mut("llm_request"))
            {
                request.extend(part.clone());
            }
        }
        HookEvent::BeforeTool => {
            if let (Some(Value::Object(part)), Some(Value::Object(args))) =
                (specific.get("tool_input"), input.get_mut("tool_input"))
            {
                args.extend(part.clone());
            }
        }
        _ => {}
    }
}

async fn run_one(
    hook: &HookEntry,
    env: &HookEnv,
    input: &Map<String, Value>,
    cancel: &CancellationToken,
) -> HookRun {
    let started = Instant::now();
    let stdin = serde_json::to_vec(input).unwrap_or_default();
    let ran = spawn_and_wait(hook, env, &stdin, cancel).await;
    HookRun {
        event: hook.event,
        name: hook.display_name().to_owned(),
        command: hook.command.clone(),
        source: hook.source.file.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
        result: interpret(&ran),
    }
}

/// `$GEMINI_PROJECT_DIR` and friends in the command, replaced by quoted
/// values before the shell sees it (0.61's `expandCommand`).
fn expand(command: &str, env: &HookEnv) -> String {
    let cwd = quote(&env.cwd.to_string_lossy());
    command
        .replace("$GEMINI_PROJECT_DIR", &cwd)
        .replace("$GEMINI_CWD", &cwd)
        .replace(
            "$GEMINI_PLANS_DIR",
            &quote(&env.plans_dir.to_string_lossy()),
        )
        .replace("$GEMINI_SESSION_ID", &quote(&env.session_id))
        .replace("$CLAUDE_PROJECT_DIR", &cwd)
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

async fn spawn_and_wait(
    hook: &HookEntry,
    env: &HookEnv,
    stdin: &[u8],
    cancel: &CancellationToken,
) -> Ran {
    let cwd = env.cwd.to_string_lossy().into_owned();
    let mut command = tokio::process::Command::new("bash");
    command
        .arg("-c")
        .arg(expand(&hook.command, env))
        .env_clear()
        .envs(crate::child_env::for_child_in(&env.cwd))
        .envs(
            hook.env
                .iter()
                .filter(|(k, _)| !crate::child_env::is_dangerous_override(k))
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .env("GEMINI_PROJECT_DIR", &cwd)
        .env("GEMINI_CWD", &cwd)
        .env("GEMINI_PLANS_DIR", &env.plans_dir)
        .env("GEMINI_SESSION_ID", &env.session_id)
        .env("CLAUDE_PROJECT_DIR", &cwd)
        .current_dir(&env.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let roots: Vec<PathBuf> = if env.roots.is_empty() {
        vec![env.cwd.clone()]
    } else {
        env.roots.iter().map(|r| r.path().to_path_buf()).collect()
    };
    match crate::discovery::jail::prepare_pinned(&roots, &env.roots, Some(&env.cwd), None) {
        Ok(applied) => {
            if let Some(prepared) = applied.prepared {
                crate::sandbox::install(&mut command, prepared);
            }
        }
        Err(why) => {
            return Ran {
                spawn_error: Some(format!("the hook was not run: {why}")),
                ..Ran::default()
            };
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Ran {
                spawn_error: Some(e.to_string()),
                ..Ran::default()
            };
        }
    };
    let group = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32));
    let kill_group = || {
        if let Some(pid) = group {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    let input = child.stdin.take();
    let data = stdin.to_vec();
    let writer = tokio::spawn(async move {
        if let Some(mut input) = input {
            // A hook that does not read its stdin is not an error.
            let _ = input.write_all(&data).await;
        }
    });
    let out = tokio::spawn(read_capped(child.stdout.take()));
    let err = tokio::spawn(read_capped(child.stderr.take()));
    let timeout = Duration::from_millis(hook.timeout_ms);
    let mut ran = Ran::default();
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = tokio::time::sleep(timeout) => { ran.timed_out = Some(hook.timeout_ms); None }
        () = cancel.cancelled() => { ran.cancelled = true; None }
    };
    // The hook is done (or given up on): its group goes, so what it left
    // running cannot hold its pipes open.
    kill_group();
    let status = match status {
        Some(status) => Some(status),
        None => child.wait().await.ok(),
    };
    writer.abort();
    ran.stdout = out.await.unwrap_or_default();
    ran.stderr = err.await.unwrap_or_default();
    if ran.timed_out.is_none() && !ran.cancelled {
        use std::os::unix::process::ExitStatusExt;
        ran.code = status.and_then(|s| s.code());
        ran.signal = status.and_then(|s| s.signal());
    }
    ran
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The time now as ISO 8601 in UTC with milliseconds (JavaScript's
/// `toISOString`).
fn iso_now() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    iso(ms)
}

fn iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_is_javascripts() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_000_000_123), "2026-11-18T11:06:40.123Z");
    }

    #[test]
    fn expansion_quotes() {
        let env = HookEnv {
            session_id: "s'1".into(),
            cwd: "/w x".into(),
            transcript_path: String::new(),
            plans_dir: "/p".into(),
            roots: Vec::new(),
        };
        assert_eq!(
            expand("$GEMINI_PROJECT_DIR/h.sh $GEMINI_SESSION_ID", &env),
            r"'/w x'/h.sh 's'\''1'"
        );
    }
}
