//! Validation of CustomResourceDefinition objects (`apiextensions.k8s.io/v1`)
//! as upstream's `ValidateCustomResourceDefinition(Update)`.
//!
//! Upstream validates the internal version, into which v1 is converted by
//! moving per-version `schema`, `subresources`, `additionalPrinterColumns`
//! and `selectableFields` to the top level when every version has the same
//! value; errors about them are then reported under `spec.validation`,
//! `spec.subresources`, … rather than `spec.versions[i]`. [`Layout`]
//! reproduces that choice.

use apimachinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain, object_meta,
};
use apimachinery::{FieldError, Path};
use serde_json::{json, Value};

use crate::crd_parts::{
    ca_bundle_error, validate_columns, validate_conversion, validate_names,
    validate_selectable_fields, validate_subresources,
};
use crate::crd_schema::{validate_schema_holder, Rules};
use crate::openapi::json_equal;
use crate::props::Props;

const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .filter(|v| !v.is_null())
}

fn text<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

fn versions(crd: &Value) -> &[Value] {
    get(crd, &["spec", "versions"])
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Which per-version fields upstream hoists to the top level.
struct Layout {
    schema: bool,
    subresources: bool,
    columns: bool,
    selectable: bool,
}

impl Layout {
    fn of(versions: &[Value]) -> Layout {
        let same = |key: &str| {
            let first = versions
                .first()
                .and_then(|v| v.get(key))
                .filter(|v| !v.is_null());
            versions.iter().all(|v| {
                let this = v.get(key).filter(|v| !v.is_null());
                match (first, this) {
                    (None, None) => true,
                    (Some(a), Some(b)) => json_equal(a, b),
                    // An empty list equals an absent one (Go's semantic equality).
                    (None, Some(b)) | (Some(b), None) => b.as_array().is_some_and(Vec::is_empty),
                }
            })
        };
        let any = !versions.is_empty();
        Layout {
            schema: any && same("schema"),
            subresources: any && same("subresources"),
            columns: any && same("additionalPrinterColumns"),
            selectable: any && same("selectableFields"),
        }
    }
}

/// Options that differ between create and update (upstream relaxes some
/// rules for CRDs that already broke them).
#[derive(Clone, Copy)]
struct Options {
    require_recognized_conversion_review_version: bool,
    allow_too_many_selectable_fields: bool,
    schema_rules: Rules,
    allow_invalid_ca_bundle: bool,
}

/// Validates a CRD for create. Expects the object as upstream's strategy
/// leaves it before validation (see [`crate::prepare_for_create`]).
pub fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let opts = Options {
        require_recognized_conversion_review_version: true,
        allow_too_many_selectable_fields: false,
        schema_rules: Rules::STRICT,
        // The CRD is not established yet.
        allow_invalid_ca_bundle: true,
    };
    let mut errs = validate_metadata(crd);
    errs.extend(validate_spec(crd, opts));
    errs.extend(validate_status(crd));
    errs.extend(validate_api_approval(crd, None));
    errs.extend(validate_preserve_unknown_fields(crd, None));
    errs
}

/// Validates a CRD update: everything [`validate_crd`] checks (with
/// upstream's allowances for rules the old object already broke) plus the
/// immutability of group, plural and (once established) scope and kind.
pub fn validate_crd_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let old_reviews = get(
        old,
        &["spec", "conversion", "webhook", "conversionReviewVersions"],
    )
    .and_then(Value::as_array)
    .cloned()
    .unwrap_or_default();
    let opts = Options {
        require_recognized_conversion_review_version: old_reviews.is_empty()
            || old_reviews
                .iter()
                .any(|v| matches!(v.as_str(), Some("v1" | "v1beta1"))),
        allow_too_many_selectable_fields: get(old, &["spec"]).map(selectable_signature)
            == get(new, &["spec"]).map(selectable_signature),
        schema_rules: Rules::for_update(&schemas(old)),
        allow_invalid_ca_bundle: allow_invalid_ca_bundle(old),
    };
    let mut errs = object_meta::validate_object_meta_update(new, old);
    errs.extend(validate_spec(new, opts));
    let spec = Path::new("spec");
    if is_established(old) {
        immutable(
            new,
            old,
            &["spec", "scope"],
            &spec.child("scope"),
            &mut errs,
        );
        immutable(
            new,
            old,
            &["spec", "names", "kind"],
            &spec.child("names").child("kind"),
            &mut errs,
        );
    }
    immutable(
        new,
        old,
        &["spec", "group"],
        &spec.child("group"),
        &mut errs,
    );
    immutable(
        new,
        old,
        &["spec", "names", "plural"],
        &spec.child("names").child("plural"),
        &mut errs,
    );
    errs.extend(validate_status(new));
    errs.extend(validate_api_approval(new, Some(old)));
    errs.extend(validate_preserve_unknown_fields(new, Some(old)));
    errs
}

/// An invalid caBundle may stay while the CRD is not established or when
/// the old one was already invalid.
fn allow_invalid_ca_bundle(old: &Value) -> bool {
    if !is_established(old) {
        return true;
    }
    let bundle = text(
        old,
        &["spec", "conversion", "webhook", "clientConfig", "caBundle"],
    );
    !bundle.is_empty() && ca_bundle_error(bundle).is_some()
}

fn selectable_signature(spec: &Value) -> Value {
    let per_version: Vec<Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|v| v.get("selectableFields").cloned().unwrap_or(Value::Null))
                .collect()
        })
        .unwrap_or_default();
    Value::Array(per_version)
}

fn is_established(crd: &Value) -> bool {
    get(crd, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type") == Some(&"Established".into())
                    && c.get("status") == Some(&"True".into())
            })
        })
}

fn immutable(new: &Value, old: &Value, at: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    let (n, o) = (get(new, at), get(old, at));
    if n != o {
        errs.push(FieldError::invalid(
            path,
            n.cloned().unwrap_or_else(|| "".into()),
            object_meta::FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
}

fn validate_metadata(crd: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(crd, false, name_is_dns_subdomain);
    let required = format!(
        "{}.{}",
        text(crd, &["spec", "names", "plural"]),
        text(crd, &["spec", "group"])
    );
    let mismatch = r#"must be spec.names.plural+"."+spec.group"#;
    let meta = Path::new("metadata");
    for field in ["generateName", "name"] {
        let value = text(crd, &["metadata", field]);
        if !value.is_empty() && value != required {
            let path = meta.child(field);
            let rendered = path.to_string();
            let at = errs
                .iter()
                .rposition(|e| e.field == rendered)
                .map_or(errs.len(), |i| i + 1);
            errs.insert(at, FieldError::invalid(&path, value, mismatch));
        }
    }
    errs
}

fn validate_spec(crd: &Value, opts: Options) -> Vec<FieldError> {
    let path = Path::new("spec");
    let spec = get(crd, &["spec"]).cloned().unwrap_or(Value::Null);
    let mut errs = Vec::new();
    let group = text(&spec, &["group"]);
    if group.is_empty() {
        errs.push(FieldError::required(&path.child("group"), ""));
    } else {
        let problems = is_dns1123_subdomain(group);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("group"),
                group,
                problems.join(","),
            ));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                &path.child("group"),
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match text(&spec, &["scope"]) {
        "" => errs.push(FieldError::required(&path.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("scope"),
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    let versions = versions(crd);
    let layout = Layout::of(versions);
    if !layout.schema
        || versions
            .iter()
            .all(|v| get(v, &["schema", "openAPIV3Schema"]).is_none())
    {
        for (i, v) in versions.iter().enumerate() {
            if get(v, &["schema", "openAPIV3Schema"]).is_none() {
                let at = path
                    .child("versions")
                    .index(i)
                    .child("schema")
                    .child("openAPIV3Schema");
                errs.push(FieldError::required(&at, ""));
            }
        }
    }
    let preserve = get(&spec, &["preserveUnknownFields"]).and_then(Value::as_bool) == Some(true);
    if preserve && has_defaults(versions) {
        errs.push(FieldError::invalid(
            &path.child("preserveUnknownFields"),
            true,
            "must be false in order to use defaults in the schema",
        ));
    }
    errs.extend(validate_versions(versions, &layout, opts, &path));
    errs.extend(validate_names(
        get(&spec, &["names"]),
        &path.child("names"),
        true,
    ));
    errs.extend(validate_top_level(versions, &layout, opts, &path));
    let strategy = text(&spec, &["conversion", "strategy"]);
    if !strategy.is_empty() && strategy != "None" && preserve {
        errs.push(FieldError::invalid(
            &path.child("conversion").child("strategy"),
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errs.extend(validate_conversion(
        get(&spec, &["conversion"]),
        opts.require_recognized_conversion_review_version,
        opts.allow_invalid_ca_bundle,
        &path.child("conversion"),
    ));
    errs
}

/// The decoded schemas of every version.
fn schemas(crd: &Value) -> Vec<Props> {
    versions(crd)
        .iter()
        .filter_map(|v| get(v, &["schema", "openAPIV3Schema"]))
        .map(Props::from_value)
        .collect()
}

fn has_defaults(versions: &[Value]) -> bool {
    versions.iter().any(|v| {
        get(v, &["schema", "openAPIV3Schema"])
            .is_some_and(|s| Props::from_value(s).any(&mut |p| p.default.is_some()))
    })
}

fn has_status(subresources: Option<&Value>) -> bool {
    subresources
        .and_then(|s| s.get("status"))
        .is_some_and(|s| !s.is_null())
}

fn validate_versions(
    versions: &[Value],
    layout: &Layout,
    opts: Options,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut storage = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    let vpath = path.child("versions");
    for (i, v) in versions.iter().enumerate() {
        let at = vpath.index(i);
        let name = text(v, &["name"]);
        if get(v, &["storage"]).and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        if seen.contains(&name) {
            unique = false;
        } else {
            seen.push(name);
        }
        let problems = is_dns1035_label(name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &at.child("name"),
                name,
                problems.join(","),
            ));
        }
        errs.extend(deprecation_warning(v, &at));
        errs.extend(version_parts(versions, v, layout, opts, &at));
    }
    let shown = internal_versions(versions, layout);
    if !unique {
        errs.push(FieldError::invalid(
            &vpath,
            shown.clone(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            &vpath,
            shown,
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(first) = versions.first() {
        let name = text(first, &["name"]);
        let problems = is_dns1035_label(name);
        if !name.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("version"),
                name,
                problems.join(","),
            ));
        }
    }
    errs
}

/// The versions as upstream prints them in errors: its internal type
/// marshalled to JSON (Go field names, hoisted fields null).
fn internal_versions(versions: &[Value], layout: &Layout) -> Value {
    let opt = |v: &Value, key: &str, hoisted: bool| {
        if hoisted {
            Value::Null
        } else {
            get(v, &[key]).cloned().unwrap_or(Value::Null)
        }
    };
    let flag =
        |v: &Value, key: &str| Value::Bool(get(v, &[key]).and_then(Value::as_bool) == Some(true));
    let columns = |v: &Value| match get(v, &["additionalPrinterColumns"]).and_then(Value::as_array)
    {
        Some(cols) if !layout.columns => Value::Array(
            cols.iter()
                .map(|c| {
                    json!({"Name": text(c, &["name"]), "Type": text(c, &["type"]),
                           "Format": text(c, &["format"]), "Description": text(c, &["description"]),
                           "Priority": get(c, &["priority"]).and_then(Value::as_i64).unwrap_or(0),
                           "JSONPath": text(c, &["jsonPath"])})
                })
                .collect(),
        ),
        _ => Value::Null,
    };
    let selectable = |v: &Value| match get(v, &["selectableFields"]).and_then(Value::as_array) {
        Some(fields) if !layout.selectable => Value::Array(
            fields
                .iter()
                .map(|f| json!({"JSONPath": text(f, &["jsonPath"])}))
                .collect(),
        ),
        _ => Value::Null,
    };
    let schema = |v: &Value| match get(v, &["schema", "openAPIV3Schema"]) {
        Some(s) if !layout.schema => json!({"OpenAPIV3Schema": s}),
        _ => Value::Null,
    };
    Value::Array(
        versions
            .iter()
            .map(|v| {
                json!({
                    "Name": text(v, &["name"]),
                    "Served": flag(v, "served"),
                    "Storage": flag(v, "storage"),
                    "Deprecated": flag(v, "deprecated"),
                    "DeprecationWarning": opt(v, "deprecationWarning", false),
                    "Schema": schema(v),
                    "Subresources": opt(v, "subresources", layout.subresources),
                    "AdditionalPrinterColumns": columns(v),
                    "SelectableFields": selectable(v),
                })
            })
            .collect(),
    )
}

/// The per-version fields that are not hoisted to the top level.
fn version_parts(
    versions: &[Value],
    v: &Value,
    layout: &Layout,
    opts: Options,
    at: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !layout.schema {
        if let Some(schema) = get(v, &["schema"]) {
            let subresources = if layout.subresources {
                versions.first()
            } else {
                Some(v)
            };
            let status = has_status(subresources.and_then(|v| get(v, &["subresources"])));
            errs.extend(validate_schema_holder(
                schema,
                status,
                &at.child("schema"),
                opts.schema_rules,
            ));
        }
    }
    if !layout.subresources {
        errs.extend(validate_subresources(
            get(v, &["subresources"]),
            &at.child("subresources"),
        ));
    }
    if !layout.columns {
        errs.extend(validate_columns(
            get(v, &["additionalPrinterColumns"]),
            &at.child("additionalPrinterColumns"),
        ));
    }
    if !layout.selectable {
        errs.extend(validate_selectable_fields(
            get(v, &["selectableFields"]),
            get(v, &["schema", "openAPIV3Schema"]),
            &at.child("selectableFields"),
            opts.allow_too_many_selectable_fields,
            false,
        ));
    }
    errs
}

fn deprecation_warning(v: &Value, at: &Path) -> Vec<FieldError> {
    let deprecated = get(v, &["deprecated"]).and_then(Value::as_bool) == Some(true);
    let Some(warning) = get(v, &["deprecationWarning"]).and_then(Value::as_str) else {
        return Vec::new();
    };
    let path = at.child("deprecationWarning");
    let mut problems = Vec::new();
    if !deprecated {
        problems.push("can only be set for deprecated versions".to_owned());
    } else {
        if warning.len() > 256 {
            problems.push("must be <= 256 characters long".to_owned());
        }
        if warning.is_empty() {
            problems.push("must not be an empty string".to_owned());
        }
        if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control()) {
            problems.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
        }
    }
    problems
        .into_iter()
        .map(|p| FieldError::invalid(&path, warning, p))
        .collect()
}

fn validate_top_level(
    versions: &[Value],
    layout: &Layout,
    opts: Options,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let first = versions.first();
    let hoisted = |key: &str| first.and_then(|v| get(v, &[key]));
    if layout.schema {
        if let Some(schema) = hoisted("schema") {
            let any_status = if layout.subresources {
                has_status(hoisted("subresources"))
            } else {
                versions
                    .iter()
                    .any(|v| has_status(get(v, &["subresources"])))
            };
            errs.extend(validate_schema_holder(
                schema,
                any_status,
                &path.child("validation"),
                opts.schema_rules,
            ));
        }
    }
    if layout.subresources {
        errs.extend(validate_subresources(
            hoisted("subresources"),
            &path.child("subresources"),
        ));
    }
    if layout.columns {
        errs.extend(validate_columns(
            hoisted("additionalPrinterColumns"),
            &path.child("additionalPrinterColumns"),
        ));
    }
    if layout.selectable {
        if let Some(fields) =
            hoisted("selectableFields").filter(|f| f.as_array().is_some_and(|a| !a.is_empty()))
        {
            let schema = if layout.schema {
                hoisted("schema").and_then(|s| get(s, &["openAPIV3Schema"]))
            } else {
                None
            };
            errs.extend(validate_selectable_fields(
                Some(fields),
                schema,
                &path.child("selectableFields"),
                opts.allow_too_many_selectable_fields,
                true,
            ));
        }
    }
    errs
}

fn validate_status(crd: &Value) -> Vec<FieldError> {
    let status = Path::new("status");
    let mut errs = validate_names(
        get(crd, &["status", "acceptedNames"]),
        &status.child("acceptedNames"),
        false,
    );
    let stored: Vec<&str> = get(crd, &["status", "storedVersions"])
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let path = status.child("storedVersions");
    let shown = Value::from(stored.iter().map(|s| Value::from(*s)).collect::<Vec<_>>());
    if stored.is_empty() {
        errs.push(FieldError::invalid(
            &path,
            shown,
            "must have at least one stored version",
        ));
        return errs;
    }
    let versions = versions(crd);
    for v in versions {
        let name = text(v, &["name"]);
        if get(v, &["storage"]).and_then(Value::as_bool) == Some(true) && !stored.contains(&name) {
            errs.push(FieldError::invalid(
                &path,
                shown.clone(),
                format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, s) in stored.iter().enumerate() {
        if !versions.iter().any(|v| text(v, &["name"]) == *s) {
            errs.push(FieldError::invalid(
                &path.index(i),
                *s,
                format!("missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"),
            ));
        }
    }
    errs
}

#[derive(PartialEq)]
enum Approval {
    Missing,
    Bypassed,
    Approved,
    Invalid,
}

fn approval_state(crd: &Value) -> (Approval, String) {
    let value = text(crd, &["metadata", "annotations", APPROVAL_ANNOTATION]);
    if value.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"),
        );
    }
    if value.starts_with("unapproved") {
        return (Approval::Bypassed, String::new());
    }
    let url_ok = value.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/') && !value.contains(' ')
    });
    if url_ok {
        return (Approval::Approved, String::new());
    }
    (
        Approval::Invalid,
        format!("protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
    )
}

fn validate_api_approval(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let group = text(crd, &["spec", "group"]);
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if !protected {
        return Vec::new();
    }
    let (state, reason) = approval_state(crd);
    if old.is_some_and(|o| approval_state(o).0 == state) {
        return Vec::new();
    }
    let path = Path::new("metadata")
        .child("annotations")
        .key(APPROVAL_ANNOTATION);
    match state {
        Approval::Missing => vec![FieldError::required(&path, reason)],
        Approval::Invalid => vec![FieldError::invalid(
            &path,
            text(crd, &["metadata", "annotations", APPROVAL_ANNOTATION]),
            reason,
        )],
        Approval::Approved | Approval::Bypassed => Vec::new(),
    }
}

fn validate_preserve_unknown_fields(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let preserve = |v: &Value| {
        get(v, &["spec", "preserveUnknownFields"]).and_then(Value::as_bool) == Some(true)
    };
    if old.is_some_and(preserve) || !preserve(crd) {
        return Vec::new();
    }
    vec![FieldError::invalid(
        &Path::new("spec").child("preserveUnknownFields"),
        true,
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    )]
}

#[cfg(test)]
mod tests;
