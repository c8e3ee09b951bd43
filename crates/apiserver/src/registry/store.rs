//! The generic registry store (upstream's `registry/generic/registry.Store`):
//! every verb implemented once over [`storage::Storage`], with the
//! resource's [`Strategies`] supplying defaults, preparation and validation.

use std::sync::{Arc, OnceLock};

use apimachinery::status::ApiError;
use futures::FutureExt;
use serde_json::{json, Value};
use storage::{GetOptions, ListOptions, ListResult, Object, Storage, WatchOptions, WatchStream};

use super::errors::{interpret, into_storage};
use super::object_meta;
use super::resource::ResourceInfo;
use super::rest::{CreateStrategy, DeleteStrategy, UpdateStrategy, UpdateSubresource};
use crate::admission::{Chain, Equivalents, Operation};
use crate::registry::admission::{AdmissionView, WriteAdmission};

mod delete;
mod lease_client;
mod list_watch;
mod strategies;

pub use list_watch::InNamespace;
pub use strategies::{DefaultStrategy, ScalePaths, Strategies};

/// Turns the current object (None when absent) into the one to store.
pub type Mutate = Arc<dyn Fn(Option<&Value>) -> Result<Value, ApiError> + Send + Sync>;

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Main,
    Status,
    /// One of the strategy's [`UpdateSubresource`]s, by name.
    Subresource(&'static str),
}

impl Target {
    /// The subresource admission names (empty for the main resource).
    pub fn subresource(self) -> &'static str {
        match self {
            Target::Main => "",
            Target::Status => "status",
            Target::Subresource(name) => name,
        }
    }
}

/// Options shared by the write verbs.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: run every step but do not persist.
    pub dry_run: bool,
}

/// What `delete` did.
#[derive(Debug, Clone)]
pub enum DeleteOutcome {
    /// The object is gone; this is its last state.
    Deleted(Object),
    /// The object has finalizers: it is marked for deletion and stays until
    /// they are removed.
    Pending(Object),
}

pub struct Store {
    pub info: ResourceInfo,
    pub strategies: Strategies,
    storage: Arc<dyn Storage>,
    /// `<storage prefix>/<storage root>`, e.g. `/registry/pods`.
    key_root: String,
    /// The admission chain, set once the server's stores exist (plugins
    /// read other resources' stores).
    admission: OnceLock<Arc<Chain>>,
    /// The resource's other served versions, if any.
    equivalents: OnceLock<Equivalents>,
}

impl Store {
    pub fn new(
        info: ResourceInfo,
        strategies: Strategies,
        storage: Arc<dyn Storage>,
        prefix: &str,
    ) -> Self {
        let key_root = format!("{}/{}", prefix.trim_end_matches('/'), info.storage_root);
        Store {
            info,
            strategies,
            storage,
            key_root,
            admission: OnceLock::new(),
            equivalents: OnceLock::new(),
        }
    }

    /// A store of `info` over an empty in-memory key-value store of its
    /// own, as unit tests build one.
    #[cfg(any(test, feature = "testing"))]
    pub fn in_memory(info: ResourceInfo, strategies: Strategies) -> Self {
        let kv = Arc::new(storage::testing::MemoryKv::default());
        let raw = Arc::new(storage::store::Store::new(kv, Arc::new(storage::JsonCodec)));
        Store::new(info, strategies, raw, "/registry")
    }

    /// Runs `chain` on every write made while serving a request. Only the
    /// first chain set counts.
    pub fn set_admission(&self, chain: Arc<Chain>) {
        // A second chain is ignored: the first one is already in use.
        let _ = self.admission.set(chain);
    }

    /// The admission chain in use, for stores built later that must run
    /// the same one (custom resources).
    pub fn admission(&self) -> Option<Arc<Chain>> {
        self.admission.get().cloned()
    }

    /// Names the other versions this resource is served at, for admission
    /// rules that match equivalent resources. Only the first call counts.
    pub fn set_equivalents(&self, equivalents: Equivalents) {
        let _ = self.equivalents.set(equivalents);
    }

    /// The admission of a write made while serving a request.
    fn write_admission(&self, subresource: &'static str, dry_run: bool) -> Option<WriteAdmission> {
        let admission = WriteAdmission::for_request(self.admission.get(), subresource, dry_run)?;
        Some(admission.with_equivalents(self.equivalents.get()))
    }

    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The key of one object: `<root>/<namespace>/<name>` or `<root>/<name>`.
    pub fn object_key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace.filter(|_| self.info.namespaced) {
            Some(ns) => format!("{}/{ns}/{name}", self.key_root),
            None => format!("{}/{name}", self.key_root),
        }
    }

    /// The key under which a collection lives (all namespaces when `None`).
    pub fn collection_key(&self, namespace: Option<&str>) -> String {
        match namespace.filter(|_| self.info.namespaced) {
            Some(ns) => format!("{}/{ns}", self.key_root),
            None => self.key_root.clone(),
        }
    }

    fn err(&self, name: &str) -> impl Fn(storage::StorageError) -> ApiError + '_ {
        let name = name.to_owned();
        move |e| interpret(e, &self.info, &name)
    }

    pub async fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: GetOptions,
    ) -> Result<Object, ApiError> {
        let key = self.object_key(namespace, name);
        let found = self
            .storage
            .get(
                &key,
                GetOptions {
                    ignore_not_found: true,
                    ..opts
                },
            )
            .await
            .map_err(self.err(name))?;
        found.ok_or_else(|| self.not_found(name))
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(&self.info.group, &self.info.resource, name)
    }

    pub async fn list(
        &self,
        namespace: Option<&str>,
        opts: ListOptions,
    ) -> Result<ListResult, ApiError> {
        let key = self.collection_key(namespace);
        self.storage
            .get_list(
                &key,
                ListOptions {
                    recursive: true,
                    ..opts
                },
            )
            .await
            .map_err(self.err(""))
    }

    pub async fn watch(
        &self,
        namespace: Option<&str>,
        opts: WatchOptions,
    ) -> Result<WatchStream, ApiError> {
        let key = self.collection_key(namespace);
        self.storage
            .watch(
                &key,
                WatchOptions {
                    recursive: true,
                    ..opts
                },
            )
            .await
            .map_err(self.err(""))
    }

    /// Creates an object. The namespace has already been checked against the
    /// request's; the body is decoded and defaulted.
    pub async fn create(&self, mut obj: Value, opts: &WriteOptions) -> Result<Object, ApiError> {
        let admission = self.write_admission("", opts.dry_run);
        if let Some(a) = &admission {
            obj = a.admit(&self.info, Operation::Create, obj, None).await?;
        }
        let generated = object_meta::fill_on_create(&mut obj, self.info.namespaced);
        self.strategies.create.prepare_for_create(&mut obj);
        self.validate_create(&obj)?;
        if let Some(a) = &admission {
            obj = a.validate(&self.info, Operation::Create, obj, None).await?;
        }
        let reserved = self
            .strategies
            .begin_create
            .before_create(&mut obj)
            .or_else(|errors| self.invalid_if_any(&obj, &errors).map(|()| false))?;
        self.strategies.create.canonicalize(&mut obj);
        // Stored as upstream writes it, so every read has Go's shape.
        go_json::normalize(&mut obj);
        let name = object_meta::name(&obj).to_owned();
        let namespace = object_meta::namespace(&obj).map(str::to_owned);
        // What was reserved is given back unless the object is stored.
        let attempted = reserved.then(|| obj.clone());
        let release = |stored: bool| {
            if let (false, Some(obj)) = (stored, &attempted) {
                self.strategies.begin_create.release(obj);
            }
        };
        if opts.dry_run {
            let result = self.dry_run_create(namespace.as_deref(), &name, obj).await;
            release(false);
            return result;
        }
        let key = self.object_key(namespace.as_deref(), &name);
        let result = self.storage.create(&key, obj).await;
        release(result.is_ok());
        result.map_err(|e| {
            if generated && matches!(e, storage::StorageError::AlreadyExists { .. }) {
                ApiError::generate_name_conflict(&self.info.group, &self.info.resource, &name, 1)
            } else {
                interpret(e, &self.info, &name)
            }
        })
    }

    /// A dry-run create answers as a real one would, without writing.
    async fn dry_run_create(
        &self,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
    ) -> Result<Object, ApiError> {
        let key = self.object_key(namespace, name);
        let existing = self
            .storage
            .get(
                &key,
                GetOptions {
                    ignore_not_found: true,
                    ..Default::default()
                },
            )
            .await
            .map_err(self.err(name))?;
        if existing.is_some() {
            return Err(ApiError::already_exists(
                &self.info.group,
                &self.info.resource,
                name,
            ));
        }
        Ok(Arc::new(obj.into()))
    }

    fn validate_create(&self, obj: &Value) -> Result<(), ApiError> {
        let mut errors = object_meta::validate(
            obj,
            self.info.namespaced,
            self.strategies.create.name_validator(),
        );
        errors.extend(self.strategies.create.validate_create(obj));
        self.invalid_if_any(obj, &errors)
    }

    fn invalid_if_any(
        &self,
        obj: &Value,
        errors: &[apimachinery::field_errors::FieldError],
    ) -> Result<(), ApiError> {
        if errors.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            &self.info.group,
            &self.info.kind,
            object_meta::name(obj),
            errors,
        ))
    }

    /// Replaces an object (PUT), or creates it when the strategy allows.
    /// `mutate` turns the current object into the requested one: for PUT it
    /// returns the body; for PATCH it applies the patch to the current state.
    /// Returns the stored object and whether it was created.
    pub async fn update(
        &self,
        namespace: Option<&str>,
        name: &str,
        target: Target,
        mutate: Mutate,
        opts: &WriteOptions,
    ) -> Result<(Object, bool), ApiError> {
        self.update_admitted(namespace, name, target, mutate, opts, None)
            .await
    }

    /// Updates the object through a subresource with a kind of its own
    /// (`scale`): admission sees `view`'s objects, never a create.
    pub async fn update_viewed(
        &self,
        namespace: Option<&str>,
        name: &str,
        mutate: Mutate,
        opts: &WriteOptions,
        view: Arc<dyn AdmissionView>,
    ) -> Result<Object, ApiError> {
        let (obj, _) = self
            .update_admitted(namespace, name, Target::Main, mutate, opts, Some(view))
            .await?;
        Ok(obj)
    }

    async fn update_admitted(
        &self,
        namespace: Option<&str>,
        name: &str,
        target: Target,
        mutate: Mutate,
        opts: &WriteOptions,
        view: Option<Arc<dyn AdmissionView>>,
    ) -> Result<(Object, bool), ApiError> {
        let key = self.object_key(namespace, name);
        let created = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let allow_create = self.strategies.update.allow_create_on_update()
            && target == Target::Main
            && view.is_none();
        let admission = self
            .write_admission(target.subresource(), opts.dry_run)
            .map(|a| match view {
                Some(view) => a.viewed_as(view),
                None => a,
            });
        let step = UpdateStep {
            info: self.info.clone(),
            create: self.strategies.create.clone(),
            update: self.strategies.update.clone(),
            delete: self.strategies.delete.clone(),
            target,
            mutate,
            created: created.clone(),
            admission,
        };
        let step = Arc::new(step);
        let update_fn = move |current: Option<Object>| {
            let step = step.clone();
            async move { step.write(current).await }.boxed()
        };
        if opts.dry_run {
            let current = self
                .storage
                .get(
                    &key,
                    GetOptions {
                        ignore_not_found: true,
                        ..Default::default()
                    },
                )
                .await
                .map_err(self.err(name))?;
            if current.is_none() && !allow_create {
                return Err(self.not_found(name));
            }
            let obj = match update_fn(current).await {
                Ok(obj) => obj,
                Err(e) => match delete::emptied(&e) {
                    Some(emptied) => emptied.obj.clone(),
                    None => return Err(self.err(name)(e)),
                },
            };
            return Ok((
                Arc::new(obj.into()),
                created.load(std::sync::atomic::Ordering::SeqCst),
            ));
        }
        loop {
            let err = match self
                .storage
                .guaranteed_update(&key, allow_create, None, &update_fn)
                .await
            {
                Ok(obj) => return Ok((obj, created.load(std::sync::atomic::Ordering::SeqCst))),
                Err(e) => e,
            };
            let Some(emptied) = delete::emptied(&err) else {
                return Err(self.err(name)(err));
            };
            if let Some(obj) = self.delete_without_finalizers(&key, emptied).await? {
                return Ok((obj, false));
            }
            // Changed since the update read it: run the update again.
        }
    }
}

/// The read-modify-write step of an update, run against the current state
/// (possibly several times when writers conflict).
struct UpdateStep {
    info: ResourceInfo,
    create: Arc<dyn CreateStrategy>,
    update: Arc<dyn UpdateStrategy>,
    delete: Arc<dyn DeleteStrategy>,
    target: Target,
    mutate: Mutate,
    created: Arc<std::sync::atomic::AtomicBool>,
    admission: Option<WriteAdmission>,
}

impl UpdateStep {
    fn update_subresource(&self, name: &str) -> Option<&'static UpdateSubresource> {
        self.update
            .update_subresources()
            .iter()
            .find(|s| s.name == name)
    }

    /// The object to write, or [`delete::EmptiedFinalizers`] when the
    /// update removes the last finalizer of an object marked for deletion
    /// (upstream's `ShouldDeleteDuringUpdate`): it is then deleted instead,
    /// never written without finalizers.
    async fn write(&self, current: Option<Object>) -> Result<Value, storage::StorageError> {
        let old = current.clone();
        let new = self.apply(current).await.map_err(into_storage)?;
        match old {
            Some(old) if delete::should_delete_during_update(self.delete.as_ref(), &new, &old) => {
                Err(storage::StorageError::callback(delete::EmptiedFinalizers {
                    resource_version: object_meta::resource_version(&old).map(str::to_owned),
                    obj: new,
                }))
            }
            _ => Ok(new),
        }
    }

    async fn apply(&self, current: Option<Object>) -> Result<Value, ApiError> {
        let mut new = (self.mutate)(current.as_deref().map(|o| o.value()))?;
        let Some(old) = current else {
            return self.create_instead(new).await;
        };
        self.created
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let name = object_meta::name(&old).to_owned();
        let requested_rv = object_meta::resource_version(&new)
            .unwrap_or_default()
            .to_owned();
        if !requested_rv.is_empty()
            && Some(requested_rv.as_str()) != object_meta::resource_version(&old)
        {
            return Err(ApiError::optimistic_lock_conflict(
                &self.info.group,
                &self.info.resource,
                &name,
            ));
        }
        if requested_rv.is_empty() && !self.update.allow_unconditional_update() {
            return Err(ApiError::invalid(
                &self.info.group,
                &self.info.kind,
                &name,
                &[apimachinery::field_errors::FieldError::invalid(
                    &apimachinery::field_errors::Path::new("metadata").child("resourceVersion"),
                    json!(0),
                    "must be specified for an update",
                )],
            ));
        }
        if requested_rv.is_empty() {
            // An unconditional update writes over the latest state, as
            // upstream does by taking the stored object's resourceVersion.
            if let Some(rv) = object_meta::resource_version(&old) {
                object_meta::metadata_mut(&mut new).insert("resourceVersion".into(), json!(rv));
            }
        }
        if let Some(a) = &self.admission {
            new = a
                .admit(&self.info, Operation::Update, new, Some(old.clone()))
                .await?;
        }
        // The managed fields the handler recorded survive strategies that
        // rebuild the object from the old one (status writes).
        let managed = new.pointer("/metadata/managedFields").cloned();
        match self.target {
            Target::Main => self.update.prepare_for_update(&mut new, &old),
            Target::Status => {
                self.update.prepare_for_status_update(&mut new, &old);
                self.update
                    .prepare_for_subresource_update("status", &mut new, &old);
            }
            Target::Subresource(name) => match self.update_subresource(name) {
                Some(sub) => {
                    sub.prepare(&mut new, &old);
                    self.update
                        .prepare_for_subresource_update(name, &mut new, &old);
                }
                None => new = Value::clone(&old),
            },
        }
        let meta = object_meta::metadata_mut(&mut new);
        match managed {
            Some(m) => meta.insert("managedFields".into(), m),
            None => meta.shift_remove("managedFields"),
        };
        object_meta::carry_over_on_update(&mut new, &old);
        let mut errors = object_meta::validate_update(
            &new,
            &old,
            self.info.namespaced,
            self.create.name_validator(),
        );
        errors.extend(match self.target {
            Target::Main => self.update.validate_update(&new, &old),
            Target::Status => self.update.validate_status_update(&new, &old),
            // A subresource has its own update rules: the main resource's
            // (e.g. a pod's fixed spec) would refuse its very purpose.
            Target::Subresource(name) => {
                let mut errors = self.create.validate(&new);
                if let Some(sub) = self.update_subresource(name) {
                    errors.extend((sub.validate)(&new, &old));
                }
                errors
            }
        });
        if !errors.is_empty() {
            return Err(ApiError::invalid(
                &self.info.group,
                &self.info.kind,
                &name,
                &errors,
            ));
        }
        if let Some(a) = &self.admission {
            new = a
                .validate(&self.info, Operation::Update, new, Some(old))
                .await?;
        }
        self.create.canonicalize(&mut new);
        go_json::normalize(&mut new);
        Ok(new)
    }

    async fn create_instead(&self, mut new: Value) -> Result<Value, ApiError> {
        self.created
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(a) = &self.admission {
            new = a.admit(&self.info, Operation::Create, new, None).await?;
        }
        object_meta::fill_on_create(&mut new, self.info.namespaced);
        self.create.prepare_for_create(&mut new);
        let mut errors =
            object_meta::validate(&new, self.info.namespaced, self.create.name_validator());
        errors.extend(self.create.validate_create(&new));
        if !errors.is_empty() {
            return Err(ApiError::invalid(
                &self.info.group,
                &self.info.kind,
                object_meta::name(&new),
                &errors,
            ));
        }
        if let Some(a) = &self.admission {
            new = a.validate(&self.info, Operation::Create, new, None).await?;
        }
        self.create.canonicalize(&mut new);
        go_json::normalize(&mut new);
        Ok(new)
    }
}
