//! The computed resources of authentication.k8s.io and
//! authorization.k8s.io (upstream's `pkg/registry/authentication` and
//! `pkg/registry/authorization`): access reviews answered by the
//! authorizer chain on the review's attributes, rules reviews from the
//! chain's rule resolvers, and self-subject reviews answered from the
//! request's user. They are created, never stored.

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::status::ApiError;
use apiserver::authorization::{Attributes, Decision};
use apiserver::endpoints::virtual_create::{CreateHandler, VirtualResource};
use apiserver::filters::authentication::UserInfo;
use apiserver::filters::authorization::Authorization;
use apiserver::registry::ResourceInfo;
use serde_json::{json, Value};

fn info(group: &str, resource: &str, kind: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        resource: resource.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: Vec::new(),
        categories: Vec::new(),
        verbs: vec!["create".into()],
        has_status: false,
        has_scale: false,
        storage_root: resource.into(),
    }
}

fn handler(
    f: impl Fn(Value, Arc<UserInfo>, Option<String>) -> Result<Value, ApiError> + Send + Sync + 'static,
) -> CreateHandler {
    Arc::new(move |body, user, ns| {
        let result = f(body, user, ns);
        Box::pin(async move { result })
    })
}

/// The kinds of access review, which differ in whose access they ask about
/// and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReviewKind {
    /// SubjectAccessReview: any user, any namespace.
    Subject,
    /// LocalSubjectAccessReview: any user, the review's namespace.
    Local,
    /// SelfSubjectAccessReview: the requesting user.
    SelfSubject,
}

impl ReviewKind {
    fn kind(self) -> &'static str {
        match self {
            ReviewKind::Subject => "SubjectAccessReview",
            ReviewKind::Local => "LocalSubjectAccessReview",
            ReviewKind::SelfSubject => "SelfSubjectAccessReview",
        }
    }
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's validation of an access review's spec.
fn validate(kind: ReviewKind, body: &Value, namespace: Option<&str>) -> Result<(), ApiError> {
    let spec = Path::new("spec");
    let resource = body
        .pointer("/spec/resourceAttributes")
        .filter(|v| !v.is_null());
    let non_resource = body
        .pointer("/spec/nonResourceAttributes")
        .filter(|v| !v.is_null());
    let mut errors = Vec::new();
    match (resource, non_resource) {
        (None, None) => errors.push(FieldError::required(
            &spec.child("resourceAttributes"),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (Some(_), Some(nr)) => errors.push(FieldError::invalid(
            &spec.child("nonResourceAttributes"),
            nr.clone(),
            "cannot be specified in combination with resourceAttributes",
        )),
        _ => {}
    }
    if kind == ReviewKind::Subject
        && str_at(body, "/spec/user").is_empty()
        && body
            .pointer("/spec/groups")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    {
        errors.push(FieldError::invalid(
            &spec.child("user"),
            "",
            "at least one of user or group must be specified",
        ));
    }
    if kind == ReviewKind::Local {
        let ns = namespace.unwrap_or("");
        if let Some(attrs) = resource {
            if str_at(attrs, "/namespace") != ns {
                errors.push(FieldError::invalid(
                    &spec.child("resourceAttributes").child("namespace"),
                    str_at(attrs, "/namespace"),
                    "must match metadata.namespace",
                ));
            }
        }
        if let Some(nr) = non_resource {
            errors.push(FieldError::invalid(
                &spec.child("nonResourceAttributes"),
                nr.clone(),
                "disallowed on this kind of request",
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "authorization.k8s.io",
            kind.kind(),
            "",
            &errors,
        ))
    }
}

/// The user a review asks about: the spec's for (Local)SubjectAccessReview,
/// the requester for SelfSubjectAccessReview.
fn review_user(kind: ReviewKind, body: &Value, requester: &UserInfo) -> UserInfo {
    if kind == ReviewKind::SelfSubject {
        return requester.clone();
    }
    let groups = body.pointer("/spec/groups").and_then(Value::as_array);
    UserInfo {
        name: str_at(body, "/spec/user").to_owned(),
        uid: str_at(body, "/spec/uid").to_owned(),
        groups: groups
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    }
}

/// Answers an access review with the authorizer chain.
async fn access_review(
    authz: &Authorization,
    kind: ReviewKind,
    mut body: Value,
    requester: &UserInfo,
    namespace: Option<&str>,
) -> Result<Value, ApiError> {
    validate(kind, &body, namespace)?;
    let user = review_user(kind, &body, requester);
    let decision = match body
        .pointer("/spec/resourceAttributes")
        .filter(|v| !v.is_null())
    {
        Some(ra) => {
            let attrs = Attributes {
                user: &user,
                verb: str_at(ra, "/verb"),
                is_resource_request: true,
                namespace: str_at(ra, "/namespace"),
                api_group: str_at(ra, "/group"),
                resource: str_at(ra, "/resource"),
                subresource: str_at(ra, "/subresource"),
                name: str_at(ra, "/name"),
                path: "",
            };
            authz.decide(&attrs).await
        }
        None => {
            let attrs = Attributes {
                user: &user,
                verb: str_at(&body, "/spec/nonResourceAttributes/verb"),
                is_resource_request: false,
                namespace: "",
                api_group: "",
                resource: "",
                subresource: "",
                name: "",
                path: str_at(&body, "/spec/nonResourceAttributes/path"),
            };
            authz.decide(&attrs).await
        }
    };
    let mut status = json!({
        "allowed": matches!(decision, Decision::Allow(_)),
    });
    if matches!(decision, Decision::Deny(_)) {
        status["denied"] = json!(true);
    }
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    body["status"] = status;
    Ok(body)
}

fn review_handler(authz: Arc<Authorization>, kind: ReviewKind) -> CreateHandler {
    Arc::new(move |body, user, ns| {
        let authz = authz.clone();
        Box::pin(async move { access_review(&authz, kind, body, &user, ns.as_deref()).await })
    })
}

/// SelfSubjectRulesReview: the requester's rules in `spec.namespace`.
fn rules_review_handler(authz: Arc<Authorization>) -> CreateHandler {
    Arc::new(move |mut body, user, _ns| {
        let authz = authz.clone();
        Box::pin(async move {
            let namespace = str_at(&body, "/spec/namespace").to_owned();
            let rules = authz.rules_for(&user, &namespace).await;
            let mut status = json!({
                "resourceRules": rules.resource_rules,
                "nonResourceRules": rules.non_resource_rules,
                "incomplete": rules.incomplete,
            });
            if !rules.errors.is_empty() {
                status["evaluationError"] = json!(rules.errors.join(", "));
            }
            body["status"] = status;
            Ok(body)
        })
    })
}

fn answer(mut body: Value, status: Value) -> Value {
    body["status"] = status;
    body
}

pub fn authorization_v1(authz: Arc<Authorization>) -> Vec<VirtualResource> {
    let group = "authorization.k8s.io";
    vec![
        VirtualResource {
            info: info(
                group,
                "localsubjectaccessreviews",
                "LocalSubjectAccessReview",
                true,
            ),
            create: review_handler(authz.clone(), ReviewKind::Local),
        },
        VirtualResource {
            info: info(
                group,
                "selfsubjectaccessreviews",
                "SelfSubjectAccessReview",
                false,
            ),
            create: review_handler(authz.clone(), ReviewKind::SelfSubject),
        },
        VirtualResource {
            info: info(
                group,
                "selfsubjectrulesreviews",
                "SelfSubjectRulesReview",
                false,
            ),
            create: rules_review_handler(authz.clone()),
        },
        VirtualResource {
            info: info(group, "subjectaccessreviews", "SubjectAccessReview", false),
            create: review_handler(authz, ReviewKind::Subject),
        },
    ]
}

fn user_info(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    info
}

pub fn authentication_v1() -> Vec<VirtualResource> {
    let group = "authentication.k8s.io";
    vec![
        VirtualResource {
            info: info(group, "selfsubjectreviews", "SelfSubjectReview", false),
            create: handler(|body, user, _ns| {
                Ok(answer(body, json!({"userInfo": user_info(&user)})))
            }),
        },
        VirtualResource {
            info: info(group, "tokenreviews", "TokenReview", false),
            // No token authenticator is configured yet: no token is valid.
            create: handler(|body, _user, _ns| {
                Ok(answer(body, json!({"authenticated": false, "user": {}})))
            }),
        },
    ]
}
