//! Requests to the authorization server: dynamic client registration (RFC
//! 7591) and the token endpoint's grants (authorization code with PKCE,
//! refresh, client credentials), with the client authenticating as it
//! registered.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::store::{Client, ClientAuth, StoredToken, now_secs};
use super::{OAuthError, assertion, http_error};

#[derive(Debug, Deserialize)]
struct Registered {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// Picks how a client with (or without) a secret authenticates, from what
/// the server supports (RFC 8414: `client_secret_basic` when unsaid).
pub fn choose_auth(has_secret: bool, supported: Option<&[String]>) -> ClientAuth {
    if !has_secret {
        return ClientAuth::None;
    }
    let supports = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if supports("client_secret_basic") {
        ClientAuth::Basic
    } else if supports("client_secret_post") {
        ClientAuth::Post
    } else {
        ClientAuth::Basic
    }
}

fn method_name(auth: ClientAuth) -> &'static str {
    match auth {
        ClientAuth::Basic => "client_secret_basic",
        ClientAuth::Post => "client_secret_post",
        ClientAuth::None => "none",
        ClientAuth::PrivateKeyJwt => "private_key_jwt",
    }
}

/// Registers geminid as a client with `redirect_uri`.
pub async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    redirect_uri: &str,
    scope: Option<&str>,
    supported_auth: Option<&[String]>,
) -> Result<Client, OAuthError> {
    // A public client unless the server takes no `none`.
    let wanted = match supported_auth {
        Some(s) if !s.iter().any(|m| m == "none") => {
            method_name(choose_auth(true, Some(s))).to_owned()
        }
        _ => "none".to_owned(),
    };
    let mut body = serde_json::json!({
        "client_name": "geminid",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
    });
    if let Some(scope) = scope {
        body["scope"] = scope.into();
    }
    let response = http
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(|e| http_error(endpoint, e))?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        return Err(http_error(
            endpoint,
            format!("registration refused: HTTP {status}: {text}"),
        ));
    }
    let r: Registered = response.json().await.map_err(|e| http_error(endpoint, e))?;
    let auth = match r.token_endpoint_auth_method.as_deref() {
        Some("client_secret_post") => ClientAuth::Post,
        Some("client_secret_basic") => ClientAuth::Basic,
        Some("none") => ClientAuth::None,
        _ => choose_auth(r.client_secret.is_some(), supported_auth),
    };
    Ok(Client {
        client_id: r.client_id,
        client_secret: r.client_secret,
        auth,
        assertion_key: None,
    })
}

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
    scope: Option<String>,
}

/// What a token request carries besides the grant's own fields.
pub struct TokenRequest<'a> {
    pub token_url: &'a str,
    pub client: &'a Client,
    pub resource: Option<&'a str>,
    pub grant: &'a str,
    pub fields: Vec<(&'a str, String)>,
}

/// POSTs to the token endpoint and makes what comes back a stored token
/// (keeping the old refresh token when a refresh returns none).
pub async fn token(
    http: &reqwest::Client,
    request: TokenRequest<'_>,
    old_refresh: Option<String>,
) -> Result<StoredToken, OAuthError> {
    let TokenRequest {
        token_url,
        client,
        resource,
        grant,
        mut fields,
    } = request;
    fields.push(("grant_type", grant.to_owned()));
    if let Some(resource) = resource {
        fields.push(("resource", resource.to_owned()));
    }
    let mut post = http
        .post(token_url)
        .header(reqwest::header::ACCEPT, "application/json");
    match (client.auth, &client.client_secret) {
        (ClientAuth::PrivateKeyJwt, _) => {
            let Some(key) = &client.assertion_key else {
                return Err(OAuthError::Token(
                    "a private_key_jwt client without its key (configure oauth.privateKeyPem)"
                        .into(),
                ));
            };
            fields.push(("client_id", client.client_id.clone()));
            fields.push((
                "client_assertion_type",
                assertion::ASSERTION_TYPE.to_owned(),
            ));
            fields.push((
                "client_assertion",
                assertion::sign(key, &client.client_id, now_secs())?,
            ));
        }
        (ClientAuth::Basic, Some(secret)) => {
            // RFC 6749 §2.3.1: both form-urlencoded before joining.
            let id = form_encode(&client.client_id);
            let secret = form_encode(secret);
            let basic = STANDARD.encode(format!("{id}:{secret}"));
            post = post.header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"));
        }
        (ClientAuth::Post, Some(secret)) => {
            fields.push(("client_id", client.client_id.clone()));
            fields.push(("client_secret", secret.clone()));
        }
        _ => fields.push(("client_id", client.client_id.clone())),
    }
    let response = post
        .form(&fields)
        .send()
        .await
        .map_err(|e| http_error(token_url, e))?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        return Err(OAuthError::Token(format!("HTTP {status}: {text}")));
    }
    let answer: TokenAnswer = response
        .json()
        .await
        .map_err(|e| OAuthError::Token(e.to_string()))?;
    Ok(StoredToken {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token.or(old_refresh),
        expires_at: answer.expires_in.map(|s| now_secs() + s),
        scope: answer.scope,
        token_url: token_url.to_owned(),
        client: client.clone(),
        resource: resource.map(str::to_owned),
        grant: grant.to_owned(),
    })
}

fn form_encode(text: &str) -> String {
    reqwest::Url::parse_with_params("x:", [("v", text)])
        .ok()
        .and_then(|u| u.query().map(|q| q.trim_start_matches("v=").to_owned()))
        .unwrap_or_else(|| text.to_owned())
}

/// A new access token from the stored refresh token, for the same client
/// and resource.
pub async fn refresh(http: &reqwest::Client, old: &StoredToken) -> Result<StoredToken, OAuthError> {
    let Some(refresh_token) = old.refresh_token.clone() else {
        return Err(OAuthError::Token("no refresh token".into()));
    };
    let request = TokenRequest {
        token_url: &old.token_url,
        client: &old.client,
        resource: old.resource.as_deref(),
        grant: "refresh_token",
        fields: vec![("refresh_token", refresh_token.clone())],
    };
    let mut token = token(http, request, Some(refresh_token)).await?;
    token.grant = old.grant.clone();
    if token.scope.is_none() {
        token.scope = old.scope.clone();
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_auth_follows_what_the_server_supports() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(choose_auth(false, None), ClientAuth::None);
        assert_eq!(choose_auth(true, None), ClientAuth::Basic);
        assert_eq!(
            choose_auth(true, Some(&s(&["client_secret_post"]))),
            ClientAuth::Post
        );
        assert_eq!(
            choose_auth(
                true,
                Some(&s(&["client_secret_post", "client_secret_basic"]))
            ),
            ClientAuth::Basic
        );
        assert_eq!(form_encode("a b:c"), "a+b%3Ac");
    }
}
