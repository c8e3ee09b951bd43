//! The `definitions` of the Swagger 2.0 document: every built-in type the
//! served resources use, by upstream's definition names, from the
//! k8s-openapi schemas (descriptions, types, formats) with the list kinds
//! added, the types OpenAPI v2 cannot spell rewritten as upstream publishes
//! them, and the merge metadata of the structured-merge tables
//! (`x-kubernetes-patch-strategy`, `-patch-merge-key`, `-list-type`,
//! `-list-map-keys`, `-map-type`) and the group-version-kinds attached.

use std::collections::BTreeMap;

use apiserver::endpoints::openapi::v3::strip_v3;
use apiserver::endpoints::openapi::{DELETE_OPTIONS, PREFIX, SCALE, STATUS, WATCH_EVENT};
use apiserver::registry::ResourceInfo;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::Binding;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResourceList, APIVersions, DeleteOptions, ListMeta, Patch, Status,
    WatchEvent,
};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::version::Info;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};
use structured_merge::schema::{FieldDef, ListKind, TypeDef, TypeRef};

use super::ResourceSchema as Resource;
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const CORE_EVENT: &str = "io.k8s.api.core.v1.Event";

/// The meta kinds served as themselves (discovery documents, Status).
const META_KINDS: [(&str, &str); 5] = [
    ("APIGroup", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup"),
    (
        "APIGroupList",
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
    ),
    (
        "APIResourceList",
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    ),
    (
        "APIVersions",
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
    ),
    ("Status", STATUS),
];

/// Upstream's `+union` markers: the definition, its discriminator field
/// (if any) and the union's members with their discriminator values.
type Union = (
    &'static str,
    Option<&'static str>,
    &'static [(&'static str, &'static str)],
);
const UNIONS: [Union; 6] = [
    (
        "io.k8s.api.core.v1.AppArmorProfile",
        Some("type"),
        &[("localhostProfile", "LocalhostProfile")],
    ),
    (
        "io.k8s.api.core.v1.PodSchedulingGroup",
        None,
        &[("podGroupName", "PodGroupName")],
    ),
    (
        "io.k8s.api.core.v1.SeccompProfile",
        Some("type"),
        &[("localhostProfile", "LocalhostProfile")],
    ),
    (
        "io.k8s.api.flowcontrol.v1.LimitResponse",
        Some("type"),
        &[("queuing", "Queuing")],
    ),
    (
        "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec",
        Some("type"),
        &[("exempt", "Exempt"), ("limited", "Limited")],
    ),
    (
        "io.k8s.api.flowcontrol.v1.Subject",
        Some("kind"),
        &[
            ("group", "Group"),
            ("serviceAccount", "ServiceAccount"),
            ("user", "User"),
        ],
    ),
];

/// Lists of types outside the structured-merge tables that upstream marks
/// `+listType=atomic`.
const ATOMIC_LISTS: [(&str, &str); 9] = [
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
        "serverAddressByClientCIDRs",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "versions"),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
        "groups",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource",
        "categories",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource",
        "shortNames",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        "resources",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "serverAddressByClientCIDRs",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "versions",
    ),
    (
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec",
        "caBundle",
    ),
];

/// Fields upstream marks `+mapType=granular` explicitly.
const GRANULAR: [(&str, &str); 2] = [
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "allocatedResourceStatuses",
    ),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef"),
];

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
    generator.subschema_for::<Binding>();
    generator.subschema_for::<Eviction>();
    generator.subschema_for::<TokenRequest>();
    generator.subschema_for::<Info>();
    let mut defs = generator.take_definitions(false);
    for (r, n) in resources.iter().zip(&names) {
        if lists(&r.info) {
            defs.insert(n.list.clone(), list_definition(&r.info, &n.kind));
        }
    }
    for (name, schema) in defs.iter_mut() {
        to_v2(name, schema);
        add_merge_metadata(name, schema);
        add_upstream_markers(name, schema);
    }
    set_required(&mut defs);
    add_group_version_kinds(&mut defs, resources, &names);
    defs.sort_keys();
    (defs, names)
}

/// Whether a resource is listed (create-only ones have no list kind).
fn lists(info: &ResourceInfo) -> bool {
    info.verbs.iter().any(|v| v == "list")
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
    // Upstream's list kinds say nothing of their items' list type.
    let list_kind = name.ends_with("List");
    for field in &def.fields {
        if list_kind && field.name == "items" {
            continue;
        }
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

/// The markers of upstream's Go types that the structured-merge tables
/// do not carry: unions, explicitly granular maps and the atomic lists of
/// the types outside them.
fn add_upstream_markers(name: &str, schema: &mut Value) {
    for (def, discriminator, members) in UNIONS {
        if def != name {
            continue;
        }
        let mut union = json!({
            "fields-to-discriminateBy": members.iter().map(|(f, v)| (f.to_string(), json!(v))).collect::<Map<_, _>>(),
        });
        if let Some(d) = discriminator {
            union["discriminator"] = d.into();
        }
        schema["x-kubernetes-unions"] = json!([union]);
    }
    let marked = GRANULAR
        .iter()
        .map(|f| (f, "x-kubernetes-map-type", "granular"))
        .chain(
            ATOMIC_LISTS
                .iter()
                .map(|f| (f, "x-kubernetes-list-type", "atomic")),
        );
    for ((def, field), key, value) in marked {
        if *def == name {
            if let Some(prop) = schema.pointer_mut(&format!("/properties/{field}")) {
                prop[key] = value.into();
            }
        }
    }
}

/// Upstream's `required` lists, from the Go declarations where the
/// generated table has the type; elsewhere k8s-openapi's, less the
/// `metadata` it requires of every object (upstream: only the core
/// Event's).
fn set_required(defs: &mut Map<String, Value>) {
    for (name, def) in defs.iter_mut() {
        if super::generated::set_required(name, def) || name == CORE_EVENT {
            continue;
        }
        let Some(required) = def.get_mut("required").and_then(Value::as_array_mut) else {
            continue;
        };
        required.retain(|field| field != "metadata");
        if required.is_empty() {
            if let Some(def) = def.as_object_mut() {
                def.remove("required");
            }
        }
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
        if lists(&r.info) {
            kinds
                .entry(&n.list)
                .or_default()
                .push(gvk(g, v, &r.info.list_kind));
        }
        if !group_versions.contains(&(g, v)) {
            group_versions.push((g, v));
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
    for (kind, def) in META_KINDS {
        kinds.entry(def).or_default().push(gvk("", "v1", kind));
    }
    for (g, v, kind, def) in super::subresources::KINDS {
        kinds.entry(def).or_default().push(gvk(g, v, kind));
    }
    kinds
        .entry(SCALE)
        .or_default()
        .push(gvk("autoscaling", "v1", "Scale"));
    for (name, mut list) in kinds {
        let Some(Value::Object(def)) = defs.get_mut(name) else {
            continue;
        };
        // A kind served twice (bindings and pods/binding) is listed once.
        let mut seen = Vec::with_capacity(list.len());
        list.retain(|gvk| {
            let new = !seen.contains(gvk);
            if new {
                seen.push(gvk.clone());
            }
            new
        });
        def.insert("x-kubernetes-group-version-kind".into(), Value::Array(list));
    }
}
