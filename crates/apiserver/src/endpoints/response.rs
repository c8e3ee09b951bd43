//! Writing response bodies: objects, lists, tables and Status errors in the
//! negotiated encoding. Lists are written item by item from the shared
//! stored objects, without copying them into a new tree.

use apimachinery::status::{ApiError, StatusReason};
use axum::body::Body;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use protobuf_codec::ListPart;
use serde::Serialize;
use serde_json::{json, Value};
use storage::{ListResult, Object, StoredObject};

use super::caching_object::{self, ListItem};
use super::collections::{self, Chunks};
use super::negotiation::{Encoding, Negotiated, Shape};
use crate::registry::rest::table::IncludeObject;
use crate::registry::rest::TableConvertor;
use crate::registry::store::Strategies;
use crate::registry::ResourceInfo;

/// Serializes a value in the given encoding, JSON and YAML as upstream's
/// serializers write them (`go_json::encode`: Go's escaping, a trailing
/// newline unless pretty, go-yaml's key order).
pub fn encode<T: Serialize + ?Sized>(value: &T, encoding: Encoding, pretty: bool) -> Bytes {
    let result = match encoding {
        Encoding::Json if pretty => {
            go_json::encode::to_vec_pretty(value).map_err(|e| e.to_string())
        }
        Encoding::Json => go_json::encode::to_vec(value).map_err(|e| e.to_string()),
        Encoding::Yaml => go_json::encode::to_yaml(value).map(String::into_bytes),
        Encoding::Protobuf => serde_json::to_value(value)
            .map_err(|e| e.to_string())
            .and_then(|v| protobuf_codec::encode(&v).map_err(|e| e.to_string())),
        Encoding::Cbor => kube_cbor::to_vec(value).map_err(|e| e.to_string()),
    };
    match result {
        Ok(bytes) => Bytes::from(bytes),
        // Values here are JSON trees and always serialize.
        Err(e) => encoding_failed(&e),
    }
}

pub fn respond(code: StatusCode, body: Bytes, encoding: Encoding) -> Response<Body> {
    respond_body(code, Body::from(body), encoding)
}

fn respond_body(code: StatusCode, body: Body, encoding: Encoding) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    resp
}

/// The end of the chain's answer: a 404 Status for what no server serves.
pub fn not_found() -> Response<Body> {
    error(
        &ApiError::new(
            404,
            StatusReason::NotFound,
            "the server could not find the requested resource",
        ),
        Encoding::Json,
    )
}

/// A Status error response (always answerable: JSON unless YAML was asked).
pub fn error(err: &ApiError, encoding: Encoding) -> Response<Body> {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = respond(
        code,
        encode(&err.to_status_json(), encoding, false),
        encoding,
    );
    if let Some(secs) = err.retry_after_seconds().filter(|s| *s > 0) {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    resp
}

/// One object in the negotiated shape.
pub fn object(
    code: StatusCode,
    obj: &Object,
    neg: &Negotiated,
    info: &ResourceInfo,
    table_convertor: &dyn TableConvertor,
) -> Response<Body> {
    let body = match neg.shape {
        // The version's shared encoding (see `caching_object`).
        Shape::Object if !neg.pretty && shared_encoding(obj, neg.encoding) => {
            caching_object::encoded(obj, neg.encoding)
                .unwrap_or_else(|e| encoding_failed(&e.to_string()))
        }
        // Encoded from a transient tree: an object held as JSON stays so.
        Shape::Object if neg.encoding == Encoding::Protobuf => {
            match obj.peek(protobuf_codec::encode) {
                Ok(bytes) => Bytes::from(bytes),
                Err(e) => encoding_failed(&e.to_string()),
            }
        }
        Shape::Object => obj.peek(|tree| encode(tree, neg.encoding, neg.pretty)),
        Shape::PartialMetadata => encode(&partial_metadata(&obj.tree()), neg.encoding, neg.pretty),
        Shape::Table(include) => {
            let resource_version = obj.metadata_str("resourceVersion").unwrap_or_default();
            let table = table(
                std::slice::from_ref(obj),
                &resource_version,
                None,
                include,
                info,
                table_convertor,
            );
            encode(&table, neg.encoding, neg.pretty)
        }
    };
    respond(code, body, neg.encoding)
}

/// Whether a response writes `obj` in `encoding` as its shared encoding
/// does: JSON and CBOR always, protobuf for the kinds it has a message for.
fn shared_encoding(obj: &StoredObject, encoding: Encoding) -> bool {
    match encoding {
        Encoding::Json | Encoding::Cbor => true,
        Encoding::Yaml => false,
        Encoding::Protobuf => {
            let (api_version, kind) = obj.type_meta();
            protobuf_codec::supports(&api_version, &kind)
        }
    }
}

fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

pub(super) fn list_metadata(list: &ListResult) -> Value {
    let mut meta = json!({"resourceVersion": list.resource_version.to_string()});
    if let Some(token) = &list.continue_token {
        meta["continue"] = json!(token);
    }
    if let Some(remaining) = list.remaining_item_count {
        meta["remainingItemCount"] = json!(remaining);
    }
    meta
}

/// A list in the negotiated shape.
pub fn list(
    list: ListResult,
    neg: &Negotiated,
    info: &ResourceInfo,
    strategies: &Strategies,
) -> Response<Body> {
    if matches!(neg.shape, Shape::Object) && neg.encoding == Encoding::Json && !neg.pretty {
        let type_meta = strategies.scheme.list_items_keep_type_meta();
        let body = collections::json(list, &info.list_kind, &info.api_version(), type_meta);
        return respond_body(StatusCode::OK, body.into_body(), neg.encoding);
    }
    let list = &list;
    let body = match neg.shape {
        Shape::Object if neg.encoding == Encoding::Protobuf => {
            return respond_body(StatusCode::OK, protobuf_list(list, info), neg.encoding);
        }
        Shape::Object if neg.encoding == Encoding::Cbor => {
            let items = caching_object::encoded_each(&list.items, Encoding::Cbor);
            let items = items.unwrap_or_default();
            Bytes::from(kube_cbor::encode_list(
                &[
                    ("kind", &Value::from(info.list_kind.as_str())),
                    ("apiVersion", &Value::from(info.api_version())),
                    ("metadata", &list_metadata(list)),
                ],
                items.iter().map(|item| &item[..]),
            ))
        }
        Shape::Object => encode(
            &ListBody {
                kind: &info.list_kind,
                api_version: &info.api_version(),
                metadata: list_metadata(list),
                items: ListItems {
                    items: &list.items,
                    type_meta: strategies.scheme.list_items_keep_type_meta(),
                },
            },
            neg.encoding,
            neg.pretty,
        ),
        Shape::PartialMetadata => {
            let items: Vec<Value> = list
                .items
                .iter()
                .map(|o| partial_metadata(&o.tree()))
                .collect();
            encode(
                &json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": list_metadata(list),
                    "items": items,
                }),
                neg.encoding,
                neg.pretty,
            )
        }
        Shape::Table(include) => {
            let rv = list.resource_version.to_string();
            let table = table(
                &list.items,
                &rv,
                list.continue_token.as_deref(),
                include,
                info,
                strategies.table.as_ref(),
            );
            encode(&table, neg.encoding, neg.pretty)
        }
    };
    respond(StatusCode::OK, body, neg.encoding)
}

/// A protobuf list written from the items' shared encodings (no copy of
/// the list as a JSON tree first, and the items' messages shared rather
/// than copied into the body).
fn protobuf_list(list: &ListResult, info: &ResourceInfo) -> Body {
    let api_version = info.api_version();
    if !protobuf_codec::supports(&api_version, &info.list_kind) {
        let message = format!("no protobuf message for {}", info.list_kind);
        return Body::from(encoding_failed(&message));
    }
    let items = match caching_object::protobuf_list_items(&list.items) {
        Ok(items) => items,
        Err(e) => return Body::from(encoding_failed(&e.to_string())),
    };
    // The list's own bytes, and where the items (handed out in order) go
    // among them; the items are moved into the body once the messages
    // borrowed from them are written.
    enum Part {
        Framing(std::ops::Range<usize>),
        Item,
    }
    let (mut framing, mut parts) = (Vec::new(), Vec::with_capacity(2 * items.len() + 2));
    let messages: Vec<&[u8]> = items.iter().map(ListItem::bytes).collect();
    let written = |part: ListPart<'_>| match part {
        ListPart::Framing(bytes) => {
            let start = framing.len();
            framing.extend_from_slice(bytes);
            parts.push(Part::Framing(start..framing.len()));
        }
        ListPart::Item(..) => parts.push(Part::Item),
    };
    let (kind, metadata) = (&info.list_kind, &list_metadata(list));
    let encoded = protobuf_codec::encode_list_of(&api_version, kind, metadata, &messages, written);
    if let Err(e) = encoded {
        return Body::from(encoding_failed(&e.to_string()));
    }
    drop(messages);
    let mut items = items.into_iter();
    let mut out = Chunks::default();
    for part in parts {
        match part {
            Part::Framing(range) => out.write(&framing[range]),
            Part::Item => out.share_item(items.next().expect("one part per item")),
        }
    }
    out.into_body()
}

/// Stored objects always encode; keep a valid body anyway.
fn encoding_failed(message: &str) -> Bytes {
    Bytes::from(format!("{{\"kind\":\"Status\",\"message\":{message:?}}}"))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListBody<'a> {
    kind: &'a str,
    api_version: &'a str,
    metadata: Value,
    items: ListItems<'a>,
}

/// A list's items as upstream writes them: typed (built-in) items without
/// `apiVersion` and `kind`, which only the list carries; custom resources'
/// items with them. Serialized from the shared objects, without copies.
struct ListItems<'a> {
    items: &'a [Object],
    type_meta: bool,
}

impl Serialize for ListItems<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if self.type_meta {
            return self.items.serialize(serializer);
        }
        let mut seq = serializer.serialize_seq(Some(self.items.len()))?;
        for item in self.items {
            seq.serialize_element(&WithoutTypeMeta(item))?;
        }
        seq.end()
    }
}

pub(super) struct WithoutTypeMeta<'a>(pub(super) &'a Value);

impl Serialize for WithoutTypeMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(map) = self.0 else {
            return self.0.serialize(serializer);
        };
        let fields = map
            .iter()
            .filter(|(k, _)| *k != "apiVersion" && *k != "kind");
        let mut out = serializer.serialize_map(None)?;
        for (k, v) in fields {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

/// A `meta.k8s.io/v1` Table of the given objects.
pub fn table(
    items: &[Object],
    resource_version: &str,
    continue_token: Option<&str>,
    include: IncludeObject,
    _info: &ResourceInfo,
    table_convertor: &dyn TableConvertor,
) -> Value {
    let columns = table_convertor.table_column_definitions();
    // Trees for this table alone where the cache holds objects as JSON.
    let trees: Vec<_> = items.iter().map(|o| o.tree()).collect();
    let mut ordered: Vec<&Value> = trees.iter().map(|t| &**t).collect();
    if let Some(order) = table_convertor.table_order() {
        ordered.sort_by(|a, b| order(a, b));
    }
    let rows: Vec<Value> = ordered
        .into_iter()
        .map(|obj| {
            let mut row = json!({"cells": table_convertor.table_row(obj)});
            if let Some(o) = include.row_object(obj) {
                row["object"] = o;
            }
            row
        })
        .collect();
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    let mut table = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    });
    go_json::normalize(&mut table);
    table
}
