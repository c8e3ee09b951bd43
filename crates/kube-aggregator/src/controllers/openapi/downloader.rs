//! Downloads from an aggregated API server through the aggregator's own
//! proxy (upstream's `Downloader`, which calls the APIService's proxy
//! handler as `system:aggregator`), with `If-None-Match` so an unchanged
//! document costs a 304.

use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::user::UserInfo;
use axum::body::Body;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{header, Request, Response, StatusCode};
use http_body_util::BodyExt;

/// Sends a request to the server of one APIService (upstream's proxy
/// handler of the APIService).
pub type Handler = Arc<dyn Fn(Request<Body>) -> BoxFuture<'static, Response<Body>> + Send + Sync>;

/// The handler of a group version's APIService, while it is routed.
pub type Handlers = Arc<dyn Fn(&str, &str) -> Option<Handler> + Send + Sync>;

/// How long a download may take (upstream's `specDownloadTimeout`).
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A download: the status, the ETag and the body of a 200.
pub struct Downloaded {
    pub status: StatusCode,
    pub etag: String,
    pub body: Bytes,
}

/// GETs `path` through `handler` as `user`, `Accept`ing `accept`; `etag`
/// is the ETag of the copy already held.
pub async fn get(
    handler: &Handler,
    path: &str,
    accept: &str,
    etag: Option<&str>,
    user: UserInfo,
) -> Result<Downloaded, String> {
    let mut req = Request::get(path).header(header::ACCEPT, accept);
    if let Some(etag) = etag.filter(|e| !e.is_empty()) {
        req = req.header(header::IF_NONE_MATCH, etag);
    }
    let mut req = req.body(Body::empty()).map_err(|e| e.to_string())?;
    req.extensions_mut().insert(Arc::new(user));
    let exchange = async {
        let resp = handler(req).await;
        let status = resp.status();
        let etag = resp
            .headers()
            .get(header::ETAG)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Downloaded { status, etag, body })
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .map_err(|_| format!("downloading {path} timed out"))?
}
