//! What an authorizer decides on and answers (upstream's
//! `k8s.io/apiserver/pkg/authorization/authorizer`): the request's
//! [`Attributes`], the [`Decision`], the rules of a rules review, and the
//! [`Authorizer`] trait every mode implements.

use async_trait::async_trait;

use crate::authentication::user::UserInfo;

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
