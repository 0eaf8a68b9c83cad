//! Finding an authorization refusal (401 or 403 with its
//! `WWW-Authenticate` challenge) in what rmcp reports for a failed
//! `initialize`, listing or call over streamable HTTP.

use std::error::Error;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};

use super::challenge::{self, Challenge};

/// A refusal: the HTTP status (401, or 403 for too narrow a scope) and
/// what the server asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub challenge: Challenge,
}

fn from_transport(e: &DynamicTransportError) -> Option<Refusal> {
    let mut current: Option<&(dyn Error + 'static)> = Some(e.error.as_ref());
    while let Some(err) = current {
        if let Some(a) = err.downcast_ref::<AuthRequiredError>() {
            return Some(Refusal {
                status: 401,
                challenge: challenge::parse(&a.www_authenticate_header),
            });
        }
        if let Some(i) = err.downcast_ref::<InsufficientScopeError>() {
            let mut challenge = challenge::parse(&i.www_authenticate_header);
            if challenge.scope.is_none() {
                challenge.scope = i.required_scope.clone();
            }
            return Some(Refusal {
                status: 403,
                challenge,
            });
        }
        current = err.source();
    }
    None
}

pub fn of_service(e: &ServiceError) -> Option<Refusal> {
    match e {
        ServiceError::TransportSend(t) => from_transport(t),
        _ => None,
    }
}

pub fn of_initialize(e: &ClientInitializeError) -> Option<Refusal> {
    match e {
        ClientInitializeError::TransportError { error, .. } => from_transport(error),
        _ => None,
    }
}
