//! What a sandboxed command's output says the sandbox refused (pure): the
//! lines naming a path or connection that failed the way the sandbox makes
//! things fail (`Permission denied`, `Read-only file system`, `Network is
//! unreachable`, ...), turned into a plain note for the model.

/// Error texts the sandbox causes: Landlock (EACCES, EPERM on rename
/// across rules, EXDEV), held files (EROFS), hidden places (EACCES), and
/// the empty network namespace.
const MARKERS: &[(&str, Kind)] = &[
    ("Permission denied", Kind::Path),
    ("Operation not permitted", Kind::Path),
    ("Read-only file system", Kind::Path),
    ("Invalid cross-device link", Kind::Path),
    ("EACCES", Kind::Path),
    ("EROFS", Kind::Path),
    ("Network is unreachable", Kind::Network),
    ("Temporary failure in name resolution", Kind::Network),
    ("Could not resolve host", Kind::Network),
    ("Name or service not known", Kind::Network),
    ("Connection refused", Kind::Network),
    ("ENETUNREACH", Kind::Network),
    ("ECONNREFUSED", Kind::Network),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Path,
    Network,
}

/// At most this many lines are quoted.
const MAX_LINES: usize = 5;

/// A note when `output` looks refused by the sandbox, naming what was
/// refused; `None` otherwise. `network` says whether it was on.
/// `locked` says where the command could not change the entries of a
/// directory (`instructions.rs`).
pub fn explain_refusal(
    output: &str,
    network: bool,
    writable: &[String],
    locked: &[String],
) -> Option<String> {
    let mut paths = Vec::new();
    let mut connections = Vec::new();
    for line in output.lines() {
        let Some((_, kind)) = MARKERS.iter().find(|(m, _)| line.contains(m)) else {
            continue;
        };
        let line = line.trim();
        let bucket = match kind {
            Kind::Network if !network => &mut connections,
            Kind::Network => continue,
            Kind::Path => &mut paths,
        };
        if bucket.len() < MAX_LINES && !bucket.iter().any(|l: &String| l == line) {
            bucket.push(line.to_owned());
        }
    }
    if paths.is_empty() && connections.is_empty() {
        return None;
    }
    let mut note = String::from("The sandbox may have refused part of this command.");
    if !paths.is_empty() {
        note.push_str(&format!(
            "\nRefused file access (writes are allowed only under {}; secrets and the daemon's own files are hidden; .git and .gemini are read-only{}):",
            writable.join(", "),
            locked.iter().map(|l| format!("; {l}")).collect::<String>()
        ));
        for l in &paths {
            note.push_str(&format!("\n  {l}"));
        }
    }
    if !connections.is_empty() {
        note.push_str("\nRefused network access (the network is off in the sandbox; only its own loopback exists):");
        for l in &connections {
            note.push_str(&format!("\n  {l}"));
        }
    }
    note.push_str(
        "\nIf this command needs that access, ask the user to run it unsandboxed: call run_shell_command again with the same command and \"sandbox\": false, which needs its own approval.",
    );
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refused_paths_and_connections() {
        let out = "touch: cannot touch '/etc/x': Permission denied\n\
                   ok line\n\
                   bash: /home/u/p/.git/config: Read-only file system\n\
                   curl: (7) Failed to connect to 127.0.0.1 port 8080: Connection refused\n";
        let note = explain_refusal(
            out,
            false,
            &["/home/u/p".to_owned()],
            &["nothing may be created in /home/u/p".to_owned()],
        )
        .unwrap();
        assert!(note.contains("'/etc/x': Permission denied"));
        assert!(note.contains(".git/config: Read-only file system"));
        assert!(note.contains("127.0.0.1 port 8080"));
        assert!(note.contains("; nothing may be created in /home/u/p"));
        assert!(note.contains("\"sandbox\": false"));
        assert!(!note.contains("ok line"));
    }

    #[test]
    fn quiet_when_nothing_was_refused() {
        assert!(explain_refusal("all good\n", false, &[], &[]).is_none());
        // With the network on, a refused connection is the peer's doing.
        assert!(explain_refusal("Connection refused\n", true, &[], &[]).is_none());
    }
}
