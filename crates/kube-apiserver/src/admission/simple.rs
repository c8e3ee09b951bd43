//! AlwaysAdmit and AlwaysDeny (upstream keeps them for testing).

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;

/// Lets everything through.
pub struct AlwaysAdmit;

impl Handler for AlwaysAdmit {
    fn handles(&self, _: Operation) -> bool {
        true
    }
}

#[async_trait]
impl MutationInterface for AlwaysAdmit {
    async fn admit(&self, _: &mut Attributes) -> Result<(), ApiError> {
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for AlwaysAdmit {
    async fn validate(&self, _: &Attributes) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Refuses every write.
pub struct AlwaysDeny;

impl Handler for AlwaysDeny {
    fn handles(&self, _: Operation) -> bool {
        true
    }
}

fn deny(a: &Attributes) -> ApiError {
    a.forbidden("admission control is denying all modifications")
}

#[async_trait]
impl MutationInterface for AlwaysDeny {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        Err(deny(a))
    }
}

#[async_trait]
impl ValidationInterface for AlwaysDeny {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        Err(deny(a))
    }
}
