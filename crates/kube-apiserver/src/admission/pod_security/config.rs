//! The PodSecurity plugin's configuration (upstream's
//! PodSecurityConfiguration, `pod-security.admission.config.k8s.io`
//! v1/v1beta1/v1alpha1): default levels and versions for namespaces without
//! labels, and the usernames, runtime classes and namespaces exempt from
//! evaluation.

use std::collections::BTreeSet;

use apimachinery::field_errors::{aggregate_message, FieldError, Path};
use apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use pod_security::{Level, LevelVersion, Policy, Version};
use serde::Deserialize;
use serde_json::Value;

const API_VERSIONS: &[&str] = &[
    "pod-security.admission.config.k8s.io/v1",
    "pod-security.admission.config.k8s.io/v1beta1",
    "pod-security.admission.config.k8s.io/v1alpha1",
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PodSecurityConfigError {
    #[error("unexpected kind {kind:?} or apiVersion {api_version:?}; expected PodSecurityConfiguration in pod-security.admission.config.k8s.io/v1")]
    Kind { kind: String, api_version: String },
    #[error("unable to decode PodSecurityConfiguration: {0}")]
    Decode(String),
    #[error("PodSecurity invalid: {0}")]
    Invalid(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    defaults: Defaults,
    #[serde(default)]
    exemptions: Exemptions,
}

#[derive(Debug, Default, Deserialize)]
struct Defaults {
    #[serde(default)]
    enforce: String,
    #[serde(default, rename = "enforce-version")]
    enforce_version: String,
    #[serde(default)]
    audit: String,
    #[serde(default, rename = "audit-version")]
    audit_version: String,
    #[serde(default)]
    warn: String,
    #[serde(default, rename = "warn-version")]
    warn_version: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exemptions {
    #[serde(default)]
    usernames: Vec<String>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    runtime_classes: Vec<String>,
}

/// The plugin's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The policy of a namespace without labels.
    pub defaults: Policy,
    pub exempt_usernames: BTreeSet<String>,
    pub exempt_namespaces: BTreeSet<String>,
    pub exempt_runtime_classes: BTreeSet<String>,
}

impl Config {
    /// The configuration a document gives (all privileged and no
    /// exemptions without one), validated as upstream validates it.
    pub fn from_document(doc: Option<&Value>) -> Result<Self, PodSecurityConfigError> {
        let Some(doc) = doc else {
            return Ok(Config::default());
        };
        let doc = Document::deserialize(doc)
            .map_err(|e| PodSecurityConfigError::Decode(e.to_string()))?;
        if doc.kind != "PodSecurityConfiguration"
            || !API_VERSIONS.contains(&doc.api_version.as_str())
        {
            return Err(PodSecurityConfigError::Kind {
                kind: doc.kind,
                api_version: doc.api_version,
            });
        }
        let mut errors = Vec::new();
        let defaults = defaults(&doc.defaults, &mut errors);
        let e = &doc.exemptions;
        let exempt_namespaces = unique(&e.namespaces, "namespaces", is_dns1123_label, &mut errors);
        let exempt_runtime_classes = unique(
            &e.runtime_classes,
            "runtimeClasses",
            is_dns1123_subdomain,
            &mut errors,
        );
        let exempt_usernames = unique(&e.usernames, "usernames", non_empty, &mut errors);
        if let Some(message) = aggregate_message(&errors) {
            return Err(PodSecurityConfigError::Invalid(message));
        }
        Ok(Config {
            defaults,
            exempt_usernames,
            exempt_namespaces,
            exempt_runtime_classes,
        })
    }
}

/// The default policy; unset fields default to privileged and latest.
fn defaults(d: &Defaults, errors: &mut Vec<FieldError>) -> Policy {
    let mut mode = |level: &str, version: &str, name: &str| {
        let level_path = Path::new("defaults").child(name);
        let version_path = Path::new("defaults").child(&format!("{name}-version"));
        let level = match level {
            "" => Level::Privileged,
            l => l.parse().unwrap_or_else(|e| {
                errors.push(FieldError::invalid(&level_path, l, format!("{e}")));
                Level::Privileged
            }),
        };
        let version = match version {
            "" => Version::Latest,
            v => v.parse().unwrap_or_else(|e| {
                errors.push(FieldError::invalid(&version_path, v, format!("{e}")));
                Version::Latest
            }),
        };
        LevelVersion::new(level, version)
    };
    let enforce = mode(&d.enforce, &d.enforce_version, "enforce");
    let warn = mode(&d.warn, &d.warn_version, "warn");
    let audit = mode(&d.audit, &d.audit_version, "audit");
    Policy {
        enforce,
        audit,
        warn,
    }
}

/// The entries of an exemption list, each valid and listed once.
fn unique(
    items: &[String],
    field: &str,
    check: fn(&str) -> Vec<String>,
    errors: &mut Vec<FieldError>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = Path::new("exemptions").child(field).index(i);
        let problems = check(item);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                &path,
                item.as_str(),
                problems.join(", "),
            ));
        } else if !out.insert(item.clone()) {
            errors.push(FieldError::duplicate(&path, item.as_str()));
        }
    }
    out
}

fn non_empty(s: &str) -> Vec<String> {
    if s.is_empty() {
        vec!["username must not be empty".to_owned()]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(defaults: Value, exemptions: Value) -> Value {
        json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": defaults,
            "exemptions": exemptions,
        })
    }

    #[test]
    fn no_document_means_privileged_everywhere_and_no_exemptions() {
        let config = Config::from_document(None).expect("defaults");
        assert!(config.defaults.fully_privileged());
        assert!(config.exempt_namespaces.is_empty());
    }

    #[test]
    fn defaults_and_exemptions_are_read() {
        let d = doc(
            json!({"enforce": "baseline", "enforce-version": "v1.30", "warn": "restricted"}),
            json!({"usernames": ["admin"], "namespaces": ["kube-system"], "runtimeClasses": ["kata"]}),
        );
        let config = Config::from_document(Some(&d)).expect("valid");
        assert_eq!(config.defaults.enforce.to_string(), "baseline:v1.30");
        assert_eq!(config.defaults.warn.to_string(), "restricted:latest");
        assert_eq!(config.defaults.audit, LevelVersion::PRIVILEGED);
        assert!(config.exempt_usernames.contains("admin"));
        assert!(config.exempt_namespaces.contains("kube-system"));
        assert!(config.exempt_runtime_classes.contains("kata"));
    }

    #[test]
    fn invalid_values_are_refused_with_their_fields() {
        let d = doc(
            json!({"enforce": "strict", "audit-version": "2"}),
            json!({"usernames": ["", "a", "a"], "namespaces": ["Bad_NS"]}),
        );
        let err = Config::from_document(Some(&d)).err().map(|e| e.to_string());
        let err = err.unwrap_or_default();
        for part in [
            "defaults.enforce: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
            "defaults.audit-version: Invalid value: \"2\": must be \"latest\" or \"v1.x\"",
            "exemptions.namespaces[0]: Invalid value: \"Bad_NS\"",
            "exemptions.usernames[0]: Invalid value: \"\": username must not be empty",
            "exemptions.usernames[2]: Duplicate value: \"a\"",
        ] {
            assert!(err.contains(part), "{part} missing from {err}");
        }
        assert!(err.starts_with("PodSecurity invalid: ["), "{err}");
    }

    #[test]
    fn other_kinds_are_refused() {
        let d = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert!(matches!(
            Config::from_document(Some(&d)),
            Err(PodSecurityConfigError::Kind { .. })
        ));
        let d = json!({"apiVersion": "pod-security.admission.config.k8s.io/v1beta1",
            "kind": "PodSecurityConfiguration", "exemptions": {"usernames": "x"}});
        assert!(matches!(
            Config::from_document(Some(&d)),
            Err(PodSecurityConfigError::Decode(_))
        ));
    }
}
