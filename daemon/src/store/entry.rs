//! The entry codec of event files: an entry is `seq (u64 BE) | length
//! (u64 BE) | bytes`; a run of them is what `event_files.rs` appends in one
//! write, and what an event block of an older store held.

use super::types::{StoreError, be_u64};

pub(super) const HEADER: usize = 8 + 8;

/// Encodes `entries` (in seq order) as a run of entries.
pub(super) fn encode<'a>(entries: impl IntoIterator<Item = (u64, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (seq, bytes) in entries {
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// The entries of a block, in order. A block that does not parse is
/// reported as corrupt, under `what` (its session and first seq).
pub(super) fn entries<'a>(
    block: &'a [u8],
    what: impl Fn() -> String + 'a,
) -> impl Iterator<Item = Result<(u64, &'a [u8]), StoreError>> + 'a {
    let mut rest = block;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some((seq, len)) = rest
            .get(..HEADER)
            .map(|h| (be_u64(&h[..8]), be_u64(&h[8..])))
        else {
            rest = &[];
            return Some(Err(corrupt(what(), "an event block ends inside a header")));
        };
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| len.checked_add(HEADER));
        let Some(bytes) = end.and_then(|end| rest.get(HEADER..end)) else {
            rest = &[];
            return Some(Err(corrupt(what(), "an event block ends inside an event")));
        };
        rest = &rest[HEADER + bytes.len()..];
        Some(Ok((seq, bytes)))
    })
}

pub(super) fn corrupt(key: String, why: &'static str) -> StoreError {
    StoreError::Corrupt {
        key,
        source: serde::de::Error::custom(why),
    }
}
