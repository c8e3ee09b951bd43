//! OpenAPI v3 documents (`/openapi/v3` and `/openapi/v3/<group-version>`),
//! generated from the k8s-openapi type definitions. kubectl reads them to
//! learn that the server validates fields itself (the `fieldValidation`
//! parameter on PATCH operations) and for `kubectl explain`. Custom
//! resources' documents follow their CRDs (see [`CustomDocs`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use apiserver::registry::ResourceInfo;
use apiserver::server::GenericApiServer;
use bytes::Bytes;
use http::StatusCode;
use schemars::generate::SchemaSettings;
use schemars::SchemaGenerator;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};
use tokio::sync::watch;

use crate::apiextensions;
use crate::apiextensions::controller::Snapshot;

/// Produces the schema of a resource's type (registering the types it uses).
pub type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

/// One resource as the OpenAPI document describes it.
pub struct ResourceSchema {
    pub info: ResourceInfo,
    pub schema: SchemaFn,
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description,
        "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        query_param("dryRun", "When present, indicates that modifications should not be persisted."),
        query_param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
        query_param("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: Ignore, Warn (default), Strict."),
    ]
}

fn list_params() -> Vec<Value> {
    [
        "continue",
        "fieldSelector",
        "labelSelector",
        "limit",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "watch",
    ]
    .iter()
    .map(|p| query_param(p, ""))
    .collect()
}

fn operation(
    info: &ResourceInfo,
    action: &str,
    params: Vec<Value>,
    schema_ref: &str,
    body: bool,
) -> Value {
    let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let content = json!({"application/json": {"schema": {"$ref": schema_ref}}});
    let mut op = json!({
        "operationId": format!("{action}{}", info.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": content}},
    });
    if body {
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

pub(crate) fn add_paths(paths: &mut Map<String, Value>, info: &ResourceInfo, schema_ref: &str) {
    let base = format!("/{}", gv_path(&info.group, &info.version));
    let collection = if info.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", info.resource)
    } else {
        format!("{base}/{}", info.resource)
    };
    let list_ref = format!("{schema_ref}List");
    paths.insert(
        collection.clone(),
        json!({
            "get": operation(info, "list", list_params(), &list_ref, false),
            "post": operation(info, "post", write_params(), schema_ref, true),
            "delete": operation(info, "deletecollection", list_params(), schema_ref, false),
        }),
    );
    let mut patch_params = write_params();
    patch_params.push(query_param(
        "force",
        "Force is going to \"force\" Apply requests.",
    ));
    paths.insert(
        format!("{collection}/{{name}}"),
        json!({
            "get": operation(info, "get", vec![], schema_ref, false),
            "put": operation(info, "put", write_params(), schema_ref, true),
            "patch": operation(info, "patch", patch_params, schema_ref, true),
            "delete": operation(info, "delete", vec![query_param("dryRun", "")], schema_ref, false),
        }),
    );
}

/// The OpenAPI v3 document of one group version.
pub fn group_version_document(resources: &[ResourceSchema]) -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut paths = Map::new();
    let mut kinds = Vec::new();
    for r in resources {
        let schema = (r.schema)(&mut generator);
        let schema_ref = schema
            .get("$ref")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        add_paths(&mut paths, &r.info, &schema_ref);
        kinds.push((schema_ref, r.info.clone()));
    }
    let mut schemas = generator.take_definitions(true);
    for (schema_ref, info) in kinds {
        let name = schema_ref.trim_start_matches("#/components/schemas/");
        if let Some(Value::Object(schema)) = schemas.get_mut(name) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": info.group, "version": info.version, "kind": info.kind}]),
            );
            // Upstream does not mark metadata as required.
            schema.remove("required");
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
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

fn json_handler(body: Bytes) -> apiserver::server::PathHandler {
    Arc::new(move |_req| {
        let body = body.clone();
        Box::pin(async move { json_response(body) })
    })
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

/// Serves `/openapi/v3` and one document per group version: the built-in
/// ones fixed, the custom resource ones as the CRDs in `crds` say.
pub fn install(
    server: &mut GenericApiServer,
    groups: Vec<Vec<ResourceSchema>>,
    crds: watch::Receiver<Snapshot>,
) {
    let mut index = BTreeMap::new();
    for resources in groups {
        let Some(first) = resources.first() else {
            continue;
        };
        let path = gv_path(&first.info.group, &first.info.version);
        let doc = group_version_document(&resources);
        let body = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
        let url = format!("/openapi/v3/{path}?hash={}", hash(&body));
        index.insert(path.clone(), json!({"serverRelativeURL": url}));
        server.handle_path(&format!("/openapi/v3/{path}"), json_handler(body));
    }
    let custom = Arc::new(CustomDocs::new(crds));
    let index_docs = custom.clone();
    server.handle_path(
        "/openapi/v3",
        Arc::new(move |_req| {
            let mut paths = index.clone();
            for (path, (hash, _)) in index_docs.current().iter() {
                let url = format!("/openapi/v3/{path}?hash={hash}");
                paths.insert(path.clone(), json!({"serverRelativeURL": url}));
            }
            let body =
                Bytes::from(serde_json::to_vec(&json!({ "paths": paths })).unwrap_or_default());
            Box::pin(async move { json_response(body) })
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
