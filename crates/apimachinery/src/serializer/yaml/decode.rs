//! go-yaml v2's decoder into `interface{}` (decode.go `decoder`) followed
//! by sigs.k8s.io/yaml's `convertToJSONableObject` and `json.Marshal`, as
//! `yaml.YAMLToJSON` chains them, walking the node tree with an explicit
//! stack:
//!
//! - every node decoded counts, and those reached through an alias count
//!   as aliased; past go-yaml's allowed ratio the document "contains
//!   excessive aliasing" (`allowedAliasRatio`), so alias expansion costs
//!   at most a bounded multiple of the document;
//! - merge keys (`<<`) copy a mapping, or a list of them (earlier ones
//!   winning), into the mapping that holds them;
//! - keys become strings as sigs.k8s.io/yaml makes them (integers in
//!   decimal, floats as Go's `%g` of a float32, booleans), other keys are
//!   refused with its messages;
//! - floats become JSON numbers as Go's encoder prints them (`1.0` is the
//!   integer `1`), and NaN or infinities are refused as `json.Marshal`
//!   refuses them.

use serde_json::{Map, Number, Value};

use super::nodes::{Document, Node};
use super::resolve::{self, Scalar};
use crate::serializer::DecodeError;
use crate::util::gofmt::{go_float, go_quote};

const RATIO_RANGE_LOW: u64 = 400_000;
const RATIO_RANGE_HIGH: u64 = 4_000_000;

/// Decodes the document into its JSON value.
pub(super) fn decode(doc: &Document) -> Result<Value, DecodeError> {
    let Some(root) = doc.root else {
        return Ok(Value::Null);
    };
    let mut walk = Walk {
        doc,
        stack: Vec::new(),
        active: vec![false; doc.nodes.len()],
        decoded: 1,
        aliased: 0,
        aliases: 0,
        unsupported_key: None,
        unsupported_value: None,
    };
    let value = walk.run(root)?;
    match (walk.unsupported_key, walk.unsupported_value) {
        (Some(err), _) | (None, Some(err)) => Err(DecodeError::Syntax(err)),
        (None, None) => Ok(value),
    }
}

/// A decoded node: scalars keep their Go type until their place (key or
/// value) is known.
enum Out {
    Scalar(Scalar),
    Json(Value),
}

enum Frame {
    Sequence {
        node: usize,
        next: usize,
        items: Vec<Value>,
    },
    /// A mapping's pairs decoded into the map of the frame at `owner` (its
    /// own frame, or the mapping a merge key copies it into).
    Mapping {
        node: usize,
        next: usize,
        owner: usize,
        map: Map<String, Value>,
        key: Option<Scalar>,
    },
    /// A merge key's list of mappings, copied last first.
    MergeList {
        node: usize,
        left: usize,
        owner: usize,
    },
    /// An alias being expanded: its node may not be reached again inside.
    Alias { node: usize },
}

struct Walk<'a> {
    doc: &'a Document,
    stack: Vec<Frame>,
    /// Aliases being expanded (go-yaml's `decoder.aliases`).
    active: Vec<bool>,
    decoded: u64,
    aliased: u64,
    /// Alias frames on the stack (go-yaml's `aliasDepth`).
    aliases: usize,
    unsupported_key: Option<String>,
    unsupported_value: Option<String>,
}

impl Walk<'_> {
    fn run(&mut self, root: usize) -> Result<Value, DecodeError> {
        let mut done = self.enter(root)?;
        loop {
            if let Some(out) = done.take() {
                match self.stack.len() {
                    0 => return Ok(self.json(out)),
                    _ => self.deliver(out)?,
                }
            }
            done = self.step()?;
        }
    }

    /// go-yaml's `unmarshal` of one node: counted, then a scalar is done
    /// at once and a collection or alias opens a frame.
    fn enter(&mut self, node: usize) -> Result<Option<Out>, DecodeError> {
        self.count()?;
        match &self.doc.nodes[node] {
            Node::Scalar {
                tag,
                value,
                implicit,
            } => resolve::scalar(tag.as_deref(), value, *implicit)
                .map(|s| Some(Out::Scalar(s)))
                .map_err(DecodeError::Syntax),
            Node::Sequence(_) => {
                self.stack.push(Frame::Sequence {
                    node,
                    next: 0,
                    items: Vec::new(),
                });
                Ok(None)
            }
            Node::Mapping(_) => {
                self.stack.push(Frame::Mapping {
                    node,
                    next: 0,
                    owner: self.stack.len(),
                    map: Map::new(),
                    key: None,
                });
                Ok(None)
            }
            Node::Alias { name, target } => {
                if self.active[node] {
                    return Err(syntax(format!(
                        "yaml: anchor '{name}' value contains itself"
                    )));
                }
                self.active[node] = true;
                self.aliases += 1;
                self.stack.push(Frame::Alias { node });
                let target = *target;
                let out = self.enter(target)?;
                // A scalar is done at once: so is its alias.
                if out.is_some() {
                    self.finished(None)?;
                }
                Ok(out)
            }
        }
    }

    fn count(&mut self) -> Result<(), DecodeError> {
        self.decoded += 1;
        if self.aliases > 0 {
            self.aliased += 1;
        }
        let (aliased, decoded) = (self.aliased, self.decoded);
        if aliased > 100
            && decoded > 1000
            && aliased as f64 / decoded as f64 > allowed_ratio(decoded)
        {
            return Err(DecodeError::ExcessiveAliasing);
        }
        Ok(())
    }

    /// Hands a finished node to the frame that asked for it.
    fn deliver(&mut self, out: Out) -> Result<(), DecodeError> {
        let value = match self.stack.last_mut() {
            Some(Frame::Mapping {
                key: key @ None, ..
            }) => {
                *key = Some(match out {
                    Out::Scalar(s) => s,
                    Out::Json(v) => {
                        return Err(syntax(format!("yaml: invalid map key: {}", go_sharp_v(&v))))
                    }
                });
                return Ok(());
            }
            _ => self.json(out),
        };
        match self.stack.last_mut() {
            Some(Frame::Sequence { items, .. }) => items.push(value),
            Some(Frame::Mapping { owner, key, .. }) => {
                let (owner, key) = (*owner, key.take().unwrap_or(Scalar::Null));
                self.insert(owner, key, value);
            }
            _ => {}
        }
        Ok(())
    }

    /// Advances the top frame: enters its next node, or finishes it.
    fn step(&mut self) -> Result<Option<Out>, DecodeError> {
        let nodes = &self.doc.nodes;
        match self.stack.last_mut() {
            None | Some(Frame::Alias { .. }) => self.finished(None),
            Some(Frame::Sequence { node, next, .. }) => {
                let children = children(&nodes[*node]);
                if let Some(&child) = children.get(*next) {
                    *next += 1;
                    return self.enter(child);
                }
                let Some(Frame::Sequence { items, .. }) = self.stack.pop() else {
                    return Ok(None);
                };
                self.finished(Some(Out::Json(Value::Array(items))))
            }
            Some(Frame::Mapping { node, next, .. }) => {
                let children = children(&nodes[*node]);
                if let Some(&child) = children.get(*next) {
                    let is_key = *next % 2 == 0;
                    *next += 1;
                    if is_key && is_merge(&nodes[child]) {
                        *next += 1;
                        let value = children.get(*next - 1).copied();
                        return self.merge(value);
                    }
                    return self.enter(child);
                }
                self.close_mapping()
            }
            Some(Frame::MergeList { node, left, owner }) => {
                if *left == 0 {
                    self.stack.pop();
                    return Ok(None);
                }
                *left -= 1;
                let (node, owner) = (*node, *owner);
                let item = children(&nodes[node])[*left];
                self.merge_item(item, owner)
            }
        }
    }

    /// A popped frame's value (none for a merged mapping), handed on past
    /// the alias frames that were expanding to it.
    fn finished(&mut self, out: Option<Out>) -> Result<Option<Out>, DecodeError> {
        while let Some(Frame::Alias { node }) = self.stack.last() {
            self.active[*node] = false;
            self.aliases -= 1;
            self.stack.pop();
        }
        Ok(out)
    }

    fn close_mapping(&mut self) -> Result<Option<Out>, DecodeError> {
        let here = self.stack.len() - 1;
        let Some(Frame::Mapping { owner, map, .. }) = self.stack.pop() else {
            return Ok(None);
        };
        if owner == here {
            return self.finished(Some(Out::Json(Value::Object(map))));
        }
        // A merged mapping: its pairs went to the owner.
        self.finished(None)
    }

    /// go-yaml's `merge`: the value of a `<<` key.
    fn merge(&mut self, value: Option<usize>) -> Result<Option<Out>, DecodeError> {
        // The map the `<<` key's own mapping writes to (itself, or the
        // mapping it is merged into).
        let owner = match self.stack.last() {
            Some(Frame::Mapping { owner, .. }) => *owner,
            _ => self.stack.len() - 1,
        };
        let Some(value) = value else {
            return Err(want_map());
        };
        match &self.doc.nodes[value] {
            Node::Sequence(items) => {
                self.stack.push(Frame::MergeList {
                    node: value,
                    left: items.len(),
                    owner,
                });
                Ok(None)
            }
            _ => self.merge_item(value, owner),
        }
    }

    /// One mapping (or alias of one) copied into the owner's map.
    fn merge_item(&mut self, node: usize, owner: usize) -> Result<Option<Out>, DecodeError> {
        let target = match &self.doc.nodes[node] {
            Node::Alias { target, .. } => *target,
            _ => node,
        };
        if !matches!(self.doc.nodes[target], Node::Mapping(_)) {
            return Err(want_map());
        }
        let depth = self.stack.len();
        self.enter(node)?;
        // The mapping's frame (above any alias frame) writes to the owner.
        for frame in &mut self.stack[depth..] {
            if let Frame::Mapping { owner: o, .. } = frame {
                *o = owner;
            }
        }
        Ok(None)
    }

    fn insert(&mut self, owner: usize, key: Scalar, value: Value) {
        let key = match json_key(key) {
            Ok(key) => key,
            Err((kind, shown)) => {
                self.unsupported_key.get_or_insert_with(|| {
                    format!(
                        "unsupported map key of type: {kind}, key: {shown}, value: {}",
                        go_plus_sharp_v(&value)
                    )
                });
                return;
            }
        };
        if let Some(Frame::Mapping { map, .. }) = self.stack.get_mut(owner) {
            map.insert(key, value);
        }
    }

    /// A finished node as JSON; NaN and infinities are noted for
    /// `json.Marshal`'s error and stand as null meanwhile.
    fn json(&mut self, out: Out) -> Value {
        match out {
            Out::Json(v) => v,
            Out::Scalar(s) => match json_scalar(s) {
                Ok(v) => v,
                Err(err) => {
                    self.unsupported_value.get_or_insert(err);
                    Value::Null
                }
            },
        }
    }
}

fn children(node: &Node) -> &[usize] {
    match node {
        Node::Sequence(c) | Node::Mapping(c) => c,
        _ => &[],
    }
}

fn is_merge(node: &Node) -> bool {
    matches!(node, Node::Scalar { tag, value, implicit }
        if value == "<<" && (*implicit || tag.as_deref() == Some("tag:yaml.org,2002:merge")))
}

fn want_map() -> DecodeError {
    syntax("yaml: map merge requires map or sequence of maps as the value".into())
}

fn syntax(message: String) -> DecodeError {
    DecodeError::Syntax(message)
}

fn allowed_ratio(decoded: u64) -> f64 {
    if decoded <= RATIO_RANGE_LOW {
        0.99
    } else if decoded >= RATIO_RANGE_HIGH {
        0.10
    } else {
        let range = (RATIO_RANGE_HIGH - RATIO_RANGE_LOW) as f64;
        0.99 - 0.89 * ((decoded - RATIO_RANGE_LOW) as f64 / range)
    }
}

/// sigs.k8s.io/yaml's key conversion, or the key's Go type and `%+#v`.
fn json_key(key: Scalar) -> Result<String, (&'static str, String)> {
    Ok(match key {
        Scalar::Str(s) => s,
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Float(f) => go_g32(f),
        Scalar::Uint(u) => return Err(("uint64", format!("{u:#x}"))),
        Scalar::Null => return Err(("%!s(<nil>)", "<nil>".into())),
    })
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's spellings of
/// the special values.
fn go_g32(f: f64) -> String {
    let f = f as f32;
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if (-4..6).contains(&exp) {
        format!("{f}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    }
}

/// A scalar as the JSON `json.Marshal` writes for it, read back.
fn json_scalar(s: Scalar) -> Result<Value, String> {
    Ok(match s {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Number(i.into()),
        Scalar::Uint(u) => Value::Number(u.into()),
        Scalar::Str(s) => Value::String(s),
        Scalar::Float(f) if !f.is_finite() => {
            let shown = if f.is_nan() {
                "NaN"
            } else if f > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            };
            return Err(format!("json: unsupported value: {shown}"));
        }
        // Go writes floats in [1e-6, 1e21) (and zero) without an exponent,
        // so integral ones read back as integers.
        Scalar::Float(f) if f == 0.0 || (1e-6..1e21).contains(&f.abs()) => {
            serde_json::from_str(&format!("{f}")).unwrap_or(Value::Null)
        }
        Scalar::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
    })
}

/// Go's `%#v` of a decoded value (map keys sorted, as fmt sorts them).
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(map) => {
            let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            let pairs: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_sharp_v(v)))
                .collect();
            format!("map[interface {{}}]interface {{}}{{{}}}", pairs.join(", "))
        }
    }
}

/// Go's `%+#v` of a value passed as an argument (nil prints `<nil>`).
fn go_plus_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        v => go_sharp_v(v),
    }
}
