//! Signing and verifying service-account tokens against real stores
//! (the embedded storage engine in a temp dir), through TokenRequest, and
//! legacy secret-based tokens against their secret and account.

use apiserver::endpoints::virtual_create::CreateRequest;
use apiserver::registry::store::WriteOptions;
use serde_json::json;
use storage_embedded::EmbeddedKv;

use super::*;
use crate::authenticator::token_request::TokenRequests;
use crate::controlplane::builtin;
use crate::controlplane::StorageFactory;
use crate::options::PortRange;
use crate::registry::services::ServiceAllocator;
use apiserver::admission::initializer::Stores;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

struct Fixture {
    _dir: tempfile::TempDir,
    stores: std::collections::HashMap<String, Arc<apiserver::registry::store::Store>>,
    requests: Arc<TokenRequests>,
    auth: JwtAuthenticator,
}

fn signing_key(dir: &std::path::Path) -> keys::SigningKey {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let path = dir.join("sa.key");
    std::fs::write(&path, pair.serialize_pem()).unwrap();
    keys::load_signing_key(&path).unwrap()
}

fn fixture() -> Fixture {
    fixture_with_uid_validation(true)
}

/// With feature gate `TokenRequestServiceAccountUIDValidation` as given.
fn fixture_with_uid_validation(uid_validation: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let kv = Arc::new(EmbeddedKv::open(&dir.path().join("db")).unwrap());
    let factory = StorageFactory {
        kv,
        prefix: "/registry".into(),
        watch_cache: false,
        codec: Default::default(),
    };
    let allocator = ServiceAllocator::new(
        "10.96.0.0/12".parse().unwrap(),
        PortRange {
            base: 30000,
            size: 2768,
        },
        None,
    );
    let stores: std::collections::HashMap<_, _> = builtin::core_v1(allocator)
        .into_iter()
        .map(|b| (b.info.resource.clone(), factory.store(b)))
        .collect();
    let objects = Arc::new(Objects::default());
    let kinds = ["serviceaccounts", "secrets", "pods", "nodes"];
    objects.bind(Stores::new(kinds.map(|k| stores[k].clone())));
    let key = signing_key(dir.path());
    let public = key.public.clone();
    let requests = Arc::new(TokenRequests {
        generator: TokenGenerator::new(key, ISSUER.into()),
        api_audiences: vec![ISSUER.into()],
        max_expiration_seconds: 0,
        extend_expiration: true,
        uid_validation,
        objects: objects.clone(),
    });
    let auth = JwtAuthenticator {
        kind: TokenKind::Bound,
        issuers: vec![ISSUER.into()],
        keys: vec![public],
        implicit_audiences: vec![ISSUER.into()],
        objects,
    };
    Fixture {
        _dir: dir,
        stores,
        requests,
        auth,
    }
}

impl Fixture {
    async fn create(&self, resource: &str, obj: Value) -> Value {
        let created = self.stores[resource]
            .create(obj, &WriteOptions::default())
            .await
            .unwrap();
        created.to_value()
    }

    async fn token(
        &self,
        name: &str,
        spec: Value,
    ) -> Result<Value, apimachinery::status::ApiError> {
        let create = self.requests.clone().resource().create;
        create(CreateRequest {
            body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
            user: Arc::new(UserInfo::default()),
            namespace: Some("default".into()),
            name: Some(name.into()),
        })
        .await
    }
}

fn sa(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default"}})
}

#[tokio::test]
async fn issued_tokens_authenticate_as_the_service_account() {
    let f = fixture();
    let account = f.create("serviceaccounts", sa("builder")).await;
    let resp = f.token("builder", json!({})).await.unwrap();
    assert_eq!(resp["spec"]["expirationSeconds"], 3600);
    assert_eq!(resp["spec"]["audiences"], json!([ISSUER]));
    let token = resp["status"]["token"].as_str().unwrap();
    let got = f
        .auth
        .authenticate_token(token, &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.user.name, "system:serviceaccount:default:builder");
    assert_eq!(got.user.uid, str_at(&account, "/metadata/uid"));
    assert_eq!(got.user.groups, groups("default"));
    assert!(got.user.extra[CREDENTIAL_ID_KEY][0].starts_with("JTI="));
    assert_eq!(got.audiences, vec![ISSUER.to_owned()]);

    // Other audiences are refused; tokens of other issuers are not ours.
    let err = f
        .auth
        .authenticate_token(token, &["vault".to_owned()])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("token audiences [{ISSUER:?}] is invalid for the target audiences [\"vault\"]")
    );
    assert_eq!(f.auth.authenticate_token("abc.def", &[]).await, Ok(None));

    // Deleting the account invalidates the token.
    f.stores["serviceaccounts"]
        .delete(Some("default"), "builder", &Default::default())
        .await
        .unwrap();
    let err = f.auth.authenticate_token(token, &[]).await.unwrap_err();
    assert_eq!(err.to_string(), "serviceaccounts \"builder\" not found");
}

#[tokio::test]
async fn forged_and_expired_tokens_are_refused() {
    let f = fixture();
    f.create("serviceaccounts", sa("builder")).await;
    let token = f.token("builder", json!({})).await.unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The same claims signed by another key.
    let dir = tempfile::tempdir().unwrap();
    let other = TokenGenerator::new(signing_key(dir.path()), ISSUER.into());
    let payload = token.split('.').nth(1).unwrap();
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    let forged = other.sign(&claims).unwrap();
    let err = f.auth.authenticate_token(&forged, &[]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "go-jose/go-jose: error in cryptographic primitive"
    );
    let now = Utc::now().timestamp();
    let expired = Claims {
        exp: Some(now - 120),
        ..claims
    };
    assert_eq!(
        JwtAuthenticator::check_times(&expired, now),
        Err(err_msg("service account token has expired"))
    );
}

#[tokio::test]
async fn extended_tokens_used_after_warnafter_are_audited_as_stale() {
    let f = fixture();
    f.create("serviceaccounts", sa("builder")).await;
    let token = f.token("builder", json!({})).await.unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let payload = token.split('.').nth(1).unwrap();
    let mut claims: Claims =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    let annotations = |token: String| async {
        let ctx = Arc::new(apiserver::audit::AuditContext::default());
        let auth = &f.auth;
        apiserver::audit::authenticating(ctx.clone(), async move {
            auth.authenticate_token(&token, &[]).await.unwrap().unwrap();
        })
        .await;
        ctx.annotations()
    };
    let now = Utc::now().timestamp();
    claims.kubernetes.warnafter = Some(now + 600);
    let fresh = f.requests.generator.sign(&claims).unwrap();
    assert!(annotations(fresh).await.is_empty());
    claims.kubernetes.warnafter = Some(now - 100);
    let stale = f.requests.generator.sign(&claims).unwrap();
    let found = annotations(stale).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, STALE_TOKEN_ANNOTATION);
    assert!(
        found[0].1.starts_with(
            "subject: system:serviceaccount:default:builder, seconds after warning threshold: 10"
        ),
        "{found:?}"
    );
}

fn err_msg(m: &str) -> AuthError {
    AuthError::Token(m.into())
}

#[tokio::test]
async fn token_requests_follow_upstreams_rules() {
    let f = fixture();
    f.create("serviceaccounts", sa("builder")).await;
    let err = f.token("nobody", json!({})).await.unwrap_err();
    assert_eq!(err.message, "serviceaccounts \"nobody\" not found");
    let err = f
        .token("builder", json!({"expirationSeconds": 599}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let bad_kind =
        json!({"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}});
    let err = f.token("builder", bad_kind).await.unwrap_err();
    assert_eq!(
        err.message,
        "cannot bind token to object of type apps/v1, Kind=Deployment"
    );

    // Bound to a pod of the account: the pod shows in the user's extra,
    // and a wrong UID is a conflict.
    let pod = f
        .create(
            "pods",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"serviceAccountName": "builder", "containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .await;
    let pod_uid = str_at(&pod, "/metadata/uid").to_owned();
    let bound = json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": pod_uid}});
    let token = f.token("builder", bound).await.unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let user = f
        .auth
        .authenticate_token(&token, &[])
        .await
        .unwrap()
        .unwrap()
        .user;
    assert_eq!(user.extra[POD_NAME_KEY], vec!["web"]);
    assert_eq!(user.extra[POD_UID_KEY], vec![pod_uid]);
    let wrong = json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "nope"}});
    let err = f.token("builder", wrong).await.unwrap_err();
    assert_eq!(err.code, 409);
    f.stores["pods"]
        .delete(Some("default"), "web", &Default::default())
        .await
        .unwrap();
    let err = f.auth.authenticate_token(&token, &[]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "service account token has been invalidated"
    );
}

#[tokio::test]
async fn token_requests_carry_the_accounts_uid_and_refuse_another() {
    let f = fixture();
    let account = f.create("serviceaccounts", sa("builder")).await;
    let sa_uid = str_at(&account, "/metadata/uid").to_owned();
    let resp = f.token("builder", json!({})).await.unwrap();
    assert_eq!(resp["metadata"]["uid"], sa_uid.as_str());

    let create = f.requests.clone().resource().create;
    let err = create(CreateRequest {
        body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {"uid": "stale"}, "spec": {}}),
        user: Arc::new(UserInfo::default()),
        namespace: Some("default".into()),
        name: Some("builder".into()),
    })
    .await
    .unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        format!("Operation cannot be fulfilled on TokenRequest.authentication.k8s.io \"builder\": the UID in the token request (stale) does not match the UID of the service account ({sa_uid})")
    );

    // The lifetime is validated before the bound object is looked up.
    let short = json!({"expirationSeconds": 60,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "missing"}});
    let err = f.token("builder", short).await.unwrap_err();
    assert_eq!(err.code, 422, "{}", err.message);
}

#[tokio::test]
async fn without_uid_validation_another_uid_is_kept_with_a_warning() {
    let f = fixture_with_uid_validation(false);
    let account = f.create("serviceaccounts", sa("builder")).await;
    let sa_uid = str_at(&account, "/metadata/uid").to_owned();
    let context = apiserver::admission::RequestContext::new(Arc::new(UserInfo::default()));
    let create = f.requests.clone().resource().create;
    let resp = context
        .scope(create(CreateRequest {
            body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {"uid": "stale"}, "spec": {}}),
            user: Arc::new(UserInfo::default()),
            namespace: Some("default".into()),
            name: Some("builder".into()),
        }))
        .await
        .unwrap();
    assert_eq!(resp["metadata"]["uid"], "stale");
    assert!(resp["status"]["token"]
        .as_str()
        .is_some_and(|t| !t.is_empty()));
    assert_eq!(
        context.take_warnings(),
        vec![format!("the UID in the token request (stale) does not match the UID of the service account ({sa_uid}) but TokenRequestServiceAccountUIDValidation is not enabled. In the future, this will return a conflict error")]
    );
}

impl Fixture {
    /// A legacy-token authenticator over the fixture's keys and stores.
    fn legacy_auth(&self, lookup: bool) -> JwtAuthenticator {
        JwtAuthenticator {
            kind: TokenKind::Legacy { lookup },
            issuers: vec![legacy::ISSUER.into()],
            keys: self.auth.keys.clone(),
            implicit_audiences: vec![ISSUER.into()],
            objects: self.auth.objects.clone(),
        }
    }

    /// A token secret holding a legacy token of `account`; returns it.
    async fn legacy_secret(&self, account: &Value, name: &str, labels: Value) -> String {
        let token = self
            .requests
            .generator
            .sign(&legacy::claims(account, name))
            .unwrap();
        self.create(
            "secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                "metadata": {"name": name, "namespace": "default", "labels": labels,
                    "annotations": {"kubernetes.io/service-account.name": str_at(account, "/metadata/name")}},
                "data": {"token": base64::engine::general_purpose::STANDARD.encode(&token)}}),
        )
        .await;
        token
    }
}

#[tokio::test]
async fn legacy_tokens_are_checked_against_their_secret_and_account() {
    let f = fixture();
    let account = f.create("serviceaccounts", sa("builder")).await;
    let token = f.legacy_secret(&account, "builder-token", json!({})).await;
    let auth = f.legacy_auth(true);
    let got = auth.authenticate_token(&token, &[]).await.unwrap().unwrap();
    assert_eq!(got.user.name, "system:serviceaccount:default:builder");
    assert_eq!(got.user.uid, str_at(&account, "/metadata/uid"));
    assert_eq!(got.user.groups, groups("default"));
    // Bound-token authenticators leave legacy tokens alone.
    assert_eq!(f.auth.authenticate_token(&token, &[]).await, Ok(None));
    let secret = f.stores["secrets"]
        .get(Some("default"), "builder-token", Default::default())
        .await
        .unwrap();
    let today = Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(
        str_at(
            &secret,
            "/metadata/labels/kubernetes.io~1legacy-token-last-used"
        ),
        today
    );

    // A secret marked invalid refuses its token.
    let marked = json!({legacy::INVALID_SINCE_LABEL: "2024-01-01"});
    let other = f.legacy_secret(&account, "marked-token", marked).await;
    let err = auth.authenticate_token(&other, &[]).await.unwrap_err();
    assert!(err.to_string().starts_with(
        "the token in secret default/marked-token for service account default/builder has been marked invalid."
    ));

    // Without the secret the token is refused, unless lookups are off.
    f.stores["secrets"]
        .delete(Some("default"), "builder-token", &Default::default())
        .await
        .unwrap();
    let err = auth.authenticate_token(&token, &[]).await.unwrap_err();
    assert_eq!(err.to_string(), "Token has been invalidated");
    let unchecked = f.legacy_auth(false);
    assert!(unchecked
        .authenticate_token(&token, &[])
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn legacy_tokens_must_match_the_stored_copy_and_their_subject() {
    let f = fixture();
    let account = f.create("serviceaccounts", sa("builder")).await;
    f.legacy_secret(&account, "builder-token", json!({})).await;
    let auth = f.legacy_auth(true);
    // A valid signature over claims the secret does not hold.
    let mut claims = legacy::claims(&account, "builder-token");
    claims.jti = "another".into();
    let token = f.requests.generator.sign(&claims).unwrap();
    let err = auth.authenticate_token(&token, &[]).await.unwrap_err();
    assert_eq!(err.to_string(), "Token does not match server's copy");
    claims.sub = "system:serviceaccount:default:other".into();
    let token = f.requests.generator.sign(&claims).unwrap();
    let err = auth.authenticate_token(&token, &[]).await.unwrap_err();
    assert_eq!(err.to_string(), "sub claim is invalid");
    claims.legacy.secret_name.clear();
    let token = f.requests.generator.sign(&claims).unwrap();
    let err = auth.authenticate_token(&token, &[]).await.unwrap_err();
    assert_eq!(err.to_string(), "secretName claim is missing");
}

#[tokio::test]
async fn megabyte_tokens_are_refused_quickly() {
    let f = fixture();
    let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
    let nested = format!("{}{}", "[".repeat(500_000), "]".repeat(500_000));
    let start = std::time::Instant::now();
    // Not ours: garbage, JSON nested 500,000 deep, a million dots.
    for token in [
        "a".repeat(1 << 20),
        format!("{}.{}.sig", b64(&nested), b64(&nested)),
        ".".repeat(1 << 20),
    ] {
        assert!(matches!(
            f.auth.authenticate_token(&token, &[]).await,
            Ok(None)
        ));
    }
    // Ours by its issuer, 1 MB of claims, a signature that does not verify.
    let claims = json!({"iss": ISSUER, "sub": "x", "pad": "a".repeat(1 << 20)}).to_string();
    let header = r#"{"alg":"ES256"}"#;
    let token = format!("{}.{}.{}", b64(header), b64(&claims), b64("sig"));
    assert!(f.auth.authenticate_token(&token, &[]).await.is_err());
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
}
