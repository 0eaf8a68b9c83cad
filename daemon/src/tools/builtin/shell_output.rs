//! Output handling for `run_shell_command`: turning raw pipe bytes into clean
//! text, and keeping a bounded head and tail of it for the model while the
//! complete text goes to a spill file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// CSI sequences (colours, cursor moves), OSC sequences (titles, links) and
/// the two-byte escapes. What terminals act on, the model should not see.
static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[@-Z\\-_]",
    )
    .ok()
});

/// Removes ANSI escape sequences from `text`.
pub fn strip_ansi(text: &str) -> String {
    match ANSI.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

/// Turns a byte stream into ANSI-free text. A multi-byte character or an
/// escape sequence may be split across reads, so incomplete tails are held
/// back until the next chunk (or the end) completes them.
#[derive(Default)]
pub struct Decoder {
    pending: Vec<u8>,
}

/// An escape sequence longer than this is not one we would strip anyway.
const MAX_HELD_ESCAPE: usize = 256;

impl Decoder {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // error_len() None: the input ends inside a character.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let mut cut = valid;
        if let Some(esc) = self.pending[..valid].iter().rposition(|b| *b == 0x1b)
            && valid - esc < MAX_HELD_ESCAPE
            && !escape_complete(&self.pending[esc..valid])
        {
            cut = esc;
        }
        let ready: Vec<u8> = self.pending.drain(..cut).collect();
        strip_ansi(&String::from_utf8_lossy(&ready))
    }

    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        strip_ansi(&String::from_utf8_lossy(&rest))
    }
}

/// Whether the bytes starting at an ESC already hold a whole sequence.
fn escape_complete(seq: &[u8]) -> bool {
    match seq.get(1) {
        None => false,
        Some(b'[') => seq[2..].iter().any(|b| (0x40..=0x7e).contains(b)),
        Some(b']') | Some(b'P') | Some(b'X') | Some(b'^') | Some(b'_') => {
            seq.contains(&0x07) || seq[2..].windows(2).any(|w| w == b"\x1b\\")
        }
        Some(_) => true,
    }
}

/// Where the long outputs of `session` are saved, below the daemon's spill
/// directory (`session.delete` removes it).
pub fn session_spill_dir(base: &Path, session: &str) -> PathBuf {
    base.join(session)
}

/// Keeps the whole output while it is small; past `cap` bytes keeps only a
/// head and a tail in memory and writes the output to a spill file, up to
/// `max_stored` bytes.
pub struct Collector {
    cap: usize,
    spill_dir: PathBuf,
    max_stored: usize,
    /// Bytes written to the spill file.
    stored: usize,
    head: String,
    tail: String,
    total: usize,
    spill: Option<(PathBuf, BufWriter<File>)>,
    spill_error: Option<String>,
    overflowed: bool,
}

/// The collected output, ready for the result.
pub struct Collected {
    pub text: String,
    pub total_bytes: usize,
    pub spill_path: Option<PathBuf>,
    pub spill_error: Option<String>,
    /// Bytes in the spill file: less than `total_bytes` when the output
    /// went past the cap on what a call may store.
    pub stored_bytes: usize,
}

impl Collector {
    pub fn new(cap: usize, spill_dir: &Path, max_stored: usize) -> Self {
        Collector {
            cap: cap.max(2),
            spill_dir: spill_dir.to_path_buf(),
            max_stored,
            stored: 0,
            head: String::new(),
            tail: String::new(),
            total: 0,
            spill: None,
            spill_error: None,
            overflowed: false,
        }
    }

    pub fn push(&mut self, text: &str) {
        self.total += text.len();
        if !self.overflowed {
            self.head.push_str(text);
            if self.total > self.cap {
                self.overflowed = true;
                self.start_spill();
            }
            return;
        }
        self.store(text);
        self.tail.push_str(text);
        // Trim the tail only once it is twice its budget, so the copying
        // stays linear in the output size.
        let budget = self.cap / 2;
        if self.tail.len() > budget * 2 {
            let start = floor_boundary(&self.tail, self.tail.len() - budget);
            self.tail.drain(..start);
        }
    }

    /// Appends to the spill file what fits under `max_stored`.
    fn store(&mut self, text: &str) {
        let room = self.max_stored.saturating_sub(self.stored);
        let part = &text[..floor_boundary(text, room)];
        if part.is_empty() {
            return;
        }
        if let Some((_, w)) = self.spill.as_mut() {
            match w.write_all(part.as_bytes()) {
                Ok(()) => self.stored += part.len(),
                Err(e) => {
                    self.spill_error = Some(e.to_string());
                    self.spill = None;
                }
            }
        }
    }

    /// Called the first time the output grows past the cap: writes what is
    /// held so far and splits it into head and tail.
    fn start_spill(&mut self) {
        let held = std::mem::take(&mut self.head);
        let opened = std::fs::create_dir_all(&self.spill_dir).and_then(|_| {
            tempfile::Builder::new()
                .prefix("shell-output-")
                .suffix(".txt")
                .tempfile_in(&self.spill_dir)?
                .keep()
                .map_err(|e| e.error)
        });
        match opened {
            Ok((file, path)) => {
                self.spill = Some((path, BufWriter::new(file)));
                self.store(&held);
            }
            Err(e) => self.spill_error = Some(e.to_string()),
        }
        let head_len = floor_boundary(&held, self.cap / 2);
        self.head = held[..head_len].to_owned();
        self.tail = held[head_len..].to_owned();
    }

    pub fn finish(mut self) -> Collected {
        let mut spill_path = None;
        if let Some((path, mut w)) = self.spill.take() {
            match w.flush() {
                Ok(()) => spill_path = Some(path),
                Err(e) => self.spill_error = Some(e.to_string()),
            }
        }
        if !self.overflowed {
            return Collected {
                text: self.head,
                total_bytes: self.total,
                spill_path,
                spill_error: self.spill_error,
                stored_bytes: self.stored,
            };
        }
        let budget = self.cap / 2;
        let start = floor_boundary(&self.tail, self.tail.len().saturating_sub(budget));
        let tail = &self.tail[start..];
        let dropped = self.total - self.head.len() - tail.len();
        let text = format!("{}\n[... {dropped} bytes truncated ...]\n{tail}", self.head);
        Collected {
            text,
            total_bytes: self.total,
            spill_path,
            spill_error: self.spill_error,
            stored_bytes: self.stored,
        }
    }
}

/// The largest char boundary of `s` not above `i`.
pub fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_split_across_reads() {
        let mut d = Decoder::default();
        let mut out = d.push(b"\x1b[31mred\x1b[");
        out += &d.push(b"0m plain \xc3");
        out += &d.push(b"\xa9 \x1b]0;title\x07end");
        out += &d.finish();
        assert_eq!(out, "red plain \u{e9} end");
    }

    #[test]
    fn small_output_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Collector::new(100, dir.path(), usize::MAX);
        c.push("hello ");
        c.push("world");
        let done = c.finish();
        assert_eq!(done.text, "hello world");
        assert!(done.spill_path.is_none());
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_spills() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Collector::new(100, dir.path(), usize::MAX);
        let mut full = String::new();
        for i in 0..200 {
            let line = format!("line {i}\n");
            full.push_str(&line);
            c.push(&line);
        }
        let done = c.finish();
        assert!(done.text.starts_with("line 0\n"));
        assert!(done.text.ends_with("line 199\n"));
        assert!(done.text.contains("bytes truncated ...]"));
        assert!(done.text.len() < 200);
        let spilled = std::fs::read_to_string(done.spill_path.unwrap()).unwrap();
        assert_eq!(spilled, full);
    }

    #[test]
    fn the_spill_file_stops_at_the_cap_and_the_tail_still_comes() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Collector::new(100, dir.path(), 1000);
        let mut full = String::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            full.push_str(&line);
            c.push(&line);
        }
        let done = c.finish();
        assert!(
            done.text.ends_with("line 999\n"),
            "the tail is the real end"
        );
        assert_eq!(done.total_bytes, full.len());
        assert_eq!(done.stored_bytes, 1000);
        let spilled = std::fs::read_to_string(done.spill_path.unwrap()).unwrap();
        assert_eq!(spilled, full[..1000]);
    }
}
