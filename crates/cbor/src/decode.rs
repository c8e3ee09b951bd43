//! Strict CBOR → JSON tree decoding (the rules are in the crate docs).
//! Lengths read from the input are never trusted for allocation: a claimed
//! length beyond the bytes left is a truncation error.

use base64::Engine;
use ciborium_io::Read as _;
use ciborium_ll::{Decoder, Header};
use serde_json::{Map, Number, Value};

use crate::{CborError, MAX_ARRAY_ELEMENTS, MAX_DEPTH, MAX_MAP_PAIRS};

/// Decodes exactly one CBOR data item (the self-described tag is optional)
/// into a JSON tree; bytes after it are an error.
pub fn decode(data: &[u8]) -> Result<Value, CborError> {
    let (value, rest) = decode_first(data)?;
    if !rest.is_empty() {
        return Err(CborError::ExtraneousData {
            count: rest.len(),
            index: data.len() - rest.len(),
        });
    }
    Ok(value)
}

/// Decodes the first data item of a CBOR sequence (a watch stream) and
/// returns the bytes after it.
pub fn decode_first(data: &[u8]) -> Result<(Value, &[u8]), CborError> {
    let mut reader = Reader {
        input: data,
        dec: Decoder::from(data),
    };
    let value = reader.value(0)?;
    let used = reader.dec.offset();
    Ok((value, data.get(used..).unwrap_or_default()))
}

struct Reader<'a> {
    input: &'a [u8],
    dec: Decoder<&'a [u8]>,
}

impl Reader<'_> {
    fn pull(&mut self) -> Result<(usize, Header), CborError> {
        let offset = self.dec.offset();
        match self.dec.pull() {
            Ok(header) => Ok((offset, header)),
            Err(ciborium_ll::Error::Io(_)) => Err(CborError::UnexpectedEof),
            Err(ciborium_ll::Error::Syntax(offset)) => Err(CborError::Malformed { offset }),
        }
    }

    fn remaining(&mut self) -> usize {
        self.input.len().saturating_sub(self.dec.offset())
    }

    fn value(&mut self, depth: usize) -> Result<Value, CborError> {
        let (offset, header) = self.pull()?;
        self.item(offset, header, depth)
    }

    fn item(&mut self, offset: usize, header: Header, depth: usize) -> Result<Value, CborError> {
        match header {
            Header::Positive(n) => positive(n).map(Value::from),
            Header::Negative(n) => negative(n).map(Value::from),
            Header::Float(f) => float(f).map(Value::Number),
            Header::Simple(s) => self.simple(offset, s),
            Header::Bytes(len) => self.string(len, false).map(|b| Value::String(lossy(b))),
            Header::Text(len) => self.text(len).map(Value::String),
            Header::Array(len) => self.array(len, depth + 1),
            Header::Map(len) => self.map(len, depth + 1),
            Header::Tag(tag) => self.tag(tag, depth + 1),
            Header::Break => Err(CborError::UnexpectedBreak),
        }
    }

    fn simple(&mut self, offset: usize, value: u8) -> Result<Value, CborError> {
        // A two-byte simple value below 32 is not well-formed (RFC 8949 3.3).
        if value < 32 && self.input.get(offset) == Some(&0xf8) {
            return Err(CborError::Malformed { offset });
        }
        match value {
            20 => Ok(Value::Bool(false)),
            21 => Ok(Value::Bool(true)),
            22 => Ok(Value::Null),
            other => Err(CborError::Unacceptable(format!("simple value {other}"))),
        }
    }

    /// The payload of a byte or text string, definite or in chunks.
    fn string(&mut self, len: Option<usize>, text: bool) -> Result<Vec<u8>, CborError> {
        let Some(len) = len else {
            let mut out = Vec::new();
            loop {
                match self.pull()? {
                    (_, Header::Break) => return Ok(out),
                    (_, Header::Bytes(Some(n))) if !text => out.extend(self.chunk(n, false)?),
                    (_, Header::Text(Some(n))) if text => out.extend(self.chunk(n, true)?),
                    // Chunks must be definite strings of the same type.
                    (offset, _) => return Err(CborError::Malformed { offset }),
                }
            }
        };
        self.chunk(len, text)
    }

    fn chunk(&mut self, len: usize, text: bool) -> Result<Vec<u8>, CborError> {
        if len > self.remaining() {
            return Err(CborError::UnexpectedEof);
        }
        let mut buf = vec![0; len];
        self.dec
            .read_exact(&mut buf)
            .map_err(|_| CborError::UnexpectedEof)?;
        if text && std::str::from_utf8(&buf).is_err() {
            return Err(CborError::InvalidUtf8);
        }
        Ok(buf)
    }

    fn text(&mut self, len: Option<usize>) -> Result<String, CborError> {
        let bytes = self.string(len, true)?;
        String::from_utf8(bytes).map_err(|_| CborError::InvalidUtf8)
    }

    fn array(&mut self, len: Option<usize>, depth: usize) -> Result<Value, CborError> {
        check_depth(depth)?;
        check_count(len, MAX_ARRAY_ELEMENTS, CborError::TooManyElements)?;
        let capacity = len.unwrap_or(0).min(self.remaining());
        let mut items = Vec::with_capacity(capacity);
        loop {
            if len.is_some_and(|n| items.len() == n) {
                break;
            }
            let (offset, header) = self.pull()?;
            if len.is_none() && header == Header::Break {
                break;
            }
            check_count(
                Some(items.len() + 1),
                MAX_ARRAY_ELEMENTS,
                CborError::TooManyElements,
            )?;
            items.push(self.item(offset, header, depth)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, len: Option<usize>, depth: usize) -> Result<Value, CborError> {
        check_depth(depth)?;
        check_count(len, MAX_MAP_PAIRS, CborError::TooManyPairs)?;
        let mut map = Map::new();
        let mut index = 0;
        loop {
            if len.is_some_and(|n| index == n) {
                break;
            }
            let (offset, header) = self.pull()?;
            if len.is_none() && header == Header::Break {
                break;
            }
            check_count(Some(index + 1), MAX_MAP_PAIRS, CborError::TooManyPairs)?;
            let key = self.key(offset, header, depth)?;
            if map.contains_key(&key) {
                return Err(CborError::DuplicateKey { key, index });
            }
            let value = self.value(depth)?;
            map.insert(key, value);
            index += 1;
        }
        Ok(Value::Object(map))
    }

    /// Map keys are text or byte strings (possibly tagged), as the keys of
    /// upstream's `map[string]interface{}`.
    fn key(&mut self, offset: usize, header: Header, depth: usize) -> Result<String, CborError> {
        match header {
            Header::Text(len) => self.text(len),
            Header::Bytes(len) => self.string(len, false).map(lossy),
            Header::Tag(_) => match self.item(offset, header, depth)? {
                Value::String(s) => Ok(s),
                other => Err(CborError::NonStringKey(json_kind(&other))),
            },
            other => Err(CborError::NonStringKey(kind(&other))),
        }
    }

    fn tag(&mut self, tag: u64, depth: usize) -> Result<Value, CborError> {
        check_depth(depth)?;
        match tag {
            0 => match self.pull()? {
                (_, Header::Text(len)) => {
                    let text = self.text(len)?;
                    crate::time::from_rfc3339(&text).map(Value::String)
                }
                (_, other) => Err(CborError::TagContent {
                    tag,
                    expected: "text string",
                    got: kind(&other),
                }),
            },
            1 => {
                let seconds = match self.pull()? {
                    (_, Header::Positive(n)) => positive(n)? as f64,
                    (_, Header::Negative(n)) => negative(n)? as f64,
                    (_, Header::Float(f)) => float(f)?.as_f64().unwrap_or_default(),
                    (_, other) => {
                        return Err(CborError::TagContent {
                            tag,
                            expected: "integer or floating-point number",
                            got: kind(&other),
                        })
                    }
                };
                crate::time::from_epoch(seconds).map(Value::String)
            }
            // Bignums have no faithful form in a JSON tree.
            2 | 3 => Err(CborError::Unacceptable("bignum".into())),
            21..=23 => match self.pull()? {
                (_, Header::Bytes(len)) => {
                    let bytes = self.string(len, false)?;
                    Ok(Value::String(expected_encoding(tag, &bytes)))
                }
                (offset, other) => self.item(offset, other, depth),
            },
            // The self-described tag and unknown tags stand for their content.
            _ => self.value(depth),
        }
    }
}

/// Refuses an array or map longer than its limit (`count` claimed by its
/// head, or reached while reading an indefinite one).
fn check_count(count: Option<usize>, max: usize, err: CborError) -> Result<(), CborError> {
    match count {
        Some(n) if n > max => Err(err),
        _ => Ok(()),
    }
}

fn check_depth(depth: usize) -> Result<(), CborError> {
    if depth > MAX_DEPTH {
        return Err(CborError::TooDeep);
    }
    Ok(())
}

fn positive(n: u64) -> Result<i64, CborError> {
    i64::try_from(n).map_err(|_| CborError::IntegerOverflow(n.to_string()))
}

/// The value of a major-type-1 integer, `-1 - n`.
fn negative(n: u64) -> Result<i64, CborError> {
    i64::try_from(n)
        .map(|n| -1 - n)
        .map_err(|_| CborError::IntegerOverflow(format!("-{}", u128::from(n) + 1)))
}

fn float(f: f64) -> Result<Number, CborError> {
    if f.is_nan() {
        return Err(CborError::Unacceptable("floating-point NaN".into()));
    }
    Number::from_f64(f).ok_or_else(|| CborError::Unacceptable("floating-point infinity".into()))
}

/// Byte strings become strings, as in upstream's unstructured objects;
/// bytes that are not UTF-8 are replaced as a JSON encoding of them would.
fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Tags 21, 22 and 23 ask for a byte string to be shown as base64url,
/// base64 or base16 text.
fn expected_encoding(tag: u64, bytes: &[u8]) -> String {
    match tag {
        21 => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
        22 => base64::engine::general_purpose::STANDARD.encode(bytes),
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn kind(header: &Header) -> &'static str {
    match header {
        Header::Positive(_) => "positive integer",
        Header::Negative(_) => "negative integer",
        Header::Bytes(_) => "byte string",
        Header::Text(_) => "text string",
        Header::Array(_) => "array",
        Header::Map(_) => "map",
        Header::Tag(_) => "tag",
        Header::Float(_) | Header::Simple(_) | Header::Break => "primitives",
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Number(n) if n.is_f64() => "primitives",
        Value::Number(n) if n.as_i64().is_some_and(|i| i < 0) => "negative integer",
        Value::Number(_) => "positive integer",
        Value::Array(_) => "array",
        Value::Object(_) => "map",
        _ => "primitives",
    }
}
