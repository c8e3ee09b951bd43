//! The merge of an applied configuration (rhs) into a live object (lhs):
//! leaves and atomic containers take the configuration's value, granular
//! maps and structs merge field by field, sets and list-maps element by
//! element in upstream's order (live elements stay where they are, new
//! ones follow the configuration's order).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{Node, Ty, TypeError, TypeErrors, Typer};
use crate::fieldpath::PathElement;

impl<'a> Typer<'a> {
    /// `lhs` with `rhs` merged in.
    pub fn merge(&self, ty: Ty<'a>, lhs: &Value, rhs: &Value) -> Result<Value, TypeErrors> {
        let mut errors = Vec::new();
        let out = self.merge_node(ty, Some(lhs), Some(rhs), &mut String::new(), &mut errors);
        if !errors.is_empty() {
            return Err(TypeErrors(errors));
        }
        Ok(out.unwrap_or_else(|| Value::Object(Map::new())))
    }

    fn merge_node(
        &self,
        ty: Ty<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut String,
        errors: &mut Vec<TypeError>,
    ) -> Option<Value> {
        let keep_rhs = || rhs.or(lhs).cloned();
        match self.node2(ty, lhs, rhs) {
            Node::Leaf => keep_rhs(),
            Node::Fields(fields) => {
                let (l, r) = (as_map(lhs), as_map(rhs));
                if l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty) {
                    return keep_rhs();
                }
                let mut out = Map::new();
                let empty = Map::new();
                let (l, r) = (l.unwrap_or(&empty), r.unwrap_or(&empty));
                let keys = l.keys().chain(r.keys().filter(|k| !l.contains_key(*k)));
                for key in keys {
                    let child_ty = fields.field_ty(key).unwrap_or(Ty::Untyped);
                    let len = path.len();
                    path.push('.');
                    path.push_str(key);
                    if let Some(v) = self.merge_node(child_ty, l.get(key), r.get(key), path, errors)
                    {
                        out.insert(key.clone(), v);
                    }
                    path.truncate(len);
                }
                (!out.is_empty()).then_some(Value::Object(out))
            }
            Node::Items { elem, keys } => {
                let (l, r) = (as_list(lhs), as_list(rhs));
                if l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty) {
                    return keep_rhs();
                }
                let empty = Vec::new();
                let lists = (
                    l.unwrap_or(&empty).as_slice(),
                    r.unwrap_or(&empty).as_slice(),
                );
                let out = self.merge_items(elem, keys, lists, path, errors);
                (!out.is_empty()).then_some(Value::Array(out))
            }
        }
    }

    /// The keys of a list's elements, in order.
    fn index_items(
        &self,
        elem: Ty<'a>,
        keys: Option<&[String]>,
        items: &[Value],
        allow_duplicates: bool,
        path: &str,
        errors: &mut Vec<TypeError>,
    ) -> Vec<PathElement> {
        let mut pes: Vec<PathElement> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match self.item_key(elem, keys, item) {
                Ok(pe) if !allow_duplicates && pes.contains(&pe) => errors.push(TypeError {
                    path: path.to_owned(),
                    message: format!("duplicate entries for key {pe}"),
                }),
                Ok(pe) => pes.push(pe),
                Err(e) => errors.push(TypeError {
                    path: path.to_owned(),
                    message: format!("element {i}: {e}"),
                }),
            }
        }
        pes
    }

    fn merge_items(
        &self,
        elem: Ty<'a>,
        keys: Option<&[String]>,
        (lhs, rhs): (&[Value], &[Value]),
        path: &mut String,
        errors: &mut Vec<TypeError>,
    ) -> Vec<Value> {
        let r_pes = self.index_items(elem, keys, rhs, false, path, errors);
        let l_pes = self.index_items(elem, keys, lhs, true, path, errors);
        if !errors.is_empty() {
            return Vec::new();
        }
        // What an rhs element merges with: its lhs twin, or null when the
        // lhs holds it more than once (upstream's AllowDuplicates).
        let lhs_twin = |pe: &PathElement| -> Option<&Value> {
            let mut found = l_pes.iter().enumerate().filter(|(_, p)| *p == pe);
            let (first, _) = found.next()?;
            Some(if found.next().is_some() {
                &NULL
            } else {
                &lhs[first]
            })
        };
        let in_rhs = |pe: &PathElement| r_pes.contains(pe);
        let mut shared = r_pes.iter().filter(|p| l_pes.contains(p));
        let mut next_shared = shared.next();
        let mut merged: BTreeSet<&PathElement> = BTreeSet::new();
        let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
        let (mut li, mut ri) = (0, 0);
        while li < l_pes.len() || ri < r_pes.len() {
            if li < l_pes.len() && ri < r_pes.len() {
                let pe = &l_pes[li];
                if *pe == r_pes[ri] {
                    merged.insert(pe);
                    out.extend(self.merge_item(
                        elem,
                        pe,
                        lhs_twin(pe),
                        Some(&rhs[ri]),
                        path,
                        errors,
                    ));
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if in_rhs(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
            if li < l_pes.len() {
                let pe = &l_pes[li];
                if !in_rhs(pe) {
                    out.extend(self.merge_item(elem, pe, Some(&lhs[li]), None, path, errors));
                    li += 1;
                    continue;
                }
                if merged.contains(pe) {
                    li += 1;
                }
            }
            if ri < r_pes.len() {
                let pe = &r_pes[ri];
                merged.insert(pe);
                out.extend(self.merge_item(elem, pe, lhs_twin(pe), Some(&rhs[ri]), path, errors));
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.next();
                }
            }
        }
        out
    }

    fn merge_item(
        &self,
        elem: Ty<'a>,
        pe: &PathElement,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut String,
        errors: &mut Vec<TypeError>,
    ) -> Option<Value> {
        let len = path.len();
        path.push_str(&pe.to_string());
        let out = self.merge_node(elem, lhs, rhs, path, errors);
        path.truncate(len);
        out
    }
}

static NULL: Value = Value::Null;

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn as_list(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array)
}
