//! Shared by the ACP tests: a daemon on the fake model, `gemctl acp`
//! started and initialized against it, and readers for what it sent.

#![allow(dead_code)]

use geminid_tests::fake_model::{FakeModel, Reply, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

use super::stdio::StdioPeer;

/// A daemon on the fake model, and a way to start `gemctl acp` against it.
pub struct Setup {
    pub d: TestDaemon,
    pub fake: FakeModel,
}

impl Setup {
    pub async fn new(replies: Vec<Reply>) -> Setup {
        let fake = FakeModel::scripted(replies).await;
        let d = TestDaemon::start_with_env(&[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
        ]);
        fake.set_var("WS", &d.workspace.display().to_string());
        Setup { d, fake }
    }

    pub fn ws(&self) -> String {
        self.d.workspace.display().to_string()
    }

    /// `gemctl acp`, initialized.
    pub async fn agent(&self) -> StdioPeer {
        self.agent_with(json!({"fs": {"readTextFile": true, "writeTextFile": true}}))
            .await
    }

    /// `gemctl acp`, initialized by an editor with these `clientCapabilities`.
    pub async fn agent_with(&self, capabilities: Value) -> StdioPeer {
        let mut agent = StdioPeer::spawn(self.d.gemctl(&["acp"]));
        let (init, _) = agent
            .call(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
        agent
    }

    /// `session/new` in the workspace; returns the session id.
    pub async fn new_session(&self, agent: &mut StdioPeer) -> String {
        let (r, _) = agent
            .call("session/new", json!({"cwd": self.ws(), "mcpServers": []}))
            .await;
        let modes = &r["result"]["modes"];
        assert_eq!(modes["currentModeId"], "default", "{r}");
        let ids: Vec<&str> = modes["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["default", "autoEdit", "yolo", "plan"]);
        r["result"]["sessionId"].as_str().unwrap().to_owned()
    }
}

pub fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// The `session/update` payloads among `messages`.
pub fn updates(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| &m["params"]["update"])
        .collect()
}

pub fn text_of(messages: &[Value], kind: &str) -> String {
    updates(messages)
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// A model answer that streams text and a thought, then writes a file.
pub fn writes_a_file() -> Vec<Reply> {
    vec![
        Reply::Stream {
            events: vec![
                gemini::thought("a file is needed"),
                gemini::text("Writing it. "),
                gemini::calls(&[(
                    "write_file",
                    json!({"file_path": "{WS}/hello.txt", "content": "hi\n"}),
                )]),
                gemini::done(10, 5),
            ],
            gap: std::time::Duration::ZERO,
        },
        gemini::answer(&["Done."]),
    ]
}
