//! The computed resources of authentication.k8s.io and
//! authorization.k8s.io (upstream's `pkg/registry/authentication` and
//! `pkg/registry/authorization`): access reviews answered by the
//! configured authorizer, and self-subject reviews answered from the
//! request's user. They are created, never stored.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::endpoints::virtual_create::{CreateHandler, VirtualResource};
use apiserver::filters::authentication::UserInfo;
use apiserver::filters::authorization::{Authorization, Decision};
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

/// The review's status from the authorizer's decision.
fn access_status(authz: &Authorization) -> Value {
    match authz.decide() {
        Decision::Allow => json!({"allowed": true}),
        Decision::Deny(reason) => json!({"allowed": false, "denied": true, "reason": reason}),
        Decision::NoOpinion => json!({"allowed": false}),
    }
}

fn answer(mut body: Value, status: Value) -> Value {
    body["status"] = status;
    body
}

pub fn authorization_v1(authz: Arc<Authorization>) -> Vec<VirtualResource> {
    let group = "authorization.k8s.io";
    let review = |authz: Arc<Authorization>| {
        handler(move |body, _user, _ns| Ok(answer(body, access_status(&authz))))
    };
    let rules_authz = authz.clone();
    vec![
        VirtualResource {
            info: info(
                group,
                "localsubjectaccessreviews",
                "LocalSubjectAccessReview",
                true,
            ),
            create: review(authz.clone()),
        },
        VirtualResource {
            info: info(
                group,
                "selfsubjectaccessreviews",
                "SelfSubjectAccessReview",
                false,
            ),
            create: review(authz.clone()),
        },
        VirtualResource {
            info: info(
                group,
                "selfsubjectrulesreviews",
                "SelfSubjectRulesReview",
                false,
            ),
            create: handler(move |body, _user, _ns| {
                let status = match rules_authz.decide() {
                    Decision::Allow => json!({
                        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                        "incomplete": false,
                    }),
                    _ => json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false}),
                };
                Ok(answer(body, status))
            }),
        },
        VirtualResource {
            info: info(group, "subjectaccessreviews", "SubjectAccessReview", false),
            create: review(authz),
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
