//! Matching one RBAC `PolicyRule` (upstream's `RuleAllows` in
//! `plugin/pkg/auth/authorizer/rbac` and the evaluation helpers of
//! `pkg/apis/rbac/v1`; the rule kept as stored JSON, so nothing is
//! decoded per request) against request attributes, with upstream's
//! semantics: `*` wildcards for verbs, groups and resources, `*/sub` for a
//! subresource of any resource, resourceNames narrowing, and
//! nonResourceURLs with a trailing `*` matching a prefix.

use apiserver::authorization::authorizer::{Attributes, NonResourceRule, ResourceRule};
use serde_json::Value;

const ALL: &str = "*";

/// The strings of a rule's list field (absent or malformed: none).
fn strs<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> + 'a {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn has_or_all(rule: &Value, field: &str, wanted: &str) -> bool {
    strs(rule, field).any(|s| s == ALL || s == wanted)
}

fn verb_matches(rule: &Value, verb: &str) -> bool {
    has_or_all(rule, "verbs", verb)
}

fn api_group_matches(rule: &Value, group: &str) -> bool {
    has_or_all(rule, "apiGroups", group)
}

/// `resource`, `resource/subresource`, `*`, or `*/subresource`.
fn resource_matches(rule: &Value, resource: &str, subresource: &str) -> bool {
    strs(rule, "resources").any(|r| {
        if r == ALL {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        match r.split_once('/') {
            Some((res, sub)) => sub == subresource && (res == resource || res == ALL),
            None => false,
        }
    })
}

/// An empty resourceNames list allows every name.
fn resource_name_matches(rule: &Value, name: &str) -> bool {
    let mut names = strs(rule, "resourceNames").peekable();
    names.peek().is_none() || names.any(|n| n == name)
}

fn non_resource_url_matches(rule: &Value, path: &str) -> bool {
    strs(rule, "nonResourceURLs").any(|url| {
        url == ALL
            || url == path
            || url
                .strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

/// Whether a rule allows the request (upstream's `RuleAllows`).
pub fn rule_allows(attrs: &Attributes<'_>, rule: &Value) -> bool {
    if attrs.is_resource_request {
        verb_matches(rule, attrs.verb)
            && api_group_matches(rule, attrs.api_group)
            && resource_matches(rule, attrs.resource, attrs.subresource)
            && resource_name_matches(rule, attrs.name)
    } else {
        verb_matches(rule, attrs.verb) && non_resource_url_matches(rule, attrs.path)
    }
}

fn owned(rule: &Value, field: &str) -> Vec<String> {
    strs(rule, field).map(str::to_owned).collect()
}

/// Splits a rule into its rules-review forms: a resource rule when it names
/// resources, a non-resource rule when it names URLs.
pub fn review_rules(rule: &Value) -> (Option<ResourceRule>, Option<NonResourceRule>) {
    let resources = owned(rule, "resources");
    let urls = owned(rule, "nonResourceURLs");
    let resource = (!resources.is_empty()).then(|| ResourceRule {
        verbs: owned(rule, "verbs"),
        api_groups: owned(rule, "apiGroups"),
        resources,
        resource_names: owned(rule, "resourceNames"),
    });
    let non_resource = (!urls.is_empty()).then(|| NonResourceRule {
        verbs: owned(rule, "verbs"),
        non_resource_urls: urls,
    });
    (resource, non_resource)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use apiserver::authentication::user::UserInfo;

    fn user() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            groups: Vec::new(),
            ..UserInfo::default()
        }
    }

    fn resource<'a>(
        user: &'a UserInfo,
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            is_resource_request: true,
            namespace: "default",
            api_group: group,
            resource,
            subresource,
            name,
            path: "",
            api_version: "",
            field_selector: "",
            label_selector: "",
        }
    }

    fn path<'a>(user: &'a UserInfo, verb: &'a str, path: &'a str) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            is_resource_request: false,
            namespace: "",
            api_group: "",
            resource: "",
            subresource: "",
            name: "",
            path,
            api_version: "",
            field_selector: "",
            label_selector: "",
        }
    }

    #[test]
    fn verbs_groups_and_resources() {
        let u = user();
        let rule = json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]});
        assert!(rule_allows(&resource(&u, "get", "", "pods", "", ""), &rule));
        assert!(rule_allows(
            &resource(&u, "list", "", "pods", "", ""),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "delete", "", "pods", "", ""),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "apps", "pods", "", ""),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "", "secrets", "", ""),
            &rule
        ));
        // A rule for the resource does not cover its subresources.
        assert!(!rule_allows(
            &resource(&u, "get", "", "pods", "log", ""),
            &rule
        ));
        // Resource rules never match non-resource requests.
        assert!(!rule_allows(&path(&u, "get", "/pods"), &rule));
    }

    #[test]
    fn wildcards() {
        let u = user();
        let all = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
        assert!(rule_allows(
            &resource(&u, "delete", "apps", "deployments", "scale", "x"),
            &all
        ));
        let any_group = json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["deployments"]});
        assert!(rule_allows(
            &resource(&u, "get", "apps", "deployments", "", ""),
            &any_group
        ));
        assert!(rule_allows(
            &resource(&u, "get", "extensions", "deployments", "", ""),
            &any_group
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "apps", "replicasets", "", ""),
            &any_group
        ));
        let any_status = json!({"verbs": ["update"], "apiGroups": [""], "resources": ["*/status"]});
        assert!(rule_allows(
            &resource(&u, "update", "", "pods", "status", ""),
            &any_status
        ));
        assert!(rule_allows(
            &resource(&u, "update", "", "nodes", "status", ""),
            &any_status
        ));
        assert!(!rule_allows(
            &resource(&u, "update", "", "pods", "", ""),
            &any_status
        ));
        assert!(!rule_allows(
            &resource(&u, "update", "", "pods", "scale", ""),
            &any_status
        ));
    }

    #[test]
    fn subresources_and_resource_names() {
        let u = user();
        let rule = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"],
            "resourceNames": ["web"]});
        assert!(rule_allows(
            &resource(&u, "get", "", "pods", "log", "web"),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "", "pods", "log", "db"),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "", "pods", "log", ""),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "", "pods", "", "web"),
            &rule
        ));
        assert!(!rule_allows(
            &resource(&u, "get", "", "pods", "exec", "web"),
            &rule
        ));
    }

    #[test]
    fn non_resource_urls() {
        let u = user();
        let rule = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]});
        assert!(rule_allows(&path(&u, "get", "/healthz"), &rule));
        assert!(!rule_allows(&path(&u, "get", "/healthz/etcd"), &rule));
        assert!(rule_allows(&path(&u, "get", "/apis/apps"), &rule));
        assert!(rule_allows(&path(&u, "get", "/apis/"), &rule));
        assert!(!rule_allows(&path(&u, "get", "/apis"), &rule));
        assert!(!rule_allows(&path(&u, "post", "/healthz"), &rule));
        let all = json!({"verbs": ["*"], "nonResourceURLs": ["*"]});
        assert!(rule_allows(&path(&u, "delete", "/anything"), &all));
        // URL rules never match resource requests.
        assert!(!rule_allows(&resource(&u, "get", "", "pods", "", ""), &all));
    }

    #[test]
    fn malformed_rules_allow_nothing() {
        let u = user();
        for rule in [json!({}), json!({"verbs": "get"}), json!(null)] {
            assert!(!rule_allows(
                &resource(&u, "get", "", "pods", "", ""),
                &rule
            ));
            assert!(!rule_allows(&path(&u, "get", "/healthz"), &rule));
        }
    }

    #[test]
    fn review_forms() {
        let rule = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        let (res, non) = review_rules(&rule);
        assert_eq!(res.map(|r| r.resources), Some(vec!["pods".to_owned()]));
        assert!(non.is_none());
        let rule = json!({"verbs": ["get"], "nonResourceURLs": ["/version"]});
        let (res, non) = review_rules(&rule);
        assert!(res.is_none());
        assert_eq!(
            non.map(|r| r.non_resource_urls),
            Some(vec!["/version".to_owned()])
        );
    }
}
