//! `private_key_jwt` (RFC 7523 §2.2, SEP-1046): the signed JWT a client
//! authenticates with at the token endpoint instead of a secret, from a
//! PKCS#8 PEM key, ES256 or RS256 (signed with ring, already in the tree).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};

use super::OAuthError;
use super::pkce::random_token;

/// The `client_assertion_type` of a JWT client assertion.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

/// A client's signing key (never written to the token store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionKey {
    pub pem: String,
    /// `ES256` or `RS256`.
    pub algorithm: String,
    /// The `aud` claim: the authorization server's issuer (else its
    /// token endpoint).
    pub audience: String,
}

fn bad_key(problem: impl std::fmt::Display) -> OAuthError {
    OAuthError::Token(format!("the client's private key cannot sign: {problem}"))
}

/// The DER of a `-----BEGIN PRIVATE KEY-----` (PKCS#8) PEM.
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, OAuthError> {
    let body = pem
        .split("-----BEGIN PRIVATE KEY-----")
        .nth(1)
        .and_then(|rest| rest.split("-----END PRIVATE KEY-----").next())
        .ok_or_else(|| bad_key("not a PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)"))?;
    let compact: String = body
        .replace("\\n", "\n")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    STANDARD.decode(compact).map_err(bad_key)
}

/// The signed assertion `client_id` presents to `key.audience` at `now`.
pub fn sign(key: &AssertionKey, client_id: &str, now: u64) -> Result<String, OAuthError> {
    let der = pkcs8_der(&key.pem)?;
    let header = serde_json::json!({"alg": key.algorithm, "typ": "JWT"});
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": key.audience,
        "iat": now,
        "exp": now + LIFETIME_SECS,
        "jti": random_token(),
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let rng = SystemRandom::new();
    let signature = match key.algorithm.as_str() {
        "ES256" => {
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .map_err(bad_key)?;
            pair.sign(&rng, input.as_bytes())
                .map_err(bad_key)?
                .as_ref()
                .to_vec()
        }
        "RS256" => {
            let pair = RsaKeyPair::from_pkcs8(&der).map_err(bad_key)?;
            let mut out = vec![0u8; pair.public().modulus_len()];
            pair.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut out)
                .map_err(bad_key)?;
            out
        }
        other => {
            return Err(bad_key(format!(
                "unsupported algorithm {other:?} (ES256, RS256)"
            )));
        }
    };
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    use super::*;

    #[test]
    fn an_es256_assertion_verifies_and_names_the_client() {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(der.as_ref())
        );
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).unwrap();
        let key = AssertionKey {
            pem,
            algorithm: "ES256".into(),
            audience: "http://as".into(),
        };
        let jwt = sign(&key, "cid", 1000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "cid");
        assert_eq!(claims["sub"], "cid");
        assert_eq!(claims["aud"], "http://as");
        assert_eq!(claims["exp"], 1300);
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        let wrong = AssertionKey {
            algorithm: "HS256".into(),
            ..key.clone()
        };
        assert!(sign(&wrong, "cid", 0).is_err());
        let not_pem = AssertionKey {
            pem: "x".into(),
            ..key
        };
        assert!(sign(&not_pem, "cid", 0).is_err());
    }
}
