//! Version conversion of custom resources: a [`Storage`] in front of the
//! shared storage of one CRD that keeps objects at the storage version and
//! hands each served version its own (upstream's conversion in the CRD
//! storage codec). Strategy `None` rewrites `apiVersion`; `Webhook` asks the
//! CRD's conversion webhook (see [`super::webhook`]); a failed conversion
//! is a 500 naming the webhook, and nothing is stored. Built-in kinds served
//! at a second version use the same storage with an in-process converter.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{EquivalentVersions, GroupVersionKind, GroupVersionResource};
use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use storage::{
    GetOptions, ListOptions, ListResult, Object, Preconditions, Storage, StorageError, UpdateFn,
    ValidateDeletionFn, WatchEvent, WatchOptions, WatchStream,
};

use super::strategy::VersionSchema;
use super::webhook::WebhookConverter;

type Result<T> = std::result::Result<T, StorageError>;

/// How objects change version.
pub enum Converter {
    /// Only `apiVersion` changes.
    None,
    Webhook(WebhookConverter),
    /// An in-process conversion of a built-in kind between its versions
    /// (`autoscaling/v1` ↔ `v2` HorizontalPodAutoscalers).
    Builtin(fn(Value, &str) -> std::result::Result<Value, String>),
    /// The CRD's webhook configuration is unusable.
    Broken(String),
}

impl Converter {
    /// Converts `objects` to `api_version`, leaving those already there.
    pub async fn convert(&self, objects: Vec<Value>, api_version: &str) -> Result<Vec<Value>> {
        self.convert_objects(objects, api_version)
            .await
            .map_err(StorageError::callback)
    }

    /// As [`Self::convert`], failing with the request's error.
    async fn convert_objects(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> std::result::Result<Vec<Value>, ApiError> {
        let needs = |o: &Value| o.get("apiVersion").and_then(Value::as_str) != Some(api_version);
        if !objects.iter().any(needs) {
            return Ok(objects);
        }
        match self {
            Converter::None => Ok(objects
                .into_iter()
                .map(|mut o| {
                    if let Some(map) = o.as_object_mut() {
                        map.insert("apiVersion".into(), Value::String(api_version.to_owned()));
                    }
                    o
                })
                .collect()),
            Converter::Webhook(w) => w
                .convert(objects, api_version)
                .await
                .map_err(ApiError::internal_error),
            Converter::Builtin(convert) => objects
                .into_iter()
                .map(|o| convert(o, api_version).map_err(ApiError::internal_error))
                .collect(),
            Converter::Broken(message) => Err(ApiError::internal_error(message.clone())),
        }
    }

    async fn one(&self, obj: Value, api_version: &str) -> Result<Value> {
        let mut out = self.convert(vec![obj], api_version).await?;
        out.pop()
            .ok_or_else(|| StorageError::Internal("conversion returned no object".into()))
    }

    async fn object(&self, obj: Object, api_version: &str) -> Result<Object> {
        if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
            return Ok(obj);
        }
        Ok(Arc::new(self.one((*obj).clone(), api_version).await?))
    }
}

/// One served version's view of a CRD's storage.
pub struct ConvertingStorage {
    inner: Arc<dyn Storage>,
    converter: Arc<Converter>,
    /// The served version's `group/version`.
    served: String,
    /// The storage version's `group/version`.
    stored: String,
    /// The served version's schema, whose defaults apply to what is read
    /// (as upstream defaults objects decoded from storage).
    defaults: Option<Arc<VersionSchema>>,
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

    /// Applies `schema`'s defaults to every object read.
    pub fn with_read_defaults(mut self, schema: Option<Arc<VersionSchema>>) -> Self {
        self.defaults = schema.filter(|s| s.has_defaults());
        self
    }

    async fn out(&self, obj: Object) -> Result<Object> {
        let obj = self.converter.object(obj, &self.served).await?;
        Ok(read_defaults(self.defaults.as_deref(), obj))
    }
}

/// The object with its schema's defaults, copied only when they change it.
fn read_defaults(schema: Option<&VersionSchema>, obj: Object) -> Object {
    match schema.and_then(|s| s.defaulted(&obj)) {
        Some(defaulted) => Arc::new(defaulted),
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
            let items: Vec<Value> = list.items.iter().map(|o| (**o).clone()).collect();
            let converted = self.converter.convert(items, &self.served).await?;
            list.items = converted.into_iter().map(Arc::new).collect();
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
}

fn resource_version(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The versions one stored resource is served at, and the converter
/// between them: what admission rules with `matchPolicy: Equivalent` match.
pub struct ServedVersions {
    pub versions: Vec<(GroupVersionResource, GroupVersionKind)>,
    pub converter: Arc<Converter>,
}

#[async_trait]
impl EquivalentVersions for ServedVersions {
    fn versions(&self) -> Vec<(GroupVersionResource, GroupVersionKind)> {
        self.versions.clone()
    }

    async fn convert(
        &self,
        object: Value,
        api_version: &str,
    ) -> std::result::Result<Value, ApiError> {
        let mut out = self
            .converter
            .convert_objects(vec![object], api_version)
            .await?;
        out.pop()
            .ok_or_else(|| ApiError::internal_error("conversion returned no object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn storage(served: &str, inner: Arc<dyn Storage>) -> ConvertingStorage {
        ConvertingStorage::new(
            inner,
            Arc::new(Converter::None),
            served.into(),
            "example.com/v1".into(),
        )
    }

    #[tokio::test]
    async fn objects_are_stored_at_the_storage_version_and_read_at_the_served_one() {
        let kv = Arc::new(storage::testing::MemoryKv::default());
        let raw: Arc<dyn Storage> =
            Arc::new(storage::store::Store::new(kv, Arc::new(storage::JsonCodec)));
        let beta = storage("example.com/v1beta1", raw.clone());
        let obj =
            json!({"apiVersion": "example.com/v1beta1", "kind": "W", "metadata": {"name": "a"}});
        let created = beta.create("/r/a", obj).await.expect("create");
        assert_eq!(created["apiVersion"], "example.com/v1beta1");
        let stored = raw.get("/r/a", GetOptions::default()).await.expect("get");
        assert_eq!(stored.expect("stored")["apiVersion"], "example.com/v1");
        let update = |cur: Option<Object>| {
            let mut o = cur.map(|o| (*o).clone()).unwrap_or_default();
            o["spec"] = json!({"n": 1});
            async move { Ok(o) }.boxed()
        };
        let updated = beta
            .guaranteed_update("/r/a", false, None, &update)
            .await
            .expect("update");
        assert_eq!(updated["apiVersion"], "example.com/v1beta1");
        assert_eq!(updated["spec"]["n"], 1);
        let list = beta
            .get_list(
                "/r",
                ListOptions {
                    recursive: true,
                    ..Default::default()
                },
            )
            .await
            .expect("list");
        assert_eq!(list.items[0]["apiVersion"], "example.com/v1beta1");
    }
}
