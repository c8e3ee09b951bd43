//! Converters between the versions of one resource (upstream's
//! conversion through the scheme, `runtime.ObjectConvertor`, and the CRD
//! converter factory's interface in
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/conversion`): a
//! [`VersionConverter`] does the work (the CRD's `None` or webhook
//! strategy, an in-process [`ConvertFn`]); [`ServedVersions`] tells
//! admission which versions are one resource.

use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;
use storage::{Object, StorageError};

use crate::admission::{EquivalentVersions, GroupVersionKind, GroupVersionResource};

type Result<T> = std::result::Result<T, StorageError>;

/// How objects change version: what a [`Converter`] calls for the
/// objects not yet at the asked version.
#[async_trait]
pub trait VersionConverter: Send + Sync {
    /// `objects` at `api_version`; at least one is at another version.
    async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> std::result::Result<Vec<Value>, ApiError>;
}

/// An in-process conversion of one object (built-in kinds served at a
/// second version, e.g. `autoscaling/v1` ↔ `v2` HorizontalPodAutoscalers).
pub type ConvertFn = fn(Value, &str) -> std::result::Result<Value, String>;

#[async_trait]
impl VersionConverter for ConvertFn {
    async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> std::result::Result<Vec<Value>, ApiError> {
        objects
            .into_iter()
            .map(|o| self(o, api_version).map_err(ApiError::internal_error))
            .collect()
    }
}

/// Converts objects between the versions of one resource, leaving those
/// already at the asked version.
pub struct Converter(Box<dyn VersionConverter>);

impl Converter {
    pub fn new(converter: impl VersionConverter + 'static) -> Self {
        Converter(Box::new(converter))
    }

    /// Converts `objects` to `api_version`, leaving those already there.
    pub(super) async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> Result<Vec<Value>> {
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
        self.0.convert(objects, api_version).await
    }

    pub(super) async fn one(&self, obj: Value, api_version: &str) -> Result<Value> {
        let mut out = self.convert(vec![obj], api_version).await?;
        out.pop()
            .ok_or_else(|| StorageError::Internal("conversion returned no object".into()))
    }

    pub(super) async fn object(&self, obj: Object, api_version: &str) -> Result<Object> {
        if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
            return Ok(obj);
        }
        Ok(Arc::new(
            self.one(obj.to_value(), api_version).await?.into(),
        ))
    }
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
