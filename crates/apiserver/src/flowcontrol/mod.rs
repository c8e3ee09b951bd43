//! API Priority and Fairness (upstream's `k8s.io/apiserver/pkg/util/flowcontrol`):
//! every request is classified by the first matching FlowSchema (by
//! matchingPrecedence, then name) into a priority level, which grants it as
//! many of its seats as its work estimate asks, queues it, or rejects it.
//! A level's nominal seats are its share of the server's concurrency limit
//! (`--max-requests-inflight` plus `--max-mutating-requests-inflight`), in
//! proportion to its nominalConcurrencyShares; every ten seconds the
//! levels' current limits are re-derived from their seat demand, so that
//! busy levels borrow what idle ones may lend (lendablePercent, within
//! borrowingLimitPercent). The exempt level is never limited.
//!
//! The configuration comes from the FlowSchema and
//! PriorityLevelConfiguration objects (see [`controller`]); until they are
//! read, and whenever the mandatory ones are missing, the built-in mandatory
//! objects of [`bootstrap`] stand in, as upstream.

pub mod bootstrap;
mod borrowing;
pub mod controller;
pub mod debug;
mod dropped;
pub mod metrics;
mod queueset;
mod rules;
mod shuffle;
mod width;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use apimachinery::request_info::RequestInfo;
use k8s_openapi::api::flowcontrol::v1::{
    FlowSchema, LimitResponse, PolicyRulesWithSubjects, PriorityLevelConfiguration,
};

pub use borrowing::ADJUSTMENT_PERIOD;
use borrowing::{LevelSeats, SeatDemandStats};
use dropped::DroppedRequests;
pub use queueset::{
    Digest, Distinguisher, QueueDump, Rejection, RequestDump, RequestMeta, Seat, SetDump, Totals,
};
use queueset::{Overflow, QueueSet};
use width::WatchTracker;
pub use width::{ObjectCount, SeatSeconds, WatchRegistration, WorkEstimate};

use crate::authentication::user::UserInfo;
use crate::flowcontrol::metrics::FlowSeries;
use crate::metrics::Metrics;

/// Upstream caps the time a request may wait in a queue at one minute.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// The API defaults of a queuing configuration.
const DEFAULT_QUEUES: i32 = 64;
const DEFAULT_HAND_SIZE: i32 = 8;
const DEFAULT_QUEUE_LENGTH_LIMIT: i32 = 50;
const DEFAULT_SHARES: i32 = 30;

/// The flow control of a server: its current configuration and the state
/// of every priority level.
pub struct FlowControl {
    server_concurrency_limit: usize,
    wait_limit: Duration,
    config: RwLock<Arc<Config>>,
    /// Level state by name, kept across reconfigurations so that running
    /// and waiting requests and seat demand carry over.
    states: Mutex<States>,
    metrics: Arc<Metrics>,
    watches: Arc<WatchTracker>,
    dropped: DroppedRequests,
}

#[derive(Default)]
struct States {
    levels: HashMap<String, LevelState>,
    /// The nominal seats of all levels (slightly above the server's limit,
    /// since each level's share is rounded up).
    nominal_sum: usize,
}

struct LevelState {
    queues: Arc<QueueSet>,
    seats: LevelSeats,
}

struct Config {
    schemas: Vec<Schema>,
    levels: HashMap<String, Level>,
}

struct Schema {
    name: Arc<str>,
    uid: String,
    level: String,
    distinguisher: Distinguisher,
    rules: Vec<PolicyRulesWithSubjects>,
    /// The series its requests feed, at `level`.
    series: Arc<FlowSeries>,
}

struct Level {
    name: Arc<str>,
    uid: String,
    /// The most seats one request may take (0: no level limit).
    max_seats: u64,
    queues: Arc<QueueSet>,
}

/// Where a request goes: the schema and level it matched and its flow.
pub struct Classification {
    pub flow_schema: Arc<str>,
    pub flow_schema_uid: String,
    pub priority_level: Arc<str>,
    pub priority_level_uid: String,
    /// The series of the schema's requests.
    pub series: Arc<FlowSeries>,
    max_seats: u64,
    flow_hash: u64,
    meta: Arc<RequestMeta>,
    queues: Arc<QueueSet>,
}

impl Classification {
    /// The request's work: `query` is its URL query.
    pub fn estimate(&self, control: &FlowControl, query: &str) -> WorkEstimate {
        let info = &self.meta.info;
        width::estimate(
            info,
            query,
            self.max_seats,
            || match control
                .metrics
                .storage_objects(&info.api_group, &info.resource)
            {
                Some(n) if n >= 0 => ObjectCount::Known(n),
                Some(_) => ObjectCount::Stale,
                None => ObjectCount::Unknown,
            },
            || control.watches.interested(info),
        )
    }

    /// Waits for the seats of the request's priority level.
    pub async fn acquire(
        &self,
        estimate: WorkEstimate,
        wait_limit: Duration,
    ) -> Result<Seat, Rejection> {
        self.queues
            .acquire(self.flow_hash, estimate, self.meta.clone(), wait_limit)
            .await
    }
}

/// How a configuration left a FlowSchema: whether its priority level exists
/// (upstream's `Dangling` condition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    pub name: String,
    pub level: String,
    pub dangling: bool,
}

/// A level's seats: nominal, lower and upper limits, and the limit in
/// force (None for the exempt level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelLimits {
    pub nominal: usize,
    pub lower: usize,
    pub upper: usize,
    pub current: Option<usize>,
}

impl FlowControl {
    /// Flow control over `server_concurrency_limit` seats; requests wait in
    /// queues at most a quarter of `request_timeout` (and a minute).
    pub fn new(
        server_concurrency_limit: usize,
        request_timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Arc<Self> {
        let control = Arc::new(FlowControl {
            server_concurrency_limit,
            wait_limit: (request_timeout / 4).min(MAX_WAIT),
            config: RwLock::new(Arc::new(Config {
                schemas: Vec::new(),
                levels: HashMap::new(),
            })),
            states: Mutex::default(),
            metrics,
            watches: Arc::default(),
            dropped: DroppedRequests::default(),
        });
        control.configure(&[], &[]);
        control
    }

    /// How long a request may wait for a seat.
    pub fn wait_limit(&self) -> Duration {
        self.wait_limit
    }

    fn current(&self) -> Arc<Config> {
        self.config
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    fn lock_states(&self) -> std::sync::MutexGuard<'_, States> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The schema and level of a request. The mandatory catch-all schema
    /// matches every authenticated or unauthenticated user, so a request of
    /// neither still lands there.
    pub fn classify(
        &self,
        user: &Arc<UserInfo>,
        info: &Arc<RequestInfo>,
    ) -> Option<Classification> {
        let config = self.current();
        let schema = config
            .schemas
            .iter()
            .find(|s| rules::matches_rules(&s.rules, user, info))
            .or_else(|| {
                config
                    .schemas
                    .iter()
                    .find(|s| &*s.name == bootstrap::CATCH_ALL)
            })?;
        let level = config.levels.get(&schema.level)?;
        let meta = Arc::new(RequestMeta {
            flow_schema: schema.name.clone(),
            distinguisher: schema.distinguisher,
            user: user.clone(),
            info: info.clone(),
        });
        Some(Classification {
            flow_schema: schema.name.clone(),
            flow_schema_uid: schema.uid.clone(),
            priority_level: level.name.clone(),
            priority_level_uid: level.uid.clone(),
            series: schema.series.clone(),
            max_seats: level.max_seats,
            flow_hash: flow_hash(&schema.name, meta.flow_distinguisher()),
            meta,
            queues: level.queues.clone(),
        })
    }

    /// Counts a watch until the registration is dropped, for the work
    /// estimates of writes.
    pub fn register_watch(&self, info: &RequestInfo) -> Option<WatchRegistration> {
        self.watches.register(info)
    }

    /// Notes a request of `level` rejected now; the `Retry-After` seconds
    /// to answer it with.
    pub fn note_rejected(&self, level: &str) -> i64 {
        self.dropped.record(level, chrono::Utc::now().timestamp())
    }

    /// Replaces the configuration with these objects (plus the mandatory
    /// ones they lack) and reports, for each given FlowSchema, whether its
    /// priority level exists.
    pub fn configure(
        &self,
        schemas: &[FlowSchema],
        levels: &[PriorityLevelConfiguration],
    ) -> Vec<SchemaStatus> {
        let mut levels: Vec<&PriorityLevelConfiguration> = levels.iter().collect();
        for m in bootstrap::mandatory_priority_levels() {
            if !levels.iter().any(|l| l.metadata.name == m.metadata.name) {
                levels.push(m);
            }
        }
        let compiled = self.configure_levels(&levels);
        let statuses = schemas
            .iter()
            .filter_map(|fs| {
                let name = fs.metadata.name.clone()?;
                let level = fs.spec.priority_level_configuration.name.clone();
                let dangling = !compiled.contains_key(&level);
                Some(SchemaStatus {
                    name,
                    level,
                    dangling,
                })
            })
            .collect();
        let mut usable: Vec<&FlowSchema> = schemas
            .iter()
            .filter(|fs| compiled.contains_key(&fs.spec.priority_level_configuration.name))
            .collect();
        for m in bootstrap::mandatory_flow_schemas() {
            if !usable.iter().any(|fs| fs.metadata.name == m.metadata.name) {
                usable.push(m);
            }
        }
        usable.sort_by(|a, b| {
            let precedence = |fs: &FlowSchema| fs.spec.matching_precedence.unwrap_or(1000);
            precedence(a)
                .cmp(&precedence(b))
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        let schemas = usable.into_iter().filter_map(compile_schema).collect();
        let config = Arc::new(Config {
            schemas,
            levels: compiled,
        });
        match self.config.write() {
            Ok(mut current) => *current = config,
            Err(e) => *e.into_inner() = config,
        }
        statuses
    }

    /// Derives every level's seats and queue set, keeping those of levels
    /// that stay, then re-allocates seats as upstream does after a change.
    fn configure_levels(&self, levels: &[&PriorityLevelConfiguration]) -> HashMap<String, Level> {
        let shares: i64 = levels.iter().map(|l| i64::from(shares_of(l))).sum();
        let mut states = self.lock_states();
        let mut compiled = HashMap::new();
        let mut nominal_sum = 0;
        for level in levels {
            let Some(name) = level.metadata.name.clone() else {
                continue;
            };
            let (mut seats, overflow) = self.seats_of(level, shares);
            nominal_sum += seats.nominal;
            let limit = (!seats.exempt).then_some(seats.current);
            let (queues, demand) = match states.levels.get(&name) {
                Some(state) => {
                    // A retained level keeps its current limit until the
                    // re-allocation below.
                    seats.current = state.seats.current;
                    let limit = (!seats.exempt).then_some(seats.current);
                    state.queues.reconfigure(limit, overflow);
                    (state.queues.clone(), state.seats.demand)
                }
                None => (QueueSet::new(limit, overflow), SeatDemandStats::default()),
            };
            seats.demand = demand;
            self.metrics
                .apf
                .set_limits(&name, seats.nominal, seats.lower, seats.upper);
            let hand_size = match overflow {
                Overflow::Queue { hand_size, .. } => Some(hand_size),
                Overflow::Reject => None,
            };
            let max_seats = width::max_seats(seats.nominal, hand_size);
            states.levels.insert(
                name.clone(),
                LevelState {
                    queues: queues.clone(),
                    seats,
                },
            );
            let uid = level.metadata.uid.clone().unwrap_or_default();
            let level = Level {
                name: Arc::from(name.as_str()),
                uid,
                max_seats,
                queues,
            };
            compiled.insert(name, level);
        }
        states.levels.retain(|name, _| compiled.contains_key(name));
        states.nominal_sum = nominal_sum;
        self.reallocate(&mut states);
        compiled
    }

    /// A level's nominal seats (its share of the server's limit, rounded
    /// up), lower and upper limits, initial limit, and overflow behaviour.
    fn seats_of(&self, level: &PriorityLevelConfiguration, shares: i64) -> (LevelSeats, Overflow) {
        let spec = &level.spec;
        let own = i64::from(shares_of(level));
        let nominal = if shares > 0 {
            let total = self.server_concurrency_limit as i64 * own;
            usize::try_from((total + shares - 1) / shares).unwrap_or(0)
        } else {
            0
        };
        let (lendable, borrowing) = match (&spec.limited, &spec.exempt) {
            (Some(limited), _) => (limited.lendable_percent, limited.borrowing_limit_percent),
            (None, Some(exempt)) => (exempt.lendable_percent, None),
            (None, None) => (None, None),
        };
        let percent = |p: i32| (nominal as f64 * f64::from(p.max(0)) / 100.0).round() as usize;
        let lendable = lendable.map_or(0, percent).min(nominal);
        let borrowing = borrowing.map_or(self.server_concurrency_limit, percent);
        let seats = LevelSeats {
            exempt: spec.limited.is_none(),
            nominal,
            lower: nominal - lendable,
            upper: nominal + borrowing,
            current: nominal - lendable / 2,
            demand: SeatDemandStats::default(),
        };
        let overflow = match &spec.limited {
            Some(limited) => overflow(Some(&limited.limit_response)),
            None => Overflow::Reject,
        };
        (seats, overflow)
    }

    /// Re-derives every level's current limit from its recent seat demand
    /// (upstream runs this every [`ADJUSTMENT_PERIOD`]).
    pub fn update_borrowing(&self) {
        let mut states = self.lock_states();
        self.reallocate(&mut states);
    }

    fn reallocate(&self, states: &mut States) {
        let mut names: Vec<String> = states.levels.keys().cloned().collect();
        names.sort();
        let mut inputs = Vec::with_capacity(names.len());
        for name in &names {
            let Some(state) = states.levels.get_mut(name) else {
                continue;
            };
            state.seats.demand.update(state.queues.take_demand());
            inputs.push(state.seats);
        }
        let Some(allocation) = borrowing::allocate(states.nominal_sum, &inputs) else {
            return;
        };
        let apf = &self.metrics.apf;
        apf.fair_frac.set(allocation.fair_frac);
        for (i, name) in names.iter().enumerate() {
            let Some(state) = states.levels.get_mut(name) else {
                continue;
            };
            let limit = allocation.limits[i];
            state.seats.current = limit;
            if !state.seats.exempt {
                state.queues.set_limit(limit);
            }
            let labels = metrics::level_labels(name);
            let demand = &state.seats.demand;
            apf.current_limit_seats
                .get_or_create(&labels)
                .set(i64::try_from(limit).unwrap_or(i64::MAX));
            for (family, value) in [
                (&apf.demand_high_watermark, demand.high_watermark as f64),
                (&apf.demand_average, demand.average),
                (&apf.demand_stdev, demand.stddev),
                (&apf.demand_smoothed, demand.smoothed),
                (&apf.target_seats, allocation.targets[i]),
            ] {
                family.get_or_create(&labels).set(value);
            }
        }
    }

    /// Every level with its limits and current digest, by name.
    pub fn levels(&self) -> Vec<(String, LevelLimits, Digest)> {
        let states = self.lock_states();
        let mut rows: Vec<_> = states
            .levels
            .iter()
            .map(|(name, state)| {
                let s = &state.seats;
                let limits = LevelLimits {
                    nominal: s.nominal,
                    lower: s.lower,
                    upper: s.upper,
                    current: (!s.exempt).then_some(s.current),
                };
                (name.clone(), limits, state.queues.digest())
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    }

    /// Every level's queues and requests, by name.
    pub fn dumps(&self) -> Vec<(String, SetDump)> {
        let states = self.lock_states();
        let mut rows: Vec<_> = states
            .levels
            .iter()
            .map(|(name, state)| (name.clone(), state.queues.dump()))
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    }
}

/// A flow is its schema and distinguisher; its hash picks its queues.
fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    (schema, distinguisher).hash(&mut hasher);
    hasher.finish()
}

fn shares_of(level: &PriorityLevelConfiguration) -> i32 {
    let spec = &level.spec;
    if let Some(limited) = &spec.limited {
        return limited
            .nominal_concurrency_shares
            .unwrap_or(DEFAULT_SHARES)
            .max(0);
    }
    spec.exempt
        .as_ref()
        .and_then(|e| e.nominal_concurrency_shares)
        .unwrap_or(0)
        .max(0)
}

fn overflow(response: Option<&LimitResponse>) -> Overflow {
    let Some(response) = response.filter(|r| r.type_ == "Queue") else {
        return Overflow::Reject;
    };
    let q = response.queuing.as_ref();
    let get =
        |v: Option<i32>, default: i32| usize::try_from(v.unwrap_or(default)).unwrap_or(1).max(1);
    Overflow::Queue {
        queues: get(q.and_then(|q| q.queues), DEFAULT_QUEUES),
        hand_size: get(q.and_then(|q| q.hand_size), DEFAULT_HAND_SIZE),
        queue_length_limit: get(
            q.and_then(|q| q.queue_length_limit),
            DEFAULT_QUEUE_LENGTH_LIMIT,
        ),
    }
}

fn compile_schema(fs: &FlowSchema) -> Option<Schema> {
    let spec = &fs.spec;
    let distinguisher = match spec.distinguisher_method.as_ref().map(|d| d.type_.as_str()) {
        Some("ByUser") => Distinguisher::ByUser,
        Some("ByNamespace") => Distinguisher::ByNamespace,
        _ => Distinguisher::None,
    };
    let name = fs.metadata.name.as_deref()?;
    let level = &spec.priority_level_configuration.name;
    Some(Schema {
        name: Arc::from(name),
        uid: fs.metadata.uid.clone().unwrap_or_default(),
        level: level.clone(),
        distinguisher,
        rules: spec.rules.clone().unwrap_or_default(),
        series: Arc::new(FlowSeries::new(level, name)),
    })
}

#[cfg(test)]
mod tests;
