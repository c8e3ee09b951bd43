//! The parts of a structural OpenAPI v3 schema that CEL rules depend on:
//! each node's type (which decides how JSON values become CEL values), its
//! size bounds (which drive the cost estimate), list semantics (which decide
//! how `oldSelf` is correlated), the rules declared on it and, once the
//! compiler has filled them in, those rules compiled.

use apimachinery::field_errors::ErrorType;
use cel::Program;
use serde_json::Value;

use crate::limits::{
    JSON_DATE_SIZE, MAX_DATETIME_SIZE_JSON, MAX_DURATION_SIZE_JSON, MAX_REQUEST_SIZE_BYTES,
    MIN_BOOL_SIZE, MIN_DATETIME_SIZE_JSON, MIN_DURATION_SIZE_JSON, MIN_NUMBER_SIZE,
    MIN_STRING_SIZE,
};

/// The CEL-relevant type of a schema node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Object,
    Array,
    String,
    /// `format: byte`: base64 in JSON, `bytes` in CEL.
    Bytes,
    /// `format: duration`.
    Duration,
    /// `format: date` or `format: date-time`.
    Timestamp,
    Integer,
    Number,
    Boolean,
    /// `x-kubernetes-int-or-string`: `dyn` in CEL.
    IntOrString,
    /// No type (e.g. `x-kubernetes-preserve-unknown-fields` alone): the
    /// value is converted from its JSON shape.
    Any,
}

/// How a list's items are identified, from `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// One declared `x-kubernetes-validations` entry, before compilation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RuleSpec {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

impl RuleSpec {
    fn parse(value: &Value) -> Self {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        RuleSpec {
            rule: text("rule"),
            message: text("message"),
            message_expression: text("messageExpression"),
            reason: value
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            field_path: text("fieldPath"),
            optional_old_self: value.get("optionalOldSelf").and_then(Value::as_bool),
        }
    }

    /// The rule as upstream renders the internal `ValidationRule` struct
    /// when it is the bad value of a field error: Go's JSON encoding of a
    /// struct without tags, field names as keys in declaration order.
    pub fn go_json(&self) -> String {
        fn text_field(out: &mut String, name: &str, value: &str) {
            out.push_str(if out.is_empty() { "{\"" } else { ",\"" });
            out.push_str(name);
            out.push_str("\":");
            push_go_json_string(out, value);
        }
        let mut out = String::with_capacity(self.rule.len() + 128);
        text_field(&mut out, "Rule", &self.rule);
        text_field(&mut out, "Message", &self.message);
        text_field(&mut out, "MessageExpression", &self.message_expression);
        out.push_str(",\"Reason\":");
        match &self.reason {
            Some(reason) => push_go_json_string(&mut out, reason),
            None => out.push_str("null"),
        }
        text_field(&mut out, "FieldPath", &self.field_path);
        out.push_str(",\"OptionalOldSelf\":");
        out.push_str(match self.optional_old_self {
            Some(true) => "true",
            Some(false) => "false",
            None => "null",
        });
        out.push('}');
        out
    }
}

/// Appends `s` as Go's `encoding/json` writes a string, HTML-safe escapes
/// included.
fn push_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A rule ready to evaluate.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    pub spec: RuleSpec,
    pub program: Program,
    pub uses_old_self: bool,
    pub optional_old_self: bool,
    pub message_program: Option<Program>,
    /// The normalised `fieldPath`, when one is set.
    pub field_path: Option<String>,
    pub reason: ErrorType,
    /// The static worst-case cost of one evaluation.
    pub max_cost: u64,
    pub message_max_cost: u64,
}

/// A schema node with its children.
#[derive(Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    /// The schema's `type` string, the bad value of runtime errors.
    pub type_name: String,
    pub properties: Vec<(String, Node)>,
    pub items: Option<Box<Node>>,
    pub additional: Option<Box<Node>>,
    pub list_type: ListType,
    /// The most elements (items, properties, characters) a value of this
    /// node can hold, as upstream estimates it.
    pub max_elements: u64,
    /// The size of the smallest JSON serialisation of a value of this node.
    pub min_size: u64,
    /// Whether `maxItems` (lists) or `maxProperties` (maps) is declared.
    pub bounded: bool,
    pub rules: Vec<RuleSpec>,
    /// The rules once compiled; filled in by the compiler.
    pub compiled: Vec<CompiledRule>,
    /// Whether this node or one below it has compiled rules; filled in
    /// once compiled, so validation skips subtrees without rules.
    pub rules_below: bool,
    /// A number unique within the schema, to key per-node data on.
    pub id: usize,
    pub embedded: bool,
    /// `x-kubernetes-map-type: atomic`: the properties of an object
    /// cannot be correlated with their old values one by one.
    pub atomic_map: bool,
}

impl Node {
    /// Parses a schema; `root` marks the resource root, where `apiVersion`,
    /// `kind` and `metadata.name`/`generateName` are always visible.
    pub fn parse(schema: &Value, root: bool) -> Node {
        let mut node = Node::parse_plain(schema);
        if root || node.embedded {
            node.add_type_and_object_meta();
        }
        node
    }

    fn parse_plain(schema: &Value) -> Node {
        let get = |key: &str| schema.get(key);
        let flag = |key: &str| get(key).and_then(Value::as_bool).unwrap_or(false);
        let bound = |key: &str| get(key).and_then(Value::as_i64).map(|v| v.max(0) as u64);
        let type_name = get("type").and_then(Value::as_str).unwrap_or_default();
        let kind = kind_of(schema);
        let properties: Vec<(String, Node)> = get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, s)| (name.clone(), Node::parse(s, false)))
                    .collect()
            })
            .unwrap_or_default();
        let items = get("items")
            .filter(|v| v.is_object())
            .map(|s| Box::new(Node::parse(s, false)));
        let additional = get("additionalProperties")
            .filter(|v| v.is_object())
            .map(|s| Box::new(Node::parse(s, false)));
        let list_type = list_type_of(schema);
        let rules = get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(RuleSpec::parse).collect())
            .unwrap_or_default();
        let required: Vec<&str> = get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut node = Node {
            kind,
            type_name: type_name.to_owned(),
            properties,
            items,
            additional,
            list_type,
            max_elements: 0,
            min_size: 0,
            bounded: false,
            rules,
            compiled: Vec::new(),
            rules_below: false,
            id: 0,
            embedded: flag("x-kubernetes-embedded-resource"),
            atomic_map: get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
        };
        node.bounded = match node.kind {
            Kind::Array => bound("maxItems").is_some(),
            Kind::Object => bound("maxProperties").is_some(),
            _ => false,
        };
        node.min_size = node.compute_min_size(schema, &required);
        node.max_elements = node.compute_max_elements(schema, bound);
        node
    }

    /// Upstream's minimal serialized size of a value of this node.
    fn compute_min_size(&self, schema: &Value, required: &[&str]) -> u64 {
        match self.kind {
            Kind::IntOrString => 1,
            Kind::Object if self.additional.is_none() => {
                let mut size = 2;
                for (name, prop) in &self.properties {
                    let has_default = prop_has_default(schema, name);
                    if required.contains(&name.as_str()) && !has_default {
                        size += name.len() as u64 + prop.min_size + 4;
                    }
                }
                size
            }
            Kind::Object | Kind::Array | Kind::Any => 2,
            Kind::String | Kind::Bytes => MIN_STRING_SIZE,
            Kind::Duration => MIN_DURATION_SIZE_JSON,
            Kind::Timestamp => {
                if schema.get("format").and_then(Value::as_str) == Some("date") {
                    JSON_DATE_SIZE
                } else {
                    MIN_DATETIME_SIZE_JSON
                }
            }
            Kind::Integer | Kind::Number => MIN_NUMBER_SIZE,
            Kind::Boolean => MIN_BOOL_SIZE,
        }
    }

    /// Upstream's `MaxElements` for the node's declared type.
    fn compute_max_elements(&self, schema: &Value, bound: impl Fn(&str) -> Option<u64>) -> u64 {
        let per_request = MAX_REQUEST_SIZE_BYTES - 2;
        match self.kind {
            Kind::Array => match (&self.items, bound("maxItems")) {
                (_, Some(max)) => max,
                (Some(items), None) => per_request / (items.min_size + 1),
                (None, None) => per_request / 3,
            },
            Kind::Object => match (&self.additional, bound("maxProperties")) {
                (Some(_), Some(max)) => max,
                (Some(values), None) => per_request / (values.min_size + 6),
                (None, _) => 0,
            },
            Kind::String | Kind::IntOrString => match bound("maxLength") {
                Some(max) => max.saturating_mul(4),
                None => schema
                    .get("enum")
                    .and_then(Value::as_array)
                    .filter(|e| !e.is_empty() && self.kind == Kind::String)
                    .map(|e| {
                        e.iter()
                            .filter_map(Value::as_str)
                            .map(|s| s.len() as u64)
                            .max()
                            .unwrap_or(0)
                    })
                    .unwrap_or(per_request),
            },
            Kind::Bytes => bound("maxLength").unwrap_or(per_request),
            Kind::Duration => MAX_DURATION_SIZE_JSON,
            Kind::Timestamp => {
                if schema.get("format").and_then(Value::as_str) == Some("date") {
                    JSON_DATE_SIZE
                } else {
                    MAX_DATETIME_SIZE_JSON
                }
            }
            Kind::Any => per_request,
            Kind::Integer | Kind::Number | Kind::Boolean => 0,
        }
    }

    /// Makes `apiVersion`, `kind`, `metadata.name` and
    /// `metadata.generateName` visible, as upstream does for the resource
    /// root and embedded resources.
    fn add_type_and_object_meta(&mut self) {
        if self.kind != Kind::Object {
            return;
        }
        let string = || Node::parse_plain(&serde_json::json!({"type": "string"}));
        for name in ["apiVersion", "kind"] {
            if self.property(name).is_none() {
                self.properties.push((name.to_owned(), string()));
            }
        }
        let meta = Node::parse_plain(&serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}
        }));
        match self.properties.iter_mut().find(|(n, _)| n == "metadata") {
            Some((_, existing)) if existing.rules.is_empty() => {
                existing.kind = Kind::Object;
                existing.properties = meta.properties;
            }
            Some(_) => {}
            None => self.properties.push(("metadata".to_owned(), meta)),
        }
    }

    /// The schema of property `name`.
    pub fn property(&self, name: &str) -> Option<&Node> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, node)| node)
    }

    /// Numbers the nodes from `next` on and marks the subtrees with
    /// compiled rules; returns the next free number.
    pub fn finish(&mut self, next: usize) -> usize {
        self.id = next;
        let mut next = next + 1;
        let mut below = !self.compiled.is_empty();
        for (_, prop) in &mut self.properties {
            next = prop.finish(next);
            below |= prop.rules_below;
        }
        for child in [self.items.as_deref_mut(), self.additional.as_deref_mut()]
            .into_iter()
            .flatten()
        {
            next = child.finish(next);
            below |= child.rules_below;
        }
        self.rules_below = below;
        next
    }
}

/// The CEL-relevant type a schema declares.
fn kind_of(schema: &Value) -> Kind {
    let text = |key: &str| schema.get(key).and_then(Value::as_str).unwrap_or_default();
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if int_or_string {
        return Kind::IntOrString;
    }
    match (text("type"), text("format")) {
        ("object", _) => Kind::Object,
        ("array", _) => Kind::Array,
        ("string", "byte") => Kind::Bytes,
        ("string", "duration") => Kind::Duration,
        ("string", "date" | "date-time") => Kind::Timestamp,
        ("string", _) => Kind::String,
        ("integer", _) => Kind::Integer,
        ("number", _) => Kind::Number,
        ("boolean", _) => Kind::Boolean,
        _ => Kind::Any,
    }
}

/// A list's `x-kubernetes-list-type` (with its map keys).
fn list_type_of(schema: &Value) -> ListType {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(
            schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        ),
        _ => ListType::Atomic,
    }
}

fn prop_has_default(schema: &Value, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(|p| p.get(name))
        .is_some_and(|p| p.get("default").is_some())
}
