//! What the protocol fuzzer sends: proptest strategies for hostile lines
//! and for batches of them on one connection.

use proptest::prelude::*;
use serde_json::{Value, json};

/// Every method, with the params it takes (`daemon.shutdown` is left out:
/// it is supposed to stop the daemon; so is `mcp.probe`: it runs the
/// command it is given).
const METHODS: &[(&str, &[&str])] = &[
    ("daemon.initialize", &["client"]),
    ("daemon.status", &[]),
    (
        "session.create",
        &["cwd", "approvalMode", "title", "interactive"],
    ),
    ("session.list", &[]),
    ("session.get", &["sessionId"]),
    ("session.delete", &["sessionId"]),
    ("session.cancel", &["sessionId"]),
    ("session.setApprovalMode", &["sessionId", "approvalMode"]),
    ("session.subscribe", &["sessionId", "sinceSeq"]),
    ("session.unsubscribe", &["subscription"]),
    ("tool.list", &["sessionId"]),
    ("tool.call", &["sessionId", "name", "args", "wait"]),
    ("tool.cancel", &["sessionId", "callId"]),
    (
        "tool.confirm",
        &["sessionId", "callId", "outcome", "modifiedArgs"],
    ),
    (
        "policy.check",
        &["sessionId", "cwd", "toolName", "args", "approvalMode"],
    ),
    ("policy.list", &[]),
    ("mcp.list", &[]),
    ("mcp.restart", &["name"]),
    ("tool.rediscover", &["sessionId"]),
];

/// Byte sequences that break naive decoders.
const NASTY: &[&[u8]] = &[
    b"\\ud800",
    b"\\udfff",
    b"\\udbff\\udfff",
    b"\\u0000",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xff",
    b"\xc3",
    b"\r",
    b"\t",
    b"\x1b[2J",
    "\u{202e}".as_bytes(),
    "\u{200b}".as_bytes(),
    "🚀".as_bytes(),
    b"\\",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"1e999999",
    b"-0",
    b"null",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A request for a real method whose params have random (mostly wrong) types.
fn wrong_params() -> impl Strategy<Value = Vec<u8>> {
    // Mostly valid ids, so that the params are what gets checked.
    let id = prop_oneof![
        4 => any::<u32>().prop_map(|n| json!(n)),
        1 => ".{0,8}".prop_map(Value::String),
        1 => json_value(),
    ];
    (
        0..METHODS.len(),
        id,
        prop::collection::vec(json_value(), 6),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(m, id, values, as_array)| {
            let (method, fields) = METHODS[m];
            let params = if as_array {
                Value::Array(values)
            } else {
                let map = fields.iter().zip(values).map(|(f, v)| (f.to_string(), v));
                Value::Object(map.collect())
            };
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                .to_string()
                .into_bytes()
        })
}

/// A valid request with bytes flipped, dropped, or nasty sequences spliced in.
fn mutated(session: String) -> impl Strategy<Value = Vec<u8>> {
    let templates = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "daemon.status", "params": {}}),
        json!({"jsonrpc": "2.0", "id": "x", "method": "session.get", "params": {"sessionId": session}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tool.call",
               "params": {"sessionId": session, "name": "glob", "args": {"pattern": "*.txt"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "policy.check",
               "params": {"toolName": "run_shell_command", "args": {"command": "ls"}}}),
    ];
    let edits = prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            0..4u8,
            0..NASTY.len(),
            any::<u8>(),
        ),
        1..6,
    );
    (prop::sample::select(templates), edits).prop_map(|(t, edits)| {
        let mut bytes = t.to_string().into_bytes();
        for (at, kind, nasty, byte) in edits {
            let i = at.index(bytes.len() + 1);
            match kind {
                0 => bytes
                    .splice(i..i, NASTY[nasty].iter().copied())
                    .for_each(drop),
                1 if i < bytes.len() => drop(bytes.remove(i)),
                2 if i < bytes.len() => bytes[i] = byte,
                _ => bytes.insert(i, byte),
            }
        }
        bytes
    })
}

/// One input line (no newline inside; the framing adds it).
fn line(session: String) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..200),
        5 => wrong_params(),
        5 => mutated(session),
        1 => (1usize..2000).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes()),
        1 => prop::collection::vec(0..NASTY.len(), 1..12)
            .prop_map(|parts| parts.iter().flat_map(|&p| NASTY[p].iter().copied()).collect()),
    ]
    .prop_map(|mut bytes| {
        bytes.retain(|b| *b != b'\n');
        bytes
    })
}

/// How a batch's connection ends.
#[derive(Debug, Clone)]
pub enum End {
    /// Send a marker request and read every answer up to its.
    Answered,
    /// Write half a line and close without reading anything.
    HalfLine(Vec<u8>),
    /// Close without reading.
    Abrupt,
}

pub fn batch(session: String) -> impl Strategy<Value = (bool, Vec<Vec<u8>>, End)> {
    let end = prop_oneof![
        6 => Just(End::Answered),
        2 => prop::collection::vec(any::<u8>(), 1..64).prop_map(|mut b| {
            b.retain(|c| *c != b'\n');
            End::HalfLine(b)
        }),
        1 => Just(End::Abrupt),
    ];
    (
        prop::bool::weighted(0.8),
        prop::collection::vec(line(session), 1..48),
        end,
    )
}
