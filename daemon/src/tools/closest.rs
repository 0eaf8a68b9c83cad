//! Did-you-mean for tool names: the registered names closest to a name
//! that is not registered, by edit distance (pure).

/// Up to three names within an edit distance of a third of the longer
/// name (at least 2), or that contain the name or are contained in it,
/// closest first.
pub fn closest_names(wanted: &str, names: &[String]) -> Vec<String> {
    let wanted_lower = wanted.to_ascii_lowercase();
    let mut scored: Vec<(usize, &String)> = names
        .iter()
        .filter_map(|name| {
            let lower = name.to_ascii_lowercase();
            let distance = edit_distance(&wanted_lower, &lower);
            let limit = (wanted.len().max(name.len()) / 3).max(2);
            let contains = wanted_lower.len() >= 3
                && (lower.contains(&wanted_lower) || wanted_lower.contains(&lower));
            (distance <= limit || contains).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n.clone()).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        [
            "read_file",
            "read_many_files",
            "run_shell_command",
            "write_file",
            "glob",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn a_typo_finds_the_tool() {
        assert_eq!(closest_names("read_fil", &names()), ["read_file"]);
        assert_eq!(closest_names("shell", &names()), ["run_shell_command"]);
        assert_eq!(closest_names("Write_File", &names()), ["write_file"]);
    }

    #[test]
    fn nothing_close_means_no_hint() {
        assert!(closest_names("teleport", &names()).is_empty());
    }
}
