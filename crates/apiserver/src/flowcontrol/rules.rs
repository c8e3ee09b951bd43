//! Which FlowSchema a request belongs to (upstream's `rule.go`): a schema
//! matches when one of its rules names the request's user (as user, group
//! or service account) and the request's verb and resource, or its verb and
//! non-resource path.

use apimachinery::request_info::RequestInfo;
use k8s_openapi::api::flowcontrol::v1::{
    NonResourcePolicyRule, PolicyRulesWithSubjects, ResourcePolicyRule, Subject,
};

use crate::authentication::user::UserInfo;

/// Upstream's wildcard for verbs, groups, resources, namespaces and names.
const ALL: &str = "*";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Does any of `rules` cover this request?
pub fn matches_rules(
    rules: &[PolicyRulesWithSubjects],
    user: &UserInfo,
    info: &RequestInfo,
) -> bool {
    rules.iter().any(|rule| matches_rule(rule, user, info))
}

fn matches_rule(rule: &PolicyRulesWithSubjects, user: &UserInfo, info: &RequestInfo) -> bool {
    if !rule.subjects.iter().any(|s| matches_subject(s, user)) {
        return false;
    }
    if info.is_resource_request {
        let rules = rule.resource_rules.as_deref().unwrap_or_default();
        rules.iter().any(|r| matches_resource(r, info))
    } else {
        let rules = rule.non_resource_rules.as_deref().unwrap_or_default();
        rules.iter().any(|r| matches_non_resource(r, info))
    }
}

fn matches_subject(subject: &Subject, user: &UserInfo) -> bool {
    match subject.kind.as_str() {
        "User" => subject
            .user
            .as_ref()
            .is_some_and(|u| u.name == ALL || u.name == user.name),
        "Group" => subject
            .group
            .as_ref()
            .is_some_and(|g| g.name == ALL || user.groups.contains(&g.name)),
        "ServiceAccount" => subject.service_account.as_ref().is_some_and(|sa| {
            let Some(rest) = user.name.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
                return false;
            };
            let Some(name) = rest
                .strip_prefix(sa.namespace.as_str())
                .and_then(|r| r.strip_prefix(':'))
            else {
                return false;
            };
            sa.name == ALL || sa.name == name
        }),
        _ => false,
    }
}

fn matches_resource(rule: &ResourcePolicyRule, info: &RequestInfo) -> bool {
    let resource = if info.subresource.is_empty() {
        std::borrow::Cow::Borrowed(info.resource.as_str())
    } else {
        std::borrow::Cow::Owned(format!("{}/{}", info.resource, info.subresource))
    };
    if !contains(&rule.verbs, &info.verb)
        || !contains(&rule.resources, &resource)
        || !contains(&rule.api_groups, &info.api_group)
    {
        return false;
    }
    if info.namespace.is_empty() {
        return rule.cluster_scope.unwrap_or(false);
    }
    contains(
        rule.namespaces.as_deref().unwrap_or_default(),
        &info.namespace,
    )
}

fn matches_non_resource(rule: &NonResourcePolicyRule, info: &RequestInfo) -> bool {
    contains(&rule.verbs, &info.verb)
        && rule.non_resource_urls.iter().any(|url| {
            if url == ALL || *url == info.path {
                return true;
            }
            // "/apis/*" and "/healthz" both cover everything below them.
            let prefix = url.strip_suffix('*').unwrap_or(url);
            if prefix.ends_with('/') {
                info.path.starts_with(prefix)
            } else {
                info.path.starts_with(prefix) && info.path[prefix.len()..].starts_with('/')
            }
        })
}

/// `list` contains `x`, or is exactly the wildcard.
fn contains(list: &[String], x: &str) -> bool {
    matches!(list, [only] if only == ALL) || list.iter().any(|y| y == x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::flowcontrol::v1::{GroupSubject, ServiceAccountSubject, UserSubject};

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, ns: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            ..Default::default()
        }
    }

    fn path(verb: &str, path: &str) -> RequestInfo {
        RequestInfo {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn rule(subjects: Vec<Subject>) -> PolicyRulesWithSubjects {
        PolicyRulesWithSubjects {
            subjects,
            resource_rules: Some(vec![ResourcePolicyRule {
                verbs: strings(&["get", "update"]),
                api_groups: strings(&["", "apps"]),
                resources: strings(&["nodes", "nodes/status", "deployments"]),
                namespaces: Some(strings(&["kube-system"])),
                cluster_scope: Some(true),
            }]),
            non_resource_rules: Some(vec![NonResourcePolicyRule {
                verbs: strings(&["get"]),
                non_resource_urls: strings(&["/healthz", "/apis/*"]),
            }]),
        }
    }

    fn group(name: &str) -> Subject {
        Subject {
            kind: "Group".into(),
            group: Some(GroupSubject { name: name.into() }),
            ..Default::default()
        }
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let by_user = Subject {
            kind: "User".into(),
            user: Some(UserSubject {
                name: "alice".into(),
            }),
            ..Default::default()
        };
        let sa = |ns: &str, name: &str| Subject {
            kind: "ServiceAccount".into(),
            service_account: Some(ServiceAccountSubject {
                namespace: ns.into(),
                name: name.into(),
            }),
            ..Default::default()
        };
        let alice = user("alice", &["devs"]);
        let builder = user("system:serviceaccount:kube-system:builder", &[]);
        assert!(matches_subject(&by_user, &alice));
        assert!(!matches_subject(&by_user, &builder));
        assert!(matches_subject(&group("devs"), &alice));
        assert!(matches_subject(&group("*"), &builder));
        assert!(!matches_subject(&group("ops"), &alice));
        assert!(matches_subject(&sa("kube-system", "*"), &builder));
        assert!(matches_subject(&sa("kube-system", "builder"), &builder));
        assert!(!matches_subject(&sa("kube-system", "other"), &builder));
        // A namespace that is only a prefix of the user's does not match.
        assert!(!matches_subject(&sa("kube", "*"), &builder));
        assert!(!matches_subject(&sa("kube-system", "*"), &alice));
    }

    #[test]
    fn resource_rules_check_verb_group_resource_and_scope() {
        let rules = [rule(vec![group("devs")])];
        let alice = user("alice", &["devs"]);
        let ok = |info: RequestInfo| matches_rules(&rules, &alice, &info);
        assert!(ok(resource("get", "", "nodes", "", "")));
        assert!(ok(resource("update", "", "nodes", "status", "")));
        assert!(ok(resource(
            "get",
            "apps",
            "deployments",
            "",
            "kube-system"
        )));
        assert!(!ok(resource("get", "apps", "deployments", "", "default")));
        assert!(!ok(resource("delete", "", "nodes", "", "")));
        assert!(!ok(resource("get", "", "nodes", "proxy", "")));
        assert!(!ok(resource("get", "batch", "nodes", "", "")));
        assert!(!matches_rules(
            &rules,
            &user("bob", &[]),
            &resource("get", "", "nodes", "", "")
        ));
    }

    #[test]
    fn non_resource_rules_cover_paths_below_them() {
        let rules = [rule(vec![group("devs")])];
        let alice = user("alice", &["devs"]);
        let ok = |info: RequestInfo| matches_rules(&rules, &alice, &info);
        assert!(ok(path("get", "/healthz")));
        assert!(ok(path("get", "/healthz/etcd")));
        assert!(!ok(path("get", "/healthzz")));
        assert!(ok(path("get", "/apis/apps")));
        assert!(!ok(path("get", "/api")));
        assert!(!ok(path("post", "/healthz")));
    }
}
