//! A model per session: chosen at `session.create`, switched with
//! `session.setModel` from any client, and a fallback model when the
//! chosen one is over quota.

use std::sync::Arc;
use std::time::Duration;

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, Reply, Seen, gemini};
use geminid_tests::*;
use jsonrpsee::core::client::Subscription;
use serde_json::json;

/// The model a request went to, from its path.
fn model_of(seen: &Seen) -> String {
    seen.path
        .trim_start_matches("/v1beta/models/")
        .split(':')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A fake that answers every model, except `over_quota`, which gets 429s.
async fn fake(over_quota: Option<&'static str>) -> FakeModel {
    FakeModel::start(Arc::new(move |seen: &Seen, _| {
        let model = model_of(seen);
        if over_quota == Some(model.as_str()) {
            return Reply::Status {
                code: 429,
                body: json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                    "message": format!("Quota exceeded for model {model}")}})
                .to_string(),
                headers: vec![("Retry-After".into(), "0".into())],
            };
        }
        Reply::Stream {
            events: vec![gemini::text(&format!("{model} here")), gemini::done(10, 2)],
            gap: Duration::ZERO,
        }
    }))
    .await
}

fn daemon(fake: &FakeModel, extra: &[(&str, &str)]) -> TestDaemon {
    let mut env = vec![
        ("GEMINI_API_KEY", "test-key"),
        ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
        ("GEMINI_MODEL", "gemini-2.5-flash"),
    ];
    env.extend_from_slice(extra);
    TestDaemon::start_with_env(&env)
}

async fn turn(
    c: &Client,
    sub: &mut Subscription<SessionEvent>,
    session: &str,
) -> Vec<SessionEvent> {
    let turn = c
        .prompt(session.to_owned(), "hello".into())
        .await
        .unwrap()
        .turn_id;
    collect_until(
        sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await
}

fn text(events: &[SessionEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelText { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_has_its_own_model_and_any_client_switches_it() {
    let fake = fake(None).await;
    let d = daemon(&fake, &[]);
    let c = d.client().await;
    let info = c
        .create_session(
            d.workspace.display().to_string(),
            None,
            None,
            None,
            None,
            None,
            Some("gemini-2.5-pro".into()),
        )
        .await
        .unwrap();
    assert_eq!(info.model.as_deref(), Some("gemini-2.5-pro"));
    let session = info.session_id;
    // Another session keeps the daemon's model.
    let plain = new_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let mut plain_sub = c.subscribe_session(plain.clone(), None).await.unwrap();

    assert_eq!(
        text(&turn(&c, &mut sub, &session).await),
        "gemini-2.5-pro here"
    );
    assert_eq!(
        text(&turn(&c, &mut plain_sub, &plain).await),
        "gemini-2.5-flash here"
    );

    // A second client switches it; the first sees the change.
    let other = d.client().await;
    let info = other
        .set_model(session.clone(), Some("gemini-2.5-flash-lite".into()))
        .await
        .unwrap();
    assert_eq!(info.model.as_deref(), Some("gemini-2.5-flash-lite"));
    collect_until(&mut sub, |e| {
        matches!(&e.payload, EventPayload::ModelChanged { model } if model.as_deref() == Some("gemini-2.5-flash-lite"))
    })
    .await;
    let events = turn(&c, &mut sub, &session).await;
    assert_eq!(text(&events), "gemini-2.5-flash-lite here");
    let booked = events.iter().find_map(|e| match &e.payload {
        EventPayload::TokenUsage { tokens, .. } => tokens.model.clone(),
        _ => None,
    });
    assert_eq!(booked.as_deref(), Some("gemini-2.5-flash-lite"));

    // No model: the daemon's again.
    let info = c.set_model(session.clone(), None).await.unwrap();
    assert_eq!(info.model, None);
    assert_eq!(
        text(&turn(&c, &mut sub, &session).await),
        "gemini-2.5-flash here"
    );
    let paths: Vec<String> = fake.seen().iter().map(model_of).collect();
    assert_eq!(
        paths,
        [
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-2.5-flash-lite",
            "gemini-2.5-flash"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_over_quota_falls_back_to_the_configured_one() {
    let fake = fake(Some("gemini-2.5-pro")).await;
    let d = daemon(
        &fake,
        &[
            ("GEMINI_MODEL", "gemini-2.5-pro"),
            ("GEMINID_FALLBACK_MODEL", "gemini-2.5-flash"),
        ],
    );
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let events = turn(&c, &mut sub, &session).await;
    let fallback = events.iter().find_map(|e| match &e.payload {
        EventPayload::ModelFallback {
            from, to, reason, ..
        } => Some((from.clone(), to.clone(), reason.clone())),
        _ => None,
    });
    let (from, to, reason) = fallback.expect("a modelFallback event");
    assert_eq!(
        (from.as_str(), to.as_str()),
        ("gemini-2.5-pro", "gemini-2.5-flash")
    );
    assert!(reason.contains("Quota exceeded"), "{reason}");
    assert_eq!(text(&events), "gemini-2.5-flash here");
    assert!(events.iter().any(|e| matches!(&e.payload,
        EventPayload::TurnFinished { reason, .. } if reason == "completed")));
    let paths: Vec<String> = fake.seen().iter().map(model_of).collect();
    assert_eq!(paths.last().map(String::as_str), Some("gemini-2.5-flash"));
    assert!(
        paths[..paths.len() - 1]
            .iter()
            .all(|p| p == "gemini-2.5-pro"),
        "{paths:?}"
    );

    // Without a fallback the quota error ends the turn, saying so.
    let fake = fake_with_no_fallback().await;
    let d = daemon(&fake, &[("GEMINI_MODEL", "gemini-2.5-pro")]);
    let c = d.client().await;
    let session = new_session(&c, &d.workspace).await;
    let mut sub = c.subscribe_session(session.clone(), None).await.unwrap();
    let events = turn(&c, &mut sub, &session).await;
    let ended = events.iter().find_map(|e| match &e.payload {
        EventPayload::TurnFinished {
            reason, message, ..
        } => Some((reason.clone(), message.clone().unwrap_or_default())),
        _ => None,
    });
    let (reason, message) = ended.expect("turnFinished");
    assert_eq!(reason, "error");
    assert!(
        message.contains("429") || message.to_lowercase().contains("quota"),
        "{message}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.payload, EventPayload::ModelFallback { .. }))
    );
}

async fn fake_with_no_fallback() -> FakeModel {
    fake(Some("gemini-2.5-pro")).await
}
