use serde_json::json;

use super::*;

fn guard(base: &Path) -> Guard {
    Guard::new(ProtectedPaths::discover(&DaemonPaths {
        home: base.join("home"),
        user_gemini_dir: base.join("home/.gemini"),
        admin_policy_dir: base.join("etc/policies"),
        system_settings: base.join("etc/settings.json"),
        trusted_folders: None,
        config_home: base.join("home/.config"),
        data_dir: base.join("data"),
        socket: base.join("run/geminid.sock"),
    }))
}

/// One row: tool, kind, args, resolved location, interactive, the
/// policy's decision, and what comes out (`None`: left alone).
type Row<'a> = (
    &'a str,
    ToolKind,
    Value,
    Option<&'a str>,
    bool,
    Decision,
    Option<(Decision, &'a str)>,
);

#[test]
fn decisions() {
    use Decision::{Allow, AskUser, Deny};
    let base = Path::new("/b");
    let g = guard(base);
    let ws = "/b/home";
    let rows: Vec<Row> = vec![
        // A session at $HOME writing its own policy: asked even when
        // allowed (autoEdit, yolo, "always"), refused non-interactive.
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/.gemini/policies/x.toml", "content": "x"}),
            Some("/b/home/.gemini/policies/x.toml"),
            true,
            Allow,
            Some((AskUser, "Protected Files")),
        ),
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/.gemini/settings.json", "content": "x"}),
            Some("/b/home/.gemini/settings.json"),
            false,
            Allow,
            Some((Deny, "Protected Files")),
        ),
        (
            "replace",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/.gemini/settings.json"}),
            Some("/b/home/proj/.gemini/settings.json"),
            true,
            AskUser,
            Some((AskUser, "Protected Files")),
        ),
        // Reached through a symlink: the resolved location decides.
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/innocent.toml"}),
            Some("/b/home/.gemini/policies/innocent.toml"),
            true,
            Allow,
            Some((AskUser, "Protected Files")),
        ),
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/data/store/db"}),
            Some("/b/data/store/db"),
            false,
            Allow,
            Some((Deny, "Protected Files")),
        ),
        // An MCP tool that edits by name, with a relative path.
        (
            "mcp_fs_write_text",
            ToolKind::Other,
            json!({"path": ".git/config", "text": "x"}),
            None,
            true,
            Allow,
            Some((AskUser, "Protected Files")),
        ),
        (
            "fs__move",
            ToolKind::Move,
            json!({"source": "a.txt", "destination": "/b/home/.gitconfig"}),
            None,
            true,
            Allow,
            Some((AskUser, "Protected Files")),
        ),
        // A deny stays a deny.
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/.gemini/policies/x.toml"}),
            Some("/b/home/.gemini/policies/x.toml"),
            true,
            Deny,
            None,
        ),
        // Reads of protected files are the policy's business.
        (
            "read_file",
            ToolKind::Read,
            json!({"absolute_path": "/b/home/.gemini/settings.json"}),
            Some("/b/home/.gemini/settings.json"),
            true,
            Allow,
            None,
        ),
        // The global memory file is left to the policy.
        (
            "save_memory",
            ToolKind::Other,
            json!({"fact": "x"}),
            Some("/b/home/.gemini/GEMINI.md"),
            false,
            Allow,
            None,
        ),
        // Build files: allowed edits ask, or are refused non-interactive.
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/Cargo.toml"}),
            Some("/b/home/proj/Cargo.toml"),
            true,
            Allow,
            Some((AskUser, "Build File Protection")),
        ),
        (
            "replace",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/sub/Dockerfile.dev"}),
            Some("/b/home/proj/sub/Dockerfile.dev"),
            false,
            Allow,
            Some((Deny, "Build File Protection")),
        ),
        (
            "mcp_srv_update_file",
            ToolKind::Other,
            json!({"path": "/b/home/proj/rules.mk"}),
            None,
            true,
            Allow,
            Some((AskUser, "Build File Protection")),
        ),
        // A link to a build file counts (the resolved location).
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/link"}),
            Some("/b/home/proj/Cargo.toml"),
            true,
            Allow,
            Some((AskUser, "Build File Protection")),
        ),
        // Already asking, or not an edit: left alone.
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/Cargo.toml"}),
            Some("/b/home/proj/Cargo.toml"),
            true,
            AskUser,
            None,
        ),
        (
            "read_file",
            ToolKind::Read,
            json!({"absolute_path": "/b/home/proj/Cargo.toml"}),
            Some("/b/home/proj/Cargo.toml"),
            false,
            Allow,
            None,
        ),
        (
            "write_file",
            ToolKind::Edit,
            json!({"file_path": "/b/home/proj/cargo.toml"}),
            Some("/b/home/proj/cargo.toml"),
            false,
            Allow,
            None,
        ),
        (
            "run_shell_command",
            ToolKind::Execute,
            json!({"command": "echo x > .gemini/settings.json"}),
            Some("/b/home/proj"),
            false,
            Allow,
            None,
        ),
    ];
    for (tool, kind, args, location, interactive, decision, want) in rows {
        let facts = CallFacts {
            tool_name: tool,
            tool_kind: kind,
            args: &args,
            locations: location.map(PathBuf::from).into_iter().collect(),
            root: Path::new(ws),
            mode: ApprovalMode::Yolo,
            interactive,
            plans: None,
        };
        let got = g.check(&facts, decision);
        let got = got.as_ref().map(|v| (v.decision, v.source));
        assert_eq!(
            got, want,
            "{tool} {args} interactive={interactive} {decision:?}"
        );
    }
}

#[test]
fn explanations_say_why() {
    let g = guard(Path::new("/b"));
    let args = json!({"file_path": "/b/home/.gemini/policies/x.toml"});
    let facts = CallFacts {
        tool_name: "write_file",
        tool_kind: ToolKind::Edit,
        args: &args,
        locations: vec![PathBuf::from("/b/home/.gemini/policies/x.toml")],
        root: Path::new("/b/home"),
        mode: ApprovalMode::AutoEdit,
        interactive: false,
        plans: None,
    };
    let v = g.check(&facts, Decision::Allow).unwrap();
    let text = v.explain();
    assert!(
        text.starts_with(
            "safety (Protected Files): /b/home/.gemini/policies/x.toml is in /b/home/.gemini"
        ),
        "{text}"
    );
    assert!(text.contains("non-interactive"), "{text}");
    let args = json!({"file_path": "/w/Cargo.toml"});
    let facts = CallFacts {
        args: &args,
        locations: vec![PathBuf::from("/w/Cargo.toml")],
        interactive: true,
        ..facts
    };
    let v = g.check(&facts, Decision::Allow).unwrap();
    assert_eq!(
        v.explain(),
        "safety (Build File Protection): Modifying build configuration files requires explicit user confirmation"
    );
}

/// In autoEdit, writes under `.vscode` ask (as 0.61's path checker asks);
/// in yolo they do not.
#[test]
fn editor_configuration_asks_in_auto_edit() {
    let g = guard(Path::new("/b"));
    let check = |mode, tool: &str, rel: &str, interactive| {
        let path = format!("/w/{rel}");
        let args = json!({"file_path": path});
        let facts = CallFacts {
            tool_name: tool,
            tool_kind: ToolKind::Edit,
            args: &args,
            locations: vec![PathBuf::from(&path)],
            root: Path::new("/w"),
            mode,
            interactive,
            plans: None,
        };
        g.check(&facts, Decision::Allow)
            .map(|v| (v.decision, v.source))
    };
    use ApprovalMode::{AutoEdit, Yolo};
    let asked = Some((Decision::AskUser, "Editor Configuration"));
    assert_eq!(
        check(AutoEdit, "write_file", ".vscode/settings.json", true),
        asked
    );
    assert_eq!(check(AutoEdit, "replace", "a/.VSCODE/x.json", true), asked);
    assert_eq!(check(AutoEdit, "write_file", "VSCODE~1/x", true), asked);
    assert_eq!(
        check(AutoEdit, "write_file", ".vscode/tasks.json", false),
        Some((Decision::Deny, "Editor Configuration"))
    );
    assert_eq!(
        check(Yolo, "write_file", ".vscode/settings.json", true),
        None
    );
    assert_eq!(check(AutoEdit, "write_file", ".idea/x.xml", true), None);
    assert_eq!(check(AutoEdit, "write_file", "vscode/x", true), None);
}

/// In plan mode a plan (`.md` directly in the session's plans directory,
/// which lies in `~/.gemini`) is written without a person; anything else
/// there, or the same write outside plan mode, stays protected.
#[test]
fn only_plans_in_the_plans_directory_are_let_through() {
    let g = guard(Path::new("/b"));
    let plans = Path::new("/b/home/.gemini/tmp/w-1/s/plans");
    let check = |tool: &str, target: &str, plans: Option<&Path>| {
        let args = json!({"file_path": target});
        let facts = CallFacts {
            tool_name: tool,
            tool_kind: ToolKind::Edit,
            args: &args,
            locations: vec![PathBuf::from(target)],
            root: Path::new("/b/home/proj"),
            mode: ApprovalMode::Plan,
            interactive: true,
            plans,
        };
        g.check(&facts, Decision::Allow).map(|v| v.source)
    };
    let plan = "/b/home/.gemini/tmp/w-1/s/plans/p.md";
    assert_eq!(check("write_file", plan, Some(plans)), None);
    assert_eq!(check("replace", plan, Some(plans)), None);
    for (tool, target, plans) in [
        ("write_file", plan, None),
        (
            "write_file",
            "/b/home/.gemini/tmp/w-1/s/plans/p.toml",
            Some(plans),
        ),
        (
            "write_file",
            "/b/home/.gemini/tmp/w-1/s/plans/sub/p.md",
            Some(plans),
        ),
        ("write_file", "/b/home/.gemini/policies/p.md", Some(plans)),
        ("save_memory", plan, Some(plans)),
    ] {
        assert_eq!(
            check(tool, target, plans),
            Some("Protected Files"),
            "{tool} {target}"
        );
    }
}
