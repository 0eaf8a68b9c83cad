//! NDJSON framing for the server side: one frame per line, where a bad line
//! is a frame too (so the connection can answer it and go on) instead of an
//! error that ends the stream.

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A line of UTF-8 text, without its `\n` (or `\r\n`).
    Line(String),
    /// A line longer than the limit; it was discarded.
    TooLong,
    /// A line that is not UTF-8.
    NotUtf8,
}

/// Splits input into lines of at most `max` bytes.
pub struct LineFramer {
    max: usize,
    /// Inside an over-long line: drop bytes until its newline.
    discarding: bool,
    /// Where to resume looking for a newline.
    scanned: usize,
}

impl LineFramer {
    pub fn new(max: usize) -> Self {
        LineFramer {
            max,
            discarding: false,
            scanned: 0,
        }
    }

    fn frame(&self, mut line: BytesMut) -> Frame {
        if line.last() == Some(&b'\n') {
            line.truncate(line.len() - 1);
        }
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max {
            return Frame::TooLong;
        }
        match String::from_utf8(line.to_vec()) {
            Ok(text) => Frame::Line(text),
            Err(_) => Frame::NotUtf8,
        }
    }
}

impl Decoder for LineFramer {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        loop {
            let newline = buf[self.scanned..]
                .iter()
                .position(|b| *b == b'\n')
                .map(|i| i + self.scanned);
            match (self.discarding, newline) {
                (true, Some(end)) => {
                    // The rest of an over-long line: already answered.
                    buf.advance(end + 1);
                    self.discarding = false;
                    self.scanned = 0;
                }
                (true, None) => {
                    buf.clear();
                    self.scanned = 0;
                    return Ok(None);
                }
                (false, Some(end)) => {
                    let line = buf.split_to(end + 1);
                    self.scanned = 0;
                    return Ok(Some(self.frame(line)));
                }
                (false, None) if buf.len() > self.max => {
                    buf.clear();
                    self.scanned = 0;
                    self.discarding = true;
                    return Ok(Some(Frame::TooLong));
                }
                (false, None) => {
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if buf.is_empty() || self.discarding {
            buf.clear();
            return Ok(None);
        }
        // A last line without its newline.
        let line = buf.split_to(buf.len());
        self.scanned = 0;
        Ok(Some(self.frame(line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut framer = LineFramer::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(frame) = framer.decode(&mut buf).unwrap() {
                out.push(frame);
            }
        }
        while let Some(frame) = framer.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(s.to_owned())
    }

    #[test]
    fn lines_survive_bad_neighbours() {
        let cases: Vec<(&[&[u8]], Vec<Frame>)> = vec![
            (&[b"a\nb\r\n"], vec![line("a"), line("b")]),
            (&[b"ab", b"c\nd"], vec![line("abc"), line("d")]),
            (&[b"0123456789ab\nok\n"], vec![Frame::TooLong, line("ok")]),
            (
                &[b"0123456789", b"abcdef", b"ghi\nok\n"],
                vec![Frame::TooLong, line("ok")],
            ),
            (&[b"\xff\xfe\nok\n"], vec![Frame::NotUtf8, line("ok")]),
            (&[b"\n"], vec![line("")]),
            (&[b"0123456789"], vec![line("0123456789")]),
        ];
        for (chunks, want) in cases {
            assert_eq!(frames(10, chunks), want, "{chunks:?}");
        }
    }
}
