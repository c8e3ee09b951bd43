//! `--runtime-config`: which of the group versions this binary serves are
//! installed. Upstream's `APIEnablementOptions.Validate` and
//! `MergeAPIResourceConfigs`: `api/all`, `api/ga`, `api/beta` and
//! `api/alpha` switch whole classes of versions (in that order), then
//! `group/version` keys switch one version, then `group/version/resource`
//! keys one resource. The core group is the empty group (key `/v1`, after
//! the options' normalisation).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Whether a class selector covers a version.
type VersionMatcher = fn(&str) -> bool;

/// The class selectors, applied in this order before any explicit key.
const MATCHERS: [(&str, VersionMatcher); 4] = [
    ("api/all", |_| true),
    ("api/ga", |v| version_class(v) == Some("")),
    ("api/beta", |v| version_class(v) == Some("beta")),
    ("api/alpha", |v| version_class(v) == Some("alpha")),
];

/// A `--runtime-config` that cannot be applied; messages are upstream's.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeConfigError {
    #[error("invalid runtime-config with only api/all=false")]
    OnlyAllFalse,
    #[error("runtime-config invalid key {0}")]
    InvalidKey(String),
    #[error("unknown api groups {0}")]
    UnknownGroups(String),
    #[error("invalid value {0}={1}")]
    InvalidSelectorValue(String, String),
    #[error("group version {0} that has not been registered")]
    UnregisteredVersion(String),
    #[error("invalid value of {0}: {1}, err: strconv.ParseBool: parsing {1:?}: invalid syntax")]
    InvalidValue(String, String),
    #[error(
        "invalid key {0}: group/version/resource and resource is always lowercase plural, not {1:?}"
    )]
    ResourceCase(String, String),
}

/// What `--runtime-config` leaves enabled.
#[derive(Debug)]
pub struct ApiEnablement {
    versions: HashMap<(String, String), bool>,
    /// Explicit `group/version/resource` settings; they win over the version.
    resources: HashMap<(String, String, String), bool>,
}

impl ApiEnablement {
    /// Applies `overrides` (the completed `runtime_config`) to `registry`,
    /// the (group, version) pairs this binary serves, all enabled by default.
    pub fn resolve<'a>(
        overrides: &BTreeMap<String, String>,
        registry: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, RuntimeConfigError> {
        let mut versions: HashMap<(String, String), bool> = registry
            .into_iter()
            .map(|(g, v)| ((g.to_owned(), v.to_owned()), true))
            .collect();
        let keys = validate(overrides, &versions)?;
        for (selector, matches) in MATCHERS {
            let Some(value) = overrides.get(selector) else {
                continue;
            };
            let enable = match value.as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(RuntimeConfigError::InvalidSelectorValue(
                        selector.to_owned(),
                        value.clone(),
                    ))
                }
            };
            for ((_, version), enabled) in versions.iter_mut() {
                if matches(version) {
                    *enabled = enable;
                }
            }
        }
        let mut resources = HashMap::new();
        for key in keys {
            let gv = (key.group.to_owned(), key.version.to_owned());
            if !versions.contains_key(&gv) {
                return Err(RuntimeConfigError::UnregisteredVersion(gv_string(
                    key.group,
                    key.version,
                )));
            }
            let value = overrides.get(key.raw).map_or("", String::as_str);
            let enabled = parse_bool(value).ok_or_else(|| {
                RuntimeConfigError::InvalidValue(key.raw.to_owned(), value.to_owned())
            })?;
            match key.resource {
                None => {
                    versions.insert(gv, enabled);
                }
                Some(resource) if resource.to_lowercase() != resource => {
                    return Err(RuntimeConfigError::ResourceCase(
                        key.raw.to_owned(),
                        resource.to_owned(),
                    ))
                }
                Some(resource) => {
                    resources.insert((gv.0, gv.1, resource.to_owned()), enabled);
                }
            }
        }
        Ok(ApiEnablement {
            versions,
            resources,
        })
    }

    /// Whether one resource of a group version is served.
    pub fn resource_enabled(&self, group: &str, version: &str, resource: &str) -> bool {
        // A subresource goes with its resource.
        let base = resource.split_once('/').map_or(resource, |(r, _)| r);
        let (group, version) = (group.to_owned(), version.to_owned());
        let explicit = self
            .resources
            .get(&(group.clone(), version.clone(), base.to_owned()));
        explicit
            .or_else(|| self.versions.get(&(group, version)))
            .copied()
            .unwrap_or(false)
    }
}

/// One `group/version[/resource]` key, borrowed from the flag.
struct Key<'a> {
    raw: &'a str,
    group: &'a str,
    version: &'a str,
    resource: Option<&'a str>,
}

/// Upstream's `Validate`: the lone `api/all=false`, malformed keys and
/// groups this binary does not know are refused before anything applies.
fn validate<'a>(
    overrides: &'a BTreeMap<String, String>,
    registry: &HashMap<(String, String), bool>,
) -> Result<Vec<Key<'a>>, RuntimeConfigError> {
    if overrides.len() == 1 && overrides.get("api/all").is_some_and(|v| v == "false") {
        return Err(RuntimeConfigError::OnlyAllFalse);
    }
    let groups: HashSet<&str> = registry.keys().map(|(g, _)| g.as_str()).collect();
    let mut keys = Vec::new();
    let mut unknown = BTreeSet::new();
    for raw in overrides.keys() {
        if MATCHERS.iter().any(|(selector, _)| selector == raw) {
            continue;
        }
        let tokens: Vec<&str> = raw.split('/').collect();
        let (group, version, resource) = match tokens.as_slice() {
            [g, v] => (*g, *v, None),
            [g, v, r] => (*g, *v, Some(*r)),
            _ => return Err(RuntimeConfigError::InvalidKey(raw.clone())),
        };
        if !groups.contains(group) {
            unknown.insert(gv_string(group, version));
        }
        keys.push(Key {
            raw,
            group,
            version,
            resource,
        });
    }
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.into_iter().collect();
        return Err(RuntimeConfigError::UnknownGroups(list.join(",")));
    }
    Ok(keys)
}

/// Go's `GroupVersion.String()`: the core group prints as the bare version.
fn gv_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// `Some("")` for `vN`, `Some("beta")` for `vNbetaM`, `Some("alpha")` for
/// `vNalphaM`, `None` for anything else.
fn version_class(version: &str) -> Option<&'static str> {
    let rest = version.strip_prefix('v')?;
    let major_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if major_len == 0 {
        return None;
    }
    let rest = &rest[major_len..];
    if rest.is_empty() {
        return Some("");
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if rest.strip_prefix("beta").is_some_and(digits) {
        Some("beta")
    } else if rest.strip_prefix("alpha").is_some_and(digits) {
        Some("alpha")
    } else {
        None
    }
}

/// Go's `strconv.ParseBool`, with upstream's empty value meaning true.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "" | "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTRY: &[(&str, &str)] = &[
        ("", "v1"),
        ("apps", "v1"),
        ("batch", "v1"),
        ("resource.k8s.io", "v1"),
        ("resource.k8s.io", "v1beta2"),
        ("storage.k8s.io", "v1alpha1"),
    ];

    fn resolve(flags: &[(&str, &str)]) -> Result<ApiEnablement, RuntimeConfigError> {
        let overrides = flags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ApiEnablement::resolve(&overrides, REGISTRY.iter().copied())
    }

    fn enabled(e: &ApiEnablement) -> Vec<String> {
        REGISTRY
            .iter()
            .filter(|(g, v)| e.resource_enabled(g, v, "things"))
            .map(|(g, v)| gv_string(g, v))
            .collect()
    }

    #[test]
    fn nothing_set_serves_everything() {
        let e = resolve(&[]).expect("valid");
        assert_eq!(enabled(&e).len(), REGISTRY.len());
    }

    #[test]
    fn a_group_version_can_be_switched_off() {
        let e = resolve(&[("batch/v1", "false")]).expect("valid");
        assert!(!e.resource_enabled("batch", "v1", "jobs"));
        assert!(!e.resource_enabled("batch", "v1", "jobs/status"));
        assert!(e.resource_enabled("apps", "v1", "deployments"));
        assert!(e.resource_enabled("", "v1", "pods"));
    }

    #[test]
    fn api_all_false_keeps_only_what_is_named() {
        let e = resolve(&[("api/all", "false"), ("apps/v1", "true"), ("/v1", "")]).expect("valid");
        assert_eq!(enabled(&e), ["v1", "apps/v1"]);
    }

    #[test]
    fn class_selectors_follow_the_version_name() {
        let e = resolve(&[("api/ga", "false"), ("api/alpha", "false")]).expect("valid");
        assert_eq!(enabled(&e), ["resource.k8s.io/v1beta2"]);
        let e = resolve(&[("api/all", "false"), ("api/beta", "true")]).expect("valid");
        assert_eq!(enabled(&e), ["resource.k8s.io/v1beta2"]);
    }

    #[test]
    fn a_resource_key_wins_over_its_version() {
        let e = resolve(&[("apps/v1", "false"), ("apps/v1/deployments", "true")]).expect("valid");
        assert!(e.resource_enabled("apps", "v1", "deployments"));
        assert!(e.resource_enabled("apps", "v1", "deployments/scale"));
        assert!(!e.resource_enabled("apps", "v1", "daemonsets"));
        let e = resolve(&[("batch/v1/jobs", "0")]).expect("valid");
        assert!(!e.resource_enabled("batch", "v1", "jobs"));
        assert!(e.resource_enabled("batch", "v1", "cronjobs"));
    }

    #[test]
    fn refusals_carry_upstreams_messages() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("api/all", "false")], "invalid runtime-config with only api/all=false"),
            (&[("apps", "true")], "runtime-config invalid key apps"),
            (&[("a/b/c/d", "true")], "runtime-config invalid key a/b/c/d"),
            (
                &[("foo.io/v1", "true"), ("bar.io/v2", "false"), ("apps/v1", "true")],
                "unknown api groups bar.io/v2,foo.io/v1",
            ),
            (&[("apps/v2", "true")], "group version apps/v2 that has not been registered"),
            (&[("api/ga", "yes")], "invalid value api/ga=yes"),
            (
                &[("apps/v1", "yes")],
                "invalid value of apps/v1: yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
            ),
            (
                &[("apps/v1/Deployments", "false")],
                "invalid key apps/v1/Deployments: group/version/resource and resource is always lowercase plural, not \"Deployments\"",
            ),
        ];
        for (flags, message) in cases {
            let err = resolve(flags).expect_err(message);
            assert_eq!(err.to_string(), *message);
        }
    }

    #[test]
    fn version_classes() {
        assert_eq!(version_class("v1"), Some(""));
        assert_eq!(version_class("v12"), Some(""));
        assert_eq!(version_class("v1beta2"), Some("beta"));
        assert_eq!(version_class("v2alpha1"), Some("alpha"));
        assert_eq!(version_class("v1beta"), None);
        assert_eq!(version_class("va1"), None);
        assert_eq!(version_class("1"), None);
    }
}
