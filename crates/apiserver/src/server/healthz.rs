//! `/healthz`, `/livez` and `/readyz` with per-check paths, `?verbose` and
//! `?exclude=` (upstream's `server/healthz`).

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use futures::future::BoxFuture;
use http::{header, HeaderValue, Response, StatusCode};

/// One named check. `Err` carries the reason, which is only logged: the
/// HTTP answer says "reason withheld" as upstream.
pub trait HealthCheck: Send + Sync {
    fn name(&self) -> &str;
    fn check(&self) -> BoxFuture<'_, Result<(), String>>;
    /// Whether `/livez` runs it too; upstream leaves some (KMS plugins) to
    /// `/healthz` and `/readyz`.
    fn livez(&self) -> bool {
        true
    }
    /// Whether only `/readyz` runs it (upstream's `etcd-readiness`).
    fn readyz_only(&self) -> bool {
        false
    }
}

/// `check`, run by `/readyz` only.
pub fn readyz_only(check: Arc<dyn HealthCheck>) -> Arc<dyn HealthCheck> {
    Arc::new(ReadyzOnly(check))
}

struct ReadyzOnly(Arc<dyn HealthCheck>);

impl HealthCheck for ReadyzOnly {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        self.0.check()
    }
    fn livez(&self) -> bool {
        false
    }
    fn readyz_only(&self) -> bool {
        true
    }
}

/// A check from a name and a closure.
pub struct FnCheck<F> {
    name: String,
    f: F,
}

impl<F> FnCheck<F>
where
    F: Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync,
{
    pub fn new(name: impl Into<String>, f: F) -> Arc<Self> {
        Arc::new(FnCheck {
            name: name.into(),
            f,
        })
    }
}

impl<F> HealthCheck for FnCheck<F>
where
    F: Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        (self.f)()
    }
}

/// The always-passing `ping` check every endpoint starts with.
pub fn ping() -> Arc<dyn HealthCheck> {
    FnCheck::new("ping", || Box::pin(async { Ok(()) }))
}

fn text(code: StatusCode, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        header::HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Serves `/<endpoint>` (sub = None) or `/<endpoint>/<check>`.
pub async fn serve(
    endpoint: &str,
    checks: &[Arc<dyn HealthCheck>],
    sub: Option<&str>,
    query: Option<&str>,
) -> Response<Body> {
    if let Some(name) = sub.filter(|s| !s.is_empty()) {
        return match checks.iter().find(|c| c.name() == name) {
            None => text(StatusCode::NOT_FOUND, "404 page not found\n".into()),
            Some(c) => match c.check().await {
                Ok(()) => text(StatusCode::OK, "ok".into()),
                Err(e) => {
                    tracing::warn!(check = name, error = %e, "{endpoint} check failed");
                    text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("internal server error: {e}\n"),
                    )
                }
            },
        };
    }
    let params: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let verbose = params.iter().any(|(k, _)| k == "verbose");
    let mut excluded: HashSet<String> = params
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.clone())
        .collect();
    let mut report = String::new();
    let mut failed = false;
    for c in checks {
        if excluded.remove(c.name()) {
            report.push_str(&format!("[+]{} excluded: ok\n", c.name()));
            continue;
        }
        match c.check().await {
            Ok(()) => report.push_str(&format!("[+]{} ok\n", c.name())),
            Err(e) => {
                failed = true;
                tracing::warn!(check = c.name(), error = %e, "{endpoint} check failed");
                report.push_str(&format!("[-]{} failed: reason withheld\n", c.name()));
            }
        }
    }
    for name in excluded {
        report.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for \"{name}\"\n"
        ));
    }
    if failed {
        report.push_str(&format!("{endpoint} check failed\n"));
        return text(StatusCode::INTERNAL_SERVER_ERROR, report);
    }
    if verbose {
        report.push_str(&format!("{endpoint} check passed\n"));
        text(StatusCode::OK, report)
    } else {
        text(StatusCode::OK, "ok".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing() -> Arc<dyn HealthCheck> {
        FnCheck::new("etcd", || Box::pin(async { Err("down".to_string()) }))
    }

    async fn body(resp: Response<Body>) -> (u16, String) {
        let code = resp.status().as_u16();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        (code, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn verbose_lists_every_check() {
        let checks = vec![ping()];
        let (code, text) = body(serve("readyz", &checks, None, Some("verbose")).await).await;
        assert_eq!(code, 200);
        assert_eq!(text, "[+]ping ok\nreadyz check passed\n");
    }

    #[tokio::test]
    async fn a_failing_check_fails_unless_excluded() {
        let checks = vec![ping(), failing()];
        let (code, text) = body(serve("healthz", &checks, None, None).await).await;
        assert_eq!(code, 500);
        assert!(text.contains("[-]etcd failed: reason withheld"));
        assert!(text.ends_with("healthz check failed\n"));
        let (code, text) = body(serve("healthz", &checks, None, Some("exclude=etcd")).await).await;
        assert_eq!((code, text.as_str()), (200, "ok"));
        let (code, _) = body(serve("healthz", &checks, Some("etcd"), None).await).await;
        assert_eq!(code, 500);
        let (code, _) = body(serve("healthz", &checks, Some("nope"), None).await).await;
        assert_eq!(code, 404);
    }
}
