//! The `apiserver_flowcontrol_*` series (upstream's
//! `k8s.io/apiserver/pkg/util/flowcontrol/metrics`): requests and seats
//! by priority level and flow schema, each level's configured and current
//! seat limits, the seat demand statistics that drive borrowing, and the
//! work estimates given to requests.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of a per-level series.
pub type LevelLabels = [(&'static str, String); 1];
/// Labels of a per-level, per-schema series (upstream's order).
pub type FlowLabels = [(&'static str, String); 2];

type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily<K> = Family<K, Histogram, fn() -> Histogram>;

/// Upstream's buckets of `apiserver_flowcontrol_work_estimated_seats`.
const WORK_ESTIMATE_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0];

fn work_estimate_histogram() -> Histogram {
    Histogram::new(WORK_ESTIMATE_BUCKETS)
}

/// Upstream's buckets of waiting and execution times (seconds).
const DURATION_BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The labels of a level's series.
pub fn level_labels(level: &str) -> LevelLabels {
    [("priority_level", level.to_owned())]
}

/// The labels of a level's and schema's series.
pub fn flow_labels(level: &str, schema: &str) -> FlowLabels {
    [
        ("priority_level", level.to_owned()),
        ("flow_schema", schema.to_owned()),
    ]
}

/// Every priority-and-fairness series.
#[derive(Debug)]
pub struct ApfMetrics {
    pub dispatched: Family<FlowLabels, Counter>,
    pub rejected: Family<[(&'static str, String); 3], Counter>,
    pub executing_requests: Family<FlowLabels, Gauge>,
    pub executing_seats: Family<FlowLabels, Gauge>,
    pub waiting_requests: Family<FlowLabels, Gauge>,
    pub waiting_seats: Family<FlowLabels, Gauge>,
    pub work_estimated_seats: HistogramFamily<FlowLabels>,
    /// By level, schema and whether the request went on to run.
    pub wait_duration: HistogramFamily<[(&'static str, String); 3]>,
    /// By level, schema and type (`regular` or `watch`).
    pub execution_duration: HistogramFamily<[(&'static str, String); 3]>,
    pub nominal_seats: Family<LevelLabels, Gauge>,
    pub lower_limit_seats: Family<LevelLabels, Gauge>,
    pub upper_limit_seats: Family<LevelLabels, Gauge>,
    pub current_limit_seats: Family<LevelLabels, Gauge>,
    pub demand_high_watermark: Family<LevelLabels, FloatGauge>,
    pub demand_average: Family<LevelLabels, FloatGauge>,
    pub demand_stdev: Family<LevelLabels, FloatGauge>,
    pub demand_smoothed: Family<LevelLabels, FloatGauge>,
    pub target_seats: Family<LevelLabels, FloatGauge>,
    pub fair_frac: FloatGauge,
}

impl Default for ApfMetrics {
    fn default() -> Self {
        ApfMetrics {
            dispatched: Family::default(),
            rejected: Family::default(),
            executing_requests: Family::default(),
            executing_seats: Family::default(),
            waiting_requests: Family::default(),
            waiting_seats: Family::default(),
            work_estimated_seats: Family::new_with_constructor(work_estimate_histogram),
            wait_duration: Family::new_with_constructor(duration_histogram),
            execution_duration: Family::new_with_constructor(duration_histogram),
            nominal_seats: Family::default(),
            lower_limit_seats: Family::default(),
            upper_limit_seats: Family::default(),
            current_limit_seats: Family::default(),
            demand_high_watermark: Family::default(),
            demand_average: Family::default(),
            demand_stdev: Family::default(),
            demand_smoothed: Family::default(),
            target_seats: Family::default(),
            fair_frac: FloatGauge::default(),
        }
    }
}

impl ApfMetrics {
    /// Adds every series to `registry` under upstream's names (counters
    /// without `_total`, which the encoder appends).
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("apiserver_flowcontrol");
        r.register(
            "dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            self.dispatched.clone(),
        );
        r.register(
            "rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            self.rejected.clone(),
        );
        r.register(
            "current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
            self.executing_requests.clone(),
        );
        r.register(
            "current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
            self.executing_seats.clone(),
        );
        r.register(
            "current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            self.waiting_requests.clone(),
        );
        r.register(
            "current_inqueue_seats",
            "Number of seats currently pending in queues of the API Priority and Fairness subsystem",
            self.waiting_seats.clone(),
        );
        r.register(
            "work_estimated_seats",
            "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness",
            self.work_estimated_seats.clone(),
        );
        r.register(
            "request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            self.wait_duration.clone(),
        );
        r.register(
            "request_execution_seconds",
            "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem",
            self.execution_duration.clone(),
        );
        self.register_limits(r);
    }

    fn register_limits(&self, r: &mut Registry) {
        let level_gauges: [(&str, &str, &Family<LevelLabels, Gauge>); 4] = [
            (
                "nominal_limit_seats",
                "Nominal number of execution seats configured for each priority level",
                &self.nominal_seats,
            ),
            (
                "lower_limit_seats",
                "Configured lower bound on number of execution seats available to each priority level",
                &self.lower_limit_seats,
            ),
            (
                "upper_limit_seats",
                "Configured upper bound on number of execution seats available to each priority level",
                &self.upper_limit_seats,
            ),
            (
                "current_limit_seats",
                "current derived number of execution seats available to each priority level",
                &self.current_limit_seats,
            ),
        ];
        for (name, help, family) in level_gauges {
            r.register(name, help, family.clone());
        }
        let demand: [(&str, &str, &Family<LevelLabels, FloatGauge>); 5] = [
            (
                "demand_seats_high_watermark",
                "High watermark, over last adjustment period, of demand_seats",
                &self.demand_high_watermark,
            ),
            (
                "demand_seats_average",
                "Time-weighted average, over last adjustment period, of demand_seats",
                &self.demand_average,
            ),
            (
                "demand_seats_stdev",
                "Time-weighted standard deviation, over last adjustment period, of demand_seats",
                &self.demand_stdev,
            ),
            (
                "demand_seats_smoothed",
                "Smoothed seat demands",
                &self.demand_smoothed,
            ),
            (
                "target_seats",
                "Seat allocation targets",
                &self.target_seats,
            ),
        ];
        for (name, help, family) in demand {
            r.register(name, help, family.clone());
        }
        r.register(
            "seat_fair_frac",
            "Fair fraction of server's concurrency to allocate to each priority level that can use it",
            self.fair_frac.clone(),
        );
    }

    /// Publishes a level's configured limits.
    pub fn set_limits(&self, level: &str, nominal: usize, lower: usize, upper: usize) {
        let labels = level_labels(level);
        for (family, value) in [
            (&self.nominal_seats, nominal),
            (&self.lower_limit_seats, lower),
            (&self.upper_limit_seats, upper),
        ] {
            family
                .get_or_create(&labels)
                .set(i64::try_from(value).unwrap_or(i64::MAX));
        }
    }
}
