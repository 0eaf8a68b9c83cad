//! Pagination of `tools/list`: pages of a fixed size in name order, the
//! cursor naming the last tool of the page before (so a tool list that
//! changes between pages neither repeats nor skips the tools that stayed).

/// The prefix of every cursor this server hands out.
const PREFIX: &str = "after:";

/// A cursor this server did not hand out.
#[derive(Debug, PartialEq)]
pub struct BadCursor;

/// The page after `cursor` (the first page without one) of `items`, sorted
/// by `name`, and the cursor of the next page when there is one.
pub fn page<T>(
    mut items: Vec<T>,
    name: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), BadCursor> {
    items.sort_by(|a, b| name(a).cmp(name(b)));
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let after = cursor.strip_prefix(PREFIX).ok_or(BadCursor)?;
            items.partition_point(|item| name(item) <= after)
        }
    };
    let size = size.max(1);
    let mut rest: Vec<T> = items.into_iter().skip(start).collect();
    let more = rest.len() > size;
    rest.truncate(size);
    let next = match rest.last() {
        Some(last) if more => Some(format!("{PREFIX}{}", name(last))),
        _ => None,
    };
    Ok((rest, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pages_cover_everything_once() {
        let all = names(&["e", "a", "d", "b", "c"]);
        let (p1, c1) = page(all.clone(), |s| s, None, 2).unwrap();
        assert_eq!(p1, names(&["a", "b"]));
        let (p2, c2) = page(all.clone(), |s| s, c1.as_deref(), 2).unwrap();
        assert_eq!(p2, names(&["c", "d"]));
        let (p3, c3) = page(all, |s| s, c2.as_deref(), 2).unwrap();
        assert_eq!(p3, names(&["e"]));
        assert_eq!(c3, None);
    }

    #[test]
    fn a_list_that_changed_between_pages_skips_nothing_that_stayed() {
        let (_, c1) = page(names(&["a", "b", "c", "d"]), |s| s, None, 2).unwrap();
        // "b" went away and "bb" came.
        let (p2, _) = page(names(&["a", "bb", "c", "d"]), |s| s, c1.as_deref(), 2).unwrap();
        assert_eq!(p2, names(&["bb", "c"]));
    }

    #[test]
    fn foreign_cursors_are_refused() {
        assert_eq!(page(names(&["a"]), |s| s, Some("2"), 2), Err(BadCursor));
    }
}
