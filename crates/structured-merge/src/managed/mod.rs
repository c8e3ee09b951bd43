//! Managed fields (`metadata.managedFields`): which manager owns which
//! fields of an object, read from and written back to the object as
//! upstream encodes them, and the two operations that change ownership —
//! [`FieldManager::update`] for create, update and non-apply patches, and
//! [`FieldManager::apply`] for server-side apply (upstream's
//! `k8s.io/apimachinery/pkg/util/managedfields` stack over
//! `structured-merge-diff/merge`).

mod conflict;
mod manager;

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

use crate::fieldpath::{FieldsError, Set};

pub use conflict::{Conflict, Conflicts};
pub use manager::{ApplyError, FieldManager};

/// `Apply` for server-side apply, `Update` for every other write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who a managed fields entry belongs to: upstream identifies a manager by
/// its name, operation, subresource and (for updates) API version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    /// Empty for `Apply` managers, whose version moves with each apply.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        ManagerId {
            manager: manager.to_owned(),
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_owned(),
            },
            subresource: subresource.to_owned(),
        }
    }

    /// Upstream's identifier: the entry's JSON without fields and time.
    pub fn key(&self) -> String {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), self.manager.clone().into());
        }
        m.insert("operation".into(), self.operation.as_str().into());
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), self.api_version.clone().into());
        }
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), self.subresource.clone().into());
        }
        Value::Object(m).to_string()
    }

    /// How conflict messages name the manager:
    /// `"kubectl"`, `"kube-controller-manager" using apps/v1`,
    /// `"x" with subresource "status" using v1`.
    pub fn describe(&self) -> String {
        let mut s = quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

/// Go's `%q` for ordinary strings.
fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// One manager's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: ManagerId,
    pub set: Set,
    /// The version the fields are expressed in.
    pub api_version: String,
    pub time: Option<DateTime<Utc>>,
}

/// Why `metadata.managedFields` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedError {
    #[error("managedFields must be a list")]
    NotAList,
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    #[error("apiVersion must not be empty")]
    ApiVersion,
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    #[error("invalid fieldsType {1:?} in managed fields entry {0}")]
    FieldsType(usize, String),
    #[error("error decoding set: {0}")]
    Fields(#[from] FieldsError),
}

/// The managed fields of an object, by manager identifier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managed {
    entries: BTreeMap<String, Entry>,
}

impl Managed {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, id: &ManagerId) -> Option<&Entry> {
        self.entries.get(&id.key())
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    pub fn insert(&mut self, entry: Entry) {
        self.entries.insert(entry.id.key(), entry);
    }

    pub fn remove(&mut self, id: &ManagerId) -> Option<Entry> {
        self.entries.remove(&id.key())
    }

    pub(crate) fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.entries.values_mut()
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&Entry) -> bool) {
        let mut keep = keep;
        self.entries.retain(|_, e| keep(e));
    }

    /// Reads `metadata.managedFields` of an object (absent: empty).
    pub fn from_object(obj: &Value) -> Result<Managed, ManagedError> {
        match obj.pointer("/metadata/managedFields") {
            None | Some(Value::Null) => Ok(Managed::default()),
            Some(list) => Managed::decode(list),
        }
    }

    /// Reads a `managedFields` list.
    pub fn decode(list: &Value) -> Result<Managed, ManagedError> {
        let items = list.as_array().ok_or(ManagedError::NotAList)?;
        let mut managed = Managed::default();
        for (i, item) in items.iter().enumerate() {
            let text = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
            let operation = match text("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err(ManagedError::Operation),
            };
            let api_version = text("apiVersion");
            if api_version.is_empty() {
                return Err(ManagedError::ApiVersion);
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(ManagedError::MissingFieldsType(i)),
                other => return Err(ManagedError::FieldsType(i, other.to_owned())),
            }
            let set = match item.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(doc) => Set::from_fields_v1(doc)?,
            };
            let time = DateTime::parse_from_rfc3339(text("time"))
                .ok()
                .map(|t| t.with_timezone(&Utc));
            let id = ManagerId::new(text("manager"), operation, api_version, text("subresource"));
            managed.insert(Entry {
                id,
                set,
                api_version: api_version.to_owned(),
                time,
            });
        }
        Ok(managed)
    }

    /// The `managedFields` list in upstream's order (Apply before Update,
    /// then oldest first, then by manager, version and subresource);
    /// `None` when there are no entries.
    pub fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut entries: Vec<&Entry> = self.entries.values().collect();
        entries.sort_by(|p, q| {
            let secs = |e: &Entry| e.time.map_or(0, |t| t.timestamp());
            p.id.operation
                .cmp(&q.id.operation)
                .then_with(|| secs(p).cmp(&secs(q)))
                .then_with(|| p.id.manager.cmp(&q.id.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.id.subresource.cmp(&q.id.subresource))
        });
        Some(Value::Array(
            entries.into_iter().map(encode_entry).collect(),
        ))
    }

    /// Writes the entries into `metadata.managedFields` (removing it when
    /// there are none).
    pub fn write_to(&self, obj: &mut Value) {
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            if let (Some(list), Some(map)) = (self.encode(), obj.as_object_mut()) {
                let mut meta = Map::new();
                meta.insert("managedFields".into(), list);
                map.insert("metadata".into(), Value::Object(meta));
            }
            return;
        };
        match self.encode() {
            Some(list) => {
                meta.insert("managedFields".into(), list);
            }
            None => {
                meta.shift_remove("managedFields");
            }
        }
    }
}

fn encode_entry(e: &Entry) -> Value {
    let mut m = Map::new();
    if !e.id.manager.is_empty() {
        m.insert("manager".into(), e.id.manager.clone().into());
    }
    m.insert("operation".into(), e.id.operation.as_str().into());
    m.insert("apiVersion".into(), e.api_version.clone().into());
    if let Some(t) = e.time {
        m.insert(
            "time".into(),
            t.to_rfc3339_opts(SecondsFormat::Secs, true).into(),
        );
    }
    m.insert("fieldsType".into(), "FieldsV1".into());
    m.insert("fieldsV1".into(), e.set.to_fields_v1());
    if !e.id.subresource.is_empty() {
        m.insert("subresource".into(), e.id.subresource.clone().into());
    }
    Value::Object(m)
}

/// Removes `metadata.managedFields` from an object.
pub fn remove_managed_fields(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.shift_remove("managedFields");
    }
}

/// Whether a request body asks to clear the managed fields: an empty list
/// or a list of one empty entry (upstream's isResetManagedFields).
pub fn is_reset(obj: &Value) -> bool {
    match obj.pointer("/metadata/managedFields") {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [one] => one.as_object().is_some_and(Map::is_empty),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests;
