//! The server's Prometheus metrics, with upstream's names, labels and
//! buckets: the request series fed by the metrics filter
//! (`k8s.io/apiserver/pkg/endpoints/metrics`), the storage series the
//! storage layer feeds (`apiserver_storage_objects`,
//! `etcd_request_duration_seconds`), the watch event counter, and the
//! process series, rendered as Prometheus text (format 0.0.4) for
//! `/metrics`.

use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::request_info::RequestInfo;
use prometheus_client::encoding::{EncodeLabelKey, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub mod config_reload;
pub mod encryption;
mod process;

/// Upstream's latency buckets (seconds), shared by request and etcd latency.
const LATENCY_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Upstream's buckets of `apiserver_request_filter_duration_seconds`.
fn filter_latency_histogram() -> Histogram {
    Histogram::new([
        0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 5.0, 10.0, 15.0, 30.0,
    ])
}

/// 1 KB to 1 GB, as upstream's `apiserver_response_sizes`.
fn response_size_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1000.0, 10.0, 7))
}

type HistogramFamily<K> = Family<K, Histogram, fn() -> Histogram>;

/// Every metric the server exposes, behind one registry. Shared (in an
/// `Arc`) by every server of the chain through the completed config.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub(crate) requests: Family<CountLabels, Counter>,
    pub(crate) durations: HistogramFamily<DurationLabels>,
    pub(crate) response_sizes: HistogramFamily<RequestLabels>,
    pub(crate) longrunning: Family<RequestLabels, Gauge>,
    inflight: Family<[(&'static str, &'static str); 1], Gauge>,
    /// The two `request_kind` series of `inflight`, resolved once.
    inflight_read_only: Gauge,
    inflight_mutating: Gauge,
    storage_objects: Family<[(&'static str, String); 1], Gauge>,
    resource_objects: Family<[(&'static str, String); 2], Gauge>,
    watch_events: Family<[(&'static str, String); 3], Counter>,
    deprecated_apis: Family<[(&'static str, String); 5], Gauge>,
    etcd_durations: HistogramFamily<[(&'static str, String); 3]>,
    filter_durations: HistogramFamily<[(&'static str, &'static str); 1]>,
    /// Reloads of `--authorization-config`.
    pub authorization_config: config_reload::ConfigReloadMetrics,
    /// API Priority and Fairness series.
    pub(crate) apf: crate::flowcontrol::metrics::ApfMetrics,
    /// Series the other servers of the chain keep (the aggregator's, as
    /// upstream's components register into the legacy registry).
    extra: std::sync::Mutex<Vec<Registry>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let inflight: Family<_, Gauge> = Family::default();
        let kind = |k| inflight.get_or_create(&[("request_kind", k)]).clone();
        let (inflight_read_only, inflight_mutating) = (kind("readOnly"), kind("mutating"));
        let mut metrics = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            durations: Family::new_with_constructor(latency_histogram),
            response_sizes: Family::new_with_constructor(response_size_histogram),
            longrunning: Family::default(),
            inflight,
            inflight_read_only,
            inflight_mutating,
            storage_objects: Family::default(),
            resource_objects: Family::default(),
            watch_events: Family::default(),
            deprecated_apis: Family::default(),
            etcd_durations: Family::new_with_constructor(latency_histogram),
            filter_durations: Family::new_with_constructor(filter_latency_histogram),
            authorization_config: Default::default(),
            apf: Default::default(),
            extra: Default::default(),
        };
        metrics.register();
        metrics
    }

    fn register(&mut self) {
        let registry = &mut self.registry;
        // Counters are registered without `_total`, which the encoder
        // appends; help texts without their final period, which it adds.
        registry.register(
            "apiserver_request",
            "Requests served, by verb, dry run, group, version, resource, subresource, scope, component and HTTP status code",
            self.requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Time to serve a request in seconds, by verb, dry run, group, version, resource, subresource, scope and component",
            self.durations.clone(),
        );
        registry.register(
            "apiserver_response_sizes",
            "Size in bytes of responses to reads, by verb, group, version, resource, subresource, scope and component",
            self.response_sizes.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Long-running requests (watches, streaming subresources) open now, by verb, group, version, resource, subresource, scope and component",
            self.longrunning.clone(),
        );
        registry.register(
            "apiserver_current_inflight_requests",
            "Number of requests currently being served by this apiserver (long-running requests excluded), per request kind",
            self.inflight.clone(),
        );
        registry.register(
            "apiserver_storage_objects",
            "Objects stored per resource when last counted; -1 when counting failed",
            self.storage_objects.clone(),
        );
        registry.register(
            "apiserver_resource_objects",
            "Objects stored per resource when last counted; -1 when counting failed",
            self.resource_objects.clone(),
        );
        registry.register(
            "apiserver_watch_events",
            "Watch events sent to clients, by group, version and kind",
            self.watch_events.clone(),
        );
        registry.register(
            "apiserver_requested_deprecated_apis",
            "Deprecated APIs requested since the server started (1 per API), by group, version, resource, subresource and removed_release",
            self.deprecated_apis.clone(),
        );
        registry.register(
            "etcd_request_duration_seconds",
            "Storage request latency in seconds, by operation, group and resource",
            self.etcd_durations.clone(),
        );
        registry.register(
            "apiserver_request_filter_duration_seconds",
            "Request filter latency distribution in seconds, for each filter type",
            self.filter_durations.clone(),
        );
        self.apf.register(registry);
        crate::audit::metrics::global().register(registry);
        crate::admission::metrics::global().register(registry);
        self.authorization_config.register(
            registry,
            "apiserver_authorization_config_controller",
            "authorization",
        );
        encryption::encryption().register(registry);
        registry.register_collector(Box::new(process::ProcessCollector::new()));
    }

    /// The series of `apiserver_request_filter_duration_seconds` that
    /// records how long `filter` of the handler chain took (upstream's
    /// `RecordFilterLatency`).
    pub fn filter_latency(&self, filter: &'static str) -> Histogram {
        self.filter_durations
            .get_or_create(&[("filter", filter)])
            .clone()
    }

    /// The `apiserver_current_inflight_requests` gauge of one request kind.
    pub(crate) fn inflight(&self, mutating: bool) -> &Gauge {
        if mutating {
            &self.inflight_mutating
        } else {
            &self.inflight_read_only
        }
    }

    /// Records that a deprecated API was requested
    /// (`apiserver_requested_deprecated_apis`; no removal release is
    /// planned for the deprecated GA kinds, so `removed_release` is empty).
    pub fn requested_deprecated_api(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        subresource: &str,
    ) {
        let labels = [
            ("group", group.to_owned()),
            ("version", version.to_owned()),
            ("resource", resource.to_owned()),
            ("subresource", subresource.to_owned()),
            ("removed_release", String::new()),
        ];
        self.deprecated_apis.get_or_create(&labels).set(1);
    }

    /// Sets the number of stored objects of one resource
    /// (`apiserver_storage_objects`, labelled `resource.group` as upstream,
    /// and `apiserver_resource_objects`); -1 when counting failed.
    pub fn set_storage_objects(&self, group: &str, resource: &str, count: i64) {
        let group_resource = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        self.storage_objects
            .get_or_create(&[("resource", group_resource)])
            .set(count);
        self.resource_objects
            .get_or_create(&[
                ("group", group.to_owned()),
                ("resource", resource.to_owned()),
            ])
            .set(count);
    }

    /// The last count of one resource's stored objects, if it was counted
    /// (-1 when counting failed).
    pub fn storage_objects(&self, group: &str, resource: &str) -> Option<i64> {
        let group_resource = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let gauge = self.storage_objects.get(&[("resource", group_resource)])?;
        Some(gauge.get())
    }

    /// The `apiserver_watch_events_total` counter of one kind; a watch
    /// resolves it once and increments it per event sent.
    pub fn watch_events_counter(&self, group: &str, version: &str, kind: &str) -> Counter {
        self.watch_events
            .get_or_create(&[
                ("group", group.to_owned()),
                ("version", version.to_owned()),
                ("kind", kind.to_owned()),
            ])
            .clone()
    }

    /// Counts one watch event sent (see [`Self::watch_events_counter`] to
    /// avoid the label lookup per event).
    pub fn inc_watch_events(&self, group: &str, version: &str, kind: &str) {
        self.watch_events_counter(group, version, kind).inc();
    }

    /// The `etcd_request_duration_seconds` histogram of one storage
    /// operation (`get`, `list`, `create`, ...) on one resource, labelled
    /// operation, group, resource as upstream; stores resolve it once.
    pub fn etcd_request_histogram(
        &self,
        operation: &str,
        group: &str,
        resource: &str,
    ) -> Histogram {
        self.etcd_durations
            .get_or_create(&[
                ("operation", operation.to_owned()),
                ("group", group.to_owned()),
                ("resource", resource.to_owned()),
            ])
            .clone()
    }

    /// Records how long one storage request took.
    pub fn observe_etcd_request(
        &self,
        operation: &str,
        group: &str,
        resource: &str,
        elapsed: Duration,
    ) {
        self.etcd_request_histogram(operation, group, resource)
            .observe(elapsed.as_secs_f64());
    }

    /// Adds the series of `registry` to those `/metrics` serves.
    pub fn register_extra(&self, registry: Registry) {
        if let Ok(mut extra) = self.extra.lock() {
            extra.push(registry);
        }
    }

    /// Every series as Prometheus text (format 0.0.4). Reads /proc, so
    /// async callers should run it on a blocking thread.
    pub fn render(&self) -> Result<String, fmt::Error> {
        let mut open_metrics = String::with_capacity(16 * 1024);
        prometheus_client::encoding::text::encode_registry(&mut open_metrics, &self.registry)?;
        if let Ok(extra) = self.extra.lock() {
            for registry in extra.iter() {
                prometheus_client::encoding::text::encode_registry(&mut open_metrics, registry)?;
            }
        }
        Ok(to_text_format(&open_metrics))
    }
}

/// The content type of Prometheus text format 0.0.4.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Counters upstream names without the `_total` suffix.
pub(crate) const BARE_COUNTERS: [&str; 2] = [
    "apiserver_admission_webhook_rejection_count",
    "apiserver_admission_webhook_fail_open_count",
];

/// The encoder writes OpenMetrics, where a counter family is named without
/// its `_total` suffix; Prometheus text 0.0.4 names it with the suffix, so
/// HELP and TYPE lines of counters get it back, except for the
/// [`BARE_COUNTERS`], whose samples lose it instead.
fn to_text_format(open_metrics: &str) -> String {
    let lines: Vec<&str> = open_metrics.lines().collect();
    let mut out = String::with_capacity(open_metrics.len() + lines.len() * 2);
    for (i, line) in lines.iter().enumerate() {
        let header = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| Some((p, line.strip_prefix(p)?)));
        match header {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                // A family's TYPE line follows its HELP line; two families
                // (a gauge and a counter) may share a name.
                let type_line = if prefix == "# TYPE " {
                    *line
                } else {
                    lines.get(i + 1).copied().unwrap_or_default()
                };
                let counter = type_line == format!("# TYPE {name} counter");
                out.push_str(prefix);
                out.push_str(name);
                if counter && !BARE_COUNTERS.contains(&name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(tail);
            }
            None if *line == "# EOF" => continue,
            None => out.push_str(&bare_counter_sample(line).unwrap_or_else(|| (*line).to_owned())),
        }
        out.push('\n');
    }
    out
}

/// A sample of a [`BARE_COUNTERS`] family, without the encoder's `_total`.
fn bare_counter_sample(line: &str) -> Option<String> {
    BARE_COUNTERS.iter().find_map(|name| {
        let rest = line.strip_prefix(name)?.strip_prefix("_total")?;
        rest.starts_with(['{', ' '])
            .then(|| format!("{name}{rest}"))
    })
}

/// Upstream's reported verbs (`apiserver_request_total`'s `verb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Post,
    Put,
    Patch,
    Apply,
    Delete,
    Connect,
    Other,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Patch => "PATCH",
            Verb::Apply => "APPLY",
            Verb::Delete => "DELETE",
            Verb::Connect => "CONNECT",
            Verb::Other => "other",
        }
    }
}

/// What a request addresses (`scope` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One named object (or a create).
    Resource,
    Namespace,
    Cluster,
    /// Not a resource request.
    None,
}

impl Scope {
    pub fn of(info: &RequestInfo) -> Scope {
        if !info.name.is_empty() || info.verb == "create" {
            Scope::Resource
        } else if !info.namespace.is_empty() {
            Scope::Namespace
        } else if info.is_resource_request {
            Scope::Cluster
        } else {
            Scope::None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Resource => "resource",
            Scope::Namespace => "namespace",
            Scope::Cluster => "cluster",
            Scope::None => "",
        }
    }
}

/// The `dry_run` label: empty, `All`, or `invalid` as upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DryRun {
    No,
    All,
    Invalid,
}

impl DryRun {
    pub fn as_str(self) -> &'static str {
        match self {
            DryRun::No => "",
            DryRun::All => "All",
            DryRun::Invalid => "invalid",
        }
    }
}

/// The labels shared by the request series. Holds the request's
/// `RequestInfo`, so keying a series costs a reference count, not string
/// copies; only the labelled fields take part in equality.
#[derive(Clone, Debug)]
pub struct RequestLabels {
    pub verb: Verb,
    pub scope: Scope,
    pub info: Arc<RequestInfo>,
    /// Non-resource requests report their path as subresource (as upstream
    /// does for /healthz); off for requests that failed, whose paths could
    /// grow series without bound.
    pub with_path: bool,
}

impl RequestLabels {
    /// group, version, resource, subresource.
    fn target(&self) -> [&str; 4] {
        let i = &self.info;
        if i.is_resource_request {
            [&i.api_group, &i.api_version, &i.resource, &i.subresource]
        } else if self.with_path {
            ["", "", "", &i.path]
        } else {
            [""; 4]
        }
    }

    /// `apiserver` for API resources; empty elsewhere, as upstream's
    /// health endpoints.
    fn component(&self) -> &'static str {
        if self.info.is_resource_request {
            "apiserver"
        } else {
            ""
        }
    }

    fn encode_with(
        &self,
        mut encoder: LabelSetEncoder,
        dry_run: Option<DryRun>,
        code: Option<u16>,
    ) -> fmt::Result {
        put(&mut encoder, "verb", self.verb.as_str())?;
        if let Some(d) = dry_run {
            put(&mut encoder, "dry_run", d.as_str())?;
        }
        let [group, version, resource, subresource] = self.target();
        put(&mut encoder, "group", group)?;
        put(&mut encoder, "version", version)?;
        put(&mut encoder, "resource", resource)?;
        put(&mut encoder, "subresource", subresource)?;
        put(&mut encoder, "scope", self.scope.as_str())?;
        put(&mut encoder, "component", self.component())?;
        if let Some(code) = code {
            let mut label = encoder.encode_label();
            let mut key = label.encode_label_key()?;
            EncodeLabelKey::encode(&"code", &mut key)?;
            let mut value = key.encode_label_value()?;
            write!(value, "{code}")?;
            value.finish()?;
        }
        Ok(())
    }
}

impl PartialEq for RequestLabels {
    fn eq(&self, other: &Self) -> bool {
        self.verb == other.verb
            && self.scope == other.scope
            && self.info.is_resource_request == other.info.is_resource_request
            && self.target() == other.target()
    }
}

impl Eq for RequestLabels {}

impl Hash for RequestLabels {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.verb.hash(state);
        self.scope.hash(state);
        self.info.is_resource_request.hash(state);
        self.target().hash(state);
    }
}

impl EncodeLabelSet for RequestLabels {
    fn encode(&self, encoder: LabelSetEncoder) -> fmt::Result {
        self.encode_with(encoder, None, None)
    }
}

/// `apiserver_request_duration_seconds`' labels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DurationLabels {
    pub request: RequestLabels,
    pub dry_run: DryRun,
}

impl EncodeLabelSet for DurationLabels {
    fn encode(&self, encoder: LabelSetEncoder) -> fmt::Result {
        self.request.encode_with(encoder, Some(self.dry_run), None)
    }
}

/// `apiserver_request_total`'s labels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CountLabels {
    pub request: RequestLabels,
    pub dry_run: DryRun,
    pub code: u16,
}

impl EncodeLabelSet for CountLabels {
    fn encode(&self, encoder: LabelSetEncoder) -> fmt::Result {
        self.request
            .encode_with(encoder, Some(self.dry_run), Some(self.code))
    }
}

/// Writes one label, escaping the value as the text format requires (the
/// encoder writes values verbatim, and paths may hold any character).
fn put(encoder: &mut LabelSetEncoder, key: &str, value: &str) -> fmt::Result {
    let mut label = encoder.encode_label();
    let mut key_encoder = label.encode_label_key()?;
    EncodeLabelKey::encode(&key, &mut key_encoder)?;
    let mut value_encoder = key_encoder.encode_label_value()?;
    let mut rest = value;
    while let Some(at) = rest.find(['\\', '"', '\n']) {
        value_encoder.write_str(&rest[..at])?;
        value_encoder.write_str(match rest.as_bytes()[at] {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            _ => "\\n",
        })?;
        rest = &rest[at + 1..];
    }
    value_encoder.write_str(rest)?;
    value_encoder.finish()
}

#[cfg(test)]
mod tests;
