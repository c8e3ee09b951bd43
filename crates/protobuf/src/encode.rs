//! JSON → protobuf: walks a `serde_json::Value` along a message's schema
//! and writes the protobuf encoding of the fields it knows, noting on the
//! way whether decoding gives the value back ([`Exact`]).

use base64::Engine;
use serde_json::{Map, Value};

use crate::exact::Exact;
use crate::generated::MESSAGES;
use crate::schema::{FieldDesc, MessageDesc, Shape, Special, Ty};
use crate::time::parse_time;
use crate::wire::{
    put_bytes, put_key, put_nested, put_varint, WIRE_FIXED64, WIRE_LEN, WIRE_VARINT,
};
use crate::{ListPart, ProtobufError, MAX_DEPTH};

fn invalid(desc: &MessageDesc, field: &str, message: &'static str) -> ProtobufError {
    ProtobufError::InvalidField {
        message_type: desc.name,
        field: field.to_owned(),
        message,
    }
}

/// Appends the fields of message `idx` taken from the JSON object `obj`
/// (all of its members, for an exact encoding).
fn encode_object(
    idx: usize,
    obj: &Map<String, Value>,
    buf: &mut Vec<u8>,
    depth: usize,
    exact: &mut Exact,
) -> Result<(), ProtobufError> {
    let used = encode_fields(idx, obj, buf, depth, exact)?;
    exact.all_used(used, obj.len());
    Ok(())
}

/// Appends the fields of message `idx` taken from the JSON object `obj`
/// (which may have other members: the type fields, or those of the
/// enclosing message of an embedded one). Returns how many members of
/// `obj` were encoded.
pub(crate) fn encode_fields(
    idx: usize,
    obj: &Map<String, Value>,
    buf: &mut Vec<u8>,
    depth: usize,
    exact: &mut Exact,
) -> Result<usize, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let desc = &MESSAGES[idx];
    let mut used = 0;
    for f in desc.fields {
        if f.inline {
            if let Ty::Message(inner) = f.ty {
                put_nested(buf, f.tag, |b| {
                    used += encode_fields(inner, obj, b, depth + 1, exact)?;
                    Ok(())
                })?;
            }
            continue;
        }
        let Some(v) = obj.get(f.json).filter(|v| !v.is_null()) else {
            exact.absent(f);
            if f.always {
                encode_zero(f, buf, depth)?;
            }
            continue;
        };
        used += 1;
        exact.present(f, v);
        match f.shape {
            Shape::Single => encode_value(desc, f, v, buf, depth, exact)?,
            Shape::Repeated => {
                let items = v
                    .as_array()
                    .ok_or_else(|| invalid(desc, f.json, "expected an array"))?;
                for item in items {
                    encode_value(desc, f, item, buf, depth, exact)?;
                }
            }
            Shape::Map => {
                let entries = v
                    .as_object()
                    .ok_or_else(|| invalid(desc, f.json, "expected an object"))?;
                // Go writes map entries sorted by key; so do we, for
                // byte-identical output.
                let mut sorted: Vec<_> = entries.iter().collect();
                sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (key, value) in sorted {
                    put_nested(buf, f.tag, |b| {
                        put_bytes(b, 1, key.as_bytes());
                        if value.is_null() {
                            // A zero Time value: Go still writes the empty message.
                            if matches!(f.ty, Ty::Message(_)) {
                                put_bytes(b, 2, b"");
                            }
                            return Ok(());
                        }
                        let value_field = FieldDesc { tag: 2, ..*f };
                        encode_value(desc, &value_field, value, b, depth, exact)
                    })?;
                }
            }
        }
    }
    Ok(used)
}

/// Writes the zero value of single field `f`, as Go's marshaller writes
/// a non-pointer field the JSON form leaves out: `""`, `0`, `false`, a
/// struct's zero message (its own always-written fields included), an
/// empty Time, `0` for a Quantity.
fn encode_zero(f: &FieldDesc, buf: &mut Vec<u8>, depth: usize) -> Result<(), ProtobufError> {
    match f.ty {
        Ty::String | Ty::Bytes => put_bytes(buf, f.tag, b""),
        Ty::Int32 | Ty::Int64 | Ty::Bool => {
            put_key(buf, f.tag, WIRE_VARINT);
            put_varint(buf, 0);
        }
        Ty::Double => {
            put_key(buf, f.tag, WIRE_FIXED64);
            buf.extend_from_slice(&0f64.to_bits().to_le_bytes());
        }
        Ty::Message(idx) => {
            let zero = match MESSAGES[idx].special {
                Special::None => Value::Object(Map::new()),
                Special::IntOrString => Value::from(0),
                Special::Quantity => Value::from("0"),
                // Zero times, raw JSON and the unions write no fields.
                _ => return put_nested(buf, f.tag, |_| Ok(())),
            };
            let mut unchecked = Exact::unchecked();
            put_nested(buf, f.tag, |b| {
                encode_message(idx, &zero, b, depth + 1, &mut unchecked)
            })?;
        }
    }
    Ok(())
}

/// The body of list message `idx` around its `items` entries (already
/// encoded messages): its other fields (`metadata`) in field order, as
/// [`encode_object`] writes a list.
pub(crate) struct ListBody {
    before: Vec<u8>,
    items_tag: u32,
    after: Vec<u8>,
}

impl ListBody {
    pub(crate) fn new(idx: usize, metadata: &Value) -> Result<Self, ProtobufError> {
        let desc = &MESSAGES[idx];
        let (mut before, mut after, mut items_tag) = (Vec::new(), Vec::new(), None);
        for f in desc.fields {
            let buf = if items_tag.is_some() {
                &mut after
            } else {
                &mut before
            };
            match f.json {
                "metadata" if !metadata.is_null() => {
                    encode_value(desc, f, metadata, buf, 0, &mut Exact::unchecked())?;
                }
                "metadata" if f.always => encode_zero(f, buf, 0)?,
                "items" => items_tag = Some(f.tag),
                _ => {}
            }
        }
        let items_tag = items_tag.ok_or_else(|| invalid(desc, "items", "not a list"))?;
        Ok(Self {
            before,
            items_tag,
            after,
        })
    }

    /// The body's length with these `items`.
    pub(crate) fn len(&self, items: &[&[u8]]) -> usize {
        let mut prefix = Vec::with_capacity(16);
        let items: usize = items
            .iter()
            .map(|item| self.item_prefix(item, &mut prefix).len() + item.len())
            .sum();
        self.before.len() + items + self.after.len()
    }

    /// Writes `head` followed by the body with these `items`.
    pub(crate) fn write(
        self,
        items: &[&[u8]],
        head: &mut Vec<u8>,
        write: &mut impl FnMut(ListPart<'_>),
    ) {
        head.extend_from_slice(&self.before);
        write(ListPart::Framing(head));
        let mut prefix = Vec::with_capacity(16);
        for (i, item) in items.iter().enumerate() {
            write(ListPart::Framing(self.item_prefix(item, &mut prefix)));
            write(ListPart::Item(i, item));
        }
        write(ListPart::Framing(&self.after));
    }

    /// The key and length written before `item`, in `buf`.
    fn item_prefix<'b>(&self, item: &[u8], buf: &'b mut Vec<u8>) -> &'b [u8] {
        buf.clear();
        put_key(buf, self.items_tag, WIRE_LEN);
        put_varint(buf, item.len() as u64);
        buf
    }
}

/// Writes one value of field `f` (a single value, list item or map value).
fn encode_value(
    desc: &MessageDesc,
    f: &FieldDesc,
    v: &Value,
    buf: &mut Vec<u8>,
    depth: usize,
    exact: &mut Exact,
) -> Result<(), ProtobufError> {
    match f.ty {
        Ty::String => {
            let s = v
                .as_str()
                .ok_or_else(|| invalid(desc, f.json, "expected a string"))?;
            put_bytes(buf, f.tag, s.as_bytes());
        }
        Ty::Bytes => {
            let s = v
                .as_str()
                .ok_or_else(|| invalid(desc, f.json, "expected a base64 string"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| invalid(desc, f.json, "illegal base64 data"))?;
            put_bytes(buf, f.tag, &bytes);
        }
        Ty::Int32 => {
            let n = v.as_i64().and_then(|n| i32::try_from(n).ok());
            let n = n.ok_or_else(|| invalid(desc, f.json, "expected a 32-bit integer"))?;
            put_key(buf, f.tag, WIRE_VARINT);
            put_varint(buf, i64::from(n) as u64);
        }
        Ty::Int64 => {
            let n = v
                .as_i64()
                .ok_or_else(|| invalid(desc, f.json, "expected a 64-bit integer"))?;
            put_key(buf, f.tag, WIRE_VARINT);
            put_varint(buf, n as u64);
        }
        Ty::Bool => {
            let b = v
                .as_bool()
                .ok_or_else(|| invalid(desc, f.json, "expected a boolean"))?;
            put_key(buf, f.tag, WIRE_VARINT);
            put_varint(buf, u64::from(b));
        }
        Ty::Double => {
            let n = v
                .as_f64()
                .ok_or_else(|| invalid(desc, f.json, "expected a number"))?;
            exact.double(v, n);
            put_key(buf, f.tag, WIRE_FIXED64);
            buf.extend_from_slice(&n.to_bits().to_le_bytes());
        }
        Ty::Message(idx) => {
            put_nested(buf, f.tag, |b| encode_message(idx, v, b, depth + 1, exact))?;
        }
    }
    Ok(())
}

/// Appends the body of message `idx` for the JSON value `v`, honouring the
/// special JSON forms of Time, IntOrString, Quantity and friends.
fn encode_message(
    idx: usize,
    v: &Value,
    buf: &mut Vec<u8>,
    depth: usize,
    exact: &mut Exact,
) -> Result<(), ProtobufError> {
    let desc = &MESSAGES[idx];
    let wrong = |what| ProtobufError::InvalidField {
        message_type: desc.name,
        field: String::new(),
        message: what,
    };
    match desc.special {
        Special::None => {
            let obj = v.as_object().ok_or_else(|| wrong("expected an object"))?;
            encode_object(idx, obj, buf, depth, exact)
        }
        Special::Time | Special::MicroTime => {
            let s = v
                .as_str()
                .ok_or_else(|| wrong("expected an RFC 3339 time string"))?;
            let (seconds, nanos) =
                parse_time(s).ok_or_else(|| wrong("expected an RFC 3339 time string"))?;
            exact.time(s, (seconds, nanos), desc.special == Special::MicroTime);
            put_key(buf, 1, WIRE_VARINT);
            put_varint(buf, seconds as u64);
            put_key(buf, 2, WIRE_VARINT);
            put_varint(buf, u64::from(nanos));
            Ok(())
        }
        Special::IntOrString => {
            let (kind, int_val, str_val) = match v {
                Value::String(s) => (1u64, 0i32, s.as_str()),
                Value::Number(n) => {
                    let n = n.as_i64().and_then(|n| i32::try_from(n).ok());
                    (
                        0,
                        n.ok_or_else(|| wrong("expected a 32-bit integer or a string"))?,
                        "",
                    )
                }
                _ => return Err(wrong("expected an integer or a string")),
            };
            put_key(buf, 1, WIRE_VARINT);
            put_varint(buf, kind);
            put_key(buf, 2, WIRE_VARINT);
            put_varint(buf, i64::from(int_val) as u64);
            put_bytes(buf, 3, str_val.as_bytes());
            Ok(())
        }
        Special::Quantity => {
            let s = v
                .as_str()
                .ok_or_else(|| wrong("expected a quantity string"))?;
            // An empty quantity decodes as "0".
            exact.require(!s.is_empty());
            put_bytes(buf, 1, s.as_bytes());
            Ok(())
        }
        Special::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|_| wrong("cannot serialize embedded JSON"))?;
            put_bytes(buf, 1, &raw);
            Ok(())
        }
        Special::StringList => {
            let items = v
                .as_array()
                .ok_or_else(|| wrong("expected an array of strings"))?;
            for item in items {
                put_bytes(
                    buf,
                    1,
                    item.as_str()
                        .ok_or_else(|| wrong("expected an array of strings"))?
                        .as_bytes(),
                );
            }
            Ok(())
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            encode_schema_union(desc, v, buf, depth, exact)
        }
    }
}

/// The tag of the JSONSchemaProps alternative in a schema union (the
/// generated JSON names of these twinless messages are not reliable).
pub(crate) fn schema_tag(special: Special) -> u32 {
    if special == Special::SchemaOrBool {
        2
    } else {
        1
    }
}

/// The JSONSchemaProps unions: field 1/2 hold the alternatives.
fn encode_schema_union(
    desc: &MessageDesc,
    v: &Value,
    buf: &mut Vec<u8>,
    depth: usize,
    exact: &mut Exact,
) -> Result<(), ProtobufError> {
    let wrong = |what| ProtobufError::InvalidField {
        message_type: desc.name,
        field: String::new(),
        message: what,
    };
    let schema_field = desc
        .fields
        .iter()
        .find(|f| f.tag == schema_tag(desc.special))
        .ok_or(wrong("schema field missing"))?;
    let Ty::Message(schema) = schema_field.ty else {
        return Err(wrong("schema field is not a message"));
    };
    match (desc.special, v) {
        (Special::SchemaOrBool, Value::Bool(b)) => {
            put_key(buf, 1, WIRE_VARINT);
            put_varint(buf, u64::from(*b));
            Ok(())
        }
        (Special::SchemaOrBool, Value::Object(_)) => {
            put_key(buf, 1, WIRE_VARINT);
            put_varint(buf, 1);
            put_nested(buf, schema_field.tag, |b| {
                encode_message(schema, v, b, depth + 1, exact)
            })
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Object(_)) => {
            put_nested(buf, schema_field.tag, |b| {
                encode_message(schema, v, b, depth + 1, exact)
            })
        }
        (Special::SchemaOrArray, Value::Array(items)) => {
            // An empty array decodes as no value at all.
            exact.require(!items.is_empty());
            for item in items {
                put_nested(buf, 2, |b| {
                    encode_message(schema, item, b, depth + 1, exact)
                })?;
            }
            Ok(())
        }
        (Special::SchemaOrStringArray, Value::Array(items)) => {
            exact.require(!items.is_empty());
            for item in items {
                let s = item
                    .as_str()
                    .ok_or_else(|| wrong("expected an array of strings"))?;
                put_key(buf, 2, WIRE_LEN);
                put_varint(buf, s.len() as u64);
                buf.extend_from_slice(s.as_bytes());
            }
            Ok(())
        }
        _ => Err(wrong("unexpected JSON type for a schema union")),
    }
}
