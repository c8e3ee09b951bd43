//! Validation of the smaller parts of a CRD spec: names, subresources,
//! printer columns, selectable fields and conversion.

use apimachinery::validation::formats::is_valid_port_num;
use apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use apimachinery::{FieldError, Path};
use serde_json::Value;

use crate::fieldpath;
use crate::props::Props;

const PRINTER_COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const MAX_SELECTABLE_FIELDS: usize = 8;

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `spec.names` (with `spec` set, the four main names are required) or
/// `status.acceptedNames`.
pub fn validate_names(names: Option<&Value>, path: &Path, spec: bool) -> Vec<FieldError> {
    let empty = Value::Null;
    let names = names.unwrap_or(&empty);
    let mut errs = Vec::new();
    let (plural, singular, kind, list_kind) = (
        text(names, "plural"),
        text(names, "singular"),
        text(names, "kind"),
        text(names, "listKind"),
    );
    if spec {
        for (field, value) in [
            ("plural", plural),
            ("singular", singular),
            ("kind", kind),
            ("listKind", list_kind),
        ] {
            if value.is_empty() {
                errs.push(FieldError::required(&path.child(field), ""));
            }
        }
    }
    for (field, value) in [("plural", plural), ("singular", singular)] {
        let problems = is_dns1035_label(value);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                value,
                problems.join(","),
            ));
        }
    }
    for (field, value) in [("kind", kind), ("listKind", list_kind)] {
        let problems = is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                ),
            ));
        }
    }
    for (i, short) in strings(names, "shortNames").iter().enumerate() {
        let problems = is_dns1035_label(short);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("shortNames").index(i),
                short.as_str(),
                problems.join(","),
            ));
        }
    }
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in strings(names, "categories").iter().enumerate() {
        let problems = is_dns1035_label(category);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("categories").index(i),
                category.as_str(),
                problems.join(","),
            ));
        }
    }
    errs
}

fn simple_json_path(s: &str, path: &Path) -> Option<FieldError> {
    if s.is_empty() {
        Some(FieldError::invalid(path, s, "must not be empty"))
    } else if !s.starts_with('.') {
        Some(FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

/// `subresources`: scale paths must be JSON paths under `.spec`/`.status`.
pub fn validate_subresources(subresources: Option<&Value>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = subresources
        .and_then(|s| s.get("scale"))
        .filter(|s| !s.is_null())
    else {
        return errs;
    };
    for (field, prefix, under) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let at = path.child(&format!("scale.{field}"));
        let value = text(scale, field);
        if value.is_empty() {
            errs.push(FieldError::required(&at, ""));
        } else if let Some(e) = simple_json_path(value, &at) {
            errs.push(e);
        } else if !value.starts_with(prefix) {
            errs.push(FieldError::invalid(&at, value, under));
        }
    }
    let selector = text(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let at = path.child("scale.labelSelectorPath");
        if let Some(e) = simple_json_path(selector, &at) {
            errs.push(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                &at,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

/// `additionalPrinterColumns`.
pub fn validate_columns(columns: Option<&Value>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(columns) = columns.and_then(Value::as_array) else {
        return errs;
    };
    for (i, col) in columns.iter().enumerate() {
        let at = path.index(i);
        if text(col, "name").is_empty() {
            errs.push(FieldError::required(&at.child("name"), ""));
        }
        let ty = text(col, "type");
        let types_detail = format!("must be one of {PRINTER_COLUMN_TYPES}");
        if ty.is_empty() {
            errs.push(FieldError::required(&at.child("type"), types_detail));
        } else if !PRINTER_COLUMN_TYPES.split(',').any(|t| t == ty) {
            errs.push(FieldError::invalid(&at.child("type"), ty, types_detail));
        }
        let format = text(col, "format");
        if !format.is_empty() && !PRINTER_COLUMN_FORMATS.split(',').any(|f| f == format) {
            errs.push(FieldError::invalid(
                &at.child("format"),
                format,
                format!("must be one of {PRINTER_COLUMN_FORMATS}"),
            ));
        }
        let json_path = text(col, "jsonPath");
        let jp = at.child("JSONPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(&jp, ""));
        } else if let Some(e) = simple_json_path(json_path, &jp) {
            errs.push(e);
        }
    }
    errs
}

/// `selectableFields` of a version (or hoisted to the spec with `top`).
pub fn validate_selectable_fields(
    fields: Option<&Value>,
    schema: Option<&Value>,
    path: &Path,
    allow_too_many: bool,
    top: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(fields) = fields.and_then(Value::as_array).filter(|f| !f.is_empty()) else {
        return errs;
    };
    let Some(schema) = schema else {
        let detail = if top {
            "may only be set when validations.schema is included"
        } else {
            "may only be set when `version.schema.openAPIV3Schema` is not included"
        };
        errs.push(FieldError::invalid(path, "", detail));
        return errs;
    };
    let schema = Props::from_value(schema);
    let mut unique: Vec<String> = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let at = path.index(i).child("jsonPath");
        let json_path = text(field, "jsonPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(&at, ""));
            continue;
        }
        let (root, node) = match fieldpath::resolve(json_path, &schema, false) {
            Ok(found) => found,
            Err(e) => {
                errs.push(FieldError::invalid(
                    &at,
                    json_path,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if root == "metadata" {
            errs.push(FieldError::invalid(
                &at,
                json_path,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(node.ty.as_str(), "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                &at,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.iter().any(|u| u == json_path) {
            errs.push(FieldError::duplicate(&at, json_path));
        } else {
            unique.push(json_path.to_owned());
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !allow_too_many {
        errs.push(FieldError::too_many(
            path,
            Some(unique.len()),
            Some(MAX_SELECTABLE_FIELDS),
        ));
    }
    errs
}

/// `conversion`: strategy None or Webhook; a webhook needs review versions
/// and a client config with exactly one of url or service.
pub fn validate_conversion(
    conversion: Option<&Value>,
    require_recognized: bool,
    allow_invalid_ca_bundle: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conversion) = conversion else {
        return errs;
    };
    let strategy = text(conversion, "strategy");
    match strategy {
        "" => errs.push(FieldError::required(&path.child("strategy"), "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("strategy"),
            other,
            &["None", "Webhook"],
        )),
    }
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let reviews = webhook
        .map(|w| strings(w, "conversionReviewVersions"))
        .unwrap_or_default();
    if strategy == "Webhook" {
        let cc_path = path.child("webhookClientConfig");
        match client_config {
            None => errs.push(FieldError::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                errs.extend(client_config_errors(cc, &cc_path));
                let bundle = text(cc, "caBundle");
                if !bundle.is_empty() && !allow_invalid_ca_bundle {
                    if let Some(e) = ca_bundle_error(bundle) {
                        errs.push(FieldError::invalid(&cc_path.child("caBundle"), bundle, e));
                    }
                }
            }
        }
        errs.extend(review_versions(
            &reviews,
            require_recognized,
            &path.child("conversionReviewVersions"),
        ));
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                &path.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !reviews.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

/// Why a webhook `caBundle` (base64 of PEM) holds no usable certificate,
/// in upstream's words; `None` when it holds one.
pub fn ca_bundle_error(bundle: &str) -> Option<String> {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    const NO_CERTS: &str = "data does not contain any valid RSA or ECDSA certificates";
    let Ok(pem) = engine.decode(bundle.trim()) else {
        return Some(NO_CERTS.to_owned());
    };
    let text = String::from_utf8_lossy(&pem);
    let mut rest = text.as_ref();
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let body = &rest[start + "-----BEGIN CERTIFICATE-----".len()..];
        let Some(end) = body.find("-----END CERTIFICATE-----") else {
            break;
        };
        let der: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
        if engine.decode(der).is_ok_and(|d| !d.is_empty()) {
            return None;
        }
        rest = &body[end..];
    }
    Some(NO_CERTS.to_owned())
}

/// A webhook client config: exactly one of a valid https URL or a
/// service (shared with the webhook configurations' validation).
pub fn client_config_errors(cc: &Value, path: &Path) -> Vec<FieldError> {
    let url = cc.get("url").and_then(Value::as_str);
    let service = cc.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => webhook_url(url, &path.child("url")),
        (None, Some(service)) => webhook_service(service, &path.child("service")),
        _ => vec![FieldError::required(
            path,
            "exactly one of url or service is required",
        )],
    }
}

fn webhook_url(url: &str, path: &Path) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme,
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = if scheme.is_empty() {
        ""
    } else {
        &rest[..authority_end]
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    let (before_fragment, fragment) = url.split_once('#').unwrap_or((url, ""));
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if let Some((_, query)) = before_fragment
        .split_once('?')
        .filter(|(_, q)| !q.is_empty())
    {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

fn webhook_service(service: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if text(service, "name").is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "service name is required",
        ));
    }
    if text(service, "namespace").is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    let problems = is_valid_port_num(port);
    if !problems.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port,
            format!("port is not valid: {}", problems.join(", ")),
        ));
    }
    let Some(url_path) = service.get("path").and_then(Value::as_str) else {
        return errs;
    };
    let at = path.child("path");
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &at,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&at, url_path, "must start with a '/'"));
    }
    let trimmed = url_path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &at,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &at,
                url_path,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errs
}

/// Review versions (conversion or admission): DNS labels, no duplicates,
/// and, when `require_recognized`, one of v1 and v1beta1.
pub fn review_versions(
    versions: &[String],
    require_recognized: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if versions.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(&v.as_str()) {
            errs.push(FieldError::invalid(
                &path.index(i),
                v.as_str(),
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for problem in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(i), v.as_str(), problem));
        }
    }
    if require_recognized && !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        let shown: Vec<Value> = versions.iter().map(|v| Value::from(v.as_str())).collect();
        errs.push(FieldError::invalid(
            path,
            shown,
            "must include at least one of v1, v1beta1",
        ));
    }
    errs
}
