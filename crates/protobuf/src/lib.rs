//! Kubernetes protobuf wire format (`application/vnd.kubernetes.protobuf`)
//! for the built-in API types.
//!
//! Objects travel inside the server as `serde_json::Value` trees in the JSON
//! form of the Kubernetes API; this crate converts such a tree to upstream's
//! protobuf encoding and back. A protobuf body is the 4-byte prefix
//! `k8s\0` followed by a `runtime.Unknown` envelope whose `typeMeta` names
//! the object's apiVersion and kind and whose `raw` holds the object's
//! message. Which message that is, and how each of its fields is spelled in
//! JSON, comes from the generated tables in [`generated`] (see the
//! `protobuf-codegen` crate).
//!
//! Watch streams use a different framing, see [`encode_watch_event`].

mod decode;
mod encode;
mod exact;
#[cfg(test)]
mod exact_tests;
#[cfg(test)]
mod exhaustive_tests;
#[rustfmt::skip]
mod generated;
mod schema;
mod time;
mod wire;

use serde_json::{Map, Value};

use exact::Exact;
use generated::KINDS;
use schema::KindDesc;
use wire::{put_bytes, put_key, put_nested, put_varint, Reader, WireValue, WIRE_LEN};

/// The media type of the Kubernetes protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream (length-delimited frames).
pub const STREAM_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The prefix of every protobuf-encoded object.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// How deep messages may nest (JSONSchemaProps and embedded objects are
/// recursive); deeper input is rejected instead of exhausting the stack.
pub(crate) const MAX_DEPTH: usize = 256;

/// The apiVersion under which the group-independent kinds are registered.
const META_API_VERSION: &str = "meta.k8s.io/v1";
/// The one kind without type fields of its own (its Go type has no
/// `TypeMeta`): its envelope names no apiVersion or kind.
const WATCH_EVENT: &str = "WatchEvent";

/// Why a value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("data does not start with the Kubernetes protobuf prefix")]
    BadMagic,
    #[error("protobuf data is truncated")]
    Truncated,
    #[error("protobuf data is corrupt: {0}")]
    Corrupt(&'static str),
    #[error("content encoding {0:?} is not supported")]
    UnsupportedContentEncoding(String),
    #[error("object has no apiVersion or kind")]
    MissingTypeMeta,
    #[error("no protobuf serialization is known for {api_version}, Kind={kind}")]
    UnknownKind { api_version: String, kind: String },
    #[error("{message_type}.{field}: {message}")]
    InvalidField {
        message_type: &'static str,
        field: String,
        message: &'static str,
    },
    #[error("object nesting exceeds {MAX_DEPTH} levels")]
    TooDeep,
}

/// Whether `(api_version, kind)` has a protobuf encoding.
pub fn supports(api_version: &str, kind: &str) -> bool {
    lookup(api_version, kind).is_some()
}

fn lookup(api_version: &str, kind: &str) -> Option<&'static KindDesc> {
    let find = |av: &str| {
        KINDS
            .binary_search_by(|k| (k.api_version, k.kind).cmp(&(av, kind)))
            .ok()
            .map(|i| &KINDS[i])
    };
    // Status, DeleteOptions, WatchEvent and the other meta kinds are served
    // under every group version; they share the meta.k8s.io/v1 messages.
    find(api_version).or_else(|| find(META_API_VERSION))
}

/// Decodes a protobuf body (`k8s\0` + `runtime.Unknown`) into the JSON form
/// of the object, with `apiVersion` and `kind` set.
pub fn decode(bytes: &[u8]) -> Result<Value, ProtobufError> {
    decode_nested(bytes, 0, ("", ""))
}

/// Like [`decode`], taking the apiVersion and kind the envelope leaves
/// empty from `defaults`, as upstream's serializer decodes with a default
/// group, version and kind: a `WatchEvent` has no type fields of its own,
/// so its envelope names none and its JSON form carries none.
pub fn decode_as(bytes: &[u8], defaults: (&str, &str)) -> Result<Value, ProtobufError> {
    decode_nested(bytes, 0, defaults)
}

pub(crate) fn decode_nested(
    bytes: &[u8],
    depth: usize,
    defaults: (&str, &str),
) -> Result<Value, ProtobufError> {
    let body = match bytes.strip_prefix(MAGIC) {
        Some(body) => body,
        None if MAGIC.starts_with(bytes) => return Err(ProtobufError::Truncated),
        None => return Err(ProtobufError::BadMagic),
    };
    let unknown = Unknown::parse(body)?;
    if !unknown.content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding(
            unknown.content_encoding.to_owned(),
        ));
    }
    let api_version = non_empty_or(unknown.api_version, defaults.0);
    let kind = non_empty_or(unknown.kind, defaults.1);
    let desc = lookup(api_version, kind).ok_or_else(|| ProtobufError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    let mut out = Map::new();
    if !(unknown.kind.is_empty() && kind == WATCH_EVENT) {
        out.insert("apiVersion".into(), Value::String(api_version.to_owned()));
        out.insert("kind".into(), Value::String(kind.to_owned()));
    }
    decode::decode_object(desc.message, unknown.raw, &mut out, depth)?;
    // `v1 List` holds complete objects of any kind; typed lists do not.
    if let Some(item_kind) = kind.strip_suffix("List").filter(|k| !k.is_empty()) {
        tag_list_items(&mut out, api_version, item_kind);
    }
    Ok(Value::Object(out))
}

fn non_empty_or<'a>(s: &'a str, default: &'a str) -> &'a str {
    if s.is_empty() {
        default
    } else {
        s
    }
}

/// List items carry no type fields on the wire; the JSON form (as
/// k8s-openapi writes lists) names them on every item.
fn tag_list_items(list: &mut Map<String, Value>, api_version: &str, kind: &str) {
    let Some(Value::Array(items)) = list.get_mut("items") else {
        return;
    };
    for item in items {
        if let Value::Object(obj) = item {
            let mut tagged = Map::with_capacity(obj.len() + 2);
            tagged.insert("apiVersion".into(), Value::String(api_version.to_owned()));
            tagged.insert("kind".into(), Value::String(kind.to_owned()));
            tagged.extend(std::mem::take(obj));
            *obj = tagged;
        }
    }
}

/// The `runtime.Unknown` envelope.
struct Unknown<'a> {
    api_version: &'a str,
    kind: &'a str,
    raw: &'a [u8],
    content_encoding: &'a str,
}

impl<'a> Unknown<'a> {
    fn parse(body: &'a [u8]) -> Result<Self, ProtobufError> {
        let mut unknown = Unknown {
            api_version: "",
            kind: "",
            raw: &[],
            content_encoding: "",
        };
        let mut r = Reader::new(body);
        while let Some((tag, wv)) = r.field()? {
            let WireValue::Len(b) = wv else { continue };
            match tag {
                1 => {
                    let mut tm = Reader::new(b);
                    while let Some((t, v)) = tm.field()? {
                        match (t, v) {
                            (1, WireValue::Len(s)) => unknown.api_version = str_field(s)?,
                            (2, WireValue::Len(s)) => unknown.kind = str_field(s)?,
                            _ => {}
                        }
                    }
                }
                2 => unknown.raw = b,
                3 => unknown.content_encoding = str_field(b)?,
                _ => {}
            }
        }
        Ok(unknown)
    }
}

fn str_field(b: &[u8]) -> Result<&str, ProtobufError> {
    std::str::from_utf8(b).map_err(|_| ProtobufError::Corrupt("string field is not UTF-8"))
}

/// The apiVersion and kind of a JSON object.
fn type_meta(value: &Value) -> Result<(&str, &str), ProtobufError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err(ProtobufError::MissingTypeMeta);
    }
    Ok((api_version, kind))
}

/// Encodes the JSON form of an object as a protobuf body (`k8s\0` +
/// `runtime.Unknown`), using the object's own `apiVersion` and `kind`.
pub fn encode(value: &Value) -> Result<Vec<u8>, ProtobufError> {
    let mut buf = Vec::with_capacity(256);
    encode_into(value, &mut buf)?;
    Ok(buf)
}

/// Like [`encode`], appending to `buf`.
pub fn encode_into(value: &Value, buf: &mut Vec<u8>) -> Result<(), ProtobufError> {
    let (api_version, kind) = type_meta(value)?;
    let mut unchecked = Exact::unchecked();
    encode_kind(
        value,
        (api_version, kind),
        (api_version, kind),
        buf,
        &mut unchecked,
    )
}

/// Like [`encode`], also telling whether [`decode`] gives back exactly
/// `value` (as `serde_json` compares trees: the order of an object's
/// members aside), found while encoding. Conservative: `false` whenever
/// the encoder cannot be sure (see `exact` for what decoding reshapes).
pub fn encode_checked(value: &Value) -> Result<(Vec<u8>, bool), ProtobufError> {
    let (api_version, kind) = type_meta(value)?;
    let mut buf = Vec::with_capacity(256);
    // A list's items and a watch event's object decode with type fields
    // the encoding does not carry.
    let mut exact = if kind.ends_with("List") || kind == WATCH_EVENT {
        Exact::unchecked()
    } else {
        Exact::checked()
    };
    encode_kind(
        value,
        (api_version, kind),
        (api_version, kind),
        &mut buf,
        &mut exact,
    )?;
    Ok((buf, exact.holds()))
}

/// Encodes `value` as the message of `(api_version, kind)`: what
/// [`decode_as`] reads back. The envelope names the value's own apiVersion
/// and kind, none for a `WatchEvent`, as upstream's serializer writes an
/// object's type fields.
pub fn encode_as(
    value: &Value,
    (api_version, kind): (&str, &str),
) -> Result<Vec<u8>, ProtobufError> {
    let own = match type_meta(value) {
        Ok(own) => own,
        Err(_) if kind == WATCH_EVENT => ("", ""),
        Err(e) => return Err(e),
    };
    let mut buf = Vec::with_capacity(256);
    let mut unchecked = Exact::unchecked();
    encode_kind(value, (api_version, kind), own, &mut buf, &mut unchecked)?;
    Ok(buf)
}

/// Writes the envelope naming `written` around the message of `schema`;
/// `exact` (when checked) requires the envelope to name the value's own
/// type fields, decoded as the object's `apiVersion` and `kind`.
fn encode_kind(
    value: &Value,
    (api_version, kind): (&str, &str),
    written: (&str, &str),
    buf: &mut Vec<u8>,
    exact: &mut Exact,
) -> Result<(), ProtobufError> {
    let desc = lookup(api_version, kind).ok_or_else(|| ProtobufError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    let obj = value.as_object().ok_or(ProtobufError::MissingTypeMeta)?;
    buf.extend_from_slice(MAGIC);
    put_nested(buf, 1, |b| {
        put_bytes(b, 1, written.0.as_bytes());
        put_bytes(b, 2, written.1.as_bytes());
        Ok::<(), ProtobufError>(())
    })?;
    if kind == WATCH_EVENT {
        let event_type = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        let object = obj.get("object").filter(|o| !o.is_null());
        let raw = object.map(watch_event_object).transpose()?;
        put_nested(buf, 2, |b| {
            encode_watch_body(event_type, raw.as_deref(), b);
            Ok::<(), ProtobufError>(())
        })?;
    } else {
        put_nested(buf, 2, |b| {
            let used = encode::encode_fields(desc.message, obj, b, 0, exact)?;
            // The other members are the type fields (two, as type_meta found).
            exact.all_used(used + 2, obj.len());
            Ok(())
        })?;
    }
    // contentEncoding and contentType are written empty, as upstream does.
    put_bytes(buf, 3, b"");
    put_bytes(buf, 4, b"");
    Ok(())
}

/// The part of an object's encoding (as [`encode`] wrote it) that a list
/// carries as the item: its message, after the type fields.
pub fn list_item_message(item: &[u8]) -> Result<&[u8], ProtobufError> {
    let body = item.strip_prefix(MAGIC).ok_or(ProtobufError::BadMagic)?;
    Unknown::parse(body).map(|unknown| unknown.raw)
}

/// Encodes a list of `list_kind` from its metadata and items, as
/// [`encode`] would encode the assembled list, without assembling it: each
/// item is given as its message ([`list_item_message`] of the object's
/// encoding, shared by every reader of that version). The encoding is
/// handed to `write` piece by piece (the messages as they are, in
/// order, never copied into one buffer here, each marked as its item's so
/// a writer can share rather than copy it); nothing is written when it fails.
pub fn encode_list_of(
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    messages: &[&[u8]],
    mut write: impl FnMut(ListPart<'_>),
) -> Result<(), ProtobufError> {
    let desc = lookup(api_version, list_kind).ok_or_else(|| ProtobufError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: list_kind.to_owned(),
    })?;
    let body = encode::ListBody::new(desc.message, metadata)?;
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(MAGIC);
    put_nested(&mut head, 1, |b| {
        put_bytes(b, 1, api_version.as_bytes());
        put_bytes(b, 2, list_kind.as_bytes());
        Ok::<(), ProtobufError>(())
    })?;
    put_key(&mut head, 2, WIRE_LEN);
    put_varint(&mut head, body.len(messages) as u64);
    body.write(messages, &mut head, &mut write);
    let mut tail = Vec::with_capacity(4);
    put_bytes(&mut tail, 3, b"");
    put_bytes(&mut tail, 4, b"");
    write(ListPart::Framing(&tail));
    Ok(())
}

/// A piece of a list's encoding handed out by [`encode_list_of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPart<'a> {
    /// Bytes of the list itself (its type, metadata, the items' keys and
    /// lengths).
    Framing(&'a [u8]),
    /// The message of the item at this index, as it was given.
    Item(usize, &'a [u8]),
}

/// The `metav1.WatchEvent` message: `type` and the object (`raw`, see
/// [`watch_event_object`]) as a nested `runtime.RawExtension`.
fn encode_watch_body(event_type: &str, raw: Option<&[u8]>, buf: &mut Vec<u8>) {
    put_bytes(buf, 1, event_type.as_bytes());
    if let Some(raw) = raw {
        let _ = put_nested(buf, 2, |b| {
            put_bytes(b, 1, raw);
            Ok::<(), ProtobufError>(())
        });
    }
}

/// An object as a watch event carries it in `object.raw`: its full
/// protobuf body, or JSON when its kind has no protobuf encoding. The same
/// for every watcher of the event, so it can be encoded once and shared
/// (see [`encode_watch_event_with`]).
pub fn watch_event_object(object: &Value) -> Result<Vec<u8>, ProtobufError> {
    match type_meta(object) {
        Ok((av, kind)) if supports(av, kind) => encode(object),
        _ => serde_json::to_vec(object)
            .map_err(|_| ProtobufError::Corrupt("object is not serializable")),
    }
}

/// Encodes one event of a protobuf watch stream
/// (`application/vnd.kubernetes.protobuf;stream=watch`): a 4-byte
/// big-endian length followed by a bare `metav1.WatchEvent` message (no
/// prefix or envelope), whose `object.raw` is the object's full protobuf
/// body. `event_type` is `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or
/// `ERROR` (with a Status object).
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let raw = Some(object)
        .filter(|o| !o.is_null())
        .map(watch_event_object)
        .transpose()?;
    encode_watch_event_with(event_type, raw.as_deref())
}

/// [`encode_watch_event`] around an object already encoded by
/// [`watch_event_object`] (`None`: no object).
pub fn encode_watch_event_with(
    event_type: &str,
    raw: Option<&[u8]>,
) -> Result<Vec<u8>, ProtobufError> {
    let mut buf = Vec::with_capacity(16 + raw.map_or(0, <[u8]>::len));
    buf.extend_from_slice(&[0; 4]);
    encode_watch_body(event_type, raw, &mut buf);
    let len = u32::try_from(buf.len() - 4)
        .map_err(|_| ProtobufError::Corrupt("watch event too large"))?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// Decodes one bare `metav1.WatchEvent` message (a frame's payload, without
/// its length prefix) into `{"type": ..., "object": ...}`.
pub fn decode_watch_event(message: &[u8]) -> Result<Value, ProtobufError> {
    let idx = lookup(META_API_VERSION, "WatchEvent")
        .map(|k| k.message)
        .ok_or(ProtobufError::Corrupt("WatchEvent schema missing"))?;
    let mut out = Map::new();
    decode::decode_object(idx, message, &mut out, 0)?;
    Ok(Value::Object(out))
}
