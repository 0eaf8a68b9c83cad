//! Cross-app access (SEP-990, enterprise-managed authorization): an
//! identity provider's ID token is exchanged at the provider for an
//! identity assertion grant (ID-JAG, RFC 8693 token exchange), which the
//! MCP server's authorization server takes in the jwt-bearer grant (RFC
//! 7523 §2.1). No user step in between.

use serde::Deserialize;

use super::flow::Plan;
use super::grant::{self, TokenRequest};
use super::store::{Client, StoredToken};
use super::{OAuthError, OAuthSettings, http_error, wellknown};

pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// What the settings give for cross-app access, when they give it all.
pub struct Provider<'a> {
    pub token_url: &'a str,
    pub client_id: Option<&'a str>,
    pub id_token: &'a str,
}

pub fn provider(settings: &OAuthSettings) -> Option<Provider<'_>> {
    Some(Provider {
        token_url: settings.idp_token_url.as_deref()?,
        client_id: settings.idp_client_id.as_deref(),
        id_token: settings.idp_id_token.as_deref()?,
    })
}

#[derive(Deserialize)]
struct Exchanged {
    access_token: String,
    issued_token_type: Option<String>,
}

/// The ID-JAG for the authorization server of `plan`, from the provider.
async fn exchange(
    http: &reqwest::Client,
    provider: &Provider<'_>,
    plan: &Plan,
) -> Result<String, OAuthError> {
    let audience = match &plan.metadata.issuer {
        Some(issuer) => issuer.clone(),
        None => reqwest::Url::parse(&plan.token_endpoint)
            .map(|u| wellknown::origin(&u).to_string())
            .map_err(|_| OAuthError::Url(plan.token_endpoint.clone()))?,
    };
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE.to_owned()),
        ("subject_token", provider.id_token.to_owned()),
        ("subject_token_type", ID_TOKEN.to_owned()),
        ("requested_token_type", ID_JAG.to_owned()),
        ("audience", audience),
    ];
    if let Some(resource) = &plan.resource {
        form.push(("resource", resource.clone()));
    }
    if let Some(scope) = &plan.scope {
        form.push(("scope", scope.clone()));
    }
    if let Some(id) = provider.client_id {
        form.push(("client_id", id.to_owned()));
    }
    let url = provider.token_url;
    let response = http
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form)
        .send()
        .await
        .map_err(|e| http_error(url, e))?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        return Err(OAuthError::Token(format!(
            "the identity provider refused the token exchange: HTTP {status}: {text}"
        )));
    }
    let answer: Exchanged = response.json().await.map_err(|e| http_error(url, e))?;
    if answer
        .issued_token_type
        .as_deref()
        .is_some_and(|t| t != ID_JAG)
    {
        return Err(OAuthError::Token(format!(
            "the identity provider issued {:?}, not an ID-JAG",
            answer.issued_token_type.unwrap_or_default()
        )));
    }
    Ok(answer.access_token)
}

/// The access token: the provider's ID-JAG presented in the jwt-bearer
/// grant by `client`.
pub async fn token(
    http: &reqwest::Client,
    provider: &Provider<'_>,
    plan: &Plan,
    client: &Client,
) -> Result<StoredToken, OAuthError> {
    let assertion = exchange(http, provider, plan).await?;
    let mut fields = vec![("assertion", assertion)];
    if let Some(scope) = &plan.scope {
        fields.push(("scope", scope.clone()));
    }
    let request = TokenRequest {
        token_url: &plan.token_endpoint,
        client,
        resource: plan.resource.as_deref(),
        grant: JWT_BEARER,
        fields,
    };
    let mut token = grant::token(http, request, None).await?;
    if token.scope.is_none() {
        token.scope = plan.scope.clone();
    }
    Ok(token)
}
