//! What the daemon's log leaves out: rmcp logs an ERROR each time an MCP
//! server answers 401 ("worker quit with fatal: ... AuthRequired"), which
//! is no error of the daemon's: the server shows `needs_auth` in
//! `mcp list` and its status change is logged once. Every other line,
//! rmcp's other errors included, passes.

use std::fmt::Write;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Filter};

/// A log filter that drops rmcp's report of a 401.
pub struct QuietAuthRequired;

/// Whether an event of `target` saying `message` is rmcp reporting that a
/// server wants authorization.
pub fn is_auth_required(target: &str, message: &str) -> bool {
    target.starts_with("rmcp::") && message.contains("AuthRequired")
}

#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }
}

impl<S> Filter<S> for QuietAuthRequired {
    fn enabled(&self, _meta: &tracing::Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &tracing::Event<'_>, _cx: &Context<'_, S>) -> bool {
        let target = event.metadata().target();
        if !target.starts_with("rmcp::") {
            return true;
        }
        let mut message = Message::default();
        event.record(&mut message);
        !is_auth_required(target, &message.0)
    }
}

#[cfg(test)]
mod tests {
    use super::is_auth_required;

    #[test]
    fn only_rmcps_auth_required_is_dropped() {
        assert!(is_auth_required(
            "rmcp::transport::worker",
            "worker quit with fatal: Transport channel closed, when AuthRequired(AuthRequiredError { .. })"
        ));
        assert!(!is_auth_required(
            "rmcp::transport::worker",
            "worker quit with fatal: connection reset"
        ));
        assert!(!is_auth_required("geminid::discovery", "AuthRequired"));
    }
}
