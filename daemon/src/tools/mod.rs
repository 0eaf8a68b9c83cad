//! Tools: the contract every tool implements, the registry, workspace path
//! confinement, argument validation and the built-in tools.

pub mod builtin;
pub mod contract;
pub mod declarations;
pub mod path;
pub mod registry;
pub mod schema;

pub use contract::{
    ConfirmationDetails, ContentPart, FileDiff, OutputSink, Tool, ToolContext, ToolDisplay,
    ToolError, ToolErrorKind, ToolInvocation, ToolKind, ToolLocation, ToolResult, ToolSource,
};
pub use registry::ToolRegistry;
