//! Prompts as parts, through a real daemon and the fake model: `@path` in
//! the text read from the workspace (files, directories, images; ignore
//! files, confinement and missing paths reported, never read), parts given
//! by the client (inline images, files, embedded resources, links), and
//! the ACP agent's image and resource blocks reaching the model as parts.

mod acp_setup;
mod stdio;

use base64::Engine;
use geminid_protocol::error as code;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::turn::PromptPart;
use geminid_tests::fake_model::{FakeModel, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

struct Parts {
    d: TestDaemon,
    fake: FakeModel,
    c: Client,
    session: String,
}

impl Parts {
    async fn new(answers: usize) -> Parts {
        let fake =
            FakeModel::scripted((0..answers).map(|_| gemini::answer(&["ok"])).collect()).await;
        let d = TestDaemon::start_with_env(&[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
        ]);
        let c = d.client().await;
        let session = c
            .create_session(
                d.workspace.display().to_string(),
                None,
                None,
                None,
                None,
                None,
                None,
            )
            .await
            .unwrap()
            .session_id;
        Parts {
            d,
            fake,
            c,
            session,
        }
    }

    fn write(&self, rel: &str, bytes: &[u8]) {
        let path = self.d.workspace.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// Sends the prompt and returns the turn's events.
    async fn run(&self, text: Option<&str>, parts: Option<Vec<PromptPart>>) -> Vec<SessionEvent> {
        let mut sub = self
            .c
            .subscribe_session(self.session.clone(), None)
            .await
            .unwrap();
        let turn = self
            .c
            .prompt_parts(self.session.clone(), text.map(str::to_owned), parts)
            .await
            .unwrap()
            .turn_id;
        collect_until(&mut sub, |e| {
            matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn)
        })
        .await
    }
}

/// The prompt's parts in model request `n`: the last content's parts
/// from the one whose text is `first` (the session context part comes
/// before them in the same content).
fn sent_prompt(fake: &FakeModel, n: usize, first: &str) -> Vec<Value> {
    let seen = fake.seen();
    let contents = seen[n].body["contents"].as_array().unwrap().clone();
    let last = contents.last().unwrap();
    assert_eq!(last["role"], "user");
    let parts = last["parts"].as_array().unwrap();
    let start = parts
        .iter()
        .position(|p| p["text"] == first)
        .unwrap_or_else(|| panic!("{first:?} among {parts:#?}"));
    parts[start..].to_vec()
}

fn error_code(err: &jsonrpsee::core::client::Error) -> Option<i32> {
    match err {
        jsonrpsee::core::client::Error::Call(obj) => Some(obj.code()),
        _ => None,
    }
}

fn texts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

fn inline(parts: &[Value]) -> Vec<(String, String)> {
    parts
        .iter()
        .filter_map(|p| {
            let d = p.get("inlineData")?;
            Some((
                d["mimeType"].as_str()?.to_owned(),
                d["data"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

fn references(events: &[SessionEvent]) -> (Vec<String>, Vec<String>) {
    events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::PromptReferences { read, skipped, .. } => {
                Some((read.clone(), skipped.clone()))
            }
            _ => None,
        })
        .expect("a promptReferences event")
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR fake image bytes";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_paths_are_read_beneath_the_workspace_and_what_was_skipped_is_said() {
    let t = Parts::new(1).await;
    t.write("notes.txt", b"alpha beta");
    t.write("docs/a.md", b"doc a");
    t.write("docs/sub/b.md", b"doc b");
    t.write("secret.txt", b"SECRET-CONTENT");
    t.write(".geminiignore", b"secret.txt\n");
    t.write("pic.png", PNG);
    t.write(".env", b"TOKEN=ENV-CONTENT");
    let outside = tempfile_outside();
    let prompt = format!(
        "summarize @notes.txt and @docs, also @secret.txt, @missing.txt, @pic.png, @.env and @{outside}."
    );
    let events = t.run(Some(&prompt), None).await;

    let (read, skipped) = references(&events);
    assert_eq!(
        read,
        ["notes.txt", "docs/a.md", "docs/sub/b.md", "pic.png"],
        "{skipped:?}"
    );
    let skipped = skipped.join("\n");
    for (path, why) in [
        ("@secret.txt", "gnore"),
        ("@missing.txt", "Not found"),
        ("@.env", "ensitive"),
        (outside.as_str(), "outside"),
    ] {
        assert!(
            skipped.lines().any(|l| l.contains(path) && l.contains(why)),
            "{path} skipped because {why}: {skipped}"
        );
    }
    // The person's text is shown as typed.
    assert!(events.iter().any(|e| matches!(&e.payload,
        EventPayload::UserMessage { text, .. } if *text == prompt)));

    // The request: the text as typed, then the referenced content.
    let parts = sent_prompt(&t.fake, 0, &prompt);
    let all = texts(&parts);
    for want in [
        "--- Content from referenced files ---",
        "Content from @notes.txt:",
        "alpha beta",
        "Content from @docs/a.md:",
        "doc a",
        "Content from @docs/sub/b.md:",
        "doc b",
        "Content from @pic.png:",
    ] {
        assert!(all.contains(want), "{want:?} in {all}");
    }
    assert!(all.ends_with("--- End of content ---"), "{all}");
    for never in ["SECRET-CONTENT", "ENV-CONTENT", "root:"] {
        assert!(!all.contains(never), "{never} must not be read: {all}");
    }
    let png = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert_eq!(inline(&parts), [("image/png".to_owned(), png)]);

    // The history keeps what the model was sent.
    let history = t.c.history(t.session.clone(), None, None).await.unwrap();
    let stored = history
        .contents
        .iter()
        .find(|c| c["role"] == "user")
        .map(|c| c["parts"].clone());
    assert_eq!(stored, Some(Value::Array(parts)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parts_from_the_client_reach_the_model_and_broken_ones_are_refused() {
    let t = Parts::new(1).await;
    t.write("src/lib.rs", b"pub fn lib() {}");
    let png = base64::engine::general_purpose::STANDARD.encode(PNG);
    let parts = vec![
        PromptPart::Text {
            text: "what is in this picture and @src/lib.rs?".into(),
        },
        PromptPart::InlineData {
            mime_type: "image/png".into(),
            data: png.clone(),
        },
        PromptPart::Resource {
            uri: "mem://notes".into(),
            mime_type: Some("text/plain".into()),
            text: Some("embedded notes".into()),
            blob: None,
        },
        PromptPart::ResourceLink {
            uri: "https://example.com/spec".into(),
            name: Some("spec".into()),
            mime_type: None,
        },
    ];
    let events = t.run(None, Some(parts)).await;
    let (read, skipped) = references(&events);
    assert_eq!(read, ["mem://notes", "src/lib.rs"]);
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("https://example.com/spec")),
        "{skipped:?}"
    );
    let sent = sent_prompt(&t.fake, 0, "what is in this picture and @src/lib.rs?");
    assert_eq!(inline(&sent), [("image/png".to_owned(), png)]);
    let all = texts(&sent);
    for want in [
        "[spec](https://example.com/spec)",
        "Content from mem://notes:",
        "embedded notes",
        "Content from @src/lib.rs:",
        "pub fn lib() {}",
    ] {
        assert!(all.contains(want), "{want:?} in {all}");
    }

    // Refused when queued, with the reason.
    for (text, parts, why) in [
        (None, None, "empty"),
        (Some("  "), Some(vec![]), "empty"),
        (
            None,
            Some(vec![PromptPart::InlineData {
                mime_type: "image/png".into(),
                data: "not base64!".into(),
            }]),
            "base64",
        ),
    ] {
        let err =
            t.c.prompt_parts(t.session.clone(), text.map(str::to_owned), parts)
                .await
                .unwrap_err();
        assert_eq!(error_code(&err), Some(code::INVALID_PARAMS), "{err}");
        assert!(err.to_string().contains(why), "{err}");
    }
    assert_eq!(t.fake.seen().len(), 1, "nothing refused reached the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acp_agent_sends_images_and_resources_as_parts() {
    let s = acp_setup::Setup::new(vec![gemini::answer(&["seen"])]).await;
    std::fs::write(s.d.workspace.join("a.rs"), "fn a() {}").unwrap();
    let mut agent = stdio::StdioPeer::spawn(s.d.gemctl(&["acp"]));
    let (init, _) = agent
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let caps = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(caps["image"], true, "{init}");
    assert_eq!(caps["embeddedContext"], true, "{init}");
    let session = s.new_session(&mut agent).await;
    let png = base64::engine::general_purpose::STANDARD.encode(PNG);
    let blocks = json!([
        {"type": "text", "text": "compare"},
        {"type": "image", "mimeType": "image/png", "data": png},
        {"type": "resource_link", "uri": format!("file://{}/a.rs", s.ws()), "name": "a.rs"},
        {"type": "resource", "resource": {"uri": "file:///elsewhere/b.rs", "text": "fn b() {}"}},
    ]);
    let (r, _) = agent
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": blocks}),
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let sent = sent_prompt(&s.fake, 0, "compare");
    assert_eq!(inline(&sent), [("image/png".to_owned(), png)]);
    let all = texts(&sent);
    for want in [
        "Content from @a.rs:",
        "fn a() {}",
        "Content from file:///elsewhere/b.rs:",
        "fn b() {}",
    ] {
        assert!(all.contains(want), "{want:?} in {all}");
    }
    assert!(!all.contains("@file://"), "no link as literal text: {all}");

    // A kind of block the agent cannot pass on is refused, not dropped.
    let (r, _) = agent
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "x"}, {"type": "hologram"}]}),
        )
        .await;
    assert_eq!(r["error"]["code"], code::INVALID_PARAMS, "{r}");
    assert_eq!(s.fake.seen().len(), 1);
    assert_eq!(agent.close().await, Some(0));
}

/// A file outside the workspace (and its absolute path).
fn tempfile_outside() -> String {
    let dir = std::env::temp_dir().join(format!("geminid-outside-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("outside.txt");
    std::fs::write(&path, "root: OUTSIDE").unwrap();
    path.display().to_string()
}

/// `@name` with nothing at that path is searched for by name in the
/// workspace, as 0.61's at-command processor does (`**/*name*`, the glob
/// tool's order), under the ignore files: an ignored file is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_name_not_at_its_path_is_found_by_name_in_the_workspace() {
    let t = Parts::new(1).await;
    t.write("src/deep/parser.rs", b"fn parse() {}");
    t.write("vendor/hidden_conf.rs", b"HIDDEN-CONTENT");
    t.write(".geminiignore", b"vendor/\n");
    let prompt = "look at @parser.rs, @hidden_conf.rs and @nowhere.rs";
    let events = t.run(Some(prompt), None).await;
    let (read, skipped) = references(&events);
    assert_eq!(read, ["src/deep/parser.rs"], "{skipped:?}");
    let skipped = skipped.join("\n");
    for name in ["@hidden_conf.rs", "@nowhere.rs"] {
        assert!(
            skipped
                .lines()
                .any(|l| l.starts_with(name) && l.contains("Not found")),
            "{name}: {skipped}"
        );
    }
    let all = texts(&sent_prompt(&t.fake, 0, prompt));
    assert!(all.contains("Content from @src/deep/parser.rs:"), "{all}");
    assert!(all.contains("fn parse() {}"), "{all}");
    assert!(!all.contains("HIDDEN-CONTENT"), "{all}");
}
