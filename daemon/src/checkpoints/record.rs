//! One edit call's checkpoint as bytes on disk, and back: the prior bytes
//! (or absence) of every file the call touches, and after the call the
//! SHA-256 of what it left there. Pure.
//!
//! A record file is a magic line, one JSON header line, then the files'
//! prior bytes one after another, exactly (CRLF, binary): the header gives
//! each file's length (`null`: the file did not exist).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

const MAGIC: &[u8] = b"geminid-checkpoint 1\n";

/// What one file was before a call changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBefore {
    pub path: PathBuf,
    /// `None`: the file did not exist.
    pub bytes: Option<Vec<u8>>,
    /// Its permission bits, when it existed.
    pub mode: Option<u32>,
}

/// The checkpoint of one edit call, taken before it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// The seq of the call's first event (`call-<seq>`).
    pub seq: u64,
    pub call_id: String,
    /// The turn the call belongs to; `None` for a client's `tool.call`.
    pub turn_id: Option<String>,
    pub tool: String,
    /// Milliseconds since the epoch.
    pub time: u64,
    pub files: Vec<FileBefore>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    seq: u64,
    call_id: String,
    turn_id: Option<String>,
    tool: String,
    time: u64,
    files: Vec<FileHeader>,
}

#[derive(Serialize, Deserialize)]
struct FileHeader {
    path: String,
    len: Option<u64>,
    mode: Option<u32>,
}

/// What a call left in each file it touched (`None`: no file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileAfter {
    pub path: String,
    pub sha256: Option<String>,
}

/// Why a record could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("checkpoint record unreadable: {0}")]
pub struct BadRecord(pub String);

impl CallRecord {
    /// The record's bytes. Paths that are not UTF-8 cannot be recorded
    /// (tools only get paths from JSON strings).
    pub fn encode(&self) -> Result<Vec<u8>, BadRecord> {
        let mut files = Vec::with_capacity(self.files.len());
        for file in &self.files {
            let path = file
                .path
                .to_str()
                .ok_or_else(|| BadRecord(format!("path {} is not UTF-8", file.path.display())))?;
            files.push(FileHeader {
                path: path.to_owned(),
                len: file.bytes.as_ref().map(|b| b.len() as u64),
                mode: file.mode,
            });
        }
        let header = Header {
            seq: self.seq,
            call_id: self.call_id.clone(),
            turn_id: self.turn_id.clone(),
            tool: self.tool.clone(),
            time: self.time,
            files,
        };
        let json = serde_json::to_vec(&header).map_err(|e| BadRecord(e.to_string()))?;
        let body: usize = self
            .files
            .iter()
            .filter_map(|f| f.bytes.as_ref())
            .map(Vec::len)
            .sum();
        let mut out = Vec::with_capacity(MAGIC.len() + json.len() + 1 + body);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&json);
        out.push(b'\n');
        for bytes in self.files.iter().filter_map(|f| f.bytes.as_ref()) {
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }

    /// Reads a record back; a torn or foreign file is an error.
    pub fn decode(data: &[u8]) -> Result<CallRecord, BadRecord> {
        let (header, mut rest) = split_header(data)?;
        let mut files = Vec::with_capacity(header.files.len());
        for file in header.files {
            let bytes = match file.len {
                None => None,
                Some(len) => {
                    let len = usize::try_from(len).map_err(|e| BadRecord(e.to_string()))?;
                    if rest.len() < len {
                        return Err(BadRecord(format!("{} is cut short", file.path)));
                    }
                    let (mine, after) = rest.split_at(len);
                    rest = after;
                    Some(mine.to_vec())
                }
            };
            files.push(FileBefore {
                path: PathBuf::from(file.path),
                bytes,
                mode: file.mode,
            });
        }
        if !rest.is_empty() {
            return Err(BadRecord("bytes after the last file".to_owned()));
        }
        Ok(CallRecord {
            seq: header.seq,
            call_id: header.call_id,
            turn_id: header.turn_id,
            tool: header.tool,
            time: header.time,
            files,
        })
    }

    /// The record's identity and paths, from its first lines only.
    pub fn decode_summary(data: &[u8]) -> Result<CallRecord, BadRecord> {
        let (header, _) = split_header(data)?;
        Ok(CallRecord {
            seq: header.seq,
            call_id: header.call_id,
            turn_id: header.turn_id,
            tool: header.tool,
            time: header.time,
            files: header
                .files
                .into_iter()
                .map(|f| FileBefore {
                    path: PathBuf::from(f.path),
                    bytes: None,
                    mode: f.mode,
                })
                .collect(),
        })
    }
}

fn split_header(data: &[u8]) -> Result<(Header, &[u8]), BadRecord> {
    let rest = data
        .strip_prefix(MAGIC)
        .ok_or_else(|| BadRecord("not a checkpoint record".to_owned()))?;
    let end =
        memchr::memchr(b'\n', rest).ok_or_else(|| BadRecord("header is cut short".to_owned()))?;
    let header: Header =
        serde_json::from_slice(&rest[..end]).map_err(|e| BadRecord(e.to_string()))?;
    Ok((header, &rest[end + 1..]))
}

/// The hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CallRecord {
        CallRecord {
            seq: 12,
            call_id: "call-12".into(),
            turn_id: Some("turn-3".into()),
            tool: "write_file".into(),
            time: 5,
            files: vec![
                FileBefore {
                    path: "/w/a.txt".into(),
                    bytes: Some(b"one\r\ntwo\r\n".to_vec()),
                    mode: Some(0o644),
                },
                FileBefore {
                    path: "/w/new".into(),
                    bytes: None,
                    mode: None,
                },
                FileBefore {
                    path: "/w/bin".into(),
                    bytes: Some(vec![0, 255, b'\n', 0, 13]),
                    mode: Some(0o755),
                },
            ],
        }
    }

    #[test]
    fn a_record_reads_back_byte_for_byte() {
        let record = sample();
        let bytes = record.encode().unwrap();
        assert_eq!(CallRecord::decode(&bytes).unwrap(), record);
        let summary = CallRecord::decode_summary(&bytes).unwrap();
        assert_eq!(summary.files.len(), 3);
        assert_eq!(summary.turn_id.as_deref(), Some("turn-3"));
    }

    #[test]
    fn a_torn_record_is_refused() {
        let bytes = sample().encode().unwrap();
        assert!(CallRecord::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(CallRecord::decode(b"something else\n{}\n").is_err());
        let mut extra = bytes.clone();
        extra.push(1);
        assert!(CallRecord::decode(&extra).is_err());
    }

    #[test]
    fn sha256_is_hex_of_the_digest() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
