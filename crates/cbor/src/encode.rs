//! JSON tree → CBOR as upstream's encoder writes it: the self-described
//! tag first, strings as byte strings, map keys in RFC 8949 core
//! deterministic order, shortest integers and floats.

use std::cmp::Ordering;
use std::convert::Infallible;

use ciborium_ll::{Encoder, Header};
use serde::Serialize;
use serde_json::{Number, Value};

use crate::{CborError, SELF_DESCRIBED};

/// Encodes one object (any JSON tree), self-described.
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = start();
    Writer::new(&mut out).value(value);
    out
}

/// Encodes any serializable value through its JSON tree.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CborError> {
    let tree = serde_json::to_value(value).map_err(|e| CborError::Serialize(e.to_string()))?;
    Ok(encode(&tree))
}

/// Encodes a list object — `fields` (kind, apiVersion, metadata…) and an
/// `items` array — without building a tree: each item is given as
/// [`encode`] wrote it (an object's encoding shared by every reader of that
/// version) and copied without its self-described tag, as a list nests it.
pub fn encode_list<'a, I>(fields: &[(&str, &Value)], items: I) -> Vec<u8>
where
    I: ExactSizeIterator<Item = &'a [u8]>,
{
    // `None` stands for the items array among the sorted keys.
    let mut entries: Vec<(&str, Option<&Value>)> =
        fields.iter().map(|(k, v)| (*k, Some(*v))).collect();
    entries.push(("items", None));
    entries.sort_by(|a, b| key_order(a.0, b.0));
    let mut out = start();
    let mut w = Writer::new(&mut out);
    w.head(Header::Map(Some(entries.len())));
    let mut items = Some(items);
    for (key, value) in entries {
        w.string(key);
        match (value, items.take()) {
            (Some(value), rest) => {
                items = rest;
                w.value(value);
            }
            (None, Some(items)) => {
                w.head(Header::Array(Some(items.len())));
                for item in items {
                    w.raw(item.strip_prefix(&SELF_DESCRIBED).unwrap_or(item));
                }
            }
            (None, None) => w.head(Header::Array(Some(0))),
        }
    }
    out
}

/// One watch event of a `application/cbor-seq` stream: `{type, object}`
/// with the object itself self-described, as upstream embeds it.
pub fn encode_watch_event(kind: &str, object: &Value) -> Vec<u8> {
    encode_watch_event_with(kind, &encode(object))
}

/// [`encode_watch_event`] around an object already encoded by [`encode`]
/// (self-described, as the event embeds it), which every watcher of the
/// event can share.
pub fn encode_watch_event_with(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + object.len());
    out.extend_from_slice(&SELF_DESCRIBED);
    let mut w = Writer::new(&mut out);
    w.head(Header::Map(Some(2)));
    w.string("type");
    w.string(kind);
    w.string("object");
    out.extend_from_slice(object);
    out
}

fn start() -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&SELF_DESCRIBED);
    out
}

/// RFC 8949 4.2.1: keys ordered by their encoded bytes, which for byte
/// strings means shorter first, then bytewise.
fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Appends to a vector; writing cannot fail.
struct Sink<'a>(&'a mut Vec<u8>);

impl ciborium_io::Write for Sink<'_> {
    type Error = Infallible;

    fn write_all(&mut self, data: &[u8]) -> Result<(), Infallible> {
        self.0.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

struct Writer<'a>(Encoder<Sink<'a>>);

impl<'a> Writer<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Writer(Encoder::from(Sink(out)))
    }

    fn head(&mut self, header: Header) {
        let Ok(()) = self.0.push(header);
    }

    /// Bytes already encoded.
    fn raw(&mut self, bytes: &[u8]) {
        let Ok(()) = ciborium_io::Write::write_all(&mut self.0, bytes);
    }

    fn string(&mut self, s: &str) {
        self.head(Header::Bytes(Some(s.len())));
        self.raw(s.as_bytes());
    }

    fn value(&mut self, value: &Value) {
        match value {
            Value::Null => self.head(Header::Simple(22)),
            Value::Bool(b) => self.head(Header::Simple(if *b { 21 } else { 20 })),
            Value::Number(n) => self.head(number(n)),
            Value::String(s) => self.string(s),
            Value::Array(items) => {
                self.head(Header::Array(Some(items.len())));
                for item in items {
                    self.value(item);
                }
            }
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| key_order(a.0, b.0));
                self.head(Header::Map(Some(entries.len())));
                for (key, value) in entries {
                    self.string(key);
                    self.value(value);
                }
            }
        }
    }
}

/// Integers that fit int64 are CBOR integers; anything else is a float,
/// as upstream's JSON decoding turns larger integers into float64.
fn number(n: &Number) -> Header {
    match n.as_i64() {
        Some(i) if i >= 0 => Header::Positive(i.unsigned_abs()),
        // A negative integer is stored as -1 - n, i.e. the bitwise not.
        Some(i) => Header::Negative((!i).unsigned_abs()),
        None => Header::Float(n.as_f64().unwrap_or_default()),
    }
}
