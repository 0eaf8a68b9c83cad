//! A prompt's references, turned into the parts the model gets: `@path`
//! in its text, file parts, embedded resources, resource links and inline
//! data. As Gemini CLI 0.61 does it, the prompt's text comes first, then
//! `--- Content from referenced files ---`, each file under
//! `Content from @<path>:` (text, or inline data for images and PDF), then
//! `--- End of content ---`. Files are read through `read_many_files`'
//! plan: confined beneath the session's pinned root, ignore files,
//! sensitive paths and size limits apply. What was read and what was left
//! out (with why) is returned for the `promptReferences` event. References
//! another part of the daemon owns (`@server:uri` MCP resources) plug in
//! through [`ResourceRefs`].

use std::sync::Arc;

use base64::Engine;
use geminid_protocol::turn::PromptPart;
use tokio_util::sync::CancellationToken;

use crate::model::Part;
use crate::tools::ToolContext;
use crate::tools::builtin::common::MAX_FILE_BYTES;
use crate::tools::builtin::dir_cache::DirCache;
use crate::tools::builtin::read_many_files::{self, ReadManyFilesParams};
use crate::tools::contract::ContentPart;

pub const REFERENCES_START: &str = "--- Content from referenced files ---";
pub const REFERENCES_END: &str = "--- End of content ---";

/// Reads references another part of the daemon owns: `@server:uri` MCP
/// resources. A reference it claims is not looked up as a path.
#[async_trait::async_trait]
pub trait ResourceRefs: Send + Sync {
    /// Whether `reference` (the text after `@`) is one of its own.
    fn claims(&self, reference: &str) -> bool;
    /// The reference's content for the model.
    async fn read(&self, reference: &str) -> Result<Vec<Part>, String>;
}

/// Where a prompt's references are read: the session's pinned roots and
/// file settings, and the readers of other kinds of reference.
#[derive(Clone)]
pub struct ReferenceReader {
    pub files: ToolContext,
    pub resources: Option<Arc<dyn ResourceRefs>>,
}

/// A prompt ready for the model, and what its references brought in.
#[derive(Debug, Default, PartialEq)]
pub struct Resolved {
    pub parts: Vec<Part>,
    /// Paths (under the workspace) and URIs read.
    pub read: Vec<String>,
    /// What was left out, one line each, saying why.
    pub skipped: Vec<String>,
}

/// Refuses a prompt that says nothing or carries data that cannot be
/// sent: checked when it is queued, so the client hears why.
pub fn check(text: &str, parts: &[PromptPart]) -> Result<(), String> {
    let empty_text = |t: &str| t.trim().is_empty();
    let says_something = !empty_text(text)
        || parts.iter().any(|p| match p {
            PromptPart::Text { text } => !empty_text(text),
            _ => true,
        });
    if !says_something {
        return Err("the prompt is empty: give `text` or `parts`".to_owned());
    }
    for (i, part) in parts.iter().enumerate() {
        match part {
            PromptPart::InlineData { mime_type, data } => {
                if mime_type.trim().is_empty() {
                    return Err(format!("parts[{i}]: `mimeType` is empty"));
                }
                check_base64(i, data)?;
            }
            PromptPart::Resource {
                uri, text, blob, ..
            } => {
                if text.is_none() && blob.is_none() {
                    return Err(format!("parts[{i}] ({uri}): has neither `text` nor `blob`"));
                }
                if let Some(blob) = blob {
                    check_base64(i, blob)?;
                }
            }
            PromptPart::File { path } if path.trim().is_empty() => {
                return Err(format!("parts[{i}]: `path` is empty"));
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_base64(i: usize, data: &str) -> Result<(), String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("parts[{i}]: the data is not valid base64 ({e})"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "parts[{i}]: {} bytes of data, over the {} MB limit",
            bytes.len(),
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    Ok(())
}

/// `@path` references in `text`, in order: an `@` at the start or after
/// whitespace, up to the next unescaped whitespace, without trailing
/// sentence punctuation; `\ ` is a space in the path. A lone `@` is text.
pub fn at_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i] == '@' && (i == 0 || chars[i - 1].is_whitespace());
        if !starts {
            i += 1;
            continue;
        }
        let mut path = String::new();
        let mut j = i + 1;
        while j < chars.len() {
            let c = chars[j];
            if c == '\\' && chars.get(j + 1).is_some_and(|n| n.is_whitespace()) {
                path.push(chars[j + 1]);
                j += 2;
                continue;
            }
            if c.is_whitespace() {
                break;
            }
            path.push(c);
            j += 1;
        }
        while path.ends_with(['.', ',', ';', ':', '!', '?', ')', '"', '\'']) {
            path.pop();
        }
        if !path.is_empty() {
            out.push(path);
        }
        i = j;
    }
    out
}

/// One piece of referenced content, before assembly.
struct Referenced {
    /// How the model is told where it came from.
    name: String,
    parts: Vec<Part>,
}

fn part_of(content: ContentPart) -> Part {
    match content {
        ContentPart::Text { text } => Part::text(text),
        ContentPart::InlineData { mime_type, data } => Part::inline(mime_type, data),
    }
}

/// Turns a prompt into parts for the model, reading what it references.
pub async fn resolve(
    text: &str,
    parts: &[PromptPart],
    reader: &ReferenceReader,
    cancel: &CancellationToken,
) -> Resolved {
    let mut out = Resolved::default();
    let mut referenced: Vec<Referenced> = Vec::new();
    let mut paths: Vec<String> = at_paths(text);
    if !text.trim().is_empty() {
        out.parts.push(Part::text(text));
    }
    for part in parts {
        match part {
            PromptPart::Text { text } => {
                paths.extend(at_paths(text));
                out.parts.push(Part::text(text.clone()));
            }
            PromptPart::InlineData { mime_type, data } => {
                out.parts.push(Part::inline(mime_type.clone(), data.trim()));
            }
            PromptPart::File { path } => paths.push(path.clone()),
            PromptPart::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => {
                out.read.push(uri.clone());
                let content = match (text, blob) {
                    (Some(text), _) => Part::text(text.clone()),
                    (None, Some(blob)) => Part::inline(
                        mime_type
                            .clone()
                            .unwrap_or_else(|| "application/octet-stream".to_owned()),
                        blob.trim(),
                    ),
                    (None, None) => continue,
                };
                referenced.push(Referenced {
                    name: uri.clone(),
                    parts: vec![content],
                });
            }
            PromptPart::ResourceLink { uri, name, .. } => match file_uri_path(uri) {
                Some(path) => paths.push(path),
                None => {
                    let name = name.as_deref().unwrap_or(uri);
                    out.parts.push(Part::text(format!("[{name}]({uri})")));
                    out.skipped.push(format!(
                        "{uri}: not a file:// link; named to the model, not read"
                    ));
                }
            },
        }
    }
    let mut seen = std::collections::HashSet::new();
    for path in paths {
        if cancel.is_cancelled() {
            break;
        }
        if let Some(resources) = reader.resources.as_ref().filter(|r| r.claims(&path)) {
            match resources.read(&path).await {
                Ok(parts) => {
                    out.read.push(path.clone());
                    referenced.push(Referenced {
                        name: format!("@{path}"),
                        parts,
                    });
                }
                Err(e) => out.skipped.push(format!("@{path}: {e}")),
            }
            continue;
        }
        let files = reader.files.clone();
        let cancel_read = cancel.clone();
        let spelled = path.clone();
        let read = tokio::task::spawn_blocking(move || read_path(&files, &spelled, &cancel_read))
            .await
            .unwrap_or_else(|e| Err(format!("the read failed: {e}")));
        match read {
            Ok((files, notes)) => {
                if files.is_empty() && notes.is_empty() {
                    out.skipped.push(format!("@{path}: nothing to read"));
                }
                for note in notes {
                    out.skipped.push(format!("@{path}: {note}"));
                }
                for file in files {
                    if seen.insert(file.path.clone()) {
                        out.read.push(file.shown.clone());
                        referenced.push(Referenced {
                            name: format!("@{}", file.shown),
                            parts: vec![part_of(file.content)],
                        });
                    }
                }
            }
            Err(e) => out.skipped.push(format!("@{path}: {e}")),
        }
    }
    if !referenced.is_empty() {
        out.parts.push(Part::text(format!("\n{REFERENCES_START}")));
        for item in referenced {
            out.parts
                .push(Part::text(format!("\nContent from {}:\n", item.name)));
            out.parts.extend(item.parts);
        }
        out.parts.push(Part::text(format!("\n{REFERENCES_END}")));
    }
    if out.parts.is_empty() {
        // Every reference was skipped and nothing else was said: the model
        // still gets what the person typed.
        out.parts.push(Part::text(text));
    }
    out
}

/// Reads one path (a file, or a directory's files) beneath the session's
/// root: the files read and notes on what was left out.
fn read_path(
    ctx: &ToolContext,
    raw: &str,
    cancel: &CancellationToken,
) -> Result<(Vec<read_many_files::GatheredFile>, Vec<String>), String> {
    let raw = match missing(ctx, raw) {
        true => found_by_name(ctx, raw, cancel).unwrap_or_else(|| raw.to_owned()),
        false => raw.to_owned(),
    };
    let params = ReadManyFilesParams {
        paths: vec![raw],
        include: None,
        exclude: None,
        recursive: Some(true),
        use_default_excludes: Some(true),
        respect_git_ignore: None,
    };
    let plan = read_many_files::plan(ctx, &params).map_err(|e| e.message)?;
    let gathered =
        read_many_files::gather(&plan, &DirCache::new(), cancel).map_err(|e| e.message)?;
    Ok((gathered.files, gathered.notes))
}

/// Whether nothing is at `raw` beneath the session's roots (a path that
/// is refused is not missing: its refusal stands).
fn missing(ctx: &ToolContext, raw: &str) -> bool {
    if !ctx.settings.filtering.recursive_file_search {
        return false;
    }
    let absolute = match std::path::Path::new(raw).is_absolute() {
        true => std::path::PathBuf::from(raw),
        false => ctx.workspace_root.join(raw),
    };
    match ctx.resolve(&absolute.to_string_lossy(), "@path") {
        Ok((root, path)) => !crate::tools::path::exists_confined(&root, &path),
        Err(_) => false,
    }
}

/// The file `@name` means, searched for by name in the workspace
/// (`glob::find_by_name`, 0.61's search), as the path the read takes.
fn found_by_name(ctx: &ToolContext, name: &str, cancel: &CancellationToken) -> Option<String> {
    let stop = std::sync::atomic::AtomicBool::new(cancel.is_cancelled());
    let found = crate::tools::builtin::glob::find_by_name(ctx, name, &stop)?;
    Some(found.to_string_lossy().into_owned())
}

/// The local path of a `file://` URI (percent-escapes decoded).
fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/x` and `file:///x`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = rest
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_paths_are_found_where_0_61_finds_them() {
        assert_eq!(
            at_paths("explain @src/main.rs and @docs/, then @a\\ b.txt."),
            vec!["src/main.rs", "docs/", "a b.txt"]
        );
        assert!(at_paths("mail me at a@b.com or type @ alone").is_empty());
        assert_eq!(at_paths("@first"), vec!["first"]);
    }

    #[test]
    fn empty_or_broken_prompts_are_refused() {
        assert!(check("  ", &[]).is_err());
        assert!(check("", &[PromptPart::Text { text: " ".into() }]).is_err());
        assert!(check("hi", &[]).is_ok());
        let bad = PromptPart::InlineData {
            mime_type: "image/png".into(),
            data: "not base64!".into(),
        };
        assert!(check("", &[bad]).is_err());
        let empty = PromptPart::Resource {
            uri: "x:y".into(),
            mime_type: None,
            text: None,
            blob: None,
        };
        assert!(check("", &[empty]).is_err());
    }

    struct Server;

    #[async_trait::async_trait]
    impl ResourceRefs for Server {
        fn claims(&self, reference: &str) -> bool {
            reference.starts_with("srv:")
        }
        async fn read(&self, reference: &str) -> Result<Vec<Part>, String> {
            match reference {
                "srv:missing" => Err("no such resource".to_owned()),
                _ => Ok(vec![Part::text(format!("body of {reference}"))]),
            }
        }
    }

    #[tokio::test]
    async fn claimed_references_go_to_their_reader_and_paths_to_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "file a").unwrap();
        let reader = ReferenceReader {
            files: ToolContext::new(dir.path()).unwrap(),
            resources: Some(Arc::new(Server)),
        };
        let text = "see @srv:doc, @a.txt and @srv:missing";
        let r = resolve(text, &[], &reader, &CancellationToken::new()).await;
        assert_eq!(r.read, ["srv:doc", "a.txt"]);
        assert_eq!(r.skipped, ["@srv:missing: no such resource"]);
        let all: String = r.parts.iter().filter_map(|p| p.text.clone()).collect();
        assert_eq!(
            all,
            format!(
                "{text}\n{REFERENCES_START}\nContent from @srv:doc:\nbody of srv:doc\nContent from @a.txt:\nfile a\n{REFERENCES_END}"
            )
        );
    }

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///w/a%20b.txt").as_deref(),
            Some("/w/a b.txt")
        );
        assert_eq!(
            file_uri_path("file://localhost/w/x").as_deref(),
            Some("/w/x")
        );
        assert_eq!(file_uri_path("https://x/y"), None);
        assert_eq!(file_uri_path("file://host/x"), None);
    }
}
