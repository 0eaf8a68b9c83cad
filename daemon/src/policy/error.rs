//! Errors raised while loading or saving policy files.

use thiserror::Error;

/// An error in a policy file or directory. Every message names the file; rule
/// errors also name the 1-based rule index and the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyLoadError {
    /// The file is not valid TOML.
    #[error("{file}: TOML syntax error: {message}")]
    Syntax {
        /// File name.
        file: String,
        /// Parser message (trimmed, single line).
        message: String,
    },
    /// A top-level key other than `rule`.
    #[error("{file}: unknown top-level key `{key}`")]
    UnknownTopLevelKey {
        /// File name.
        file: String,
        /// The offending key.
        key: String,
    },
    /// A key inside `[[rule]]` that the schema does not know: a warning,
    /// the rule loads without it (an `allow` rule as `ask_user`, since the
    /// field may have been meant to narrow it).
    #[error("{file}: rule #{rule}: unknown field `{field}` ignored{effect}")]
    UnknownField {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// The offending key.
        field: String,
        /// What the rule does meanwhile (empty, or a clause starting with `; `).
        effect: String,
    },
    /// A rule a tier may not contribute (an extension's `allow` or yolo
    /// rule, as in 0.61): a warning, the rule is left out.
    #[error("{file}: rule #{rule}: left out: {reason}")]
    NotAllowedInTier {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// Why.
        reason: String,
    },
    /// A rule whose `toolName` wildcard 0.61 reads literally, in an
    /// `allow` rule: a warning, the name matches only itself.
    #[error("{file}: rule #{rule}: field `toolName` = `{pattern}`: {note}")]
    LiteralWildcard {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// The pattern.
        pattern: String,
        /// What it does.
        note: String,
    },
    /// A field has the wrong TOML type.
    #[error("{file}: rule #{rule}: field `{field}` must be {expected}, found {found}")]
    WrongType {
        /// File name.
        file: String,
        /// 1-based rule index (0 for the `rule` key itself).
        rule: usize,
        /// Field name.
        field: String,
        /// What was expected.
        expected: String,
        /// The TOML type found.
        found: String,
    },
    /// A required field is absent.
    #[error("{file}: rule #{rule}: missing field `{field}`")]
    MissingField {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// Field name.
        field: String,
    },
    /// A string field holds a value outside its set (decision, mode).
    #[error(
        "{file}: rule #{rule}: field `{field}` has invalid value `{value}` (expected {expected})"
    )]
    InvalidValue {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// Field name.
        field: String,
        /// The offending value.
        value: String,
        /// The accepted values.
        expected: String,
    },
    /// `commandPrefix` and `commandRegex` in the same rule.
    #[error("{file}: rule #{rule}: field `commandRegex` cannot be combined with `commandPrefix`")]
    PrefixWithRegex {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
    },
    /// A regex that does not compile.
    #[error("{file}: rule #{rule}: field `{field}` is not a valid regex: {message}")]
    InvalidRegex {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// Field name.
        field: String,
        /// Compiler message (single line).
        message: String,
    },
    /// `priority` outside 0..=999.
    #[error("{file}: rule #{rule}: field `priority` is {value}, expected 0..=999")]
    PriorityOutOfRange {
        /// File name.
        file: String,
        /// 1-based rule index.
        rule: usize,
        /// The value given.
        value: i64,
    },
    /// The file or directory could not be read.
    #[error("{file}: cannot read: {message}")]
    Io {
        /// File or directory name.
        file: String,
        /// OS message.
        message: String,
    },
    /// The admin directory failed the ownership/permission check.
    #[error("{file}: admin policy directory ignored: {reason}")]
    AdminDirIgnored {
        /// Directory name.
        file: String,
        /// Why it was ignored.
        reason: String,
    },
}

impl PolicyLoadError {
    /// Whether this is only a warning: the rule (or the file) still loads.
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            Self::UnknownField { .. }
                | Self::NotAllowedInTier { .. }
                | Self::LiteralWildcard { .. }
        )
    }
}

/// An error while saving an "always allow" rule.
#[derive(Debug, Error)]
pub enum PolicySaveError {
    /// The target path has no parent directory.
    #[error("{file}: policy file path has no parent directory")]
    NoParent {
        /// File name.
        file: String,
    },
    /// Reading, writing or renaming failed.
    #[error("{file}: cannot write policy file: {source}")]
    Io {
        /// File name.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The existing file does not parse, so it is left alone.
    #[error("{file}: existing policy file is invalid, not modified: {source}")]
    Invalid {
        /// File name.
        file: String,
        /// The first load error.
        #[source]
        source: Box<PolicyLoadError>,
    },
    /// The rule could not be serialized.
    #[error("{file}: cannot serialize rule: {message}")]
    Serialize {
        /// File name.
        file: String,
        /// Serializer message.
        message: String,
    },
}
