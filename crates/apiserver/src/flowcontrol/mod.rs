//! API Priority and Fairness (upstream's `k8s.io/apiserver/pkg/util/flowcontrol`):
//! every request is classified by the first matching FlowSchema (by
//! matchingPrecedence, then name) into a priority level, which grants it one
//! of its seats, queues it, or rejects it. A level's seats are its share of
//! the server's concurrency limit (`--max-requests-inflight` plus
//! `--max-mutating-requests-inflight`), in proportion to its
//! nominalConcurrencyShares; the exempt level is never limited.
//!
//! The configuration comes from the FlowSchema and
//! PriorityLevelConfiguration objects (see [`controller`]); until they are
//! read, and whenever the mandatory ones are missing, the built-in mandatory
//! objects of [`bootstrap`] stand in, as upstream. Seats are not lent
//! between levels (upstream's borrowing via lendablePercent): each level
//! keeps its nominal limit.

pub mod bootstrap;
pub mod controller;
pub mod debug;
mod queueset;
mod rules;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use apimachinery::request_info::RequestInfo;
use k8s_openapi::api::flowcontrol::v1::{
    FlowSchema, LimitResponse, PolicyRulesWithSubjects, PriorityLevelConfiguration,
};

pub use queueset::{Digest, Rejection, Seat, Totals};
use queueset::{Overflow, QueueSet};

use crate::authentication::UserInfo;
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
    /// Queue sets by level name, kept across reconfigurations so that
    /// running and waiting requests carry over.
    queue_sets: Mutex<HashMap<String, Arc<QueueSet>>>,
    /// Where each level's seats are published.
    metrics: Arc<Metrics>,
}

struct Config {
    schemas: Vec<Schema>,
    levels: HashMap<String, Level>,
}

struct Schema {
    name: String,
    uid: String,
    level: String,
    distinguisher: Option<String>,
    rules: Vec<PolicyRulesWithSubjects>,
}

struct Level {
    uid: String,
    /// Seats, or None when exempt.
    limit: Option<usize>,
    queues: Arc<QueueSet>,
}

/// Where a request goes: the schema and level it matched and its flow.
pub struct Classification {
    pub flow_schema: String,
    pub flow_schema_uid: String,
    pub priority_level: String,
    pub priority_level_uid: String,
    flow_hash: u64,
    queues: Arc<QueueSet>,
}

impl Classification {
    /// Waits for a seat of the request's priority level.
    pub async fn acquire(&self, wait_limit: Duration) -> Result<Seat, Rejection> {
        self.queues.acquire(self.flow_hash, wait_limit).await
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
            queue_sets: Mutex::default(),
            metrics,
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

    /// The schema and level of a request. The mandatory catch-all schema
    /// matches every authenticated or unauthenticated user, so a request of
    /// neither still lands there.
    pub fn classify(&self, user: &UserInfo, info: &RequestInfo) -> Option<Classification> {
        let config = self.current();
        let schema = config
            .schemas
            .iter()
            .find(|s| rules::matches_rules(&s.rules, user, info))
            .or_else(|| {
                config
                    .schemas
                    .iter()
                    .find(|s| s.name == bootstrap::CATCH_ALL)
            })?;
        let level = config.levels.get(&schema.level)?;
        let distinguisher = match schema.distinguisher.as_deref() {
            Some("ByUser") => user.name.as_str(),
            Some("ByNamespace") => info.namespace.as_str(),
            _ => "",
        };
        Some(Classification {
            flow_schema: schema.name.clone(),
            flow_schema_uid: schema.uid.clone(),
            priority_level: schema.level.clone(),
            priority_level_uid: level.uid.clone(),
            flow_hash: flow_hash(&schema.name, distinguisher),
            queues: level.queues.clone(),
        })
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
        let mandatory_levels = bootstrap::mandatory_priority_levels();
        for m in mandatory_levels {
            if !levels.iter().any(|l| l.metadata.name == m.metadata.name) {
                levels.push(m);
            }
        }
        let shares: i64 = levels.iter().map(|l| i64::from(shares_of(l))).sum();
        let mut sets = self.queue_sets.lock().unwrap_or_else(|e| e.into_inner());
        let mut compiled = HashMap::new();
        for level in &levels {
            let Some(name) = level.metadata.name.clone() else {
                continue;
            };
            let (limit, overflow) = self.limits(level, shares);
            let queues = match sets.get(&name) {
                Some(set) => {
                    set.reconfigure(limit, overflow);
                    set.clone()
                }
                None => QueueSet::new(limit, overflow),
            };
            sets.insert(name.clone(), queues.clone());
            self.metrics
                .apf_nominal_seats
                .get_or_create(&[("priority_level", name.clone())])
                .set(limit.map_or(0, |l| i64::try_from(l).unwrap_or(i64::MAX)));
            let uid = level.metadata.uid.clone().unwrap_or_default();
            compiled.insert(name, Level { uid, limit, queues });
        }
        sets.retain(|name, _| compiled.contains_key(name));
        drop(sets);

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

    /// A level's seats (upstream's nominal concurrency limit: its share of
    /// the server's limit, rounded up) and overflow behaviour.
    fn limits(&self, level: &PriorityLevelConfiguration, shares: i64) -> (Option<usize>, Overflow) {
        let Some(limited) = level.spec.limited.as_ref() else {
            return (None, Overflow::Reject);
        };
        let own = i64::from(shares_of(level));
        let seats = if shares > 0 {
            let total = self.server_concurrency_limit as i64 * own;
            usize::try_from((total + shares - 1) / shares).unwrap_or(0)
        } else {
            0
        };
        (Some(seats), overflow(Some(&limited.limit_response)))
    }

    /// Every level with its seats and current digest, by name.
    pub fn levels(&self) -> Vec<(String, Option<usize>, Digest)> {
        let config = self.current();
        let mut rows: Vec<_> = config
            .levels
            .iter()
            .map(|(name, level)| (name.clone(), level.limit, level.queues.digest()))
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
    Some(Schema {
        name: fs.metadata.name.clone()?,
        uid: fs.metadata.uid.clone().unwrap_or_default(),
        level: spec.priority_level_configuration.name.clone(),
        distinguisher: spec.distinguisher_method.as_ref().map(|d| d.type_.clone()),
        rules: spec.rules.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests;
