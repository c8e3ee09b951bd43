//! Shared parameters, as kube-openapi publishes the v2 document: every
//! parameter that is not specific to one kind moves to the document's
//! `parameters`, named after itself and a hash of its JSON
//! (`pretty-Ab3dEf_h`), and operations refer to it. Kept inline are the
//! `name` parameters (their description names the kind), bodies of the
//! kinds' own schemas, and `dryRun` and `fieldValidation`, which older
//! kubectls look for on the operations themselves.

use base64::Engine;
use serde_json::{json, Map, Value};

/// FNV-1 (64-bit) of `data`.
fn fnv1_64(data: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    data.iter()
        .fold(OFFSET, |h, b| h.wrapping_mul(PRIME) ^ u64::from(*b))
}

/// Eight URL-safe base64 characters of the hash of `json`.
fn short_hash(json: &str) -> String {
    let digest = fnv1_64(json.as_bytes()).to_be_bytes();
    base64::engine::general_purpose::URL_SAFE.encode(&digest[..6])
}

fn shareable(p: &Value) -> bool {
    let name = p["name"].as_str().unwrap_or_default();
    match p["in"].as_str().unwrap_or_default() {
        "path" | "query" if name == "name" => false,
        "query" => !matches!(name, "dryRun" | "fieldValidation"),
        "body" => p["schema"]["$ref"]
            .as_str()
            .is_some_and(|r| r.starts_with("#/definitions/io.k8s.apimachinery")),
        _ => true,
    }
}

/// Replaces the shareable parameters of `params` by references, adding
/// them to `shared`.
fn share(params: &mut [Value], shared: &mut Map<String, Value>) {
    for p in params.iter_mut().filter(|p| shareable(p)) {
        let encoded = serde_json::to_string(p).unwrap_or_default();
        let name = format!(
            "{}-{}",
            p["name"].as_str().unwrap_or("param"),
            short_hash(&encoded)
        );
        let param = std::mem::replace(p, json!({ "$ref": format!("#/parameters/{name}") }));
        shared.entry(name).or_insert(param);
    }
}

/// Moves the shared parameters of `paths` out; returns them by name.
pub(super) fn deduplicate(paths: &mut Map<String, Value>) -> Map<String, Value> {
    let mut shared = Map::new();
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (key, value) in item.iter_mut() {
            let params = if key == "parameters" {
                value.as_array_mut()
            } else {
                value.get_mut("parameters").and_then(Value::as_array_mut)
            };
            if let Some(params) = params {
                share(params, &mut shared);
            }
        }
    }
    shared.sort_keys();
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_matches_the_reference_vectors() {
        assert_eq!(fnv1_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1_64(b"a"), 0xaf63_bd4c_8601_b7be);
    }

    #[test]
    fn generic_parameters_are_shared_and_kind_specific_ones_stay() {
        let pretty = json!({"in": "query", "name": "pretty", "type": "string"});
        let mut paths = Map::new();
        paths.insert(
            "/api/v1/pods".into(),
            json!({
                "parameters": [pretty.clone()],
                "post": {"parameters": [
                    {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}},
                    {"in": "query", "name": "dryRun", "type": "string"},
                    {"in": "query", "name": "fieldManager", "type": "string"},
                ]},
            }),
        );
        paths.insert(
            "/api/v1/pods/{name}".into(),
            json!({"parameters": [
                {"in": "path", "name": "name", "type": "string"},
                pretty.clone(),
            ]}),
        );
        let shared = deduplicate(&mut paths);
        assert_eq!(shared.len(), 2, "{shared:?}");
        let pretty_name = shared
            .keys()
            .find(|k| k.starts_with("pretty-"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(pretty_name.len(), "pretty-".len() + 8);
        assert_eq!(shared[&pretty_name], pretty);
        let reference = json!({ "$ref": format!("#/parameters/{pretty_name}") });
        assert_eq!(paths["/api/v1/pods"]["parameters"][0], reference);
        assert_eq!(paths["/api/v1/pods/{name}"]["parameters"][1], reference);
        let post = &paths["/api/v1/pods"]["post"]["parameters"];
        assert_eq!(post[0]["in"], "body");
        assert_eq!(post[1]["name"], "dryRun");
        assert!(post[2]["$ref"]
            .as_str()
            .is_some_and(|r| r.contains("fieldManager-")));
    }
}
