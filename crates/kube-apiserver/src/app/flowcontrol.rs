//! API Priority and Fairness for kube-apiserver (upstream's flowcontrol
//! REST storage provider and server config): the config producer that
//! keeps the bootstrap FlowSchemas and PriorityLevelConfigurations in
//! storage, the config consumer that feeds them to the filter, the
//! periodic re-allocation of seats between levels, and the debug dumps.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::flowcontrol::{bootstrap, controller, debug, FlowControl, ADJUSTMENT_PERIOD};
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use apiserver::registry::DeleteOptions;
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::SharedInformer;
use client_go::CancellationToken;
use serde_json::Value;
use storage::Object;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// Upstream re-checks the bootstrap objects periodically, so that deleted
/// mandatory ones come back.
const ENSURE_INTERVAL: Duration = Duration::from_secs(60);
/// How soon a failed first attempt is retried, and for how long.
const RETRY_INTERVAL: Duration = Duration::from_secs(1);
const INITIAL_DEADLINE: Duration = Duration::from_secs(300);

/// Adds the producer and consumer hooks when priority and fairness is on
/// and its resources are served.
pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    control: Option<Arc<FlowControl>>,
) {
    let (Some(control), Some(schemas), Some(levels)) = (
        control,
        server.store(GROUP, "v1", "flowschemas"),
        server.store(GROUP, "v1", "prioritylevelconfigurations"),
    ) else {
        return;
    };
    let (Some(schema_informer), Some(level_informer)) = (
        informers.informer_for(GROUP, "flowschemas"),
        informers.informer_for(GROUP, "prioritylevelconfigurations"),
    ) else {
        return;
    };
    install_dumps(server, &control);
    let (s, l) = (schemas.clone(), levels.clone());
    let producer = Producer {
        schemas,
        levels,
        informers: [schema_informer.clone(), level_informer.clone()],
    };
    server.add_post_start_hook(
        "priority-and-fairness-config-consumer",
        Arc::new(move |ctx| {
            let informers = [schema_informer.clone(), level_informer.clone()];
            let (consumer, s, l) = (control.clone(), s.clone(), l.clone());
            let stop = ctx.stop.clone();
            tokio::spawn(controller::run(consumer, informers, s, l, ctx.stop));
            let borrowing = control.clone();
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(ADJUSTMENT_PERIOD);
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = ticks.tick() => borrowing.update_borrowing(),
                    }
                }
            });
            Box::pin(async { Ok(()) })
        }),
    );
    server.add_post_start_hook(
        "priority-and-fairness-config-producer",
        Arc::new(move |ctx| Box::pin(producer.clone().start(ctx.stop))),
    );
}

/// The config producer (upstream's `bootstrapConfigurationEnsurer`): the
/// bootstrap objects compared with the FlowSchema and priority-level
/// informers' caches, written to their stores.
#[derive(Clone)]
struct Producer {
    schemas: Arc<Store>,
    levels: Arc<Store>,
    informers: [Arc<SharedInformer>; 2],
}

impl Producer {
    /// Upstream's hook: once the caches sync, ensures the configuration
    /// every second until it succeeds (for at most five minutes), then
    /// again every minute until `stop`.
    async fn start(self, stop: CancellationToken) -> Result<(), String> {
        let first = async {
            for informer in &self.informers {
                informer.wait_for_sync().await;
            }
            while let Err(e) = self.ensure_all().await {
                tracing::error!(error = %e.message, "APF bootstrap ensurer ran into error, will retry later");
                tokio::time::sleep(RETRY_INTERVAL).await;
            }
        };
        tokio::select! {
            () = first => {}
            () = tokio::time::sleep(INITIAL_DEADLINE) => {
                return Err("unable to initialize APF bootstrap configuration".into());
            }
            () = stop.cancelled() => return Ok(()),
        }
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(ENSURE_INTERVAL) => {}
                    () = stop.cancelled() => return,
                }
                if let Err(e) = self.ensure_all().await {
                    tracing::error!(error = %e.message, "APF bootstrap ensurer ran into error, will retry later");
                }
            }
        });
        Ok(())
    }

    async fn ensure_all(&self) -> Result<(), ApiError> {
        let (mandatory, suggested) = (bootstrap::mandatory(), bootstrap::suggested());
        let [schemas, levels] = self.informers.each_ref().map(|i| i.lister().list());
        let (m, s) = (&mandatory.priority_levels, &suggested.priority_levels);
        ensure(&self.levels, &levels, m, s).await?;
        let (m, s) = (&mandatory.flow_schemas, &suggested.flow_schemas);
        ensure(&self.schemas, &schemas, m, s).await
    }
}

/// The three debug dumps: priority levels, queues and requests (with
/// `?includeRequestDetails=` anything, who made them and what they ask).
fn install_dumps(server: &mut GenericApiServer, control: &Arc<FlowControl>) {
    const PREFIX: &str = "/debug/api_priority_and_fairness/";
    let dumped = control.clone();
    server.handle_path(
        &format!("{PREFIX}dump_priority_levels"),
        Arc::new(move |_| {
            let text = debug::dump_priority_levels(&dumped);
            Box::pin(async move { plain_text(text) })
        }),
    );
    let dumped = control.clone();
    server.handle_path(
        &format!("{PREFIX}dump_queues"),
        Arc::new(move |_| {
            let text = debug::dump_queues(&dumped);
            Box::pin(async move { plain_text(text) })
        }),
    );
    let dumped = control.clone();
    server.handle_path(
        &format!("{PREFIX}dump_requests"),
        Arc::new(move |req| {
            let details = wants_details(req.uri().query().unwrap_or(""));
            let text = debug::dump_requests(&dumped, details);
            Box::pin(async move { plain_text(text) })
        }),
    );
}

/// Whether the first `includeRequestDetails` of a query is non-empty.
fn wants_details(query: &str) -> bool {
    query
        .split('&')
        .find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == "includeRequestDetails").then_some(!value.is_empty())
        })
        .unwrap_or(false)
}

/// A debug dump as upstream writes it: plain text.
fn plain_text(text: String) -> http::Response<axum::body::Body> {
    let mut response = http::Response::new(axum::body::Body::from(text));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Creates missing bootstrap objects, restores the spec of mandatory ones,
/// updates suggested ones that are auto-updated, and deletes auto-updated
/// objects that are no longer part of the bootstrap configuration.
async fn ensure(
    store: &Store,
    existing: &[Object],
    mandatory: &[Value],
    suggested: &[Value],
) -> Result<(), ApiError> {
    let find = |name: &str| existing.iter().find(|o| name_of(o) == Some(name));
    // Concurrently: the store commits concurrent writes together.
    let writes = mandatory
        .iter()
        .map(|o| (o, true))
        .chain(suggested.iter().map(|o| (o, false)))
        .filter_map(|(wanted, always)| {
            let name = name_of(wanted)?;
            Some(ensure_one(store, find(name), name, wanted, always))
        });
    futures::future::try_join_all(writes).await?;
    let known: HashSet<&str> = mandatory
        .iter()
        .chain(suggested)
        .filter_map(name_of)
        .collect();
    for obsolete in existing
        .iter()
        .filter(|o| annotation_of(o) == Some("true"))
        .filter_map(|o| name_of(o))
        .filter(|name| !known.contains(name))
    {
        let deleted = store
            .delete(None, obsolete, &DeleteOptions::default())
            .await;
        deleted.map(drop).or_else(|e| ignore(e, 404))?;
    }
    Ok(())
}

/// Creates `wanted` when missing, else restores its spec or annotation as
/// [`ensure`] says.
async fn ensure_one(
    store: &Store,
    current: Option<&Object>,
    name: &str,
    wanted: &Value,
    always: bool,
) -> Result<(), ApiError> {
    let Some(current) = current else {
        let created = store.create(wanted.clone(), &WriteOptions::default()).await;
        // Another server of the cluster may have been first.
        return created.map(drop).or_else(|e| ignore(e, 409));
    };
    let auto = always || auto_update(current);
    let stale_spec = auto && current.get("spec") != wanted.get("spec");
    let annotation = if auto { "true" } else { "false" };
    if stale_spec || annotation_of(current) != Some(annotation) {
        let spec = stale_spec.then(|| wanted["spec"].clone());
        let revised = revise(spec, annotation);
        store
            .update(None, name, Target::Main, revised, &WriteOptions::default())
            .await?;
    }
    Ok(())
}

/// Treats an error of `code` as success.
fn ignore(e: ApiError, code: u16) -> Result<(), ApiError> {
    if e.code == code {
        Ok(())
    } else {
        Err(e)
    }
}

fn name_of(o: &Value) -> Option<&str> {
    o.pointer("/metadata/name").and_then(Value::as_str)
}

fn annotation_of(o: &Value) -> Option<&str> {
    o.pointer("/metadata/annotations")
        .and_then(|a| a.get(bootstrap::AUTO_UPDATE_ANNOTATION))
        .and_then(Value::as_str)
}

/// Upstream's rule: the annotation decides when it is a boolean; without
/// one, an object whose spec was never changed (generation 1) is updated.
fn auto_update(o: &Value) -> bool {
    match annotation_of(o).map(str::to_ascii_lowercase).as_deref() {
        Some("true" | "t" | "1") => true,
        Some("false" | "f" | "0") => false,
        _ => o.pointer("/metadata/generation").and_then(Value::as_i64) == Some(1),
    }
}

fn revise(spec: Option<Value>, annotation: &'static str) -> Mutate {
    Arc::new(move |current: Option<&Value>| {
        let mut o = current
            .cloned()
            .ok_or_else(|| ApiError::internal_error("the object is gone"))?;
        if let Some(spec) = &spec {
            o["spec"] = spec.clone();
        }
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(map) = annotations.as_object_mut() {
                map.insert(bootstrap::AUTO_UPDATE_ANNOTATION.into(), annotation.into());
            }
        }
        Ok(o)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn request_details_need_a_value() {
        assert!(wants_details("includeRequestDetails=1"));
        assert!(wants_details("a=b&includeRequestDetails=true"));
        assert!(!wants_details("includeRequestDetails="));
        assert!(!wants_details("includeRequestDetails"));
        assert!(!wants_details(""));
    }

    #[test]
    fn auto_update_follows_the_annotation_then_the_generation() {
        let with = |a: Option<&str>, generation: i64| {
            let mut o = json!({"metadata": {"name": "x", "generation": generation}});
            if let Some(a) = a {
                o["metadata"]["annotations"] = json!({bootstrap::AUTO_UPDATE_ANNOTATION: a});
            }
            o
        };
        assert!(auto_update(&with(Some("true"), 5)));
        assert!(!auto_update(&with(Some("false"), 1)));
        assert!(auto_update(&with(None, 1)));
        assert!(!auto_update(&with(None, 2)));
        assert!(!auto_update(&with(Some("maybe"), 3)));
    }
}
