//! The admission chain (upstream's `chainAdmissionHandler`): the enabled
//! plugins in upstream's recommended order; admission runs every mutating
//! one in that order, validation every validating one.

use std::sync::Arc;

use apimachinery::status::ApiError;

use super::{Attributes, MutationInterface, Operation, ValidationInterface};

/// One enabled plugin: its mutating side, validating side, or both.
#[derive(Clone)]
pub struct Plugin {
    pub name: &'static str,
    mutating: Option<Arc<dyn MutationInterface>>,
    validating: Option<Arc<dyn ValidationInterface>>,
}

impl Plugin {
    pub fn mutating(name: &'static str, plugin: Arc<dyn MutationInterface>) -> Self {
        Plugin {
            name,
            mutating: Some(plugin),
            validating: None,
        }
    }

    pub fn validating(name: &'static str, plugin: Arc<dyn ValidationInterface>) -> Self {
        Plugin {
            name,
            mutating: None,
            validating: Some(plugin),
        }
    }

    /// A plugin that both mutates and validates.
    pub fn both<P>(name: &'static str, plugin: Arc<P>) -> Self
    where
        P: MutationInterface + ValidationInterface + 'static,
    {
        Plugin {
            name,
            mutating: Some(plugin.clone()),
            validating: Some(plugin),
        }
    }
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("mutating", &self.mutating.is_some())
            .field("validating", &self.validating.is_some())
            .finish()
    }
}

#[derive(Debug, Default, Clone)]
pub struct Chain {
    plugins: Vec<Plugin>,
}

impl Chain {
    pub fn new(plugins: Vec<Plugin>) -> Self {
        Chain { plugins }
    }

    /// The names of the plugins, in the order they run.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name).collect()
    }

    /// Whether any plugin looks at this operation.
    pub fn handles(&self, operation: Operation) -> bool {
        self.plugins.iter().any(|p| {
            p.mutating.as_ref().is_some_and(|m| m.handles(operation))
                || p.validating.as_ref().is_some_and(|v| v.handles(operation))
        })
    }

    /// Runs the mutating plugins in order; the first refusal ends it.
    pub async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            if let Some(m) = plugin
                .mutating
                .as_ref()
                .filter(|m| m.handles(attrs.operation))
            {
                m.admit(attrs).await?;
            }
        }
        Ok(())
    }

    /// Runs the validating plugins in order; the first refusal ends it.
    pub async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            if let Some(v) = plugin
                .validating
                .as_ref()
                .filter(|v| v.handles(attrs.operation))
            {
                v.validate(attrs).await?;
            }
        }
        Ok(())
    }
}
