//! CRD status conditions and the pure decisions of upstream's CRD
//! controllers: naming (accepted names against the other CRDs of the
//! group), establishing, and the API approval policy of `*.k8s.io` groups.

use apimachinery::field_errors::Path;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames,
};
use serde_json::{json, Value};

pub const NAMES_ACCEPTED: &str = "NamesAccepted";
pub const ESTABLISHED: &str = "Established";
pub const TERMINATING: &str = "Terminating";
pub const NON_STRUCTURAL_SCHEMA: &str = "NonStructuralSchema";
pub const API_APPROVAL: &str = "KubernetesAPIApprovalPolicyConformant";
pub const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// A condition to set: type, status, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub kind: &'static str,
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub fn new(kind: &'static str, status: &'static str, reason: &str, message: &str) -> Self {
        Condition {
            kind,
            status,
            reason: reason.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// Whether the CRD is being deleted (its resources still served, no new ones).
pub fn is_terminating(crd: &CustomResourceDefinition) -> bool {
    crd.metadata.deletion_timestamp.is_some() || is_true(crd, TERMINATING)
}

pub fn is_true(crd: &CustomResourceDefinition, kind: &str) -> bool {
    crd.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == kind && c.status == "True")
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn conditions_mut(obj: &mut Value) -> Option<&mut Vec<Value>> {
    let status = obj.as_object_mut()?.entry("status").or_insert(json!({}));
    let map = status.as_object_mut()?;
    let conditions = map.entry("conditions").or_insert(json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    conditions.as_array_mut()
}

/// Sets a condition on a CRD object (JSON); the transition time changes
/// only with the status. Returns whether anything changed.
pub fn set(obj: &mut Value, c: &Condition) -> bool {
    let Some(conditions) = conditions_mut(obj) else {
        return false;
    };
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match conditions.iter_mut().find(|v| field(v, "type") == c.kind) {
        Some(existing) => {
            if field(existing, "status") == c.status
                && field(existing, "reason") == c.reason
                && field(existing, "message") == c.message
            {
                return false;
            }
            if field(existing, "status") != c.status || existing.get("lastTransitionTime").is_none()
            {
                existing["lastTransitionTime"] = json!(now());
            }
            existing["status"] = json!(c.status);
            existing["reason"] = json!(c.reason);
            existing["message"] = json!(c.message);
        }
        None => conditions.push(json!({
            "type": c.kind, "status": c.status, "lastTransitionTime": now(),
            "reason": c.reason, "message": c.message,
        })),
    }
    true
}

/// Removes a condition; returns whether it was there.
pub fn remove(obj: &mut Value, kind: &str) -> bool {
    let Some(conditions) = obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let before = conditions.len();
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    before != conditions.len()
}

/// The NonStructuralSchema condition: `Some` with the violations of every
/// version's schema, `None` when all are structural (the condition goes).
pub fn non_structural(crd: &CustomResourceDefinition) -> Option<Condition> {
    let schemas: Vec<Option<Value>> = crd
        .spec
        .versions
        .iter()
        .map(|v| {
            let schema = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
            serde_json::to_value(schema).ok()
        })
        .collect();
    // One schema shared by every version is checked once, as upstream's
    // internal `spec.validation`.
    let shared = match schemas.as_slice() {
        [Some(first), rest @ ..] if rest.iter().all(|s| s.as_ref() == Some(first)) => Some(first),
        _ => None,
    };
    let mut errors = Vec::new();
    let mut check = |path: Path, schema: &Value| {
        let props = ::apiextensions::Props::from_value(schema);
        errors.extend(::apiextensions::structural::validate_structural(
            &path.child("openAPIV3Schema"),
            &props,
        ));
    };
    match shared {
        Some(schema) => check(Path::new("spec").child("validation"), schema),
        None => {
            for (i, schema) in schemas.iter().enumerate() {
                if let Some(schema) = schema {
                    let path = Path::new("spec").child("versions").index(i);
                    check(path.child("schema"), schema);
                }
            }
        }
    }
    let message = match errors.as_slice() {
        [] => return None,
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Some(Condition::new(
        NON_STRUCTURAL_SCHEMA,
        "True",
        "Violations",
        &message,
    ))
}

/// Names claimed by the accepted names of the group's other CRDs.
#[derive(Debug, Default)]
pub struct UsedNames {
    resources: Vec<String>,
    kinds: Vec<String>,
}

impl UsedNames {
    pub fn of<'a>(others: impl IntoIterator<Item = &'a CustomResourceDefinition>) -> Self {
        let mut used = UsedNames::default();
        for crd in others {
            let Some(n) = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref()) else {
                continue;
            };
            used.resources.push(n.plural.clone());
            used.resources.extend(n.singular.clone());
            used.resources
                .extend(n.short_names.iter().flatten().cloned());
            used.kinds.push(n.kind.clone());
            used.kinds.extend(n.list_kind.clone());
        }
        used
    }
}

/// Upstream's check: a name is fine when it is already ours or unused.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// The accepted names and the NamesAccepted and Established conditions the
/// naming controller computes for `crd`.
pub fn names(
    crd: &CustomResourceDefinition,
    used: &UsedNames,
) -> (CustomResourceDefinitionNames, Condition, Condition) {
    let requested = &crd.spec.names;
    let accepted = crd
        .status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .unwrap_or_default();
    let mut new = accepted.clone();
    let mut failure: Option<(&str, String)> = None;
    let mut check = |reason: &'static str, result: Result<(), String>| match result {
        Ok(()) => true,
        Err(message) => {
            failure = Some((reason, message));
            false
        }
    };
    let opt = |o: &Option<String>| o.clone().unwrap_or_default();
    if check(
        "PluralConflict",
        fresh(&requested.plural, &accepted.plural, &used.resources),
    ) {
        new.plural = requested.plural.clone();
    }
    if check(
        "SingularConflict",
        fresh(
            &opt(&requested.singular),
            &opt(&accepted.singular),
            &used.resources,
        ),
    ) {
        new.singular = requested.singular.clone();
    }
    if requested.short_names != accepted.short_names
        && check(
            "ShortNamesConflict",
            fresh_short_names(requested, &accepted, used),
        )
    {
        new.short_names = requested.short_names.clone();
    }
    if check(
        "KindConflict",
        fresh(&requested.kind, &accepted.kind, &used.kinds),
    ) {
        new.kind = requested.kind.clone();
    }
    if check(
        "ListKindConflict",
        fresh(
            &opt(&requested.list_kind),
            &opt(&accepted.list_kind),
            &used.kinds,
        ),
    ) {
        new.list_kind = requested.list_kind.clone();
    }
    new.categories = requested.categories.clone();
    let names_accepted = match failure {
        Some((reason, message)) => Condition::new(NAMES_ACCEPTED, "False", reason, &message),
        None => Condition::new(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"),
    };
    let established = establishing(crd, &names_accepted);
    (new, names_accepted, established)
}

/// New short names must be unused (those already accepted stay ours).
fn fresh_short_names(
    requested: &CustomResourceDefinitionNames,
    accepted: &CustomResourceDefinitionNames,
    used: &UsedNames,
) -> Result<(), String> {
    let ours = accepted.short_names.clone().unwrap_or_default();
    let errors: Vec<String> = requested
        .short_names
        .iter()
        .flatten()
        .filter(|s| !ours.contains(s))
        .filter_map(|s| fresh(s, "", &used.resources).err())
        .collect();
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.concat()),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The Established condition the naming controller writes: kept once
/// true, otherwise waiting for the names.
fn establishing(crd: &CustomResourceDefinition, names_accepted: &Condition) -> Condition {
    if is_true(crd, ESTABLISHED) {
        established()
    } else if names_accepted.status == "True" {
        Condition::new(
            ESTABLISHED,
            "False",
            "Installing",
            "the initial names have been accepted",
        )
    } else {
        Condition::new(
            ESTABLISHED,
            "False",
            "NotAccepted",
            "not all names are accepted",
        )
    }
}

/// The established condition once the CRD is served.
pub fn established() -> Condition {
    Condition::new(
        ESTABLISHED,
        "True",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    )
}

fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

fn is_url_with_host(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.split('/').next().unwrap_or("").is_empty()
    })
}

/// The KubernetesAPIApprovalPolicyConformant condition, for protected
/// groups only.
pub fn api_approval(crd: &CustomResourceDefinition) -> Option<Condition> {
    if !is_protected_group(&crd.spec.group) {
        return None;
    }
    let annotation = crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(APPROVAL_ANNOTATION))
        .map(String::as_str)
        .unwrap_or("");
    Some(if annotation.is_empty() {
        Condition::new(API_APPROVAL, "False", "MissingAnnotation", &format!(
            "protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"))
    } else if annotation.starts_with("unapproved") {
        Condition::new(
            API_APPROVAL,
            "False",
            "UnapprovedAnnotation",
            &format!("not approved: \"{annotation}\""),
        )
    } else if is_url_with_host(annotation) {
        Condition::new(
            API_APPROVAL,
            "True",
            "ApprovedAnnotation",
            &format!("approved in {annotation}"),
        )
    } else {
        Condition::new(API_APPROVAL, "False", "InvalidAnnotation", &format!(
            "protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, accepted: bool) -> CustomResourceDefinition {
        let names = json!({"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List")});
        let mut v = json!({"metadata": {"name": name},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": names, "versions": []}});
        if accepted {
            v["status"] = json!({"acceptedNames": names});
        }
        serde_json::from_value(v).expect("valid CRD")
    }

    #[test]
    fn fresh_names_are_accepted() {
        let c = crd("widgets.example.com", "widgets", "Widget", false);
        let (names, accepted, established) = names(&c, &UsedNames::default());
        assert_eq!(names.plural, "widgets");
        assert_eq!(
            (accepted.status, accepted.reason.as_str()),
            ("True", "NoConflicts")
        );
        assert_eq!(established.reason, "Installing");
    }

    #[test]
    fn a_kind_in_use_is_a_conflict() {
        let other = crd("gadgets.example.com", "gadgets", "Widget", true);
        let c = crd("widgets.example.com", "widgets", "Widget", false);
        let (names, accepted, established) = names(&c, &UsedNames::of([&other]));
        assert_eq!(accepted.status, "False");
        // Like upstream, the last conflicting name decides the reason.
        assert_eq!(accepted.reason, "ListKindConflict");
        assert_eq!(accepted.message, "\"WidgetList\" is already in use");
        assert_eq!(names.kind, "");
        assert_eq!(established.reason, "NotAccepted");
    }

    #[test]
    fn approval_follows_the_annotation() {
        let mut c = crd("widgets.x.k8s.io", "widgets", "Widget", false);
        c.spec.group = "x.k8s.io".into();
        assert_eq!(
            api_approval(&c).map(|c| c.reason),
            Some("MissingAnnotation".into())
        );
        c.metadata.annotations = Some(
            [(
                APPROVAL_ANNOTATION.to_owned(),
                "https://github.com/kubernetes/kubernetes/pull/1".to_owned(),
            )]
            .into(),
        );
        assert_eq!(api_approval(&c).map(|c| c.status), Some("True"));
        c.metadata.annotations = Some(
            [(
                APPROVAL_ANNOTATION.to_owned(),
                "unapproved, testing".to_owned(),
            )]
            .into(),
        );
        assert_eq!(
            api_approval(&c).map(|c| c.reason),
            Some("UnapprovedAnnotation".into())
        );
        c.spec.group = "example.com".into();
        assert!(api_approval(&c).is_none());
    }

    #[test]
    fn conditions_are_set_once_and_removed() {
        let mut obj = json!({"metadata": {"name": "a"}});
        let c = established();
        assert!(set(&mut obj, &c));
        assert!(!set(&mut obj, &c));
        assert_eq!(obj["status"]["conditions"][0]["type"], "Established");
        assert!(remove(&mut obj, ESTABLISHED));
        assert!(!remove(&mut obj, ESTABLISHED));
    }

    #[test]
    fn non_structural_schemas_are_flagged() {
        let mut c = crd("widgets.example.com", "widgets", "Widget", false);
        assert!(non_structural(&c).is_none());
        c.spec.versions =
            serde_json::from_value(json!([{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {}}}}}]))
            .expect("versions");
        let cond = non_structural(&c).expect("violations");
        assert_eq!((cond.status, cond.reason.as_str()), ("True", "Violations"));
        assert!(
            cond.message
                .contains("spec.validation.openAPIV3Schema.properties[spec]"),
            "{}",
            cond.message
        );
    }
}
