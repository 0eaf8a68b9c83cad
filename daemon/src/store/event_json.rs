//! An event's JSON, with its large texts escaped apart.
//!
//! serde_json escapes a string a byte at a time, writing every run between
//! two escapes separately: for the 8 MB of source code in a large
//! `read_many_files` result that is about 6 ms of CPU, on the path between
//! a finished call and its answer. Here the texts of a tool result's model
//! content of [`LARGE`] bytes and more are moved out of the event, the rest
//! is serialized by serde_json with a placeholder in each text's place,
//! and each text is escaped eight bytes at a time (on two threads when it
//! is long) into the placeholder's place. serde_json then checks the whole
//! (`RawValue::from_string`), which costs less than its escaping did.
//!
//! The output is byte for byte what `serde_json::to_string` gives.

use std::sync::OnceLock;

use geminid_protocol::event::{EventPayload, SessionEvent};
use geminid_protocol::tool::ContentPart;
use serde_json::value::RawValue;

/// Texts at least this long are escaped apart.
pub const LARGE: usize = 64 * 1024;
/// Texts at least this long are escaped on two threads.
const SPLIT: usize = 1024 * 1024;

/// The event as JSON.
pub fn to_json(mut event: SessionEvent) -> serde_json::Result<Box<RawValue>> {
    let placeholders = Placeholders::new();
    let mut texts = Vec::new();
    for text in large_texts(&mut event) {
        let placeholder = placeholders.get(texts.len());
        texts.push(std::mem::replace(text, placeholder));
    }
    if texts.is_empty() {
        return serde_json::value::to_raw_value(&event);
    }
    let json = serde_json::to_string(&event)?;
    let Some(at) = placeholders.find_each(&json, texts.len()) else {
        // Some string of the event holds a placeholder's text: put the
        // texts back and let serde_json do it all.
        for (text, original) in placeholder_texts(&mut event, &placeholders).zip(texts) {
            *text = original;
        }
        return serde_json::value::to_raw_value(&event);
    };
    let escaped_len: usize = texts.iter().map(|t| t.len() + t.len() / 8 + 2).sum();
    let mut out = Vec::with_capacity(json.len() + escaped_len);
    let mut from = 0;
    for ((start, end), text) in at.into_iter().zip(&texts) {
        out.extend_from_slice(&json.as_bytes()[from..start]);
        escape_into(text, &mut out);
        from = end;
    }
    out.extend_from_slice(&json.as_bytes()[from..]);
    // Only ASCII was inserted between whole UTF-8 strings.
    let out = String::from_utf8(out).map_err(serde::ser::Error::custom)?;
    RawValue::from_string(out)
}

/// The model-content texts of a tool result of [`LARGE`] bytes and more.
fn large_texts(event: &mut SessionEvent) -> impl Iterator<Item = &mut String> {
    content_texts(event).filter(|text| text.len() >= LARGE)
}

/// The texts that are placeholders, in the order they were given.
fn placeholder_texts<'a>(
    event: &'a mut SessionEvent,
    placeholders: &'a Placeholders,
) -> impl Iterator<Item = &'a mut String> {
    content_texts(event).filter(|text| placeholders.is_one(text))
}

fn content_texts(event: &mut SessionEvent) -> impl Iterator<Item = &mut String> {
    let parts = match &mut event.payload {
        EventPayload::ToolCall(call) => call.result.as_mut().map(|r| &mut r.llm_content),
        _ => None,
    };
    parts.into_iter().flatten().filter_map(|part| match part {
        ContentPart::Text { text } => Some(text),
        ContentPart::InlineData { .. } => None,
    })
}

/// Strings no text is expected to hold: a NUL, a nonce drawn once per
/// daemon, the index, a NUL. Found in the JSON as their escaped, quoted
/// form; a text that does hold one is still handled (see `to_json`).
struct Placeholders {
    nonce: u64,
}

impl Placeholders {
    fn new() -> Placeholders {
        static NONCE: OnceLock<u64> = OnceLock::new();
        let nonce = *NONCE.get_or_init(|| {
            use std::hash::{BuildHasher, RandomState};
            RandomState::new().hash_one(std::process::id())
        });
        Placeholders { nonce }
    }

    fn get(&self, index: usize) -> String {
        format!("\0geminid-text-{:016x}-{index}\0", self.nonce)
    }

    fn is_one(&self, text: &str) -> bool {
        text.strip_prefix(&format!("\0geminid-text-{:016x}-", self.nonce))
            .and_then(|rest| rest.strip_suffix('\0'))
            .is_some_and(|index| index.parse::<usize>().is_ok())
    }

    /// Where each of the first `count` placeholders sits in `json`, quotes
    /// included, in order; None unless each occurs exactly once.
    fn find_each(&self, json: &str, count: usize) -> Option<Vec<(usize, usize)>> {
        let mut at = Vec::with_capacity(count);
        for index in 0..count {
            let quoted = serde_json::to_string(&self.get(index)).ok()?;
            let mut found = json.match_indices(quoted.as_str());
            let (start, _) = found.next()?;
            if found.next().is_some() {
                return None;
            }
            at.push((start, start + quoted.len()));
        }
        // In the order the texts were taken, which is serialization order.
        at.windows(2).all(|w| w[0].1 <= w[1].0).then_some(at)
    }
}

/// Appends `text` as a quoted JSON string, escaped as serde_json does.
fn escape_into(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    if text.len() < SPLIT {
        escape_contents(text.as_bytes(), out);
    } else {
        let mut middle = text.len() / 2;
        while !text.is_char_boundary(middle) {
            middle += 1;
        }
        let (first, second) = text.as_bytes().split_at(middle);
        let tail = std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let mut tail = Vec::with_capacity(second.len() + second.len() / 8);
                escape_contents(second, &mut tail);
                tail
            });
            escape_contents(first, out);
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        out.extend_from_slice(&tail);
    }
    out.push(b'"');
}

/// Appends the escaped bytes of a string (valid UTF-8, so a split at a
/// character boundary escapes the same in two halves).
fn escape_contents(bytes: &[u8], out: &mut Vec<u8>) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
            // A high bit where a byte is < 0x20, '"' or '\\'.
            let control = w.wrapping_sub(ONES * 0x20) & !w;
            let quote =
                (w ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES) & !(w ^ (ONES * u64::from(b'"')));
            let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES)
                & !(w ^ (ONES * u64::from(b'\\')));
            let hits = (control | quote | backslash) & HIGH;
            if hits == 0 {
                i += 8;
                continue;
            }
            // The first hit is exact; the ones after it may be borrows.
            i += (hits.trailing_zeros() / 8) as usize;
        }
        let byte = bytes[i];
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => {
                out.extend_from_slice(&bytes[run..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0xf)]);
                i += 1;
                run = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escape);
        i += 1;
        run = i;
    }
    out.extend_from_slice(&bytes[run..]);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
#[path = "event_json_tests.rs"]
mod tests;
