//! Merging lists: objects by merge key with `$patch` elements, scalars as
//! ordered sets, `$deleteFromPrimitiveList`, and the element order of the
//! result (`$setElementOrder`, else patch items and server-only items
//! interleaved by their order in the live list, as upstream).

use serde_json::{Map, Value};

use super::{
    bad_patch_type, clean, extract_key, gofmt, no_merge_key, Merger, SmpError, DIRECTIVE,
    SET_ELEMENT_ORDER,
};
use crate::schema::TypeDef;

/// What the elements of the lists being merged are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Map,
    Scalar,
}

/// The identity of an element for ordering: its merge key value (objects)
/// or itself (scalars); `None` when an object lacks the key.
type Id = Option<Value>;

impl<'s> Merger<'s> {
    pub(super) fn merge_list(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        elem: &'s TypeDef,
        key: Option<&str>,
        delete_list: bool,
    ) -> Result<Vec<Value>, SmpError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        if element_kind(&[&original, patch])? == ElemKind::Scalar {
            if delete_list {
                return Ok(original
                    .into_iter()
                    .filter(|v| !patch.contains(v))
                    .collect());
            }
            let server_order: Vec<Id> = original.iter().cloned().map(Some).collect();
            let patch_order: Vec<Id> = patch.iter().cloned().map(Some).collect();
            let mut merged = Vec::with_capacity(original.len() + patch.len());
            for item in original.into_iter().chain(patch.iter().cloned()) {
                if !merged.contains(&item) {
                    merged.push(item);
                }
            }
            let (in_patch, server_only) = partition(merged, &patch_order, None)?;
            return Ok(normalize(
                in_patch,
                server_only,
                &patch_order,
                &server_order,
                None,
            ));
        }
        let key = key.ok_or(SmpError::NoMergeKeyDeclared("struct"))?;
        let (original, patch) = special_elements(original, patch, key)?;
        let server_order = ids(&original, Some(key))?;
        let patch_order = ids(&patch, Some(key))?;
        let merged = self.merge_by_key(original, &patch, key, elem)?;
        let (in_patch, server_only) = partition(merged, &patch_order, Some(key))?;
        Ok(normalize(
            in_patch,
            server_only,
            &patch_order,
            &server_order,
            Some(key),
        ))
    }

    /// Merges patch objects into the original ones with the same key
    /// value; others are added.
    fn merge_by_key(
        &self,
        mut merged: Vec<Value>,
        patch: &[Value],
        key: &str,
        elem: &'s TypeDef,
    ) -> Result<Vec<Value>, SmpError> {
        for item in patch {
            let Value::Object(p) = item else {
                return Err(SmpError::BadArgType {
                    expected: "map[string]interface {}",
                    actual: gofmt::type_name(item),
                });
            };
            let id = p.get(key).ok_or_else(|| no_merge_key(p, key))?;
            match find(&merged, key, id)? {
                Some(i) => {
                    if let Value::Object(o) = &mut merged[i] {
                        *o = self.merge_map(std::mem::take(o), p, elem)?;
                    }
                }
                None => merged.extend(clean(item)),
            }
        }
        Ok(merged)
    }

    /// Handles the `$setElementOrder/<field>` directives of a map patch:
    /// merges each such field's list and puts the result in the directive's
    /// order. Returns the fields done.
    pub(super) fn set_element_order<'p>(
        &self,
        original: &mut Map<String, Value>,
        patch: &'p Map<String, Value>,
        ty: &'s TypeDef,
    ) -> Result<Vec<&'p str>, SmpError> {
        let mut done = Vec::new();
        for (directive, order) in patch
            .iter()
            .filter(|(k, _)| k.starts_with(SET_ELEMENT_ORDER))
        {
            let order = as_list(order)?;
            let field = extract_key(directive, SET_ELEMENT_ORDER)?;
            let current = original.get(field).map(as_list).transpose()?;
            let patch_list = patch.get(field).map(as_list).transpose()?;
            let (fty, meta) = self.field(ty, field);
            let key = meta.merge_key.as_deref();
            validate_order(patch_list.unwrap_or(&[]), order, key)?;
            let kind = match (current, patch_list) {
                (None, None) => continue,
                (c, p) => element_kind(&[c.unwrap_or(&[]), p.unwrap_or(&[])])?,
            };
            let key = key.filter(|_| kind == ElemKind::Map);
            let server_order = match current {
                Some(c) => ids(c, key)?,
                None => Vec::new(),
            };
            let merged = match (original.get_mut(field).map(Value::take), patch_list) {
                (Some(Value::Array(c)), None) => c,
                (None, Some(p)) => p.iter().filter_map(clean).collect(),
                (_, Some(p)) if !meta.merge => p.to_vec(),
                (Some(Value::Array(c)), Some(p)) => {
                    self.merge_list(c, p, self.elem(fty), meta.merge_key.as_deref(), false)?
                }
                (_, Some(p)) => p.iter().filter_map(clean).collect(),
                (_, None) => Vec::new(),
            };
            let order_ids = ids(order, key)?;
            let (in_order, server_only) = partition(merged, &order_ids, key)?;
            let result = normalize(in_order, server_only, &order_ids, &server_order, key);
            original.insert(field.to_owned(), Value::Array(result));
            done.push(field);
        }
        Ok(done)
    }
}

fn as_list(v: &Value) -> Result<&[Value], SmpError> {
    v.as_array().map(Vec::as_slice).ok_or(SmpError::BadArgType {
        expected: "[]interface {}",
        actual: gofmt::type_name(v),
    })
}

/// All elements must be of one kind, and the first not a list.
fn element_kind(lists: &[&[Value]]) -> Result<ElemKind, SmpError> {
    let mut seen: Option<&'static str> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        let name = gofmt::type_name(item);
        match seen {
            // Upstream looks for lists only in the first element.
            None if item.is_array() => return Err(SmpError::NoListOfLists),
            None => seen = Some(name),
            Some(s) if s != name => {
                let all: Vec<String> = lists.iter().map(|l| gofmt::list(l)).collect();
                return Err(SmpError::MixedElementTypes(format!("[{}]", all.join(" "))));
            }
            Some(_) => {}
        }
    }
    match seen {
        None => Err(SmpError::NoElements),
        Some("map[string]interface {}") => Ok(ElemKind::Map),
        Some(_) => Ok(ElemKind::Scalar),
    }
}

/// Applies `$patch` elements: `delete` removes the original elements with
/// that key, `replace` makes the other patch elements the whole list.
/// Returns the original to merge into and the remaining patch elements.
fn special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(m) = item else {
            continue;
        };
        let Some(directive) = m.get(DIRECTIVE) else {
            plain.push(item.clone());
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let id = m.get(key).ok_or_else(|| no_merge_key(m, key))?;
                while let Some(i) = find(&original, key, id)? {
                    original.remove(i);
                }
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(SmpError::MergeDirectiveInList),
            _ => return Err(bad_patch_type(directive, m)),
        }
    }
    if replace {
        let list = plain.iter().filter_map(clean).collect();
        return Ok((list, Vec::new()));
    }
    Ok((original, plain))
}

/// The index of the object whose `key` equals `id`.
fn find(list: &[Value], key: &str, id: &Value) -> Result<Option<usize>, SmpError> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(SmpError::NotAMap(i));
        };
        if m.get(key) == Some(id) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// The identities of a list's elements; objects must carry the key.
fn ids(list: &[Value], key: Option<&str>) -> Result<Vec<Id>, SmpError> {
    list.iter()
        .map(|v| match (key, v) {
            (None, v) => Ok(Some(v.clone())),
            (Some(k), Value::Object(m)) => match m.get(k) {
                Some(id) => Ok(Some(id.clone())),
                None => Err(no_merge_key(m, k)),
            },
            (Some(_), other) => Err(SmpError::BadArgType {
                expected: "map[string]interface {}",
                actual: gofmt::type_name(other),
            }),
        })
        .collect()
}

fn id_of(v: &Value, key: Option<&str>) -> Id {
    match key {
        None => Some(v.clone()),
        Some(k) => v.get(k).cloned(),
    }
}

fn position(order: &[Id], id: &Id) -> Option<usize> {
    order.iter().position(|o| o == id)
}

/// Splits `merged` into the elements named by `by` and the others.
fn partition(
    merged: Vec<Value>,
    by: &[Id],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut named = Vec::with_capacity(merged.len());
    let mut others = Vec::new();
    for v in merged {
        if let (Some(k), Value::Object(m)) = (key, &v) {
            if !m.contains_key(k) {
                return Err(no_merge_key(m, k));
            }
        }
        if position(by, &id_of(&v, key)).is_some() {
            named.push(v);
        } else {
            others.push(v);
        }
    }
    Ok((named, others))
}

/// Orders the patch's elements by `patch_order` and the server-only ones
/// by `server_order`, then interleaves them: a server-only element goes
/// before a patch element when the live list had it first.
fn normalize(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Id],
    server_order: &[Id],
    key: Option<&str>,
) -> Vec<Value> {
    let rank = |order: &[Id], v: &Value| position(order, &id_of(v, key)).unwrap_or(usize::MAX);
    patch_items.sort_by_key(|v| rank(patch_order, v));
    server_only.sort_by_key(|v| rank(server_order, v));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => {
                let (li, ri) = (rank(server_order, l), rank(server_order, r));
                li != usize::MAX && ri != usize::MAX && li < ri
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
    out
}

/// The patch list must follow the `$setElementOrder` list's order
/// (elements deleted by `$patch: delete` aside).
fn validate_order(patch: &[Value], order: &[Value], key: Option<&str>) -> Result<(), SmpError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = match key {
        Some(_) => {
            let mut kept = Vec::with_capacity(patch.len());
            for v in patch {
                let Value::Object(m) = v else {
                    return Err(SmpError::BadArgType {
                        expected: "map[string]interface {}",
                        actual: gofmt::type_name(v),
                    });
                };
                if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                    kept.push(v);
                }
            }
            kept
        }
        None => patch.iter().collect(),
    };
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if kept[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if key_equal(kept[p], &order[o], key)? {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() {
        return Err(SmpError::OrderMismatch {
            patch: gofmt::list(patch),
            order: gofmt::list(order),
        });
    }
    Ok(())
}

fn key_equal(left: &Value, right: &Value, key: Option<&str>) -> Result<bool, SmpError> {
    let Some(key) = key else {
        return Ok(left == right);
    };
    let map = |v: &Value| match v {
        Value::Object(m) => match m.get(key) {
            Some(id) => Ok(id.clone()),
            None => Err(no_merge_key(m, key)),
        },
        other => Err(SmpError::BadArgType {
            expected: "map[string]interface {}",
            actual: gofmt::type_name(other),
        }),
    };
    Ok(map(left)? == map(right)?)
}
