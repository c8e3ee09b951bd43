//! A storage that serves a resource at one version over the storage of
//! another (upstream converts in the storage codec, through the internal
//! type for built-in kinds and the CRD converter for custom resources):
//! objects are converted to the stored version on their way in and to the
//! served one on their way out, and the served version's defaults apply to
//! what is read. Used by every CRD version and by built-in kinds served at
//! a second group version. A failed conversion is an error and nothing is
//! stored.

mod converter;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use storage::{
    GetOptions, ListOptions, ListResult, Object, Preconditions, Storage, StorageError, UpdateFn,
    ValidateDeletionFn, WatchEvent, WatchOptions, WatchStream,
};

pub use converter::{ConvertFn, Converter, ServedVersions, VersionConverter};

type Result<T> = std::result::Result<T, StorageError>;

/// Defaults of a served version applied to objects read from storage
/// (a CRD version's structural schema defaults).
pub trait ReadDefaults: Send + Sync {
    /// The defaulted object, `None` when the defaults change nothing.
    fn defaulted(&self, obj: &Value) -> Option<Value>;
}

/// One served version's view of a resource's storage kept at another
/// version.
pub struct ConvertingStorage {
    inner: Arc<dyn Storage>,
    converter: Arc<Converter>,
    /// The served version's `group/version`.
    served: String,
    /// The storage version's `group/version`.
    stored: String,
    /// The served version's defaults, applied to what is read (as
    /// upstream defaults objects decoded from storage).
    defaults: Option<Arc<dyn ReadDefaults>>,
}

impl ConvertingStorage {
    pub fn new(
        inner: Arc<dyn Storage>,
        converter: Arc<Converter>,
        served: String,
        stored: String,
    ) -> Self {
        ConvertingStorage {
            inner,
            converter,
            served,
            stored,
            defaults: None,
        }
    }

    /// Applies `defaults` to every object read.
    pub fn with_read_defaults(mut self, defaults: Option<Arc<dyn ReadDefaults>>) -> Self {
        self.defaults = defaults;
        self
    }

    async fn out(&self, obj: Object) -> Result<Object> {
        let obj = self.converter.object(obj, &self.served).await?;
        Ok(read_defaults(self.defaults.as_deref(), obj))
    }
}

/// The object with its schema's defaults, copied only when they change it.
fn read_defaults(schema: Option<&dyn ReadDefaults>, obj: Object) -> Object {
    match schema.and_then(|s| s.defaulted(&obj)) {
        Some(defaulted) => Arc::new(defaulted.into()),
        None => obj,
    }
}

#[async_trait]
impl Storage for ConvertingStorage {
    async fn create(&self, key: &str, obj: Value) -> Result<Object> {
        let stored = self.converter.one(obj, &self.stored).await?;
        let created = self.inner.create(key, stored).await?;
        self.out(created).await
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: ValidateDeletionFn<'_>,
    ) -> Result<Object> {
        let deleted = self.inner.delete(key, preconditions, validate).await?;
        self.out(deleted).await
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        let stream = self.inner.watch(key, opts).await?;
        let converter = self.converter.clone();
        let served = self.served.clone();
        let defaults = self.defaults.clone();
        let converted = stream.then(move |event| {
            let (converter, served, defaults) =
                (converter.clone(), served.clone(), defaults.clone());
            async move {
                let convert = |o: Object| {
                    let (converter, served) = (converter.clone(), served.clone());
                    let defaults = defaults.clone();
                    async move {
                        let o = converter.object(o, &served).await?;
                        Ok(read_defaults(defaults.as_deref(), o))
                    }
                };
                let result = match event {
                    WatchEvent::Added(o) => convert(o).await.map(WatchEvent::Added),
                    WatchEvent::Modified(o) => convert(o).await.map(WatchEvent::Modified),
                    WatchEvent::Deleted(o) => convert(o).await.map(WatchEvent::Deleted),
                    other => Ok(other),
                };
                result.unwrap_or_else(WatchEvent::Error)
            }
        });
        Ok(Box::pin(converted))
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Object>> {
        match self.inner.get(key, opts).await? {
            Some(obj) => Ok(Some(self.out(obj).await?)),
            None => Ok(None),
        }
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        let mut list = self.inner.get_list(key, opts).await?;
        let served = Some(self.served.as_str());
        let at_served = list
            .items
            .iter()
            .all(|o| o.get("apiVersion").and_then(Value::as_str) == served);
        if !at_served {
            let items: Vec<Value> = list.items.iter().map(|o| o.to_value()).collect();
            let converted = self.converter.convert(items, &self.served).await?;
            list.items = converted.into_iter().map(|v| Arc::new(v.into())).collect();
        }
        if let Some(schema) = self.defaults.as_deref() {
            list.items = list
                .items
                .into_iter()
                .map(|o| read_defaults(Some(schema), o))
                .collect();
        }
        Ok(list)
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        update: UpdateFn<'_>,
    ) -> Result<Object> {
        // The update runs on the served version, outside the inner store's
        // loop (conversion is async); the inner write then only succeeds
        // against the state the update saw, and is retried otherwise.
        loop {
            let opts = GetOptions {
                ignore_not_found: true,
                ..Default::default()
            };
            let current = self.inner.get(key, opts).await?;
            if current.is_none() && !ignore_not_found {
                return Err(StorageError::NotFound {
                    key: key.to_owned(),
                });
            }
            let seen = current.as_ref().map(|o| resource_version(o).to_owned());
            let served = match current {
                Some(o) => Some(self.out(o).await?),
                None => None,
            };
            let new = update(served).await?;
            let stored = Arc::new(self.converter.one(new, &self.stored).await?);
            let moved = Arc::new(AtomicBool::new(false));
            let check = {
                let (moved, stored, seen) = (moved.clone(), stored.clone(), seen.clone());
                move |now: Option<Object>| {
                    let now_rv = now.as_ref().map(|o| resource_version(o).to_owned());
                    let result = if now_rv == seen {
                        Ok((*stored).clone())
                    } else {
                        moved.store(true, Ordering::SeqCst);
                        Err(StorageError::Conflict {
                            key: String::new(),
                            message: "object changed during conversion".into(),
                        })
                    };
                    async move { result }.boxed()
                }
            };
            match self
                .inner
                .guaranteed_update(key, true, preconditions, &check)
                .await
            {
                Ok(obj) => return self.out(obj).await,
                Err(_) if moved.load(Ordering::SeqCst) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    async fn count(&self, key: &str) -> Result<i64> {
        self.inner.count(key).await
    }

    async fn current_revision(&self) -> Result<i64> {
        self.inner.current_revision().await
    }

    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }

    async fn wait_ready(&self) {
        self.inner.wait_ready().await
    }
}

fn resource_version(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
}
