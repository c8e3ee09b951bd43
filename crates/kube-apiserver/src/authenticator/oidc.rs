//! OpenID Connect ID tokens (`--oidc-*`, upstream's OIDC authenticator):
//! tokens of `--oidc-issuer-url` for `--oidc-client-id`, signed by a key of
//! the issuer's JWKS (found through its discovery document, fetched when
//! first needed and again when a token names an unknown key), mapped to a
//! user by the username and groups claims with their prefixes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::{AuthError, TokenAuthenticator, TokenResponse, UserInfo};
use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::Mutex;

use super::https::{self, Url};

/// How long one fetch of the provider's documents may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The `--oidc-*` settings.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    /// PEM of `--oidc-ca-file`.
    pub ca_pem: Option<Vec<u8>>,
    pub username_claim: String,
    /// `--oidc-username-prefix` as given ("" and "-" have meanings).
    pub username_prefix: String,
    pub groups_claim: String,
    pub groups_prefix: String,
    pub required_claims: BTreeMap<String, String>,
    pub signing_algs: Vec<Algorithm>,
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
        let discovery = Url::parse(&format!(
            "{}/.well-known/openid-configuration",
            config.issuer.trim_end_matches('/')
        ))?;
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
        if !self.config.signing_algs.contains(&header.alg) {
            return Err(err(format!(
                "oidc: verify token: unexpected signature algorithm {:?}",
                header.alg
            )));
        }
        let keys = self.keys(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.client_id]);
        let mut last = err("oidc: verify token: no matching key");
        for key in keys
            .iter()
            .filter(|k| header.kid.is_none() || k.kid == header.kid)
        {
            match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => last = err(format!("oidc: verify token: {e}")),
            }
        }
        Err(last)
    }

    /// The user the verified claims describe.
    fn user(&self, claims: &Value) -> Result<UserInfo, AuthError> {
        let c = &self.config;
        let name = claims
            .get(&c.username_claim)
            .and_then(Value::as_str)
            .ok_or_else(|| {
                err(format!(
                    "oidc: parse username claims {:?}: claim not present",
                    c.username_claim
                ))
            })?;
        if c.username_claim == "email"
            && claims
                .get("email_verified")
                .is_some_and(|v| v != &Value::Bool(true))
        {
            return Err(err("oidc: email not verified"));
        }
        let prefix = match c.username_prefix.as_str() {
            "-" => String::new(),
            "" if c.username_claim != "email" => format!("{}#", c.issuer),
            given => given.to_owned(),
        };
        let groups = match claims.get(&c.groups_claim) {
            _ if c.groups_claim.is_empty() => Vec::new(),
            Some(Value::String(g)) => vec![g.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(_) => {
                return Err(err(format!(
                    "oidc: parse groups claim {:?}: not a string or an array of strings",
                    c.groups_claim
                )))
            }
            None => Vec::new(),
        };
        for (claim, want) in &c.required_claims {
            if claims.get(claim).and_then(Value::as_str) != Some(want.as_str()) {
                return Err(err(format!(
                    "oidc: required claim {claim} not present or unexpected value"
                )));
            }
        }
        Ok(UserInfo {
            name: format!("{prefix}{name}"),
            groups: groups
                .into_iter()
                .map(|g| format!("{}{g}", c.groups_prefix))
                .collect(),
            ..UserInfo::default()
        })
    }
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
            user: self.user(&claims)?,
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

    fn authenticator(prefix: &str, claim: &str) -> OidcAuthenticator {
        OidcAuthenticator::new(OidcConfig {
            issuer: "https://idp.example".into(),
            client_id: "kubernetes".into(),
            ca_pem: None,
            username_claim: claim.into(),
            username_prefix: prefix.into(),
            groups_claim: "groups".into(),
            groups_prefix: "oidc:".into(),
            required_claims: BTreeMap::from([("hd".to_owned(), "example.com".to_owned())]),
            signing_algs: vec![Algorithm::RS256],
        })
        .unwrap()
    }

    #[test]
    fn claims_map_to_users_with_upstreams_prefixes() {
        let claims = json!({"sub": "123", "email": "a@example.com", "email_verified": true,
            "groups": ["dev", "ops"], "hd": "example.com"});
        let user = authenticator("", "sub").user(&claims).unwrap();
        assert_eq!(user.name, "https://idp.example#123");
        assert_eq!(user.groups, vec!["oidc:dev", "oidc:ops"]);
        assert_eq!(
            authenticator("", "email").user(&claims).unwrap().name,
            "a@example.com"
        );
        assert_eq!(authenticator("-", "sub").user(&claims).unwrap().name, "123");
        assert_eq!(
            authenticator("acme:", "sub").user(&claims).unwrap().name,
            "acme:123"
        );
        let unverified =
            json!({"sub": "1", "email": "a@b", "email_verified": false, "hd": "example.com"});
        assert!(authenticator("", "email").user(&unverified).is_err());
        let other_domain = json!({"sub": "1", "hd": "other.com"});
        assert!(authenticator("", "sub").user(&other_domain).is_err());
    }
}
