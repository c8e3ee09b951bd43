//! Matching and the shape of refusals, on real attributes.

use std::sync::Arc;

use crate::admission::plugin::policy::matching;
use crate::admission::RequestContext;
use crate::authentication::user::UserInfo;
use crate::registry::ResourceInfo;
use serde_json::json;

use super::*;

fn attributes(operation: Operation, subresource: &str, labels: Value) -> Attributes {
    let info = ResourceInfo {
        has_status: true,
        has_scale: true,
        ..ResourceInfo::testing("apps", "Deployment")
    };
    let object = json!({"metadata": {"name": "web", "namespace": "prod", "labels": labels}});
    let request = RequestContext::new(Arc::new(UserInfo::anonymous()));
    Attributes::new(
        &info,
        operation,
        Some(object),
        None,
        subresource,
        None,
        "",
        false,
        request,
    )
}

#[test]
fn rules_cover_resources_subresources_and_exclusions() {
    let a = attributes(Operation::Create, "", json!({"tier": "web"}));
    let scale = attributes(Operation::Update, "scale", json!({}));
    let rules = |resources: Value| {
        json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["*"],
            "operations": ["*"], "resources": resources}]})
    };
    let ns = json!({"metadata": {"labels": {"env": "prod"}}});
    let check = |c: &Value, a: &Attributes| matching::matches(c, a, Some(&ns)).map(|t| t.is_some());
    assert_eq!(check(&rules(json!(["deployments"])), &a), Ok(true));
    assert_eq!(check(&rules(json!(["*"])), &scale), Ok(false));
    assert_eq!(check(&rules(json!(["*/scale"])), &scale), Ok(true));
    assert_eq!(check(&rules(json!(["deployments/*"])), &a), Ok(false));
    let mut excluded = rules(json!(["*"]));
    excluded["excludeResourceRules"] = json!([{"apiGroups": ["*"], "apiVersions": ["*"],
        "operations": ["CREATE"], "resources": ["deployments"], "resourceNames": ["web"]}]);
    assert_eq!(check(&excluded, &a), Ok(false));
    let mut selected = rules(json!(["deployments"]));
    selected["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    selected["objectSelector"] = json!({"matchLabels": {"tier": "web"}});
    assert_eq!(check(&selected, &a), Ok(true));
    selected["namespaceSelector"] = json!({"matchLabels": {"env": "dev"}});
    assert_eq!(check(&selected, &a), Ok(false));
    selected["namespaceSelector"] =
        json!({"matchExpressions": [{"key": "env", "operator": "Bogus"}]});
    assert!(check(&selected, &a).is_err());
}

#[test]
fn refusals_carry_the_validation_reason_and_its_code() {
    let a = attributes(Operation::Create, "", json!({}));
    let denial = |reason: Option<&str>| Denial {
        policy: "p".into(),
        binding: Some("b".into()),
        message: "too big".into(),
        reason: reason.map(str::to_owned),
    };
    let err = denied(&a, denial(None));
    assert_eq!((err.code, err.reason), (422, StatusReason::Invalid));
    assert_eq!(
        err.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: too big"
    );
    let err = denied(&a, denial(Some("Forbidden")));
    assert_eq!((err.code, err.reason), (403, StatusReason::Forbidden));
    let causes = err.details.map(|d| d.causes).unwrap_or_default();
    assert_eq!(
        causes.last().map(|c| c.message.as_str()),
        Some("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: too big")
    );
}
