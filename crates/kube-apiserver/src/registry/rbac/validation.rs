//! RBAC escalation prevention (upstream's `pkg/registry/rbac/validation`):
//! whether the rules a user holds cover the rules of a role being written
//! or bound (`Covers`), and upstream's refusal message listing, compacted
//! and sorted, the permissions the user does not hold.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use apiserver::authentication::user::UserInfo;
use apiserver::authorization::authorizer::{NonResourceRule, ResourceRule, Rules};
use serde_json::Value;

const ALL: &str = "*";

/// A decoded `PolicyRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(rule: &Value, field: &str) -> Vec<String> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

impl PolicyRule {
    /// Decodes a stored rule; malformed fields read as empty.
    pub fn from_json(rule: &Value) -> Self {
        PolicyRule {
            verbs: strings(rule, "verbs"),
            api_groups: strings(rule, "apiGroups"),
            resources: strings(rule, "resources"),
            resource_names: strings(rule, "resourceNames"),
            non_resource_urls: strings(rule, "nonResourceURLs"),
        }
    }

    /// Upstream's `CompactString`: the non-empty fields, `%q`-quoted.
    pub fn compact_string(&self) -> String {
        let fields = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        let parts: Vec<String> = fields
            .iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(name, values)| format!("{name}:{}", quoted_list(values)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn quoted_list(values: &[String]) -> String {
    let mut out = String::from("[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{v:?}");
    }
    out.push(']');
    out
}

impl From<&ResourceRule> for PolicyRule {
    fn from(r: &ResourceRule) -> Self {
        PolicyRule {
            verbs: r.verbs.clone(),
            api_groups: r.api_groups.clone(),
            resources: r.resources.clone(),
            resource_names: r.resource_names.clone(),
            non_resource_urls: Vec::new(),
        }
    }
}

impl From<&NonResourceRule> for PolicyRule {
    fn from(r: &NonResourceRule) -> Self {
        PolicyRule {
            verbs: r.verbs.clone(),
            non_resource_urls: r.non_resource_urls.clone(),
            ..PolicyRule::default()
        }
    }
}

/// The rules of a rules review, as policy rules.
pub fn owner_rules(rules: &Rules) -> Vec<PolicyRule> {
    let resource = rules.resource_rules.iter().map(PolicyRule::from);
    let non_resource = rules.non_resource_rules.iter().map(PolicyRule::from);
    resource.chain(non_resource).collect()
}

fn one(s: &str) -> Vec<String> {
    vec![s.to_owned()]
}

/// A rule split into rules of one verb, group, resource and name (or one
/// verb and URL), in upstream's order.
fn break_down(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            let names: Vec<Option<&String>> = if rule.resource_names.is_empty() {
                vec![None]
            } else {
                rule.resource_names.iter().map(Some).collect()
            };
            for name in names {
                for verb in &rule.verbs {
                    out.push(PolicyRule {
                        verbs: one(verb),
                        api_groups: one(group),
                        resources: one(resource),
                        resource_names: name.map(|n| one(n)).unwrap_or_default(),
                        non_resource_urls: Vec::new(),
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn covers_all_or_star(set: &[String], wanted: &[String]) -> bool {
    has(set, ALL) || has_all(set, wanted)
}

/// `*`, exact, or `resource/*` covering a subresource.
fn resources_covered(set: &[String], wanted: &[String]) -> bool {
    if covers_all_or_star(set, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(resource, _)| has(set, &format!("{resource}/*")))
    })
}

fn urls_covered(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|url| {
        set.iter().any(|owned| {
            owned == url
                || owned
                    .strip_suffix('*')
                    .is_some_and(|prefix| url.starts_with(prefix))
        })
    })
}

fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    covers_all_or_star(&owner.verbs, &sub.verbs)
        && covers_all_or_star(&owner.api_groups, &sub.api_groups)
        && resources_covered(&owner.resources, &sub.resources)
        && urls_covered(&owner.non_resource_urls, &sub.non_resource_urls)
        && resource_names_covered(&owner.resource_names, &sub.resource_names)
}

/// An owner without names covers every name; a servant without names needs
/// an owner without names.
fn resource_names_covered(set: &[String], wanted: &[String]) -> bool {
    set.is_empty() || (!wanted.is_empty() && has_all(set, wanted))
}

/// The simple rules of `servant` no rule of `owner` covers (upstream's
/// `Covers`; empty when covered).
pub fn missing_rules(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(break_down)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// Upstream's `CompactRules`: simple resource rules differing only in their
/// verb are merged, in first-seen order.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::with_capacity(rules.len());
    for rule in rules {
        let simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        let existing = simple
            .then(|| {
                out.iter_mut().find(|o| {
                    o.resource_names.is_empty()
                        && o.non_resource_urls.is_empty()
                        && o.api_groups == rule.api_groups
                        && o.resources == rule.resources
                })
            })
            .flatten();
        match existing {
            Some(o) => o.verbs.extend(rule.verbs),
            None => out.push(rule),
        }
    }
    out
}

/// Upstream's `ConfirmNoEscalation` message, or `None` when `owner` covers
/// `servant`. `errors` are the rule resolution errors met for the owner.
pub fn escalation_error(
    user: &UserInfo,
    owner: &[PolicyRule],
    errors: &[String],
    servant: &[PolicyRule],
) -> Option<String> {
    let missing = missing_rules(owner, servant);
    if missing.is_empty() {
        return None;
    }
    let descriptions: BTreeSet<String> = compact(missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    let list = descriptions.into_iter().collect::<Vec<_>>().join("\n");
    let mut msg = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{list}",
        user.name,
        quoted_list(&user.groups),
    );
    if !errors.is_empty() {
        let _ = write!(msg, "; resolution errors: [{}]", errors.join(" "));
    }
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v)
    }

    #[test]
    fn wildcards_and_subresources_cover() {
        let owner = [rule(
            json!({"apiGroups": [""], "resources": ["pods/*", "secrets"],
            "verbs": ["*"]}),
        )];
        let covered = [rule(
            json!({"apiGroups": [""], "resources": ["pods/log", "secrets"],
            "verbs": ["get", "list"]}),
        )];
        assert!(missing_rules(&owner, &covered).is_empty());
        let not = [rule(
            json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}),
        )];
        assert_eq!(missing_rules(&owner, &not).len(), 1);
    }

    #[test]
    fn resource_names_and_urls() {
        let owner = [
            rule(json!({"apiGroups": [""], "resources": ["configmaps"],
                "resourceNames": ["a"], "verbs": ["get"]})),
            rule(json!({"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]})),
        ];
        let named = [rule(json!({"apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["a"], "verbs": ["get"]}))];
        assert!(missing_rules(&owner, &named).is_empty());
        let any = [rule(json!({"apiGroups": [""], "resources": ["configmaps"],
            "verbs": ["get"]}))];
        assert_eq!(missing_rules(&owner, &any).len(), 1);
        let url = [rule(
            json!({"nonResourceURLs": ["/healthz/ping"], "verbs": ["get"]}),
        )];
        assert!(missing_rules(&owner, &url).is_empty());
    }

    #[test]
    fn message_lists_compacted_missing_rules() {
        let user = UserInfo {
            name: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        let servant = [
            rule(json!({"apiGroups": ["*"], "resources": ["*"],
            "verbs": ["get", "list"]})),
            rule(json!({"nonResourceURLs": ["*"], "verbs": ["*"]})),
        ];
        let msg = escalation_error(&user, &[], &[], &servant).unwrap_or_default();
        assert_eq!(
            msg,
            "user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC \
             permissions not currently held:\n\
             {APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"get\" \"list\"]}\n\
             {NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
        );
    }
}
