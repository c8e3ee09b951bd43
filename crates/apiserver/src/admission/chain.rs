//! The admission chain (upstream's `chainAdmissionHandler`): the enabled
//! plugins in upstream's recommended order; admission runs every mutating
//! one in that order, validation every validating one.

use std::sync::Arc;
use std::time::Instant;

use apimachinery::status::ApiError;

use super::metrics::{self, PluginSeries, Step};
use super::{Attributes, MutationInterface, Operation, ValidationInterface};

/// One enabled plugin: its mutating side, validating side, or both.
#[derive(Clone)]
pub struct Plugin {
    pub name: &'static str,
    series: Arc<PluginSeries>,
    mutating: Option<Arc<dyn MutationInterface>>,
    validating: Option<Arc<dyn ValidationInterface>>,
}

impl Plugin {
    pub fn mutating(name: &'static str, plugin: Arc<dyn MutationInterface>) -> Self {
        Plugin {
            name,
            series: Arc::new(PluginSeries::new(name)),
            mutating: Some(plugin),
            validating: None,
        }
    }

    pub fn validating(name: &'static str, plugin: Arc<dyn ValidationInterface>) -> Self {
        Plugin {
            name,
            series: Arc::new(PluginSeries::new(name)),
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
            series: Arc::new(PluginSeries::new(name)),
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
    /// When a webhook or policy changed the object, they all run once more
    /// (upstream's reinvocation handler): in-tree plugins are idempotent,
    /// webhooks and policies decide which of their hooks to call again.
    pub async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let start = Instant::now();
        let mut result = self.admit_once(attrs).await;
        if result.is_ok() && attrs.reinvocation.should_reinvoke() {
            attrs.reinvocation.set_is_reinvoke();
            result = self.admit_once(attrs).await;
        }
        let rejected = result.is_err();
        metrics::global().observe_step(start.elapsed(), rejected, Step::Admit, attrs.operation);
        result
    }

    async fn admit_once(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            if let Some(m) = plugin
                .mutating
                .as_ref()
                .filter(|m| m.handles(attrs.operation))
            {
                let start = Instant::now();
                let result = m.admit(attrs).await;
                observe_plugin(&plugin.series, start, &result, Step::Admit, attrs.operation);
                result?;
            }
        }
        Ok(())
    }

    /// Runs the validating plugins in order; the first refusal ends it.
    pub async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let start = Instant::now();
        let result = self.validate_all(attrs).await;
        let rejected = result.is_err();
        metrics::global().observe_step(start.elapsed(), rejected, Step::Validate, attrs.operation);
        result
    }

    async fn validate_all(&self, attrs: &Attributes) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            if let Some(v) = plugin
                .validating
                .as_ref()
                .filter(|v| v.handles(attrs.operation))
            {
                let start = Instant::now();
                let result = v.validate(attrs).await;
                observe_plugin(
                    &plugin.series,
                    start,
                    &result,
                    Step::Validate,
                    attrs.operation,
                );
                result?;
            }
        }
        Ok(())
    }
}

/// `apiserver_admission_controller_admission_duration_seconds` of one call.
fn observe_plugin(
    series: &PluginSeries,
    start: Instant,
    result: &Result<(), ApiError>,
    step: Step,
    op: Operation,
) {
    let rejected = result.is_err();
    series.observe(start.elapsed(), rejected, step, op);
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::admission::{Handler, RequestContext};
    use crate::authentication::user::UserInfo;
    use crate::registry::resource::ResourceInfo;

    /// Records each call; refuses validation when told to.
    struct Recorder {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        refuse: bool,
    }

    impl Handler for Recorder {
        fn handles(&self, op: Operation) -> bool {
            op != Operation::Delete
        }
    }

    #[async_trait]
    impl MutationInterface for Recorder {
        async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
            self.log
                .lock()
                .map(|mut l| l.push(format!("admit {}", self.name)))
                .ok();
            if let Some(obj) = attrs.object.as_mut() {
                obj["metadata"]["labels"][self.name] = json!("set");
            }
            Ok(())
        }
    }

    #[async_trait]
    impl ValidationInterface for Recorder {
        async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
            self.log
                .lock()
                .map(|mut l| l.push(format!("validate {}", self.name)))
                .ok();
            if self.refuse {
                return Err(attrs.forbidden("refused"));
            }
            Ok(())
        }
    }

    fn attributes(op: Operation) -> Attributes {
        let info = ResourceInfo::configmaps();
        let obj = json!({"metadata": {"name": "c", "namespace": "ns", "labels": {}}});
        let request = RequestContext::new(Arc::new(UserInfo::anonymous()));
        Attributes::new(&info, op, Some(obj), None, "", None, "", false, request)
    }

    fn chain(log: &Arc<Mutex<Vec<String>>>, refuse_first: bool) -> Chain {
        let plugin = |name, refuse| {
            Arc::new(Recorder {
                name,
                log: log.clone(),
                refuse,
            })
        };
        Chain::new(vec![
            Plugin::both("first", plugin("first", refuse_first)),
            Plugin::mutating("second", plugin("second", false)),
            Plugin::validating("third", plugin("third", false)),
        ])
    }

    #[tokio::test]
    async fn mutating_plugins_run_in_order_then_validating_ones() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = chain(&log, false);
        let mut attrs = attributes(Operation::Create);
        assert_eq!(attrs.name, "c");
        assert_eq!(attrs.namespace, "ns");
        assert!(chain.admit(&mut attrs).await.is_ok());
        assert!(chain.validate(&attrs).await.is_ok());
        let labels = attrs
            .object
            .as_ref()
            .map(|o| o["metadata"]["labels"].clone());
        assert_eq!(labels, Some(json!({"first": "set", "second": "set"})));
        let log = log.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            log,
            [
                "admit first",
                "admit second",
                "validate first",
                "validate third"
            ]
        );
    }

    #[tokio::test]
    async fn the_first_refusal_ends_validation_with_a_forbidden_status() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = chain(&log, true);
        let attrs = attributes(Operation::Update);
        let err = chain.validate(&attrs).await.err();
        assert_eq!(err.as_ref().map(|e| e.code), Some(403));
        assert_eq!(
            err.map(|e| e.message),
            Some("configmaps \"c\" is forbidden: refused".to_string())
        );
        assert_eq!(log.lock().map(|l| l.len()).unwrap_or_default(), 1);
    }

    #[tokio::test]
    async fn operations_no_plugin_handles_are_not_run() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = chain(&log, true);
        assert!(!chain.handles(Operation::Delete));
        assert!(chain.validate(&attributes(Operation::Delete)).await.is_ok());
        assert_eq!(chain.names(), ["first", "second", "third"]);
    }

    /// Asks for a second pass in the first one, as a webhook that changed
    /// the object does.
    struct Changer;

    impl Handler for Changer {
        fn handles(&self, _: Operation) -> bool {
            true
        }
    }

    #[async_trait]
    impl MutationInterface for Changer {
        async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
            if !attrs.reinvocation.is_reinvoke() {
                attrs.reinvocation.set_should_reinvoke();
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_requested_reinvocation_runs_every_mutating_plugin_once_more() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut plugins = chain(&log, false).plugins;
        plugins.push(Plugin::mutating("changer", Arc::new(Changer)));
        let twice = Chain::new(plugins);
        let mut attrs = attributes(Operation::Create);
        assert!(twice.admit(&mut attrs).await.is_ok());
        assert!(attrs.reinvocation.is_reinvoke());
        let log = log.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            log,
            ["admit first", "admit second", "admit first", "admit second"]
        );
        // Without a request for it, one pass.
        let mut attrs = attributes(Operation::Create);
        let quiet = Arc::new(Mutex::new(Vec::new()));
        assert!(chain(&quiet, false).admit(&mut attrs).await.is_ok());
        assert!(!attrs.reinvocation.is_reinvoke());
        assert_eq!(quiet.lock().map(|l| l.len()).unwrap_or_default(), 2);
    }
}
