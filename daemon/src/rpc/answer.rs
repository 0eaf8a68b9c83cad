//! Answers too large to copy: a handler whose result embeds a large stored
//! event (a `wait: true` tool call) leaves it in the request's
//! [`AnswerSlot`], split around the event, and the connection writes the
//! pieces itself instead of jsonrpsee's answer.
//!
//! jsonrpsee serializes a result into a fresh string and then parses that
//! string again to check it (`RawValue::from_string`): for an 8 MB
//! `read_many_files` result that is a copy and a validation of 8 MB, about
//! 4.5 ms of an answer that is otherwise ready.

use std::sync::{Arc, Mutex};

use geminid_protocol::tool::SharedJson;

/// Shared JSON shorter than this goes the ordinary way: copying it costs
/// less than it is worth keeping two paths apart.
pub const SPLIT_MIN: usize = 64 * 1024;

/// A result written as `head`, the shared JSON, then `tail`.
#[derive(Debug)]
pub struct SplitResult {
    pub head: String,
    pub shared: SharedJson,
    pub tail: &'static str,
}

/// Where a handler leaves a [`SplitResult`]; the connection puts one in
/// each request's `Extensions`. A result left here replaces what the
/// handler returns, which is then dropped unsent.
#[derive(Clone, Debug, Default)]
pub struct AnswerSlot(Arc<Mutex<Option<SplitResult>>>);

impl AnswerSlot {
    /// Answers with `result` instead of the handler's return value.
    pub fn put(&self, result: SplitResult) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    }

    /// The result left here, if any.
    pub fn take(&self) -> Option<SplitResult> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
