//! The delete verbs of the generic store (upstream's `Store.Delete`,
//! `updateForGracefulDeletionAndFinalizers` and `DeleteCollection`):
//! graceful deletion, garbage-collection finalizers from the propagation
//! policy, and objects kept by finalizers until they are removed.

use std::sync::Arc;

use apimachinery::status::ApiError;
use chrono::Utc;
use futures::FutureExt;
use serde_json::{json, Value};
use storage::{GetOptions, ListOptions, Object, Preconditions, StorageError};

use super::super::deletion::{self, DeleteOptions, Graceful};
use super::super::errors::interpret;
use super::super::object_meta;
use super::super::resource::ResourceInfo;
use super::super::rest::DeleteStrategy;
use super::{DeleteOutcome, Store, Strategies};

/// Why the deletion update stopped without writing.
#[derive(Debug, thiserror::Error)]
enum Interrupt {
    /// Nothing keeps the object: delete it at once.
    #[error("delete now")]
    DeleteNow,
    /// A graceful deletion is under way and is not shortened.
    #[error("already deleting")]
    AlreadyDeleting,
}

/// What the deletion update left behind.
enum Marked {
    /// The object stays (finalizers or a grace period).
    Pending(Object),
    /// The object is to be deleted now; the update's result, if it wrote.
    DeleteNow(Option<Object>),
}

/// The object as a delete request leaves it (upstream's update function
/// of `updateForGracefulDeletionAndFinalizers`).
fn mark(
    strategies: &Strategies,
    existing: &Value,
    opts: &DeleteOptions,
) -> Result<Value, StorageError> {
    let mut obj = existing.clone();
    let now = Utc::now();
    let graceful = deletion::before_delete(
        strategies.graceful_delete.as_ref(),
        &mut obj,
        opts.grace_period_seconds,
        now,
    );
    if graceful == Graceful::Pending {
        return Err(StorageError::callback(Interrupt::AlreadyDeleting));
    }
    let current = deletion::finalizers(&obj);
    if let Some(wanted) =
        deletion::gc_finalizers(strategies.garbage_collection.gc_policy(), opts, &current)
    {
        object_meta::metadata_mut(&mut obj).insert("finalizers".into(), json!(wanted));
    }
    let held = strategies.delete.prepare_for_delete(&mut obj);
    let pending = held || object_meta::has_finalizers(&obj);
    match graceful {
        Graceful::Yes(_) => Ok(obj),
        _ if pending => {
            deletion::mark_as_deleting(&mut obj, now);
            Ok(obj)
        }
        _ => Err(StorageError::callback(Interrupt::DeleteNow)),
    }
}

/// An update that removed the last finalizer of an object marked for
/// deletion: the object is deleted instead of written (upstream's
/// `errEmptiedFinalizers`).
#[derive(Debug, thiserror::Error)]
#[error("emptied finalizers")]
pub(super) struct EmptiedFinalizers {
    /// The updated object, the update's answer.
    pub obj: Value,
    /// The resourceVersion of the object the update read.
    pub resource_version: Option<String>,
}

pub(super) fn emptied(e: &StorageError) -> Option<&EmptiedFinalizers> {
    match e {
        StorageError::Callback(inner) => inner.downcast_ref::<EmptiedFinalizers>(),
        _ => None,
    }
}

/// Whether an update deletes the object rather than write it (upstream's
/// `ShouldDeleteDuringUpdate`): the new object has no finalizers left (nor
/// kept elsewhere, a namespace's `spec.finalizers`) and the old one was
/// marked for deletion with no grace period running.
pub(super) fn should_delete_during_update(
    delete: &dyn DeleteStrategy,
    new: &Value,
    old: &Value,
) -> bool {
    let grace = old
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    !object_meta::has_finalizers(new)
        && !delete.holds_deletion(new)
        && object_meta::is_terminating(old)
        && grace == 0
}

fn interrupt(e: &StorageError) -> Option<&Interrupt> {
    match e {
        StorageError::Callback(inner) => inner.downcast_ref::<Interrupt>(),
        _ => None,
    }
}

impl Store {
    /// Deletes an object: at once, or by marking it for deletion when
    /// finalizers (its own, or the collector's from the propagation
    /// policy) or a grace period keep it.
    /// A name the strategy keeps is refused first (upstream's REST
    /// `Delete` overrides).
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        if let Some(reason) = self.strategies.delete.undeletable(name) {
            let (group, resource) = (&self.info.group, &self.info.resource);
            return Err(ApiError::forbidden(group, resource, name, reason));
        }
        self.delete_object(namespace, name, opts).await
    }

    /// The deletion itself, as the generic store does it: collection
    /// deletes come here directly, so REST `Delete` overrides do not apply
    /// to them (as upstream).
    async fn delete_object(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = self.object_key(namespace, name);
        let current = self.get(namespace, name, GetOptions::default()).await?;
        check_preconditions(&self.info, name, &current, opts.preconditions.as_ref())?;
        if let Some(a) = self.write_admission("", opts.dry_run) {
            a.delete(&self.info, current.clone()).await?;
        }
        let mut probe = current.to_value();
        let graceful = deletion::before_delete(
            self.strategies.graceful_delete.as_ref(),
            &mut probe,
            opts.grace_period_seconds,
            Utc::now(),
        );
        if graceful == Graceful::Pending {
            return Ok(DeleteOutcome::Pending(current));
        }
        let gc_change = deletion::gc_finalizers(
            self.strategies.garbage_collection.gc_policy(),
            opts,
            &deletion::finalizers(&current),
        )
        .is_some();
        let defers = self.strategies.delete.prepare_for_delete(&mut probe);
        let mut preconditions = opts.preconditions.clone();
        let mut last = None;
        if matches!(graceful, Graceful::Yes(_))
            || gc_change
            || defers
            || object_meta::has_finalizers(&current)
        {
            match self.mark_for_deletion(&key, name, &current, opts).await? {
                Marked::Pending(obj) => return Ok(DeleteOutcome::Pending(obj)),
                Marked::DeleteNow(updated) => {
                    if let (Some(p), Some(obj)) = (preconditions.as_mut(), &updated) {
                        if p.resource_version.is_some() {
                            p.resource_version =
                                object_meta::resource_version(obj).map(str::to_owned);
                        }
                    }
                    last = updated;
                }
            }
        }
        if opts.dry_run {
            return Ok(DeleteOutcome::Deleted(last.unwrap_or(current)));
        }
        let no_check = |_: Object| async { Ok(()) }.boxed();
        match self
            .storage
            .delete(&key, preconditions.as_ref(), &no_check)
            .await
        {
            Ok(deleted) => {
                self.strategies.begin_create.release(&deleted);
                Ok(DeleteOutcome::Deleted(deleted))
            }
            // Deleted by someone else after our update (a graceless
            // deletion racing another deleter), as upstream tolerates.
            Err(StorageError::NotFound { .. }) if last.is_some() => {
                Ok(DeleteOutcome::Deleted(last.unwrap_or(current)))
            }
            Err(e) => Err(interpret(e, &self.info, name)),
        }
    }

    /// Writes what a delete request changes (deletion timestamp, grace
    /// period, finalizers), unless the object can simply go.
    async fn mark_for_deletion(
        &self,
        key: &str,
        name: &str,
        current: &Object,
        opts: &DeleteOptions,
    ) -> Result<Marked, ApiError> {
        let strategies = self.strategies.clone();
        let options = Arc::new(opts.clone());
        let update = move |existing: Option<Object>| {
            let result = match existing {
                Some(obj) => mark(&strategies, &obj, &options),
                None => Err(StorageError::NotFound { key: String::new() }),
            };
            async move { result }.boxed()
        };
        let result = if opts.dry_run {
            let existing = self.get_by_key(key, name).await?;
            update(Some(existing)).await.map(|v| Arc::new(v.into()))
        } else {
            self.storage
                .guaranteed_update(key, false, opts.preconditions.as_ref(), &update)
                .await
        };
        match result {
            Ok(obj) => {
                let period = obj
                    .pointer("/metadata/deletionGracePeriodSeconds")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if object_meta::has_finalizers(&obj)
                    || self.strategies.delete.holds_deletion(&obj)
                    || period > 0
                {
                    Ok(Marked::Pending(obj))
                } else {
                    Ok(Marked::DeleteNow(Some(obj)))
                }
            }
            Err(e) => match interrupt(&e) {
                Some(Interrupt::DeleteNow) => Ok(Marked::DeleteNow(None)),
                Some(Interrupt::AlreadyDeleting) => Ok(Marked::Pending(current.clone())),
                None => Err(interpret(e, &self.info, name)),
            },
        }
    }

    async fn get_by_key(&self, key: &str, name: &str) -> Result<Object, ApiError> {
        self.storage
            .get(
                key,
                GetOptions {
                    ignore_not_found: true,
                    ..Default::default()
                },
            )
            .await
            .map_err(self.err(name))?
            .ok_or_else(|| self.not_found(name))
    }

    /// Deletes the object whose update emptied its finalizers, if it is
    /// still as the update read it (upstream's `deleteWithoutFinalizers`;
    /// the resourceVersion precondition keeps a concurrent writer's change,
    /// e.g. a finalizer added back); `None` when it changed since.
    /// Answers with the updated object, as upstream.
    pub(super) async fn delete_without_finalizers(
        &self,
        key: &str,
        emptied: &EmptiedFinalizers,
    ) -> Result<Option<Object>, ApiError> {
        let preconditions = Preconditions {
            uid: None,
            resource_version: emptied.resource_version.clone(),
        };
        let no_check = |_: Object| async { Ok(()) }.boxed();
        match self
            .storage
            .delete(key, Some(&preconditions), &no_check)
            .await
        {
            Ok(deleted) => self.strategies.begin_create.release(&deleted),
            // Deleted by a concurrent update that also emptied them.
            Err(StorageError::NotFound { .. }) => {}
            Err(StorageError::InvalidPrecondition { .. } | StorageError::Conflict { .. }) => {
                return Ok(None)
            }
            Err(e) => return Err(interpret(e, &self.info, object_meta::name(&emptied.obj))),
        }
        Ok(Some(Arc::new(emptied.obj.clone().into())))
    }

    /// Deletes every object the list options select (deletecollection),
    /// each with the same options.
    pub async fn delete_collection(
        &self,
        namespace: Option<&str>,
        list: ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Object>, ApiError> {
        let items = self.list(namespace, list).await?.items;
        let mut deleted = Vec::with_capacity(items.len());
        for item in items {
            let name = object_meta::name(&item).to_owned();
            let ns = object_meta::namespace(&item).map(str::to_owned);
            match self.delete_object(ns.as_deref(), &name, opts).await {
                Ok(DeleteOutcome::Deleted(obj) | DeleteOutcome::Pending(obj)) => deleted.push(obj),
                // Deleted concurrently: nothing left to do.
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// The precondition check of upstream's `BeforeDelete`, made early to fail
/// before anything is written (storage checks them again).
fn check_preconditions(
    info: &ResourceInfo,
    name: &str,
    current: &Value,
    preconditions: Option<&Preconditions>,
) -> Result<(), ApiError> {
    let Some(p) = preconditions else {
        return Ok(());
    };
    // Upstream names the kind here, not the resource.
    let conflict = |message: String| ApiError::conflict(&info.group, &info.kind, name, message);
    if let Some(uid) = &p.uid {
        let actual = object_meta::uid(current).unwrap_or_default();
        if actual != uid {
            return Err(conflict(format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
            )));
        }
    }
    if let Some(rv) = &p.resource_version {
        let actual = object_meta::resource_version(current).unwrap_or_default();
        if actual != rv {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "delete_tests.rs"]
mod tests;
