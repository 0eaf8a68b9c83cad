//! The commands that run other commands, by name: transparent wrappers,
//! privilege escalators and shells, with the flags each one knows.

/// Transparent wrappers: (name, flags without argument, flags taking one).
pub(super) const WRAPPERS: &[(&str, &[&str], &[&str])] = &[
    ("command", &["-p", "-v", "-V"], &[]),
    ("exec", &["-c", "-l"], &["-a"]),
    ("nohup", &[], &[]),
    ("builtin", &[], &[]),
    ("busybox", &[], &[]),
    (
        "time",
        &[
            "-p",
            "-v",
            "-q",
            "-a",
            "--verbose",
            "--quiet",
            "--append",
            "--portability",
        ],
        &["-o", "-f", "--output", "--format"],
    ),
    ("nice", &[], &["-n", "--adjustment"]),
    (
        "env",
        &["-i", "-0", "-", "--ignore-environment", "--null"],
        &["-u", "--unset"],
    ),
    (
        "timeout",
        &["-v", "--preserve-status", "--foreground", "--verbose"],
        &["-s", "-k", "--signal", "--kill-after"],
    ),
    (
        "xargs",
        &[
            "-0",
            "-r",
            "-t",
            "-p",
            "-x",
            "-o",
            "--null",
            "--no-run-if-empty",
            "--verbose",
            "--interactive",
            "--exit",
            "--open-tty",
        ],
        &[
            "-I",
            "-n",
            "-L",
            "-P",
            "-d",
            "-E",
            "-s",
            "-a",
            "--max-args",
            "--max-lines",
            "--max-procs",
            "--delimiter",
            "--eof",
            "--max-chars",
            "--arg-file",
            "--replace",
        ],
    ),
    (
        "stdbuf",
        &[],
        &["-i", "-o", "-e", "--input", "--output", "--error"],
    ),
];

/// Privilege escalation: the outer command always counts.
pub(super) const ESCALATORS: &[(&str, &[&str], &[&str])] = &[
    (
        "sudo",
        &[
            "-E",
            "-H",
            "-n",
            "-S",
            "-b",
            "-k",
            "-K",
            "-P",
            "-A",
            "--preserve-env",
            "--non-interactive",
            "--stdin",
            "--set-home",
        ],
        &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
            "--chdir", "--prompt",
        ],
    ),
    ("doas", &["-n", "-s"], &["-u", "-C"]),
];

pub(super) const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish"];
