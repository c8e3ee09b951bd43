//! The schemas of every built-in type (all groups and versions of
//! kubernetes/api, apiextensions.k8s.io/v1, apiregistration.k8s.io/v1 and
//! the apimachinery types they use), generated from upstream's Go type
//! definitions by `structured-merge-codegen` into
//! `generated/builtin.schema` and parsed once, on first use.
//!
//! List kinds follow `+listType`/`+listMapKey`; a list without them but
//! with `patchStrategy=merge` is a map keyed by its merge key (a set when
//! it has none), as upstream's conversion of OpenAPI to structured-merge
//! schemas does.
//!
//! The file is line-based. `#` starts a comment line.
//! `kind <apiVersion> <Kind> <type>` names the root type of a kind;
//! `type <name> [atomic]` starts a struct type whose fields follow, one a
//! line, each indented by a space: `<json name> <type> [merge]
//! [retainKeys] [replace] [key=<patchMergeKey>]`. A type is `s` (scalar),
//! `u` (untyped), `@<name>` (a named type), `[a:`, `[s:` or
//! `[m=<key>,<key>:` followed by the element type (atomic list, set, map
//! list), or `{:` / `{a:` followed by the value type (granular / atomic
//! map).

use std::sync::OnceLock;

use crate::schema::{
    FieldDef, ListDef, ListKind, MapDef, PatchMeta, Schema, StructDef, TypeDef, TypeRef,
};

const TABLE: &str = include_str!("generated/builtin.schema");

/// A line of the generated table that does not follow its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("builtin.schema line {line}: {message}")]
pub struct FormatError {
    pub line: usize,
    pub message: String,
}

/// The parsed table.
#[derive(Debug, Default)]
pub struct Tables {
    pub schema: Schema,
    /// (group, version, kind, root type), sorted for binary search.
    roots: Vec<(String, String, String, String)>,
}

impl Tables {
    pub fn root(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.roots
            .binary_search_by(|(g, v, k, _)| {
                (g.as_str(), v.as_str(), k.as_str()).cmp(&(group, version, kind))
            })
            .ok()
            .map(|i| self.roots[i].3.as_str())
    }
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    // The table is part of the build, not input; the `generated_table_parses`
    // test keeps it well-formed.
    TABLES.get_or_init(|| parse(TABLE).expect("generated builtin.schema is well-formed"))
}

/// The schema holding every built-in type, by OpenAPI definition name.
pub fn schema() -> &'static Schema {
    &tables().schema
}

/// The root type of a built-in kind (the core group is `""`), e.g.
/// `("apps", "v1", "Deployment")` → `io.k8s.api.apps.v1.Deployment`.
pub fn root(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    tables().root(group, version, kind)
}

/// Parses a table in the format described in the module documentation.
pub fn parse(text: &str) -> Result<Tables, FormatError> {
    let mut tables = Tables::default();
    let mut current: Option<(String, StructDef)> = None;
    for (index, line) in text.lines().enumerate() {
        let err = |message: String| FormatError {
            line: index + 1,
            message,
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(field) = line.strip_prefix(' ') {
            let Some((_, def)) = current.as_mut() else {
                return Err(err("field outside a type".into()));
            };
            def.fields.push(parse_field(field).map_err(err)?);
            continue;
        }
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["kind", api_version, kind, ty] => {
                let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
                tables.roots.push((
                    group.into(),
                    (*version).into(),
                    (*kind).into(),
                    (*ty).into(),
                ));
            }
            ["type", name, rest @ ..] => {
                if let Some((n, def)) = current.take() {
                    tables.schema.insert(n, TypeDef::Struct(def));
                }
                let atomic = match rest {
                    [] => false,
                    ["atomic"] => true,
                    _ => return Err(err(format!("unexpected {rest:?}"))),
                };
                let def = StructDef {
                    atomic,
                    ..StructDef::default()
                };
                current = Some(((*name).to_owned(), def));
            }
            _ => return Err(err(format!("unexpected line {line:?}"))),
        }
    }
    if let Some((n, def)) = current {
        tables.schema.insert(n, TypeDef::Struct(def));
    }
    tables.roots.sort();
    Ok(tables)
}

fn parse_field(text: &str) -> Result<FieldDef, String> {
    let mut words = text.split(' ');
    let (Some(name), Some(ty)) = (words.next(), words.next()) else {
        return Err(format!("bad field {text:?}"));
    };
    let mut patch = PatchMeta::default();
    for flag in words {
        match flag {
            "merge" => patch.merge = true,
            "retainKeys" => patch.retain_keys = true,
            "replace" => patch.replace = true,
            _ => match flag.strip_prefix("key=") {
                Some(key) => patch.merge_key = Some(key.to_owned()),
                None => return Err(format!("unknown flag {flag:?}")),
            },
        }
    }
    Ok(FieldDef {
        name: name.to_owned(),
        ty: parse_type(ty)?,
        patch,
    })
}

fn parse_type(text: &str) -> Result<TypeRef, String> {
    let inline = |def: TypeDef| Ok(TypeRef::Inline(Box::new(def)));
    match text {
        "s" => return inline(TypeDef::Scalar),
        "u" => return inline(TypeDef::Untyped),
        _ => {}
    }
    if let Some(name) = text.strip_prefix('@') {
        return Ok(TypeRef::Named(name.to_owned()));
    }
    let (header, elem) = text
        .split_once(':')
        .ok_or_else(|| format!("bad type {text:?}"))?;
    let elem = parse_type(elem)?;
    let def = match header {
        "[a" => TypeDef::List(ListDef {
            elem,
            kind: ListKind::Atomic,
        }),
        "[s" => TypeDef::List(ListDef {
            elem,
            kind: ListKind::Set,
        }),
        "{" => TypeDef::Map(MapDef {
            elem,
            atomic: false,
        }),
        "{a" => TypeDef::Map(MapDef { elem, atomic: true }),
        _ => match header.strip_prefix("[m=") {
            Some(keys) => TypeDef::List(ListDef {
                elem,
                kind: ListKind::Map {
                    keys: keys.split(',').map(str::to_owned).collect(),
                },
            }),
            None => return Err(format!("bad type {text:?}")),
        },
    };
    inline(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn struct_def(name: &str) -> &'static StructDef {
        match schema().get(name) {
            Some(TypeDef::Struct(s)) => s,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn field(ty: &str, name: &str) -> &'static FieldDef {
        struct_def(ty)
            .field(name)
            .unwrap_or_else(|| panic!("{ty}.{name} missing"))
    }

    fn list(f: &FieldDef) -> &ListDef {
        match schema().resolve(&f.ty) {
            TypeDef::List(l) => l,
            other => panic!("{}: not a list: {other:?}", f.name),
        }
    }

    #[test]
    fn generated_table_parses() {
        let tables = parse(TABLE).unwrap();
        assert!(tables.schema.len() > 1000, "{}", tables.schema.len());
        assert!(tables.roots.len() > 300);
    }

    #[test]
    fn containers_merge_by_name() {
        let f = field("io.k8s.api.core.v1.PodSpec", "containers");
        assert!(f.patch.merge);
        assert_eq!(f.patch.merge_key.as_deref(), Some("name"));
        let l = list(f);
        assert_eq!(
            l.kind,
            ListKind::Map {
                keys: vec!["name".into()]
            }
        );
        assert_eq!(l.elem, TypeRef::named("io.k8s.api.core.v1.Container"));
    }

    #[test]
    fn container_ports_merge_by_container_port() {
        let f = field("io.k8s.api.core.v1.Container", "ports");
        assert_eq!(f.patch.merge_key.as_deref(), Some("containerPort"));
        assert_eq!(
            list(f).kind,
            ListKind::Map {
                keys: vec!["containerPort".into(), "protocol".into()]
            }
        );
        let svc = field("io.k8s.api.core.v1.ServiceSpec", "ports");
        assert_eq!(svc.patch.merge_key.as_deref(), Some("port"));
    }

    #[test]
    fn finalizers_are_a_merging_set() {
        let f = field(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "finalizers",
        );
        assert!(f.patch.merge);
        assert_eq!(f.patch.merge_key, None);
        assert_eq!(list(f).kind, ListKind::Set);
    }

    #[test]
    fn atomic_lists_maps_and_structs() {
        let tolerations = field("io.k8s.api.core.v1.PodSpec", "tolerations");
        assert!(!tolerations.patch.merge);
        assert_eq!(list(tolerations).kind, ListKind::Atomic);
        let selector = field("io.k8s.api.core.v1.PodSpec", "nodeSelector");
        assert!(matches!(schema().resolve(&selector.ty), TypeDef::Map(m) if m.atomic));
        let labels = field("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels");
        assert!(matches!(schema().resolve(&labels.ty), TypeDef::Map(m) if !m.atomic));
        assert!(struct_def("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector").atomic);
        assert!(!struct_def("io.k8s.api.core.v1.PodSpec").atomic);
    }

    #[test]
    fn retain_keys_and_custom_marshalled_types() {
        let volumes = field("io.k8s.api.core.v1.PodSpec", "volumes");
        assert!(volumes.patch.merge && volumes.patch.retain_keys);
        let strategy = field("io.k8s.api.apps.v1.DeploymentSpec", "strategy");
        assert!(strategy.patch.retain_keys);
        // Inline embeds are flattened (Volume embeds VolumeSource).
        assert!(struct_def("io.k8s.api.core.v1.Volume")
            .field("configMap")
            .is_some());
        let scalar =
            |ty: &str, name: &str| *schema().resolve(&field(ty, name).ty) == TypeDef::Scalar;
        assert!(scalar(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "creationTimestamp"
        ));
        assert!(scalar("io.k8s.api.core.v1.ContainerPort", "protocol"));
        assert!(scalar(
            "io.k8s.api.apps.v1.RollingUpdateDeployment",
            "maxSurge"
        ));
        let raw = field("io.k8s.api.apps.v1.ControllerRevision", "data");
        assert_eq!(*schema().resolve(&raw.ty), TypeDef::Untyped);
    }

    #[test]
    fn roots_resolve_by_group_version_kind() {
        assert_eq!(
            root("apps", "v1", "Deployment"),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        assert_eq!(root("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
        assert_eq!(
            root("", "v1", "PodList"),
            Some("io.k8s.api.core.v1.PodList")
        );
        assert_eq!(
            root("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            Some(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
            )
        );
        assert_eq!(
            root("apiregistration.k8s.io", "v1", "APIService"),
            Some("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService")
        );
        assert_eq!(root("stable.example.com", "v1", "CronTab"), None);
        for (_, _, _, ty) in &tables().roots {
            assert!(schema().get(ty).is_some(), "{ty}");
        }
    }

    #[test]
    fn every_named_reference_resolves() {
        let tables = parse(TABLE).unwrap();
        for (index, line) in TABLE.lines().enumerate() {
            for name in line
                .split(['@', ' '])
                .skip(1)
                .filter(|w| w.starts_with("io.k8s."))
            {
                assert!(
                    tables.schema.get(name).is_some(),
                    "line {}: {name}",
                    index + 1
                );
            }
        }
    }

    #[test]
    fn malformed_lines_are_reported() {
        assert_eq!(parse(" x s").unwrap_err().line, 1);
        assert!(parse("type A\n x [q:s").is_err());
        assert!(parse("type A\n x s bogus").is_err());
    }
}
