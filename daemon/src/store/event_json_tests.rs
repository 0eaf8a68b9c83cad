use super::*;
use geminid_protocol::tool::{CallState, ToolCallResult, ToolCallSnapshot, ToolDisplay};

fn event_with(parts: Vec<ContentPart>) -> SessionEvent {
    SessionEvent {
        session_id: "s-1".into(),
        seq: 9,
        time: 1_700_000_000_000,
        payload: EventPayload::ToolCall(Box::new(ToolCallSnapshot {
            call_id: "call-3".into(),
            name: "read_many_files".into(),
            args: serde_json::json!({"paths": ["a\"b", "\u{1F600}"]}),
            state: CallState::Success,
            description: Some("Read 2 files".into()),
            locations: Vec::new(),
            confirmation: None,
            output_delta: None,
            result: Some(ToolCallResult {
                llm_content: parts,
                display: ToolDisplay::Text {
                    text: "small \"display\"".into(),
                },
                summary: None,
                structured_content: None,
            }),
            error: None,
            decided_by: None,
        })),
    }
}

fn text(text: impl Into<String>) -> ContentPart {
    ContentPart::Text { text: text.into() }
}

/// Every kind of byte serde_json treats apart, at every offset in a word.
fn awkward(len: usize) -> String {
    let pieces = [
        "plain ascii ",
        "\"",
        "\\",
        "\n",
        "\r",
        "\t",
        "\u{8}",
        "\u{c}",
        "\u{0}",
        "\u{1f}",
        "\u{7f}",
        "/",
        "é",
        "\u{1F600}",
        "\u{2028}",
        "x",
    ];
    let mut out = String::new();
    let mut i = 0;
    while out.len() < len {
        out.push_str(pieces[i % pieces.len()]);
        out.push_str(&"y".repeat(i % 11));
        i += 1;
    }
    out
}

fn assert_escapes_as_serde_json(s: &str) {
    let mut out = Vec::new();
    escape_into(s, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        serde_json::to_string(s).unwrap()
    );
}

fn serde_text(event: &SessionEvent) -> String {
    serde_json::to_string(event).unwrap()
}

#[test]
fn escaping_matches_serde_json_for_every_byte_at_every_offset() {
    let mut all: String = (0u8..=0x7f).map(char::from).collect();
    all.push_str("é\u{1F600}\u{2028}");
    for start in 0..all.len() {
        if !all.is_char_boundary(start) {
            continue;
        }
        for pad in 0..9 {
            assert_escapes_as_serde_json(&format!("{}{}", "p".repeat(pad), &all[start..]));
        }
    }
}

#[test]
fn a_long_text_split_over_two_threads_escapes_as_one() {
    for len in [SPLIT, SPLIT + 1, SPLIT + 3, 3 * SPLIT + 7] {
        assert_escapes_as_serde_json(&awkward(len));
    }
}

#[test]
fn an_event_with_large_texts_serializes_as_serde_json_does() {
    let event = event_with(vec![
        text(awkward(LARGE)),
        text("short \"one\"\n"),
        ContentPart::InlineData {
            mime_type: "image/png".into(),
            data: "AAAA".repeat(LARGE / 4 + 1),
        },
        text(awkward(SPLIT + 5)),
    ]);
    let want = serde_text(&event);
    assert_eq!(to_json(event).unwrap().get(), want);
}

#[test]
fn events_without_large_texts_serialize_as_serde_json_does() {
    let event = event_with(vec![text(awkward(LARGE - 1))]);
    let want = serde_text(&event);
    assert_eq!(to_json(event).unwrap().get(), want);
}

#[test]
fn a_text_holding_a_placeholder_falls_back_to_serde_json() {
    let placeholders = Placeholders::new();
    for inside in [0, 1] {
        let trap = format!("{} and more", placeholders.get(inside));
        let event = event_with(vec![
            text(format!("{}{trap}", awkward(LARGE))),
            text(awkward(LARGE + 1)),
            text(trap),
        ]);
        let want = serde_text(&event);
        assert_eq!(to_json(event).unwrap().get(), want, "placeholder {inside}");
    }
}
