//! Admission as the registry store runs it for one write (upstream's
//! `rest.AdmissionToValidateObjectFunc` and the handlers' admit calls in
//! `k8s.io/apiserver/pkg/registry/rest`): the chain plus the request being
//! served. Writes the server makes on its own (outside of
//! any request) have none and are not admitted.

use std::sync::Arc;

use apimachinery::status::ApiError;
use serde_json::Value;

use super::resource::ResourceInfo;
use crate::admission::{
    Attributes, Chain, Equivalents, GroupVersionKind, Operation, RequestContext,
};
use crate::authentication::user::UserInfo;
use storage::Object;

/// How a subresource with a kind of its own (autoscaling/v1 Scale) shows
/// the stored object to admission, as upstream's scale storage does:
/// plugins see and change the view, which is written back to the object.
pub trait AdmissionView: Send + Sync {
    /// The subresource admission names (`scale`).
    fn subresource(&self) -> &'static str;
    /// The kind of the view.
    fn kind(&self) -> GroupVersionKind;
    /// The view of an object.
    fn view(&self, object: &Value) -> Value;
    /// `object` with what admission changed in its view.
    fn write_back(&self, object: Value, view: &Value) -> Result<Value, ApiError>;
}

#[derive(Clone)]
pub struct WriteAdmission {
    chain: Arc<Chain>,
    request: Arc<RequestContext>,
    subresource: &'static str,
    dry_run: bool,
    view: Option<Arc<dyn AdmissionView>>,
    equivalents: Option<Equivalents>,
}

impl WriteAdmission {
    /// The admission of a write made while serving a request, when the store
    /// has a chain.
    pub fn for_request(
        chain: Option<&Arc<Chain>>,
        subresource: &'static str,
        dry_run: bool,
    ) -> Option<Self> {
        Some(WriteAdmission {
            chain: chain?.clone(),
            request: RequestContext::current()?,
            subresource,
            dry_run,
            view: None,
            equivalents: None,
        })
    }

    /// Admits the write with the resource's other served versions, for
    /// rules matching equivalent resources.
    pub fn with_equivalents(self, equivalents: Option<&Equivalents>) -> Self {
        WriteAdmission {
            equivalents: equivalents.cloned(),
            ..self
        }
    }

    /// Admits the write as a write of `view`'s subresource and kind, the
    /// objects shown as their views.
    pub fn viewed_as(self, view: Arc<dyn AdmissionView>) -> Self {
        WriteAdmission {
            subresource: view.subresource(),
            view: Some(view),
            ..self
        }
    }

    fn attributes(
        &self,
        info: &ResourceInfo,
        operation: Operation,
        object: Option<Value>,
        old: Option<Object>,
    ) -> Attributes {
        let mut attrs = Attributes::new(
            info,
            operation,
            object,
            old,
            self.subresource,
            None,
            "",
            self.dry_run,
            self.request.clone(),
        );
        match &self.view {
            Some(view) => attrs.kind = view.kind(),
            None => attrs.equivalents.clone_from(&self.equivalents),
        }
        attrs
    }

    /// Runs the mutating plugins on a new or updated object.
    pub async fn admit(
        &self,
        info: &ResourceInfo,
        operation: Operation,
        object: Value,
        old: Option<Object>,
    ) -> Result<Value, ApiError> {
        let Some(view) = &self.view else {
            let mut attrs = self.attributes(info, operation, Some(object), old);
            self.chain.admit(&mut attrs).await?;
            return Ok(attrs.object.unwrap_or_default());
        };
        let (shown, old) = views(view.as_ref(), &object, old);
        let mut attrs = self.attributes(info, operation, Some(shown), old);
        self.chain.admit(&mut attrs).await?;
        match &attrs.object {
            Some(admitted) => view.write_back(object, admitted),
            None => Ok(object),
        }
    }

    /// Runs the validating plugins on a validated object, handing it back.
    pub async fn validate(
        &self,
        info: &ResourceInfo,
        operation: Operation,
        object: Value,
        old: Option<Object>,
    ) -> Result<Value, ApiError> {
        let Some(view) = &self.view else {
            let attrs = self.attributes(info, operation, Some(object), old);
            self.chain.validate(&attrs).await?;
            return Ok(attrs.object.unwrap_or_default());
        };
        let (shown, old) = views(view.as_ref(), &object, old);
        let attrs = self.attributes(info, operation, Some(shown), old);
        self.chain.validate(&attrs).await?;
        Ok(object)
    }

    /// Admits the deletion of `current`: mutating, then validating plugins.
    pub async fn delete(&self, info: &ResourceInfo, current: Object) -> Result<(), ApiError> {
        let mut attrs = self.attributes(info, Operation::Delete, None, Some(current));
        self.chain.admit(&mut attrs).await?;
        self.chain.validate(&attrs).await
    }
}

/// The new and old objects as admission sees them through `view`.
fn views(view: &dyn AdmissionView, object: &Value, old: Option<Object>) -> (Value, Option<Object>) {
    (
        view.view(object),
        old.map(|o| Arc::new(view.view(&o).into())),
    )
}

/// What a create through a computed subresource (a binding, an eviction,
/// a token request) is admitted as: the parent resource's object, the kind
/// posted, and who posted it.
pub struct SubresourceCreate<'a> {
    /// The parent resource (`pods`, `serviceaccounts`).
    pub parent: &'a ResourceInfo,
    pub subresource: &'static str,
    /// The kind posted (`Binding`, `policy/v1 Eviction`, `TokenRequest`).
    pub kind: GroupVersionKind,
    pub namespace: &'a str,
    /// The parent object's name.
    pub name: &'a str,
    pub user: Arc<UserInfo>,
}

/// Admits such a create: the mutating, then the validating plugins of
/// `chain` on `object`, which nothing stores as such. Returns the admitted
/// object.
pub async fn admit_create(
    chain: Option<&Arc<Chain>>,
    create: SubresourceCreate<'_>,
    object: Value,
) -> Result<Value, ApiError> {
    let Some(chain) = chain else {
        return Ok(object);
    };
    let mut attrs = Attributes::new(
        create.parent,
        Operation::Create,
        Some(object),
        None,
        create.subresource,
        Some(create.namespace),
        create.name,
        false,
        // The request's own context, when it has one, so that plugins'
        // warnings and audit annotations reach its response and events.
        RequestContext::current().unwrap_or_else(|| RequestContext::new(create.user)),
    );
    attrs.kind = create.kind;
    let context = attrs.request.clone();
    context
        .scope(async {
            chain.admit(&mut attrs).await?;
            chain.validate(&attrs).await?;
            Ok(attrs.object.take().unwrap_or_default())
        })
        .await
}
