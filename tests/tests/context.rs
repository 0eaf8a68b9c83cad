//! Sessions that outlive the model's context window, through a real
//! daemon and a fake model that enforces a small window and reports
//! `usageMetadata` as the Gemini API does: token accounting, automatic
//! and manual compression, compression that fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use geminid_protocol::error as code;
use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_tests::fake_model::{FakeModel, Reply, Seen, gemini, prompt_tokens};
use geminid_tests::*;
use jsonrpsee::core::client::Subscription;
use serde_json::Value;

/// The window the fake enforces and the daemon is told.
const WINDOW: u64 = 24_000;

/// Whether `seen` is one of the daemon's summary requests.
fn is_summary_request(seen: &Seen) -> bool {
    seen.body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .is_some_and(|s| s.contains("<state_snapshot>"))
}

/// The last user text of a request.
fn last_user_text(body: &Value) -> String {
    body["contents"]
        .as_array()
        .and_then(|c| c.last())
        .and_then(|c| c["parts"].as_array())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// A model that answers prompts at length (so the history grows), writes
/// summaries when asked, and refuses summary requests while `refusals`
/// is above zero.
fn talkative(refusals: Arc<AtomicUsize>) -> fake_model_responder::Responder {
    Arc::new(move |seen: &Seen, n: usize| {
        if is_summary_request(seen) {
            if refusals
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1))
                .is_ok()
            {
                return gemini::error(400, "INVALID_ARGUMENT", "fake model: no summaries today");
            }
            return Reply::Stream {
                events: vec![
                    gemini::text(&format!(
                        "<scratchpad>looked at it</scratchpad>\n<state_snapshot>\n<overall_goal>answer numbered questions</overall_goal>\n<recent_actions>summary {n}</recent_actions>\n</state_snapshot>"
                    )),
                    gemini::done_full(0, 40, 0, 7),
                ],
                gap: Duration::ZERO,
            };
        }
        let asked = last_user_text(&seen.body);
        if asked == "hang" {
            return Reply::StreamThenHang {
                events: vec![gemini::text("thinking it over")],
            };
        }
        let answer = format!(
            "You asked: {asked}. {}",
            "Here is a long answer. ".repeat(20)
        );
        Reply::Stream {
            events: vec![
                gemini::thought("considering"),
                gemini::text(&answer),
                gemini::done_full(0, 120, 0, 3),
            ],
            gap: Duration::ZERO,
        }
    })
}

/// `Responder` without naming the fake's module path twice.
mod fake_model_responder {
    pub use geminid_tests::fake_model::Responder;
}

struct Ctx {
    d: TestDaemon,
    fake: FakeModel,
    c: Client,
    session: String,
}

impl Ctx {
    async fn new(window: u64, refusals: usize) -> (Ctx, Arc<AtomicUsize>) {
        let refusals = Arc::new(AtomicUsize::new(refusals));
        let fake = FakeModel::windowed(window, talkative(refusals.clone())).await;
        let window_text = window.to_string();
        let d = TestDaemon::start_with_env(&[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", fake.base_url.as_str()),
            ("GEMINI_MODEL", "gemini-2.5-flash"),
            ("GEMINID_CONTEXT_WINDOW", window_text.as_str()),
        ]);
        let c = d.client().await;
        let session = new_session(&c, &d.workspace).await;
        (
            Ctx {
                d,
                fake,
                c,
                session,
            },
            refusals,
        )
    }

    async fn subscribe(&self, c: &Client) -> Subscription<SessionEvent> {
        c.subscribe_session(self.session.clone(), None)
            .await
            .unwrap()
    }

    /// Prompts and waits for the turn's end; returns its events.
    async fn turn(&self, sub: &mut Subscription<SessionEvent>, text: &str) -> Vec<SessionEvent> {
        let turn = self
            .c
            .prompt(self.session.clone(), text.into())
            .await
            .unwrap()
            .turn_id;
        collect_until(sub, |e| {
            matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn)
        })
        .await
    }

    /// Every history entry, page by page.
    async fn history(&self) -> Vec<Value> {
        let mut all = Vec::new();
        loop {
            let page = self
                .c
                .history(self.session.clone(), Some(all.len() as u64), None)
                .await
                .unwrap();
            if page.contents.is_empty() {
                assert_eq!(all.len() as u64, page.total);
                return all;
            }
            all.extend(page.contents);
        }
    }
}

fn question(i: usize) -> String {
    format!(
        "Question number {i}: {}",
        "please consider this carefully. ".repeat(12)
    )
}

fn reason(events: &[SessionEvent]) -> (String, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::TurnFinished {
                reason, message, ..
            } => Some((reason.clone(), message.clone())),
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_turn_session_far_over_the_window_keeps_answering() {
    let (t, _) = Ctx::new(WINDOW, 0).await;
    let mut sub = t.subscribe(&t.c).await;
    let mut compressions = 0;
    let mut usage_events = 0;
    let mut last_tokens = None;
    for i in 0..300 {
        let events = t.turn(&mut sub, &question(i)).await;
        assert_eq!(reason(&events), ("completed".into(), None), "turn {i}");
        for e in &events {
            match &e.payload {
                EventPayload::Compressed {
                    trigger,
                    replaced_entries,
                    tokens_before,
                    tokens_after,
                    summary,
                    ..
                } => {
                    assert_eq!(trigger, "auto");
                    assert!(tokens_after < tokens_before);
                    assert!(*replaced_entries > 0);
                    assert!(summary.starts_with("<state_snapshot>"), "{summary}");
                    compressions += 1;
                }
                EventPayload::TokenUsage { tokens, .. } => {
                    usage_events += 1;
                    last_tokens = Some(tokens.clone());
                }
                EventPayload::CompressionFailed { message, .. } => {
                    panic!("compression failed: {message}")
                }
                _ => {}
            }
        }
    }
    let seen = t.fake.seen();
    // The history sent far exceeds the window, but no request did.
    let stored: u64 = t
        .history()
        .await
        .iter()
        .map(|c| c.to_string().len() as u64 / 4)
        .sum();
    assert!(stored > 3 * WINDOW, "history of {stored} tokens");
    let largest = seen.iter().map(|s| prompt_tokens(&s.body)).max().unwrap();
    assert!(largest <= WINDOW, "a request of {largest} tokens");
    assert!(compressions >= 5, "{compressions} compressions");
    eprintln!(
        "300 turns: {} requests, {compressions} compressions, largest request {largest} of {WINDOW} tokens, stored history ~{stored} tokens",
        seen.len()
    );

    // Every original entry is still in the history, in order.
    let history = t.history().await;
    assert_eq!(history.len(), 600);
    for i in 0..300 {
        let text = history[2 * i]["parts"][0]["text"].as_str().unwrap();
        assert_eq!(text, question(i));
        assert_eq!(history[2 * i + 1]["role"], "model");
    }

    // The account: one usage event per request, totals as the fake
    // counted, the window share of the last request.
    assert_eq!(usage_events, seen.len());
    let info = t.c.get_session(t.session.clone()).await.unwrap();
    let tokens = info.tokens.expect("tokens in session.get");
    assert_eq!(Some(&tokens), last_tokens.as_ref());
    assert_eq!(tokens.requests, seen.len() as u64);
    let counted: u64 = seen.iter().map(|s| prompt_tokens(&s.body)).sum();
    assert_eq!(tokens.total.input, counted);
    assert!(tokens.total.cached > 0, "{tokens:?}");
    assert_eq!(tokens.total.thoughts, 3 * 300 + 7 * 2 * compressions as u64);
    assert_eq!(tokens.context_window, WINDOW);
    assert_eq!(tokens.model.as_deref(), Some("gemini-2.5-flash"));
    let last = prompt_tokens(&seen.last().unwrap().body);
    assert_eq!(tokens.context_tokens, last);
    assert!((tokens.context_share - last as f64 / WINDOW as f64).abs() < 1e-9);

    // The compression survives a restart: the next request starts with
    // the summary, not with the first question.
    let mut d = t.d;
    d.terminate();
    d.spawn();
    let c = d.client().await;
    let t = Ctx { d, c, ..t };
    let mut sub = t.subscribe(&t.c).await;
    let events = t.turn(&mut sub, "one more").await;
    assert_eq!(reason(&events).0, "completed");
    let seen = t.fake.seen();
    let body = &seen.last().unwrap().body;
    // The session context part, then the summary.
    let context = body["contents"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(context.starts_with("<session_context>"), "{context}");
    let first = body["contents"][0]["parts"][1]["text"].as_str().unwrap();
    assert!(first.contains("<state_snapshot>"), "{first}");
    assert_eq!(t.history().await.len(), 602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_client_compresses_between_turns() {
    let (t, _) = Ctx::new(1_000_000, 0).await;
    let mut sub = t.subscribe(&t.c).await;
    for i in 0..6 {
        t.turn(&mut sub, &question(i)).await;
    }
    let other = t.d.client().await;
    let done = other.compress(t.session.clone()).await.unwrap();
    assert_eq!(done.status, "compressed");
    assert!(done.tokens_after < done.tokens_before, "{done:?}");
    // The cut is at a prompt: what the summary stands for ends before one.
    assert_eq!(done.replaced_entries % 2, 0, "{done:?}");
    let events = collect_until(&mut sub, |e| {
        matches!(e.payload, EventPayload::Compressed { .. })
    })
    .await;
    let Some(EventPayload::Compressed {
        trigger,
        turn_id,
        replaced_entries,
        ..
    }) = events.last().map(|e| &e.payload)
    else {
        unreachable!()
    };
    assert_eq!((trigger.as_str(), turn_id), ("manual", &None));
    assert_eq!(*replaced_entries, done.replaced_entries);

    // The next turn sends the summary, then the kept entries verbatim.
    let before = t.fake.seen().len();
    t.turn(&mut sub, "and now?").await;
    let seen = t.fake.seen();
    assert_eq!(seen.len(), before + 1);
    let contents = seen[before].body["contents"].as_array().unwrap().clone();
    assert!(
        contents[0]["parts"][1]["text"]
            .as_str()
            .unwrap()
            .contains("summary")
    );
    let kept = 12 - done.replaced_entries as usize;
    assert_eq!(contents.len(), 2 + kept + 1);
    let next = if kept == 0 {
        "and now?".to_owned()
    } else {
        question(done.replaced_entries as usize / 2)
    };
    assert_eq!(contents[2]["parts"][0]["text"].as_str().unwrap(), next);
    assert_eq!(t.history().await.len(), 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_compression_changes_nothing_and_the_session_goes_on() {
    let (t, refusals) = Ctx::new(1_000_000, 1).await;
    let mut sub = t.subscribe(&t.c).await;
    for i in 0..4 {
        t.turn(&mut sub, &question(i)).await;
    }
    let before = t.fake.seen().len();
    let err = t.c.compress(t.session.clone()).await.unwrap_err();
    let jsonrpsee::core::ClientError::Call(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.code(), code::COMPRESSION_FAILED);
    assert!(
        err.message().contains("no summaries today"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("unchanged"), "{}", err.message());
    let events = collect_until(&mut sub, |e| {
        matches!(e.payload, EventPayload::CompressionFailed { .. })
    })
    .await;
    assert!(matches!(
        &events.last().unwrap().payload,
        EventPayload::CompressionFailed { trigger, .. } if trigger == "manual"
    ));
    assert_eq!(refusals.load(Ordering::SeqCst), 0);

    // The session answers, and sends the whole history as before.
    let events = t.turn(&mut sub, "still there?").await;
    assert_eq!(reason(&events).0, "completed");
    let seen = t.fake.seen();
    let body = &seen.last().unwrap().body;
    assert_eq!(seen.len(), before + 2, "the refused request, then the turn");
    assert_eq!(body["contents"].as_array().unwrap().len(), 9);
    assert_eq!(
        body["contents"][0]["parts"][1]["text"].as_str().unwrap(),
        question(0)
    );
    // A later compression works.
    let done = t.c.compress(t.session.clone()).await.unwrap();
    assert_eq!(done.status, "compressed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_cannot_compress_stops_before_the_window() {
    // Every summary refused: the session never sends past the window; the
    // turn that would ends with an error saying so.
    let (t, _) = Ctx::new(WINDOW, usize::MAX).await;
    let mut sub = t.subscribe(&t.c).await;
    let mut ended = None;
    for i in 0..120 {
        let events = t.turn(&mut sub, &question(i)).await;
        let (why, message) = reason(&events);
        if why != "completed" {
            ended = Some((i, why, message));
            break;
        }
    }
    let (i, why, message) = ended.expect("a turn ended over the window");
    assert_eq!(why, "error");
    assert!(
        message.as_deref().unwrap_or("").contains("context window"),
        "{message:?}"
    );
    assert!(i > 5, "turns before the limit: {i}");
    let largest = t
        .fake
        .seen()
        .iter()
        .map(|s| prompt_tokens(&s.body))
        .max()
        .unwrap();
    assert!(largest <= WINDOW, "a request of {largest} tokens");
    // Nothing was lost from the stored history.
    assert_eq!(t.history().await.len(), 2 * i + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compress_waits_for_no_turn_and_says_so() {
    let (t, _) = Ctx::new(1_000_000, 0).await;
    let mut sub = t.subscribe(&t.c).await;
    for i in 0..3 {
        t.turn(&mut sub, &question(i)).await;
    }
    let turn =
        t.c.prompt(t.session.clone(), "hang".into())
            .await
            .unwrap()
            .turn_id;
    collect_until(&mut sub, |e| {
        matches!(e.payload, EventPayload::ModelText { .. })
    })
    .await;
    let err = t.c.compress(t.session.clone()).await.unwrap_err();
    let jsonrpsee::core::ClientError::Call(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.code(), code::SESSION_BUSY, "{}", err.message());
    t.c.cancel_session(t.session.clone()).await.unwrap();
    collect_until(
        &mut sub,
        |e| matches!(&e.payload, EventPayload::TurnFinished { turn_id, .. } if *turn_id == turn),
    )
    .await;
    let done = t.c.compress(t.session.clone()).await.unwrap();
    assert_eq!(done.status, "compressed");
}
