//! The structured-merge type model of a custom resource, so server-side
//! apply and strategic merge patch follow the schema's
//! `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type` and `x-kubernetes-preserve-unknown-fields`, as
//! upstream's conversion of the CRD's published OpenAPI does.

use structured_merge::builtin;
use structured_merge::schema::{
    FieldDef, ListDef, ListKind, MapDef, Schema, StructDef, TypeDef, TypeRef,
};

use crate::props::Props;

/// The OpenAPI definition name of ObjectMeta, which every resource's
/// `metadata` refers to.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Upstream's model name of a custom kind: the group reversed, then version
/// and kind (`com.example.v1.Widget`).
pub fn model_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The type of one schema node.
fn type_of(s: &Props) -> TypeDef {
    if s.x_int_or_string {
        return TypeDef::Scalar;
    }
    match s.ty.as_str() {
        "array" => TypeDef::List(ListDef {
            elem: s
                .items_schema()
                .map_or_else(TypeRef::untyped, |i| inline(type_of(i))),
            kind: match s.x_list_type.as_deref() {
                Some("set") => ListKind::Set,
                Some("map") => ListKind::Map {
                    keys: s.x_list_map_keys.clone(),
                },
                _ => ListKind::Atomic,
            },
        }),
        "object" => object_type(s),
        "" if s.preserves_unknown() && s.properties.is_empty() => TypeDef::Untyped,
        "" if !s.properties.is_empty() => object_type(s),
        _ => TypeDef::Scalar,
    }
}

fn inline(def: TypeDef) -> TypeRef {
    TypeRef::Inline(Box::new(def))
}

fn object_type(s: &Props) -> TypeDef {
    let atomic = s.x_map_type.as_deref() == Some("atomic");
    let additional = s.additional_schema();
    if s.properties.is_empty() && !s.x_embedded_resource {
        return match additional {
            Some(ap) => TypeDef::Map(MapDef {
                elem: inline(type_of(ap)),
                atomic,
            }),
            None if s.additional_properties.as_ref().is_some_and(|a| a.allows()) => {
                TypeDef::Map(MapDef {
                    elem: TypeRef::untyped(),
                    atomic,
                })
            }
            None => TypeDef::Untyped,
        };
    }
    let mut fields: Vec<FieldDef> = s
        .properties
        .iter()
        .map(|(name, p)| FieldDef::new(name.as_str(), inline(type_of(p))))
        .collect();
    if s.x_embedded_resource {
        add_type_meta(&mut fields);
    }
    let other_fields = match additional {
        Some(ap) => Some(inline(type_of(ap))),
        None if s.preserves_unknown() => Some(TypeRef::untyped()),
        None => None,
    };
    TypeDef::Struct(StructDef {
        fields,
        atomic,
        other_fields,
    })
}

/// `apiVersion`, `kind` and `metadata` as every resource has them.
fn add_type_meta(fields: &mut Vec<FieldDef>) {
    fields.retain(|f| !matches!(f.name.as_str(), "apiVersion" | "kind" | "metadata"));
    fields.push(FieldDef::new("apiVersion", TypeRef::scalar()));
    fields.push(FieldDef::new("kind", TypeRef::scalar()));
    fields.push(FieldDef::new("metadata", TypeRef::named(OBJECT_META)));
}

/// Adds `name` and every built-in type it refers to, transitively.
fn copy_builtin(name: &str, into: &mut Schema) {
    let mut pending = vec![name.to_owned()];
    while let Some(name) = pending.pop() {
        if into.get(&name).is_some() {
            continue;
        }
        let Some(def) = builtin::schema().get(&name) else {
            continue;
        };
        collect_names(def, &mut pending);
        into.insert(name, def.clone());
    }
}

fn collect_names(def: &TypeDef, out: &mut Vec<String>) {
    let visit = |r: &TypeRef, out: &mut Vec<String>| match r {
        TypeRef::Named(n) => out.push(n.clone()),
        TypeRef::Inline(d) => collect_names(d, out),
    };
    match def {
        TypeDef::Struct(s) => {
            for f in &s.fields {
                visit(&f.ty, out);
            }
            if let Some(o) = &s.other_fields {
                visit(o, out);
            }
        }
        TypeDef::List(l) => visit(&l.elem, out),
        TypeDef::Map(m) => visit(&m.elem, out),
        TypeDef::Scalar | TypeDef::Untyped => {}
    }
}

/// The schema of a custom resource whose root type is `root_name`: the
/// version's types with `apiVersion`, `kind` and `metadata` (ObjectMeta and
/// the built-in types it uses) at the root.
pub fn structured(schema: &Props, root_name: &str) -> Schema {
    let mut root = match object_type(schema) {
        TypeDef::Struct(s) => s,
        _ => StructDef {
            fields: Vec::new(),
            atomic: false,
            other_fields: schema.preserves_unknown().then(TypeRef::untyped),
        },
    };
    add_type_meta(&mut root.fields);
    let mut out = Schema::new();
    out.insert(root_name, TypeDef::Struct(root));
    copy_builtin(OBJECT_META, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field<'a>(def: &'a TypeDef, name: &str) -> &'a TypeRef {
        match def {
            TypeDef::Struct(s) => match s.field(name) {
                Some(f) => &f.ty,
                None => panic!("no field {name}"),
            },
            other => panic!("not a struct: {other:?}"),
        }
    }

    fn resolved<'a>(schema: &'a Schema, r: &'a TypeRef) -> &'a TypeDef {
        schema.resolve(r)
    }

    #[test]
    fn list_and_map_semantics_follow_extensions() {
        let props = Props::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["port", "protocol"],
                          "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"},
                           "x-kubernetes-map-type": "atomic"},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true}
            }}
        }}));
        let name = model_name("stable.example.com", "v1", "CronTab");
        assert_eq!(name, "com.example.stable.v1.CronTab");
        let schema = structured(&props, &name);
        let root = schema.get(&name).cloned().unwrap_or(TypeDef::Untyped);
        assert!(matches!(
            resolved(&schema, field(&root, "metadata")),
            TypeDef::Struct(_)
        ));
        let spec = resolved(&schema, field(&root, "spec")).clone();
        match resolved(&schema, field(&spec, "ports")) {
            TypeDef::List(l) => assert_eq!(
                l.kind,
                ListKind::Map {
                    keys: vec!["port".into(), "protocol".into()]
                }
            ),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(resolved(&schema, field(&spec, "tags")), TypeDef::List(l) if l.kind == ListKind::Set)
        );
        assert!(
            matches!(resolved(&schema, field(&spec, "args")), TypeDef::List(l) if l.kind == ListKind::Atomic)
        );
        assert!(matches!(resolved(&schema, field(&spec, "labels")), TypeDef::Map(m) if m.atomic));
        assert_eq!(resolved(&schema, field(&spec, "raw")), &TypeDef::Untyped);
        assert_eq!(resolved(&schema, field(&spec, "port")), &TypeDef::Scalar);
        assert!(schema
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry")
            .is_some());
    }
}
