//! Our import processor against outputs recorded from the reference
//! implementation (`src/memory/reference_tests/reference.json`, re-recorded with
//! `cargo run -p geminid --example record_memory_reference`). Runs without node.

use crate::memory as memory_api;

mod support;

use std::path::Path;

use support::{Outcome, cases, load_recorded, materialize};

#[test]
fn matches_recorded_reference() -> Result<(), Box<dyn std::error::Error>> {
    let recorded = load_recorded(Path::new(env!("CARGO_MANIFEST_DIR")))?;
    let all = cases();
    assert!(all.len() >= 30, "only {} cases", all.len());
    let mut failures = Vec::new();
    let mut identical = 0;
    for case in &all {
        let Some(reference) = recorded.get(case.name) else {
            failures.push(format!("{}: no recorded reference output", case.name));
            continue;
        };
        let dir = materialize(case)?;
        let ours = dir.ours(case)?;
        if &ours == reference {
            identical += 1;
        }
        match &case.differs {
            None if &ours != reference => failures.push(format!(
                "{}:\n  ours:      {ours:?}\n  reference: {reference:?}",
                case.name
            )),
            None => {}
            Some(diff) => {
                let expected = Outcome {
                    content: diff.content.to_string(),
                    tree: serde_json::from_str(diff.tree)?,
                };
                if ours != expected {
                    failures.push(format!(
                        "{} (deliberate difference: {}):\n  ours:     {ours:?}\n  expected: {expected:?}",
                        case.name, diff.why
                    ));
                }
                if &ours == reference {
                    failures.push(format!(
                        "{}: marked as a deliberate difference but matches the reference",
                        case.name
                    ));
                }
            }
        }
    }
    let deliberate = all.iter().filter(|c| c.differs.is_some()).count();
    println!(
        "{identical}/{} identical to the reference, {deliberate} deliberate differences",
        all.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(identical + deliberate, all.len());
    Ok(())
}
