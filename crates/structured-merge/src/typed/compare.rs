//! The comparison of two objects (which fields one adds, modifies or
//! removes relative to the other) and the removal of a set of fields from
//! an object.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Node, Ty, Typer};
use crate::fieldpath::{PathElement, Set, SetBuilder};

/// What changed from an old object to a new one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    pub removed: Set,
    pub modified: Set,
    pub added: Set,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.removed.is_empty() && self.modified.is_empty() && self.added.is_empty()
    }

    /// Drops the paths under any member of `reset` (fields the strategy
    /// resets, which nobody owns).
    pub fn exclude(&mut self, reset: &Set) {
        self.removed = self.removed.recursive_difference(reset);
        self.modified = self.modified.recursive_difference(reset);
        self.added = self.added.recursive_difference(reset);
    }
}

/// The changed paths, gathered in the objects' order: the walk's sets.
type Changes = SetBuilder;
const REMOVED: u8 = 0;
const MODIFIED: u8 = 1;
const ADDED: u8 = 2;

impl<'a> Typer<'a> {
    /// How `rhs` differs from `lhs`.
    pub fn compare(&self, ty: Ty<'a>, lhs: &Value, rhs: &Value) -> Comparison {
        let mut c = Changes::default();
        self.compare_node(ty, Some(lhs), Some(rhs), &mut c);
        Comparison {
            removed: c.build(REMOVED),
            modified: c.build(MODIFIED),
            added: c.build(ADDED),
        }
    }

    fn compare_node(&self, ty: Ty<'a>, lhs: Option<&Value>, rhs: Option<&Value>, c: &mut Changes) {
        let node = self.node2(ty, lhs, rhs);
        let leaf = |c: &mut Changes| match (lhs, rhs) {
            (None, _) => c.mark(ADDED),
            (_, None) => c.mark(REMOVED),
            (Some(l), Some(r)) if l != r => c.mark(MODIFIED),
            _ => {}
        };
        match node {
            Node::Leaf => return leaf(c),
            Node::Fields(fields) => {
                let (l, r) = (
                    lhs.and_then(Value::as_object),
                    rhs.and_then(Value::as_object),
                );
                if l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty) {
                    return leaf(c);
                }
                let empty = Map::new();
                let (l, r) = (l.unwrap_or(&empty), r.unwrap_or(&empty));
                for key in l.keys().chain(r.keys().filter(|k| !l.contains_key(*k))) {
                    let child_ty = fields.field_ty(key).unwrap_or(Ty::Untyped);
                    c.push(PathElement::field(key.as_str()));
                    self.compare_node(child_ty, l.get(key), r.get(key), c);
                    c.pop();
                }
            }
            Node::Items { elem, keys } => {
                let (l, r) = (lhs.and_then(Value::as_array), rhs.and_then(Value::as_array));
                if l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty) {
                    return leaf(c);
                }
                let empty = Vec::new();
                let (l, r) = (l.unwrap_or(&empty), r.unwrap_or(&empty));
                self.compare_items(elem, keys, l, r, c);
            }
        }
        match (lhs, rhs) {
            (None, Some(_)) => c.mark(ADDED),
            (Some(_), None) => c.mark(REMOVED),
            _ => {}
        }
    }

    fn compare_items(
        &self,
        elem: Ty<'a>,
        keys: Option<&[String]>,
        lhs: &[Value],
        rhs: &[Value],
        c: &mut Changes,
    ) {
        // Elements grouped by key, keys in order of first appearance (lhs
        // first); elements without a valid key are not compared.
        let mut order: Vec<PathElement> = Vec::new();
        let mut groups: HashMap<String, (Vec<&Value>, Vec<&Value>)> = HashMap::new();
        for (side, items) in [(0, lhs), (1, rhs)] {
            for item in items {
                let Ok(pe) = self.item_key(elem, keys, item) else {
                    continue;
                };
                let group = groups.entry(pe.serialize()).or_insert_with(|| {
                    order.push(pe.clone());
                    (Vec::new(), Vec::new())
                });
                if side == 0 {
                    group.0.push(item);
                } else {
                    group.1.push(item);
                }
            }
        }
        for pe in order {
            let Some((l, r)) = groups.get(&pe.serialize()) else {
                continue;
            };
            c.push(pe);
            match (l.len(), r.len()) {
                (0..=1, 0..=1) => {
                    self.compare_node(elem, l.first().copied(), r.first().copied(), c);
                }
                (2.., 2..) => {
                    if l != r {
                        c.mark(MODIFIED);
                    }
                }
                (2.., _) => {
                    if let Some(first) = r.first() {
                        self.compare_node(elem, None, Some(first), c);
                    }
                    c.mark(REMOVED);
                }
                (_, _) => {
                    if let Some(first) = l.first() {
                        self.compare_node(elem, Some(first), None, c);
                    }
                    c.mark(ADDED);
                }
            }
            c.pop();
        }
    }

    /// `value` without the fields in `set` (a member removes the field and
    /// everything below it). Returns `None` when nothing is left.
    pub fn remove(&self, ty: Ty<'a>, value: &Value, set: &Set) -> Option<Value> {
        match (self.node(ty, Some(value)), value) {
            (Node::Fields(fields), Value::Object(map)) if !map.is_empty() => {
                let mut out = Map::new();
                for (key, child) in map {
                    let pe = PathElement::field(key.as_str());
                    if set.has_member(&pe) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) if !sub.is_empty() => {
                            let child_ty = fields.field_ty(key).unwrap_or(Ty::Untyped);
                            if let Some(v) = self.remove(child_ty, child, sub) {
                                out.insert(key.clone(), v);
                            }
                        }
                        _ => {
                            out.insert(key.clone(), child.clone());
                        }
                    }
                }
                (!out.is_empty()).then_some(Value::Object(out))
            }
            (Node::Items { elem, keys }, Value::Array(items)) if !items.is_empty() => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let Ok(pe) = self.item_key(elem, keys, item) else {
                        out.push(item.clone());
                        continue;
                    };
                    if set.has_member(&pe) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) if !sub.is_empty() => out.extend(self.remove(elem, item, sub)),
                        _ => out.push(item.clone()),
                    }
                }
                (!out.is_empty()).then_some(Value::Array(out))
            }
            _ => Some(value.clone()),
        }
    }
}
