//! A private tmux server for tests of terminal behaviour: a detached
//! session runs a command, `tmux send-keys` types, `tmux capture-pane -p`
//! reads the screen.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// A private tmux server (its own socket), killed on drop.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub fn new(dir: &Path) -> Tmux {
        Tmux {
            socket: dir.join("tmux.sock"),
        }
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .expect("tmux is installed (.ci/install-deps)")
    }

    /// Runs `command` in a new detached 120x40 session; when it exits,
    /// the pane shows `EXITED=<status>` (and stays for reading).
    pub fn start(&self, name: &str, command: &str) {
        self.start_in(name, "sh", command);
    }

    /// Types `command` into an interactive bash, as a person would: with
    /// job control the command runs in a process group of its own, so a
    /// Ctrl-C reaches it alone. When it exits, the pane shows
    /// `EXITED=<status>` as with [`Tmux::start`].
    pub fn run_in_shell(&self, name: &str, command: &str) {
        self.start_in(name, "bash", "exec bash --norc --noprofile -i");
        // Quoted apart, so the typed line itself never reads `EXITED=`.
        self.line(name, &format!("{command}; echo \"EXIT\"\"ED=$?\""));
    }

    fn start_in(&self, name: &str, shell: &str, command: &str) {
        let script = format!("{command}; echo EXITED=$?; sleep 600");
        let out = self.tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
            shell,
            "-c",
            &script,
        ]);
        assert!(out.status.success(), "tmux new-session: {out:?}");
        // A pane whose shell died stays, saying how it died.
        self.tmux(&["set-option", "-t", name, "remain-on-exit", "on"]);
    }

    pub fn keys(&self, name: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", name];
        args.extend_from_slice(keys);
        let out = self.tmux(&args);
        assert!(out.status.success(), "tmux send-keys: {out:?}");
    }

    /// Types `text` literally, then Enter.
    pub fn line(&self, name: &str, text: &str) {
        self.keys(name, &["-l", text]);
        self.keys(name, &["Enter"]);
    }

    /// The pane and its scrollback, wrapped lines joined, no escapes.
    pub fn screen(&self, name: &str) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-J", "-S", "-2000", "-t", name]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen until `done` holds (30 s at most).
    pub async fn wait(&self, name: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen(name);
            if done(&screen) {
                return screen;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("pane {name}: timed out waiting for {what}; the screen:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_for(&self, name: &str, text: &str) -> String {
        self.wait(name, text, |s| s.contains(text)).await
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
