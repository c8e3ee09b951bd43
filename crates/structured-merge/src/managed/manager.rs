//! The field manager of one resource: how a write changes who owns which
//! fields. Updates take the changed fields from their previous owners;
//! applies merge the configuration, remove what the applier stopped
//! applying (unless someone else owns it) and refuse to change fields
//! other managers own unless forced.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::{is_reset, remove_managed_fields, Conflict, Conflicts, Entry, Managed, ManagedError};
use super::{ManagerId, Operation};
use crate::fieldpath::{Path, PathElement, Set};
use crate::typed::{Comparison, Ty, TypeErrors, Typer};

/// More update managers than this are folded into `ancient-changes`.
const MAX_UPDATE_MANAGERS: usize = 10;
/// The annotation client-side apply keeps its last configuration in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// Other managers own fields the configuration changes (409).
    #[error("{0}")]
    Conflicts(Conflicts),
    /// The configuration does not fit the type (fields the type does not
    /// declare, list elements without keys, duplicates).
    #[error("{0}")]
    Invalid(TypeErrors),
    /// The live object's managed fields cannot be read.
    #[error("failed to decode managed fields: {0}")]
    Managed(#[from] ManagedError),
    /// The live object does not fit the type.
    #[error("failed to merge config: {0}")]
    Merge(TypeErrors),
}

/// The field manager of one resource at one version and subresource.
#[derive(Debug, Clone)]
pub struct FieldManager<'a> {
    typer: Typer<'a>,
    ty: Ty<'a>,
    api_version: String,
    subresource: String,
    /// Fields the strategy resets for this subresource: nobody owns them.
    reset: Set,
}

impl<'a> FieldManager<'a> {
    pub fn new(typer: Typer<'a>, ty: Ty<'a>, api_version: &str, subresource: &str) -> Self {
        FieldManager {
            typer,
            ty,
            api_version: api_version.to_owned(),
            subresource: subresource.to_owned(),
            reset: Set::new(),
        }
    }

    /// Fields (with everything below them) that no write may own.
    pub fn with_reset_fields(mut self, reset: Set) -> Self {
        self.reset = reset;
        self
    }

    fn id(&self, manager: &str, operation: Operation) -> ManagerId {
        let manager = if manager.is_empty() {
            "unknown"
        } else {
            manager
        };
        ManagerId::new(manager, operation, &self.api_version, &self.subresource)
    }

    /// Records a create, update or non-apply patch: `new` is the object to
    /// store (`live` the current one, `None` on create); its
    /// `metadata.managedFields` is rewritten. Never fails: when the
    /// managed fields cannot be computed the live ones are kept.
    pub fn update(&self, live: Option<&Value>, new: &mut Value, manager: &str, now: DateTime<Utc>) {
        let empty = self.zero_object();
        let live_obj = live.unwrap_or(&empty);
        let from_live = || Managed::from_object(live_obj).unwrap_or_default();
        let mut managed = if !self.subresource.is_empty() {
            from_live()
        } else if is_reset(new) {
            Managed::default()
        } else {
            match Managed::from_object(new) {
                Ok(m) if !m.is_empty() => m,
                _ => from_live(),
            }
        };
        remove_managed_fields(new);
        // Objects that have lost their managed fields stay without them
        // until an apply (upstream's skip-non-applied manager).
        if managed.is_empty() && has_uid(live_obj) {
            return;
        }
        self.record_update(
            &mut managed,
            live_obj,
            new,
            self.id(manager, Operation::Update),
            now,
        );
        managed.write_to(new);
    }

    /// What a new object of the type looks like before anything is set:
    /// Go's zero value has the top-level structs, so creating an object
    /// does not own them as a whole.
    fn zero_object(&self) -> Value {
        let mut zero = Map::new();
        if let Some(fields) = self.typer.struct_fields(self.ty) {
            for name in ["metadata", "spec", "status"] {
                if fields.iter().any(|f| f.name == name) {
                    zero.insert(name.into(), Value::Object(Map::new()));
                }
            }
        }
        Value::Object(zero)
    }

    /// How `new` differs from `old`, both read with the top-level structs
    /// a Go object always has, so that they are never added as a whole.
    fn compare(&self, old: &Value, new: &Value) -> Comparison {
        let (old, new) = (self.with_zero_top(old), self.with_zero_top(new));
        self.typer.compare(self.ty, &old, &new)
    }

    fn with_zero_top<'v>(&self, v: &'v Value) -> Cow<'v, Value> {
        let Value::Object(zero) = self.zero_object() else {
            return Cow::Borrowed(v);
        };
        let missing =
            |m: &Map<String, Value>| zero.keys().any(|k| m.get(k).is_none_or(Value::is_null));
        match v {
            Value::Object(m) if missing(m) => {
                let mut filled = m.clone();
                for (k, z) in zero {
                    if filled.get(&k).is_none_or(Value::is_null) {
                        filled.insert(k, z);
                    }
                }
                Cow::Owned(Value::Object(filled))
            }
            _ => Cow::Borrowed(v),
        }
    }

    /// The update step: the fields that changed from `live` to `new` move
    /// to `id`, removed fields leave their owners.
    fn record_update(
        &self,
        managed: &mut Managed,
        live: &Value,
        new: &Value,
        id: ManagerId,
        now: DateTime<Utc>,
    ) {
        let mut cmp = self.compare(live, new);
        cmp.exclude(&self.reset);
        let changed = cmp.modified.union(&cmp.added);
        for entry in managed.entries_mut() {
            entry.set = entry.set.difference(&changed).difference(&cmp.removed);
        }
        managed.retain(|e| !e.set.is_empty());
        let set = strip_meta(&changed);
        if !set.is_empty() {
            let previous = managed.remove(&id).map(|e| e.set).unwrap_or_default();
            managed.insert(Entry {
                id,
                set: previous.union(&set),
                api_version: self.api_version.clone(),
                time: Some(now),
            });
        }
        cap_update_managers(managed);
    }

    /// Server-side apply of `config` (already checked for kind and
    /// version) by `manager` onto `live` (`None` on create). Returns the
    /// object to store, with its managed fields.
    pub fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Value, ApplyError> {
        self.typer
            .validate(self.ty, config)
            .map_err(ApplyError::Invalid)?;
        let empty = Value::Object(Map::new());
        let live_obj = live.unwrap_or(&empty);
        let mut managed = Managed::from_object(live_obj)?;
        let mut live_fields = live_obj.clone();
        remove_managed_fields(&mut live_fields);
        if managed.is_empty() && has_uid(live_obj) {
            // Fields set before the first apply belong to someone.
            let before = self.id("before-first-apply", Operation::Update);
            self.record_update(&mut managed, &self.zero_object(), &live_fields, before, now);
        }
        let attempt = self.apply_once(&managed, live_obj, config, manager, force);
        let (object, managed) = match attempt {
            Err(ApplyError::Conflicts(conflicts)) if manager == "kubectl" && !force => {
                // Fields client-side apply last set to their live values may
                // be taken over (upstream's last-applied manager).
                let allowed = self.allowed_from_last_applied(live_obj);
                let remaining: Vec<Conflict> = conflicts
                    .0
                    .into_iter()
                    .filter(|c| !allowed.has(&c.path.0))
                    .collect();
                if !remaining.is_empty() {
                    return Err(ApplyError::Conflicts(Conflicts(remaining)));
                }
                self.apply_once(&managed, live_obj, config, manager, true)?
            }
            other => other?,
        };
        let id = self.id(manager, Operation::Apply);
        let mut managed = managed;
        let mut result = match object {
            Some(obj) => {
                if let Some(entry) = managed.remove(&id) {
                    managed.insert(Entry {
                        time: Some(now),
                        ..entry
                    });
                }
                obj
            }
            None => live_obj.clone(),
        };
        remove_managed_fields(&mut result);
        managed.write_to(&mut result);
        if manager == "kubectl" {
            update_last_applied(&mut result, config);
        }
        Ok(result)
    }

    /// One apply attempt: the merged object (`None` when nothing changed)
    /// and the new managed fields.
    fn apply_once(
        &self,
        managed: &Managed,
        live: &Value,
        config: &Value,
        manager: &str,
        force: bool,
    ) -> Result<(Option<Value>, Managed), ApplyError> {
        let mut managed = managed.clone();
        let merged = self
            .typer
            .merge(self.ty, live, config)
            .map_err(ApplyError::Merge)?;
        let id = self.id(manager, Operation::Apply);
        let previous = managed.remove(&id);
        let set = self
            .typer
            .field_set(self.ty, config)
            .recursive_difference(&self.reset);
        managed.insert(Entry {
            id: id.clone(),
            set,
            api_version: self.api_version.clone(),
            time: previous.as_ref().and_then(|e| e.time),
        });
        let new = match previous.filter(|e| !e.set.is_empty()) {
            Some(last) => self.prune(merged, &managed, &last.set),
            None => merged,
        };
        let mut cmp = self.compare(live, &new);
        cmp.exclude(&self.reset);
        let changed = cmp.modified.union(&cmp.added);
        let mut conflicts = Vec::new();
        for entry in managed.entries().filter(|e| e.id != id) {
            for path in entry.set.intersection(&changed).paths() {
                conflicts.push(Conflict {
                    manager: entry.id.clone(),
                    path,
                });
            }
        }
        if !force && !conflicts.is_empty() {
            conflicts.sort_by_key(|c| c.manager.key());
            return Err(ApplyError::Conflicts(Conflicts(conflicts)));
        }
        for entry in managed.entries_mut().filter(|e| e.id != id) {
            entry.set = entry.set.difference(&changed).difference(&cmp.removed);
        }
        if let Some(mut own) = managed.remove(&id) {
            own.set = strip_meta(&own.set);
            managed.insert(own);
        }
        managed.retain(|e| !e.set.is_empty());
        let changed_object = new != *live;
        Ok((changed_object.then_some(new), managed))
    }

    /// Removes from `merged` what the applier applied last time
    /// (`last`) and no manager owns any more.
    fn prune(&self, merged: Value, managed: &Managed, last: &Set) -> Value {
        let owned = managed
            .entries()
            .fold(Set::new(), |acc, e| acc.union(&e.set));
        let owned = self.typer.ensure_named_fields_are_members(self.ty, &owned);
        let last = self.typer.ensure_named_fields_are_members(self.ty, last);
        let orphaned = last.difference(&owned);
        if orphaned.is_empty() {
            return merged;
        }
        self.typer
            .remove(self.ty, &merged, &orphaned)
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// The fields of the last client-side applied configuration that still
    /// have the values it set.
    fn allowed_from_last_applied(&self, live: &Value) -> Set {
        let Some(text) = live
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LAST_APPLIED))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        else {
            return Set::new();
        };
        let Ok(last) = serde_json::from_str::<Value>(text) else {
            return Set::new();
        };
        if last.get("apiVersion").and_then(Value::as_str) != Some(self.api_version.as_str()) {
            return Set::new();
        }
        let cmp = self.typer.compare(self.ty, &last, live);
        self.typer
            .field_set(self.ty, &last)
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed)
    }
}

fn has_uid(obj: &Value) -> bool {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .is_some_and(|u| !u.is_empty())
}

/// The applier's or updater's set without the metadata no one owns.
fn strip_meta(set: &Set) -> Set {
    let mut strip = Set::new();
    for top in ["apiVersion", "kind", "metadata"] {
        strip.insert(&[PathElement::field(top)]);
    }
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        strip.insert(&Path::fields(&["metadata", field]).0);
    }
    set.difference(&strip)
}

/// Folds the oldest update managers beyond the limit into one
/// `ancient-changes` entry per version (upstream's cap-managers manager).
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<(i64, String, ManagerId)> = managed
        .entries()
        .filter(|e| e.id.operation == Operation::Update)
        .map(|e| {
            (
                e.time.map_or(0, |t| t.timestamp()),
                e.id.key(),
                e.id.clone(),
            )
        })
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut count = updaters.len();
    let mut first_of_version: Vec<(String, ManagerId)> = Vec::new();
    for (_, _, id) in updaters {
        if count <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.get(&id).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let bucket = ManagerId::new("ancient-changes", Operation::Update, &version, "");
        match first_of_version.iter().find(|(v, _)| *v == version) {
            None => first_of_version.push((version, id)),
            Some((_, first)) => {
                if managed.get(&bucket).is_none() {
                    if let Some(first_entry) = managed.remove(first) {
                        managed.insert(Entry {
                            id: bucket.clone(),
                            ..first_entry
                        });
                    }
                }
                let folded = managed
                    .get(&bucket)
                    .map(|b| b.set.clone())
                    .unwrap_or_default();
                managed.remove(&id);
                managed.insert(Entry {
                    id: bucket,
                    set: entry.set.union(&folded),
                    api_version: version,
                    time: entry.time,
                });
                count -= 1;
            }
        }
    }
}

/// Client-side apply's annotation follows server-side applies by kubectl
/// when the object has one (upstream's last-applied updater).
fn update_last_applied(obj: &mut Value, config: &Value) {
    let Some(annotations) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if annotations
        .get(LAST_APPLIED)
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return;
    }
    let mut config = config.clone();
    if let Some(a) = config
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.shift_remove(LAST_APPLIED);
    }
    let text = sorted(&config).to_string();
    annotations.insert(LAST_APPLIED.into(), Value::String(text));
}

/// A copy with object keys sorted, as Go encodes maps.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
