//! Who is asking (upstream's `k8s.io/apiserver/pkg/authentication` and
//! kube-apiserver's authenticator chain): the user of a request or of a
//! bearer token, found by a union of authenticators — front-proxy request
//! headers, the client certificate (verified against the client CA per
//! request), then bearer tokens through every token authenticator
//! (static token file, bootstrap tokens, service-account JWTs, …), with
//! successful token checks cached briefly — and `system:authenticated`
//! added, or the anonymous user when nothing applied and `--anonymous-auth`
//! allows it. An authenticator that fails (a bad token, a broken
//! certificate) makes the request unauthenticated, never anonymous.

pub mod cache;
pub mod cel;
pub mod client_cert;
pub mod request_header;
pub mod token_file;
pub mod user;
pub mod x509;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::HeaderMap;

use cache::TokenCache;
use client_cert::{ClientCert, PeerCertificates};
use request_header::RequestHeader;
use user::{UserInfo, CREDENTIAL_ID_KEY};
use x509::ClientCa;

/// A user found by a token, with the audiences the token was accepted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenResponse {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

/// Why authentication failed. Messages follow upstream's, since TokenReview
/// reports them in `status.error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A bearer token no authenticator accepted.
    #[error("invalid bearer token")]
    InvalidBearerToken,
    /// An authenticator recognised the token and refused it.
    #[error("{0}")]
    Token(String),
    #[error("verifying certificate: {0}")]
    ClientCert(String),
    /// Several authenticators failed.
    #[error("{}", aggregate(.0))]
    Aggregate(Vec<AuthError>),
}

/// Upstream's aggregate error text: one error as itself, several in brackets.
fn aggregate(errors: &[AuthError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => {
            let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

impl AuthError {
    fn from_list(mut errors: Vec<AuthError>) -> Self {
        if errors.len() == 1 {
            errors.remove(0)
        } else {
            AuthError::Aggregate(errors)
        }
    }
}

/// Authenticates bearer tokens.
#[async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// The user of `token` when it is valid for one of `audiences`;
    /// `Ok(None)` when the token is not one this authenticator knows.
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError>;

    /// Whether the authenticator ignores audiences (static and bootstrap
    /// tokens): its tokens are valid only for the API's own audiences.
    fn audience_agnostic(&self) -> bool {
        false
    }
}

/// The authenticator chain of a server.
pub struct Authentication {
    /// `--anonymous-auth`.
    anonymous: bool,
    /// The only paths anonymous requests may reach (`anonymous.conditions`
    /// of `--authentication-config`); empty: every path.
    anonymous_paths: Vec<String>,
    /// The API's audiences (`--api-audiences`): the audiences requests are
    /// authenticated for.
    api_audiences: Vec<String>,
    tokens: Vec<Arc<dyn TokenAuthenticator>>,
    /// Successful answers with the audit annotations they were given, which
    /// a cache hit adds again (as upstream's cached token authenticator).
    cache: Option<TokenCache<(TokenResponse, AuditAnnotations)>>,
    /// `--requestheader-*`.
    request_header: Option<RequestHeader>,
    /// Which client certificates authenticate as themselves.
    client_certs: ClientCerts,
}

/// Which client certificates authenticate as themselves.
#[derive(Debug, Clone)]
enum ClientCerts {
    /// None, and they are not looked at (no x509 authenticator).
    Ignored,
    /// Those issued by `--client-ca-file`, verified at request time (the
    /// TLS layer only asks for a certificate).
    IssuedBy(ClientCa),
    /// None: only front proxies present certificates.
    Refused,
}

impl fmt::Debug for Authentication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authentication")
            .field("anonymous", &self.anonymous)
            .field("api_audiences", &self.api_audiences)
            .field("token_authenticators", &self.tokens.len())
            .field("request_header", &self.request_header)
            .finish()
    }
}

impl Default for Authentication {
    /// Anonymous requests only.
    fn default() -> Self {
        Authentication::new(true, Vec::new())
    }
}

/// Audit annotations an authenticator added, in order.
type AuditAnnotations = Vec<(String, String)>;

impl Authentication {
    pub fn new(anonymous: bool, api_audiences: Vec<String>) -> Self {
        Authentication {
            anonymous,
            anonymous_paths: Vec::new(),
            api_audiences,
            tokens: Vec::new(),
            cache: None,
            request_header: None,
            client_certs: ClientCerts::Ignored,
        }
    }

    /// Authenticates client certificates issued by `ca` (`--client-ca-file`).
    pub fn with_client_ca(mut self, ca: ClientCa) -> Self {
        self.client_certs = ClientCerts::IssuedBy(ca);
        self
    }

    /// Trusts front proxies (`--requestheader-*`); `client_ca` then tells
    /// which certificates authenticate as themselves.
    pub fn with_request_header(mut self, rh: RequestHeader, client_ca: Option<ClientCa>) -> Self {
        self.request_header = Some(rh);
        self.client_certs = match client_ca {
            Some(ca) => ClientCerts::IssuedBy(ca),
            None => ClientCerts::Refused,
        };
        self
    }

    /// Allows anonymous requests only to these exact paths.
    pub fn with_anonymous_paths(mut self, paths: Vec<String>) -> Self {
        self.anonymous_paths = paths;
        self
    }

    /// Appends a token authenticator; they are tried in order.
    pub fn with_token_authenticator(mut self, auth: Arc<dyn TokenAuthenticator>) -> Self {
        self.tokens.push(auth);
        self
    }

    /// Caches successful token checks for `ttl` (upstream's token success
    /// cache; failures are never cached).
    pub fn with_success_cache(mut self, ttl: Duration) -> Self {
        self.cache = (!ttl.is_zero()).then(|| TokenCache::new(ttl));
        self
    }

    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    pub fn anonymous_allowed(&self) -> bool {
        self.anonymous
    }

    /// The user of a request for `path`: front-proxy headers, its client
    /// certificate or bearer token, else anonymous when allowed there.
    /// `Err` means 401. Front-proxy headers are removed once used.
    pub async fn authenticate_request(
        &self,
        headers: &mut HeaderMap,
        client_cert: Option<&ClientCert>,
        peer: Option<&PeerCertificates>,
        path: &str,
    ) -> Result<UserInfo, AuthError> {
        let mut errors = Vec::new();
        if let Some(rh) = &self.request_header {
            let cn = client_cert
                .and_then(|c| c.user().ok())
                .map(|u| u.name.as_str());
            match rh.authenticate(headers, peer, cn) {
                Ok(Some(user)) => {
                    rh.strip(headers);
                    return Ok(user.with_authenticated_group());
                }
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if client_cert.is_some() || peer.is_some() {
            match self.certificate_user(client_cert, peer) {
                Some(Ok(user)) => return Ok(user),
                Some(Err(e)) => errors.push(e),
                None => {}
            }
        }
        if let Some(token) = bearer_token(headers) {
            match self.authenticate_token(token, &self.api_audiences).await {
                Ok(resp) => return Ok(resp.user),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(AuthError::from_list(errors));
        }
        let path_allowed =
            self.anonymous_paths.is_empty() || self.anonymous_paths.iter().any(|p| p == path);
        if self.anonymous && path_allowed {
            Ok(UserInfo::anonymous())
        } else {
            Err(AuthError::Token("no credentials provided".into()))
        }
    }

    /// The user of a client certificate (CN, O, UID, credential ID), once
    /// its chain verifies against the client CA. As upstream, the chain is
    /// verified first: a bad one fails even without a common name (`cert`
    /// is `None`), while a good one without a common name has no opinion.
    fn certificate_user(
        &self,
        cert: Option<&ClientCert>,
        peer: Option<&PeerCertificates>,
    ) -> Option<Result<UserInfo, AuthError>> {
        let verified = match &self.client_certs {
            ClientCerts::Ignored => return None,
            ClientCerts::IssuedBy(ca) => match peer {
                Some(peer) => ca.verify_peer(peer),
                None => Err("no certificate".to_owned()),
            },
            ClientCerts::Refused => cert.map(|_| Err("no client CA is configured".to_owned()))?,
        };
        if let Err(e) = verified {
            return Some(Err(AuthError::ClientCert(e)));
        }
        cert.map(certificate_identity)
    }

    /// The user of a bearer token for `audiences` (empty: the API's), as
    /// requests and TokenReviews see it; `system:authenticated` included.
    pub async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<TokenResponse, AuthError> {
        let audiences = if audiences.is_empty() {
            &self.api_audiences
        } else {
            audiences
        };
        let Some(cache) = &self.cache else {
            return self.authenticate_uncached(token, audiences).await;
        };
        if let Some((hit, annotations)) = cache.get(token, audiences) {
            for (key, value) in annotations {
                crate::audit::add_authentication_annotation(&key, value);
            }
            return Ok(hit);
        }
        // Collect what the authenticators annotate, to replay it on hits.
        let recorded = Arc::new(crate::audit::AuditContext::default());
        let result = crate::audit::authenticating(
            recorded.clone(),
            self.authenticate_uncached(token, audiences),
        )
        .await;
        let annotations = recorded.annotations();
        for (key, value) in &annotations {
            crate::audit::add_authentication_annotation(key, value.as_str());
        }
        let resp = result?;
        cache.insert(token, audiences, (resp.clone(), annotations));
        Ok(resp)
    }

    async fn authenticate_uncached(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<TokenResponse, AuthError> {
        let mut resp = self
            .union(token, audiences)
            .await?
            .ok_or(AuthError::InvalidBearerToken)?;
        resp.user = resp.user.with_authenticated_group();
        Ok(resp)
    }

    /// Tries each token authenticator; the first that accepts wins, and
    /// errors count only when none does.
    async fn union(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        let mut errors = Vec::new();
        for auth in &self.tokens {
            let result = if auth.audience_agnostic() {
                self.audience_agnostic(auth.as_ref(), token, audiences)
                    .await
            } else {
                auth.authenticate_token(token, audiences).await
            };
            match result {
                Ok(Some(resp)) => return Ok(Some(resp)),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(None)
        } else {
            Err(AuthError::from_list(errors))
        }
    }

    /// Upstream's audience-agnostic wrapper: such tokens are valid only for
    /// the API's audiences, and are reported for the ones asked for.
    async fn audience_agnostic(
        &self,
        auth: &dyn TokenAuthenticator,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        if self.api_audiences.is_empty() {
            return auth.authenticate_token(token, audiences).await;
        }
        let common: Vec<String> = self
            .api_audiences
            .iter()
            .filter(|a| audiences.contains(a))
            .cloned()
            .collect();
        if common.is_empty() {
            return Ok(None);
        }
        Ok(auth
            .authenticate_token(token, &common)
            .await?
            .map(|resp| TokenResponse {
                audiences: common,
                ..resp
            }))
    }
}

/// The token of an `Authorization: Bearer <token>` header (upstream's
/// bearertoken authenticator: the scheme is case-insensitive, an empty
/// token is no token).
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Upstream's warning for `Authorization: Bearer  <token>`, whose token is
/// ignored because of the extra space.
pub const SPACE_BEFORE_TOKEN_WARNING: &str =
    "the provided Authorization header contains extra space before the bearer token, and is ignored";

/// Whether the bearer token is preceded by more than one space (and so
/// ignored, as upstream does, with a warning).
pub fn space_before_bearer_token(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut parts = value.trim().splitn(3, ' ');
    let scheme = parts.next().unwrap_or_default();
    let token = parts.next();
    scheme.eq_ignore_ascii_case("bearer") && token == Some("") && parts.next().is_some()
}

#[cfg(test)]
mod tests;

/// The user a verified client certificate names (CN, O, UID, credential ID).
fn certificate_identity(cert: &ClientCert) -> Result<UserInfo, AuthError> {
    let cert_user = cert
        .user()
        .map_err(|e| AuthError::ClientCert(e.to_string()))?;
    let mut user = UserInfo {
        name: cert_user.name.clone(),
        uid: cert_user.uid.clone().unwrap_or_default(),
        groups: cert_user.groups.clone(),
        extra: BTreeMap::new(),
    };
    user.extra.insert(
        CREDENTIAL_ID_KEY.into(),
        vec![cert_user.credential_id.clone()],
    );
    Ok(user.with_authenticated_group())
}
