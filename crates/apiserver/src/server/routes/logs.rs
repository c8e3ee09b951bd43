//! `/logs` (upstream's `routes.Logs`, installed with
//! `--enable-logs-handler`): the files under `/var/log` as Go's
//! `http.ServeFile` serves them. `/logs/` lists the directory (Go's HTML
//! listing), `/logs/<path>` sends a file or lists a subdirectory; a
//! directory asked for without its trailing slash is redirected to it, a
//! path with `..` answers 400, a missing file 404.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};

use super::plain_text;
use super::PathRecorder;
use crate::endpoints::response::not_found;

/// Upstream's `defaultLogDir`.
pub const LOG_DIR: &str = "/var/log";

/// Serves `/logs` and everything below it from `dir` on `server`.
pub fn install(server: &mut impl PathRecorder, dir: &Path) {
    let dir = Arc::new(dir.to_owned());
    server.unlisted_handle_prefix(
        "/logs",
        Arc::new(move |req| {
            let dir = dir.clone();
            Box::pin(async move { serve(&dir, req).await })
        }),
    );
}

async fn serve(dir: &Path, req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let Some(rest) = path
        .strip_prefix("/logs")
        .filter(|r| r.is_empty() || r.starts_with('/'))
    else {
        return not_found();
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain_text(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed");
    }
    if path.split('/').any(|segment| segment == "..") {
        return go_error(StatusCode::BAD_REQUEST, "invalid URL path");
    }
    let file = dir.join(rest.trim_start_matches('/'));
    let Ok(meta) = tokio::fs::metadata(&file).await else {
        return go_error(StatusCode::NOT_FOUND, "404 page not found");
    };
    if meta.is_dir() && !path.ends_with('/') {
        let base = path.rsplit('/').next().unwrap_or_default();
        return redirect(&format!("{base}/"));
    }
    let answer = if meta.is_dir() {
        list(&file).await
    } else {
        tokio::fs::read(&file).await.map(send)
    };
    answer.unwrap_or_else(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => go_error(StatusCode::FORBIDDEN, "403 Forbidden"),
        _ => go_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "500 Internal Server Error",
        ),
    })
}

/// Go's `http.Error`.
fn go_error(status: StatusCode, text: &str) -> Response<Body> {
    let mut resp = plain_text(status, text);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Go's `localRedirect`.
fn redirect(location: &str) -> Response<Body> {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, value);
    }
    resp
}

/// Go's `dirList`: the entries sorted by name, directories with a `/`.
async fn list(dir: &PathBuf) -> std::io::Result<Response<Body>> {
    let mut entries = tokio::fs::read_dir(dir).await?;
    let mut names = Vec::new();
    while let Some(entry) = entries.next_entry().await? {
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    let mut html = String::from(
        "<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n",
    );
    for name in names {
        let href = escape_html(&percent_encode_path(&name));
        html.push_str(&format!("<a href=\"{href}\">{}</a>\n", escape_html(&name)));
    }
    html.push_str("</pre>\n");
    let mut resp = Response::new(Body::from(html));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    Ok(resp)
}

/// A file's bytes, typed as Go's `DetectContentType` types text or not.
fn send(bytes: Vec<u8>) -> Response<Body> {
    let sniffed = &bytes[..bytes.len().min(512)];
    let text = std::str::from_utf8(sniffed).is_ok()
        && !sniffed
            .iter()
            .any(|b| matches!(b, 0..=8 | 0x0b | 0x0e..=0x1a | 0x1c..=0x1f));
    let content_type = if text {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    };
    let mut resp = Response::new(Body::from(bytes));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    resp
}

/// Go's `htmlReplacer`.
fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

/// A name as a URL path (Go's `url.URL{Path: name}.String()`, roughly).
fn percent_encode_path(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    async fn get(dir: &Path, path: &str) -> (StatusCode, String, Option<String>) {
        let req = Request::get(path).body(Body::empty()).unwrap();
        let resp = serve(dir, req).await;
        let location = resp
            .headers()
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap().to_owned());
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            String::from_utf8_lossy(&body).into_owned(),
            location,
        )
    }

    #[tokio::test]
    async fn serves_the_log_dir_as_go_serves_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kube-apiserver.log"), "I1127 line\n").unwrap();
        std::fs::create_dir(dir.path().join("pods")).unwrap();
        let (status, body, _) = get(dir.path(), "/logs/").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("<pre>\n<a href=\"kube-apiserver.log\">kube-apiserver.log</a>\n<a href=\"pods/\">pods/</a>\n</pre>\n"), "{body}");
        assert_eq!(get(dir.path(), "/logs").await.2.as_deref(), Some("logs/"));
        assert_eq!(
            get(dir.path(), "/logs/pods").await.2.as_deref(),
            Some("pods/")
        );
        let (status, body, _) = get(dir.path(), "/logs/kube-apiserver.log").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "I1127 line\n"));
        assert_eq!(
            get(dir.path(), "/logs/missing").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get(dir.path(), "/logs/../etc/passwd").await.0,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(get(dir.path(), "/logsx").await.0, StatusCode::NOT_FOUND);
    }
}
