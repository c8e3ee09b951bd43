//! Who is asking (upstream's `WithAuthentication`): a verified client
//! certificate (CN = user, O = groups), else the anonymous user when
//! `--anonymous-auth` allows it, else 401. Token authenticators plug in here
//! later.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use axum::middleware::Next;
use http::{Request, Response};

use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;
use crate::serving::ClientCert;

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The authenticated identity of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
        }
    }
}

#[derive(Debug, Clone)]
pub struct Authentication {
    /// `--anonymous-auth`.
    pub anonymous: bool,
}

fn unauthorized() -> Response<Body> {
    response::error(&ApiError::unauthorized("Unauthorized"), Encoding::Json)
}

pub async fn filter(
    State(authn): State<Arc<Authentication>>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let user = match req.extensions().get::<ClientCert>().map(ClientCert::user) {
        Some(Ok(cert_user)) => {
            let mut groups = cert_user.groups.clone();
            groups.push(AUTHENTICATED_GROUP.into());
            UserInfo {
                name: cert_user.name.clone(),
                uid: cert_user.uid.clone().unwrap_or_default(),
                groups,
            }
        }
        Some(Err(e)) => {
            tracing::debug!(error = %e, "client certificate rejected");
            return unauthorized();
        }
        // A bearer token no authenticator accepts is refused, even when
        // anonymous requests are allowed (as upstream).
        None if req.headers().contains_key(http::header::AUTHORIZATION) => return unauthorized(),
        None if authn.anonymous => UserInfo::anonymous(),
        None => return unauthorized(),
    };
    // Credentials are not passed further down, as upstream removes them.
    req.headers_mut().remove(http::header::AUTHORIZATION);
    req.extensions_mut().insert(Arc::new(user));
    next.run(req).await
}
