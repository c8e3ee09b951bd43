//! Protobuf → JSON: reads a message along its schema into a
//! `serde_json::Value` in the form k8s-openapi serializes.

use base64::Engine;
use serde_json::{Map, Number, Value};

use crate::generated::MESSAGES;
use crate::schema::{FieldDesc, Shape, Special, Ty};
use crate::time::format_time;
use crate::wire::{Reader, WireValue};
use crate::{ProtobufError, MAX_DEPTH};

const WRONG_WIRE_TYPE: ProtobufError = ProtobufError::Corrupt("field has the wrong wire type");

/// What has been read so far for one field.
enum Slot {
    One(Option<Value>),
    Many(Vec<Value>),
    /// Map entries, or the members of an embedded struct.
    Entries(Map<String, Value>),
}

/// Decodes the fields of message `idx` into `out`, in schema order.
pub(crate) fn decode_object(
    idx: usize,
    data: &[u8],
    out: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let desc = &MESSAGES[idx];
    let mut slots: Vec<Slot> = desc
        .fields
        .iter()
        .map(|f| match f.shape {
            Shape::Single if f.inline => Slot::Entries(Map::new()),
            Shape::Single => Slot::One(None),
            Shape::Repeated => Slot::Many(Vec::new()),
            Shape::Map => Slot::Entries(Map::new()),
        })
        .collect();
    let mut reader = Reader::new(data);
    while let Some((tag, wv)) = reader.field()? {
        let Some(pos) = desc.fields.iter().position(|f| f.tag == tag) else {
            continue;
        };
        let f = &desc.fields[pos];
        match (&mut slots[pos], f.ty, wv) {
            (Slot::Entries(map), Ty::Message(inner), WireValue::Len(bytes)) if f.inline => {
                decode_object(inner, bytes, map, depth + 1)?;
            }
            (Slot::One(slot), _, _) => {
                *slot = decode_value(f, wv, !f.required && !f.keep_empty, depth)?
            }
            (Slot::Many(items), Ty::Int32 | Ty::Int64 | Ty::Bool, WireValue::Len(packed)) => {
                let mut r = Reader::new(packed);
                while !r.is_empty() {
                    items.extend(decode_value(
                        f,
                        WireValue::Varint(r.varint()?),
                        false,
                        depth,
                    )?);
                }
            }
            (Slot::Many(items), _, _) => items.extend(decode_value(f, wv, false, depth)?),
            (Slot::Entries(map), _, WireValue::Len(entry)) if f.shape == Shape::Map => {
                let (key, value) = decode_entry(f, entry, depth)?;
                map.insert(key, value);
            }
            _ => return Err(WRONG_WIRE_TYPE),
        }
    }
    for (f, slot) in desc.fields.iter().zip(slots) {
        let value = match slot {
            Slot::Entries(inner) if f.inline => {
                out.extend(inner);
                continue;
            }
            Slot::One(v) if f.omit_zero => v.filter(|v| !is_zero(v)),
            Slot::One(v) => v,
            Slot::Many(items) if !items.is_empty() => Some(Value::Array(items)),
            Slot::Entries(map) if !map.is_empty() => Some(Value::Object(map)),
            Slot::Many(_) | Slot::Entries(_) => None,
        };
        let required = f.required && !f.omit_zero;
        let value = match value {
            None if required => default_value(f, depth)?,
            value => value,
        };
        if let Some(v) = value {
            out.insert(f.json.to_owned(), v);
        }
    }
    Ok(())
}

/// `false` or a zero number: what Go's `omitempty` leaves out.
pub(crate) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// The value k8s-openapi serializes for a required field the wire omitted;
/// a message as an empty one decodes, with its own required fields, so
/// that encoding it and decoding again gives the same value.
fn default_value(f: &FieldDesc, depth: usize) -> Result<Option<Value>, ProtobufError> {
    match f.shape {
        Shape::Repeated => return Ok(Some(Value::Array(Vec::new()))),
        Shape::Map => return Ok(Some(Value::Object(Map::new()))),
        Shape::Single => {}
    }
    Ok(Some(match f.ty {
        Ty::String | Ty::Bytes => Value::String(String::new()),
        Ty::Int32 | Ty::Int64 => Value::from(0),
        Ty::Double => Value::from(0.0),
        Ty::Bool => Value::Bool(false),
        Ty::Message(idx) if MESSAGES[idx].special == Special::None => {
            return decode_message(idx, &[], depth + 1);
        }
        Ty::Message(_) => return Ok(None),
    }))
}

/// A map entry: key at tag 1, value at tag 2 (absent means empty).
fn decode_entry(
    f: &FieldDesc,
    entry: &[u8],
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    let mut key = String::new();
    let mut value = None;
    let mut r = Reader::new(entry);
    while let Some((tag, wv)) = r.field()? {
        match (tag, wv) {
            (1, WireValue::Len(k)) => key = utf8(k)?.to_owned(),
            (1, _) => return Err(WRONG_WIRE_TYPE),
            (2, _) => value = decode_value(f, wv, false, depth)?,
            _ => {}
        }
    }
    let value = match (value, f.ty) {
        (Some(v), _) => v,
        (None, Ty::Message(idx)) => decode_message(idx, &[], depth + 1)?.unwrap_or(Value::Null),
        (None, _) => default_value(
            &FieldDesc {
                shape: Shape::Single,
                ..*f
            },
            depth,
        )?
        .unwrap_or(Value::Null),
    };
    Ok((key, value))
}

fn utf8(bytes: &[u8]) -> Result<&str, ProtobufError> {
    std::str::from_utf8(bytes).map_err(|_| ProtobufError::Corrupt("string field is not UTF-8"))
}

/// One value of field `f`; `None` when it is an empty string that Go's
/// `omitempty` would leave out of the JSON form (`drop_empty`).
fn decode_value(
    f: &FieldDesc,
    wv: WireValue<'_>,
    drop_empty: bool,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    let v = match (f.ty, wv) {
        (Ty::String, WireValue::Len(b)) => Value::String(utf8(b)?.to_owned()),
        (Ty::Bytes, WireValue::Len(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Ty::Int32, WireValue::Varint(n)) => Value::from(n as i32),
        (Ty::Int64, WireValue::Varint(n)) => Value::from(n as i64),
        (Ty::Bool, WireValue::Varint(n)) => Value::Bool(n != 0),
        (Ty::Double, WireValue::Fixed64(bits)) => double(f64::from_bits(bits))?,
        (Ty::Message(idx), WireValue::Len(b)) => return decode_message(idx, b, depth + 1),
        _ => return Err(WRONG_WIRE_TYPE),
    };
    if drop_empty && v.as_str() == Some("") {
        return Ok(None);
    }
    Ok(Some(v))
}

/// A double in upstream's JSON form: Go writes integral values without a
/// fraction (`1`, not `1.0`).
pub(crate) fn double(n: f64) -> Result<Value, ProtobufError> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() < EXACT {
        return Ok(Value::from(n as i64));
    }
    Number::from_f64(n)
        .map(Value::Number)
        .ok_or(ProtobufError::Corrupt("number is not finite"))
}

/// Decodes message `idx` into its JSON form; `None` when that form is
/// absent (a zero Time, an empty RawExtension).
pub(crate) fn decode_message(
    idx: usize,
    data: &[u8],
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let desc = &MESSAGES[idx];
    let fields = || scalar_fields(data);
    Ok(match desc.special {
        Special::None => {
            let mut map = Map::new();
            decode_object(idx, data, &mut map, depth)?;
            Some(Value::Object(map))
        }
        Special::Time | Special::MicroTime if data.is_empty() => None,
        Special::Time | Special::MicroTime => {
            let f = fields()?;
            let formatted = format_time(
                f.varint(1) as i64,
                f.varint(2) as i32,
                desc.special == Special::MicroTime,
            );
            Some(Value::String(
                formatted.ok_or(ProtobufError::Corrupt("timestamp out of range"))?,
            ))
        }
        Special::IntOrString => {
            let f = fields()?;
            Some(if f.varint(1) == 1 {
                Value::String(utf8(f.bytes(3))?.to_owned())
            } else {
                Value::from(f.varint(2) as i32)
            })
        }
        Special::Quantity => {
            let f = fields()?;
            let s = utf8(f.bytes(1))?;
            Some(Value::String(if s.is_empty() {
                "0".to_owned()
            } else {
                s.to_owned()
            }))
        }
        Special::RawJson => decode_raw(fields()?.bytes(1), depth)?,
        Special::StringList => {
            let f = fields()?;
            Some(Value::Array(
                f.strings(1)?.into_iter().map(Value::String).collect(),
            ))
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            decode_schema_union(idx, data, depth)?
        }
    })
}

/// Embedded bytes: a nested protobuf object (watch events) or JSON.
fn decode_raw(raw: &[u8], depth: usize) -> Result<Option<Value>, ProtobufError> {
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.starts_with(crate::MAGIC) {
        return crate::decode_nested(raw, depth + 1, ("", "")).map(Some);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|_| ProtobufError::Corrupt("embedded object is not JSON"))
}

fn decode_schema_union(
    idx: usize,
    data: &[u8],
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    let desc = &MESSAGES[idx];
    let schema_field = desc
        .fields
        .iter()
        .find(|f| f.tag == crate::encode::schema_tag(desc.special));
    let Some(&FieldDesc {
        tag: schema_tag,
        ty: Ty::Message(schema),
        ..
    }) = schema_field
    else {
        return Err(ProtobufError::Corrupt(
            "schema union without a schema field",
        ));
    };
    let mut single = None;
    let mut list = Vec::new();
    let mut allows = false;
    let mut r = Reader::new(data);
    while let Some((tag, wv)) = r.field()? {
        match (tag, wv) {
            (t, WireValue::Len(b)) if t == schema_tag => {
                single = decode_message(schema, b, depth + 1)?
            }
            (1, WireValue::Varint(n)) if desc.special == Special::SchemaOrBool => allows = n != 0,
            (2, WireValue::Len(b)) if desc.special == Special::SchemaOrArray => {
                list.extend(decode_message(schema, b, depth + 1)?);
            }
            (2, WireValue::Len(b)) if desc.special == Special::SchemaOrStringArray => {
                list.push(Value::String(utf8(b)?.to_owned()));
            }
            _ => {}
        }
    }
    Ok(match desc.special {
        Special::SchemaOrBool => Some(single.unwrap_or(Value::Bool(allows))),
        _ if !list.is_empty() => Some(Value::Array(list)),
        _ => single,
    })
}

/// The last varint / length-delimited value of each tag of a small message.
struct ScalarFields<'a> {
    fields: Vec<(u32, WireValue<'a>)>,
}

fn scalar_fields(data: &[u8]) -> Result<ScalarFields<'_>, ProtobufError> {
    let mut fields = Vec::new();
    let mut r = Reader::new(data);
    while let Some(f) = r.field()? {
        fields.push(f);
    }
    Ok(ScalarFields { fields })
}

impl<'a> ScalarFields<'a> {
    fn varint(&self, tag: u32) -> u64 {
        self.fields
            .iter()
            .rev()
            .find_map(|(t, v)| match v {
                WireValue::Varint(n) if *t == tag => Some(*n),
                _ => None,
            })
            .unwrap_or(0)
    }

    fn bytes(&self, tag: u32) -> &'a [u8] {
        self.fields
            .iter()
            .rev()
            .find_map(|(t, v)| match v {
                WireValue::Len(b) if *t == tag => Some(*b),
                _ => None,
            })
            .unwrap_or(&[])
    }

    fn strings(&self, tag: u32) -> Result<Vec<String>, ProtobufError> {
        let mut out = Vec::new();
        for (t, v) in &self.fields {
            if let (true, WireValue::Len(b)) = (*t == tag, v) {
                out.push(utf8(b)?.to_owned());
            }
        }
        Ok(out)
    }
}
