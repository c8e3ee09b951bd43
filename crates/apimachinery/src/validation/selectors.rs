//! Validation of `metav1.LabelSelector` and `metav1.FieldSelectorRequirement`
//! objects as they appear in API objects (a Deployment's `spec.selector`,
//! a SubjectAccessReview's selectors), with upstream's messages from
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation`.

use serde_json::Value;

use super::object_meta::validate_labels;
use super::{is_label_value, is_qualified_name};
use crate::field_errors::{ErrorList, FieldError, Path};

/// Relaxations of label selector validation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LabelSelectorOptions {
    /// Accept invalid label values in expressions (only for updates of
    /// objects stored with them).
    pub allow_invalid_label_value: bool,
    /// Accept operators this server does not know.
    pub allow_unknown_operator: bool,
}

fn str_field<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

fn string_values(obj: &Value) -> Vec<&str> {
    obj.get("values")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

/// Whether some expression of the selector has an invalid label value
/// (decides [`LabelSelectorOptions::allow_invalid_label_value`] on update).
pub fn label_selector_has_invalid_label_value(selector: Option<&Value>) -> bool {
    selector
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(string_values)
        .any(|v| !is_label_value(v).is_empty())
}

/// Validates a label selector object; `None` or `null` is valid.
pub fn validate_label_selector(
    selector: Option<&Value>,
    options: LabelSelectorOptions,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return errs;
    };
    validate_labels(
        selector.get("matchLabels"),
        &path.child("matchLabels"),
        &mut errs,
    );
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, expr) in exprs.into_iter().flatten().enumerate() {
        errs.extend(validate_label_selector_requirement(
            expr,
            options,
            &path.child("matchExpressions").index(i),
        ));
    }
    errs
}

/// Validates one `matchExpressions` entry.
pub fn validate_label_selector_requirement(
    requirement: &Value,
    options: LabelSelectorOptions,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = string_values(requirement);
    match str_field(requirement, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &path.child("values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other if !options.allow_unknown_operator => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
        _ => {}
    }
    let key = str_field(requirement, "key");
    for msg in is_qualified_name(key) {
        errs.push(FieldError::invalid(&path.child("key"), key, msg));
    }
    if !options.allow_invalid_label_value {
        for (i, value) in values.iter().enumerate() {
            for msg in is_label_value(value) {
                errs.push(FieldError::invalid(
                    &path.child("values").index(i),
                    *value,
                    msg,
                ));
            }
        }
    }
    errs
}

/// Validates a `metav1.FieldSelectorRequirement` object.
pub fn validate_field_selector_requirement(
    requirement: &Value,
    allow_unknown_operator: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if str_field(requirement, "key").is_empty() {
        errs.push(FieldError::required(
            &path.child("key"),
            "must be specified",
        ));
    }
    let has_values = !string_values(requirement).is_empty();
    match str_field(requirement, "operator") {
        "In" | "NotIn" if !has_values => errs.push(FieldError::required(
            &path.child("values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if has_values => errs.push(FieldError::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other if !allow_unknown_operator => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn spec_selector() -> Path {
        Path::new("spec").child("selector")
    }

    #[test]
    fn valid_selectors() {
        let opts = LabelSelectorOptions::default();
        assert!(validate_label_selector(None, opts, &spec_selector()).is_empty());
        assert!(validate_label_selector(Some(&Value::Null), opts, &spec_selector()).is_empty());
        let sel = json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"}
            ]
        });
        assert!(validate_label_selector(Some(&sel), opts, &spec_selector()).is_empty());
    }

    #[test]
    fn invalid_selectors() {
        let sel = json!({
            "matchLabels": {"app": "-web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In"},
                {"key": "x", "operator": "Exists", "values": ["a"]},
                {"key": "-k", "operator": "Gt", "values": ["a b"]}
            ]
        });
        let got = messages(&validate_label_selector(
            Some(&sel),
            LabelSelectorOptions::default(),
            &spec_selector(),
        ));
        assert_eq!(got.len(), 6, "{got:?}");
        assert!(got[0].starts_with(
            "spec.selector.matchLabels: Invalid value: \"-web\": a valid label must be"
        ));
        assert_eq!(got[1], "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
        assert_eq!(got[2], "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
        assert_eq!(got[3], "spec.selector.matchExpressions[2].operator: Invalid value: \"Gt\": not a valid selector operator");
        assert!(got[4].starts_with(
            "spec.selector.matchExpressions[2].key: Invalid value: \"-k\": name part must consist"
        ));
        assert!(got[5].starts_with("spec.selector.matchExpressions[2].values[0]: Invalid value: \"a b\": a valid label must be"));

        let relaxed = LabelSelectorOptions {
            allow_invalid_label_value: true,
            allow_unknown_operator: true,
        };
        let got = messages(&validate_label_selector(
            Some(&sel),
            relaxed,
            &spec_selector(),
        ));
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(label_selector_has_invalid_label_value(Some(&sel)));
        assert!(!label_selector_has_invalid_label_value(Some(
            &json!({"matchExpressions": [{"values": ["ok"]}]})
        )));
        assert!(!label_selector_has_invalid_label_value(None));
    }

    #[test]
    fn field_selector_requirements() {
        let path = Path::new("spec")
            .child("fieldSelector")
            .child("requirements")
            .index(0);
        assert!(validate_field_selector_requirement(
            &json!({"key": "spec.nodeName", "operator": "In", "values": ["n"]}),
            false,
            &path
        )
        .is_empty());
        assert_eq!(
            messages(&validate_field_selector_requirement(&json!({"operator": "Op"}), false, &path)),
            [
                "spec.fieldSelector.requirements[0].key: Required value: must be specified",
                "spec.fieldSelector.requirements[0].operator: Invalid value: \"Op\": not a valid selector operator",
            ]
        );
        assert_eq!(
            validate_field_selector_requirement(
                &json!({"key": "k", "operator": "Op"}),
                true,
                &path
            )
            .len(),
            0
        );
        assert_eq!(
            messages(&validate_field_selector_requirement(
                &json!({"key": "k", "operator": "Exists", "values": ["v"]}),
                false,
                &path
            )),
            ["spec.fieldSelector.requirements[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]
        );
    }
}
