//! The non-resource paths one server answers: upstream's NonGoRestfulMux
//! (exact paths and prefixes) together with the resource-less go-restful
//! web services (`/version`, the service-account issuer documents), which
//! go-restful routes with trailing slashes trimmed.

use std::collections::{HashMap, HashSet};

use super::PathHandler;

#[derive(Clone, Default)]
pub struct Paths {
    exact: HashMap<String, PathHandler>,
    /// Exact paths that also answer with trailing slashes.
    restful: HashSet<String>,
    /// Exact paths the `/` index leaves out.
    unlisted: HashSet<String>,
    /// Handlers of every path below a prefix (after exact paths).
    prefixes: Vec<(String, PathHandler)>,
}

impl Paths {
    pub fn handle(&mut self, path: &str, handler: PathHandler) {
        self.restful.remove(path);
        self.unlisted.remove(path);
        self.exact.insert(path.to_owned(), handler);
    }

    /// Like [`Paths::handle`], but the path is left out of the `/` index
    /// (upstream's `UnlistedHandle`).
    pub fn handle_unlisted(&mut self, path: &str, handler: PathHandler) {
        self.handle(path, handler);
        self.unlisted.insert(path.to_owned());
    }

    /// Like [`Paths::handle`], but `path/` (any number of slashes) is
    /// served too, without being listed.
    pub fn handle_restful(&mut self, path: &str, handler: PathHandler) {
        self.exact.insert(path.to_owned(), handler);
        self.restful.insert(path.to_owned());
    }

    pub fn handle_prefix(&mut self, prefix: &str, handler: PathHandler) {
        self.prefixes.push((prefix.to_owned(), handler));
    }

    /// The paths the `/` index lists.
    pub fn listed(&self) -> impl Iterator<Item = &String> {
        self.exact
            .keys()
            .filter(|path| !self.unlisted.contains(*path))
    }

    /// The handler of `path`: its exact one, that of a restful path it is
    /// with trailing slashes, else the first prefix it starts with.
    pub fn find(&self, path: &str) -> Option<&PathHandler> {
        if let Some(handler) = self.exact.get(path) {
            return Some(handler);
        }
        let trimmed = path.trim_end_matches('/');
        if trimmed.len() < path.len() && self.restful.contains(trimmed) {
            return self.exact.get(trimmed);
        }
        self.prefixes
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, handler)| handler)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use http::{Response, StatusCode};

    use super::*;

    fn answering(status: StatusCode) -> PathHandler {
        Arc::new(move |_req| {
            Box::pin(async move {
                let mut resp = Response::new(Body::empty());
                *resp.status_mut() = status;
                resp
            })
        })
    }

    async fn status(paths: &Paths, path: &str) -> Option<StatusCode> {
        let handler = paths.find(path)?;
        let req = http::Request::get(path).body(Body::empty()).unwrap();
        Some(handler(req).await.status())
    }

    fn paths() -> Paths {
        let mut paths = Paths::default();
        paths.handle_restful("/version", answering(StatusCode::OK));
        paths.handle("/healthz", answering(StatusCode::ACCEPTED));
        paths.handle_prefix("/openapi/v3/apis/", answering(StatusCode::CREATED));
        paths
    }

    #[tokio::test]
    async fn restful_paths_answer_with_trailing_slashes() {
        let paths = paths();
        for path in ["/version", "/version/", "/version//"] {
            assert_eq!(status(&paths, path).await, Some(StatusCode::OK), "{path}");
        }
        // Only trailing slashes are trimmed, as go-restful's router does.
        for path in ["//version", "/version/x", "/versions", "/"] {
            assert!(paths.find(path).is_none(), "{path}");
        }
    }

    #[tokio::test]
    async fn other_paths_are_exact_or_prefixes() {
        let paths = paths();
        assert_eq!(status(&paths, "/healthz").await, Some(StatusCode::ACCEPTED));
        assert!(paths.find("/healthz/").is_none());
        assert_eq!(
            status(&paths, "/openapi/v3/apis/x/v1").await,
            Some(StatusCode::CREATED)
        );
        assert!(paths.find("/openapi/v3/apis").is_none());
    }

    #[test]
    fn slash_forms_are_not_listed() {
        let mut listed: Vec<_> = paths().listed().cloned().collect();
        listed.sort();
        assert_eq!(listed, ["/healthz", "/version"]);
    }

    #[tokio::test]
    async fn unlisted_paths_are_served_but_not_listed() {
        let mut paths = paths();
        paths.handle_unlisted("/debug/pprof", answering(StatusCode::FOUND));
        assert_eq!(
            status(&paths, "/debug/pprof").await,
            Some(StatusCode::FOUND)
        );
        let mut listed: Vec<_> = paths.listed().cloned().collect();
        listed.sort();
        assert_eq!(listed, ["/healthz", "/version"]);
    }

    #[test]
    fn a_plain_registration_replaces_a_restful_one() {
        let mut paths = paths();
        paths.handle("/version", answering(StatusCode::OK));
        assert!(paths.find("/version/").is_none());
    }
}
