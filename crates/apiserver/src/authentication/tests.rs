//! The chain's union, anonymous and audience rules.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::user::{ANONYMOUS_USER, AUTHENTICATED_GROUP};
use super::*;

/// Accepts one token, counting how often it is asked.
struct OneToken {
    token: &'static str,
    user: &'static str,
    agnostic: bool,
    calls: AtomicUsize,
}

impl OneToken {
    fn new(token: &'static str, user: &'static str, agnostic: bool) -> Arc<Self> {
        Arc::new(OneToken {
            token,
            user,
            agnostic,
            calls: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl TokenAuthenticator for OneToken {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if token == "broken" {
            return Err(AuthError::Token("token has expired".into()));
        }
        if token == self.token {
            crate::audit::add_authentication_annotation("test/token-of", self.user);
        }
        Ok((token == self.token).then(|| TokenResponse {
            user: UserInfo {
                name: self.user.into(),
                groups: vec!["dev".into()],
                ..UserInfo::default()
            },
            audiences: audiences.to_vec(),
        }))
    }

    fn audience_agnostic(&self) -> bool {
        self.agnostic
    }
}

fn headers(auth: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(http::header::AUTHORIZATION, auth.parse().unwrap());
    h
}

fn api() -> Vec<String> {
    vec!["https://kubernetes.default.svc".into()]
}

#[tokio::test]
async fn token_users_get_the_authenticated_group_and_bad_tokens_are_refused() {
    let authn = Authentication::new(true, api())
        .with_token_authenticator(OneToken::new("good", "alice", true));
    let alice = authn
        .authenticate_request(&mut headers("Bearer good"), None, None, "/api")
        .await
        .unwrap();
    assert_eq!(alice.name, "alice");
    assert_eq!(alice.groups, vec!["dev", AUTHENTICATED_GROUP]);
    // A token nobody accepts is not anonymous, even when anonymous is on.
    assert_eq!(
        authn
            .authenticate_request(&mut headers("bearer bad"), None, None, "/api")
            .await,
        Err(AuthError::InvalidBearerToken)
    );
    assert_eq!(
        authn
            .authenticate_request(&mut headers("Bearer broken"), None, None, "/api")
            .await,
        Err(AuthError::Token("token has expired".into()))
    );
    // Other schemes and empty tokens are no credentials at all.
    for mut h in [
        headers("Basic Zm9vOmJhcg=="),
        headers("Bearer "),
        HeaderMap::new(),
    ] {
        assert_eq!(
            authn.authenticate_request(&mut h, None, None, "/api").await,
            Ok(UserInfo::anonymous())
        );
    }
    let closed = Authentication::new(false, api());
    assert!(closed
        .authenticate_request(&mut HeaderMap::new(), None, None, "/api")
        .await
        .is_err());
    // Anonymous conditions: only the listed paths.
    let probes = Authentication::new(true, api()).with_anonymous_paths(vec!["/livez".into()]);
    let mut none = HeaderMap::new();
    assert_eq!(
        probes
            .authenticate_request(&mut none, None, None, "/livez")
            .await,
        Ok(UserInfo::anonymous())
    );
    assert!(probes
        .authenticate_request(&mut none, None, None, "/api")
        .await
        .is_err());
}

#[tokio::test]
async fn audience_agnostic_tokens_only_serve_the_api_audiences() {
    let agnostic = OneToken::new("static", "alice", true);
    let authn = Authentication::new(true, api()).with_token_authenticator(agnostic);
    let resp = authn.authenticate_token("static", &[]).await.unwrap();
    assert_eq!(resp.audiences, api());
    let other = vec!["vault".to_owned()];
    assert_eq!(
        authn.authenticate_token("static", &other).await,
        Err(AuthError::InvalidBearerToken)
    );
    let aware = OneToken::new("jwt", "bob", false);
    let authn = Authentication::new(true, api()).with_token_authenticator(aware);
    let resp = authn.authenticate_token("jwt", &other).await.unwrap();
    assert_eq!(resp.audiences, other);
}

#[tokio::test]
async fn successes_are_cached_and_failures_are_not() {
    let counted = OneToken::new("good", "alice", false);
    let authn = Authentication::new(true, api())
        .with_token_authenticator(counted.clone())
        .with_success_cache(Duration::from_secs(10));
    for _ in 0..3 {
        authn.authenticate_token("good", &[]).await.unwrap();
        assert!(authn.authenticate_token("bad", &[]).await.is_err());
    }
    // One call for the good token, three for the bad one.
    assert_eq!(counted.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn audit_annotations_of_authenticators_are_replayed_on_cache_hits() {
    let counted = OneToken::new("good", "alice", false);
    let authn = Authentication::new(true, api())
        .with_token_authenticator(counted.clone())
        .with_success_cache(Duration::from_secs(10));
    for _ in 0..2 {
        let ctx = Arc::new(crate::audit::AuditContext::default());
        let authenticated =
            crate::audit::authenticating(ctx.clone(), authn.authenticate_token("good", &[]));
        assert!(authenticated.await.is_ok());
        assert_eq!(
            ctx.annotations(),
            vec![("test/token-of".to_owned(), "alice".to_owned())]
        );
    }
    assert_eq!(counted.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn aggregate_errors_read_like_upstream() {
    let errs = AuthError::from_list(vec![
        AuthError::InvalidBearerToken,
        AuthError::Token("x".into()),
    ]);
    assert_eq!(errs.to_string(), "[invalid bearer token, x]");
}

#[test]
fn only_a_space_before_the_bearer_token_is_flagged() {
    for (auth, flagged) in [
        ("Bearer  abc", true),
        ("bearer  abc def", true),
        ("Bearer abc", false),
        ("Bearer", false),
        ("Bearer ", false),
        ("Basic  abc", false),
    ] {
        assert_eq!(
            space_before_bearer_token(&headers(auth)),
            flagged,
            "{auth:?}"
        );
        if flagged {
            assert_eq!(bearer_token(&headers(auth)), None, "{auth:?}");
        }
    }
}

/// A CA written to `dir/name.crt` and a client certificate for `cn` it
/// issued (expired in 2001 when `expired`).
fn issued_chain(
    dir: &std::path::Path,
    name: &str,
    cn: &str,
    expired: bool,
) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, name);
    std::fs::write(
        dir.join(format!("{name}.crt")),
        ca.self_signed(&ca_key).unwrap().pem(),
    )
    .unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::default();
    leaf.distinguished_name.push(DnType::CommonName, cn);
    if expired {
        leaf.not_before = rcgen::date_time_ymd(2000, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    vec![leaf.signed_by(&key, &issuer).unwrap().der().clone()]
}

#[tokio::test]
async fn client_certificates_are_verified_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let good = issued_chain(dir.path(), "client-ca", "alice", false);
    let foreign = issued_chain(dir.path(), "other-ca", "mallory", false);
    let expired = issued_chain(dir.path(), "old-ca", "dora", true);
    let bundle = ["client-ca", "old-ca"]
        .map(|ca| std::fs::read_to_string(dir.path().join(format!("{ca}.crt"))).unwrap())
        .concat();
    std::fs::write(dir.path().join("bundle.crt"), bundle).unwrap();
    let ca = x509::ClientCa::load(&dir.path().join("bundle.crt")).unwrap();
    let authn = Authentication::new(true, api()).with_client_ca(ca);
    let ask = |chain: &Vec<rustls::pki_types::CertificateDer<'static>>| {
        let cert = ClientCert::from_der(&chain[0]).unwrap();
        let peer = PeerCertificates::new(chain.clone());
        let authn = &authn;
        async move {
            authn
                .authenticate_request(&mut HeaderMap::new(), Some(&cert), Some(&peer), "/api")
                .await
        }
    };
    assert_eq!(ask(&good).await.unwrap().name, "alice");
    // Foreign: an authentication error (401), never anonymous.
    assert!(matches!(ask(&foreign).await, Err(AuthError::ClientCert(_))));
    assert!(matches!(ask(&expired).await, Err(AuthError::ClientCert(_))));
    // A chain without a named user (no common name) is still verified.
    let peer = PeerCertificates::new(foreign.clone());
    let nameless = authn
        .authenticate_request(&mut HeaderMap::new(), None, Some(&peer), "/api")
        .await;
    assert!(matches!(nameless, Err(AuthError::ClientCert(_))));
    let peer = PeerCertificates::new(good.clone());
    let anonymous = authn
        .authenticate_request(&mut HeaderMap::new(), None, Some(&peer), "/api")
        .await;
    assert_eq!(anonymous.unwrap().name, ANONYMOUS_USER);

    // Without a client CA, certificates are not looked at.
    let cert = ClientCert::from_der(&foreign[0]).unwrap();
    let open = Authentication::new(true, api());
    let user = open
        .authenticate_request(&mut HeaderMap::new(), Some(&cert), None, "/api")
        .await
        .unwrap();
    assert_eq!(user.name, ANONYMOUS_USER);
}
