//! Storage plugins: DefaultStorageClass, StorageObjectInUseProtection and
//! PersistentVolumeClaimResize.

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::service_account::object_mut;
use crate::api::resource::{milli, parse_list};
use apiserver::admission::initializer::{text, Stores};

const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

fn is_claim(a: &Attributes) -> bool {
    a.is("", "persistentvolumeclaims") && a.subresource.is_empty()
}

/// DefaultStorageClass: a claim that names no class gets the default one.
pub struct DefaultStorageClass {
    pub stores: Stores,
}

impl Handler for DefaultStorageClass {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for DefaultStorageClass {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_claim(a) {
            return Ok(());
        }
        // An empty string asks for no class; only an absent one is defaulted.
        let named = a
            .object
            .as_ref()
            .and_then(|c| c.pointer("/spec/storageClassName"))
            .is_some_and(|n| !n.is_null());
        if named {
            return Ok(());
        }
        let classes = self
            .stores
            .list("storage.k8s.io", "storageclasses", None)
            .await?;
        // The newest default wins; ties go to the name first in order.
        let default = classes
            .iter()
            .filter(|c| {
                c.pointer("/metadata/annotations")
                    .and_then(|m| m.get(DEFAULT_CLASS_ANNOTATION))
                    .and_then(Value::as_str)
                    == Some("true")
            })
            .max_by(|x, y| {
                let t = |c: &Value| {
                    text(c, "/metadata/creationTimestamp")
                        .unwrap_or_default()
                        .to_owned()
                };
                let n = |c: &Value| text(c, "/metadata/name").unwrap_or_default().to_owned();
                t(x).cmp(&t(y)).then_with(|| n(y).cmp(&n(x)))
            })
            .and_then(|c| text(c, "/metadata/name"))
            .map(str::to_owned);
        if let (Some(name), Some(spec)) = (
            default,
            a.object.as_mut().and_then(|c| object_mut(c, "spec")),
        ) {
            spec.insert("storageClassName".into(), json!(name));
        }
        Ok(())
    }
}

/// StorageObjectInUseProtection: claims and volumes carry the finalizer that
/// keeps them while in use.
pub struct StorageObjectInUseProtection;

impl Handler for StorageObjectInUseProtection {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for StorageObjectInUseProtection {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let finalizer = if is_claim(a) {
            "kubernetes.io/pvc-protection"
        } else if a.is("", "persistentvolumes") && a.subresource.is_empty() {
            "kubernetes.io/pv-protection"
        } else {
            return Ok(());
        };
        let Some(meta) = a.object.as_mut().and_then(|o| object_mut(o, "metadata")) else {
            return Ok(());
        };
        if let Some(list) = meta
            .entry("finalizers")
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            if !list.iter().any(|f| f == finalizer) {
                list.push(json!(finalizer));
            }
        }
        Ok(())
    }
}

/// PersistentVolumeClaimResize: a claim may only grow when its class allows
/// volume expansion.
pub struct PersistentVolumeClaimResize {
    pub stores: Stores,
}

impl Handler for PersistentVolumeClaimResize {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Update
    }
}

fn storage_request(claim: &Value) -> i128 {
    parse_list(claim.pointer("/spec/resources/requests"))
        .get("storage")
        .map(milli)
        .unwrap_or(0)
}

#[async_trait]
impl ValidationInterface for PersistentVolumeClaimResize {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_claim(a) {
            return Ok(());
        }
        let (Some(new), Some(old)) = (a.object.as_ref(), a.old_object.as_ref()) else {
            return Ok(());
        };
        if storage_request(new) <= storage_request(old) {
            return Ok(());
        }
        let class = text(new, "/spec/storageClassName").unwrap_or_default();
        let expandable = if class.is_empty() {
            false
        } else {
            self.stores
                .get("storage.k8s.io", "storageclasses", None, class)
                .await?
                .is_some_and(|c| {
                    c.get("allowVolumeExpansion").and_then(Value::as_bool) == Some(true)
                })
        };
        if expandable {
            return Ok(());
        }
        Err(a.forbidden(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        ))
    }
}
