//! The OpenAPI documents of the built-in API (upstream's generated
//! definitions, `pkg/generated/openapi`, served through the generic
//! server's OpenAPI handlers, `apiserver::endpoints::openapi`): every
//! built-in type the served resources use ([`definitions`]), the paths of
//! the served and computed resources with their subresources
//! ([`subresources`]), and the discovery roots, with upstream's required
//! fields and (in v3) defaults from the Go declarations ([`generated`]),
//! as one Swagger 2.0 document at `/openapi/v2` and one OpenAPI v3
//! document per group version at `/openapi/v3`. kubectl reads them to
//! learn that the server validates
//! fields itself (the `fieldValidation` parameter on PATCH operations) and
//! for `kubectl explain`. Custom resources join through the
//! [`SpecSource`] the server chain passes in.

mod definitions;
mod generated;
mod subresources;

use std::collections::BTreeMap;

use apiserver::endpoints::openapi::roots::{self, Get};
use apiserver::endpoints::openapi::{self as handlers, paths, v3, Parts, SpecSource};
use apiserver::registry::ResourceInfo;
use apiserver::server::GenericApiServer;
use schemars::SchemaGenerator;
use serde_json::{json, Map, Value};

/// Produces the schema of a resource's type (registering the types it uses).
pub type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

/// One resource as the OpenAPI document describes it.
#[derive(Clone)]
pub struct ResourceSchema {
    pub info: ResourceInfo,
    pub schema: SchemaFn,
    /// Whether a delete answers with the object (its strategies'
    /// `return_deleted_object`).
    pub returns_deleted: bool,
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
fn computed_resources() -> Vec<ResourceSchema> {
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
                returns_deleted: false,
            },
        )
        .collect()
}

/// The served built-in resources of `groups` and the computed ones.
fn resources(groups: &[Vec<ResourceSchema>]) -> Vec<ResourceSchema> {
    groups
        .iter()
        .flatten()
        .cloned()
        .chain(computed_resources())
        .collect()
}

/// The definitions and paths (v2 form) of the built-in `resources` and
/// the non-resource paths.
fn build_parts(resources: &[ResourceSchema]) -> (Parts, Parts) {
    let (definitions, names) = definitions::build(resources);
    let mut paths = Map::new();
    let mut group_versions = Vec::new();
    for (r, n) in resources.iter().zip(&names) {
        let (kind, list) = (&n.kind, &n.list);
        paths::add(
            &mut paths,
            &r.info,
            kind,
            list,
            r.returns_deleted,
            subresources::paths,
        );
        let gv = (r.info.group.as_str(), r.info.version.as_str());
        if !group_versions.contains(&gv) {
            group_versions.push(gv);
        }
    }
    roots::add(&mut paths, &group_versions);
    add_service_account_issuer(&mut paths);
    paths.sort_keys();
    (definitions, paths)
}

/// The service-account issuer's OpenID documents (upstream's
/// `pkg/routes` OpenID metadata routes).
fn add_service_account_issuer(paths: &mut Parts) {
    let discovery = Get {
        id: "getServiceAccountIssuerOpenIDConfiguration".into(),
        tag: "WellKnown".into(),
        description: "get service account issuer OpenID configuration",
        consumes: None,
        produces: &["application/json"],
        schema: json!({"type": "string"}),
    };
    let keys = Get {
        id: "getServiceAccountIssuerOpenIDKeyset".into(),
        tag: "openid".into(),
        description: "get service account issuer OpenID JSON Web Key Set",
        consumes: None,
        produces: &["application/jwk-set+json"],
        schema: json!({"type": "string"}),
    };
    paths.insert(
        "/.well-known/openid-configuration/".into(),
        discovery.item(),
    );
    paths.insert("/openid/v1/jwks/".into(), keys.item());
}

/// The OpenAPI v3 documents of the built-in group versions of `groups`,
/// by path (`api/v1`, `apis/<group>/<version>`): each with its paths and
/// the schemas they use, in upstream's v3 form.
fn v3_documents(groups: &[Vec<ResourceSchema>]) -> Vec<(String, Value)> {
    let (definitions, paths) = build_parts(&resources(groups));
    let schemas: Map<String, Value> = definitions
        .iter()
        .map(|(name, def)| {
            let mut def = def.clone();
            generated::add_defaults(name, &mut def);
            (name.clone(), v3::schema(name, &def))
        })
        .collect();
    let mut by_gv: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for (path, item) in &paths {
        let mut segments = path.split('/').skip(1);
        let gv = match (segments.next(), segments.next(), segments.next()) {
            (Some("api"), Some(v), Some(_)) if !v.is_empty() => format!("api/{v}"),
            (Some("apis"), Some(g), Some(v)) if !v.is_empty() => format!("apis/{g}/{v}"),
            _ => continue,
        };
        by_gv
            .entry(gv)
            .or_default()
            .insert(path.clone(), v3::path_item(item));
    }
    by_gv
        .into_iter()
        .map(|(gv, paths)| (gv.clone(), v3::document(paths, &schemas)))
        .collect()
}

/// Serves `/openapi/v2` and `/openapi/v3` on `server` for the built-in
/// resources of `groups` (and the computed ones) with what `custom`
/// (the custom resources) adds.
pub fn install<S: SpecSource>(
    server: &mut GenericApiServer,
    groups: Vec<Vec<ResourceSchema>>,
    custom: std::sync::Arc<S>,
) {
    let served: Vec<(String, String)> = resources(&groups)
        .iter()
        .map(|r| (r.info.group.clone(), r.info.version.clone()))
        .collect();
    let v2_resources = resources(&groups);
    handlers::install_v2(
        server,
        json!({"title": "Kubernetes", "version": "v1.37.0"}),
        Box::new(move || build_parts(&v2_resources)),
        custom.clone(),
    );
    handlers::install_v3(
        server,
        &served,
        Box::new(move || v3_documents(&groups)),
        custom,
    );
}

#[cfg(test)]
mod tests;
