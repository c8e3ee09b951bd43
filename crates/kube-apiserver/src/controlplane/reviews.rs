//! The computed resources of authentication.k8s.io and
//! authorization.k8s.io (upstream's `pkg/registry/authentication` and
//! `pkg/registry/authorization`): access reviews answered by the
//! authorizer chain on the review's attributes, rules reviews from the
//! chain's rule resolvers, self-subject reviews answered from the
//! request's user, and token reviews answered by the authenticator chain.
//! They are created, never stored.

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::status::ApiError;
use apimachinery::validation::selectors::{
    validate_field_selector_requirement, validate_label_selector_requirement, LabelSelectorOptions,
};
use apiserver::authentication::user::UserInfo;
use apiserver::authentication::Authentication;
use apiserver::authorization::authorizer::{Attributes, Decision};
use apiserver::endpoints::virtual_create::{CreateHandler, CreateRequest, VirtualResource};
use apiserver::filters::authorization::Authorization;
use apiserver::registry::{object_meta, ResourceInfo};
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

const UNION: &str = "exactly one of nonResourceAttributes or resourceAttributes must be specified";

/// Upstream's (1.37) checks of a selector of `spec.resourceAttributes`:
/// raw selector or requirements, not both, each requirement well formed
/// (operators this server does not know are accepted).
fn validate_selector(selector: &Value, path: &Path, label: bool) -> Vec<FieldError> {
    let raw = str_at(selector, "/rawSelector");
    let requirements = selector
        .get("requirements")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut errors = Vec::new();
    if !raw.is_empty() && !requirements.is_empty() {
        errors.push(FieldError::invalid(
            &path.child("rawSelector"),
            raw,
            "may not specified at the same time as requirements",
        ));
    }
    if raw.is_empty() && requirements.is_empty() {
        errors.push(FieldError::required(
            &path.child("requirements"),
            format!("when {path} is specified, requirements or rawSelector is required"),
        ));
    }
    let options = LabelSelectorOptions {
        allow_unknown_operator: true,
        ..LabelSelectorOptions::default()
    };
    for (i, requirement) in requirements.iter().enumerate() {
        let at = path.child("requirements").index(i);
        errors.extend(if label {
            validate_label_selector_requirement(requirement, options, &at)
        } else {
            validate_field_selector_requirement(requirement, true, &at)
        });
    }
    errors
}

/// Whether a decoded field holds its zero value (what Go's `omitempty`
/// drops and semantic equality treats as unset).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// The set fields of `metadata`, as upstream would encode its ObjectMeta.
fn set_metadata(body: &Value) -> serde_json::Map<String, Value> {
    body.get("metadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, v)| !is_zero(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Reviews carry no object metadata (a LocalSubjectAccessReview its
/// namespace only); managedFields are ignored.
fn validate_metadata(kind: ReviewKind, body: &Value) -> Option<FieldError> {
    let meta = set_metadata(body);
    let allowed = |k: &str| k == "managedFields" || (kind == ReviewKind::Local && k == "namespace");
    if meta.keys().all(|k| allowed(k)) {
        return None;
    }
    let detail = match kind {
        ReviewKind::Local => "must be empty except for namespace",
        _ => "must be empty",
    };
    Some(FieldError::invalid(
        &Path::new("metadata"),
        Value::Object(meta),
        detail,
    ))
}

/// Upstream's validation of an access review (`ValidateSubjectAccessReview`
/// and its Self/Local variants): the attributes union reported at `spec`,
/// the subject, the selectors, the metadata, then the local review's
/// namespace rules.
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
        (None, None) => errors.push(FieldError::invalid(&spec, Value::Null, UNION)),
        (Some(_), Some(nr)) => errors.push(FieldError::invalid(&spec, nr.clone(), UNION)),
        _ => {}
    }
    let groups = body.pointer("/spec/groups").and_then(Value::as_array);
    if kind != ReviewKind::SelfSubject
        && str_at(body, "/spec/user").is_empty()
        && groups.is_none_or(Vec::is_empty)
    {
        errors.push(FieldError::invalid(
            &spec.child("user"),
            "",
            "at least one of user or group must be specified",
        ));
    }
    let attrs_path = spec.child("resourceAttributes");
    for (field, label) in [("fieldSelector", false), ("labelSelector", true)] {
        if let Some(sel) = resource.and_then(|r| r.get(field)).filter(|v| !v.is_null()) {
            errors.extend(validate_selector(sel, &attrs_path.child(field), label));
        }
    }
    errors.extend(validate_metadata(kind, body));
    if kind == ReviewKind::Local {
        let ns = namespace.unwrap_or("");
        if let Some(attrs) = resource {
            if str_at(attrs, "/namespace") != ns {
                errors.push(FieldError::invalid(
                    &attrs_path.child("namespace"),
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
    let extra = body
        .pointer("/spec/extra")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), strings(v)))
        .collect();
    UserInfo {
        name: str_at(body, "/spec/user").to_owned(),
        uid: str_at(body, "/spec/uid").to_owned(),
        groups: groups
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        extra,
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
    // Echoed as upstream re-encodes the decoded object: zero fields dropped,
    // a local review in the request's namespace.
    let mut meta = set_metadata(&body);
    if let (ReviewKind::Local, Some(ns)) = (kind, namespace) {
        meta.entry("namespace").or_insert_with(|| json!(ns));
    }
    body["metadata"] = Value::Object(meta);
    validate(kind, &body, namespace)?;
    let user = review_user(kind, &body, requester);
    let outcome = match body
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
                api_version: str_at(ra, "/version"),
                field_selector: str_at(ra, "/fieldSelector/rawSelector"),
                label_selector: str_at(ra, "/labelSelector/rawSelector"),
            };
            authz.evaluate(&attrs).await
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
                api_version: "",
                field_selector: "",
                label_selector: "",
            };
            authz.evaluate(&attrs).await
        }
    };
    let decision = outcome.decision;
    let mut status = json!({
        "allowed": matches!(decision, Decision::Allow(_)),
    });
    if matches!(decision, Decision::Deny(_)) {
        status["denied"] = json!(true);
    }
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    // A mode that failed (a webhook) is reported, as upstream does.
    if let Some(error) = outcome.error {
        status["evaluationError"] = json!(error);
    }
    body["status"] = status;
    Ok(body)
}

fn review_handler(authz: Arc<Authorization>, kind: ReviewKind) -> CreateHandler {
    Arc::new(move |req: CreateRequest| {
        let authz = authz.clone();
        Box::pin(async move {
            access_review(&authz, kind, req.body, &req.user, req.namespace.as_deref()).await
        })
    })
}

/// SelfSubjectRulesReview: the requester's rules in `spec.namespace`.
/// The authorizers' rule resolution errors as upstream's nested error
/// aggregates print them: distinct messages in order, bracketed when more
/// than one.
fn evaluation_error(errors: &[String]) -> Option<String> {
    let mut distinct: Vec<&str> = Vec::with_capacity(errors.len());
    for e in errors {
        if !distinct.contains(&e.as_str()) {
            distinct.push(e);
        }
    }
    match distinct.as_slice() {
        [] => None,
        [one] => Some((*one).to_owned()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

fn rules_review_handler(authz: Arc<Authorization>) -> CreateHandler {
    Arc::new(move |req: CreateRequest| {
        let authz = authz.clone();
        let (body, user) = (req.body, req.user);
        Box::pin(async move {
            let namespace = str_at(&body, "/spec/namespace").to_owned();
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            let rules = authz.rules_for(&user, &namespace).await;
            let mut status = json!({
                "resourceRules": rules.resource_rules,
                "nonResourceRules": rules.non_resource_rules,
                "incomplete": rules.incomplete,
            });
            if let Some(error) = evaluation_error(&rules.errors) {
                status["evaluationError"] = json!(error);
            }
            // Upstream answers a new review holding only the status.
            Ok(json!({"metadata": {}, "spec": {}, "status": status}))
        })
    })
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

/// A string array of a JSON value (non-strings skipped).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// authentication.k8s.io/v1 UserInfo.
fn user_info(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// TokenReview: the token authenticated by the server's chain for the
/// review's audiences (the API's when none are given).
async fn token_review(authn: &Authentication, mut body: Value) -> Result<Value, ApiError> {
    let token = str_at(&body, "/spec/token").to_owned();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = body
        .pointer("/spec/audiences")
        .map(strings)
        .unwrap_or_default();
    let status = match authn.authenticate_token(&token, &audiences).await {
        Ok(resp) => json!({
            "authenticated": true,
            "user": user_info(&resp.user),
            "audiences": resp.audiences,
        }),
        Err(e) => json!({"user": {}, "error": e.to_string()}),
    };
    body["metadata"] = Value::Object(set_metadata(&body));
    body["status"] = status;
    Ok(body)
}

pub fn authentication_v1(authn: Arc<Authentication>) -> Vec<VirtualResource> {
    let group = "authentication.k8s.io";
    vec![
        VirtualResource {
            info: info(group, "selfsubjectreviews", "SelfSubjectReview", false),
            create: Arc::new(|req: CreateRequest| {
                // A new review stamped now, as upstream answers.
                let review = json!({
                    "metadata": {"creationTimestamp": object_meta::now()},
                    "status": {"userInfo": user_info(&req.user)},
                });
                Box::pin(async move { Ok(review) })
            }),
        },
        VirtualResource {
            info: info(group, "tokenreviews", "TokenReview", false),
            create: Arc::new(move |req: CreateRequest| {
                let authn = authn.clone();
                Box::pin(async move { token_review(&authn, req.body).await })
            }),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::{evaluation_error, validate, ReviewKind};
    use serde_json::{json, Value};

    fn refusal(kind: ReviewKind, body: Value, namespace: Option<&str>) -> String {
        validate(kind, &body, namespace)
            .expect_err("invalid review")
            .message
    }

    #[test]
    fn access_reviews_are_validated_as_upstream_1_37() {
        let sar = ReviewKind::Subject;
        assert_eq!(
            refusal(sar, json!({"spec": {}}), None),
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [spec: Invalid value: null: \
             exactly one of nonResourceAttributes or resourceAttributes must be specified, \
             spec.user: Invalid value: \"\": at least one of user or group must be specified]"
        );
        let both = json!({"spec": {"user": "jane", "resourceAttributes": {"verb": "get"},
            "nonResourceAttributes": {"verb": "get", "path": "/logs"}}});
        assert_eq!(
            refusal(ReviewKind::SelfSubject, both, None),
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec: Invalid value: \
             {\"path\":\"/logs\",\"verb\":\"get\"}: exactly one of nonResourceAttributes or \
             resourceAttributes must be specified"
        );
        let named = json!({"metadata": {"name": "foo", "creationTimestamp": null},
            "spec": {"groups": ["g"], "nonResourceAttributes": {"verb": "get", "path": "/"}}});
        assert_eq!(
            refusal(sar, named, None),
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: metadata: Invalid value: \
             {\"name\":\"foo\"}: must be empty"
        );
        let blank = json!({"metadata": {"creationTimestamp": null},
            "spec": {"user": "jane", "nonResourceAttributes": {"verb": "get", "path": "/"}}});
        assert!(validate(sar, &blank, None).is_ok());
    }

    #[test]
    fn selectors_and_local_reviews() {
        let selectors = json!({"spec": {"user": "jane", "resourceAttributes": {"verb": "list",
            "fieldSelector": {},
            "labelSelector": {"rawSelector": "a=b",
                "requirements": [{"key": "a", "operator": "Bogus"}]}}}});
        assert_eq!(
            refusal(ReviewKind::Subject, selectors, None),
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [\
             spec.resourceAttributes.fieldSelector.requirements: Required value: when \
             spec.resourceAttributes.fieldSelector is specified, requirements or rawSelector is \
             required, spec.resourceAttributes.labelSelector.rawSelector: Invalid value: \"a=b\": \
             may not specified at the same time as requirements]"
        );
        let local = json!({"metadata": {"namespace": "team", "name": "x"},
            "spec": {"resourceAttributes": {"verb": "get", "namespace": "other"}}});
        assert_eq!(
            refusal(ReviewKind::Local, local, Some("team")),
            "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: [\
             spec.user: Invalid value: \"\": at least one of user or group must be specified, \
             metadata: Invalid value: {\"name\":\"x\",\"namespace\":\"team\"}: must be empty \
             except for namespace, spec.resourceAttributes.namespace: Invalid value: \
             \"other\": must match metadata.namespace]"
        );
    }

    #[test]
    fn evaluation_errors_read_like_upstream_aggregates() {
        let e = |list: &[&str]| {
            evaluation_error(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(e(&[]), None);
        assert_eq!(e(&["a"]).as_deref(), Some("a"));
        assert_eq!(e(&["a", "a"]).as_deref(), Some("a"));
        assert_eq!(e(&["a", "b", "a"]).as_deref(), Some("[a, b]"));
    }
}
