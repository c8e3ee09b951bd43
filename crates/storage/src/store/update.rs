//! Compare-on-revision writes of existing keys: upstream's `GuaranteedUpdate`
//! and `conditionalDelete`. Both read the latest state, check it, write with
//! a compare on the key's mod revision and, when a concurrent writer got
//! there first, start over from the state the failed transaction returned.

use std::sync::Arc;

use bytes::Bytes;
use component_base::tracing::{self as tracing_ctx, Attribute};

use super::object::{check_preconditions, prepare_for_storage, set_resource_version};
use super::Store;
use crate::codec::Encoded;
use crate::error::{Result, StorageError};
use crate::interface::{Object, Preconditions, UpdateFn, ValidateDeletionFn};
use crate::kv::{KeyValue, RangeRequest, TxnOp, TxnResponse};
use crate::object::StoredObject;

/// The key as last read: its object (None when absent), stored bytes and
/// mod revision (0 when absent, which makes the write a create).
struct State {
    obj: Option<Object>,
    data: Bytes,
    revision: i64,
}

impl Store {
    fn state_from(&self, key: &str, kv: Option<KeyValue>, ignore_not_found: bool) -> Result<State> {
        match kv {
            Some(kv) => Ok(State {
                obj: Some(Arc::new(
                    self.decode(key, &kv.value, kv.mod_revision)?.into(),
                )),
                data: kv.value,
                revision: kv.mod_revision,
            }),
            None if ignore_not_found => Ok(State {
                obj: None,
                data: Bytes::new(),
                revision: 0,
            }),
            None => Err(StorageError::NotFound {
                key: key.to_string(),
            }),
        }
    }

    async fn current_state(&self, key: &str, ignore_not_found: bool) -> Result<State> {
        let resp = self
            .kv
            .range(RangeRequest {
                key: key.to_string(),
                ..RangeRequest::default()
            })
            .await?;
        self.state_from(key, resp.kvs.into_iter().next(), ignore_not_found)
    }
}

pub(super) async fn guaranteed_update(
    store: &Store,
    key: &str,
    ignore_not_found: bool,
    preconditions: Option<&Preconditions>,
    update: UpdateFn<'_>,
) -> Result<Object> {
    let mut state = store.current_state(key, ignore_not_found).await?;
    tracing_ctx::add_event("initial value restored", Vec::new());
    loop {
        check_preconditions(
            key,
            preconditions,
            state.obj.as_deref().map(StoredObject::value),
        )?;
        let mut updated = update(state.obj.clone()).await?;
        prepare_for_storage(key, &mut updated)?;
        tracing_ctx::add_event("About to Encode", Vec::new());
        let Encoded { data, exact } = store.codec.encode_checked(&updated)?;
        let len = i64::try_from(data.len()).unwrap_or(i64::MAX);
        tracing_ctx::add_event("Encode succeeded", vec![Attribute::new("len", len)]);
        if let Some(current) = &state.obj {
            // Nothing changed: no write, no new revision (upstream short-circuits too).
            if data == state.data {
                return Ok(current.clone());
            }
        }
        if data.len() > store.max_object_bytes {
            return Err(StorageError::TooLarge {
                size: data.len(),
                limit: store.max_object_bytes,
            });
        }
        tracing_ctx::add_event("Transaction prepared", Vec::new());
        let ticket = store.handoff.expect(key, &data);
        let txn = store
            .kv
            .txn(key, state.revision, TxnOp::Put(data.clone()))
            .await;
        let events: &[&'static str] = match &txn {
            Ok(_) => &["Txn call completed", "Transaction committed"],
            Err(_) => &["Txn call failed"],
        };
        for event in events {
            tracing_ctx::add_event(event, Vec::new());
        }
        match txn? {
            TxnResponse::Succeeded { revision, .. } => {
                let updated = store.written(key, updated, (&data, exact), revision)?;
                ticket.fill(revision, &updated);
                return Ok(updated);
            }
            TxnResponse::Failed { current, .. } => {
                tracing::debug!(key, "guaranteed update lost a race, retrying");
                state = store.state_from(key, current, ignore_not_found)?;
            }
        }
    }
}

pub(super) async fn delete(
    store: &Store,
    key: &str,
    preconditions: Option<&Preconditions>,
    validate: ValidateDeletionFn<'_>,
) -> Result<Object> {
    let mut state = store.current_state(key, false).await?;
    loop {
        let Some(obj) = state.obj.take() else {
            return Err(StorageError::NotFound {
                key: key.to_string(),
            });
        };
        check_preconditions(key, preconditions, Some(&obj))?;
        validate(obj.clone()).await?;
        // A delete event carries the deleted bytes as its previous value.
        let ticket = store.handoff.expect(key, &state.data);
        match store.kv.txn(key, state.revision, TxnOp::Delete).await? {
            TxnResponse::Succeeded { revision, .. } => {
                // The deleted object carries the revision of its deletion.
                let mut deleted = StoredObject::unwrap_or_clone(obj);
                set_resource_version(key, &mut deleted, revision)?;
                let deleted = Arc::new(deleted.into());
                ticket.fill(revision, &deleted);
                return Ok(deleted);
            }
            TxnResponse::Failed { current, .. } => {
                tracing::debug!(key, "delete lost a race, retrying");
                state = store.state_from(key, current, false)?;
            }
        }
    }
}
