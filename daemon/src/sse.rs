//! Server-sent events: the framing shared by the legacy MCP transport
//! (`discovery/mcp/sse.rs`) and the model clients (`model/`).
//!
//! Bytes are buffered until a whole line is present, so a UTF-8 character
//! split across network chunks arrives intact.

/// One server-sent event (only `event:` and `data:` matter here).
#[derive(Debug, Default, PartialEq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Splits a byte stream into events.
#[derive(Default)]
pub struct Parser {
    buffer: Vec<u8>,
    current: Event,
    has_data: bool,
}

impl Parser {
    /// Feeds bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &self.buffer[start..]) {
            let end = start + offset;
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = end + 1;
            self.line(line.trim_end_matches('\r'), &mut events);
        }
        self.buffer.drain(..start);
        events
    }

    /// Ends the stream: an event without its blank line still counts.
    pub fn finish(&mut self) -> Option<Event> {
        if !self.buffer.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
            let mut events = Vec::new();
            self.line(line.trim_end_matches('\r'), &mut events);
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        if line.is_empty() {
            events.extend(self.dispatch());
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.current.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<Event> {
        let ready = self.has_data || !self.current.event.is_empty();
        self.has_data = false;
        if !ready {
            return None;
        }
        let mut event = std::mem::take(&mut self.current);
        if event.event.is_empty() {
            event.event = "message".into();
        }
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_across_chunks() {
        let mut p = Parser::default();
        assert!(p.push(b"event: endpoint\r\ndata: /message?s").is_empty());
        let events = p.push(b"=1\r\n\r\n: comment\n\ndata: {\"a\":1}\ndata: 2\n\n");
        assert_eq!(
            events,
            vec![
                Event {
                    event: "endpoint".into(),
                    data: "/message?s=1".into()
                },
                Event {
                    event: "message".into(),
                    data: "{\"a\":1}\n2".into()
                },
            ]
        );
    }

    #[test]
    fn a_character_split_across_chunks_survives() {
        let text = "data: héllo ✓\n\n".as_bytes();
        let mut p = Parser::default();
        let mut events = Vec::new();
        for byte in text {
            events.extend(p.push(std::slice::from_ref(byte)));
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "héllo ✓");
    }

    #[test]
    fn an_unterminated_last_event_is_kept() {
        let mut p = Parser::default();
        assert!(p.push(b"data: [DONE]").is_empty());
        assert_eq!(p.finish().map(|e| e.data), Some("[DONE]".to_owned()));
        assert_eq!(p.finish(), None);
    }
}
