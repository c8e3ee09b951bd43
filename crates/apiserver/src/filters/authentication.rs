//! Who is asking (upstream's `WithAuthentication`): the server's
//! authenticator chain ([`Authentication`]) finds the request's user; a
//! request it refuses gets 401 with upstream's Status. Credentials are not
//! passed further down once used. A refusal ends the filter's latency
//! record, as upstream's tracked failed handler.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};

use super::filterlatency;
use super::handler::Next;
use crate::audit::{self, AuditContext};
use crate::authentication::client_cert::{ClientCert, PeerCertificates};
use crate::authentication::Authentication;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;
use crate::endpoints::warning::Warnings;
use crate::metrics::Metrics;

/// Upstream's answer to an unauthenticated request.
pub fn unauthorized() -> Response<Body> {
    response::error(&ApiError::unauthorized("Unauthorized"), Encoding::Json)
}

pub async fn filter(
    State((authn, metrics)): State<(Arc<Authentication>, Arc<Metrics>)>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let cert = req.extensions().get::<ClientCert>().cloned();
    let peer = req.extensions().get::<PeerCertificates>().cloned();
    let path = req.uri().path().to_owned();
    let audit = req.extensions().get::<Arc<AuditContext>>().cloned();
    let headers = req.headers_mut();
    let space_warning = crate::authentication::space_before_bearer_token(headers);
    let authenticating = authn.authenticate_request(headers, cert.as_ref(), peer.as_ref(), &path);
    let result = match audit {
        Some(ctx) => audit::authenticating(ctx, authenticating).await,
        None => authenticating.await,
    };
    let user = match result {
        Ok(user) => user,
        Err(e) => {
            tracing::debug!(error = %e, "unable to authenticate the request");
            filterlatency::record(&req, &metrics);
            // The body is read first (up to the request limit), so that a
            // client still sending it sees the answer rather than a reset.
            let _ = crate::endpoints::handlers::read_body(req.into_body()).await;
            return with_space_warning(unauthorized(), space_warning);
        }
    };
    req.headers_mut().remove(http::header::AUTHORIZATION);
    req.extensions_mut().insert(Arc::new(user));
    with_space_warning(next.run(req).await, space_warning)
}

/// Adds upstream's warning about an ignored bearer token, when there was one.
fn with_space_warning(mut resp: Response<Body>, warn: bool) -> Response<Body> {
    if warn {
        let mut warnings = Warnings::default();
        warnings.add(crate::authentication::SPACE_BEFORE_TOKEN_WARNING);
        warnings.apply(resp.headers_mut());
    }
    resp
}
