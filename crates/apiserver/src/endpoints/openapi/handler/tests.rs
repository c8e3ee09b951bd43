use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::endpoints::openapi::paths;
use crate::registry::ResourceInfo;

/// A document with the pods of `/api/v1` and a PodSpec whose containers
/// carry merge metadata.
fn pod_document() -> Value {
    let info = ResourceInfo {
        version: "v1".into(),
        resource: "pods".into(),
        kind: "Pod".into(),
        namespaced: true,
        verbs: [
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]
        .map(str::to_owned)
        .to_vec(),
        has_status: true,
        ..ResourceInfo::default()
    };
    let mut paths = Map::new();
    let (pod, list) = ("io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList");
    paths::add(&mut paths, &info, pod, list, true, paths::no_subresources);
    let mut definitions = Map::new();
    definitions.insert(
        "io.k8s.api.core.v1.PodSpec".into(),
        json!({"type": "object", "properties": {"containers": {
            "type": "array", "items": {"type": "object"},
            "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}}}),
    );
    document(&json!({"title": "Kubernetes"}), definitions, paths)
}

#[test]
fn accept_negotiation_follows_kube_openapi() {
    assert_eq!(negotiate(None), Some(false));
    assert_eq!(negotiate(Some("application/json")), Some(false));
    assert_eq!(
        negotiate(Some(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        )),
        Some(true)
    );
    assert_eq!(
        negotiate(Some(
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )),
        Some(true)
    );
    assert_eq!(
        negotiate(Some(
            "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )),
        Some(true)
    );
    assert_eq!(negotiate(Some("application/json, */*")), Some(false));
    assert_eq!(negotiate(Some("text/html")), None);
    assert_eq!(negotiate(Some("application/yaml")), None);
}

#[test]
fn etag_and_dates_decide_not_modified() {
    let encoded = Encoded::new(&json!({"swagger": "2.0"}));
    let etag = encoded.etag.to_str().unwrap().to_owned();
    assert_eq!(etag.len(), 128 + 2);
    let mut headers = HeaderMap::new();
    headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(&etag).unwrap());
    let resp = respond(&Method::GET, &headers, &encoded, false, None);
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(resp.headers()[header::ETAG], etag.as_str());
    headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"other\""));
    let resp = respond(&Method::GET, &headers, &encoded, true, None);
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], PROTOBUF);
    let mut headers = HeaderMap::new();
    let later = (encoded.modified + chrono::Duration::seconds(5))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    headers.insert(
        header::IF_MODIFIED_SINCE,
        HeaderValue::from_str(&later).unwrap(),
    );
    assert_eq!(
        respond(&Method::GET, &headers, &encoded, false, None).status(),
        StatusCode::NOT_MODIFIED
    );
}

fn varint(data: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = data[0];
        *data = &data[1..];
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// The length-delimited fields of a protobuf message, by number.
fn fields(mut data: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = varint(&mut data);
        match key & 7 {
            0 => {
                varint(&mut data);
            }
            1 => data = &data[8..],
            2 => {
                let len = varint(&mut data) as usize;
                out.push((key >> 3, &data[..len]));
                data = &data[len..];
            }
            w => panic!("wire type {w}"),
        }
    }
    out
}

fn field(msg: &[u8], number: u64) -> Vec<&[u8]> {
    fields(msg)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .map(|(_, v)| v)
        .collect()
}

#[test]
fn protobuf_encoding_follows_gnostic_field_numbers() {
    let bytes = proto::document(&pod_document());
    assert_eq!(field(&bytes, 1), vec![b"2.0".as_slice()]);
    let info = field(&bytes, 2)[0];
    assert_eq!(field(info, 1), vec![b"Kubernetes".as_slice()]);
    // Definitions { repeated NamedSchema additional_properties = 1; }
    let defs = field(&bytes, 9)[0];
    let pod_spec = field(defs, 1)
        .into_iter()
        .find(|named| field(named, 1) == vec![b"io.k8s.api.core.v1.PodSpec".as_slice()])
        .expect("PodSpec");
    let schema = field(pod_spec, 2)[0];
    let props = field(schema, 25)[0];
    let containers = field(props, 1)
        .into_iter()
        .find(|named| field(named, 1) == vec![b"containers".as_slice()])
        .expect("containers");
    let containers = field(containers, 2)[0];
    let extensions: Vec<(String, String)> = field(containers, 31)
        .into_iter()
        .map(|named| {
            let name = String::from_utf8(field(named, 1)[0].to_vec()).unwrap();
            let yaml = String::from_utf8(field(field(named, 2)[0], 2)[0].to_vec()).unwrap();
            (name, yaml)
        })
        .collect();
    assert!(
        extensions.contains(&("x-kubernetes-patch-merge-key".into(), "\"name\"".into())),
        "{extensions:?}"
    );
    // Paths { repeated NamedPathItem path = 2; } → PathItem.patch = 8 →
    // Operation.parameters = 8 → ParametersItem.parameter = 1 →
    // Parameter.non_body_parameter = 2 → query_parameter_sub_schema = 3,
    // its name = 4.
    let paths = field(&bytes, 8)[0];
    let item = field(paths, 2)
        .into_iter()
        .find(|named| {
            field(named, 1) == vec![b"/api/v1/namespaces/{namespace}/pods/{name}".as_slice()]
        })
        .expect("pod path");
    let patch = field(field(item, 2)[0], 8)[0];
    let names: Vec<&[u8]> = field(patch, 8)
        .into_iter()
        .flat_map(|p| field(p, 1))
        .flat_map(|p| field(p, 2))
        .flat_map(|p| field(p, 3))
        .flat_map(|q| field(q, 4))
        .collect();
    assert!(names.contains(&b"fieldValidation".as_slice()), "{names:?}");
}

/// A source whose state is a number: state n adds the path
/// `/apis/example.com/v<n>/widgets` (none for 0).
struct Numbered(Mutex<u32>);

impl SpecSource for Numbered {
    type State = u32;

    fn state(&self) -> u32 {
        *self.0.lock().unwrap()
    }

    fn unchanged(built: &u32, now: &u32) -> bool {
        built == now
    }

    fn add_v2(state: &u32, definitions: &mut Map<String, Value>, paths: &mut Map<String, Value>) {
        if *state > 0 {
            paths.insert(format!("/apis/example.com/v{state}/widgets"), json!({}));
            definitions.insert("com.example.Widget".into(), json!({"type": "object"}));
        }
    }

    fn v3_documents(_: &u32) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
}

#[test]
fn the_source_joins_the_document_when_it_changes() {
    let source = Arc::new(Numbered(Mutex::new(0)));
    let spec = Spec {
        info: json!({"title": "Kubernetes"}),
        parts: Box::new(|| {
            let mut paths = Map::new();
            paths.insert("/api/v1/pods".into(), json!({}));
            (Map::new(), paths)
        }),
        source: source.clone(),
        builtin: OnceLock::new(),
        custom: Mutex::new(None),
    };
    let builtin = spec.current();
    assert!(Arc::ptr_eq(&builtin, &spec.builtin().encoded));
    *source.0.lock().unwrap() = 1;
    let with_widgets = spec.current();
    assert!(
        Arc::ptr_eq(&with_widgets, &spec.current()),
        "rebuilt without a change"
    );
    assert_ne!(with_widgets.etag, builtin.etag);
    let doc: Value = serde_json::from_slice(&with_widgets.json).unwrap();
    assert!(
        doc["paths"]["/apis/example.com/v1/widgets"].is_object(),
        "{doc}"
    );
    assert!(doc["paths"]["/api/v1/pods"].is_object(), "{doc}");
    assert!(
        doc["definitions"]["com.example.Widget"].is_object(),
        "{doc}"
    );
    *source.0.lock().unwrap() = 0;
    assert!(Arc::ptr_eq(&spec.current(), &builtin));
}

#[test]
fn gzip_is_served_to_clients_that_accept_it() {
    let accepts = |v: &'static str| {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
        accepts_gzip(&h)
    };
    assert!(accepts("gzip"));
    assert!(accepts("deflate, gzip;q=0.5"));
    assert!(!accepts("gzip;q=0"));
    assert!(!accepts("identity"));
    assert!(!accepts_gzip(&HeaderMap::new()));
    let encoded = Encoded::new(&json!({"swagger": "2.0", "info": {"title": "Kubernetes"}}));
    let gz = encoded.gzipped(false);
    let resp = respond(
        &Method::GET,
        &HeaderMap::new(),
        &encoded,
        false,
        Some(gz.clone()),
    );
    assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    assert_eq!(plain, encoded.json);
}
