//! Authorizers (upstream's `k8s.io/apiserver/pkg/authorization`): the
//! attributes a decision is made on, the decision, the [`Authorizer`] trait,
//! the union of the configured modes, and the modes themselves (AlwaysAllow,
//! AlwaysDeny, RBAC).

pub mod escalation;
pub mod rbac;
pub mod rules;

use async_trait::async_trait;

use crate::filters::authentication::UserInfo;

/// What a request (or an access review) asks to do (upstream's
/// `authorizer.Attributes`).
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    /// Whether the request is for an API resource; otherwise `path` applies.
    pub is_resource_request: bool,
    pub namespace: &'a str,
    pub api_group: &'a str,
    pub api_version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    pub path: &'a str,
    /// The request's `fieldSelector` as given ("" when none).
    pub field_selector: &'a str,
    /// The request's `labelSelector` as given ("" when none).
    pub label_selector: &'a str,
}

/// The answer of one authorizer, or of the union of them, with upstream's
/// reason string (empty when there is nothing to say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
    NoOpinion(String),
}

impl Decision {
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        }
    }
}

/// A resource rule of a rules review (upstream's `ResourceRuleInfo`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

/// A non-resource rule of a rules review (upstream's `NonResourceRuleInfo`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// What a user may do in a namespace (upstream's `RuleResolver.RulesFor`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Some rules could not be read: the lists may be short.
    pub incomplete: bool,
    /// Why the lists are incomplete.
    pub errors: Vec<String>,
}

/// A decision with the error met while making it (upstream's
/// `(decision, reason, err)`): a mode that could not reach its backend
/// answers its failure policy's decision and the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub decision: Decision,
    pub error: Option<String>,
}

/// One authorization mode.
#[async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision;
    /// The decision and any error; modes that cannot fail keep the default.
    async fn evaluate(&self, attrs: &Attributes<'_>) -> Outcome {
        Outcome {
            decision: self.authorize(attrs).await,
            error: None,
        }
    }
    /// The rules `user` has in `namespace`, for SelfSubjectRulesReview.
    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules;
}

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

/// The group whose members may do anything (upstream's
/// `SystemPrivilegedGroup`).
pub const PRIVILEGED_GROUP: &str = "system:masters";

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
