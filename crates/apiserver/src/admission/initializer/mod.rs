//! How plugins read other resources (upstream's informers and listers, which
//! `k8s.io/apiserver/pkg/admission/initializer` hands to the plugins that
//! want them): the server's stores, by group and resource, read at the
//! latest state.

use std::collections::HashMap;
use std::sync::Arc;

use crate::registry::store::Store;
use crate::registry::ResourceInfo;
use apimachinery::status::ApiError;
use serde_json::Value;
use storage::{GetOptions, ListOptions, Object, ReadVersion};

#[derive(Clone, Default)]
pub struct Stores {
    by_resource: HashMap<(String, String), Arc<Store>>,
}

impl Stores {
    pub fn new(stores: impl IntoIterator<Item = Arc<Store>>) -> Self {
        let by_resource = stores
            .into_iter()
            .map(|s| ((s.info.group.clone(), s.info.resource.clone()), s))
            .collect();
        Stores { by_resource }
    }

    pub fn store(&self, group: &str, resource: &str) -> Option<&Arc<Store>> {
        self.by_resource
            .get(&(group.to_owned(), resource.to_owned()))
    }

    /// The resources of a kind in a group (upstream's REST mappings).
    pub fn resources_of_kind<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a ResourceInfo> + 'a {
        self.by_resource
            .values()
            .map(|s| &s.info)
            .filter(move |i| i.group == group && i.kind == kind)
    }

    /// One object, or None when it (or its resource) does not exist.
    pub async fn get(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>, ApiError> {
        let Some(store) = self.store(group, resource) else {
            return Ok(None);
        };
        match store.get(namespace, name, GetOptions::default()).await {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every object of a resource (in one namespace when given), from the
    /// watch cache as upstream's plugins read their informers' listers: a
    /// consistent list would wait for the cache to catch up with writes of
    /// other resources on every admitted request.
    pub async fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Object>, ApiError> {
        let Some(store) = self.store(group, resource) else {
            return Ok(Vec::new());
        };
        let opts = ListOptions {
            version: ReadVersion::Any,
            ..ListOptions::default()
        };
        Ok(store.list(namespace, opts).await?.items)
    }
}

/// A string at a JSON pointer.
pub fn text<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}
