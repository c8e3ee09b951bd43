//! `pods/log` (upstream's `LogREST`): the PodLogOptions of the query are
//! validated, the container chosen, and the kubelet's
//! `/containerLogs/<namespace>/<pod>/<container>` streamed back as it
//! arrives, so `follow` works. A pod not yet on a node has no log: 204.

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::go_time::parse_query_time;
use apimachinery::status::ApiError;
use apiserver::endpoints::connect::{encode_query, ConnectRequest};
use apiserver::endpoints::proxy::Location;
use axum::body::Body;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;

use super::{query_bool, query_string, text, validate_container, Context};

/// How much of a failed kubelet answer goes into the error.
const MAX_ERROR_BODY: usize = 50_000;

/// The query parameters of `pods/log` (upstream's PodLogOptions).
#[derive(Debug, Default, PartialEq)]
struct LogOptions {
    container: String,
    follow: bool,
    previous: bool,
    timestamps: bool,
    since_seconds: Option<i64>,
    /// RFC 3339, normalised to UTC.
    since_time: Option<String>,
    tail_lines: Option<i64>,
    limit_bytes: Option<i64>,
    insecure_skip_tls_verify_backend: bool,
}

/// An optional integer (`Convert_Slice_string_To_Pointer_int64`): a
/// value that does not parse is a 400 with `strconv.ParseInt`'s message.
fn query_int(req: &ConnectRequest, key: &str) -> Result<Option<i64>, ApiError> {
    req.query().int64(key).map_err(ApiError::bad_request)
}

/// An optional time (`Convert_Slice_string_To_Pointer_v1_Time`): empty
/// is the zero time, anything else must parse as Go's `time.Parse` with
/// RFC 3339 does, or it is a 400 with Go's message. Kept in UTC.
fn query_time(req: &ConnectRequest, key: &str) -> Result<Option<String>, ApiError> {
    req.query()
        .first(key)
        .map(|v| {
            let t = parse_query_time(v).map_err(ApiError::bad_request)?;
            Ok(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        })
        .transpose()
}

impl LogOptions {
    fn parse(req: &ConnectRequest) -> Result<LogOptions, ApiError> {
        Ok(LogOptions {
            container: query_string(req, "container"),
            follow: query_bool(req, "follow"),
            previous: query_bool(req, "previous"),
            timestamps: query_bool(req, "timestamps"),
            since_seconds: query_int(req, "sinceSeconds")?,
            since_time: query_time(req, "sinceTime")?,
            tail_lines: query_int(req, "tailLines")?,
            limit_bytes: query_int(req, "limitBytes")?,
            insecure_skip_tls_verify_backend: query_bool(req, "insecureSkipTLSVerifyBackend"),
        })
    }

    /// Upstream's `ValidatePodLogOptions`.
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(tail) = self.tail_lines.filter(|t| *t < 0) {
            errors.push(FieldError::invalid(
                &Path::new("tailLines"),
                tail,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(limit) = self.limit_bytes.filter(|l| *l < 1) {
            errors.push(FieldError::invalid(
                &Path::new("limitBytes"),
                limit,
                "must be greater than 0",
            ));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => errors.push(FieldError::forbidden(
                &Path::new(""),
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(seconds), None) if seconds < 1 => errors.push(FieldError::invalid(
                &Path::new("sinceSeconds"),
                seconds,
                "must be greater than 0",
            )),
            _ => {}
        }
        errors
    }

    /// The kubelet's query, in upstream's (sorted) order.
    fn kubelet_query(&self) -> String {
        let number = |v: Option<i64>| v.map(|n| n.to_string());
        let flag = |on: bool| on.then(|| "true".to_owned());
        let pairs = [
            ("follow", flag(self.follow)),
            ("limitBytes", number(self.limit_bytes)),
            ("previous", flag(self.previous)),
            ("sinceSeconds", number(self.since_seconds)),
            ("sinceTime", self.since_time.clone()),
            ("tailLines", number(self.tail_lines)),
            ("timestamps", flag(self.timestamps)),
        ];
        encode_query(
            pairs
                .iter()
                .filter_map(|(k, v)| v.as_deref().map(|v| (*k, v))),
        )
    }
}

/// Serves `GET pods/<name>/log`.
pub(super) async fn serve(
    ctx: Arc<Context>,
    req: ConnectRequest,
) -> Result<Response<Body>, ApiError> {
    let opts = LogOptions::parse(&req)?;
    let info = req.info.clone();
    let errors = opts.validate();
    if !errors.is_empty() {
        return Err(ApiError::invalid("", "PodLogOptions", &info.name, &errors));
    }
    let pod = super::get_pod(&ctx, &info).await?;
    let container = validate_container(&opts.container, &pod)?;
    let node = text(&pod, "/spec/nodeName");
    if node.is_empty() {
        let mut empty = Response::new(Body::empty());
        *empty.status_mut() = StatusCode::NO_CONTENT;
        return Ok(empty);
    }
    let kubelet = ctx.client.node_connection(&ctx.nodes, node).await?;
    let location = Location {
        https: true,
        host: kubelet.host,
        port: kubelet.port,
        path: format!(
            "/containerLogs/{}/{}/{container}",
            text(&pod, "/metadata/namespace"),
            text(&pod, "/metadata/name")
        ),
        query: Some(opts.kubelet_query()),
    };
    let transport = if opts.insecure_skip_tls_verify_backend {
        &ctx.client.kubelet_insecure
    } else {
        &ctx.client.kubelet
    };
    let response = transport.get(&location).await?;
    let status = response.status();
    if !(200..=206).contains(&status.as_u16()) {
        let body = http_body_util::Limited::new(response.into_body(), MAX_ERROR_BODY)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let message = String::from_utf8_lossy(&body);
        return Err(kubelet_error(status, message.trim(), &info.name));
    }
    let mut out = response.map(Body::new);
    let headers = out.headers_mut();
    headers.clear();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(out)
}

/// A kubelet's failure as upstream's response checker words it for
/// `pods/log`: 400 and 500 carry the kubelet's text, other codes
/// `NewGenericServerResponse`'s message.
fn kubelet_error(status: StatusCode, body: &str, name: &str) -> ApiError {
    use apimachinery::status::StatusReason as R;
    let code = status.as_u16();
    let (reason, message) = match code {
        400 => return ApiError::bad_request(body),
        500 => return ApiError::internal_error(body),
        401 => (
            R::Unauthorized,
            "the server has asked for the client to provide credentials".to_owned(),
        ),
        403 => (R::Forbidden, body.to_owned()),
        404 => (
            R::NotFound,
            "the server could not find the requested resource".to_owned(),
        ),
        503 => (
            R::ServiceUnavailable,
            "the server is currently unable to handle the request".to_owned(),
        ),
        _ if code > 500 => (
            R::InternalError,
            format!("an error on the server ({body:?}) has prevented the request from succeeding"),
        ),
        _ => (
            R::Unknown,
            format!("the server responded with the status code {code} but did not return more information"),
        ),
    };
    ApiError::new(code, reason, format!("{message} ( pods/log {name})"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use apimachinery::request_info::RequestInfoResolver;
    use apiserver::authentication::user::UserInfo;

    use super::*;

    fn request(query: &str) -> ConnectRequest {
        let path = "/api/v1/namespaces/ns/pods/web/log";
        let info = RequestInfoResolver::default()
            .resolve("GET", path, query)
            .unwrap();
        let (parts, body) = http::Request::get(format!("{path}?{query}"))
            .body(Body::empty())
            .unwrap()
            .into_parts();
        ConnectRequest {
            parts,
            body,
            info: Arc::new(info),
            user: Arc::new(UserInfo::anonymous()),
        }
    }

    fn fields(query: &str) -> Vec<String> {
        let opts = LogOptions::parse(&request(query)).unwrap();
        opts.validate().iter().map(|e| e.body()).collect()
    }

    #[test]
    fn options_are_read_from_the_query() {
        let opts = LogOptions::parse(&request(
            "container=app&follow=1&tailLines=10&timestamps=true&previous=false&sinceTime=2026-01-02T03:04:05%2B01:00",
        ))
        .unwrap();
        assert_eq!(opts.container, "app");
        assert!(opts.follow && opts.timestamps && !opts.previous);
        assert_eq!(opts.tail_lines, Some(10));
        assert_eq!(opts.since_time.as_deref(), Some("2026-01-02T02:04:05Z"));
        assert_eq!(
            opts.kubelet_query(),
            "follow=true&sinceTime=2026-01-02T02%3A04%3A05Z&tailLines=10&timestamps=true"
        );
        let zero = LogOptions::parse(&request("sinceTime=")).unwrap();
        assert_eq!(zero.since_time.as_deref(), Some("0001-01-01T00:00:00Z"));
        let err = LogOptions::parse(&request("sinceTime=2026-01-02")).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            r#"parsing time "2026-01-02" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#
        );
        let err = LogOptions::parse(&request("tailLines=ten")).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "strconv.ParseInt: parsing \"ten\": invalid syntax"
        );
    }

    #[test]
    fn invalid_options_are_refused_as_upstream() {
        assert!(fields("tailLines=0&limitBytes=1&sinceSeconds=1").is_empty());
        assert_eq!(
            fields("tailLines=-1&limitBytes=0"),
            [
                "Invalid value: -1: must be greater than or equal to 0",
                "Invalid value: 0: must be greater than 0"
            ]
        );
        assert_eq!(
            fields("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z"),
            ["Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"]
        );
        assert_eq!(
            fields("sinceSeconds=0"),
            ["Invalid value: 0: must be greater than 0"]
        );
    }

    #[test]
    fn kubelet_failures_become_status_errors() {
        let err = kubelet_error(StatusCode::NOT_FOUND, "gone", "web");
        assert_eq!(err.code, 404);
        assert_eq!(
            err.message,
            "the server could not find the requested resource ( pods/log web)"
        );
        let err = kubelet_error(StatusCode::BAD_REQUEST, "container is waiting", "web");
        assert_eq!(err.message, "container is waiting");
        let err = kubelet_error(StatusCode::BAD_GATEWAY, "boom", "web");
        assert_eq!(err.code, 502);
        assert!(err.message.starts_with("an error on the server (\"boom\")"));
    }
}
