//! How a Gemini CLI user reaches a model through the daemon: keys found
//! in `.env` files as 0.61 finds them, Vertex AI with a service-account
//! key and with gcloud's refresh token (against a local token endpoint and
//! a local Vertex endpoint that speak the real wire formats), clear errors,
//! and ACP's `auth_required`.

mod stdio;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use geminid_protocol::error as code;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, Reply, Seen, gemini};
use geminid_tests::*;
use serde_json::{Value, json};

/// The last turn's end: reason and message (the events replay the
/// session from its start).
fn end(events: &[SessionEvent]) -> (String, String) {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            EventPayload::TurnFinished {
                reason, message, ..
            } => Some((reason.clone(), message.clone().unwrap_or_default())),
            _ => None,
        })
        .unwrap()
}

fn write_user_env(d: &TestDaemon, text: &str) {
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(d.home().join(".gemini/.env"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_only_in_the_users_env_file_runs_turns_and_a_new_key_needs_no_restart() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["one"]), gemini::answer(&["two"])]).await;
    let d = TestDaemon::start();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    write_user_env(
        &d,
        &format!(
            "# my keys\nGEMINI_API_KEY=\"key-from-file\"\nGOOGLE_GEMINI_BASE_URL={}\n",
            fake.base_url
        ),
    );
    let events = run_turn(&c, &session, "hi").await;
    assert_eq!(end(&events).0, "completed", "{:?}", end(&events));
    assert_eq!(
        fake.seen()[0].header("x-goog-api-key"),
        Some("key-from-file")
    );
    let model = c.status().await.unwrap().model.unwrap();
    assert!(model.key_present);
    assert!(
        model.key_source.contains(".gemini/.env") && model.key_source.contains("GEMINI_API_KEY"),
        "{}",
        model.key_source
    );
    let status = serde_json::to_string(&c.status().await.unwrap()).unwrap();
    assert!(
        !status.contains("key-from-file"),
        "the key itself is never shown"
    );

    // A new key in the file is used at the next prompt.
    write_user_env(
        &d,
        &format!(
            "GEMINI_API_KEY=rotated\nGOOGLE_GEMINI_BASE_URL={}\n",
            fake.base_url
        ),
    );
    let events = run_turn(&c, &session, "again").await;
    assert_eq!(end(&events).0, "completed");
    assert_eq!(fake.seen()[1].header("x-goog-api-key"), Some("rotated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_env_file_gives_the_key_but_cannot_send_it_elsewhere() {
    let model = FakeModel::scripted(vec![gemini::answer(&["ok"])]).await;
    let attacker = FakeModel::scripted(vec![gemini::answer(&["stolen"])]).await;
    let d = TestDaemon::start();
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        json!({"geminid": {"gemini": {"baseUrl": model.base_url}}}).to_string(),
    )
    .unwrap();
    // The workspace's own file is found first (0.61 reads only that one).
    std::fs::write(
        d.workspace.join(".env"),
        format!(
            "GEMINI_API_KEY=workspace-key\nGOOGLE_GEMINI_BASE_URL={}\n",
            attacker.base_url
        ),
    )
    .unwrap();
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let events = run_turn(&c, &session, "hi").await;
    assert_eq!(end(&events).0, "completed", "{:?}", end(&events));
    assert_eq!(model.seen().len(), 1);
    assert_eq!(
        model.seen()[0].header("x-goog-api-key"),
        Some("workspace-key")
    );
    assert!(
        attacker.seen().is_empty(),
        "the key went to the workspace's host"
    );
}

/// A local OAuth token endpoint: checks each grant, answers tokens
/// `tok-1`, `tok-2`, ... living `lifetime`, and remembers when each was
/// issued.
struct TokenEndpoint {
    fake: FakeModel,
    issued: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl TokenEndpoint {
    async fn start(
        lifetime: u64,
        check: impl Fn(&Seen) -> Result<(), String> + Send + Sync + 'static,
    ) -> TokenEndpoint {
        let issued: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
        let log = issued.clone();
        let fake = FakeModel::start(Arc::new(move |seen: &Seen, _| {
            if let Err(e) = check(seen) {
                return Reply::Status {
                    code: 400,
                    body: json!({"error": "invalid_grant", "error_description": e}).to_string(),
                    headers: Vec::new(),
                };
            }
            let mut log = log.lock().unwrap();
            let token = format!("tok-{}", log.len() + 1);
            log.push((token.clone(), Instant::now()));
            Reply::Status {
                code: 200,
                body:
                    json!({"access_token": token, "expires_in": lifetime, "token_type": "Bearer"})
                        .to_string(),
                headers: Vec::new(),
            }
        }))
        .await;
        TokenEndpoint { fake, issued }
    }

    fn uri(&self) -> String {
        format!("{}/token", self.fake.base_url)
    }

    /// Whether `token` was issued and has not expired.
    fn valid(issued: &Mutex<Vec<(String, Instant)>>, token: &str, lifetime: Duration) -> bool {
        issued
            .lock()
            .unwrap()
            .iter()
            .any(|(t, at)| t == token && at.elapsed() < lifetime)
    }
}

fn form(seen: &Seen) -> Vec<(String, String)> {
    seen.raw
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A fresh RSA key as a service-account JSON key file, and the public key
/// (PKCS#1 DER) the token endpoint checks signatures with.
fn service_account(dir: &Path, token_uri: &str) -> (std::path::PathBuf, Vec<u8>) {
    let pem = dir.join("sa.pem");
    let status = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&pem)
        .status()
        .expect("openssl (installed by .ci/install-deps)");
    assert!(status.success());
    let public = Command::new("openssl")
        .args(["rsa", "-RSAPublicKey_out", "-outform", "DER", "-in"])
        .arg(&pem)
        .output()
        .unwrap();
    assert!(public.status.success());
    let key = json!({
        "type": "service_account",
        "project_id": "proj",
        "private_key_id": "kid-1",
        "private_key": std::fs::read_to_string(&pem).unwrap(),
        "client_email": "agent@proj.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    });
    let path = dir.join("sa.json");
    std::fs::write(&path, key.to_string()).unwrap();
    (path, public.stdout)
}

/// Checks a JWT-bearer grant: its claims and its RS256 signature.
fn check_assertion(seen: &Seen, public_key: &[u8], token_uri: &str) -> Result<(), String> {
    let form = form(seen);
    if field(&form, "grant_type") != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return Err(format!("wrong grant: {}", seen.raw));
    }
    let jwt = field(&form, "assertion").ok_or("no assertion")?;
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("not a JWT".into());
    };
    let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string());
    let header: Value = serde_json::from_slice(&decode(header)?).map_err(|e| e.to_string())?;
    let claims: Value = serde_json::from_slice(&decode(claims)?).map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" || header["kid"] != "kid-1" {
        return Err(format!("header {header}"));
    }
    if claims["iss"] != "agent@proj.iam.gserviceaccount.com"
        || claims["aud"] != token_uri
        || claims["scope"] != "https://www.googleapis.com/auth/cloud-platform"
    {
        return Err(format!("claims {claims}"));
    }
    let signed = &jwt[..jwt.rfind('.').unwrap()];
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public_key,
    )
    .verify(signed.as_bytes(), &decode(signature)?)
    .map_err(|_| "bad signature".to_owned())
}

/// A local Vertex AI endpoint: refuses any bearer token the token
/// endpoint did not issue or that has expired, then answers in order.
async fn vertex_endpoint(
    issued: Arc<Mutex<Vec<(String, Instant)>>>,
    lifetime: Duration,
    replies: Vec<Reply>,
) -> (FakeModel, Arc<AtomicUsize>) {
    let refused = Arc::new(AtomicUsize::new(0));
    let count = refused.clone();
    let queue = Arc::new(Mutex::new(std::collections::VecDeque::from(replies)));
    let fake = FakeModel::start(Arc::new(move |seen: &Seen, _| {
        let token = seen
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .unwrap_or("");
        if !TokenEndpoint::valid(&issued, token, lifetime) {
            count.fetch_add(1, Ordering::SeqCst);
            return gemini::error(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials.",
            );
        }
        queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| gemini::error(500, "INTERNAL", "no reply left"))
    }))
    .await;
    (fake, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vertex_with_a_service_account_key_refreshes_its_token_mid_turn() {
    let keys = tempfile::tempdir().unwrap();
    // The key file names the token endpoint; it is made before the
    // endpoint knows the public key, so the check reads it from a cell.
    let public: Arc<Mutex<Vec<u8>>> = Arc::default();
    let uri_cell: Arc<Mutex<String>> = Arc::default();
    let (pk, uri) = (public.clone(), uri_cell.clone());
    let lifetime = Duration::from_secs(2);
    let tokens = TokenEndpoint::start(lifetime.as_secs(), move |seen| {
        check_assertion(seen, &pk.lock().unwrap(), &uri.lock().unwrap())
    })
    .await;
    *uri_cell.lock().unwrap() = tokens.uri();
    let (key_file, public_key) = service_account(keys.path(), &tokens.uri());
    *public.lock().unwrap() = public_key;
    let (vertex, refused) = vertex_endpoint(
        tokens.issued.clone(),
        lifetime,
        vec![
            gemini::call_reply(&[("run_shell_command", json!({"command": "sleep 2.2"}))]),
            gemini::answer(&["slept"]),
        ],
    )
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ("GOOGLE_VERTEX_BASE_URL", vertex.base_url.as_str()),
        ("GOOGLE_APPLICATION_CREDENTIALS", key_file.to_str().unwrap()),
        ("GEMINI_MODEL", "gemini-2.5-pro"),
    ]);
    let c = d.client().await;
    let model = c.status().await.unwrap().model.unwrap();
    assert_eq!(model.provider, "vertex-ai");
    assert!(model.problem.is_none(), "{:?}", model.problem);
    assert!(model.key_source.contains("sa.json"), "{}", model.key_source);
    let session = yolo_session(&c, &d.workspace).await;
    let events = run_turn(&c, &session, "sleep a bit").await;
    assert_eq!(end(&events).0, "completed", "{:?}", end(&events));
    let seen = vertex.seen();
    assert_eq!(seen.len(), 2, "no request was refused and retried");
    assert_eq!(
        seen[0].path,
        "/v1beta1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(seen[0].header("authorization"), Some("Bearer tok-1"));
    assert_eq!(
        seen[1].header("authorization"),
        Some("Bearer tok-2"),
        "the token was refreshed before it expired, mid-turn"
    );
    assert_eq!(refused.load(Ordering::SeqCst), 0);
    assert!(
        seen[1].body["contents"].as_array().unwrap().len() >= 3,
        "same history shape"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_gcloud_refresh_token_says_what_to_run_and_never_shows_the_token() {
    let tokens = TokenEndpoint::start(3600, |seen| {
        let form = form(seen);
        match (field(&form, "grant_type"), field(&form, "refresh_token")) {
            (Some("refresh_token"), Some("good-refresh")) => Ok(()),
            _ => Err("Token has been expired or revoked.".to_owned()),
        }
    })
    .await;
    let (vertex, _) = vertex_endpoint(
        tokens.issued.clone(),
        Duration::from_secs(3600),
        vec![gemini::answer(&["via gcloud"])],
    )
    .await;
    let d = TestDaemon::start_with_env(&[
        ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("GOOGLE_CLOUD_LOCATION", "global"),
        ("GOOGLE_VERTEX_BASE_URL", vertex.base_url.as_str()),
    ]);
    // gcloud's own file, where `application-default login` puts it.
    let gcloud = d.home().join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    let adc = gcloud.join("application_default_credentials.json");
    let write = |refresh: &str| {
        std::fs::write(
            &adc,
            json!({"type": "authorized_user", "client_id": "cid", "client_secret": "csecret",
                   "refresh_token": refresh, "token_uri": tokens.uri()})
            .to_string(),
        )
        .unwrap();
    };
    write("revoked-refresh-SECRET");
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let events = run_turn(&c, &session, "hi").await;
    let (reason, message) = end(&events);
    assert_eq!(reason, "error");
    assert!(message.contains("expired or been revoked"), "{message}");
    assert!(
        message.contains("gcloud auth application-default login"),
        "{message}"
    );
    assert!(
        message.contains("application_default_credentials.json"),
        "{message}"
    );
    assert!(!message.contains("SECRET"), "{message}");

    // After a new login the next prompt works, with no restart.
    write("good-refresh");
    let events = run_turn(&c, &session, "again").await;
    assert_eq!(end(&events).0, "completed", "{:?}", end(&events));
    assert_eq!(
        vertex.seen()[0].header("authorization"),
        Some("Bearer tok-1")
    );
    assert!(vertex.seen()[0].path.contains("/locations/global/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_credentials_file_is_named_at_once() {
    let d = TestDaemon::start_with_env(&[
        ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/nonexistent/creds/key.json",
        ),
    ]);
    let c = d.client().await;
    let problem = c.status().await.unwrap().model.unwrap().problem.unwrap();
    assert!(problem.contains("/nonexistent/creds/key.json"), "{problem}");
    let session = new_session(&c, &d.workspace).await;
    let err = c
        .prompt(session, "hi".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&code::MODEL_NOT_CONFIGURED.to_string()),
        "{err}"
    );
    assert!(err.contains("/nonexistent/creds/key.json"), "{err}");
    // gemctl says the same, on stderr, with the model exit code.
    let out = d
        .gemctl(&["prompt", "--cwd", d.workspace.to_str().unwrap(), "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/creds/key.json"), "{stderr}");
    assert!(!out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_editor_gets_auth_required_then_succeeds_after_authenticate() {
    let fake = FakeModel::scripted(vec![gemini::answer(&["hello from the model"])]).await;
    let d = TestDaemon::start();
    let mut agent = stdio::StdioPeer::spawn(d.gemctl(&["acp"]));
    let (init, _) = agent
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let methods = init["result"]["authMethods"].as_array().unwrap().clone();
    let ids: Vec<&str> = methods.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert!(
        ids.contains(&"gemini-api-key") && ids.contains(&"vertex-ai"),
        "{init}"
    );
    assert!(
        methods
            .iter()
            .all(|m| m["description"].as_str().is_some_and(|d| !d.is_empty())),
        "each method says what to do: {init}"
    );
    let (new, _) = agent
        .call(
            "session/new",
            json!({"cwd": d.workspace.display().to_string(), "mcpServers": []}),
        )
        .await;
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]});
    let (refused, _) = agent.call("session/prompt", prompt.clone()).await;
    assert_eq!(refused["error"]["code"], -32000, "auth_required: {refused}");
    let (auth, _) = agent
        .call("authenticate", json!({"methodId": "gemini-api-key"}))
        .await;
    assert_eq!(auth["error"]["code"], -32000, "still no key: {auth}");
    assert!(
        auth["error"]["message"]
            .as_str()
            .unwrap()
            .contains("~/.gemini/.env"),
        "{auth}"
    );

    // The user puts the key where the method said; authenticate now passes.
    write_user_env(
        &d,
        &format!(
            "GEMINI_API_KEY=k\nGOOGLE_GEMINI_BASE_URL={}\n",
            fake.base_url
        ),
    );
    let (auth, _) = agent
        .call("authenticate", json!({"methodId": "gemini-api-key"}))
        .await;
    assert_eq!(auth["result"], json!({}), "{auth}");
    let (unknown, _) = agent
        .call("authenticate", json!({"methodId": "oauth-personal"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let (done, seen) = agent.call("session/prompt", prompt).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let text: String = seen
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "hello from the model");
    assert_eq!(agent.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_may_choose_another_provider_the_settings_configure() {
    use geminid_tests::fake_model::openai;
    let mut local_reply = vec![openai::text("from local")];
    local_reply.extend(openai::done("stop"));
    let local = FakeModel::scripted(vec![Reply::Stream {
        events: local_reply,
        gap: Duration::ZERO,
    }])
    .await;
    let google = FakeModel::scripted(vec![gemini::answer(&["from gemini"])]).await;
    let d = TestDaemon::start_with_env(&[
        ("GEMINI_API_KEY", "g-key"),
        ("GOOGLE_GEMINI_BASE_URL", google.base_url.as_str()),
    ]);
    std::fs::create_dir_all(d.home().join(".gemini")).unwrap();
    std::fs::write(
        d.home().join(".gemini/settings.json"),
        json!({"geminid": {"openaiCompatible": {"baseUrl": format!("{}/v1", local.base_url), "model": "qwen"}}})
            .to_string(),
    )
    .unwrap();
    let c = d.client().await;
    assert_eq!(
        c.status().await.unwrap().model.unwrap().provider,
        "openai-compatible"
    );
    let here = new_session(&c, &d.workspace).await;
    let events = run_turn(&c, &here, "hi").await;
    assert_eq!(end(&events).0, "completed", "{:?}", end(&events));
    assert_eq!(local.seen().len(), 1);

    let other = new_session(&c, &d.workspace).await;
    c.set_model(other.clone(), Some("gemini:gemini-2.5-pro".into()))
        .await
        .unwrap();
    let events = run_turn(&c, &other, "hi").await;
    assert_eq!(end(&events).0, "completed", "{:?}", end(&events));
    let seen = google.seen();
    assert_eq!(seen.len(), 1, "the session's own provider answered");
    assert!(
        seen[0].path.contains("/models/gemini-2.5-pro:"),
        "{}",
        seen[0].path
    );
    assert_eq!(seen[0].header("x-goog-api-key"), Some("g-key"));
    assert_eq!(
        local.seen().len(),
        1,
        "the other session's provider was not used"
    );

    // A provider the files do not configure is refused at once, saying why.
    let third = new_session(&c, &d.workspace).await;
    c.set_model(third.clone(), Some("vertex-ai:gemini-2.5-pro".into()))
        .await
        .unwrap();
    let err = c.prompt(third, "hi".into()).await.unwrap_err().to_string();
    assert!(
        err.contains("vertex-ai") && err.contains("GOOGLE_CLOUD_PROJECT"),
        "{err}"
    );
}
