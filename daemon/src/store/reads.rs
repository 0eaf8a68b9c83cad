//! What the store reads: session records, a session's events since a seq,
//! open calls, history and pending prompts. Every read merges the steps
//! logged but not yet applied (the tail) over what sled and the event
//! files hold.

use serde_json::value::RawValue;

use super::Store;
use super::types::{
    PendingPrompt, SESSION_ID_LEN, SessionRecord, StoreError, check_id, decode_record, prefixed,
    record_key, seq_of, turn_number,
};

/// A stored event's JSON, or why its bytes cannot be read.
pub type EventOrDamage = Result<Box<RawValue>, String>;

impl Store {
    pub fn put_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        check_id(&record.id)?;
        let value = serde_json::to_vec(record).map_err(|source| StoreError::Corrupt {
            key: record.id.clone(),
            source,
        })?;
        self.tree()?.insert(record_key(&record.id), value)?;
        Ok(())
    }

    pub fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        check_id(id)?;
        if let Some(record) = self.tail.record(id) {
            return Ok(Some(record));
        }
        match self.tree()?.get(record_key(id))? {
            Some(bytes) => decode_record(id, &bytes).map(Some),
            None => Ok(None),
        }
    }

    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let mut newer: std::collections::HashMap<String, SessionRecord> = self
            .tail
            .records()
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect();
        let mut out = Vec::new();
        for item in self.tree()?.scan_prefix(b"s") {
            let (key, value) = item?;
            let id = String::from_utf8_lossy(&key[1..]).into_owned();
            match newer.remove(&id) {
                Some(record) => out.push(record),
                None => out.push(decode_record(&id, &value)?),
            }
        }
        out.extend(newer.into_values());
        Ok(out)
    }

    /// How many sessions the store holds, without reading their records.
    pub fn count_sessions(&self) -> Result<usize, StoreError> {
        let mut newer: std::collections::HashSet<String> =
            self.tail.records().into_iter().map(|r| r.id).collect();
        let mut count = 0;
        for key in self.tree()?.scan_prefix(b"s").keys() {
            let key = key?;
            newer.remove(String::from_utf8_lossy(&key[1..]).as_ref());
            count += 1;
        }
        Ok(count + newer.len())
    }

    /// Events with `since < seq <= upto`, in order; a damaged event fails
    /// the read.
    pub fn events(
        &self,
        id: &str,
        since: u64,
        upto: u64,
    ) -> Result<Vec<(u64, Box<RawValue>)>, StoreError> {
        self.events_or_damage(id, since, upto)?
            .into_iter()
            .map(|(seq, event)| {
                event
                    .map(|json| (seq, json))
                    .map_err(|why| StoreError::Corrupt {
                        key: format!("{id}/{seq}"),
                        source: serde::de::Error::custom(why),
                    })
            })
            .collect()
    }

    /// Events with `since < seq <= upto`, in order, each stored event or
    /// why it cannot be read (its bytes were damaged): one damaged event
    /// does not hide the others.
    pub fn events_or_damage(
        &self,
        id: &str,
        since: u64,
        upto: u64,
    ) -> Result<Vec<(u64, EventOrDamage)>, StoreError> {
        check_id(id)?;
        let mut out = Vec::new();
        if since >= upto {
            return Ok(out);
        }
        // The tail first: an append leaves it only once it is stored.
        let unapplied = self.tail.events(id, since, upto);
        self.files.read(id, since, upto, |seq, value| {
            let event = match self.event_json(id, seq, value) {
                Ok(json) => Ok(json),
                Err(StoreError::Corrupt { source, .. }) => Err(format!(
                    "event {seq} of the session's event file is damaged: {source}"
                )),
                Err(e) => return Err(e),
            };
            out.push((seq, event));
            Ok(())
        })?;
        for (seq, why) in self.files.damaged(id, since, upto)? {
            if let Err(at) = out.binary_search_by_key(&seq, |(s, _)| *s) {
                out.insert(at, (seq, Err(why)));
            }
        }
        for event in unapplied {
            match out.binary_search_by_key(&event.seq, |(seq, _)| *seq) {
                Err(at) => out.insert(at, (event.seq, Ok(event.json.clone()))),
                // The log's copy is whole.
                Ok(at) => out[at].1 = Ok(event.json.clone()),
            }
        }
        Ok(out)
    }

    /// One stored event's JSON: `value` itself, or the blob it marks.
    fn event_json(&self, id: &str, seq: u64, value: &[u8]) -> Result<Box<RawValue>, StoreError> {
        let bytes = self
            .blobs
            .resolve(id, value)
            .map_err(|e| StoreError::Io(format!("blob file of session {id}, event {seq}: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| StoreError::Corrupt {
            key: format!("{id}/{seq}"),
            source: serde::de::Error::custom("event is not UTF-8"),
        })?;
        RawValue::from_string(text).map_err(|source| StoreError::Corrupt {
            key: format!("{id}/{seq}"),
            source,
        })
    }

    /// When the event `seq` was recorded (its `time`), if it is stored.
    pub fn event_time(&self, id: &str, seq: u64) -> Result<Option<u64>, StoreError> {
        #[derive(serde::Deserialize)]
        struct Timed {
            time: u64,
        }
        if seq == 0 {
            return Ok(None);
        }
        Ok(self
            .events(id, seq - 1, seq)?
            .first()
            .and_then(|(_, json)| serde_json::from_str::<Timed>(json.get()).ok())
            .map(|t| t.time))
    }

    /// The seq of the session's newest event, 0 when it has none.
    pub fn last_seq(&self, id: &str) -> Result<u64, StoreError> {
        check_id(id)?;
        let unapplied = self.tail.last_seq(id).unwrap_or(0);
        Ok(self.files.last_seq(id)?.max(unapplied))
    }

    /// Calls of the session that had not finished when last written.
    pub fn open_calls(&self, id: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        check_id(id)?;
        let prefix = prefixed(b'o', id);
        let mut out = Vec::new();
        for item in self.tree()?.scan_prefix(&prefix) {
            let (key, value) = item?;
            let call_id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            out.push((call_id, value.to_vec()));
        }
        Ok(out)
    }

    /// The conversation with the model, in order.
    pub fn history<T: serde::de::DeserializeOwned>(&self, id: &str) -> Result<Vec<T>, StoreError> {
        check_id(id)?;
        let mut out = Vec::new();
        for item in self.tree()?.scan_prefix(prefixed(b'h', id)) {
            let (key, value) = item?;
            let content = serde_json::from_slice(&value).map_err(|source| StoreError::Corrupt {
                key: format!("{id}/history/{}", seq_of(&key)),
                source,
            })?;
            out.push(content);
        }
        Ok(out)
    }

    /// Prompts that had not finished when last written, in turn order.
    pub fn pending_prompts(&self, id: &str) -> Result<Vec<PendingPrompt>, StoreError> {
        check_id(id)?;
        let mut out: Vec<PendingPrompt> = Vec::new();
        for item in self.tree()?.scan_prefix(prefixed(b'q', id)) {
            let (key, value) = item?;
            let prompt = serde_json::from_slice(&value).map_err(|source| StoreError::Corrupt {
                key: String::from_utf8_lossy(&key).into_owned(),
                source,
            })?;
            out.push(prompt);
        }
        // Turn ids are `turn-<seq>`: order by the number, not the text.
        out.sort_by_key(|p| turn_number(&p.turn_id));
        Ok(out)
    }

    /// Sessions with prompts that had not finished.
    pub fn sessions_with_pending_prompts(&self) -> Result<Vec<String>, StoreError> {
        let mut out: Vec<String> = Vec::new();
        for key in self.tree()?.scan_prefix(b"q").keys() {
            let key = key?;
            let id = String::from_utf8_lossy(&key[1..1 + SESSION_ID_LEN.min(key.len() - 1)])
                .into_owned();
            if out.last() != Some(&id) {
                out.push(id);
            }
        }
        Ok(out)
    }
}
