//! The audit policy (`--audit-policy-file`, audit.k8s.io/v1 `Policy`):
//! loading, upstream's validation, and evaluation of the rules in order
//! against a request's attributes (upstream's `pkg/audit/policy`).

use std::path::Path;

use apimachinery::field_errors::{aggregate_message, ErrorList, FieldError, Path as FieldPath};
use apimachinery::validation::name_is_dns_subdomain;
use serde::Deserialize;

use super::event::{Level, Stage};
use crate::authorization::authorizer::Attributes;

/// Why a policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("failed to read file path {path:?}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("failed decoding: {0}: from file {1}")]
    Decode(String, String),
    #[error("unknown group version field {0} in policy: from file {1}")]
    GroupVersion(String, String),
    #[error("{0}: from file {1}")]
    Invalid(String, String),
    #[error("loaded illegal policy with 0 rules: from file {0}")]
    NoRules(String),
}

/// One `resources` entry of a rule.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule; empty lists match everything.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// Parsed from text so a bad value is a validation error, not a decode error.
    #[serde(default)]
    pub level: String,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<String>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyDoc {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<PolicyRule>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// A set of stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageSet(u8);

impl StageSet {
    fn bit(stage: Stage) -> u8 {
        1 << (stage as u8)
    }

    pub fn contains(self, stage: Stage) -> bool {
        self.0 & Self::bit(stage) != 0
    }

    fn from_names(names: &[String]) -> Self {
        StageSet(
            names
                .iter()
                .filter_map(|s| s.parse().ok())
                .fold(0, |acc, st| acc | Self::bit(st)),
        )
    }
}

/// What the policy decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestAuditConfig {
    pub level: Level,
    /// Stages no event is written at.
    pub omit_stages: StageSet,
    pub omit_managed_fields: bool,
}

impl RequestAuditConfig {
    pub fn omits(&self, stage: Stage) -> bool {
        self.omit_stages.contains(stage)
    }
}

#[derive(Debug, Clone)]
struct CompiledRule {
    rule: PolicyRule,
    config: RequestAuditConfig,
}

/// A loaded and validated policy.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<CompiledRule>,
    default: RequestAuditConfig,
}

fn parse_level(s: &str) -> Option<Level> {
    [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ]
    .into_iter()
    .find(|l| l.as_str() == s)
}

impl Policy {
    /// Reads and validates `--audit-policy-file`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let file = path.display().to_string();
        let text = std::fs::read(path).map_err(|source| PolicyError::Read {
            path: file.clone(),
            source,
        })?;
        Policy::from_bytes(&text, &file)
    }

    /// Parses a policy document; `file` names it in errors.
    pub fn from_bytes(text: &[u8], file: &str) -> Result<Policy, PolicyError> {
        let doc: PolicyDoc = serde_yaml::from_slice(text)
            .map_err(|e| PolicyError::Decode(e.to_string(), file.to_owned()))?;
        if doc.api_version != "audit.k8s.io/v1" || doc.kind != "Policy" {
            let (group, version) = doc
                .api_version
                .rsplit_once('/')
                .unwrap_or(("", &doc.api_version));
            let gvk = format!("{group}/{version}, Kind={}", doc.kind);
            return Err(PolicyError::GroupVersion(gvk, file.to_owned()));
        }
        let errors = validate(&doc);
        if let Some(msg) = aggregate_message(&errors) {
            return Err(PolicyError::Invalid(msg, file.to_owned()));
        }
        if doc.rules.is_empty() {
            return Err(PolicyError::NoRules(file.to_owned()));
        }
        let global_omit = StageSet::from_names(&doc.omit_stages);
        let rules = doc
            .rules
            .into_iter()
            .map(|rule| {
                let omit_stages =
                    StageSet(global_omit.0 | StageSet::from_names(&rule.omit_stages).0);
                CompiledRule {
                    config: RequestAuditConfig {
                        level: parse_level(&rule.level).unwrap_or(Level::None),
                        omit_stages,
                        omit_managed_fields: rule
                            .omit_managed_fields
                            .unwrap_or(doc.omit_managed_fields),
                    },
                    rule,
                }
            })
            .collect();
        Ok(Policy {
            rules,
            default: RequestAuditConfig {
                level: Level::None,
                omit_stages: global_omit,
                omit_managed_fields: doc.omit_managed_fields,
            },
        })
    }

    /// The first matching rule's level and stages; level None when none matches.
    pub fn evaluate(&self, attrs: &Attributes<'_>) -> RequestAuditConfig {
        self.rules
            .iter()
            .find(|r| rule_matches(&r.rule, attrs))
            .map_or(self.default, |r| r.config)
    }
}

fn rule_matches(r: &PolicyRule, attrs: &Attributes<'_>) -> bool {
    if !r.users.is_empty() && !r.users.contains(&attrs.user.name) {
        return false;
    }
    if !r.user_groups.is_empty() && !attrs.user.groups.iter().any(|g| r.user_groups.contains(g)) {
        return false;
    }
    if !r.verbs.is_empty() && !r.verbs.iter().any(|v| v == attrs.verb) {
        return false;
    }
    if !r.namespaces.is_empty() || !r.resources.is_empty() {
        return resource_matches(r, attrs);
    }
    if !r.non_resource_urls.is_empty() {
        return !attrs.is_resource_request
            && r.non_resource_urls
                .iter()
                .any(|spec| path_matches(attrs.path, spec));
    }
    true
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

fn resource_matches(r: &PolicyRule, attrs: &Attributes<'_>) -> bool {
    if !attrs.is_resource_request {
        return false;
    }
    // Cluster-scoped resources match the empty namespace.
    if !r.namespaces.is_empty() && !r.namespaces.iter().any(|n| n == attrs.namespace) {
        return false;
    }
    if r.resources.is_empty() {
        return true;
    }
    let (resource, sub) = (attrs.resource, attrs.subresource);
    r.resources
        .iter()
        .filter(|gr| gr.group == attrs.api_group || gr.group == "*")
        .any(|gr| {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !gr.resource_names.iter().any(|n| n == attrs.name) {
                return false;
            }
            gr.resources.iter().any(|res| {
                let combined = if sub.is_empty() {
                    res == resource
                } else {
                    res.split_once('/') == Some((resource, sub))
                };
                combined
                    || res == "*"
                    || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                    || res.strip_suffix("/*") == Some(resource)
            })
        })
}

const LEVELS: [&str; 4] = ["None", "Metadata", "Request", "RequestResponse"];

fn validate_omit_stages(stages: &[String], path: &FieldPath, errors: &mut ErrorList) {
    for (i, s) in stages.iter().enumerate() {
        if s.parse::<Stage>().is_err() {
            let allowed = Stage::ALL.map(Stage::as_str).join(",");
            errors.push(FieldError::invalid(
                &path.index(i),
                s.as_str(),
                format!("allowed stages are {allowed}"),
            ));
        }
    }
}

fn validate(doc: &PolicyDoc) -> ErrorList {
    let mut errors = ErrorList::new();
    validate_omit_stages(&doc.omit_stages, &FieldPath::new("omitStages"), &mut errors);
    for (i, rule) in doc.rules.iter().enumerate() {
        let path = FieldPath::new("rules").index(i);
        match rule.level.as_str() {
            "" => errors.push(FieldError::required(&path.child("level"), "")),
            l if parse_level(l).is_none() => {
                errors.push(FieldError::not_supported(&path.child("level"), l, &LEVELS))
            }
            _ => {}
        }
        let urls = path.child("nonResourceURLs");
        for (j, url) in rule.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                errors.push(FieldError::invalid(
                    &urls.index(j),
                    url.as_str(),
                    "non-resource URL rules must begin with a '/' character",
                ));
            }
            if url.len() > 1 && url[..url.len() - 1].contains('*') {
                errors.push(FieldError::invalid(
                    &urls.index(j),
                    url.as_str(),
                    "non-resource URL wildcards '*' must be the final character of the rule",
                ));
            }
        }
        validate_resources(&rule.resources, &path.child("resources"), &mut errors);
        validate_omit_stages(&rule.omit_stages, &path.child("omitStages"), &mut errors);
        if !rule.non_resource_urls.is_empty()
            && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
        {
            errors.push(FieldError::invalid(
                &urls,
                rule.non_resource_urls.clone(),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
    }
    errors
}

fn validate_resources(list: &[GroupResources], path: &FieldPath, errors: &mut ErrorList) {
    for gr in list {
        if !gr.group.is_empty() && gr.group != "*" {
            let msgs = name_is_dns_subdomain(&gr.group, false);
            if !msgs.is_empty() {
                errors.push(FieldError::invalid(
                    &path.child("group"),
                    gr.group.as_str(),
                    msgs.join(","),
                ));
            }
        }
        if !gr.resource_names.is_empty() && gr.resources.is_empty() {
            errors.push(FieldError::invalid(
                &path.child("resourceNames"),
                gr.resource_names.clone(),
                "using resourceNames requires at least one resource",
            ));
        }
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
