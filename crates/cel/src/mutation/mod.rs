//! Typed object construction for mutating admission policies (upstream's
//! `k8s.io/apiserver/pkg/cel/mutation`):
//! `Object{spec: Object.spec{replicas: 3}}` (an apply configuration of the
//! request's object, each nested type named by its field path) and
//! `JSONPatch{op: 'add', path: '/x', value: 1}`. The struct types are
//! open: every `Object...` literal becomes a map of the fields written,
//! so the result is the JSON the caller merges or applies.

use std::collections::{BTreeMap, HashMap};

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, IdedExpr};
use cel::common::types::{CelMap, CelMapKey, Type};
use cel::common::value::{CowVal, Val};
use cel::{ExecutionError, StructType};

/// The root of apply-configuration type names.
pub(crate) const OBJECT: &str = "Object";
/// The JSON patch operation type.
pub(crate) const JSON_PATCH: &str = "JSONPatch";
/// The fields a `JSONPatch` literal may set.
const JSON_PATCH_FIELDS: &[&str] = &["op", "path", "from", "value"];

/// A struct type whose values are maps of the fields a literal sets;
/// `fields` limits which (None: any field).
pub(crate) struct OpenStruct {
    ty: Type,
    fields: Option<&'static [&'static str]>,
}

impl OpenStruct {
    /// The type of `Object` (and, evaluated as it, its nested
    /// `Object.<path>` types).
    pub(crate) fn object() -> Self {
        OpenStruct {
            ty: Type::new_struct(OBJECT.to_owned()),
            fields: None,
        }
    }

    pub(crate) fn json_patch() -> Self {
        OpenStruct {
            ty: Type::new_struct(JSON_PATCH.to_owned()),
            fields: Some(JSON_PATCH_FIELDS),
        }
    }
}

impl StructType for OpenStruct {
    fn get_type(&self) -> &Type {
        &self.ty
    }

    fn new_value<'b, 'v>(
        &self,
        fields: BTreeMap<String, CowVal<'b, 'v>>,
    ) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let mut out: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> =
            HashMap::with_capacity(fields.len());
        for (name, value) in fields {
            if self
                .fields
                .is_some_and(|allowed| !allowed.contains(&name.as_str()))
            {
                return Err(ExecutionError::no_such_key(&format!(
                    "field `{name}` on struct `{}`",
                    self.ty.name()
                )));
            }
            out.insert(CelMapKey::from(name), value.into_owned());
        }
        Ok(Box::new(CelMap::from(out)))
    }
}

/// Whether a struct literal may name `name`: `Object`, `Object.<field>...`
/// or `JSONPatch`.
pub(crate) fn known(name: &str) -> bool {
    name == JSON_PATCH
        || name == OBJECT
        || name
            .strip_prefix(OBJECT)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|path| path.split('.').all(|field| !field.is_empty()))
}

/// `expr` with every nested `Object.<path>` literal constructing the one
/// registered `Object` type (their values are alike: maps of the fields
/// set); None when there are none. The names were checked beforehand.
pub(crate) fn unnest(expr: &IdedExpr) -> Option<IdedExpr> {
    let mut nested = false;
    walk(expr, &mut |e| {
        nested |= matches!(&e.expr, Expr::Struct(s) if s.type_name.starts_with("Object."));
    });
    if !nested {
        return None;
    }
    let mut out = expr.clone();
    rename(&mut out);
    Some(out)
}

fn rename(expr: &mut IdedExpr) {
    let entries = |entries: &mut [IdedEntryExpr]| {
        for entry in entries {
            match &mut entry.expr {
                EntryExpr::StructField(f) => rename(&mut f.value),
                EntryExpr::MapEntry(m) => {
                    rename(&mut m.key);
                    rename(&mut m.value);
                }
            }
        }
    };
    match &mut expr.expr {
        Expr::Struct(s) => {
            if s.type_name.starts_with("Object.") {
                s.type_name = OBJECT.to_owned();
            }
            entries(&mut s.entries);
        }
        Expr::Select(s) => rename(&mut s.operand),
        Expr::Call(c) => {
            if let Some(target) = &mut c.target {
                rename(target);
            }
            c.args.iter_mut().for_each(rename);
        }
        Expr::List(l) => l.elements.iter_mut().for_each(rename),
        Expr::Map(m) => entries(&mut m.entries),
        Expr::Comprehension(c) => {
            for e in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                rename(e);
            }
        }
        Expr::Literal(_) | Expr::Ident(_) | Expr::Unspecified => {}
    }
}

/// The nested object literals of `expr` not named by the field path they
/// are set at (`Object.spec{selector: Object.spec.wrong{}}`), as upstream
/// words it. Lists and maps between a field and its objects are unnamed.
pub(crate) fn type_mismatches(expr: &IdedExpr) -> Vec<String> {
    let mut out = Vec::new();
    walk(expr, &mut |e| {
        let Expr::Struct(s) = &e.expr else {
            return;
        };
        if s.type_name != OBJECT && !s.type_name.starts_with("Object.") {
            return;
        }
        for entry in &s.entries {
            if let EntryExpr::StructField(f) = &entry.expr {
                let expected = format!("{}.{}", s.type_name, f.field);
                named_below(&f.value, &expected, &mut out);
            }
        }
    });
    out
}

/// Checks the object literals a field's value holds directly (through
/// list and map literals) against the name `expected`.
fn named_below(expr: &IdedExpr, expected: &str, out: &mut Vec<String>) {
    match &expr.expr {
        Expr::Struct(s) if s.type_name != expected && s.type_name.starts_with(OBJECT) => {
            out.push(format!(
                "unexpected type name \"{}\", expected \"{expected}\", which matches field name \
                 path from root Object type",
                s.type_name
            ));
        }
        Expr::List(l) => {
            for e in &l.elements {
                named_below(e, expected, out);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    named_below(&me.value, expected, out);
                }
            }
        }
        _ => {}
    }
}

/// Calls `visit` on `expr` and every expression below it.
pub(crate) fn walk(expr: &IdedExpr, visit: &mut dyn FnMut(&IdedExpr)) {
    visit(expr);
    let entries = |entries: &[cel::common::ast::IdedEntryExpr],
                   visit: &mut dyn FnMut(&IdedExpr)| {
        for entry in entries {
            match &entry.expr {
                EntryExpr::StructField(f) => visit(&f.value),
                EntryExpr::MapEntry(m) => {
                    visit(&m.key);
                    visit(&m.value);
                }
            }
        }
    };
    match &expr.expr {
        Expr::Select(s) => walk(&s.operand, visit),
        Expr::Call(c) => {
            if let Some(target) = &c.target {
                walk(target, visit);
            }
            for arg in &c.args {
                walk(arg, visit);
            }
        }
        Expr::List(l) => {
            for e in &l.elements {
                walk(e, visit);
            }
        }
        Expr::Map(m) => entries(&m.entries, &mut |e| walk(e, visit)),
        Expr::Struct(s) => entries(&s.entries, &mut |e| walk(e, visit)),
        Expr::Comprehension(c) => {
            for e in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                walk(e, visit);
            }
        }
        Expr::Literal(_) | Expr::Ident(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod tests {
    use super::known;

    #[test]
    fn only_object_paths_and_json_patch_are_known() {
        assert!(known("Object"));
        assert!(known("Object.spec.template"));
        assert!(known("JSONPatch"));
        assert!(!known("Object."));
        assert!(!known("Object..spec"));
        assert!(!known("Objects"));
        assert!(!known("google.protobuf.Struct"));
    }
}
