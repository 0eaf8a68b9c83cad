//! Conditions and arithmetic loops: `[[ ... ]]`, `[ ... ]` and
//! `for ((...))`.

use super::builtins::test_hazard;
use super::expansion::{is_identifier, is_literal_arithmetic};
use super::types::{Hazard, ShellSplit};
use super::walk::{Walker, parse};
use super::words::{children_with_fields, named_children, word, words_of};
use tree_sitter::Node;

/// Operators of `[[ ]]` whose operands are arithmetic.
/// `[[ ( ( ... ) ) ]]` nested deeper than this is not looked into (the
/// check recurses); it needs approval.
const MAX_TEST_NESTING: usize = 64;

pub(super) const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

pub(super) fn find_kind<'t>(root: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind() == kind {
            return Some(node);
        }
        stack.extend(named_children(node).rev());
    }
    None
}

impl Walker<'_> {
    /// `for ((init; cond; step))`: arithmetic.
    pub(super) fn c_style_for(&self, node: Node<'_>, out: &mut ShellSplit) {
        let literal = children_with_fields(node)
            .filter(|(_, f)| matches!(f, Some("initializer" | "condition" | "update")))
            .all(|(c, _)| is_literal_arithmetic(self.text(c)));
        if !literal {
            let raw = self.text(node);
            let header = raw.find("))").map_or(raw, |end| &raw[..end + 2]);
            out.hazard(Hazard::Arithmetic, header);
        }
    }

    /// `[[ ... ]]` evaluates the operands of `-eq` and friends as arithmetic
    /// and the operand of `-v` as a variable name; `[ ... ]` is the `test`
    /// builtin, whose operators come from its (expanded) arguments.
    pub(super) fn test_command(&mut self, node: Node<'_>, out: &mut ShellSplit) {
        let raw = self.text(node);
        if raw.starts_with("[[") {
            for expr in named_children(node) {
                self.test_expression(expr, out, 0);
            }
            return;
        }
        let inner = raw
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(raw);
        let source = format!("test {inner}");
        let Some(tree) = parse(&source, self.deadline) else {
            out.parse_error = true;
            return;
        };
        let Some(command) = find_kind(tree.root_node(), "command") else {
            return;
        };
        let args: Vec<Node<'_>> = children_with_fields(command)
            .filter(|(_, f)| *f == Some("argument"))
            .map(|(c, _)| c)
            .collect();
        let words = words_of(&source, &args);
        if test_hazard(&words) {
            out.hazard(Hazard::VariableName, raw);
        }
    }

    pub(super) fn test_expression(&self, node: Node<'_>, out: &mut ShellSplit, nesting: usize) {
        if nesting > MAX_TEST_NESTING {
            out.hazard(Hazard::Unrecognised, self.text(node));
            return;
        }
        let operator = node
            .child_by_field_name("operator")
            .map(|op| self.text(op))
            .unwrap_or("");
        match node.kind() {
            "binary_expression" if ARITHMETIC_TESTS.contains(&operator) => {
                let literal = ["left", "right"].iter().all(|side| {
                    node.child_by_field_name(side).is_some_and(|operand| {
                        let w = word(self.src, operand);
                        w.is_static && !w.text.trim().is_empty() && is_literal_arithmetic(&w.text)
                    })
                });
                if !literal {
                    out.hazard(Hazard::Arithmetic, self.text(node));
                }
            }
            "unary_expression" if matches!(operator, "-v" | "-R") => {
                let name = named_children(node).next_back().map(|n| word(self.src, n));
                if !name.is_some_and(|n| n.is_static && is_identifier(&n.text)) {
                    out.hazard(Hazard::VariableName, self.text(node));
                }
            }
            "binary_expression" | "unary_expression" | "parenthesized_expression" => {
                for child in named_children(node) {
                    self.test_expression(child, out, nesting + 1);
                }
            }
            _ => {}
        }
    }
}
