//! OpenAPI v3 documents (`/openapi/v3` and `/openapi/v3/<group-version>`):
//! the paths and definitions of the v2 document (see `openapi_v2`) in
//! upstream's v3 form, one document per group version with the schemas
//! its paths use, built on first request. kubectl reads them to learn
//! that the server validates fields itself (the `fieldValidation`
//! parameter on PATCH operations) and for `kubectl explain`. Custom
//! resources' documents follow their CRDs (see [`CustomDocs`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use apiserver::registry::ResourceInfo;
use apiserver::server::GenericApiServer;
use bytes::Bytes;
use http::StatusCode;
use schemars::SchemaGenerator;
use serde_json::json;
use sha2::{Digest, Sha512};
use tokio::sync::watch;

use super::openapi_v2;
use crate::apiextensions;
use crate::apiextensions::controller::Snapshot;

/// Produces the schema of a resource's type (registering the types it uses).
pub type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

/// One resource as the OpenAPI document describes it.
pub struct ResourceSchema {
    pub info: ResourceInfo,
    pub schema: SchemaFn,
}

/// A resource that is computed, never stored: its group, resource, kind,
/// scope, verbs and schema.
type Computed = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    SchemaFn,
);

const CREATE: &[&str] = &["create"];

/// The computed resources upstream serves beside the stored ones: pod
/// bindings, the review resources and component statuses.
const COMPUTED: [Computed; 8] = [
    ("", "bindings", "Binding", true, CREATE, |g| {
        g.subschema_for::<k8s_openapi::api::core::v1::Binding>()
    }),
    (
        "",
        "componentstatuses",
        "ComponentStatus",
        false,
        &["get", "list"],
        |g| g.subschema_for::<k8s_openapi::api::core::v1::ComponentStatus>(),
    ),
    (
        "authentication.k8s.io",
        "selfsubjectreviews",
        "SelfSubjectReview",
        false,
        CREATE,
        |g| g.subschema_for::<k8s_openapi::api::authentication::v1::SelfSubjectReview>(),
    ),
    (
        "authentication.k8s.io",
        "tokenreviews",
        "TokenReview",
        false,
        CREATE,
        |g| g.subschema_for::<k8s_openapi::api::authentication::v1::TokenReview>(),
    ),
    (
        "authorization.k8s.io",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        true,
        CREATE,
        |g| g.subschema_for::<k8s_openapi::api::authorization::v1::LocalSubjectAccessReview>(),
    ),
    (
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
        CREATE,
        |g| g.subschema_for::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(),
    ),
    (
        "authorization.k8s.io",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        false,
        CREATE,
        |g| g.subschema_for::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>(),
    ),
    (
        "authorization.k8s.io",
        "subjectaccessreviews",
        "SubjectAccessReview",
        false,
        CREATE,
        |g| g.subschema_for::<k8s_openapi::api::authorization::v1::SubjectAccessReview>(),
    ),
];

/// The computed resources, as the documents describe them.
pub(crate) fn computed_resources() -> Vec<ResourceSchema> {
    COMPUTED
        .iter()
        .map(
            |&(group, resource, kind, namespaced, verbs, schema)| ResourceSchema {
                info: ResourceInfo {
                    group: group.into(),
                    version: "v1".into(),
                    resource: resource.into(),
                    singular: kind.to_lowercase(),
                    kind: kind.into(),
                    list_kind: format!("{kind}List"),
                    namespaced,
                    short_names: Vec::new(),
                    categories: Vec::new(),
                    verbs: verbs.iter().map(|v| v.to_string()).collect(),
                    has_status: false,
                    has_scale: false,
                    storage_root: resource.into(),
                },
                schema,
            },
        )
        .collect()
}

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

/// The custom resource documents, rebuilt when the CRDs change.
struct CustomDocs {
    crds: watch::Receiver<Snapshot>,
    built: Mutex<(Snapshot, Arc<Documents>)>,
}

impl CustomDocs {
    fn new(crds: watch::Receiver<Snapshot>) -> Self {
        CustomDocs {
            crds,
            built: Mutex::new((Snapshot::default(), Arc::default())),
        }
    }

    fn current(&self) -> Arc<Documents> {
        let snapshot = self.crds.borrow().clone();
        let Ok(mut built) = self.built.lock() else {
            return Arc::default();
        };
        if !Arc::ptr_eq(&built.0, &snapshot) {
            let docs = apiextensions::openapi::documents(&snapshot)
                .into_iter()
                .map(|(path, doc)| {
                    let body = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
                    (path, (hash(&body), body))
                })
                .collect();
            *built = (snapshot, Arc::new(docs));
        }
        built.1.clone()
    }
}

fn not_found() -> http::Response<axum::body::Body> {
    let mut resp = http::Response::new(axum::body::Body::from("404 page not found\n"));
    *resp.status_mut() = StatusCode::NOT_FOUND;
    resp
}

/// The built-in documents, encoded on first use.
struct BuiltinDocs {
    groups: Vec<Vec<ResourceSchema>>,
    built: OnceLock<Arc<Documents>>,
}

impl BuiltinDocs {
    /// The documents (blocking: builds them on first use).
    fn get(&self) -> Arc<Documents> {
        self.built
            .get_or_init(|| {
                let docs = openapi_v2::v3_documents(&self.groups)
                    .into_iter()
                    .map(|(path, doc)| {
                        let body = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
                        (path, (hash(&body), body))
                    })
                    .collect();
                Arc::new(docs)
            })
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

/// Serves `/openapi/v3` and one document per group version: the built-in
/// ones fixed, the custom resource ones as the CRDs in `crds` say.
pub fn install(
    server: &mut GenericApiServer,
    groups: Vec<Vec<ResourceSchema>>,
    crds: watch::Receiver<Snapshot>,
) {
    let mut served: Vec<String> = groups
        .iter()
        .filter_map(|g| g.first())
        .chain(&computed_resources())
        .map(|r| gv_path(&r.info.group, &r.info.version))
        .collect();
    served.sort();
    served.dedup();
    let builtin = Arc::new(BuiltinDocs {
        groups,
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
    let custom = Arc::new(CustomDocs::new(crds));
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
