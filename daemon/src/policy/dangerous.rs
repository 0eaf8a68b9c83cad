//! Commands 0.61 asks about even when a rule allows every shell command
//! (its `isDangerousCommand`): `rm -f`/`-rf`, `ln -s`, `find` with actions
//! that run or write, `rg --pre`/`-z`, `base64 -o`, `git -c` and git's
//! read-only subcommands given options that write. Outside yolo, an allow
//! from a rule that does not look at the command becomes ask_user for
//! them. Pure: words in, a yes or no out.

/// Whether the command (its unquoted words) is one 0.61 treats as dangerous.
pub fn is_dangerous(words: &[String]) -> bool {
    let Some(cmd) = words.first().map(|w| w.rsplit('/').next().unwrap_or(w)) else {
        return false;
    };
    let args = &words[1..];
    match cmd {
        "ln" => args.iter().any(|a| {
            a == "-s"
                || a == "--symbolic"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
        }),
        "rm" => matches!(args.first().map(String::as_str), Some("-f" | "-rf" | "-fr")),
        "sudo" => is_dangerous(args),
        "find" => args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fls"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
            )
        }),
        "rg" => args.iter().any(|a| {
            a == "--search-zip"
                || a == "-z"
                || a == "--pre"
                || a.starts_with("--pre=")
                || a == "--hostname-bin"
                || a.starts_with("--hostname-bin=")
        }),
        "base64" => args
            .iter()
            .any(|a| a == "--output" || a.starts_with("--output=") || a.starts_with("-o")),
        "git" => git_is_dangerous(args),
        _ => false,
    }
}

/// `git -c ...` / `--config-env`, or a read-only subcommand with an option
/// that writes (`--output`, `--ext-diff`, ...), or `git branch` changing
/// branches.
fn git_is_dangerous(args: &[String]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "-c"
            || arg.starts_with("--config-env")
            || (arg.starts_with("-c") && arg.len() > 2)
        {
            return true;
        }
        if !arg.starts_with('-') {
            break;
        }
        // Options that take a value as the next word.
        if matches!(
            arg.as_str(),
            "-C" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            i += 1;
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    let rest = &args[i + 1..];
    let writes = |a: &String| {
        a.starts_with("--output")
            || a == "--ext-diff"
            || a.starts_with("--textconv")
            || a.starts_with("--exec")
            || a == "-o"
    };
    match sub.as_str() {
        "status" | "log" | "diff" | "show" => rest.iter().any(writes),
        "branch" => {
            rest.iter().any(writes)
                || rest.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "-d" | "-D"
                            | "--delete"
                            | "-m"
                            | "-M"
                            | "--move"
                            | "-c"
                            | "-C"
                            | "--copy"
                            | "-f"
                            | "--force"
                            | "-u"
                            | "--set-upstream-to"
                            | "--unset-upstream"
                            | "--edit-description"
                    ) || a.starts_with("--set-upstream-to=")
                })
                || (rest.iter().any(|a| !a.starts_with('-'))
                    && !rest.iter().any(|a| {
                        matches!(
                            a.as_str(),
                            "--list"
                                | "-l"
                                | "--contains"
                                | "--merged"
                                | "--no-merged"
                                | "--points-at"
                        )
                    }))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_dangerous;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn table() {
        for text in [
            "rm -rf build",
            "rm -f x",
            "sudo rm -fr /",
            "ln -s a b",
            "ln -sf a b",
            "find . -delete",
            "find . -exec rm {} ;",
            "rg --pre cat x",
            "rg -z x",
            "base64 -o out x",
            "git -c core.pager=x log",
            "git diff --output=x",
            "git branch -D main",
            "git branch newname",
            "/bin/rm -rf x",
        ] {
            assert!(is_dangerous(&words(text)), "{text}");
        }
        for text in [
            "rm x",
            "rm -r x",
            "ln a b",
            "find . -name x",
            "rg foo",
            "base64 x",
            "git status",
            "git log -p",
            "git branch",
            "git branch --list x",
            "ls -la",
            "",
        ] {
            assert!(!is_dangerous(&words(text)), "{text}");
        }
    }
}
