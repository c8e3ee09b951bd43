//! The output-only parts of upstream's serializers
//! (`runtime/serializer/json`): `json.Encoder.Encode` escapes `<`, `>`,
//! `&` (as `\u003c`, `\u003e`, `\u0026`) and U+2028/U+2029, writes floats
//! in Go's format and ends with a newline; `json.MarshalIndent` (pretty
//! output) indents by two spaces and adds no newline; YAML is
//! `sigs.k8s.io/yaml`'s `JSONToYAML`, written by [`yaml`] as go-yaml v2
//! writes it.

pub mod yaml;

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// Compact JSON as `json.Encoder.Encode` writes it, newline included.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Go(CompactFormatter));
    value.serialize(&mut ser)?;
    out.push(b'\n');
    Ok(out)
}

/// Indented JSON as `json.MarshalIndent(v, "", "  ")` writes it.
pub fn to_vec_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Go(PrettyFormatter::new()));
    value.serialize(&mut ser)?;
    Ok(out)
}

/// YAML as `sigs.k8s.io/yaml.JSONToYAML` writes it (see [`yaml`]).
pub fn to_yaml<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    let tree = serde_json::to_value(value).map_err(|e| e.to_string())?;
    Ok(yaml::to_string(&tree))
}

/// A formatter writing strings and floats as Go does, around `F`'s layout.
struct Go<F>(F);

impl<F: Formatter> Formatter for Go<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_go_escaped(writer, fragment.as_bytes())
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(go_float(value, false).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(go_float(f64::from(value), true).as_bytes())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Writes a run of string bytes that serde_json leaves unescaped, with the
/// escapes Go adds: `<`, `>`, `&`, U+2028 and U+2029.
fn write_go_escaped<W: ?Sized + io::Write>(writer: &mut W, bytes: &[u8]) -> io::Result<()> {
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let (escape, len): (&[u8], usize) = match bytes[i] {
            b'<' => (b"\\u003c", 1),
            b'>' => (b"\\u003e", 1),
            b'&' => (b"\\u0026", 1),
            0xE2 if bytes.get(i + 1) == Some(&0x80) => match bytes.get(i + 2) {
                Some(0xA8) => (b"\\u2028", 3),
                Some(0xA9) => (b"\\u2029", 3),
                _ => {
                    i += 1;
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        writer.write_all(&bytes[start..i])?;
        writer.write_all(escape)?;
        i += len;
        start = i;
    }
    writer.write_all(&bytes[start..])
}

/// Go's `floatEncoder`: the shortest representation, in `%f` form unless
/// the magnitude is below 1e-6 or at least 1e21, then in `%e` form with
/// a signed exponent of at least one digit.
fn go_float(value: f64, single: bool) -> String {
    let abs = value.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return if single {
            format!("{}", value as f32)
        } else {
            format!("{value}")
        };
    }
    let text = if single {
        format!("{:e}", value as f32)
    } else {
        format!("{value:e}")
    };
    match text.split_once('e') {
        Some((mantissa, exp)) if exp.starts_with('-') => format!("{mantissa}e{exp}"),
        Some((mantissa, exp)) => format!("{mantissa}e+{exp}"),
        None => text,
    }
}

#[cfg(test)]
mod tests;
