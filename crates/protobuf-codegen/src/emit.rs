//! Joins the parsed `k8s-pb` messages with their `k8s-openapi` twins and
//! renders the schema tables as Rust source.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write;

use crate::openapi::OaStruct;
use crate::pb::{PbField, PbMessage, PbType};

const META: &str = "apimachinery::pkg::apis::meta::v1";

/// Kinds of `meta.k8s.io/v1` that are encoded although k8s-openapi has no
/// resource for them.
const META_KINDS: &[&str] = &[
    "APIGroup",
    "APIGroupList",
    "APIResourceList",
    "APIVersions",
    "CreateOptions",
    "DeleteOptions",
    "GetOptions",
    "List",
    "ListOptions",
    "PartialObjectMetadata",
    "PartialObjectMetadataList",
    "PatchOptions",
    "Status",
    "UpdateOptions",
    "WatchEvent",
];

/// Fields upstream serializes without `omitempty` in messages k8s-openapi
/// does not model (so we cannot learn it from there).
const REQUIRED_WITHOUT_TWIN: &[(&str, &str)] = &[
    ("Table", "columnDefinitions"),
    ("Table", "rows"),
    ("TableColumnDefinition", "name"),
    ("TableColumnDefinition", "type"),
    ("TableColumnDefinition", "format"),
    ("TableColumnDefinition", "description"),
    ("TableColumnDefinition", "priority"),
    ("TableRow", "cells"),
    ("TableRowCondition", "type"),
    ("TableRowCondition", "status"),
    ("List", "items"),
];

/// Optional string fields whose empty value means something different from
/// absence (Go `*string` where `""` is a valid setting).
const KEEP_EMPTY: &[(&str, &str)] = &[
    ("PersistentVolumeClaimSpec", "storageClassName"),
    ("PersistentVolumeClaimSpec", "volumeAttributesClassName"),
];

/// Field names k8s-openapi spells differently from prost.
const ALIASES: &[(&str, &str)] = &[("ref_path", "ref")];

fn special(key: &str) -> &'static str {
    let name = key.rsplit("::").next().unwrap_or(key);
    match (key, name) {
        (_, "Time") if key.starts_with(META) => "Time",
        (_, "MicroTime") if key.starts_with(META) => "MicroTime",
        ("apimachinery::pkg::util::intstr::IntOrString", _) => "IntOrString",
        ("apimachinery::pkg::api::resource::Quantity", _) => "Quantity",
        ("apimachinery::pkg::runtime::RawExtension", _) => "RawJson",
        (_, "FieldsV1") if key.starts_with(META) => "RawJson",
        (_, "Json") if key.starts_with("apiextensions_apiserver") => "RawJson",
        (_, "JsonSchemaPropsOrArray") => "SchemaOrArray",
        (_, "JsonSchemaPropsOrBool") => "SchemaOrBool",
        (_, "JsonSchemaPropsOrStringArray") => "SchemaOrStringArray",
        (_, "ExtraValue") | (_, "Verbs") => "StringList",
        _ => "None",
    }
}

struct Kind {
    api_version: String,
    kind: String,
    message: String,
}

/// Returns the generated source and a human-readable report of mismatches.
pub fn generate(
    pb: &BTreeMap<String, PbMessage>,
    oa: &BTreeMap<String, OaStruct>,
) -> (String, String) {
    let mut report = String::new();
    let lower: BTreeMap<String, &PbMessage> =
        pb.values().map(|m| (lower_key(&m.key()), m)).collect();
    let kinds = collect_kinds(&lower, oa, &mut report);
    let order = closure(pb, &kinds);
    let index: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let json_names: BTreeMap<String, String> = oa
        .values()
        .flat_map(|s| &s.fields)
        .map(|f| (f.name.replace('_', ""), f.json.clone()))
        .collect();

    let mut code = String::from(HEADER);
    let _ = writeln!(
        code,
        "pub(crate) static MESSAGES: [MessageDesc; {}] = [",
        order.len()
    );
    for key in &order {
        let msg = &pb[key];
        let twin = oa.get(&lower_key(key));
        let fields = join_fields(pb, msg, twin, &json_names, &mut report);
        let _ = writeln!(code, "    // {key}");
        let _ = writeln!(
            code,
            "    MessageDesc {{ name: {:?}, special: Special::{}, fields: &[",
            twin.map_or(msg.name.as_str(), |t| t.name.as_str()),
            special(key)
        );
        for j in fields {
            let keep = KEEP_EMPTY.contains(&(msg.name.as_str(), j.json.as_str()));
            let _ = writeln!(
                code,
                "        FieldDesc {{ json: {:?}, tag: {}, ty: {}, shape: Shape::{:?}, required: {}, keep_empty: {keep}, inline: {} }},",
                j.json,
                j.field.tag,
                ty(&j.field.ty, &index),
                j.field.shape,
                j.required,
                j.inline
            );
        }
        let _ = writeln!(code, "    ] }},");
    }
    code.push_str("];\n\n");
    let _ = writeln!(
        code,
        "pub(crate) static KINDS: [KindDesc; {}] = [",
        kinds.len()
    );
    for k in &kinds {
        let _ = writeln!(
            code,
            "    KindDesc {{ api_version: {:?}, kind: {:?}, message: {} }},",
            k.api_version,
            k.kind,
            index[k.message.as_str()]
        );
    }
    code.push_str("];\n");
    (code, report)
}

const HEADER: &str = "// @generated by `cargo run -p protobuf-codegen` from the k8s-pb and k8s-openapi sources; do not edit.\n\
//! Protobuf schema tables of the built-in Kubernetes types (generated).\n\n\
use crate::schema::{FieldDesc, KindDesc, MessageDesc, Shape, Special, Ty};\n\n";

fn lower_key(key: &str) -> String {
    match key.rsplit_once("::") {
        Some((m, n)) => format!("{m}::{}", n.to_lowercase()),
        None => key.to_lowercase(),
    }
}

fn collect_kinds(
    lower: &BTreeMap<String, &PbMessage>,
    oa: &BTreeMap<String, OaStruct>,
    report: &mut String,
) -> Vec<Kind> {
    let mut kinds = Vec::new();
    for (key, s) in oa {
        let Some((api_version, kind)) = &s.resource else {
            continue;
        };
        let module = key.rsplit_once("::").map_or("", |(m, _)| m);
        let Some(msg) = lower.get(key) else {
            let _ = writeln!(report, "resource {api_version} {kind}: no protobuf message");
            continue;
        };
        kinds.push(Kind {
            api_version: api_version.clone(),
            kind: kind.clone(),
            message: msg.key(),
        });
        if let Some(list) = &s.list_kind {
            match lower.get(&format!("{module}::{}", list.to_lowercase())) {
                Some(m) => kinds.push(Kind {
                    api_version: api_version.clone(),
                    kind: list.clone(),
                    message: m.key(),
                }),
                None => {
                    let _ = writeln!(report, "list {api_version} {list}: no protobuf message");
                }
            }
        }
    }
    for kind in META_KINDS {
        match lower.get(&format!("{META}::{}", kind.to_lowercase())) {
            Some(m) => kinds.push(Kind {
                api_version: "meta.k8s.io/v1".into(),
                kind: (*kind).into(),
                message: m.key(),
            }),
            None => {
                let _ = writeln!(report, "meta kind {kind}: no protobuf message");
            }
        }
    }
    kinds.sort_by(|a, b| (&a.api_version, &a.kind).cmp(&(&b.api_version, &b.kind)));
    kinds.dedup_by(|a, b| a.api_version == b.api_version && a.kind == b.kind);
    kinds
}

/// Every message reachable from the kinds, in a stable breadth-first order.
fn closure(pb: &BTreeMap<String, PbMessage>, kinds: &[Kind]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    let mut queue: VecDeque<String> = kinds.iter().map(|k| k.message.clone()).collect();
    while let Some(key) = queue.pop_front() {
        if !seen.insert(key.clone()) {
            continue;
        }
        let Some(msg) = pb.get(&key) else { continue };
        order.push(key);
        for f in &msg.fields {
            if let PbType::Message(m) = &f.ty {
                queue.push_back(m.clone());
            }
        }
    }
    order
}

/// One field of a generated message.
struct Joined<'a> {
    json: String,
    field: &'a PbField,
    required: bool,
    /// A Go embedded struct: its fields sit directly in this JSON object.
    inline: bool,
}

/// The fields of one message, in k8s-openapi's serialization order when it
/// models the type. Messages it does not model take JSON names from
/// `json_names` (k8s-openapi's Rust names are derived from the JSON names,
/// so one name maps to one spelling everywhere).
fn join_fields<'a>(
    pb: &BTreeMap<String, PbMessage>,
    msg: &'a PbMessage,
    twin: Option<&OaStruct>,
    json_names: &BTreeMap<String, String>,
    report: &mut String,
) -> Vec<Joined<'a>> {
    let Some(twin) = twin else {
        return msg
            .fields
            .iter()
            .map(|f| {
                let json = json_names
                    .get(&f.name.replace('_', ""))
                    .cloned()
                    .unwrap_or_else(|| camel(&f.name));
                let required = REQUIRED_WITHOUT_TWIN.contains(&(msg.name.as_str(), json.as_str()))
                    || (msg.name.ends_with("List") && (json == "items" || json == "metadata"));
                Joined {
                    json,
                    field: f,
                    required,
                    inline: false,
                }
            })
            .collect();
    };
    let mut used = BTreeSet::new();
    let mut out = Vec::new();
    let mut leftover = BTreeSet::new();
    for of in &twin.fields {
        let pb_name = ALIASES
            .iter()
            .find(|(a, _)| *a == of.name)
            .map_or(of.name.as_str(), |(_, p)| p);
        let flat = pb_name.replace('_', "");
        match msg.fields.iter().find(|f| f.name.replace('_', "") == flat) {
            Some(f) => {
                used.insert(f.tag);
                out.push(Joined {
                    json: of.json.clone(),
                    field: f,
                    required: of.required,
                    inline: false,
                });
            }
            None if of.json == "apiVersion" || of.json == "kind" => {}
            None => {
                leftover.insert(flat);
            }
        }
    }
    for f in msg.fields.iter().filter(|f| !used.contains(&f.tag)) {
        let embeds = match &f.ty {
            PbType::Message(m) => pb.get(m).is_some_and(|t| {
                t.fields
                    .iter()
                    .any(|tf| leftover.remove(&tf.name.replace('_', "")))
            }),
            _ => false,
        };
        if embeds {
            out.push(Joined {
                json: String::new(),
                field: f,
                required: false,
                inline: true,
            });
        } else {
            let _ = writeln!(
                report,
                "{}::{}.{}: not in k8s-openapi, dropped",
                msg.module, msg.name, f.name
            );
        }
    }
    for name in leftover {
        let _ = writeln!(
            report,
            "{}::{}.{name}: not in protobuf",
            msg.module, msg.name
        );
    }
    out
}

fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn ty(t: &PbType, index: &BTreeMap<&str, usize>) -> String {
    match t {
        PbType::String => "Ty::String".into(),
        PbType::Bytes => "Ty::Bytes".into(),
        PbType::Int32 => "Ty::Int32".into(),
        PbType::Int64 => "Ty::Int64".into(),
        PbType::Bool => "Ty::Bool".into(),
        PbType::Double => "Ty::Double".into(),
        // An unresolved reference is written as an unknown identifier so the
        // generated code fails to compile rather than misbehave.
        PbType::Message(m) => match index.get(m.as_str()) {
            Some(i) => format!("Ty::Message({i})"),
            None => format!("Ty::Message(unresolved_{})", m.replace("::", "_")),
        },
    }
}
