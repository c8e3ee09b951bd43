//! Service-account tokens (upstream's `pkg/serviceaccount`): the claims of
//! bound and legacy tokens, signing them for TokenRequest and the tokens
//! controller, and the JWT authenticator that verifies them — issuer,
//! signature, audiences, lifetime, then for bound tokens that the service
//! account and the object the token is bound to still exist with the same
//! UID, and for legacy tokens the checks of [`legacy`].

pub mod getter;
pub mod keys;
pub mod legacy;
pub mod openid;

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::authentication::user::{UserInfo, CREDENTIAL_ID_KEY};
use apiserver::authentication::{AuthError, TokenAuthenticator, TokenResponse};
use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Header, Validation};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use self::getter::{str_at, Kind, Objects};
use self::keys::{PublicKey, SigningKey};
use self::legacy::{LegacyClaims, LEGACY_TOKEN_ANNOTATION};

pub const USERNAME_PREFIX: &str = "system:serviceaccount:";
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
/// Clock skew tolerated on expiry, not-before and deletion (go-jose's).
const LEEWAY_SECONDS: i64 = 60;

/// A name and UID inside the `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The private `kubernetes.io` claim of bound tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaim {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default)]
    pub serviceaccount: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

impl KubernetesClaim {
    /// Legacy tokens carry no `kubernetes.io` claim.
    fn is_empty(&self) -> bool {
        self == &KubernetesClaim::default()
    }
}

/// A bound service-account token's claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    #[serde(default)]
    pub iss: String,
    #[serde(default)]
    pub sub: String,
    #[serde(default, deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(
        rename = "kubernetes.io",
        default,
        skip_serializing_if = "KubernetesClaim::is_empty"
    )]
    pub kubernetes: KubernetesClaim,
    /// The private claims of legacy (secret-based) tokens.
    #[serde(flatten)]
    pub legacy: LegacyClaims,
}

/// `aud` may be one string or an array (RFC 7519).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

pub fn username(namespace: &str, name: &str) -> String {
    format!("{USERNAME_PREFIX}{namespace}:{name}")
}

pub fn groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.into(),
        format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

#[derive(Debug, thiserror::Error)]
#[error("failed to generate token: {0}")]
pub struct SignError(#[from] jsonwebtoken::errors::Error);

/// Signs tokens with the signing key (upstream's TokenGenerator).
pub struct TokenGenerator {
    key: SigningKey,
    /// The first `--service-account-issuer`.
    pub issuer: String,
}

impl TokenGenerator {
    pub fn new(key: SigningKey, issuer: String) -> Self {
        TokenGenerator { key, issuer }
    }

    pub fn sign(&self, claims: &Claims) -> Result<String, SignError> {
        let mut header = Header::new(self.key.public.alg);
        // Upstream's tokens carry only alg and kid.
        header.typ = None;
        header.kid = Some(self.key.public.kid.clone());
        Ok(jsonwebtoken::encode(&header, claims, &self.key.encoding)?)
    }
}

/// The unverified issuer of a JWT, to tell whether it is ours at all.
fn unverified_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

fn err(msg: impl Into<String>) -> AuthError {
    AuthError::Token(msg.into())
}

/// Which tokens a [`JwtAuthenticator`] validates, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Bound tokens (TokenRequest): the service account and bound objects
    /// are always looked up.
    Bound,
    /// Legacy secret-based tokens; `lookup` is `--service-account-lookup`.
    Legacy { lookup: bool },
}

/// Verifies service-account tokens (upstream's JWT token authenticator
/// with the bound-token or the legacy validator).
pub struct JwtAuthenticator {
    pub kind: TokenKind,
    /// `--service-account-issuer` (or the legacy issuer): tokens of other
    /// issuers are not ours.
    pub issuers: Vec<String>,
    /// `--service-account-key-file` keys.
    pub keys: Vec<PublicKey>,
    /// `--api-audiences`: what tokens without audiences are valid for.
    pub implicit_audiences: Vec<String>,
    pub objects: Arc<Objects>,
}

impl JwtAuthenticator {
    /// The claims of a token signed by one of the keys.
    fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        let kid = jsonwebtoken::decode_header(token).ok().and_then(|h| h.kid);
        let mut errors: Vec<String> = Vec::new();
        // The key the token names first, then the others.
        let mut keys: Vec<&PublicKey> = self.keys.iter().collect();
        keys.sort_by_key(|k| Some(&k.kid) != kid.as_ref());
        for key in keys {
            let mut validation = Validation::new(key.alg);
            validation.validate_exp = false;
            validation.validate_nbf = false;
            validation.validate_aud = false;
            validation.required_spec_claims.clear();
            match jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => {
                    let msg = match e.kind() {
                        ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => {
                            "go-jose/go-jose: error in cryptographic primitive".to_owned()
                        }
                        _ => e.to_string(),
                    };
                    if !errors.contains(&msg) {
                        errors.push(msg);
                    }
                }
            }
        }
        Err(match errors.as_slice() {
            [one] => err(one.clone()),
            _ => err(format!("[{}]", errors.join(", "))),
        })
    }

    /// Expiry and not-before, with go-jose's leeway.
    fn check_times(claims: &Claims, now: i64) -> Result<(), AuthError> {
        if claims.exp.is_some_and(|exp| now > exp + LEEWAY_SECONDS) {
            return Err(err("service account token has expired"));
        }
        if claims.nbf.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err(err("service account token is not valid yet"));
        }
        Ok(())
    }

    /// Checks the service account and the bound objects still exist with
    /// the token's UIDs (upstream's validator) and returns the user.
    async fn validate(&self, claims: &Claims, now: i64) -> Result<UserInfo, AuthError> {
        let k = &claims.kubernetes;
        let ns = k.namespace.as_str();
        let deleted = |obj: &Value| {
            obj.pointer("/metadata/deletionTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| t.timestamp() < now - LEEWAY_SECONDS)
        };
        let sa_name = &k.serviceaccount.name;
        let sa = self
            .objects
            .get(Kind::ServiceAccount, ns, sa_name)
            .await
            .map_err(|e| err(e.message))?;
        if deleted(&sa) {
            return Err(err(format!(
                "service account {ns}/{sa_name} has been deleted"
            )));
        }
        let sa_uid = str_at(&sa, "/metadata/uid");
        if sa_uid != k.serviceaccount.uid {
            return Err(err(format!(
                "service account UID ({sa_uid}) does not match claim ({})",
                k.serviceaccount.uid
            )));
        }
        let mut extra = BTreeMap::new();
        if let Some(secret) = &k.secret {
            self.check_bound(
                Kind::Secret,
                ns,
                secret,
                &deleted,
                "secret",
                "service account secret ref",
            )
            .await?;
        }
        if let Some(pod) = &k.pod {
            self.check_bound(
                Kind::Pod,
                ns,
                pod,
                &deleted,
                "pod",
                "service account pod ref",
            )
            .await?;
            extra.insert(POD_NAME_KEY.to_owned(), vec![pod.name.clone()]);
            extra.insert(POD_UID_KEY.to_owned(), vec![pod.uid.clone()]);
        }
        if let Some(node) = &k.node {
            // A pod-bound token only reports its pod's node; a node-bound
            // token is checked against the node.
            if k.pod.is_none() {
                self.check_bound(
                    Kind::Node,
                    "",
                    node,
                    &deleted,
                    "node",
                    "service account node ref",
                )
                .await?;
            }
            extra.insert(NODE_NAME_KEY.to_owned(), vec![node.name.clone()]);
            if !node.uid.is_empty() {
                extra.insert(NODE_UID_KEY.to_owned(), vec![node.uid.clone()]);
            }
        }
        if !claims.jti.is_empty() {
            extra.insert(
                CREDENTIAL_ID_KEY.to_owned(),
                vec![format!("JTI={}", claims.jti)],
            );
        }
        Ok(UserInfo {
            name: username(ns, sa_name),
            uid: k.serviceaccount.uid.clone(),
            groups: groups(ns),
            extra,
        })
    }

    /// A bound object must exist, not be long deleted, and have the UID.
    async fn check_bound(
        &self,
        kind: Kind,
        namespace: &str,
        bound: &Ref,
        deleted: &(dyn Fn(&Value) -> bool + Sync),
        what: &str,
        claim: &str,
    ) -> Result<(), AuthError> {
        let invalidated = || err("service account token has been invalidated");
        let obj = self
            .objects
            .get(kind, namespace, &bound.name)
            .await
            .map_err(|_| invalidated())?;
        if deleted(&obj) {
            return Err(invalidated());
        }
        let uid = str_at(&obj, "/metadata/uid");
        if uid != bound.uid {
            return Err(err(format!(
                "{what} UID ({uid}) does not match {claim} claim ({})",
                bound.uid
            )));
        }
        Ok(())
    }
}

/// Audit annotation of an extended token used after its `warnafter`.
pub const STALE_TOKEN_ANNOTATION: &str = "authentication.k8s.io/stale-token";

/// Upstream marks the use of an extended (kubelet) token past the lifetime
/// it was asked for, so that clients that do not refresh can be found.
fn annotate_stale(claims: &Claims, now: i64) {
    if let Some(warnafter) = claims.kubernetes.warnafter.filter(|w| *w != 0 && now > *w) {
        apiserver::audit::add_authentication_annotation(
            STALE_TOKEN_ANNOTATION,
            format!(
                "subject: {}, seconds after warning threshold: {}",
                claims.sub,
                now - warnafter
            ),
        );
    }
}

#[async_trait]
impl TokenAuthenticator for JwtAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        let Some(issuer) = unverified_issuer(token) else {
            return Ok(None);
        };
        if !self.issuers.contains(&issuer) {
            return Ok(None);
        }
        let claims = self.verify(token)?;
        if !self.issuers.contains(&claims.iss) {
            return Err(err(format!("token issuer {:?} is invalid", claims.iss)));
        }
        let token_audiences = if claims.aud.is_empty() {
            // Only legacy tokens lack audiences; upstream audits their use.
            apiserver::audit::add_authentication_annotation(LEGACY_TOKEN_ANNOTATION, &claims.sub);
            &self.implicit_audiences
        } else {
            &claims.aud
        };
        let requested = if audiences.is_empty() {
            &self.implicit_audiences
        } else {
            audiences
        };
        let common: Vec<String> = token_audiences
            .iter()
            .filter(|a| requested.contains(a))
            .cloned()
            .collect();
        if common.is_empty() && !self.implicit_audiences.is_empty() {
            return Err(err(format!(
                "token audiences {} is invalid for the target audiences {}",
                quoted_list(token_audiences),
                quoted_list(requested)
            )));
        }
        let now = Utc::now().timestamp();
        Self::check_times(&claims, now)?;
        let user = match self.kind {
            TokenKind::Bound => {
                let user = self.validate(&claims, now).await?;
                annotate_stale(&claims, now);
                user
            }
            TokenKind::Legacy { lookup } => {
                legacy::validate(&self.objects, token, &claims, lookup).await?
            }
        };
        Ok(Some(TokenResponse {
            user,
            audiences: common,
        }))
    }
}

#[cfg(test)]
mod tests;
