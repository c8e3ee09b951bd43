//! TokenRequest (`POST …/serviceaccounts/<name>/token`, upstream's
//! TokenREST): a signed, bound service-account token for the audiences and
//! lifetime asked for — by default the API's audiences and an hour, at
//! least ten minutes, at most `--service-account-max-token-expiration` —
//! optionally bound to a Pod, Secret or Node that must exist (with the UID
//! given) and whose deletion invalidates the token. A capped lifetime is
//! reported in a `Warning` header and the token's ID in the request's audit
//! events, as upstream's.

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::status::{ApiError, StatusReason};
use apiserver::admission::{GroupVersionKind, RequestContext};
use apiserver::endpoints::virtual_create::{CreateHandler, CreateRequest, VirtualResource};
use apiserver::registry::admission::{admit_create, SubresourceCreate};
use apiserver::registry::ResourceInfo;
use chrono::{SecondsFormat, TimeZone, Utc};
use serde_json::{json, Value};

use super::serviceaccount::getter::{str_at, Kind, Objects};
use super::serviceaccount::{self, Claims, KubernetesClaim, Ref, TokenGenerator};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// The lifetime kubelet asks for pod tokens, which upstream silently
/// extends (warning after it) while `--service-account-extend-token-expiration`.
const WARN_ONLY_EXPIRATION_SECONDS: i64 = 3607;
const EXTENDED_EXPIRATION_SECONDS: i64 = 24 * 365 * 3600;
/// The audit annotation naming the token a request issued.
const ISSUED_CREDENTIAL_ID: &str = "authentication.kubernetes.io/issued-credential-id";
/// The audit annotation of a request naming another UID than the account's
/// (with the UID validation gate off).
const UID_MISMATCH: &str = "authentication.k8s.io/token-request-uid-mismatch";

/// The settings of TokenRequest.
pub struct TokenRequests {
    pub generator: TokenGenerator,
    /// `--api-audiences`: the default audiences.
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` in seconds; 0: no limit.
    pub max_expiration_seconds: i64,
    /// `--service-account-extend-token-expiration`.
    pub extend_expiration: bool,
    /// Feature gate `TokenRequestServiceAccountUIDValidation`: a request
    /// naming another UID than the account's is refused.
    pub uid_validation: bool,
    pub objects: Arc<Objects>,
}

/// The claims a token is bound with.
#[derive(Default)]
struct Bound {
    pod: Option<Ref>,
    secret: Option<Ref>,
    node: Option<Ref>,
}

/// The account a token is issued for.
struct Subject<'a> {
    sa: &'a Value,
    namespace: &'a str,
    name: &'a str,
}

fn reference(obj: &Value) -> Ref {
    Ref {
        name: str_at(obj, "/metadata/name").to_owned(),
        uid: str_at(obj, "/metadata/uid").to_owned(),
    }
}

fn invalid(name: &str, path: &str, value: Value, detail: &str) -> ApiError {
    let mut p = Path::new("metadata");
    if let Some(rest) = path.strip_prefix("spec.") {
        p = Path::new("spec").child(rest);
    } else if let Some(rest) = path.strip_prefix("metadata.") {
        p = p.child(rest);
    }
    ApiError::invalid(GROUP, KIND, name, &[FieldError::invalid(&p, value, detail)])
}

/// The body's name and namespace, when given, must be the URL's.
fn check_matches(body: &Value, name: &str, namespace: &str) -> Result<(), ApiError> {
    let given_name = str_at(body, "/metadata/name");
    if !given_name.is_empty() && given_name != name {
        let msg = "must match the service account name if specified";
        return Err(invalid(name, "metadata.name", json!(given_name), msg));
    }
    let given_ns = str_at(body, "/metadata/namespace");
    if !given_ns.is_empty() && given_ns != namespace {
        let msg = "must match the service account namespace if specified";
        return Err(invalid(name, "metadata.namespace", json!(given_ns), msg));
    }
    Ok(())
}

/// Upstream's static validation of `spec.expirationSeconds`.
fn validate_expiration(seconds: i64) -> Result<(), ApiError> {
    let msg = if seconds < MIN_EXPIRATION_SECONDS {
        "may not specify a duration less than 10 minutes"
    } else if seconds > MAX_EXPIRATION_SECONDS {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        return Ok(());
    };
    Err(invalid("", "spec.expirationSeconds", json!(seconds), msg))
}

impl TokenRequests {
    /// The `serviceaccounts/token` subresource served by these settings.
    pub fn resource(self: Arc<Self>) -> VirtualResource {
        let create: CreateHandler = Arc::new(move |req| {
            let this = self.clone();
            Box::pin(async move { this.create(req).await })
        });
        VirtualResource {
            info: ResourceInfo::create_only(GROUP, "v1", "serviceaccounts/token", KIND),
            create,
        }
    }

    /// Upstream's order: the body's name, namespace and UID against the
    /// account, static validation, admission, the bound object, then the
    /// lifetime's cap and extension.
    async fn create(&self, req: CreateRequest) -> Result<Value, ApiError> {
        let namespace = req
            .namespace
            .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
        let name = req.name.unwrap_or_default();
        let mut body = req.body;
        check_matches(&body, &name, &namespace)?;
        let sa = self
            .objects
            .get(Kind::ServiceAccount, &namespace, &name)
            .await?;
        let uid = self.check_uid(str_at(&body, "/metadata/uid"), &sa, &name)?;
        let mut spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
        let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => self.api_audiences.clone(),
        };
        spec["audiences"] = json!(audiences);
        let now = Utc::now();
        body["metadata"] = json!({
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "creationTimestamp": now.to_rfc3339_opts(SecondsFormat::Secs, true),
        });
        let requested = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        validate_expiration(requested)?;
        spec = self.admit(&body, spec, &namespace, &name, req.user).await?;
        let bound = match spec.get("boundObjectRef").filter(|r| !r.is_null()) {
            Some(r) => self.bound(r, &namespace, &name).await?,
            None => Bound::default(),
        };
        let mut expiration = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(requested);
        if self.max_expiration_seconds > 0 && expiration > self.max_expiration_seconds {
            if let Some(context) = RequestContext::current() {
                context.add_warning(format!(
                    "requested expiration of {expiration} seconds shortened to {} seconds",
                    self.max_expiration_seconds
                ));
            }
            expiration = self.max_expiration_seconds;
        }
        spec["expirationSeconds"] = json!(expiration);
        let subject = Subject {
            sa: &sa,
            namespace: &namespace,
            name: &name,
        };
        let jti = uuid::Uuid::new_v4().to_string();
        let token = self.sign(subject, audiences, expiration, bound, now, &jti)?;
        // Upstream names the issued token in the request's audit events.
        if let Some(context) = RequestContext::current() {
            context.add_audit_annotation(ISSUED_CREDENTIAL_ID, format!("JTI={jti}"));
        }
        let expires = Utc
            .timestamp_opt(now.timestamp() + expiration, 0)
            .single()
            .unwrap_or(now)
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        body["spec"] = spec;
        body["status"] = json!({"token": token, "expirationTimestamp": expires});
        Ok(body)
    }

    /// A UID in the request must be the account's: a conflict with
    /// `TokenRequestServiceAccountUIDValidation` (on by default), else an
    /// audit annotation and a warning, the request's UID kept as upstream.
    /// Returns the UID the response carries.
    fn check_uid(&self, given: &str, sa: &Value, name: &str) -> Result<String, ApiError> {
        let sa_uid = str_at(sa, "/metadata/uid");
        if given.is_empty() || given == sa_uid {
            return Ok(sa_uid.to_owned());
        }
        let mismatch = format!(
            "the UID in the token request ({given}) does not match the UID of the service account ({sa_uid})"
        );
        if self.uid_validation {
            return Err(ApiError::conflict(GROUP, KIND, name, mismatch));
        }
        if let Some(context) = RequestContext::current() {
            context.add_warning(format!(
                "{mismatch} but TokenRequestServiceAccountUIDValidation is not enabled. In the future, this will return a conflict error"
            ));
            context.add_audit_annotation(UID_MISMATCH, mismatch);
        }
        Ok(given.to_owned())
    }

    /// Runs admission on the request (NodeRestriction checks bound pods
    /// here); returns the admitted spec.
    async fn admit(
        &self,
        body: &Value,
        spec: Value,
        namespace: &str,
        name: &str,
        user: Arc<apiserver::authentication::user::UserInfo>,
    ) -> Result<Value, ApiError> {
        let Some(accounts) = self.objects.store(Kind::ServiceAccount) else {
            return Ok(spec);
        };
        let create = SubresourceCreate {
            parent: &accounts.info,
            subresource: "token",
            kind: GroupVersionKind {
                group: GROUP.into(),
                version: "v1".into(),
                kind: KIND.into(),
            },
            namespace,
            name,
            user,
        };
        let mut request = body.clone();
        request["spec"] = spec.clone();
        let chain = accounts.admission();
        let admitted = admit_create(chain.as_ref(), create, request).await?;
        Ok(admitted.get("spec").cloned().unwrap_or(spec))
    }

    /// Signs the token; kubelet's pod tokens live a year but warn after
    /// the asked time (`--service-account-extend-token-expiration`).
    fn sign(
        &self,
        Subject {
            sa,
            namespace,
            name,
        }: Subject<'_>,
        audiences: Vec<String>,
        expiration: i64,
        bound: Bound,
        now: chrono::DateTime<Utc>,
        jti: &str,
    ) -> Result<String, ApiError> {
        let is_kube_audience = audiences.iter().all(|a| self.api_audiences.contains(a));
        let iat = now.timestamp();
        let (lifetime, warnafter) = if self.extend_expiration
            && bound.pod.is_some()
            && expiration == WARN_ONLY_EXPIRATION_SECONDS
            && is_kube_audience
        {
            (EXTENDED_EXPIRATION_SECONDS, Some(iat + expiration))
        } else {
            (expiration, None)
        };
        let claims = Claims {
            iss: self.generator.issuer.clone(),
            sub: serviceaccount::username(namespace, name),
            aud: audiences,
            exp: Some(iat + lifetime),
            iat: Some(iat),
            nbf: Some(iat),
            jti: jti.to_owned(),
            kubernetes: KubernetesClaim {
                namespace: namespace.to_owned(),
                serviceaccount: reference(sa),
                pod: bound.pod,
                secret: bound.secret,
                node: bound.node,
                warnafter,
            },
            legacy: Default::default(),
        };
        self.generator
            .sign(&claims)
            .map_err(ApiError::internal_error)
    }

    /// Resolves `spec.boundObjectRef` (upstream's rules and messages).
    async fn bound(&self, r: &Value, namespace: &str, sa_name: &str) -> Result<Bound, ApiError> {
        let api_version = str_at(r, "/apiVersion");
        let kind = str_at(r, "/kind");
        let name = str_at(r, "/name");
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let mut bound = Bound::default();
        let obj = match (group, kind) {
            ("", "Pod") => {
                let pod = self.objects.get(Kind::Pod, namespace, name).await?;
                if str_at(&pod, "/spec/serviceAccountName") != sa_name {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {sa_name:?} to pod running with different serviceaccount name."
                    )));
                }
                bound.node = self.pod_node(&pod).await?;
                bound.pod = Some(reference(&pod));
                pod
            }
            ("", "Node") => {
                let node = self.objects.get(Kind::Node, "", name).await?;
                bound.node = Some(reference(&node));
                node
            }
            ("", "Secret") => {
                let secret = self.objects.get(Kind::Secret, namespace, name).await?;
                bound.secret = Some(reference(&secret));
                secret
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={kind}"
                )))
            }
        };
        let want_uid = str_at(r, "/uid");
        if !want_uid.is_empty() && want_uid != str_at(&obj, "/metadata/uid") {
            return Err(ApiError::conflict(
                group,
                kind,
                name,
                format!("the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"),
            ));
        }
        Ok(bound)
    }

    /// The node a pod runs on, named in its tokens (with its UID when the
    /// node exists).
    async fn pod_node(&self, pod: &Value) -> Result<Option<Ref>, ApiError> {
        let node_name = str_at(pod, "/spec/nodeName");
        if node_name.is_empty() {
            return Ok(None);
        }
        match self.objects.get(Kind::Node, "", node_name).await {
            Ok(node) => Ok(Some(reference(&node))),
            Err(e) if e.reason == StatusReason::NotFound => Ok(Some(Ref {
                name: node_name.to_owned(),
                uid: String::new(),
            })),
            Err(e) => Err(ApiError::internal_error(e.message)),
        }
    }
}
