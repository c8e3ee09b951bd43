//! May this user do this (upstream's `WithAuthorization`)? The modes of
//! `--authorization-mode` that are built so far: AlwaysAllow and AlwaysDeny.
//! A denied request gets 403 with upstream's message.

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use axum::middleware::Next;
use http::{Request, Response};

use super::authentication::UserInfo;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationMode {
    AlwaysAllow,
    AlwaysDeny,
}

#[derive(Debug, Clone)]
pub struct Authorization {
    /// The modes in the order given; the first decision wins.
    pub modes: Vec<AuthorizationMode>,
}

/// The answer of the authorizer chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(String),
    NoOpinion,
}

impl Authorization {
    /// Decides a request. The built modes do not depend on who asks for
    /// what; RBAC and the others will take the request's attributes.
    pub fn decide(&self) -> Decision {
        // Both built modes always have an opinion, so the first one decides.
        match self.modes.first() {
            Some(AuthorizationMode::AlwaysAllow) => Decision::Allow,
            Some(AuthorizationMode::AlwaysDeny) => {
                Decision::Deny("Everything is forbidden.".into())
            }
            None => Decision::NoOpinion,
        }
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
    match authz.decide() {
        Decision::Allow => next.run(req).await,
        Decision::Deny(reason) => {
            response::error(&forbidden(&user, &info, &reason), Encoding::Json)
        }
        Decision::NoOpinion => response::error(&forbidden(&user, &info, ""), Encoding::Json),
    }
}
