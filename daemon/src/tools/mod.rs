//! Tools: the contract every tool implements, the registry, pinned
//! workspace roots and path confinement, the paths no tool touches,
//! argument validation and the built-in tools.

mod beneath;
pub mod builtin;
mod closest;
mod context;
pub mod contract;
pub mod declarations;
mod error;
pub mod include_dirs;
pub mod path;
pub mod plans;
pub mod registry;
pub mod root;
pub mod schema;
pub mod sensitive;
pub mod settings;

pub use closest::closest_names;
pub use contract::{
    ConfirmationDetails, ContentPart, FileDiff, OutputSink, PinnedRoot, Tool, ToolContext,
    ToolDisplay, ToolError, ToolErrorKind, ToolInvocation, ToolKind, ToolLocation, ToolResult,
    ToolSettings, ToolSource,
};
pub use registry::{McpViewTools, ToolRegistry};
