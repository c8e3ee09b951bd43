//! `/openapi/v3` and one document per group version (kube-openapi's
//! `handler3`): the index lists each document's path with the hash of its
//! content (`?hash=`), the server's own documents are built on first
//! request, those of the [`SpecSource`] (custom resources) whenever its
//! state changes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use http::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha512};

use super::{BuiltinDocuments, SpecSource};
use crate::server::GenericApiServer;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn hash(bytes: &[u8]) -> String {
    Sha512::digest(bytes)
        .iter()
        .take(32)
        .map(|b| format!("{b:02X}"))
        .collect()
}

fn json_response(body: Bytes) -> http::Response<axum::body::Body> {
    let mut resp = http::Response::new(axum::body::Body::from(body));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// Encoded documents with the hash their index entry carries.
type Documents = BTreeMap<String, (String, Bytes)>;

/// Encodes documents with their hashes.
fn encode(docs: impl IntoIterator<Item = (String, serde_json::Value)>) -> Documents {
    docs.into_iter()
        .map(|(path, doc)| {
            let body = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
            (path, (hash(&body), body))
        })
        .collect()
}

/// The source's documents, rebuilt when its state changes.
struct SourceDocs<S: SpecSource> {
    source: Arc<S>,
    built: Mutex<Option<(S::State, Arc<Documents>)>>,
}

impl<S: SpecSource> SourceDocs<S> {
    fn current(&self) -> Arc<Documents> {
        let state = self.source.state();
        let Ok(mut built) = self.built.lock() else {
            return Arc::default();
        };
        match built.as_ref() {
            Some((built_for, docs)) if S::unchanged(built_for, &state) => docs.clone(),
            _ => {
                let docs = Arc::new(encode(S::v3_documents(&state)));
                *built = Some((state, docs.clone()));
                docs
            }
        }
    }
}

fn not_found() -> http::Response<axum::body::Body> {
    let mut resp = http::Response::new(axum::body::Body::from("404 page not found\n"));
    *resp.status_mut() = StatusCode::NOT_FOUND;
    resp
}

/// The server's own documents, encoded on first use.
struct BuiltinDocs {
    build: BuiltinDocuments,
    built: OnceLock<Arc<Documents>>,
}

impl BuiltinDocs {
    /// The documents (blocking: builds them on first use).
    fn get(&self) -> Arc<Documents> {
        self.built
            .get_or_init(|| Arc::new(encode((self.build)())))
            .clone()
    }

    /// The documents, built off the async runtime.
    async fn current(self: Arc<Self>) -> Arc<Documents> {
        if let Some(docs) = self.built.get() {
            return docs.clone();
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.get())
            .await
            .unwrap_or_default()
    }
}

/// Serves `/openapi/v3` and the documents of the server's own group
/// versions (`(group, version)` in `served`, built by `build`) and of the
/// custom resources `source` gives.
pub fn install_v3<S: SpecSource>(
    server: &mut GenericApiServer,
    served: &[(String, String)],
    build: BuiltinDocuments,
    source: Arc<S>,
) {
    let mut served: Vec<String> = served.iter().map(|(g, v)| gv_path(g, v)).collect();
    served.sort();
    served.dedup();
    let builtin = Arc::new(BuiltinDocs {
        build,
        built: OnceLock::new(),
    });
    for path in served {
        let docs = builtin.clone();
        let key = path.clone();
        server.handle_path(
            &format!("/openapi/v3/{path}"),
            Arc::new(move |_req| {
                let (docs, key) = (docs.clone(), key.clone());
                Box::pin(async move {
                    let found = docs.current().await.get(&key).map(|(_, b)| b.clone());
                    found.map_or_else(not_found, json_response)
                })
            }),
        );
    }
    let custom = Arc::new(SourceDocs {
        source,
        built: Mutex::new(None),
    });
    let index_docs = custom.clone();
    server.handle_path(
        "/openapi/v3",
        Arc::new(move |_req| {
            let (builtin, custom) = (builtin.clone(), index_docs.clone());
            Box::pin(async move {
                let mut paths = BTreeMap::new();
                let builtin = builtin.current().await;
                for (path, (hash, _)) in builtin.iter().chain(custom.current().iter()) {
                    let url = format!("/openapi/v3/{path}?hash={hash}");
                    paths.insert(path.clone(), json!({ "serverRelativeURL": url }));
                }
                let body = serde_json::to_vec(&json!({ "paths": paths })).unwrap_or_default();
                json_response(Bytes::from(body))
            })
        }),
    );
    server.handle_prefix(
        "/openapi/v3/apis/",
        Arc::new(move |req| {
            let path = req.uri().path().trim_start_matches("/openapi/v3/");
            let found = custom.current().get(path).map(|(_, body)| body.clone());
            Box::pin(async move { found.map_or_else(not_found, json_response) })
        }),
    );
}
