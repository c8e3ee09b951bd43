//! The Swagger 2.0 document in gnostic's protobuf encoding (the
//! `openapi.v2.Document` message of gnostic-models' `OpenAPIv2.proto`),
//! which kubectl and client-go ask for first. Only what the JSON document
//! uses is encoded, field numbers as in that file; vendor extensions and
//! defaults are `Any` messages whose `yaml` field holds the value (JSON
//! text, which YAML readers accept).

use serde_json::{Map, Value};

/// A protobuf message being written.
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, tag: u32, wire: u8) {
        self.varint(u64::from(tag) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, tag: u32, bytes: &[u8]) {
        self.key(tag, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn message(&mut self, tag: u32, fill: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        fill(&mut inner);
        self.bytes(tag, &inner.0);
    }

    /// A proto3 string field (absent when empty).
    fn string(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.bytes(tag, s.as_bytes());
        }
    }

    /// A repeated string field from a string or an array of strings.
    fn strings(&mut self, tag: u32, v: Option<&Value>) {
        match v {
            Some(Value::String(s)) => self.bytes(tag, s.as_bytes()),
            Some(Value::Array(items)) => {
                for s in items.iter().filter_map(Value::as_str) {
                    self.bytes(tag, s.as_bytes());
                }
            }
            _ => {}
        }
    }

    fn boolean(&mut self, tag: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            self.key(tag, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.key(tag, 0);
            self.varint(n as u64);
        }
    }

    fn double(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_f64).filter(|n| *n != 0.0) {
            self.key(tag, 1);
            self.0.extend_from_slice(&n.to_le_bytes());
        }
    }

    /// An `Any` message carrying `v` as YAML.
    fn any(&mut self, tag: u32, v: &Value) {
        self.message(tag, |w| yaml(w, v));
    }

    /// A repeated message field: one message per item of the array `v`.
    fn repeated(&mut self, tag: u32, v: Option<&Value>, fill: fn(&mut Writer, &Value)) {
        for item in v.and_then(Value::as_array).into_iter().flatten() {
            self.message(tag, |w| fill(w, item));
        }
    }

    /// A message holding only the map `v` at `field` (absent without `v`).
    fn map(&mut self, tag: u32, field: u32, v: Option<&Value>, value: fn(&mut Writer, &Value)) {
        if v.is_some() {
            self.message(tag, |w| w.named(field, v, value));
        }
    }

    /// `repeated NamedAny vendor_extension`: the object's `x-` keys.
    fn extensions(&mut self, tag: u32, obj: &Map<String, Value>) {
        for (name, value) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
            self.message(tag, |w| {
                w.bytes(1, name.as_bytes());
                w.any(2, value);
            });
        }
    }

    /// A map as `repeated Named<T> { name = 1; value = 2; }`.
    fn named(&mut self, tag: u32, v: Option<&Value>, value: fn(&mut Writer, &Value)) {
        for (name, item) in v.and_then(Value::as_object).into_iter().flatten() {
            self.message(tag, |w| {
                w.bytes(1, name.as_bytes());
                w.message(2, |w| value(w, item));
            });
        }
    }
}

/// The body of an `Any` message: `v` as YAML (JSON text).
fn yaml(w: &mut Writer, v: &Value) {
    let text = serde_json::to_string(v).unwrap_or_default();
    w.bytes(2, text.as_bytes());
}

/// Encodes a Swagger 2.0 document.
pub(super) fn document(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let Some(obj) = doc.as_object() else {
        return w.0;
    };
    w.string(1, obj.get("swagger"));
    if let Some(info) = obj.get("info").and_then(Value::as_object) {
        w.message(2, |w| {
            w.string(1, info.get("title"));
            w.string(2, info.get("version"));
            w.string(3, info.get("description"));
            w.extensions(7, info);
        });
    }
    w.string(3, obj.get("host"));
    w.string(4, obj.get("basePath"));
    w.strings(5, obj.get("schemes"));
    w.strings(6, obj.get("consumes"));
    w.strings(7, obj.get("produces"));
    w.map(8, 2, obj.get("paths"), path_item);
    w.map(9, 1, obj.get("definitions"), schema);
    w.map(10, 1, obj.get("parameters"), parameter);
    w.repeated(12, obj.get("security"), |w, requirement| {
        w.named(1, Some(requirement), |w, scopes| w.strings(1, Some(scopes)))
    });
    w.map(13, 1, obj.get("securityDefinitions"), security_definition);
    w.extensions(16, obj);
    w.0
}

fn security_definition(w: &mut Writer, v: &Value) {
    // Only API keys (upstream's BearerToken) are published.
    w.message(2, |w| {
        for (tag, key) in [(1, "type"), (2, "name"), (3, "in"), (4, "description")] {
            w.string(tag, v.get(key));
        }
    });
}

fn path_item(w: &mut Writer, v: &Value) {
    let Some(obj) = v.as_object() else {
        return;
    };
    w.string(1, obj.get("$ref"));
    let methods = [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ];
    for (method, tag) in methods {
        if let Some(op) = obj.get(method) {
            w.message(tag, |w| operation(w, op));
        }
    }
    w.repeated(9, obj.get("parameters"), parameters_item);
    w.extensions(10, obj);
}

fn operation(w: &mut Writer, v: &Value) {
    let Some(obj) = v.as_object() else {
        return;
    };
    w.strings(1, obj.get("tags"));
    w.string(2, obj.get("summary"));
    w.string(3, obj.get("description"));
    w.string(5, obj.get("operationId"));
    w.strings(6, obj.get("produces"));
    w.strings(7, obj.get("consumes"));
    w.repeated(8, obj.get("parameters"), parameters_item);
    w.map(9, 1, obj.get("responses"), |w, r| {
        w.message(1, |w| response(w, r))
    });
    w.strings(10, obj.get("schemes"));
    w.boolean(11, obj.get("deprecated"));
    w.extensions(13, obj);
}

fn response(w: &mut Writer, v: &Value) {
    w.string(1, v.get("description"));
    if let Some(s) = v.get("schema") {
        w.message(2, |w| w.message(1, |w| schema(w, s)));
    }
    if let Some(obj) = v.as_object() {
        w.extensions(5, obj);
    }
}

/// `ParametersItem { Parameter parameter = 1; JsonReference json_reference = 2; }`.
fn parameters_item(w: &mut Writer, v: &Value) {
    if let Some(reference) = v.get("$ref") {
        w.message(2, |w| w.string(1, Some(reference)));
        return;
    }
    w.message(1, |w| parameter(w, v));
}

/// `Parameter { BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2; }`.
fn parameter(w: &mut Writer, v: &Value) {
    if v.get("in").and_then(Value::as_str) == Some("body") {
        w.message(1, |w| {
            for (tag, key) in [(1, "description"), (2, "name"), (3, "in")] {
                w.string(tag, v.get(key));
            }
            w.boolean(4, v.get("required"));
            if let Some(s) = v.get("schema") {
                w.message(5, |w| schema(w, s));
            }
        });
    } else {
        w.message(2, |w| non_body_parameter(w, v));
    }
}

/// The query and form sub-schemas have `allow_empty_value` at 5, which
/// shifts every later field by one against the path and header ones.
fn non_body_parameter(w: &mut Writer, v: &Value) {
    let (tag, shifted) = match v.get("in").and_then(Value::as_str) {
        Some("header") => (1, false),
        Some("formData") => (2, true),
        Some("path") => (4, false),
        _ => (3, true),
    };
    let at = |n: u32| if shifted { n + 1 } else { n };
    w.message(tag, |w| {
        w.boolean(1, v.get("required"));
        for (tag, key) in [(2, "in"), (3, "description"), (4, "name")] {
            w.string(tag, v.get(key));
        }
        if shifted {
            w.boolean(5, v.get("allowEmptyValue"));
        }
        w.string(at(5), v.get("type"));
        w.string(at(6), v.get("format"));
        if let Some(d) = v.get("default") {
            w.any(at(9), d);
        }
        w.boolean(at(19), v.get("uniqueItems"));
        if let Some(obj) = v.as_object() {
            w.extensions(at(22), obj);
        }
    });
}

fn schema(w: &mut Writer, v: &Value) {
    let Some(obj) = v.as_object() else {
        return;
    };
    for (tag, key) in [(1, "$ref"), (2, "format"), (3, "title"), (4, "description")] {
        w.string(tag, obj.get(key));
    }
    if let Some(d) = obj.get("default") {
        w.any(5, d);
    }
    for (tag, key) in [(6, "multipleOf"), (7, "maximum")] {
        w.double(tag, obj.get(key));
    }
    w.boolean(8, obj.get("exclusiveMaximum"));
    w.double(9, obj.get("minimum"));
    w.boolean(10, obj.get("exclusiveMinimum"));
    w.int64(11, obj.get("maxLength"));
    w.int64(12, obj.get("minLength"));
    w.string(13, obj.get("pattern"));
    w.int64(14, obj.get("maxItems"));
    w.int64(15, obj.get("minItems"));
    w.boolean(16, obj.get("uniqueItems"));
    w.int64(17, obj.get("maxProperties"));
    w.int64(18, obj.get("minProperties"));
    w.strings(19, obj.get("required"));
    w.repeated(20, obj.get("enum"), yaml);
    match obj.get("additionalProperties") {
        Some(Value::Bool(b)) => w.message(21, |w| {
            w.key(2, 0);
            w.varint(u64::from(*b));
        }),
        Some(s @ Value::Object(_)) => w.message(21, |w| w.message(1, |w| schema(w, s))),
        _ => {}
    }
    if let Some(t) = obj.get("type") {
        w.message(22, |w| w.strings(1, Some(t)));
    }
    match obj.get("items") {
        Some(Value::Array(items)) => w.message(23, |w| {
            for item in items {
                w.message(1, |w| schema(w, item));
            }
        }),
        Some(item @ Value::Object(_)) => w.message(23, |w| w.message(1, |w| schema(w, item))),
        _ => {}
    }
    w.repeated(24, obj.get("allOf"), schema);
    w.map(25, 1, obj.get("properties"), schema);
    w.string(26, obj.get("discriminator"));
    w.boolean(27, obj.get("readOnly"));
    if let Some(e) = obj.get("example") {
        w.any(30, e);
    }
    w.extensions(31, obj);
}
