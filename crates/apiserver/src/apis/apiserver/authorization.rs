//! The `--authorization-config` file (`AuthorizationConfiguration` of
//! `apiserver.config.k8s.io` v1, v1beta1 or v1alpha1; upstream's
//! `k8s.io/apiserver/pkg/apis/apiserver` types and validation): the authorizer chain
//! in order, webhooks with their connection, caching, failure policy and
//! CEL match conditions. Read, defaulted and validated as upstream's
//! `LoadAndValidateData`, with its field paths in the messages. Reloads
//! (kube-apiserver's `app/authorization/reload.rs`) also require the non-webhook types the
//! server started with.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use apimachinery::field_errors::{aggregate_message, FieldError, Path as FieldPath};
use apimachinery::validation::is_dns1123_subdomain;
use kube_cel::Expression;
use serde::Deserialize;

use crate::plugin::pkg::authorizer::webhook::FailurePolicy;
use apimachinery::go_duration::GoDuration;

/// Every type upstream knows, sorted as its messages list them.
const KNOWN_TYPES: &[&str] = &[
    "ABAC",
    "AlwaysAllow",
    "AlwaysDeny",
    "Node",
    "RBAC",
    "Webhook",
];
const GROUP: &str = "apiserver.config.k8s.io";
const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];
/// Upstream's limit on match conditions per webhook.
const MAX_MATCH_CONDITIONS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("open {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("failed to load AuthorizationConfiguration from file: {0}")]
    Load(String),
    /// Validation failures, aggregated like upstream.
    #[error("{0}")]
    Invalid(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawFile {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    authorizers: Vec<RawAuthorizer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawAuthorizer {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    webhook: Option<RawWebhook>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawWebhook {
    timeout: Option<String>,
    #[serde(rename = "authorizedTTL")]
    authorized_ttl: Option<String>,
    cache_authorized_requests: Option<bool>,
    #[serde(rename = "unauthorizedTTL")]
    unauthorized_ttl: Option<String>,
    cache_unauthorized_requests: Option<bool>,
    #[serde(default)]
    subject_access_review_version: String,
    #[serde(default)]
    match_condition_subject_access_review_version: String,
    #[serde(default)]
    failure_policy: String,
    #[serde(default)]
    connection_info: RawConnection,
    #[serde(default)]
    match_conditions: Vec<RawCondition>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConnection {
    #[serde(default, rename = "type")]
    kind: String,
    kube_config_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCondition {
    #[serde(default)]
    expression: String,
}

/// How a webhook is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    KubeConfigFile(PathBuf),
    InClusterConfig,
}

/// A validated webhook entry.
#[derive(Debug)]
pub struct WebhookEntry {
    pub timeout: Duration,
    pub authorized_ttl: Option<Duration>,
    pub unauthorized_ttl: Option<Duration>,
    pub version: String,
    pub failure_policy: FailurePolicy,
    pub connection: Connection,
    pub match_conditions: Vec<Expression>,
}

/// One validated authorizer of the chain.
#[derive(Debug)]
pub struct AuthorizerEntry {
    pub kind: String,
    pub name: String,
    pub webhook: Option<WebhookEntry>,
}

/// Parses and validates the file's content.
pub fn parse(data: &str) -> Result<Vec<AuthorizerEntry>, ConfigFileError> {
    parse_requiring(data, &BTreeSet::new())
}

/// [`parse`], also requiring authorizers of the `required` types (a
/// reloaded file must keep the non-webhook types the server started with).
pub fn parse_requiring(
    data: &str,
    required: &BTreeSet<String>,
) -> Result<Vec<AuthorizerEntry>, ConfigFileError> {
    let raw: RawFile =
        serde_yaml::from_str(data).map_err(|e| ConfigFileError::Load(e.to_string()))?;
    check_kind(&raw)?;
    let mut errors = Vec::new();
    let entries = validate(raw.authorizers, &mut errors);
    if let Some(message) = aggregate_message(&errors) {
        return Err(ConfigFileError::Invalid(message));
    }
    let mut problems: Vec<String> = entries
        .iter()
        .filter(|e| e.kind != "Webhook" && e.name != e.kind.to_lowercase())
        .map(|e| {
            format!(
                "expected name {} for authorizer {} instead of {}",
                e.kind.to_lowercase(),
                e.kind,
                e.name
            )
        })
        .collect();
    let missing: Vec<&str> = required
        .iter()
        .filter(|t| !entries.iter().any(|e| &e.kind == *t))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        problems.push(format!("missing required types: [{}]", missing.join(" ")));
    }
    match problems.len() {
        0 => Ok(entries),
        1 => Err(ConfigFileError::Invalid(problems.remove(0))),
        _ => Err(ConfigFileError::Invalid(format!(
            "[{}]",
            problems.join(", ")
        ))),
    }
}

fn check_kind(raw: &RawFile) -> Result<(), ConfigFileError> {
    let api_version = raw.api_version.as_deref().unwrap_or("");
    let kind = raw.kind.as_deref().unwrap_or("");
    if api_version.is_empty() || kind.is_empty() {
        return Err(ConfigFileError::Load(format!(
            "Object 'Kind' is missing in '{}'",
            if kind.is_empty() {
                "kind"
            } else {
                "apiVersion"
            }
        )));
    }
    let known_version = api_version
        .strip_prefix(GROUP)
        .and_then(|v| v.strip_prefix('/'))
        .is_some_and(|v| VERSIONS.contains(&v));
    if !known_version || kind != "AuthorizationConfiguration" {
        return Err(ConfigFileError::Load(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\""
        )));
    }
    Ok(())
}

fn validate(raw: Vec<RawAuthorizer>, errors: &mut Vec<FieldError>) -> Vec<AuthorizerEntry> {
    let root = FieldPath::new("authorizers");
    if raw.is_empty() {
        errors.push(FieldError::required(
            &root,
            "at least one authorization mode must be defined",
        ));
    }
    let mut types = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut entries = Vec::new();
    for (i, a) in raw.into_iter().enumerate() {
        let path = root.index(i);
        if a.kind.is_empty() {
            errors.push(FieldError::required(&path.child("type"), ""));
            continue;
        }
        if !KNOWN_TYPES.contains(&a.kind.as_str()) {
            errors.push(FieldError::not_supported(
                &path.child("type"),
                a.kind.as_str(),
                KNOWN_TYPES,
            ));
            continue;
        }
        if !types.insert(a.kind.clone()) && a.kind != "Webhook" {
            errors.push(FieldError::duplicate(&path.child("type"), a.kind.as_str()));
            continue;
        }
        if a.name.is_empty() {
            errors.push(FieldError::required(&path.child("name"), ""));
        } else if names.contains(&a.name) {
            errors.push(FieldError::duplicate(&path.child("name"), a.name.as_str()));
        } else {
            let problems = is_dns1123_subdomain(&a.name);
            if !problems.is_empty() {
                errors.push(FieldError::invalid(
                    &path.child("name"),
                    a.name.as_str(),
                    format!("authorizer name is invalid: {}", problems.join(", ")),
                ));
            }
        }
        names.insert(a.name.clone());
        let webhook = match (a.kind.as_str(), a.webhook) {
            ("Webhook", None) => {
                errors.push(FieldError::required(
                    &path.child("webhook"),
                    "required when type=Webhook",
                ));
                continue;
            }
            ("Webhook", Some(w)) => validate_webhook(&path.child("webhook"), w, errors),
            (_, Some(_)) => {
                errors.push(FieldError::invalid(
                    &path.child("webhook"),
                    "non-null",
                    "may only be specified when type=Webhook",
                ));
                None
            }
            (_, None) => None,
        };
        entries.push(AuthorizerEntry {
            kind: a.kind,
            name: a.name,
            webhook,
        });
    }
    entries
}

/// A `metav1.Duration` field: `Ok(None)` when unset.
fn duration(
    path: &FieldPath,
    value: Option<&str>,
    errors: &mut Vec<FieldError>,
) -> Option<GoDuration> {
    let text = value?;
    match GoDuration::from_str(text) {
        Ok(d) => Some(d),
        Err(e) => {
            errors.push(FieldError::invalid(path, text, e.to_string()));
            None
        }
    }
}

/// A TTL: defaulted when unset or zero, which must not be negative.
fn ttl(
    path: &FieldPath,
    value: Option<&str>,
    default: Duration,
    errors: &mut Vec<FieldError>,
) -> Duration {
    match duration(path, value, errors) {
        Some(d) if d.is_negative() => {
            errors.push(FieldError::invalid(path, d.to_string(), "must be > 0s"));
            default
        }
        Some(d) if d != GoDuration::ZERO => d.to_std(),
        _ => default,
    }
}

/// `timeout`: required, above zero and at most 30s.
fn timeout(path: &FieldPath, value: Option<&str>, errors: &mut Vec<FieldError>) -> Duration {
    match duration(path, value, errors) {
        None | Some(GoDuration::ZERO) => {
            errors.push(FieldError::required(path, ""));
            Duration::ZERO
        }
        Some(d) if d.is_negative() || d.to_std() > Duration::from_secs(30) => {
            errors.push(FieldError::invalid(
                path,
                d.to_string(),
                "must be > 0s and <= 30s",
            ));
            Duration::ZERO
        }
        Some(d) => d.to_std(),
    }
}

/// The review versions and the failure policy.
fn versions_and_policy(
    path: &FieldPath,
    w: &RawWebhook,
    errors: &mut Vec<FieldError>,
) -> FailurePolicy {
    match w.subject_access_review_version.as_str() {
        "" => errors.push(FieldError::required(
            &path.child("subjectAccessReviewVersion"),
            "",
        )),
        "v1" | "v1beta1" => {}
        other => errors.push(FieldError::not_supported(
            &path.child("subjectAccessReviewVersion"),
            other,
            &["v1", "v1beta1"],
        )),
    }
    let condition_version_path = path.child("matchConditionSubjectAccessReviewVersion");
    match w.match_condition_subject_access_review_version.as_str() {
        "" if !w.match_conditions.is_empty() => errors.push(FieldError::required(
            &condition_version_path,
            "required if match conditions are specified",
        )),
        "" | "v1" => {}
        other => errors.push(FieldError::not_supported(
            &condition_version_path,
            other,
            &["v1"],
        )),
    }
    match w.failure_policy.as_str() {
        "NoOpinion" => FailurePolicy::NoOpinion,
        "Deny" => FailurePolicy::Deny,
        "" => {
            errors.push(FieldError::required(&path.child("failurePolicy"), ""));
            FailurePolicy::NoOpinion
        }
        other => {
            errors.push(FieldError::not_supported(
                &path.child("failurePolicy"),
                other,
                &["NoOpinion", "Deny"],
            ));
            FailurePolicy::NoOpinion
        }
    }
}

fn validate_webhook(
    path: &FieldPath,
    w: RawWebhook,
    errors: &mut Vec<FieldError>,
) -> Option<WebhookEntry> {
    let before = errors.len();
    let timeout = timeout(&path.child("timeout"), w.timeout.as_deref(), errors);
    let authorized_ttl = ttl(
        &path.child("authorizedTTL"),
        w.authorized_ttl.as_deref(),
        Duration::from_secs(300),
        errors,
    );
    let unauthorized_ttl = ttl(
        &path.child("unauthorizedTTL"),
        w.unauthorized_ttl.as_deref(),
        Duration::from_secs(30),
        errors,
    );
    let failure_policy = versions_and_policy(path, &w, errors);
    let connection = connection(&path.child("connectionInfo"), w.connection_info, errors);
    let match_conditions = compile_conditions(path, &w.match_conditions, errors);
    if errors.len() > before {
        return None;
    }
    Some(WebhookEntry {
        timeout,
        authorized_ttl: w
            .cache_authorized_requests
            .unwrap_or(true)
            .then_some(authorized_ttl),
        unauthorized_ttl: w
            .cache_unauthorized_requests
            .unwrap_or(true)
            .then_some(unauthorized_ttl),
        version: w.subject_access_review_version,
        failure_policy,
        connection: connection?,
        match_conditions,
    })
}

fn connection(
    path: &FieldPath,
    raw: RawConnection,
    errors: &mut Vec<FieldError>,
) -> Option<Connection> {
    let file_path = path.child("kubeConfigFile");
    match raw.kind.as_str() {
        "" => errors.push(FieldError::required(&path.child("type"), "")),
        "InClusterConfig" => match raw.kube_config_file {
            Some(file) => errors.push(FieldError::invalid(
                &file_path,
                file,
                "can only be set when type=KubeConfigFile",
            )),
            None => return Some(Connection::InClusterConfig),
        },
        "KubeConfigFile" => match raw.kube_config_file.filter(|f| !f.is_empty()) {
            None => errors.push(FieldError::required(&file_path, "")),
            Some(file) if !Path::new(&file).is_absolute() => errors.push(FieldError::invalid(
                &file_path,
                file,
                "must be an absolute path",
            )),
            Some(file) => match std::fs::metadata(&file) {
                Err(e) => errors.push(FieldError::invalid(
                    &file_path,
                    file.as_str(),
                    format!("error loading file: stat {file}: {}", go_io_error(&e)),
                )),
                Ok(meta) if !meta.is_file() => errors.push(FieldError::invalid(
                    &file_path,
                    file,
                    "must be a regular file",
                )),
                Ok(_) => return Some(Connection::KubeConfigFile(PathBuf::from(file))),
            },
        },
        other => errors.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &["InClusterConfig", "KubeConfigFile"],
        )),
    }
    None
}

/// Go's wording of the usual file errors.
fn go_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

fn compile_conditions(
    path: &FieldPath,
    conditions: &[RawCondition],
    errors: &mut Vec<FieldError>,
) -> Vec<Expression> {
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errors.push(FieldError::too_many(
            &path.child("matchConditions"),
            Some(conditions.len()),
            Some(MAX_MATCH_CONDITIONS),
        ));
        return Vec::new();
    }
    let mut seen = BTreeSet::new();
    let mut compiled = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = path.child("matchConditions").index(i).child("expression");
        if c.expression.trim().is_empty() {
            errors.push(FieldError::required(&at, ""));
            continue;
        }
        if !seen.insert(c.expression.as_str()) {
            errors.push(FieldError::duplicate(&at, c.expression.as_str()));
            continue;
        }
        match Expression::compile(&c.expression, &["request"]) {
            Ok(e) => compiled.push(e),
            Err(e) => errors.push(FieldError::invalid(
                &at,
                c.expression.as_str(),
                e.to_string(),
            )),
        }
    }
    compiled
}

#[cfg(test)]
#[path = "authorization_tests.rs"]
mod tests;
