//! Who is asking (upstream's `WithAuthentication`): the server's
//! authenticator chain ([`Authentication`]) finds the request's user; a
//! request it refuses gets 401 with upstream's Status. Credentials are not
//! passed further down once used.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use axum::middleware::Next;
use http::{Request, Response};

pub use crate::authentication::{
    Authentication, UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP,
};
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;
use crate::serving::ClientCert;

/// Upstream's answer to an unauthenticated request.
pub fn unauthorized() -> Response<Body> {
    response::error(&ApiError::unauthorized("Unauthorized"), Encoding::Json)
}

pub async fn filter(
    State(authn): State<Arc<Authentication>>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let cert = req.extensions().get::<ClientCert>();
    let user = match authn.authenticate_request(req.headers(), cert).await {
        Ok(user) => user,
        Err(e) => {
            tracing::debug!(error = %e, "unable to authenticate the request");
            return unauthorized();
        }
    };
    req.headers_mut().remove(http::header::AUTHORIZATION);
    req.extensions_mut().insert(Arc::new(user));
    next.run(req).await
}
