//! Field paths and sets of field paths, as server-side apply records them
//! (upstream's `structured-merge-diff/fieldpath`): a path is a sequence of
//! elements — a struct field or map key (`f:`), a list-map element named by
//! its key fields (`k:`), a set element named by its value (`v:`) or a list
//! index (`i:`) — and a [`Set`] is a tree of them, encoded in
//! `metadata.managedFields[].fieldsV1` exactly as upstream does:
//! `{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

/// Why a `fieldsV1` document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldsError {
    #[error("expected an object at {0}")]
    NotAnObject(String),
    #[error("missing colon: {0}")]
    MissingColon(String),
    #[error("invalid path element {0:?}: {1}")]
    InvalidElement(String, String),
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum PathElement {
    /// A struct field or a key of a map.
    Field(String),
    /// An element of a list-map, by the values of its key fields (sorted by
    /// field name).
    Key(Vec<(String, Value)>),
    /// An element of a set, by its value.
    Value(Value),
    /// An element of a list by position (lists without identity).
    Index(usize),
}

impl PathElement {
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A key element; the fields are sorted by name as upstream keeps them.
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `fieldsV1` spelling: `f:name`, `k:{"name":"x"}`, `v:"a"`, `i:0`.
    pub fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&go_json(&Value::String(name.clone())));
                    out.push(':');
                    out.push_str(&go_json(value));
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{}", go_json(value)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Reads a `fieldsV1` key. `Ok(None)` is an element type this version
    /// does not know, which upstream skips.
    pub fn deserialize(s: &str) -> Result<Option<Self>, FieldsError> {
        let Some((kind, rest)) = s.split_once(':') else {
            return Err(FieldsError::MissingColon(s.to_owned()));
        };
        let invalid = |e: String| FieldsError::InvalidElement(s.to_owned(), e);
        let element = match kind {
            "f" => PathElement::Field(rest.to_owned()),
            "v" => {
                PathElement::Value(serde_json::from_str(rest).map_err(|e| invalid(e.to_string()))?)
            }
            "i" => PathElement::Index(
                rest.parse()
                    .map_err(|e: std::num::ParseIntError| invalid(e.to_string()))?,
            ),
            "k" => {
                let map: Map<String, Value> =
                    serde_json::from_str(rest).map_err(|e| invalid(e.to_string()))?;
                PathElement::key(map.into_iter().collect())
            }
            _ if kind.len() == 1 => return Ok(None),
            _ => return Err(FieldsError::MissingColon(s.to_owned())),
        };
        Ok(Some(element))
    }
}

impl Eq for PathElement {}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_key_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Upstream's human spelling, used in conflict messages:
/// `.name`, `[name="x",port=80]`, `[="a"]`, `[3]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={}", value_to_string(value))?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={}]", value_to_string(value)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

fn compare_key_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.cmp(bn).then_with(|| compare_values(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// Upstream's order of values: numbers, strings, booleans, lists, maps,
/// null; numbers numerically, lists and maps element by element.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => compare_maps(x, y),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    for (i, key) in keys.into_iter().enumerate() {
        let c = if i == x.len() {
            Ordering::Less
        } else if i == y.len() {
            Ordering::Greater
        } else {
            match (x.get(key), y.get(key)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(p), Some(q)) => compare_values(p, q),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// Go's `%v`-style spelling of a value in path strings.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(_) => go_json(v),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            (_, _, Some(f)) => f.to_string(),
            _ => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_to_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect(),
    }
}

/// JSON as Go's encoder writes it: `<`, `>` and `&` escaped.
fn go_json(v: &Value) -> String {
    let s = v.to_string();
    if !s.contains(['<', '>', '&']) {
        return s;
    }
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A path from the root of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    pub fn new(elements: Vec<PathElement>) -> Self {
        Path(elements)
    }

    /// A path of field names: `Path::fields(&["spec", "replicas"])`.
    pub fn fields(names: &[&str]) -> Self {
        Path(names.iter().map(|n| PathElement::field(*n)).collect())
    }

    pub fn child(&self, pe: PathElement) -> Path {
        let mut elements = self.0.clone();
        elements.push(pe);
        Path(elements)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|pe| write!(f, "{pe}"))
    }
}

/// A set of paths, as a tree: `members` are the paths that end here,
/// `children` the subtrees below an element. Both are kept sorted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Set {
    members: Vec<PathElement>,
    children: Vec<(PathElement, Set)>,
}

impl Set {
    pub fn new() -> Self {
        Set::default()
    }

    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Self {
        let mut set = Set::new();
        for p in paths {
            set.insert(&p.0);
        }
        set
    }

    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                if let Err(at) = self.members.binary_search(last) {
                    self.members.insert(at, last.clone());
                }
            }
            [first, rest @ ..] => self.descend(first).insert(rest),
        }
    }

    /// The subtree below `pe`, created when missing.
    pub fn descend(&mut self, pe: &PathElement) -> &mut Set {
        let at = match self.children.binary_search_by(|(k, _)| k.cmp(pe)) {
            Ok(at) => at,
            Err(at) => {
                self.children.insert(at, (pe.clone(), Set::new()));
                at
            }
        };
        &mut self.children[at].1
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.has_member(last),
            [first, rest @ ..] => self.child(first).is_some_and(|c| c.has(rest)),
        }
    }

    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// The subtree below `pe`, if any.
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children
            .binary_search_by(|(k, _)| k.cmp(pe))
            .ok()
            .map(|at| &self.children[at].1)
    }

    pub fn members(&self) -> &[PathElement] {
        &self.members
    }

    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter().map(|(k, v)| (k, v))
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.iter().all(|(_, c)| c.is_empty())
    }

    /// How many paths the set holds.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.iter().map(|(_, c)| c.len()).sum::<usize>()
    }

    pub fn union(&self, other: &Set) -> Set {
        let members = union_sorted(&self.members, &other.members);
        let mut children = Vec::with_capacity(self.children.len().max(other.children.len()));
        let (mut i, mut j) = (0, 0);
        while i < self.children.len() && j < other.children.len() {
            let (a, b) = (&self.children[i], &other.children[j]);
            match a.0.cmp(&b.0) {
                Ordering::Less => {
                    children.push(a.clone());
                    i += 1;
                }
                Ordering::Greater => {
                    children.push(b.clone());
                    j += 1;
                }
                Ordering::Equal => {
                    children.push((a.0.clone(), a.1.union(&b.1)));
                    i += 1;
                    j += 1;
                }
            }
        }
        children.extend_from_slice(&self.children[i..]);
        children.extend_from_slice(&other.children[j..]);
        Set { members, children }
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|m| other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| {
                let both = c.intersection(other.child(pe)?);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        Set { members, children }
    }

    /// The paths of `self` not in `other` (a member of `other` removes only
    /// that path, not what lies below it).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| match other.child(pe) {
                None => Some((pe.clone(), c.clone())),
                Some(o) => {
                    let diff = c.difference(o);
                    (!diff.is_empty()).then(|| (pe.clone(), diff))
                }
            })
            .collect();
        Set { members, children }
    }

    /// Like [`Set::difference`], but a member of `other` also removes
    /// everything below it (upstream's exclude filter for reset fields).
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.has_member(pe))
            .filter_map(|(pe, c)| match other.child(pe) {
                None => Some((pe.clone(), c.clone())),
                Some(o) => {
                    let diff = c.recursive_difference(o);
                    (!diff.is_empty()).then(|| (pe.clone(), diff))
                }
            })
            .collect();
        Set { members, children }
    }

    /// Every path, members of a node before its subtrees, each in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::with_capacity(self.len());
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(Path(p));
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Builds a set from parts gathered in any order: sorted once, an
    /// element met twice among the children (two spellings of one `k:`
    /// element, or one reached twice in a walk) holds the union.
    pub(crate) fn from_unsorted(
        mut members: Vec<PathElement>,
        mut children: Vec<(PathElement, Set)>,
    ) -> Set {
        members.sort_unstable();
        members.dedup();
        children.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(PathElement, Set)> = Vec::with_capacity(children.len());
        for (pe, set) in children {
            match merged.last_mut() {
                Some((last, existing)) if *last == pe => *existing = existing.union(&set),
                _ => merged.push((pe, set)),
            }
        }
        Set {
            members,
            children: merged,
        }
    }

    /// Builds a set from its parts; both must be sorted.
    pub(crate) fn from_parts(members: Vec<PathElement>, children: Vec<(PathElement, Set)>) -> Set {
        Set { members, children }
    }

    /// The `fieldsV1` document of this set.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit(false))
    }

    fn emit(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        let (mut mi, mut ci) = (0, 0);
        while mi < self.members.len() || ci < self.children.len() {
            let order = match (self.members.get(mi), self.children.get(ci)) {
                (Some(m), Some((c, _))) => m.cmp(c),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            match order {
                Ordering::Less => {
                    out.insert(self.members[mi].serialize(), Value::Object(Map::new()));
                    mi += 1;
                }
                Ordering::Greater => {
                    let (pe, c) = &self.children[ci];
                    out.insert(pe.serialize(), Value::Object(c.emit(false)));
                    ci += 1;
                }
                Ordering::Equal => {
                    let (pe, c) = &self.children[ci];
                    out.insert(pe.serialize(), Value::Object(c.emit(true)));
                    mi += 1;
                    ci += 1;
                }
            }
        }
        out
    }

    /// Reads a `fieldsV1` document.
    pub fn from_fields_v1(doc: &Value) -> Result<Set, FieldsError> {
        let Value::Object(map) = doc else {
            return Err(FieldsError::NotAnObject(String::new()));
        };
        Ok(read_node(map)?.0.unwrap_or_default())
    }
}

/// A node's subtree (None when it has no valid children) and whether the
/// node itself is a member. Members and children are collected, then
/// sorted once: keys come in the order the client sent them, and inserting
/// each into sorted vectors would be quadratic.
fn read_node(map: &Map<String, Value>) -> Result<(Option<Set>, bool), FieldsError> {
    let mut is_member = false;
    let mut any_child = false;
    let mut members = Vec::new();
    let mut children: Vec<(PathElement, Set)> = Vec::new();
    for (key, value) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::deserialize(key)? else {
            continue;
        };
        let Value::Object(child) = value else {
            return Err(FieldsError::NotAnObject(key.clone()));
        };
        any_child = true;
        let (grandchildren, child_is_member) = read_node(child)?;
        match (grandchildren, child_is_member) {
            (Some(g), true) => {
                members.push(pe.clone());
                children.push((pe, g));
            }
            (Some(g), false) => children.push((pe, g)),
            (None, true) => members.push(pe),
            (None, false) => {}
        }
    }
    if !any_child {
        return Ok((None, true));
    }
    Ok((Some(Set::from_unsorted(members, children)), is_member))
}

/// The union of two sorted, deduplicated slices.
fn union_sorted(a: &[PathElement], b: &[PathElement]) -> Vec<PathElement> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl fmt::Display for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.paths().iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

mod builder;
#[cfg(test)]
mod tests;

pub(crate) use builder::SetBuilder;
