//! A server entry's `oauth` block, as 0.61 reads it (`MCPOAuthConfig`):
//! `enabled`, `clientId`, `clientSecret`, `authorizationUrl`, `tokenUrl`,
//! `scopes`, `audiences`, `redirectUri`, `tokenParamName`,
//! `registrationUrl`; and, beyond 0.61, `clientMetadataUrl` (a client ID
//! metadata document, SEP-991), `privateKeyPem` and `signingAlgorithm`
//! (`private_key_jwt`, RFC 7523), `idpTokenUrl`, `idpClientId` and
//! `idpIdToken` (cross-app access, SEP-990).

use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthSettings {
    pub enabled: bool,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub authorization_url: Option<String>,
    pub token_url: Option<String>,
    pub registration_url: Option<String>,
    pub scopes: Vec<String>,
    pub audiences: Vec<String>,
    pub redirect_uri: Option<String>,
    /// The query parameter the token goes in instead of the
    /// `Authorization` header (SSE only in 0.61).
    pub token_param_name: Option<String>,
    /// The HTTPS URL of geminid's client ID metadata document, used as the
    /// client id where the authorization server supports such documents
    /// (instead of registering).
    pub client_metadata_url: Option<String>,
    /// A PKCS#8 PEM private key: the client authenticates with a signed
    /// JWT (`private_key_jwt`) instead of a secret.
    pub private_key_pem: Option<String>,
    /// `ES256` (the default) or `RS256`.
    pub signing_algorithm: Option<String>,
    /// Cross-app access: the identity provider's token endpoint, the
    /// client id there, and the ID token it exchanges for an ID-JAG.
    pub idp_token_url: Option<String>,
    pub idp_client_id: Option<String>,
    pub idp_id_token: Option<String>,
}

/// Reads the `oauth` block; a field of the wrong type is a problem (the
/// entry is then refused rather than used without it).
pub fn parse(block: &Value) -> Result<OAuthSettings, String> {
    let Some(map) = block.as_object() else {
        return Err("`oauth` must be an object".into());
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`oauth.{key}` must be a string")),
        }
    };
    let list = |key: &str| -> Result<Vec<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("`oauth.{key}` must be a list of strings"))
                })
                .collect(),
            Some(_) => Err(format!("`oauth.{key}` must be a list of strings")),
        }
    };
    let enabled = match map.get("enabled") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`oauth.enabled` must be true or false".into()),
    };
    Ok(OAuthSettings {
        enabled,
        client_id: text("clientId")?,
        client_secret: text("clientSecret")?,
        authorization_url: text("authorizationUrl")?,
        token_url: text("tokenUrl")?,
        registration_url: text("registrationUrl")?,
        scopes: list("scopes")?,
        audiences: list("audiences")?,
        redirect_uri: text("redirectUri")?,
        token_param_name: text("tokenParamName")?,
        client_metadata_url: metadata_url(text("clientMetadataUrl")?)?,
        private_key_pem: text("privateKeyPem")?,
        idp_token_url: text("idpTokenUrl")?,
        idp_client_id: text("idpClientId")?,
        idp_id_token: text("idpIdToken")?,
        signing_algorithm: match text("signingAlgorithm")?.as_deref() {
            None => None,
            Some(alg @ ("ES256" | "RS256")) => Some(alg.to_owned()),
            Some(other) => {
                return Err(format!(
                    "`oauth.signingAlgorithm` must be ES256 or RS256, not {other:?}"
                ));
            }
        },
    })
}

/// A client ID metadata document's URL must be HTTPS with a path (SEP-991).
fn metadata_url(url: Option<String>) -> Result<Option<String>, String> {
    let Some(text) = url else { return Ok(None) };
    match reqwest::Url::parse(&text) {
        Ok(u) if u.scheme() == "https" && u.path() != "/" && !u.path().is_empty() => Ok(Some(text)),
        _ => Err(format!(
            "`oauth.clientMetadataUrl` must be an https URL with a path, not {text:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_block_as_0_61_names_it() {
        let s = parse(&json!({
            "enabled": true, "clientId": "c", "clientSecret": "s",
            "scopes": ["a", "b"], "redirectUri": "http://localhost:7777/cb"
        }))
        .unwrap();
        assert!(s.enabled);
        assert_eq!(s.client_id.as_deref(), Some("c"));
        assert_eq!(s.scopes, ["a", "b"]);
        assert!(parse(&json!({"scopes": "a"})).is_err());
        assert!(parse(&json!({"enabled": "yes"})).is_err());
        assert!(parse(&json!([])).is_err());
        let cimd = "https://example.com/geminid.json";
        let s = parse(&json!({"clientMetadataUrl": cimd})).unwrap();
        assert_eq!(s.client_metadata_url.as_deref(), Some(cimd));
        for bad in [
            "http://example.com/c.json",
            "https://example.com/",
            "c.json",
        ] {
            assert!(parse(&json!({"clientMetadataUrl": bad})).is_err(), "{bad}");
        }
    }
}
