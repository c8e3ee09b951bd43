//! Custom resources in the Swagger 2.0 document: for every served version
//! of an established, not terminating CRD, the kind's and list kind's
//! definitions the apiextensions library publishes for OpenAPI v3, turned
//! into v2 (references under `#/definitions/`, no `anyOf`/`nullable`…),
//! and the resource's paths.

use serde_json::{Map, Value};

use super::definitions::{strip_v3, PREFIX};
use super::{paths, roots};
use crate::apiextensions::controller::Snapshot;
use crate::apiextensions::serving;

const V3_PREFIX: &str = "#/components/schemas/";

/// Adds the custom resources of `crds` to `definitions` and `paths`
/// (built-in definitions keep their place).
pub(super) fn add(
    crds: &Snapshot,
    definitions: &mut Map<String, Value>,
    paths: &mut Map<String, Value>,
) {
    for crd in crds.iter().filter(|c| serving::is_served(c)) {
        let Ok(raw) = serde_json::to_value(crd) else {
            continue;
        };
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            let info = serving::resource_info(crd, v);
            // A terminating CRD takes no new objects and is not published.
            if !info.verbs.iter().any(|verb| verb == "create") {
                continue;
            }
            let Some([kind, list]) = ::apiextensions::published_definitions(&raw, &v.name) else {
                continue;
            };
            if definitions.contains_key(&kind.name) {
                continue;
            }
            paths::add(paths, &info, &kind.name, &list.name);
            roots::add_group_version(paths, &info.group, &info.version);
            roots::add_group(paths, &info.group);
            for def in [kind, list] {
                let mut schema = def.schema;
                rewrite_refs(&mut schema);
                strip_v3(&mut schema);
                definitions.insert(def.name, schema);
            }
        }
    }
}

/// Points the v3 references (`#/components/schemas/…`) at the v2
/// definitions.
fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match child {
                    Value::String(s) if key == "$ref" => {
                        if let Some(name) = s.strip_prefix(V3_PREFIX) {
                            *s = format!("{PREFIX}{name}");
                        }
                    }
                    _ => rewrite_refs(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}
