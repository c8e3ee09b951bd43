//! Authorizers (upstream's `k8s.io/apiserver/pkg/authorization`): the
//! union of the configured modes and the generic modes (AlwaysAllow,
//! AlwaysDeny, the privileged group); the attributes, decision and
//! [`Authorizer`] trait are in [`authorizer`]. RBAC, Kubernetes-specific
//! upstream, is kube-apiserver's.

pub mod authorizer;

use async_trait::async_trait;

use crate::authentication::user::{UserInfo, PRIVILEGED_GROUP};
use authorizer::{Attributes, Authorizer, Decision, NonResourceRule, Outcome, ResourceRule, Rules};

/// `AlwaysAllow`: every request is allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAllow;

#[async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _attrs: &Attributes<'_>) -> Decision {
        Decision::Allow(String::new())
    }

    async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        let all = || vec!["*".to_owned()];
        Rules {
            resource_rules: vec![ResourceRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                resource_names: Vec::new(),
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: all(),
                non_resource_urls: all(),
            }],
            incomplete: false,
            errors: Vec::new(),
        }
    }
}

/// `AlwaysDeny`: every request is denied.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysDeny;

#[async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _attrs: &Attributes<'_>) -> Decision {
        Decision::Deny("Everything is forbidden.".into())
    }

    async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules::default()
    }
}

/// Allows members of [`PRIVILEGED_GROUP`]; upstream puts it ahead of every
/// configured mode, so the cluster admin is never locked out (not even
/// before the RBAC bootstrap policy exists). It contributes no rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrivilegedGroups;

#[async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        if attrs.user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            Decision::Allow(String::new())
        } else {
            Decision::NoOpinion(String::new())
        }
    }

    async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules::default()
    }
}

/// The configured modes in order (upstream's union authorizer): the first
/// Allow or Deny wins; when every mode has no opinion, their reasons are
/// joined.
pub async fn decide<A: Authorizer>(modes: &[A], attrs: &Attributes<'_>) -> Decision {
    let mut reasons: Vec<String> = Vec::new();
    for mode in modes {
        match mode.authorize(attrs).await {
            Decision::NoOpinion(reason) => {
                if !reason.is_empty() {
                    reasons.push(reason);
                }
            }
            decided => return decided,
        }
    }
    Decision::NoOpinion(reasons.join("\n"))
}

/// [`decide`] keeping the errors (upstream's union authorizer): the first
/// Allow or Deny comes with its own error; when no mode decides, every
/// mode's error is kept, joined.
pub async fn evaluate<A: Authorizer>(modes: &[A], attrs: &Attributes<'_>) -> Outcome {
    let mut reasons: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for mode in modes {
        let outcome = mode.evaluate(attrs).await;
        match outcome.decision {
            Decision::NoOpinion(reason) => {
                if !reason.is_empty() {
                    reasons.push(reason);
                }
                errors.extend(outcome.error);
            }
            _ => return outcome,
        }
    }
    let error = match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(format!("[{}]", errors.join(", "))),
    };
    Outcome {
        decision: Decision::NoOpinion(reasons.join("\n")),
        error,
    }
}

/// The union of every mode's rules (upstream's union rule resolver).
pub async fn rules_for<A: Authorizer>(modes: &[A], user: &UserInfo, namespace: &str) -> Rules {
    let mut all = Rules::default();
    for mode in modes {
        let rules = mode.rules_for(user, namespace).await;
        all.resource_rules.extend(rules.resource_rules);
        all.non_resource_rules.extend(rules.non_resource_rules);
        all.incomplete |= rules.incomplete;
        all.errors.extend(rules.errors);
    }
    all
}
