//! Words of a command as bash would pass them, from tree-sitter nodes.

use super::types::Word;
use super::unquote::{
    has_expansion_chars, strip, unescape_ansi_c, unescape_double, unescape_unquoted,
};
use tree_sitter::Node;

/// The source text of `node`.
pub(crate) fn text<'s>(src: &'s str, node: Node<'_>) -> &'s str {
    src.get(node.start_byte()..node.end_byte()).unwrap_or("")
}

/// The unquoted value of a word node, whether it is static, and whether it
/// stays one word.
pub(crate) fn word(src: &str, node: Node<'_>) -> Word {
    let raw = text(src, node);
    if !node.is_named() {
        // Keywords such as `export` in a declaration.
        return Word::fixed(raw);
    }
    match node.kind() {
        "word" => {
            let is_static = !has_expansion_chars(raw);
            Word {
                text: unescape_unquoted(raw),
                is_static,
                single: is_static,
            }
        }
        "number" => Word::fixed(raw),
        "raw_string" => Word::fixed(strip(raw, 1, 1)),
        "ansi_c_string" => {
            let (text, is_static) = unescape_ansi_c(strip(raw, 2, 1));
            Word {
                text,
                is_static,
                single: true,
            }
        }
        "string" | "translated_string" => {
            let dynamic = named_children(node).any(|c| c.kind() != "string_content");
            let open = if node.kind() == "string" { 1 } else { 2 };
            Word {
                text: unescape_double(strip(raw, open, 1)),
                is_static: !dynamic,
                single: true,
            }
        }
        "concatenation" => {
            let mut out = Word::fixed("");
            for child in children(node) {
                let part = word(src, child);
                out.text.push_str(&part.text);
                out.is_static &= part.is_static;
                out.single &= part.single;
            }
            out
        }
        _ => Word::dynamic(raw, false),
    }
}

/// The words of `nodes` in order; tree-sitter splits `gi\<newline>t`, which
/// bash reads as one word, so such pieces are joined again.
pub(crate) fn words_of(src: &str, nodes: &[Node<'_>]) -> Vec<Word> {
    let mut words: Vec<Word> = Vec::new();
    let mut prev_end: Option<usize> = None;
    for &node in nodes {
        let next = word(src, node);
        let gap = prev_end.and_then(|end| src.get(end..node.start_byte()));
        prev_end = Some(node.end_byte());
        match (gap, words.last_mut()) {
            (Some("\\\n" | "\\\r\n"), Some(last)) => {
                last.text.push_str(&next.text);
                last.is_static &= next.is_static;
                last.single &= next.single;
            }
            _ => words.push(next),
        }
    }
    words
}

/// The children of `node`, in order. (`Node::child(i)` walks the siblings
/// before `i`, so indexing every child of a long list would be quadratic.)
pub(crate) fn children<'t>(node: Node<'t>) -> std::vec::IntoIter<Node<'t>> {
    let mut cursor = node.walk();
    let all: Vec<Node<'t>> = node.children(&mut cursor).collect();
    all.into_iter()
}

/// The named children of `node`, in order.
pub(crate) fn named_children<'t>(node: Node<'t>) -> std::vec::IntoIter<Node<'t>> {
    let mut cursor = node.walk();
    let named: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
    named.into_iter()
}

/// The children of `node`, with their field names.
pub(crate) fn children_with_fields<'t>(
    node: Node<'t>,
) -> std::vec::IntoIter<(Node<'t>, Option<&'static str>)> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.node(), cursor.field_name()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out.into_iter()
}

/// The operator of a redirection node (`>`, `>>`, `<`, `>&`, ...).
pub(crate) fn redirect_operator<'s>(src: &'s str, node: Node<'_>) -> &'s str {
    children(node)
        .find(|c| !c.is_named())
        .map(|c| text(src, c))
        .unwrap_or("")
}
