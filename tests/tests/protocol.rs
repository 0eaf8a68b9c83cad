//! The wire protocol, spoken raw (NDJSON over the socket, no client
//! library): error codes for bad input, the handshake rules, notifications,
//! `wait: true`, the shape of `session.event`, and a client that stops
//! reading not stalling anyone else.

use geminid_protocol::error as code;
use geminid_protocol::framing::MAX_LINE_BYTES;
use geminid_protocol::tool::CallState;
use geminid_tests::*;
use serde_json::{Value, json};

/// Sends one line, reads the one answer it gets and checks its error code
/// (`None`: any answer will do), then proves the connection still serves a
/// valid request. Returns the answer.
fn check(conn: &mut RawConn, line: &[u8], want: Option<i32>) -> Value {
    conn.send_bytes(line);
    let answer = conn.read_message();
    let shown = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if let Some(want) = want {
        assert_eq!(
            answer["error"]["code"],
            json!(want),
            "line {shown:?} got {answer}"
        );
    }
    let after = conn.request("daemon.status", json!({}));
    assert!(
        after.get("result").is_some(),
        "the connection must keep working after {shown:?}; got {after}"
    );
    answer
}

fn initialized(d: &TestDaemon) -> RawConn {
    let mut conn = d.raw();
    conn.initialize();
    conn
}

#[test]
fn malformed_json_is_a_parse_error_with_a_null_id() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    for line in [
        &b"{not json"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":",
        b"}}}",
    ] {
        let answer = check(&mut conn, line, Some(code::PARSE_ERROR));
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
}

#[test]
fn json_that_is_not_a_request_is_an_invalid_request() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    for line in [
        r#"{"foo":1}"#,
        r#"42"#,
        r#""daemon.status""#,
        r#"{"jsonrpc":"2.0","id":7}"#,
        r#"{"jsonrpc":"1.0","id":8,"method":"daemon.status"}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":5}"#,
    ] {
        check(&mut conn, line.as_bytes(), Some(code::INVALID_REQUEST));
    }
    let answer = check(
        &mut conn,
        br#"{"jsonrpc":"2.0","id":"abc","method":17}"#,
        Some(code::INVALID_REQUEST),
    );
    assert_eq!(answer["id"], json!("abc"), "the request's id is echoed");
}

#[test]
fn an_unknown_method_is_method_not_found() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    let answer = conn.request("session.explode", json!({}));
    assert_eq!(answer["error"]["code"], json!(code::METHOD_NOT_FOUND));
    assert!(answer["id"].is_number(), "{answer}");
}

#[test]
fn wrong_params_are_invalid_params_naming_the_field() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    let cases = [
        ("session.create", json!({}), "cwd"),
        ("session.create", json!({"cwd": 5}), "cwd"),
        ("session.get", json!({"sessionId": ["x"]}), "sessionId"),
        ("tool.call", json!({"sessionId": "s"}), "name"),
    ];
    let mut wrong = Vec::new();
    for (method, params, field) in cases {
        let answer = conn.request(method, params.clone());
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        if answer["error"]["code"] != json!(code::INVALID_PARAMS) || !message.contains(field) {
            wrong.push(format!(
                "{method} {params}: want -32602 naming `{field}`, got {answer}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_line_over_the_limit_is_refused_and_the_connection_survives() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    let pad = "x".repeat(MAX_LINE_BYTES + 16);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"daemon.status","params":{{"pad":"{pad}"}}}}"#
    );
    let answer = check(&mut conn, line.as_bytes(), Some(code::LINE_TOO_LONG));
    assert_eq!(answer["id"], Value::Null, "{answer}");
}

#[test]
fn requests_before_initialize_are_refused_and_initialize_only_once() {
    let d = TestDaemon::start();
    let mut conn = d.raw();
    for method in ["daemon.status", "session.list", "no.such.method"] {
        let answer = conn.request(method, json!({}));
        assert_eq!(
            answer["error"]["code"],
            json!(code::NOT_INITIALIZED),
            "{method}: {answer}"
        );
    }
    conn.initialize();
    let again = conn.request("daemon.initialize", json!({}));
    assert_eq!(again["error"]["code"], json!(code::ALREADY_INITIALIZED));
    let status = conn.request("daemon.status", json!({}));
    assert!(status.get("result").is_some(), "{status}");
}

#[test]
fn notifications_get_no_answer() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    conn.send_line(r#"{"jsonrpc":"2.0","method":"daemon.status","params":{}}"#);
    conn.send_line(r#"{"jsonrpc":"2.0","method":"no.such.method"}"#);
    conn.send_line(r#"{"jsonrpc":"2.0","id":42,"method":"daemon.status","params":{}}"#);
    let first = conn.read_message();
    assert_eq!(
        first["id"],
        json!(42),
        "the first message must answer the request, not a notification: {first}"
    );
}

#[test]
fn odd_json_and_unicode_do_not_kill_the_connection() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"daemon.status","params":{{"a":{}1{}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let lines: Vec<Vec<u8>> = vec![
        deep.into_bytes(),
        deep_params.into_bytes(),
        r#"{"jsonrpc":"2.0","id":6,"method":"daemon.st\u00e4tus"}"#.into(),
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"dæmon.🚀\"}".into(),
        r#"{"jsonrpc":"2.0","id":8,"method":"session.get","params":{"sessionId":"\ud800"}}"#.into(),
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"daemon.status\"}".into(),
        "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"daemon.status\"}\r".into(),
        r#"{"jsonrpc":"2.0","id":11,"method":"session.get","params":{"sessionId":"a\u0000b"}}"#
            .into(),
    ];
    for line in &lines {
        check(&mut conn, line, None);
    }
    // Unicode survives the round trip.
    let title = "héllo 🚀 \u{202e}rtl\u{200b} \u{0} \\ \"q\"";
    let created = conn.request(
        "session.create",
        json!({"cwd": d.workspace.display().to_string(), "title": title}),
    );
    let id = created["result"]["sessionId"].clone();
    let got = conn.request("session.get", json!({"sessionId": id}));
    assert_eq!(got["result"]["title"], json!(title), "{got}");
}

#[test]
fn invalid_utf8_is_a_parse_error_and_the_connection_survives() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    check(
        &mut conn,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}",
        Some(code::PARSE_ERROR),
    );
}

#[test]
fn tool_call_with_wait_returns_the_outcome() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha beta\n").unwrap();
    let mut conn = initialized(&d);
    let created = conn.request(
        "session.create",
        json!({"cwd": d.workspace.display().to_string()}),
    );
    let session = created["result"]["sessionId"].clone();
    let answer = conn.request(
        "tool.call",
        json!({"sessionId": session, "name": "read_file", "wait": true,
               "args": {"absolute_path": d.workspace.join("a.txt")}}),
    );
    let outcome = &answer["result"]["outcome"];
    assert_eq!(outcome["state"], json!("success"), "{answer}");
    assert_eq!(outcome["callId"], answer["result"]["callId"]);
    assert!(outcome.to_string().contains("alpha beta"), "{answer}");

    let no_wait = conn.request(
        "tool.call",
        json!({"sessionId": session, "name": "read_file",
               "args": {"absolute_path": d.workspace.join("a.txt")}}),
    );
    assert!(no_wait["result"]["callId"].is_string(), "{no_wait}");
    assert!(no_wait["result"]["outcome"].is_null(), "{no_wait}");
}

/// A result over 64 KiB is written by the connection in pieces, around
/// the stored event (see `rpc::AnswerSlot`): it must be the same JSON-RPC
/// answer a small one is, whatever the request id looks like, and come in
/// the order of the requests' completion like any other answer.
#[test]
fn a_large_wait_answer_is_a_whole_answer_to_its_own_id() {
    let d = TestDaemon::start();
    let big: String = (0..20_000)
        .map(|i| format!("line {i} with \"quotes\" and \\ and \t\n"))
        .collect();
    assert!(big.len() > 256 * 1024);
    std::fs::write(d.workspace.join("big.txt"), &big).unwrap();
    std::fs::write(d.workspace.join("small.txt"), "small\n").unwrap();
    let mut conn = initialized(&d);
    let created = conn.request(
        "session.create",
        json!({"cwd": d.workspace.display().to_string(), "approvalMode": "yolo"}),
    );
    let session = created["result"]["sessionId"].clone();
    for (id, file) in [
        (json!("big \"one\" \u{1F600}"), "big.txt"),
        (json!(u64::MAX), "big.txt"),
        (json!("small"), "small.txt"),
    ] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tool.call",
            "params": {"sessionId": session, "name": "read_file", "wait": true,
                       "args": {"absolute_path": d.workspace.join(file), "limit": 100_000}}});
        conn.send_line(&request.to_string());
        let answer = loop {
            let message = conn.read_message();
            if message.get("method").is_none() {
                break message;
            }
        };
        assert_eq!(answer["jsonrpc"], json!("2.0"));
        assert_eq!(answer["id"], id, "answer to {id}");
        let object = answer.as_object().unwrap();
        assert_eq!(object.len(), 3, "only jsonrpc, id and result: {object:?}");
        let outcome = &answer["result"]["outcome"];
        assert_eq!(outcome["state"], json!("success"));
        assert_eq!(outcome["callId"], answer["result"]["callId"]);
        let content: String = outcome["result"]["llmContent"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect();
        let want = if file == "big.txt" {
            big.trim_end()
        } else {
            "small"
        };
        assert!(
            content.contains(want),
            "{file}: the whole text comes back; got {} bytes: {}",
            content.len(),
            &content[..content.len().min(300)]
        );
    }
    let after = conn.request("daemon.status", json!({}));
    assert!(after.get("result").is_some(), "{after}");
}

#[test]
fn session_events_arrive_as_session_event_notifications() {
    let d = TestDaemon::start();
    std::fs::write(d.workspace.join("a.txt"), "alpha\n").unwrap();
    let mut conn = initialized(&d);
    let created = conn.request(
        "session.create",
        json!({"cwd": d.workspace.display().to_string()}),
    );
    let session = created["result"]["sessionId"].clone();
    let sub = conn.request("session.subscribe", json!({"sessionId": session}));
    let sub_id = sub["result"].clone();
    assert!(sub_id.is_string() || sub_id.is_number(), "{sub}");
    // Sent raw: notifications interleave with the answer, and none may be
    // skipped.
    conn.send_line(
        &json!({"jsonrpc": "2.0", "id": 1000, "method": "tool.call",
                "params": {"sessionId": session, "name": "read_file",
                           "args": {"absolute_path": d.workspace.join("a.txt")}}})
        .to_string(),
    );
    let mut call_id = Value::Null;
    let mut events: Vec<Value> = Vec::new();
    loop {
        let msg = conn.read_message();
        if msg.get("id").is_some() {
            assert_eq!(msg["id"], json!(1000), "{msg}");
            call_id = msg["result"]["callId"].clone();
            assert!(call_id.is_string(), "{msg}");
        } else {
            assert_eq!(msg["jsonrpc"], json!("2.0"), "{msg}");
            assert_eq!(msg["method"], json!("session.event"), "{msg}");
            assert_eq!(msg["params"]["subscription"], sub_id, "{msg}");
            let event = msg["params"]["result"].clone();
            assert_eq!(event["sessionId"], session, "{event}");
            assert!(event["time"].as_u64().is_some_and(|t| t > 0), "{event}");
            assert_eq!(event["seq"], json!(events.len() + 1), "gapless from 1");
            events.push(event);
        }
        let done = events.iter().any(|e| {
            e["type"] == json!("toolCall")
                && e["callId"] == call_id
                && e["state"] == json!("success")
        });
        if done {
            break;
        }
    }
    assert_eq!(events[0]["type"], json!("sessionCreated"), "{}", events[0]);
}

#[test]
fn a_new_session_starts_with_a_session_created_event() {
    let d = TestDaemon::start();
    let mut conn = initialized(&d);
    let created = conn.request(
        "session.create",
        json!({"cwd": d.workspace.display().to_string(), "title": "t"}),
    );
    let session = created["result"]["sessionId"].clone();
    assert_eq!(created["result"]["lastSeq"], json!(1), "{created}");
    conn.request("session.subscribe", json!({"sessionId": session}));
    let first = conn.read_message();
    let event = &first["params"]["result"];
    assert_eq!(event["seq"], json!(1), "{first}");
    assert_eq!(event["type"], json!("sessionCreated"), "{first}");
    assert_eq!(event["title"], json!("t"), "{first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_stalls_nobody_else() {
    let d = TestDaemon::start();
    // Each successful read carries the file: a few thousand events fill the
    // stalled client's socket and outbound queue many times over.
    let line = format!("{}\n", "z".repeat(199));
    std::fs::write(d.workspace.join("big.txt"), line.repeat(80)).unwrap();
    let path = d.workspace.join("big.txt").display().to_string();
    let busy = d.client().await;
    let session = new_session(&busy, &d.workspace).await;

    let mut stalled = initialized(&d);
    stalled.send_line(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session.subscribe",
                "params": {"sessionId": session}})
        .to_string(),
    );
    // `stalled` never reads again.

    let watcher = d.client().await;
    let mut watching = watcher
        .subscribe_session(session.clone(), None)
        .await
        .unwrap();
    let other = d.client().await;
    let other_session = new_session(&other, &d.workspace).await;

    let calls = (0..2500).map(|_| {
        busy.call_tool(
            session.clone(),
            "read_file".into(),
            Some(json!({"absolute_path": path})),
            None,
        )
    });
    let started = futures::future::join_all(calls).await;
    let last = started.last().unwrap().as_ref().unwrap().call_id.clone();

    // Another client's calls keep completing, on its own session and on
    // the flooded one.
    for target in [&other_session, &session, &other_session] {
        for _ in 0..5 {
            let done = other
                .call_tool(
                    target.clone(),
                    "read_file".into(),
                    Some(json!({"absolute_path": path})),
                    Some(true),
                )
                .await
                .expect("wait:true call");
            assert_eq!(done.outcome.unwrap().state, CallState::Success);
        }
    }
    // The session's other subscriber gets every event, in order.
    let seen = collect_until(&mut watching, |e| is_final(e, &last)).await;
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seen.len() as u64).collect::<Vec<_>>());
    drop(stalled);
}
