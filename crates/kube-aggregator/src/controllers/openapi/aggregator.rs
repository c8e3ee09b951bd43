//! The aggregated API servers' OpenAPI documents merged into the chain's
//! (upstream's `pkg/controllers/openapi/aggregator`): each APIService's
//! `/openapi/v2` filtered to the paths below its `/apis/<group>/<version>/`
//! and the definitions they use, then merged by priority, conflicting
//! paths ignored and a definition whose name is taken by a different one
//! renamed `<name>_v<N>` (kube-openapi's
//! `MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`); and
//! the OpenAPI v3 document of its group version. Served through the
//! chain's [`SpecSource`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use apiserver::endpoints::openapi::{Parts, SpecSource, PREFIX};
use serde_json::{json, Map, Value};

/// What was downloaded for one APIService.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    /// `spec.groupPriorityMinimum`, `spec.versionPriority`.
    pub priority: (i64, i64),
    /// The filtered v2 document and the ETag it came with.
    pub v2: Option<(Arc<Value>, String)>,
    /// The v3 document of the group version, by path, with the hash the
    /// backend's index gave it.
    pub v3: Option<(String, Arc<Value>, String)>,
}

/// The documents of every remote APIService, by name.
pub type Snapshot = Arc<BTreeMap<String, Entry>>;

/// The remote APIServices' documents; cloning shares them.
#[derive(Clone, Debug, Default)]
pub struct Specs(Arc<RwLock<Snapshot>>);

impl Specs {
    pub fn get(&self, name: &str) -> Option<Entry> {
        self.0.read().ok()?.get(name).cloned()
    }

    /// Changes (or with None removes) the entry of `name`.
    pub fn update(&self, name: &str, change: impl FnOnce(&mut Entry), keep: bool) {
        let Ok(mut current) = self.0.write() else {
            return;
        };
        let mut entries = BTreeMap::clone(&current);
        if keep {
            change(entries.entry(name.to_owned()).or_default());
        } else if entries.remove(name).is_none() {
            return;
        }
        *current = Arc::new(entries);
    }
}

impl SpecSource for Specs {
    type State = Snapshot;

    fn state(&self) -> Snapshot {
        self.0.read().map(|s| s.clone()).unwrap_or_default()
    }

    fn unchanged(built: &Snapshot, now: &Snapshot) -> bool {
        Arc::ptr_eq(built, now)
    }

    fn add_v2(state: &Snapshot, definitions: &mut Parts, paths: &mut Parts) {
        let mut ordered: Vec<(&String, &Entry)> = state.iter().collect();
        // Upstream's sortByPriority: group priority, then version
        // priority, both highest first, then by name.
        ordered.sort_by(|a, b| b.1.priority.cmp(&a.1.priority).then(a.0.cmp(b.0)));
        for (_, entry) in ordered {
            if let Some((spec, _)) = &entry.v2 {
                merge(spec, definitions, paths);
            }
        }
    }

    fn v3_documents(state: &Snapshot) -> BTreeMap<String, Value> {
        state
            .values()
            .filter_map(|e| e.v3.as_ref())
            .map(|(path, doc, _)| (path.clone(), Value::clone(doc)))
            .collect()
    }
}

/// Collects the definitions `v` refers to.
fn refs(v: &Value, found: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(PREFIX))
            {
                found.push(name.to_owned());
            }
            map.values().for_each(|v| refs(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

/// Replaces `#/parameters/` references in the path item's and its
/// operations' parameters by the parameters themselves.
fn inline_parameters(item: &mut Value, shared: &Map<String, Value>) {
    let Some(item) = item.as_object_mut() else {
        return;
    };
    for (key, value) in item.iter_mut() {
        let params = if key == "parameters" {
            value.as_array_mut()
        } else {
            value.get_mut("parameters").and_then(Value::as_array_mut)
        };
        for p in params.into_iter().flatten() {
            let named = p["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/parameters/"));
            if let Some(found) = named.and_then(|n| shared.get(n)) {
                *p = found.clone();
            }
        }
    }
}

/// upstream's `FilterSpecByPathsWithoutSideEffects` for one APIService:
/// the paths below `/apis/<group>/<version>/` with their parameters
/// inlined, and the definitions they use.
pub fn filter(spec: &Value, group: &str, version: &str) -> Value {
    let prefix = format!("/apis/{group}/{version}/");
    let empty = Map::new();
    let shared = spec["parameters"].as_object().unwrap_or(&empty);
    let mut paths = Map::new();
    for (path, item) in spec["paths"].as_object().unwrap_or(&empty) {
        if path.starts_with(&prefix) {
            let mut item = item.clone();
            inline_parameters(&mut item, shared);
            paths.insert(path.clone(), item);
        }
    }
    let all = spec["definitions"].as_object().unwrap_or(&empty);
    let mut pending = Vec::new();
    paths.values().for_each(|p| refs(p, &mut pending));
    let mut definitions = Map::new();
    while let Some(name) = pending.pop() {
        if definitions.contains_key(&name) {
            continue;
        }
        if let Some(def) = all.get(&name) {
            refs(def, &mut pending);
            definitions.insert(name, def.clone());
        }
    }
    json!({"paths": paths, "definitions": definitions})
}

/// Points references to the definitions of `renames` at their new names.
fn rename_refs(v: &mut Value, renames: &HashMap<String, String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(new) = r.strip_prefix(PREFIX).and_then(|n| renames.get(n)) {
                    *r = format!("{PREFIX}{new}");
                }
            }
            map.values_mut().for_each(|v| rename_refs(v, renames));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_refs(v, renames)),
        _ => {}
    }
}

/// Merges a filtered document into `definitions` and `paths`: paths
/// already there are kept, a definition already there under another
/// content is added as `<name>_v2` (or the next free number).
pub fn merge(spec: &Value, definitions: &mut Parts, paths: &mut Parts) {
    let empty = Map::new();
    let defs = spec["definitions"].as_object().unwrap_or(&empty);
    let mut renames = HashMap::new();
    for (name, def) in defs {
        if definitions.get(name).is_none_or(|d| d == def) {
            continue;
        }
        let free = (2..)
            .map(|n| format!("{name}_v{n}"))
            .find(|c| definitions.get(c).is_none_or(|d| d == def));
        if let Some(free) = free {
            renames.insert(name.clone(), free);
        }
    }
    let mut spec = spec.clone();
    if !renames.is_empty() {
        rename_refs(&mut spec, &renames);
    }
    for (name, def) in spec["definitions"].as_object().unwrap_or(&empty) {
        let name = renames.get(name).unwrap_or(name);
        definitions
            .entry(name.clone())
            .or_insert_with(|| def.clone());
    }
    for (path, item) in spec["paths"].as_object().unwrap_or(&empty) {
        paths.entry(path.clone()).or_insert_with(|| item.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend() -> Value {
        json!({
            "paths": {
                "/apis/m.io/v1/widgets": {
                    "parameters": [{"$ref": "#/parameters/pretty-abc"}],
                    "get": {"responses": {"200": {"schema": {"$ref": "#/definitions/io.m.v1.WidgetList"}}}},
                },
                "/apis/m.io/v1/": {"get": {}},
                "/api/v1/pods": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Pod"}}}}},
            },
            "parameters": {"pretty-abc": {"in": "query", "name": "pretty", "type": "string"}},
            "definitions": {
                "io.m.v1.WidgetList": {"properties": {"items": {"items": {"$ref": "#/definitions/io.m.v1.Widget"}}}},
                "io.m.v1.Widget": {"properties": {"metadata": {"$ref": "#/definitions/Meta"}}},
                "Meta": {"type": "object", "description": "theirs"},
                "Pod": {"type": "object"},
            },
        })
    }

    #[test]
    fn only_the_group_versions_paths_and_their_definitions_are_kept() {
        let filtered = filter(&backend(), "m.io", "v1");
        let paths = filtered["paths"].as_object().unwrap();
        let mut kept: Vec<_> = paths.keys().collect();
        kept.sort();
        // The prefix itself (the group version's discovery) matches, as
        // upstream's prefix filter.
        assert_eq!(kept, ["/apis/m.io/v1/", "/apis/m.io/v1/widgets"]);
        assert_eq!(
            paths["/apis/m.io/v1/widgets"]["parameters"][0]["name"],
            "pretty"
        );
        let mut defs: Vec<_> = filtered["definitions"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        defs.sort();
        assert_eq!(defs, ["Meta", "io.m.v1.Widget", "io.m.v1.WidgetList"]);
    }

    #[test]
    fn conflicting_definitions_are_renamed_and_local_paths_kept() {
        let filtered = filter(&backend(), "m.io", "v1");
        let mut definitions = Map::new();
        definitions.insert(
            "Meta".into(),
            json!({"type": "object", "description": "ours"}),
        );
        let mut paths = Map::new();
        paths.insert(
            "/apis/m.io/v1/widgets".into(),
            json!({"get": {"ours": true}}),
        );
        merge(&filtered, &mut definitions, &mut paths);
        assert_eq!(definitions["Meta"]["description"], "ours");
        assert_eq!(definitions["Meta_v2"]["description"], "theirs");
        assert_eq!(
            definitions["io.m.v1.Widget"]["properties"]["metadata"]["$ref"],
            "#/definitions/Meta_v2"
        );
        assert_eq!(paths["/apis/m.io/v1/widgets"]["get"]["ours"], true);
    }
}
