//! Builtins whose arguments bash evaluates beyond passing them on: they set
//! variables (`export`, `read`, `printf -v`), take variable names whose
//! subscripts run commands (`test -v 'a[$(cmd)]'`), or evaluate arithmetic
//! (`let`). A rule allowing the command by name does not see that, so each
//! such argument is an evaluated part of its own.

use super::expansion::{is_identifier, is_literal_arithmetic};
use super::types::{Hazard, Word};

/// The builtins this module looks into (and so the ones whose arguments
/// must be known before a run: see `Inherit::runtime_args`).
pub(crate) fn is_inspected(name: &str) -> bool {
    matches!(
        name,
        "export"
            | "declare"
            | "typeset"
            | "local"
            | "readonly"
            | "unset"
            | "read"
            | "mapfile"
            | "readarray"
            | "getopts"
            | "printf"
            | "wait"
            | "test"
            | "["
            | "let"
    )
}

/// The evaluated parts hidden in the arguments of builtin `name`, as
/// (hazard, text) pairs.
pub(crate) fn builtin_hazards(name: &str, args: &[Word], whole: &str) -> Vec<(Hazard, String)> {
    let mut found = Vec::new();
    match name {
        "export" | "declare" | "typeset" | "local" | "readonly" | "unset" => {
            for arg in args.iter().filter(|a| !a.is_static || !is_option(&a.text)) {
                found.push((Hazard::Assignment, format!("{name} {}", arg.text)));
            }
        }
        "read" | "mapfile" | "readarray" | "getopts" => {
            found.push((Hazard::Assignment, whole.to_owned()));
        }
        "printf" => match args.first() {
            Some(first) if !first.is_static => found.push((Hazard::VariableName, whole.to_owned())),
            Some(first) if first.text.starts_with("-v") => {
                found.push((Hazard::Assignment, whole.to_owned()));
            }
            _ => {}
        },
        "wait" => {
            let names = args
                .iter()
                .any(|a| !a.is_static || a.text.starts_with("-p"));
            if names {
                found.push((Hazard::VariableName, whole.to_owned()));
            }
        }
        "test" | "[" => {
            let operands = match (name, args.split_last()) {
                ("[", Some((last, rest))) if last.is_static && last.text == "]" => rest,
                _ => args,
            };
            if test_hazard(operands) {
                found.push((Hazard::VariableName, whole.to_owned()));
            }
        }
        "let" => {
            let literal = args
                .iter()
                .all(|a| a.is_static && is_literal_arithmetic(&a.text));
            if !literal {
                found.push((Hazard::Arithmetic, whole.to_owned()));
            }
        }
        _ => {}
    }
    found
}

fn is_option(text: &str) -> bool {
    text.len() > 1 && (text.starts_with('-') || text.starts_with('+'))
}

/// Whether the operands of `test`/`[` can make it evaluate a variable name
/// (`-v`, `-R`): a static `-v` must be followed by a plain identifier, and
/// an operand only known at run time is allowed only where the operators
/// around it are fixed (`[ "$x" ]`, `[ -f "$x" ]`, `[ "$x" = "$y" ]`), since
/// `test` picks its operators from the values it is given.
pub(crate) fn test_hazard(args: &[Word]) -> bool {
    for (i, arg) in args.iter().enumerate() {
        if arg.is_static && matches!(arg.text.as_str(), "-v" | "-R") {
            match args.get(i + 1) {
                Some(name) if name.is_static && is_identifier(&name.text) => {}
                _ => return true,
            }
        }
    }
    if args.iter().all(|a| a.is_static) {
        return false;
    }
    let fixed = |w: &Word, ops: &[&str]| w.is_static && ops.contains(&w.text.as_str());
    let shape_fixed = match args {
        [a] => a.single,
        [op, a] => fixed(op, UNARY) && a.single,
        [a, op, b] => fixed(op, BINARY) && a.single && b.single,
        _ => false,
    };
    !shape_fixed
}

const UNARY: &[&str] = &[
    "!", "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w",
    "-x", "-G", "-L", "-N", "-O", "-S", "-z", "-n",
];

const BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a",
    "-o",
];
