//! The conversion strategies of a CRD (upstream's
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/conversion`): `None`
//! rewrites `apiVersion`; `Webhook` asks the CRD's conversion webhook (see
//! [`webhook_converter`]); a failed conversion is a 500 naming the webhook.
//! The storage that converts every object on its way in and out is
//! `apiserver::registry::converting`.

pub mod webhook_converter;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use apiserver::registry::converting::{ReadDefaults, VersionConverter};

use crate::registry::customresource::VersionSchema;
use webhook_converter::WebhookConverter;

/// How a CRD's objects change version.
pub enum CrdConverter {
    /// Only `apiVersion` changes.
    None,
    Webhook(WebhookConverter),
    /// The CRD's webhook configuration is unusable.
    Broken(String),
}

#[async_trait]
impl VersionConverter for CrdConverter {
    async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, ApiError> {
        match self {
            CrdConverter::None => Ok(objects
                .into_iter()
                .map(|mut o| {
                    if let Some(map) = o.as_object_mut() {
                        map.insert("apiVersion".into(), Value::String(api_version.to_owned()));
                    }
                    o
                })
                .collect()),
            CrdConverter::Webhook(w) => w
                .convert(objects, api_version)
                .await
                .map_err(ApiError::internal_error),
            CrdConverter::Broken(message) => Err(ApiError::internal_error(message.clone())),
        }
    }
}

/// A version's structural schema defaults objects read from storage.
impl ReadDefaults for VersionSchema {
    fn defaulted(&self, obj: &Value) -> Option<Value> {
        VersionSchema::defaulted(self, obj)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use apiserver::registry::converting::{Converter, ConvertingStorage};
    use futures::FutureExt;
    use serde_json::json;
    use storage::{GetOptions, ListOptions, Object, Storage};

    use super::*;

    fn storage(served: &str, inner: Arc<dyn Storage>) -> ConvertingStorage {
        ConvertingStorage::new(
            inner,
            Arc::new(Converter::new(CrdConverter::None)),
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
            let mut o = cur.map(|o| o.to_value()).unwrap_or_default();
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
