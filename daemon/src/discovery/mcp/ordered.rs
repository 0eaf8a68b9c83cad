//! Progress in the order the server sent it.
//!
//! rmcp hands each notification to the handler in a task of its own, so
//! on a machine with several cores `[3/3]` can reach the handler before
//! `[1/3]`. Progress is text the user reads in order, so it is routed here,
//! as each message comes off the wire, before rmcp sees it; the handler's
//! `on_progress` does nothing. The message still goes on to rmcp, which
//! uses progress to extend the call's timeout.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ProgressNotificationParam, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// Where a progress notification goes, called in arrival order.
pub type RouteProgress = Arc<dyn Fn(&ProgressNotificationParam) + Send + Sync>;

/// A transport whose progress notifications go to `route` in arrival
/// order.
pub struct InOrder<T> {
    inner: T,
    route: RouteProgress,
}

impl<T> InOrder<T> {
    pub fn new(inner: T, route: RouteProgress) -> InOrder<T> {
        InOrder { inner, route }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let route = self.route.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(JsonRpcMessage::Notification(note)) = &message
                && let ServerNotification::ProgressNotification(progress) = &note.notification
            {
                route(&progress.params);
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
