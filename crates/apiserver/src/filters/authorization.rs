//! May this user do this (upstream's `WithAuthorization`)? Members of
//! system:masters may; otherwise the configured authorizer chain
//! (`--authorization-mode` or `--authorization-config`: AlwaysAllow,
//! AlwaysDeny, and modes built by the server such as RBAC, Node and
//! Webhook) decides on the request's attributes. A request nothing allows
//! gets 403 with upstream's message.

use std::any::Any;
use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};

use super::handler::Next;
use crate::audit;
use crate::authentication::user::UserInfo;
use crate::authorization::authorizer::{Attributes, Authorizer, Decision, Outcome, Rules};
use crate::authorization::{self, AlwaysAllow, AlwaysDeny, PrivilegedGroups};
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

/// One `--authorization-mode`.
#[derive(Debug, Clone)]
pub enum AuthorizationMode {
    AlwaysAllow,
    AlwaysDeny,
    /// A mode the embedding server builds (RBAC, Node, Webhook).
    Named(NamedAuthorizer),
}

/// An authorizer with the name it is configured under.
#[derive(Clone)]
pub struct NamedAuthorizer {
    pub name: String,
    pub authorizer: Arc<dyn Authorizer>,
    /// The same authorizer, for finding it by type once the chain is built.
    concrete: Arc<dyn Any + Send + Sync>,
}

impl NamedAuthorizer {
    pub fn new<T: Authorizer + 'static>(name: impl Into<String>, authorizer: Arc<T>) -> Self {
        NamedAuthorizer {
            name: name.into(),
            authorizer: authorizer.clone(),
            concrete: authorizer,
        }
    }

    /// The authorizer, when it is a `T`.
    pub fn downcast<T: Authorizer + 'static>(&self) -> Option<Arc<T>> {
        self.concrete.clone().downcast::<T>().ok()
    }
}

impl std::fmt::Debug for NamedAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NamedAuthorizer").field(&self.name).finish()
    }
}

#[async_trait]
impl Authorizer for AuthorizationMode {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        match self {
            AuthorizationMode::AlwaysAllow => AlwaysAllow.authorize(attrs).await,
            AuthorizationMode::AlwaysDeny => AlwaysDeny.authorize(attrs).await,
            AuthorizationMode::Named(named) => named.authorizer.authorize(attrs).await,
        }
    }

    async fn evaluate(&self, attrs: &Attributes<'_>) -> Outcome {
        match self {
            AuthorizationMode::Named(named) => named.authorizer.evaluate(attrs).await,
            other => Outcome {
                decision: other.authorize(attrs).await,
                error: None,
            },
        }
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        match self {
            AuthorizationMode::AlwaysAllow => AlwaysAllow.rules_for(user, namespace).await,
            AuthorizationMode::AlwaysDeny => AlwaysDeny.rules_for(user, namespace).await,
            AuthorizationMode::Named(named) => named.authorizer.rules_for(user, namespace).await,
        }
    }
}

/// The authorizer chain of `--authorization-mode`.
#[derive(Debug, Clone)]
pub struct Authorization {
    /// The modes in the order given; the first Allow or Deny wins.
    pub modes: Vec<AuthorizationMode>,
}

impl Authorization {
    /// Decides a request or an access review: the privileged group first,
    /// then the configured modes.
    pub async fn decide(&self, attrs: &Attributes<'_>) -> Decision {
        match PrivilegedGroups.authorize(attrs).await {
            Decision::NoOpinion(_) => authorization::decide(&self.modes, attrs).await,
            decided => decided,
        }
    }

    /// [`Authorization::decide`] keeping the modes' errors.
    pub async fn evaluate(&self, attrs: &Attributes<'_>) -> Outcome {
        match PrivilegedGroups.authorize(attrs).await {
            Decision::NoOpinion(_) => authorization::evaluate(&self.modes, attrs).await,
            decision => Outcome {
                decision,
                error: None,
            },
        }
    }

    /// What `user` may do in `namespace`, for SelfSubjectRulesReview.
    pub async fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        authorization::rules_for(&self.modes, user, namespace).await
    }

    /// The first configured mode that is a `T`, to bind it to its stores.
    pub fn named<T: Authorizer + 'static>(&self) -> Option<Arc<T>> {
        self.modes.iter().find_map(|m| match m {
            AuthorizationMode::Named(named) => named.downcast::<T>(),
            _ => None,
        })
    }
}

/// The attributes of a request.
pub fn attributes<'a>(user: &'a UserInfo, info: &'a RequestInfo) -> Attributes<'a> {
    Attributes {
        user,
        verb: &info.verb,
        is_resource_request: info.is_resource_request,
        namespace: &info.namespace,
        api_group: &info.api_group,
        api_version: &info.api_version,
        resource: &info.resource,
        subresource: &info.subresource,
        name: &info.name,
        path: &info.path,
        field_selector: &info.field_selector,
        label_selector: &info.label_selector,
    }
}

/// Upstream's 403 message for a denied request.
pub fn forbidden(user: &UserInfo, info: &RequestInfo, reason: &str) -> ApiError {
    let mut what = if info.is_resource_request {
        let resource = if info.subresource.is_empty() {
            info.resource.clone()
        } else {
            format!("{}/{}", info.resource, info.subresource)
        };
        let mut s = format!(
            "User \"{}\" cannot {} resource \"{}\" in API group \"{}\"",
            user.name, info.verb, resource, info.api_group
        );
        if info.namespace.is_empty() {
            s.push_str(" at the cluster scope");
        } else {
            s.push_str(&format!(" in the namespace \"{}\"", info.namespace));
        }
        s
    } else {
        format!(
            "User \"{}\" cannot {} path \"{}\"",
            user.name, info.verb, info.path
        )
    };
    if !reason.is_empty() {
        what.push_str(": ");
        what.push_str(reason);
    }
    if info.is_resource_request {
        ApiError::forbidden(&info.api_group, &info.resource, &info.name, what)
    } else {
        ApiError::forbidden("", "", "", what)
    }
}

pub async fn filter(
    State(authz): State<Arc<Authorization>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let info = req.extensions().get::<Arc<RequestInfo>>().cloned();
    let user = req.extensions().get::<Arc<UserInfo>>().cloned();
    let (Some(info), Some(user)) = (info, user) else {
        return next.run(req).await;
    };
    let outcome = authz.evaluate(&attributes(&user, &info)).await;
    match (outcome.decision, outcome.error) {
        (Decision::Allow(reason), _) => {
            audit::add_annotation(req.extensions(), audit::DECISION_ANNOTATION, "allow");
            audit::add_annotation(req.extensions(), audit::REASON_ANNOTATION, reason);
            next.run(req).await
        }
        // A mode failed and nothing allowed: upstream answers 500.
        (_, Some(error)) => {
            audit::add_annotation(req.extensions(), audit::REASON_ANNOTATION, "internal error");
            internal_error(req.uri(), &error)
        }
        (Decision::Deny(reason) | Decision::NoOpinion(reason), None) => {
            audit::add_annotation(req.extensions(), audit::DECISION_ANNOTATION, "forbid");
            audit::add_annotation(req.extensions(), audit::REASON_ANNOTATION, reason.as_str());
            response::error(&forbidden(&user, &info, &reason), Encoding::Json)
        }
    }
}

/// Upstream's plain-text 500 (`responsewriters.InternalError`).
fn internal_error(uri: &http::Uri, error: &str) -> Response<Body> {
    let target = uri.path_and_query().map_or("", |p| p.as_str());
    let text = format!("Internal Server Error: {target:?}: {error}\n");
    Response::builder()
        .status(http::StatusCode::INTERNAL_SERVER_ERROR)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header("x-content-type-options", "nosniff")
        .body(Body::from(text))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    fn list_configmaps() -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            path: "/api/v1/namespaces/default/configmaps".into(),
            verb: "list".into(),
            api_prefix: "api".into(),
            api_version: "v1".into(),
            namespace: "default".into(),
            resource: "configmaps".into(),
            ..RequestInfo::default()
        }
    }

    async fn decide(modes: Vec<AuthorizationMode>, user: &UserInfo) -> Decision {
        let info = list_configmaps();
        Authorization { modes }
            .decide(&attributes(user, &info))
            .await
    }

    #[tokio::test]
    async fn first_decision_wins_and_no_opinion_falls_through() {
        let bob = user("bob", &["system:authenticated"]);
        let deny_first = vec![
            AuthorizationMode::AlwaysDeny,
            AuthorizationMode::AlwaysAllow,
        ];
        assert_eq!(
            decide(deny_first, &bob).await,
            Decision::Deny("Everything is forbidden.".into())
        );
        let no_opinion = || failing(Decision::NoOpinion(String::new()));
        let no_opinion_then_allow = vec![no_opinion(), AuthorizationMode::AlwaysAllow];
        assert_eq!(
            decide(no_opinion_then_allow, &bob).await,
            Decision::Allow(String::new())
        );
        assert_eq!(
            decide(vec![no_opinion()], &bob).await,
            Decision::NoOpinion(String::new())
        );
        assert_eq!(
            decide(Vec::new(), &bob).await,
            Decision::NoOpinion(String::new())
        );
    }

    #[tokio::test]
    async fn system_masters_is_allowed_ahead_of_every_mode() {
        let admin = user(
            "kubernetes-admin",
            &["system:masters", "system:authenticated"],
        );
        assert_eq!(
            decide(vec![AuthorizationMode::AlwaysDeny], &admin).await,
            Decision::Allow(String::new())
        );
        // It grants but lists no rules.
        let authz = Authorization {
            modes: vec![AuthorizationMode::AlwaysDeny],
        };
        assert_eq!(authz.rules_for(&admin, "default").await, Rules::default());
    }

    /// A mode whose backend failed: its failure policy's decision and the error.
    struct Failing(Decision);

    #[async_trait]
    impl Authorizer for Failing {
        async fn authorize(&self, _attrs: &Attributes<'_>) -> Decision {
            self.0.clone()
        }

        async fn evaluate(&self, _attrs: &Attributes<'_>) -> Outcome {
            Outcome {
                decision: self.0.clone(),
                error: Some("Post \"https://hook\": refused".into()),
            }
        }

        async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
            Rules::default()
        }
    }

    fn failing(decision: Decision) -> AuthorizationMode {
        AuthorizationMode::Named(NamedAuthorizer::new("hook", Arc::new(Failing(decision))))
    }

    #[tokio::test]
    async fn errors_are_kept_unless_a_later_mode_allows() {
        let bob = user("bob", &[]);
        let info = list_configmaps();
        let attrs = attributes(&bob, &info);
        let no_opinion = Decision::NoOpinion(String::new());
        let fails_then_allows = Authorization {
            modes: vec![failing(no_opinion.clone()), AuthorizationMode::AlwaysAllow],
        };
        let outcome = fails_then_allows.evaluate(&attrs).await;
        assert_eq!(outcome.decision, Decision::Allow(String::new()));
        assert_eq!(outcome.error, None);
        let fails_alone = Authorization {
            modes: vec![failing(no_opinion.clone()), failing(no_opinion)],
        };
        let outcome = fails_alone.evaluate(&attrs).await;
        assert_eq!(
            outcome.error.as_deref(),
            Some("[Post \"https://hook\": refused, Post \"https://hook\": refused]")
        );
        let denies = Authorization {
            modes: vec![
                failing(Decision::Deny(String::new())),
                AuthorizationMode::AlwaysAllow,
            ],
        };
        let outcome = denies.evaluate(&attrs).await;
        assert_eq!(outcome.decision, Decision::Deny(String::new()));
        assert!(outcome.error.is_some());
        assert!(denies.named::<Failing>().is_some());
        assert!(denies.named::<AlwaysAllow>().is_none());
    }

    #[test]
    fn forbidden_messages_follow_upstream() {
        let bob = user("bob", &[]);
        let err = forbidden(&bob, &list_configmaps(), "");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        let path = RequestInfo {
            path: "/metrics".into(),
            verb: "get".into(),
            ..RequestInfo::default()
        };
        let err = forbidden(
            &bob,
            &path,
            "RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found",
        );
        assert_eq!(
            err.message,
            "forbidden: User \"bob\" cannot get path \"/metrics\": RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found"
        );
    }
}
