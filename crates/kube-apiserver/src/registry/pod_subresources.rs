//! The subresources through which parts of a Pod or Namespace are updated
//! (upstream's `pods/ephemeralcontainers`, `pods/resize` and
//! `namespaces/finalize`): each writes only its own fields, with its own
//! rules on top of the resource's validation.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apiserver::registry::rest::UpdateSubresource;
use serde_json::Value;

const READ_WRITE: &[&str] = &["get", "patch", "update"];

/// `pods/ephemeralcontainers` and `pods/resize`.
pub const POD: &[UpdateSubresource] = &[
    UpdateSubresource {
        name: "ephemeralcontainers",
        fields: &["/spec/ephemeralContainers"],
        validate: validate_ephemeral_containers,
        verbs: READ_WRITE,
    },
    UpdateSubresource {
        name: "resize",
        fields: &[
            "/spec/containers/*/resources",
            "/spec/containers/*/resizePolicy",
            "/spec/initContainers/*/resources",
            "/spec/initContainers/*/resizePolicy",
        ],
        validate: validate_resize,
        verbs: READ_WRITE,
    },
];

/// `namespaces/finalize`: only `spec.finalizers` changes.
pub const NAMESPACE: &[UpdateSubresource] = &[UpdateSubresource {
    name: "finalize",
    fields: &["/spec/finalizers"],
    validate: validate_finalizers,
    verbs: &["update"],
}];

fn list<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn name_of(container: &Value) -> &str {
    container.get("name").and_then(Value::as_str).unwrap_or("")
}

/// Fields an ephemeral container may not have (upstream allows neither
/// ports, probes, lifecycle hooks nor resources on one).
const NOT_FOR_EPHEMERAL: &[&str] = &[
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
];

/// Whether a field holds something: clients send empty objects for unset
/// structs (upstream reads them as zero values).
fn is_set(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// Ephemeral containers are only ever added: existing ones stay unchanged,
/// and new ones are named uniquely among all the pod's containers.
fn validate_ephemeral_containers(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("ephemeralContainers");
    let mut errs = Vec::new();
    let ephemeral = list(new, "/spec/ephemeralContainers");
    let mut names: HashSet<&str> = list(new, "/spec/containers")
        .iter()
        .chain(list(new, "/spec/initContainers"))
        .map(name_of)
        .collect();
    for (i, c) in ephemeral.iter().enumerate() {
        let at = path.index(i);
        let name = name_of(c);
        if name.is_empty() {
            errs.push(FieldError::required(&at.child("name"), ""));
        } else if !names.insert(name) {
            errs.push(FieldError::duplicate(&at.child("name"), name));
        }
        if c.get("image")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            errs.push(FieldError::required(&at.child("image"), ""));
        }
        for field in NOT_FOR_EPHEMERAL {
            if c.get(*field).is_some_and(is_set) {
                errs.push(FieldError::forbidden(
                    &at.child(field),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    for existing in list(old, "/spec/ephemeralContainers") {
        let name = name_of(existing);
        match ephemeral.iter().position(|c| name_of(c) == name) {
            None => errs.push(FieldError::forbidden(
                &path,
                format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(i) if ephemeral[i] != *existing => errs.push(FieldError::forbidden(
                &path.index(i),
                format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    errs
}

/// A resize needs a scheduled pod's containers to keep their number, and
/// may not add or remove resources of a kind the pod's QoS depends on
/// beyond what the containers had (upstream checks QoS; the container set
/// is what a client can break through this path).
fn validate_resize(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for kind in ["containers", "initContainers"] {
        let pointer = format!("/spec/{kind}");
        let (now, before) = (list(new, &pointer), list(old, &pointer));
        if now.len() != before.len() {
            errs.push(FieldError::forbidden(
                &Path::new("spec").child(kind),
                "containers may not be added or removed on resize",
            ));
        }
    }
    errs
}

/// Finalizers are qualified names (upstream's `ValidateFinalizerName`).
fn validate_finalizers(new: &Value, _old: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("finalizers");
    list(new, "/spec/finalizers")
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let name = f.as_str().unwrap_or("");
            let problems = apimachinery::validation::is_qualified_name(name);
            (!problems.is_empty())
                .then(|| FieldError::invalid(&path.index(i), name, problems.join("; ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(ephemeral: Value) -> Value {
        json!({"spec": {"containers": [{"name": "app", "image": "nginx"}],
            "ephemeralContainers": ephemeral}})
    }

    #[test]
    fn ephemeral_containers_are_only_added() {
        let old = pod(json!([{"name": "debug", "image": "busybox"}]));
        let added = pod(json!([{"name": "debug", "image": "busybox"},
            {"name": "debug2", "image": "busybox"}]));
        assert!(validate_ephemeral_containers(&added, &old).is_empty());
        let removed = pod(json!([]));
        let errs = validate_ephemeral_containers(&removed, &old);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].body().contains("may not be removed"),
            "{}",
            errs[0].body()
        );
        let changed = pod(json!([{"name": "debug", "image": "alpine"}]));
        let errs = validate_ephemeral_containers(&changed, &old);
        assert_eq!(errs[0].field, "spec.ephemeralContainers[0]");
    }

    #[test]
    fn ephemeral_containers_need_unique_names_and_no_ports() {
        let new = pod(
            json!([{"name": "app", "image": "busybox", "ports": [{"containerPort": 80}],
            "resources": {}},
            {"name": "x"}]),
        );
        let errs = validate_ephemeral_containers(&new, &pod(json!([])));
        let paths: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.ephemeralContainers[0].name",
                "spec.ephemeralContainers[0].ports",
                "spec.ephemeralContainers[1].image"
            ]
        );
    }

    #[test]
    fn finalizers_must_be_qualified_names() {
        let ns = json!({"spec": {"finalizers": ["kubernetes", "example.com/ok", "bad name"]}});
        let errs = validate_finalizers(&ns, &Value::Null);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.finalizers[2]");
    }
}
