//! Joins the parsed `k8s-pb` messages with their `k8s-openapi` twins and
//! renders the schema tables as Rust source.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write;

use crate::gofields::GoFields;
use crate::openapi::OaStruct;
use crate::pb::{PbField, PbMessage, PbType, Shape};

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

/// Kinds upstream registers in its schemes that k8s-openapi does not model
/// as resources: `(module, message, apiVersion)`, the kind being the
/// message's name. Admission reviews (webhook bodies), aggregated discovery
/// (served as protobuf when asked), the subresource options and the
/// objects the core group registers for storage and annotations (upstream's
/// `pkg/apis/core/v1/register.go` and the `k8s.io/api` round-trip fixtures).
const EXTRA_KINDS: &[(&str, &str, &str)] = &[
    (
        "api::admission::v1",
        "AdmissionReview",
        "admission.k8s.io/v1",
    ),
    (
        "api::admission::v1beta1",
        "AdmissionReview",
        "admission.k8s.io/v1beta1",
    ),
    (
        "api::apidiscovery::v2",
        "APIGroupDiscovery",
        "apidiscovery.k8s.io/v2",
    ),
    (
        "api::apidiscovery::v2",
        "APIGroupDiscoveryList",
        "apidiscovery.k8s.io/v2",
    ),
    (
        "api::apidiscovery::v2beta1",
        "APIGroupDiscovery",
        "apidiscovery.k8s.io/v2beta1",
    ),
    (
        "api::apidiscovery::v2beta1",
        "APIGroupDiscoveryList",
        "apidiscovery.k8s.io/v2beta1",
    ),
    ("api::core::v1", "NodeProxyOptions", "v1"),
    ("api::core::v1", "PodAttachOptions", "v1"),
    ("api::core::v1", "PodExecOptions", "v1"),
    ("api::core::v1", "PodLogOptions", "v1"),
    ("api::core::v1", "PodPortForwardOptions", "v1"),
    ("api::core::v1", "PodProxyOptions", "v1"),
    ("api::core::v1", "RangeAllocation", "v1"),
    ("api::core::v1", "SerializedReference", "v1"),
    ("api::core::v1", "ServiceProxyOptions", "v1"),
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

/// Field names k8s-openapi spells differently from prost.
const ALIASES: &[(&str, &str)] = &[("ref_path", "ref")];

fn special(key: &str) -> &'static str {
    let name = key.rsplit("::").next().unwrap_or(key).to_lowercase();
    let meta = key.starts_with(META);
    match name.as_str() {
        "time" if meta => "Time",
        "microtime" if meta => "MicroTime",
        "fieldsv1" if meta => "RawJson",
        "intorstring" if key.starts_with("apimachinery::pkg::util::intstr") => "IntOrString",
        "quantity" if key.starts_with("apimachinery::pkg::api::resource") => "Quantity",
        "rawextension" if key.starts_with("apimachinery::pkg::runtime") => "RawJson",
        "json" if key.starts_with("apiextensions_apiserver") => "RawJson",
        "jsonschemapropsorarray" => "SchemaOrArray",
        "jsonschemapropsorbool" => "SchemaOrBool",
        "jsonschemapropsorstringarray" => "SchemaOrStringArray",
        _ => "None",
    }
}

/// Go's named string slices (`ExtraValue`, `Verbs`, `AttestationValue`, ...)
/// are wrapped in a message of one repeated `items` field on the wire.
fn is_string_list(msg: &PbMessage) -> bool {
    matches!(msg.fields.as_slice(), [f] if f.name == "items" && f.tag == 1 && f.shape == Shape::Repeated && f.ty == PbType::String)
}

/// A field name compared across sources: prost writes `pod_ip`, upstream's
/// protos `podIP`, k8s-openapi `pod_ip`.
fn norm(name: &str) -> String {
    name.replace('_', "").to_lowercase()
}

struct Kind {
    api_version: String,
    kind: String,
    message: String,
}

/// Returns the generated source and a human-readable report of mismatches.
pub fn generate(
    source: &str,
    pb: &BTreeMap<String, PbMessage>,
    oa: &BTreeMap<String, OaStruct>,
    go: &mut GoFields,
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
        .map(|f| (norm(&f.name), f.json.clone()))
        .collect();

    let mut code = format!("// @generated by `cargo run -p protobuf-codegen` from {source} and k8s-openapi; do not edit.\n");
    code.push_str(HEADER);
    let _ = writeln!(
        code,
        "pub(crate) static MESSAGES: [MessageDesc; {}] = [",
        order.len()
    );
    for key in &order {
        let msg = &pb[key];
        let twin = oa.get(&lower_key(key));
        let fields = join_fields(pb, msg, twin, &json_names, go, &mut report);
        let _ = writeln!(code, "    // {key}");
        let _ = writeln!(
            code,
            "    MessageDesc {{ name: {:?}, special: Special::{}, fields: &[",
            twin.map_or(msg.name.as_str(), |t| t.name.as_str()),
            if twin.is_none() && is_string_list(msg) {
                "StringList"
            } else {
                special(key)
            }
        );
        for j in fields {
            let keep =
                j.field.shape == Shape::Single && go.is_pointer(&msg.module, &msg.name, &j.json);
            let omit_zero = omits_zero(go, msg, &j, &mut report);
            let always = j.field.shape == Shape::Single
                && !j.inline
                && j.field.ty != PbType::Bytes
                && go.always_written(&msg.module, &msg.name, &j.json);
            let _ = writeln!(
                code,
                "        FieldDesc {{ json: {:?}, tag: {}, ty: {}, shape: Shape::{:?}, required: {}, keep_empty: {keep}, omit_zero: {omit_zero}, always: {always}, inline: {} }},",
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

/// Whether a single number or bool field's zero is dropped on decoding
/// (see [`GoFields`]); other fields never are.
fn omits_zero(go: &mut GoFields, msg: &PbMessage, j: &Joined<'_>, report: &mut String) -> bool {
    let scalar = matches!(
        j.field.ty,
        PbType::Int32 | PbType::Int64 | PbType::Bool | PbType::Double
    );
    if !scalar || j.field.shape != Shape::Single || j.inline {
        return false;
    }
    match go.omits_zero(&msg.module, &msg.name, &j.json) {
        Some(omit) => omit,
        None => {
            let _ = writeln!(
                report,
                "{}::{}.{}: no Go declaration, zero kept",
                msg.module, msg.name, j.json
            );
            false
        }
    }
}

const HEADER: &str = "//! Protobuf schema tables of the built-in Kubernetes types (generated).\n\n\
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
    for (module, message, api_version) in EXTRA_KINDS {
        match lower.get(&format!("{module}::{}", message.to_lowercase())) {
            Some(m) => kinds.push(Kind {
                api_version: (*api_version).into(),
                kind: (*message).into(),
                message: m.key(),
            }),
            None => {
                let _ = writeln!(
                    report,
                    "extra kind {api_version} {message}: no protobuf message"
                );
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

/// The fields of one message, in tag order (as upstream writes them).
/// Messages k8s-openapi does not model take JSON names from their Go
/// declarations' `json` tags, else from `json_names` (k8s-openapi's Rust
/// names are derived from the JSON names, so one name maps to one spelling
/// everywhere).
fn join_fields<'a>(
    pb: &BTreeMap<String, PbMessage>,
    msg: &'a PbMessage,
    twin: Option<&OaStruct>,
    json_names: &BTreeMap<String, String>,
    go: &mut GoFields,
    report: &mut String,
) -> Vec<Joined<'a>> {
    let Some(twin) = twin else {
        let mut fields: Vec<&PbField> = msg.fields.iter().collect();
        fields.sort_by_key(|f| f.tag);
        return fields
            .into_iter()
            .map(|f| {
                let json = go
                    .json_name(&msg.module, &msg.name, f.tag)
                    .or_else(|| json_names.get(&norm(&f.name)).cloned())
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
        let flat = norm(pb_name);
        match msg.fields.iter().find(|f| norm(&f.name) == flat) {
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
            PbType::Message(m) => pb.get(m).is_some_and(|t| claim(pb, t, &mut leftover, 2)),
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
    // gogo-protobuf's generated marshalers write fields in tag order.
    out.sort_by_key(|j| j.field.tag);
    out
}

/// Removes from `leftover` the JSON members an embedded message `t`
/// supplies, looking `depth` embeddings deep; whether it supplied any.
fn claim(
    pb: &BTreeMap<String, PbMessage>,
    t: &PbMessage,
    leftover: &mut BTreeSet<String>,
    depth: usize,
) -> bool {
    let mut hit = false;
    for tf in &t.fields {
        if leftover.remove(&norm(&tf.name)) {
            hit = true;
        } else if let (PbType::Message(m), true) = (&tf.ty, depth > 0) {
            if let Some(inner) = pb.get(m) {
                hit |= claim(pb, inner, leftover, depth - 1);
            }
        }
    }
    hit
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
