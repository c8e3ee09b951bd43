//! Object metadata accessors over `serde_json::Value` objects (what
//! upstream's `meta.Accessor` and `unstructured.Unstructured` offer) and the
//! group/version/kind/resource identifier types of `k8s.io/apimachinery/pkg/runtime/schema`.
//!
//! Getters return `None` when a field is absent or of the wrong JSON type.
//! Setters create `metadata` when missing and, like upstream's
//! unstructured setters, remove a field when given its empty value.

use std::fmt;

use serde_json::{Map, Value};

/// A metadata setter was given something that is not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("object is not a JSON object")]
    NotAnObject,
    #[error("metadata is not a JSON object")]
    MetadataNotAnObject,
}

/// A group/version string that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected GroupVersion string: {0}")]
pub struct ParseGroupVersionError(pub String);

/// The `metadata` object, if present.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get(key)?.as_str()
}

/// `metadata.name`.
pub fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name")
}

/// `metadata.generateName`.
pub fn generate_name(obj: &Value) -> Option<&str> {
    meta_str(obj, "generateName")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid")
}

/// `metadata.resourceVersion`.
pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

/// `metadata.creationTimestamp`.
pub fn creation_timestamp(obj: &Value) -> Option<&str> {
    meta_str(obj, "creationTimestamp")
}

/// `metadata.deletionTimestamp`.
pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    meta_str(obj, "deletionTimestamp")
}

/// `metadata.deletionGracePeriodSeconds`.
pub fn deletion_grace_period_seconds(obj: &Value) -> Option<i64> {
    metadata(obj)?.get("deletionGracePeriodSeconds")?.as_i64()
}

/// `metadata.generation`.
pub fn generation(obj: &Value) -> Option<i64> {
    metadata(obj)?.get("generation")?.as_i64()
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("labels")?.as_object()
}

/// `metadata.annotations`.
pub fn annotations(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("annotations")?.as_object()
}

/// The string entries of `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<&str> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `metadata.ownerReferences`.
pub fn owner_references(obj: &Value) -> Option<&Vec<Value>> {
    metadata(obj)?.get("ownerReferences")?.as_array()
}

/// Top-level `apiVersion`.
pub fn api_version(obj: &Value) -> Option<&str> {
    obj.get("apiVersion")?.as_str()
}

/// Top-level `kind`.
pub fn kind(obj: &Value) -> Option<&str> {
    obj.get("kind")?.as_str()
}

/// The `metadata` object for writing, created when missing.
pub fn metadata_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, MetaError> {
    let map = obj.as_object_mut().ok_or(MetaError::NotAnObject)?;
    map.entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(MetaError::MetadataNotAnObject)
}

/// Sets `metadata.<key>` to `value`, or removes it when `value` is None.
fn set_meta(obj: &mut Value, key: &str, value: Option<Value>) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    match value {
        Some(v) => {
            meta.insert(key.to_owned(), v);
        }
        None => {
            meta.remove(key);
        }
    }
    Ok(())
}

fn non_empty(s: &str) -> Option<Value> {
    (!s.is_empty()).then(|| Value::from(s))
}

/// Sets `metadata.name` ("" removes it).
pub fn set_name(obj: &mut Value, name: &str) -> Result<(), MetaError> {
    set_meta(obj, "name", non_empty(name))
}

/// Sets `metadata.generateName` ("" removes it).
pub fn set_generate_name(obj: &mut Value, generate_name: &str) -> Result<(), MetaError> {
    set_meta(obj, "generateName", non_empty(generate_name))
}

/// Sets `metadata.namespace` ("" removes it).
pub fn set_namespace(obj: &mut Value, namespace: &str) -> Result<(), MetaError> {
    set_meta(obj, "namespace", non_empty(namespace))
}

/// Sets `metadata.uid` ("" removes it).
pub fn set_uid(obj: &mut Value, uid: &str) -> Result<(), MetaError> {
    set_meta(obj, "uid", non_empty(uid))
}

/// Sets `metadata.resourceVersion` ("" removes it).
pub fn set_resource_version(obj: &mut Value, rv: &str) -> Result<(), MetaError> {
    set_meta(obj, "resourceVersion", non_empty(rv))
}

/// Sets `metadata.creationTimestamp` ("" removes it).
pub fn set_creation_timestamp(obj: &mut Value, ts: &str) -> Result<(), MetaError> {
    set_meta(obj, "creationTimestamp", non_empty(ts))
}

/// Sets or removes `metadata.deletionTimestamp`.
pub fn set_deletion_timestamp(obj: &mut Value, ts: Option<&str>) -> Result<(), MetaError> {
    set_meta(obj, "deletionTimestamp", ts.map(Value::from))
}

/// Sets or removes `metadata.deletionGracePeriodSeconds`.
pub fn set_deletion_grace_period_seconds(
    obj: &mut Value,
    seconds: Option<i64>,
) -> Result<(), MetaError> {
    set_meta(obj, "deletionGracePeriodSeconds", seconds.map(Value::from))
}

/// Sets `metadata.generation` (0 removes it).
pub fn set_generation(obj: &mut Value, generation: i64) -> Result<(), MetaError> {
    set_meta(
        obj,
        "generation",
        (generation != 0).then(|| Value::from(generation)),
    )
}

fn string_map<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<Value> {
    let map: Map<String, Value> = entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::from(v)))
        .collect();
    (!map.is_empty()).then_some(Value::Object(map))
}

/// Replaces `metadata.labels` (no entries removes the field).
pub fn set_labels<'a>(
    obj: &mut Value,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), MetaError> {
    set_meta(obj, "labels", string_map(labels))
}

/// Replaces `metadata.annotations` (no entries removes the field).
pub fn set_annotations<'a>(
    obj: &mut Value,
    annotations: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), MetaError> {
    set_meta(obj, "annotations", string_map(annotations))
}

/// Sets one entry of the `metadata.<map_key>` string map.
fn set_map_entry(obj: &mut Value, map_key: &str, key: &str, value: &str) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    let entry = meta
        .entry(map_key)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(map) = entry {
        map.insert(key.to_owned(), Value::from(value));
    }
    Ok(())
}

/// Sets the label `key` to `value`.
pub fn set_label(obj: &mut Value, key: &str, value: &str) -> Result<(), MetaError> {
    set_map_entry(obj, "labels", key, value)
}

/// Sets the annotation `key` to `value`.
pub fn set_annotation(obj: &mut Value, key: &str, value: &str) -> Result<(), MetaError> {
    set_map_entry(obj, "annotations", key, value)
}

/// Replaces `metadata.finalizers` (an empty list removes the field).
pub fn set_finalizers<S: AsRef<str>>(obj: &mut Value, finalizers: &[S]) -> Result<(), MetaError> {
    let list: Vec<Value> = finalizers.iter().map(|f| Value::from(f.as_ref())).collect();
    set_meta(
        obj,
        "finalizers",
        (!list.is_empty()).then_some(Value::Array(list)),
    )
}

/// `group/version`, or just `version` for the core group.
fn join_group_version(f: &mut fmt::Formatter<'_>, group: &str, version: &str) -> fmt::Result {
    if group.is_empty() {
        f.write_str(version)
    } else {
        write!(f, "{group}/{version}")
    }
}

/// `name` or `name.group` for the core group's absence.
fn join_dotted(f: &mut fmt::Formatter<'_>, name: &str, group: &str) -> fmt::Result {
    if group.is_empty() {
        f.write_str(name)
    } else {
        write!(f, "{name}.{group}")
    }
}

/// An API group and version; displays as an `apiVersion` (`apps/v1`, `v1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersion {
    pub group: String,
    pub version: String,
}

impl GroupVersion {
    pub fn new(group: &str, version: &str) -> Self {
        GroupVersion {
            group: group.to_owned(),
            version: version.to_owned(),
        }
    }

    /// Parses an `apiVersion` as upstream's `ParseGroupVersion`: "" is the
    /// empty group/version, `v1` the core group, `g/v` a named group.
    pub fn parse(s: &str) -> Result<Self, ParseGroupVersionError> {
        if s.is_empty() || s == "/" {
            return Ok(GroupVersion::default());
        }
        match s.split_once('/') {
            None => Ok(GroupVersion::new("", s)),
            Some((g, v)) if !v.contains('/') => Ok(GroupVersion::new(g, v)),
            Some(_) => Err(ParseGroupVersionError(s.to_owned())),
        }
    }

    /// This group/version with a kind.
    pub fn with_kind(&self, kind: &str) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, kind)
    }

    /// This group/version with a resource.
    pub fn with_resource(&self, resource: &str) -> GroupVersionResource {
        GroupVersionResource::new(&self.group, &self.version, resource)
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        join_group_version(f, &self.group, &self.version)
    }
}

/// A group, version and kind; displays as upstream does: `apps/v1, Kind=Deployment`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// From an object's `apiVersion` and `kind`.
    pub fn from_api_version_kind(
        api_version: &str,
        kind: &str,
    ) -> Result<Self, ParseGroupVersionError> {
        Ok(GroupVersion::parse(api_version)?.with_kind(kind))
    }

    /// The `apiVersion` string (`apps/v1`, `v1`).
    pub fn api_version(&self) -> String {
        self.group_version().to_string()
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A group, version and resource; displays as `apps/v1, Resource=deployments`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl GroupVersionResource {
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        GroupVersionResource {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: resource.to_owned(),
        }
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.resource)
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// A group and resource; displays as `deployments.apps` (`pods` for core).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// Parses `resource.group` (everything after the first dot is the group).
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource::new(group, resource),
            None => GroupResource::new("", s),
        }
    }

    /// Whether both parts are empty.
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.resource.is_empty()
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        join_dotted(f, &self.resource, &self.group)
    }
}

/// A group and kind; displays as `Deployment.apps` (`Pod` for core).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: &str, kind: &str) -> Self {
        GroupKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// Parses `Kind.group` (everything after the first dot is the group).
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((kind, group)) => GroupKind::new(group, kind),
            None => GroupKind::new("", s),
        }
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        join_dotted(f, &self.kind, &self.group)
    }
}

#[cfg(test)]
mod tests;
