//! The `definitions` of the Swagger 2.0 document: every built-in type the
//! served resources use, by upstream's definition names, from the
//! k8s-openapi schemas (descriptions, types, formats) with the list kinds
//! added, the types OpenAPI v2 cannot spell rewritten as upstream publishes
//! them, and the merge metadata of the structured-merge tables
//! (`x-kubernetes-patch-strategy`, `-patch-merge-key`, `-list-type`,
//! `-list-map-keys`, `-map-type`) and the group-version-kinds attached.

use std::collections::BTreeMap;

use apiserver::registry::ResourceInfo;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResourceList, APIVersions, DeleteOptions, ListMeta, Patch, Status,
    WatchEvent,
};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};
use structured_merge::schema::{FieldDef, ListKind, TypeDef, TypeRef};

use super::Resource;

pub(super) const PREFIX: &str = "#/definitions/";
pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(super) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(super) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// Keywords of OpenAPI v3 that v2 has no place for.
const V3_ONLY: [&str; 5] = ["oneOf", "anyOf", "allOf", "not", "nullable"];

/// A resource's kind and list kind definition names.
pub(super) struct Names {
    pub kind: String,
    pub list: String,
}

/// The definitions and, in `resources` order, each resource's names.
pub(super) fn build(resources: &[Resource]) -> (Map<String, Value>, Vec<Names>) {
    let mut generator = SchemaSettings::openapi3()
        .with(|s| {
            s.definitions_path = "/definitions".into();
            s.meta_schema = None;
            s.transforms = Vec::new();
        })
        .into_generator();
    let mut names = Vec::with_capacity(resources.len());
    for r in resources {
        let schema = (r.schema)(&mut generator);
        let kind = schema
            .get("$ref")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim_start_matches(PREFIX)
            .to_owned();
        let list =
            structured_merge::builtin::root(&r.info.group, &r.info.version, &r.info.list_kind)
                .map_or_else(|| sibling(&kind, &r.info.list_kind), str::to_owned);
        names.push(Names { kind, list });
    }
    generator.subschema_for::<ListMeta>();
    generator.subschema_for::<DeleteOptions>();
    generator.subschema_for::<Status>();
    generator.subschema_for::<WatchEvent<RawExtension>>();
    generator.subschema_for::<Patch>();
    generator.subschema_for::<Scale>();
    generator.subschema_for::<APIGroup>();
    generator.subschema_for::<APIGroupList>();
    generator.subschema_for::<APIResourceList>();
    generator.subschema_for::<APIVersions>();
    let mut defs = generator.take_definitions(false);
    for (r, n) in resources.iter().zip(&names) {
        defs.insert(n.list.clone(), list_definition(&r.info, &n.kind));
    }
    for (name, schema) in defs.iter_mut() {
        to_v2(name, schema);
        add_merge_metadata(name, schema);
    }
    add_group_version_kinds(&mut defs, resources, &names);
    defs.sort_keys();
    (defs, names)
}

/// `io.k8s.api.core.v1.Pod` + `PodList` → `io.k8s.api.core.v1.PodList`.
fn sibling(name: &str, kind: &str) -> String {
    match name.rsplit_once('.') {
        Some((package, _)) => format!("{package}.{kind}"),
        None => kind.to_owned(),
    }
}

fn list_definition(info: &ResourceInfo, kind: &str) -> Value {
    json!({
        "description": format!("{} is a list of {} objects.", info.list_kind, info.kind),
        "type": "object",
        "properties": {
            "apiVersion": {"description": "The versioned schema of this representation of an object.", "type": "string"},
            "items": {
                "description": format!("The {}.", info.resource),
                "type": "array",
                "items": {"$ref": format!("{PREFIX}{kind}")},
            },
            "kind": {"description": "The REST resource this object represents.", "type": "string"},
            "metadata": {"$ref": format!("{PREFIX}{LIST_META}"), "description": "Standard list metadata."},
        },
        "required": ["items"],
    })
}

/// Rewrites what OpenAPI v2 cannot express the way upstream's v2
/// document does: int-or-string and quantities are strings, the
/// apiextensions "one of" types are untyped.
pub(super) fn to_v2(name: &str, schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    match name {
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
            map.remove("x-kubernetes-int-or-string");
            map.insert("type".into(), "string".into());
            map.insert("format".into(), "int-or-string".into());
        }
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            map.remove("x-kubernetes-int-or-string");
            map.insert("type".into(), "string".into());
        }
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON" => {
            map.remove("type");
        }
        _ => {}
    }
    strip_v3(schema);
}

/// Drops the v3-only keywords everywhere below `schema`; a nullable
/// schema loses its type (v2 cannot say "or null"), as upstream's
/// conversion of CRD schemas does.
pub(super) fn strip_v3(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
    for key in V3_ONLY {
        map.remove(key);
    }
    let int_or_string = map
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    let untyped_array = map.get("type").and_then(Value::as_str) == Some("array")
        && !map.get("items").is_some_and(Value::is_object);
    if nullable || int_or_string || untyped_array {
        map.remove("type");
        map.remove("items");
    }
    if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(strip_v3);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            strip_v3(child);
        }
    }
}

fn add_merge_metadata(name: &str, schema: &mut Value) {
    let Some(TypeDef::Struct(def)) = structured_merge::builtin::schema().get(name) else {
        return;
    };
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if def.atomic {
        map.insert("x-kubernetes-map-type".into(), "atomic".into());
    }
    let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for field in &def.fields {
        if let Some(Value::Object(prop)) = props.get_mut(&field.name) {
            field_extensions(field, prop);
        }
    }
}

/// The extensions upstream's generator derives from a field's Go tags.
fn field_extensions(field: &FieldDef, prop: &mut Map<String, Value>) {
    let patch = &field.patch;
    let strategy: Vec<&str> = [
        (patch.merge, "merge"),
        (patch.retain_keys, "retainKeys"),
        (patch.replace, "replace"),
    ]
    .into_iter()
    .filter_map(|(set, word)| set.then_some(word))
    .collect();
    if !strategy.is_empty() {
        prop.insert(
            "x-kubernetes-patch-strategy".into(),
            strategy.join(",").into(),
        );
    }
    if let Some(key) = &patch.merge_key {
        prop.insert("x-kubernetes-patch-merge-key".into(), key.as_str().into());
    }
    // Named types carry their own (struct) metadata on their definition.
    let TypeRef::Inline(def) = &field.ty else {
        return;
    };
    match def.as_ref() {
        TypeDef::List(list) => {
            let kind = match &list.kind {
                ListKind::Atomic => "atomic",
                ListKind::Set => "set",
                ListKind::Map { keys } => {
                    prop.insert("x-kubernetes-list-map-keys".into(), json!(keys));
                    "map"
                }
            };
            prop.insert("x-kubernetes-list-type".into(), kind.into());
        }
        TypeDef::Map(map) if map.atomic => {
            prop.insert("x-kubernetes-map-type".into(), "atomic".into());
        }
        _ => {}
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// `x-kubernetes-group-version-kind` on the definitions of the served
/// kinds, their lists, and the shared kinds every group version uses.
fn add_group_version_kinds(defs: &mut Map<String, Value>, resources: &[Resource], names: &[Names]) {
    let mut kinds: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut group_versions: Vec<(&str, &str)> = Vec::new();
    for (r, n) in resources.iter().zip(names) {
        let (g, v) = (r.info.group.as_str(), r.info.version.as_str());
        kinds
            .entry(&n.kind)
            .or_default()
            .push(gvk(g, v, &r.info.kind));
        kinds
            .entry(&n.list)
            .or_default()
            .push(gvk(g, v, &r.info.list_kind));
        if !group_versions.contains(&(g, v)) {
            group_versions.push((g, v));
        }
    }
    for n in names {
        // k8s-openapi requires a resource's metadata (and some specs);
        // upstream's definitions of the served kinds require nothing.
        if let Some(Value::Object(def)) = defs.get_mut(&n.kind) {
            def.remove("required");
        }
    }
    for (g, v) in group_versions {
        kinds
            .entry(DELETE_OPTIONS)
            .or_default()
            .push(gvk(g, v, "DeleteOptions"));
        kinds
            .entry(WATCH_EVENT)
            .or_default()
            .push(gvk(g, v, "WatchEvent"));
    }
    kinds
        .entry(STATUS)
        .or_default()
        .push(gvk("", "v1", "Status"));
    kinds
        .entry(SCALE)
        .or_default()
        .push(gvk("autoscaling", "v1", "Scale"));
    for (name, list) in kinds {
        let Some(Value::Object(def)) = defs.get_mut(name) else {
            continue;
        };
        def.insert("x-kubernetes-group-version-kind".into(), Value::Array(list));
    }
}
