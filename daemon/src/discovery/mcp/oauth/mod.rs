//! OAuth for HTTP and SSE MCP servers (the MCP authorization spec, as
//! 0.61 does it): discovery of the protected-resource and
//! authorization-server metadata, client registration or configured
//! credentials, PKCE, the token requests, the token store, and the login
//! step whose redirect comes back to a loopback listener.
//!
//! What is pure (challenge parsing, well-known URLs, PKCE, the
//! authorization URL) lives apart from what does IO (`fetch.rs`,
//! `grant.rs`, `store.rs`, `loopback.rs`); `flow.rs` ties them together.

pub mod assertion;
pub mod challenge;
pub mod cross_app;
pub mod fetch;
pub mod flow;
pub mod grant;
pub mod loopback;
pub mod pkce;
pub mod refusal;
pub mod server_auth;
pub mod settings;
pub mod store;
pub mod wellknown;

pub use settings::OAuthSettings;
pub use store::{StoredToken, TokenStore};

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("bad URL {0:?}")]
    Url(String),
    #[error("{url}: {problem}")]
    Http { url: String, problem: String },
    #[error("no authorization server found for {0} (no metadata and no fallback)")]
    NoServer(String),
    #[error(
        "the protected resource {advertised} does not cover {server}: refusing to send it a token"
    )]
    ResourceMismatch { advertised: String, server: String },
    #[error("the authorization server does not support PKCE with S256")]
    NoPkce,
    #[error("no client: the server offers no registration and no `oauth.clientId` is configured")]
    NoClient,
    #[error("the token endpoint refused: {0}")]
    Token(String),
    #[error("the authorization redirect carried {0}")]
    Redirect(String),
    #[error("no login in progress for {0}")]
    NoLogin(String),
    #[error("the login was not completed within {0:?}")]
    Timeout(std::time::Duration),
    #[error(
        "the server refuses for want of scope `{asked}`, which the token already has (`{granted}`): not asking again"
    )]
    ScopeRefused { asked: String, granted: String },
    #[error("token store {path}: {problem}")]
    Store { path: String, problem: String },
}

fn http_error(url: &str, problem: impl std::fmt::Display) -> OAuthError {
    OAuthError::Http {
        url: url.to_owned(),
        problem: problem.to_string(),
    }
}
