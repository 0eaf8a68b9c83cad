//! Canaries outside a workspace and the checks that nothing reached them,
//! shared by the path-attack suites (`tests/fs_abuse.rs`,
//! `tests/root_swap.rs`).

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use geminid_protocol::session::ApprovalMode;
use geminid_protocol::tool::CallState;
use serde_json::Value;

use crate::{Client, GeminidApiClient, TestDaemon, collect_until};

pub const SECRET: &str = "TOPSECRET-7f3a9c";
pub const CANARY_NAME: &str = "CANARYNAME-51d0e2.txt";
pub const SHARED: &str = "shared-word";

pub struct Fixture {
    pub d: TestDaemon,
    pub c: Client,
    pub session: String,
    pub outside: PathBuf,
}

/// A daemon with a yolo session on a workspace full of symlinks out, and
/// a directory of canaries next to the workspace.
pub async fn fixture() -> Fixture {
    let d = TestDaemon::start();
    let ws = d.workspace.clone();
    let outside = ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{SECRET} {SHARED}\n")).unwrap();
    std::fs::write(outside.join("dir").join(CANARY_NAME), SECRET).unwrap();
    std::fs::write(outside.join(CANARY_NAME), SECRET).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("inside.txt"), format!("inside {SHARED}\n")).unwrap();
    let links: [(&str, PathBuf); 12] = [
        ("link_file", outside.join("secret.txt")),
        ("link_dir", outside.clone()),
        ("chain1", ws.join("chain2")),
        ("chain2", ws.join("sub/chain3")),
        ("sub/chain3", "../link_dir".into()),
        ("rel_link", "../outside".into()),
        ("sub/deep_link", "../../outside".into()),
        ("dangling", outside.join("nothing")),
        ("dangling_chain", "dangling".into()),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("link_root", "/".into()),
    ];
    for (name, target) in links {
        symlink(target, ws.join(name)).unwrap();
    }
    symlink("/proc/self/root", ws.join("link_proc")).unwrap();
    let c = d.client().await;
    let session = c
        .create_session(
            ws.display().to_string(),
            Some(ApprovalMode::Yolo),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .session_id;
    Fixture {
        d,
        c,
        session,
        outside,
    }
}

/// Every file under `dir` (not following symlinks) with its content.
pub fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = p.symlink_metadata().unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
            }
            let content = if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            out.insert(p, content);
        }
    }
    out
}

impl Fixture {
    pub fn expand(&self, template: &str) -> String {
        template
            .replace("{ws}", &self.d.workspace.display().to_string())
            .replace("{out}", &self.outside.display().to_string())
    }

    /// Runs one call; returns what went wrong (a leak, or an `R` row that a
    /// strict tool did not refuse).
    pub async fn run(&self, tool: &str, args: Value, must_refuse: bool) -> Option<String> {
        let done = self
            .c
            .call_tool(
                self.session.clone(),
                tool.into(),
                Some(args.clone()),
                Some(true),
            )
            .await
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
            .outcome
            .unwrap();
        let text = serde_json::to_string(&done).unwrap();
        let leaked = text.contains(SECRET) || text.contains(CANARY_NAME);
        if leaked || (must_refuse && done.state == CallState::Success) {
            let shown: String = text.chars().take(600).collect();
            return Some(format!("{tool} {args}: leaked={leaked} {shown}"));
        }
        None
    }

    /// No canary in any event of the session, from the first on.
    pub async fn assert_no_leak_in_events(&self) {
        let info = self.c.get_session(self.session.clone()).await.unwrap();
        let mut sub = self
            .c
            .subscribe_session(self.session.clone(), Some(0))
            .await
            .unwrap();
        let last = info.last_seq;
        let events = collect_until(&mut sub, |e| e.seq >= last).await;
        let text = serde_json::to_string(&events).unwrap();
        assert!(!text.contains(SECRET), "an event carried the secret");
        assert!(!text.contains(CANARY_NAME), "an event named the canary");
    }
}
