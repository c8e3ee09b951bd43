//! `/debug/flags` (upstream's `routes.DebugFlags` with
//! `StringFlagPutHandler(logs.GlogSetter)`): `PUT /debug/flags/v` with the
//! new level as its body changes the log verbosity at run time and
//! answers `successfully set klog.logging.verbosity to 5`; other methods
//! answer 406. `/debug/flags` and anything else below it answer an HTML
//! index of the settable flags. The paths are unlisted, as upstream's.

use std::sync::Arc;

use axum::body::Body;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;

use super::plain_text;
use super::PathRecorder;
use crate::endpoints::response::not_found;

const INDEX: &str = "<html>\n<head>\n<title>/debug/flags/</title>\n</head>\n<body>\n\
/debug/flags/<br>\n<br>\nflags:<br>\n<table>\n\n<tr>v<br>\n\n</table>\n<br>\n\
full flags configurable<br>\n</body>\n</html>\n";

/// Serves `/debug/flags` and `/debug/flags/v` on `server`.
pub fn install(server: &mut impl PathRecorder) {
    server.unlisted_handle_prefix(
        "/debug/flags",
        Arc::new(|req| Box::pin(async move { serve(req).await })),
    );
}

async fn serve(req: Request<Body>) -> Response<Body> {
    match req.uri().path() {
        "/debug/flags/v" => set_verbosity(req).await,
        "/debug/flags" => index(),
        path if path.starts_with("/debug/flags/") => index(),
        _ => not_found(),
    }
}

fn index() -> Response<Body> {
    let mut resp = Response::new(Body::from(INDEX));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

async fn set_verbosity(req: Request<Body>) -> Response<Body> {
    if req.method() != Method::PUT {
        return plain_text(StatusCode::NOT_ACCEPTABLE, "unsupported http method");
    }
    let body = match req.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            let text = format!("error reading request body: {e}");
            return plain_text(StatusCode::BAD_REQUEST, &text);
        }
    };
    match component_base::logs::glog_setter(&String::from_utf8_lossy(&body)) {
        Ok(text) => plain_text(StatusCode::OK, &text),
        Err(text) => plain_text(StatusCode::BAD_REQUEST, &text),
    }
}
