//! Validation of request options and managed fields, as upstream's
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation`: `fieldManager`,
//! `dryRun`, `fieldValidation`, `force`, DeleteOptions and
//! `metadata.managedFields`.
//!
//! Upstream reports option errors as an Invalid Status of the options
//! kind: see [`options_invalid`].

use serde_json::Value;

use crate::field_errors::{ErrorList, FieldError, Path};
use crate::status::ApiError;

/// Longest `fieldManager`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// Longest `managedFields[].subresource`.
pub const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;

/// The 422 upstream returns for invalid options, e.g.
/// `CreateOptions.meta.k8s.io "" is invalid: dryRun: ...`; `kind` is
/// `CreateOptions`, `UpdateOptions`, `PatchOptions` or `DeleteOptions`.
pub fn options_invalid(kind: &str, errors: &[FieldError]) -> ApiError {
    ApiError::invalid("meta.k8s.io", kind, "", errors)
}

/// A field manager name: at most 128 bytes, printable characters only.
pub fn validate_field_manager(manager: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(path, Some(FIELD_MANAGER_MAX_LENGTH)));
    }
    for (i, c) in manager.char_indices() {
        if !crate::util::gofmt::is_go_printable(c) {
            errs.push(FieldError::invalid(
                path,
                manager,
                format!("invalid character U+{:04X} (at position {i})", u32::from(c)),
            ));
        }
    }
    errs
}

/// `dryRun` may only contain `All`.
pub fn validate_dry_run<S: AsRef<str>>(path: &Path, dry_run: &[S]) -> ErrorList {
    if dry_run.iter().all(|v| v.as_ref() == "All") {
        return ErrorList::new();
    }
    let shown: Vec<Value> = dry_run.iter().map(|v| Value::from(v.as_ref())).collect();
    vec![FieldError::not_supported(
        path,
        Value::Array(shown),
        &["All"],
    )]
}

/// `fieldValidation` is empty, `Ignore`, `Strict` or `Warn`.
pub fn validate_field_validation(path: &Path, value: &str) -> ErrorList {
    const ALLOWED: [&str; 4] = ["", "Ignore", "Strict", "Warn"];
    if ALLOWED.contains(&value) {
        return ErrorList::new();
    }
    vec![FieldError::not_supported(path, value, &ALLOWED)]
}

/// The options common to create, update and patch requests.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions<'a> {
    pub field_manager: &'a str,
    pub dry_run: &'a [String],
    pub field_validation: &'a str,
}

/// Upstream's `ValidateCreateOptions` / `ValidateUpdateOptions`.
pub fn validate_write_options(options: &WriteOptions<'_>) -> ErrorList {
    let mut errs = validate_field_manager(options.field_manager, &Path::new("fieldManager"));
    errs.extend(validate_dry_run(&Path::new("dryRun"), options.dry_run));
    errs.extend(validate_field_validation(
        &Path::new("fieldValidation"),
        options.field_validation,
    ));
    errs
}

/// Upstream's `ValidatePatchOptions`: apply patches need a field manager;
/// `force` is only for apply patches.
pub fn validate_patch_options(
    options: &WriteOptions<'_>,
    force: Option<bool>,
    is_apply: bool,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if is_apply {
        if options.field_manager.is_empty() {
            errs.push(FieldError::required(
                &Path::new("fieldManager"),
                "is required for apply patch",
            ));
        }
    } else if force.is_some() {
        errs.push(FieldError::forbidden(
            &Path::new("force"),
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(validate_write_options(options));
    errs
}

/// Upstream's `ValidateDeleteOptions` over a DeleteOptions JSON object
/// (the request body, with query parameters merged in).
pub fn validate_delete_options(options: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let present = |k: &str| options.get(k).is_some_and(|v| !v.is_null());
    let policy_path = Path::new("propagationPolicy");
    let policy = options.get("propagationPolicy").filter(|v| !v.is_null());
    if present("orphanDependents") {
        if let Some(policy) = policy {
            errs.push(FieldError::invalid(
                &policy_path,
                policy.clone(),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
    }
    if let Some(policy) = policy {
        if !matches!(
            policy.as_str(),
            Some("Foreground" | "Background" | "Orphan")
        ) {
            errs.push(FieldError::not_supported(
                &policy_path,
                policy.clone(),
                &["Foreground", "Background", "Orphan", "nil"],
            ));
        }
    }
    let dry_run: Vec<&str> = options
        .get("dryRun")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    errs.extend(validate_dry_run(&Path::new("dryRun"), &dry_run));
    let ignore_path = Path::new("ignoreStoreReadErrorWithClusterBreakingPotential");
    if options
        .get("ignoreStoreReadErrorWithClusterBreakingPotential")
        .and_then(Value::as_bool)
        == Some(true)
    {
        for (key, label) in [
            ("propagationPolicy", ".propagationPolicy"),
            ("orphanDependents", ".orphanDependents"),
            ("gracePeriodSeconds", ".gracePeriodSeconds"),
            ("preconditions", ".preconditions"),
        ] {
            if present(key) {
                errs.push(FieldError::invalid(
                    &ignore_path,
                    true,
                    format!("cannot be set together with {label}"),
                ));
            }
        }
    }
    errs
}

/// Upstream's `ValidateManagedFields` over `metadata.managedFields`.
pub fn validate_managed_fields(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("metadata").child("managedFields");
    let entries = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    for (i, entry) in entries.into_iter().flatten().enumerate() {
        let path = path.index(i);
        let field = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
        match field("operation") {
            "" => errs.push(FieldError::required(
                &path.child("operation"),
                "must not be empty",
            )),
            "Apply" | "Update" => {}
            other => errs.push(FieldError::not_supported(
                &path.child("operation"),
                other,
                &["Apply", "Update"],
            )),
        }
        let fields_type = field("fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errs.push(FieldError::invalid(
                &path.child("fieldsType"),
                fields_type,
                "must be `FieldsV1`",
            ));
        }
        errs.extend(validate_field_manager(
            field("manager"),
            &path.child("manager"),
        ));
        if field("subresource").len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(FieldError::too_long(
                &path.child("subresource"),
                Some(MAX_SUBRESOURCE_NAME_LENGTH),
            ));
        }
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

    #[test]
    fn write_options() {
        let ok = WriteOptions {
            field_manager: "kubectl-client-side-apply",
            dry_run: &["All".to_owned()],
            field_validation: "Strict",
        };
        assert!(validate_write_options(&ok).is_empty());
        let dry = ["Some".to_owned()];
        let long = "m".repeat(129);
        let bad = WriteOptions {
            field_manager: &long,
            dry_run: &dry,
            field_validation: "Loose",
        };
        assert_eq!(
            messages(&validate_write_options(&bad)),
            [
                "fieldManager: Too long: may not be more than 128 bytes",
                "dryRun: Unsupported value: [\"Some\"]: supported values: \"All\"",
                "fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
            ]
        );
        assert_eq!(
            messages(&validate_field_manager(
                "a\u{7}",
                &Path::new("fieldManager")
            )),
            ["fieldManager: Invalid value: \"a\\a\": invalid character U+0007 (at position 1)"]
        );
        let err = options_invalid("CreateOptions", &validate_write_options(&bad)[1..2]);
        assert_eq!(
            err.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: supported values: \"All\""
        );
        assert_eq!(err.code, 422);
    }

    #[test]
    fn patch_options() {
        let opts = WriteOptions::default();
        assert_eq!(
            messages(&validate_patch_options(&opts, None, true)),
            ["fieldManager: Required value: is required for apply patch"]
        );
        assert_eq!(
            messages(&validate_patch_options(&opts, Some(true), false)),
            ["force: Forbidden: may not be specified for non-apply patch"]
        );
        let named = WriteOptions {
            field_manager: "me",
            ..WriteOptions::default()
        };
        assert!(validate_patch_options(&named, Some(true), true).is_empty());
    }

    #[test]
    fn delete_options() {
        assert!(validate_delete_options(&json!({"propagationPolicy": "Background"})).is_empty());
        assert!(validate_delete_options(&json!({})).is_empty());
        assert_eq!(
            messages(&validate_delete_options(&json!({
                "orphanDependents": true, "propagationPolicy": "Sideways", "dryRun": ["x"]
            }))),
            [
                "propagationPolicy: Invalid value: \"Sideways\": orphanDependents and deletionPropagation cannot be both set",
                "propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                "dryRun: Unsupported value: [\"x\"]: supported values: \"All\"",
            ]
        );
        assert_eq!(
            messages(&validate_delete_options(&json!({
                "ignoreStoreReadErrorWithClusterBreakingPotential": true,
                "gracePeriodSeconds": 0
            }))),
            ["ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .gracePeriodSeconds"]
        );
    }

    #[test]
    fn managed_fields() {
        let obj = json!({"metadata": {"managedFields": [
            {"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1"},
            {"manager": "m", "operation": "Merge", "fieldsType": "FieldsV2", "subresource": "s".repeat(257)},
            {"manager": "m"}
        ]}});
        assert_eq!(
            messages(&validate_managed_fields(&obj)),
            [
                "metadata.managedFields[1].operation: Unsupported value: \"Merge\": supported values: \"Apply\", \"Update\"",
                "metadata.managedFields[1].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
                "metadata.managedFields[1].subresource: Too long: may not be more than 256 bytes",
                "metadata.managedFields[2].operation: Required value: must not be empty",
            ]
        );
    }
}
