use super::*;

fn ok(current: &str, old: &str, new: &str, expected: usize) -> EditPlan {
    plan_edit(Some(current), old, new, expected).unwrap()
}

fn err(current: Option<&str>, old: &str, new: &str, expected: usize) -> String {
    plan_edit(current, old, new, expected).unwrap_err().message
}

#[test]
fn exact_replacement_is_literal() {
    let p = ok("let a = 1;\nlet b = 2;\n", "b = 2", "b = $1 $$ \\0", 1);
    assert_eq!(p.new_content, "let a = 1;\nlet b = $1 $$ \\0;\n");
    assert_eq!(p.mode, MatchMode::Exact);
    let p = ok("x x x", "x", "y", 3);
    assert_eq!((p.new_content.as_str(), p.occurrences), ("y y y", 3));
}

#[test]
fn crlf_files_stay_crlf() {
    let p = ok("one\r\ntwo\r\nthree\r\n", "two\nthree", "2\n3", 1);
    assert_eq!(p.new_content, "one\r\n2\r\n3\r\n");
    let p = ok("one\r\ntwo\r\n", "one\r\n", "uno\r\n", 1);
    assert_eq!(p.new_content, "uno\r\ntwo\r\n");
}

#[test]
fn trailing_newline_is_kept() {
    let p = ok("a\nlast\n", "last\n", "final", 1);
    assert_eq!(p.new_content, "a\nfinal\n");
    let p = ok("a\nb", "b", "c", 1);
    assert_eq!(p.new_content, "a\nc");
}

#[test]
fn flexible_match_reindents() {
    let file = "fn main() {\n    if x {\n        call(1);\n    }\n}\n";
    let p = ok(
        file,
        "if x {\n    call(1);\n}",
        "if y {\n    call(2);\n    call(3);\n}",
        1,
    );
    assert_eq!(p.mode, MatchMode::Flexible);
    assert_eq!(
        p.new_content,
        "fn main() {\n    if y {\n        call(2);\n        call(3);\n    }\n}\n"
    );
    // Trailing spaces in the file do not defeat the match.
    let p = ok("a  \n\tb\t\nc\n", "a\nb\n", "z\n", 1);
    assert_eq!(p.new_content, "z\nc\n");
    // An empty replacement removes the lines entirely.
    let p = ok("keep\n  drop me  \nkeep2\n", "drop me\n", "", 1);
    assert_eq!(p.new_content, "keep\nkeep2\n");
}

#[test]
fn errors_are_distinct() {
    assert!(err(Some("abc"), "zzz", "y", 1).contains("not found"));
    assert!(
        err(Some("a a a"), "a", "b", 1)
            .contains("expected 1 occurrence of `old_string` but found 3")
    );
    assert!(
        err(Some("  a \n  a \n"), "a\n", "b", 1)
            .contains("expected 1 occurrence of `old_string` but found 2 (ignoring indentation)")
    );
    assert!(err(Some("abc"), "b", "b", 1).contains("identical"));
    assert!(err(Some("abc"), "", "new", 1).contains("already exists"));
    assert!(err(None, "x", "y", 1).contains("file not found"));
    let p = plan_edit(None, "", "fresh\n", 1).unwrap();
    assert_eq!(
        (p.new_content.as_str(), p.mode),
        ("fresh\n", MatchMode::Create)
    );
}

#[test]
fn large_exact_replace_is_fast() {
    let line = "some ordinary line of source code here, nothing special\n";
    let mut big = line.repeat(50 * 1024 * 1024 / line.len());
    big.push_str("UNIQUE_MARKER\n");
    let start = std::time::Instant::now();
    let p = ok(&big, "UNIQUE_MARKER", "REPLACED", 1);
    let took = start.elapsed();
    assert!(p.new_content.ends_with("REPLACED\n"));
    // Generous for debug builds; release is far below (see STATUS.md).
    assert!(took.as_secs() < 10, "{took:?}");
}

#[test]
fn edited_content_gives_minimal_unique_edit() {
    let original = "a\nb\nc\nd\ne\n";
    let edited = "a\nb\nC!\nd\ne\n";
    assert_eq!(
        replace_from_edited(original, edited),
        ("c\n".to_owned(), "C!\n".to_owned())
    );
    let applied = plan_edit(Some(original), "c\n", "C!\n", 1)
        .unwrap()
        .new_content;
    assert_eq!(applied, edited);
    // A repeated line is widened until unique.
    let original = "}\nfn a() {\n}\nfn b() {\n}\n";
    let edited = "}\nfn a() {\n}\nfn b() {\n  x();\n}\n";
    let (old, new) = replace_from_edited(original, edited);
    assert_eq!(original.matches(&old).count(), 1, "{old:?}");
    assert_eq!(
        plan_edit(Some(original), &old, &new, 1)
            .unwrap()
            .new_content,
        edited
    );
    // A pure insertion still yields a non-empty old_string.
    let (old, new) = replace_from_edited("x\ny\n", "x\nnew\ny\n");
    assert!(!old.is_empty());
    assert_eq!(
        plan_edit(Some("x\ny\n"), &old, &new, 1)
            .unwrap()
            .new_content,
        "x\nnew\ny\n"
    );
    assert_eq!(
        replace_from_edited("same", "same"),
        (String::new(), String::new())
    );
    let (old, new) = replace_from_edited("héllo\n", "hällo\n");
    assert_eq!((old.as_str(), new.as_str()), ("héllo\n", "hällo\n"));
}
