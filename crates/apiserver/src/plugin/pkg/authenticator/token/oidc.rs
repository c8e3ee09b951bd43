//! JWT authenticators (upstream's
//! `k8s.io/apiserver/plugin/pkg/authenticator/token/oidc`), configured by
//! the `--oidc-*` flags or by `--authentication-config`: tokens of the
//! issuer for one of its audiences, signed by a key of the issuer's JWKS
//! (found through its discovery document — at the issuer or at
//! `discoveryURL` — fetched when first needed and again when a token names
//! an unknown key), mapped to a user by [`ClaimMapper`].

use std::sync::Arc;
use std::time::Duration;

use crate::authentication::cel::ClaimMapper;
use crate::authentication::{AuthError, TokenAuthenticator, TokenResponse};
use crate::util::webhook::https::{self, Url};
use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::Mutex;

/// How long one fetch of the provider's documents may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// One JWT authenticator's settings.
pub struct OidcConfig {
    /// The `iss` of its tokens.
    pub issuer: String,
    /// Where the discovery document is, when not under the issuer.
    pub discovery_url: Option<String>,
    /// Tokens must be for one of these.
    pub audiences: Vec<String>,
    /// PEM of the CA the provider's certificate must chain to.
    pub ca_pem: Option<Vec<u8>>,
    /// Allowed algorithms; empty: every asymmetric one.
    pub signing_algs: Vec<Algorithm>,
    pub mapper: ClaimMapper,
}

struct Key {
    kid: Option<String>,
    key: DecodingKey,
}

pub struct OidcAuthenticator {
    config: OidcConfig,
    tls: Arc<rustls::ClientConfig>,
    discovery: Url,
    /// The provider's keys, once fetched.
    keys: Mutex<Option<Arc<Vec<Key>>>>,
}

fn err(msg: impl Into<String>) -> AuthError {
    AuthError::Token(msg.into())
}

/// The claims of a JWT, unverified.
fn unverified_claims(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

impl OidcAuthenticator {
    pub fn new(config: OidcConfig) -> Result<Self, String> {
        let tls = Arc::new(https::client_config(config.ca_pem.as_deref())?);
        let discovery = match &config.discovery_url {
            Some(url) => Url::parse(url)?,
            None => Url::parse(&format!(
                "{}/.well-known/openid-configuration",
                config.issuer.trim_end_matches('/')
            ))?,
        };
        Ok(OidcAuthenticator {
            config,
            tls,
            discovery,
            keys: Mutex::new(None),
        })
    }

    /// Fetches the discovery document, then the key set it names.
    async fn fetch_keys(&self) -> Result<Vec<Key>, String> {
        let doc = https::call(&self.tls, &self.discovery, None, None).await?;
        if doc.get("issuer").and_then(Value::as_str) != Some(self.config.issuer.as_str()) {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {:?}",
                self.config.issuer,
                doc.get("issuer").and_then(Value::as_str).unwrap_or("")
            ));
        }
        let jwks_uri = doc
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or("oidc: the discovery document has no jwks_uri")?;
        let set = https::call(&self.tls, &Url::parse(jwks_uri)?, None, None).await?;
        let set: JwkSet = serde_json::from_value(set).map_err(|e| e.to_string())?;
        Ok(set
            .keys
            .iter()
            .filter_map(|jwk| {
                Some(Key {
                    kid: jwk.common.key_id.clone(),
                    key: DecodingKey::from_jwk(jwk).ok()?,
                })
            })
            .collect())
    }

    /// The keys, fetched now when missing or when `kid` is unknown.
    async fn keys(&self, kid: Option<&str>) -> Result<Arc<Vec<Key>>, AuthError> {
        let mut cached = self.keys.lock().await;
        let known = |keys: &Vec<Key>| {
            kid.is_none_or(|k| keys.iter().any(|key| key.kid.as_deref() == Some(k)))
        };
        if let Some(keys) = cached.as_ref().filter(|keys| known(keys)) {
            return Ok(keys.clone());
        }
        match tokio::time::timeout(FETCH_TIMEOUT, self.fetch_keys()).await {
            Ok(Ok(keys)) => {
                let keys = Arc::new(keys);
                *cached = Some(keys.clone());
                Ok(keys)
            }
            Ok(Err(e)) => {
                tracing::warn!(issuer = %self.config.issuer, error = %e, "oidc: fetching the provider's keys failed");
                cached
                    .clone()
                    .ok_or_else(|| err("oidc: authenticator not initialized"))
            }
            Err(_) => cached
                .clone()
                .ok_or_else(|| err("oidc: authenticator not initialized")),
        }
    }

    /// The verified claims of an ID token.
    async fn verify(&self, token: &str) -> Result<Value, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| err(format!("oidc: malformed jwt: {e}")))?;
        let symmetric = matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        );
        let allowed = if self.config.signing_algs.is_empty() {
            !symmetric
        } else {
            self.config.signing_algs.contains(&header.alg)
        };
        if !allowed {
            return Err(err(format!(
                "oidc: verify token: unexpected signature algorithm {:?}",
                header.alg
            )));
        }
        let keys = self.keys(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&self.config.audiences);
        let mut last = err("oidc: verify token: no matching key");
        for key in keys
            .iter()
            .filter(|k| header.kid.is_none() || k.kid == header.kid)
        {
            match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => last = err(format!("oidc: verify token: {}", self.reason(&e, token))),
            }
        }
        Err(last)
    }

    /// Why verification failed, in go-oidc's words where they differ.
    fn reason(&self, e: &jsonwebtoken::errors::Error, token: &str) -> String {
        let claims = unverified_claims(token).unwrap_or_default();
        match e.kind() {
            ErrorKind::InvalidAudience => {
                let got: Vec<String> = match claims.get("aud") {
                    Some(Value::String(a)) => vec![a.clone()],
                    Some(Value::Array(list)) => list
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    _ => Vec::new(),
                };
                let mut want = self.config.audiences.clone();
                want.sort();
                format!(
                    "oidc: expected audience in {} got {}",
                    go_quoted(&want),
                    go_quoted(&got)
                )
            }
            ErrorKind::ExpiredSignature => {
                let expiry = claims
                    .get("exp")
                    .and_then(Value::as_i64)
                    .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
                    .map(|t| t.format("%Y-%m-%d %H:%M:%S +0000 UTC").to_string())
                    .unwrap_or_default();
                format!("oidc: token is expired (Token Expiry: {expiry})")
            }
            ErrorKind::InvalidSignature => {
                "failed to verify signature: failed to verify id token signature".to_owned()
            }
            _ => e.to_string(),
        }
    }
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

#[async_trait]
impl TokenAuthenticator for OidcAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        // Tokens of other issuers are for other authenticators.
        let ours = unverified_claims(token)
            .and_then(|c| c.get("iss").and_then(Value::as_str).map(str::to_owned))
            .is_some_and(|iss| iss == self.config.issuer);
        if !ours {
            return Ok(None);
        }
        let claims = self.verify(token).await?;
        Ok(Some(TokenResponse {
            user: self.config.mapper.user(&claims)?,
            audiences: audiences.to_vec(),
        }))
    }

    fn audience_agnostic(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::authentication::cel::Mapping;

    fn authenticator() -> OidcAuthenticator {
        OidcAuthenticator::new(OidcConfig {
            issuer: "https://idp.example".into(),
            discovery_url: None,
            audiences: vec!["kubernetes".into()],
            ca_pem: None,
            signing_algs: Vec::new(),
            mapper: ClaimMapper {
                username: Mapping::Claim {
                    claim: "sub".into(),
                    prefix: String::new(),
                },
                groups: Mapping::None,
                uid: Mapping::None,
                extra: Vec::new(),
                claim_rules: Vec::new(),
                user_rules: Vec::new(),
            },
        })
        .unwrap()
    }

    /// An unsigned token carrying `claims` (only the payload is read).
    fn token(claims: Value) -> String {
        format!("e30.{}.c2ln", URL_SAFE_NO_PAD.encode(claims.to_string()))
    }

    #[tokio::test]
    async fn megabyte_tokens_of_other_issuers_are_passed_on_quickly() {
        let a = authenticator();
        let nested = format!("{}{}", "[".repeat(500_000), "]".repeat(500_000));
        let start = std::time::Instant::now();
        for token in [
            "a".repeat(1 << 20),
            format!("e30.{}.c2ln", URL_SAFE_NO_PAD.encode(&nested)),
            ".".repeat(1 << 20),
            token(json!({"iss": "https://other.example", "pad": "a".repeat(1 << 20)})),
        ] {
            assert!(matches!(a.authenticate_token(&token, &[]).await, Ok(None)));
        }
        let took = start.elapsed();
        assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    }

    #[test]
    fn verification_failures_read_like_go_oidc() {
        let a = authenticator();
        let audience = jsonwebtoken::errors::Error::from(ErrorKind::InvalidAudience);
        assert_eq!(
            a.reason(&audience, &token(json!({"aud": ["other", "x"]}))),
            "oidc: expected audience in [\"kubernetes\"] got [\"other\" \"x\"]"
        );
        let expired = jsonwebtoken::errors::Error::from(ErrorKind::ExpiredSignature);
        assert_eq!(
            a.reason(&expired, &token(json!({"exp": 0}))),
            "oidc: token is expired (Token Expiry: 1970-01-01 00:00:00 +0000 UTC)"
        );
        assert_eq!(
            a.reason(
                &jsonwebtoken::errors::Error::from(ErrorKind::InvalidSignature),
                "x"
            ),
            "failed to verify signature: failed to verify id token signature"
        );
    }
}
