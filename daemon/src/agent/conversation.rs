//! The conversation with the model: the history as stored, loaded at the
//! first turn that needs it and extended entry by entry. What is sent to
//! the model is derived from it (`responses::normalized`); the stored
//! history itself is only ever appended to. A rewind (`session.restore`)
//! is a cut: the entries `[from, to)` are no longer sent (nor paged), and
//! later entries follow the ones before the cut.

use super::context::Calibration;
use crate::model::{Content, FunctionCall, Role};
use crate::store::{Store, StoreError};

/// At most this many history entries per `session.history` page.
pub const MAX_HISTORY_PAGE: u64 = 100;

/// One session's history, loaded on first use.
#[derive(Default)]
pub struct Conversation {
    entries: Option<Vec<Content>>,
    /// How the provider's counts compare with our estimates (learned
    /// from each request; not kept across restarts).
    pub calibration: Calibration,
    /// Ranges of stored entries a rewind took back (the session record's
    /// `rewound`).
    pub cuts: Vec<(u64, u64)>,
}

impl Conversation {
    /// The history, read from the store the first time.
    pub fn entries(&mut self, store: &Store, id: &str) -> Result<&mut Vec<Content>, StoreError> {
        if self.entries.is_none() {
            self.entries = Some(store.history(id)?);
        }
        Ok(self.entries.get_or_insert_with(Vec::new))
    }

    /// A conversation not loaded yet, with the rewinds the record keeps.
    pub fn with_cuts(cuts: Vec<(u64, u64)>) -> Self {
        Conversation {
            cuts,
            ..Conversation::default()
        }
    }

    /// Whether stored entry `index` was taken back by a rewind.
    fn is_cut(&self, index: u64) -> bool {
        self.cuts
            .iter()
            .any(|(from, to)| (*from..*to).contains(&index))
    }

    /// The history as it goes on: every stored entry outside the cuts.
    pub fn visible(&mut self, store: &Store, id: &str) -> Result<Vec<Content>, StoreError> {
        let cuts = std::mem::take(&mut self.cuts);
        let entries = self.entries(store, id);
        let out = entries.map(|entries| {
            entries
                .iter()
                .enumerate()
                .filter(|(i, _)| !cuts.iter().any(|(f, t)| (*f..*t).contains(&(*i as u64))))
                .map(|(_, c)| c.clone())
                .collect()
        });
        self.cuts = cuts;
        out
    }

    /// How many stored entries there are.
    pub fn stored_len(&mut self, store: &Store, id: &str) -> Result<u64, StoreError> {
        Ok(self.entries(store, id)?.len() as u64)
    }

    /// How many visible entries lie before stored entry `index`.
    pub fn visible_before(&self, index: u64) -> u64 {
        (0..index).filter(|i| !self.is_cut(*i)).count() as u64
    }

    /// Appends `content`; returns what the store must write: its index and
    /// JSON.
    pub fn append(
        &mut self,
        store: &Store,
        id: &str,
        content: Content,
    ) -> Result<(u64, String), AppendError> {
        let json = serde_json::to_string(&content).map_err(AppendError::Encode)?;
        let entries = self.entries(store, id).map_err(AppendError::Store)?;
        let index = entries.len() as u64;
        entries.push(content);
        Ok((index, json))
    }

    /// Function calls the history ends with that no response follows (the
    /// daemon stopped before they finished).
    pub fn unanswered_calls(
        &mut self,
        store: &Store,
        id: &str,
    ) -> Result<Vec<FunctionCall>, StoreError> {
        Ok(match self.visible(store, id)?.last() {
            Some(last) if last.role == Role::Model => last.function_calls().cloned().collect(),
            _ => Vec::new(),
        })
    }

    /// `session.history`: the total and the entries in `[offset, offset+limit)`.
    pub fn page(
        &mut self,
        store: &Store,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> Result<(u64, Vec<Content>), StoreError> {
        let entries = self.visible(store, id)?;
        let total = entries.len() as u64;
        let start = offset.min(total) as usize;
        let end = offset
            .saturating_add(limit.min(MAX_HISTORY_PAGE))
            .min(total) as usize;
        Ok((total, entries[start..end].to_vec()))
    }
}

/// Why an entry could not be appended.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("history entry failed to serialize: {0}")]
    Encode(serde_json::Error),
    #[error("history unreadable: {0}")]
    Store(StoreError),
}

#[cfg(test)]
mod tests {
    use super::Conversation;

    #[test]
    fn cuts_take_entries_out_of_what_goes_on_even_when_they_overlap() {
        // A rewind of [2, 4), later one of [3, 6) reaching back further.
        let conversation = Conversation::with_cuts(vec![(2, 4), (3, 6)]);
        assert_eq!(conversation.visible_before(2), 2);
        assert_eq!(conversation.visible_before(5), 2);
        assert_eq!(conversation.visible_before(8), 4);
        assert!(conversation.is_cut(5) && !conversation.is_cut(6));
        assert_eq!(Conversation::default().visible_before(3), 3);
    }
}
