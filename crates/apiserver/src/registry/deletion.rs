//! Deletion semantics shared by every resource (upstream's
//! `rest.BeforeDelete` and the generic store's garbage-collection
//! finalizers): DeleteOptions as requests carry them, graceful deletion, and
//! the `orphan` / `foregroundDeletion` finalizers that hand dependents to
//! the garbage collector.

use apimachinery::query_params::QueryParams;
use apimachinery::serializer;
use apimachinery::status::ApiError;
use apimachinery::validation::options::{options_invalid, validate_delete_options};
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use storage::Preconditions;

use super::object_meta;
use super::rest::{GcPolicy, GracefulDeleteStrategy};

/// The finalizer asking the garbage collector to orphan dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer asking the garbage collector to delete blocking
/// dependents before the owner.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    Orphan,
    Background,
    Foreground,
}

impl PropagationPolicy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Orphan" => Some(Self::Orphan),
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            _ => None,
        }
    }
}

/// The DeleteOptions of a request.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub preconditions: Option<Preconditions>,
    pub dry_run: bool,
    pub grace_period_seconds: Option<i64>,
    pub propagation_policy: Option<PropagationPolicy>,
    /// The deprecated `orphanDependents`.
    pub orphan_dependents: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    grace_period_seconds: Option<i64>,
    preconditions: Option<WirePreconditions>,
    orphan_dependents: Option<bool>,
    propagation_policy: Option<String>,
    dry_run: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePreconditions {
    uid: Option<String>,
    resource_version: Option<String>,
}

impl DeleteOptions {
    /// Reads the options of a delete request as upstream does: from the
    /// body when there is one, else from the query parameters
    /// (`gracePeriodSeconds`, `propagationPolicy`, `orphanDependents`,
    /// `dryRun`). `dryRun=All` in the query counts in both cases.
    pub fn from_request(body: &[u8], query: &QueryParams) -> Result<Self, ApiError> {
        let raw = if body.iter().all(u8::is_ascii_whitespace) {
            options_from_query(query)?
        } else {
            serializer::json::decode(body)
                .or_else(|_| serializer::yaml::decode(body))
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
        };
        let errors = validate_delete_options(&raw);
        if !errors.is_empty() {
            return Err(options_invalid("DeleteOptions", &errors));
        }
        let wire: Wire = serde_json::from_value(raw)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?;
        // Upstream reads the query only without a body; `dryRun=All` there
        // is honoured beside a body too (older kubectl sends it so).
        let query_dry_run = query.first("dryRun") == Some("All");
        Ok(DeleteOptions {
            preconditions: wire.preconditions.map(|p| Preconditions {
                uid: p.uid,
                resource_version: p.resource_version,
            }),
            dry_run: query_dry_run || wire.dry_run.is_some_and(|d| d.iter().any(|v| v == "All")),
            grace_period_seconds: wire.grace_period_seconds,
            propagation_policy: wire
                .propagation_policy
                .as_deref()
                .and_then(PropagationPolicy::parse),
            orphan_dependents: wire.orphan_dependents,
        })
    }
}

/// The DeleteOptions fields a query string may carry, as a JSON object,
/// converted as upstream's parameter codec does (the first value of each,
/// every `dryRun`;
/// booleans false only for `0` and `false`; a grace period that does not
/// parse is a 400 with `strconv.ParseInt`'s message).
fn options_from_query(query: &QueryParams) -> Result<Value, ApiError> {
    let mut raw = Map::new();
    if let Some(n) = query
        .int64("gracePeriodSeconds")
        .map_err(ApiError::bad_request)?
    {
        raw.insert("gracePeriodSeconds".into(), json!(n));
    }
    if let Some(orphan) = query.opt_bool("orphanDependents") {
        raw.insert("orphanDependents".into(), json!(orphan));
    }
    if let Some(v) = query.first("propagationPolicy") {
        raw.insert("propagationPolicy".into(), json!(v));
    }
    let dry_run = query.all("dryRun");
    if !dry_run.is_empty() {
        raw.insert("dryRun".into(), json!(dry_run));
    }
    Ok(Value::Object(raw))
}

/// What `before_delete` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Graceful {
    /// Not a graceful deletion: delete now, or mark for the finalizers.
    No,
    /// A graceful deletion with this period (seconds) was set on the object.
    Yes(i64),
    /// A graceful deletion is already under way and the request does not
    /// shorten it: nothing changes.
    Pending,
}

/// Upstream's `BeforeDelete` after the precondition checks: sets the
/// deletion timestamp and grace period of an object its strategy deletes
/// gracefully; a second deletion may only shorten the period.
pub fn before_delete(
    strategy: &dyn GracefulDeleteStrategy,
    obj: &mut Value,
    requested: Option<i64>,
    now: DateTime<Utc>,
) -> Graceful {
    // Negative periods count as 1s, as upstream.
    let requested = requested.map(|p| if p < 0 { 1 } else { p });
    let meta = object_meta::metadata_mut(obj);
    let existing_period = meta
        .get("deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .map(|p| if p < 0 { 1 } else { p });
    let existing_at = meta
        .get("deletionTimestamp")
        .filter(|t| !t.is_null())
        .map(|t| t.as_str().and_then(parse_time).unwrap_or(now));
    if let Some(at) = existing_at {
        // Only strategies with graceful deletion shorten a pending one.
        if strategy.grace_period(obj, requested).is_none() {
            return Graceful::No;
        }
        let Some(existing) = existing_period.filter(|p| *p > 0) else {
            return Graceful::No;
        };
        let Some(mut period) = requested else {
            return Graceful::Pending;
        };
        if period >= existing {
            return Graceful::Pending;
        }
        let mut at = at - Duration::seconds(existing) + Duration::seconds(period);
        if at < now {
            at = now;
            // The whole period has passed: the shortest graceful one.
            if period != 0 {
                period = 1;
            }
        }
        set_deletion(obj, at, period);
        return Graceful::Yes(period);
    }
    let Some(period) = strategy.grace_period(obj, requested) else {
        return Graceful::No;
    };
    set_deletion(obj, now + Duration::seconds(period), period);
    bump_generation(obj);
    Graceful::Yes(period)
}

fn set_deletion(obj: &mut Value, at: DateTime<Utc>, period: i64) {
    let meta = object_meta::metadata_mut(obj);
    meta.insert("deletionTimestamp".into(), json!(format_time(at)));
    meta.insert("deletionGracePeriodSeconds".into(), json!(period));
}

/// The first deletion bumps `metadata.generation` when the object has one.
fn bump_generation(obj: &mut Value) {
    let meta = object_meta::metadata_mut(obj);
    if let Some(g) = meta
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g > 0)
    {
        meta.insert("generation".into(), json!(g + 1));
    }
}

/// Upstream's `markAsDeleting`: an object kept by finalizers gets a
/// deletion timestamp (at most now) and a zero grace period.
pub fn mark_as_deleting(obj: &mut Value, now: DateTime<Utc>) {
    let existing = object_meta::metadata_mut(obj)
        .get("deletionTimestamp")
        .filter(|t| !t.is_null())
        .map(|t| t.as_str().and_then(parse_time));
    if existing.is_none() {
        bump_generation(obj);
    }
    let meta = object_meta::metadata_mut(obj);
    if existing.is_none_or(|at| at.is_none_or(|at| at > now)) {
        meta.insert("deletionTimestamp".into(), json!(format_time(now)));
    }
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
}

/// The finalizers of an object.
pub fn finalizers(obj: &Value) -> Vec<&str> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Upstream's `deletionFinalizersForGarbageCollection`: the finalizers the
/// object should have once deleted with `opts`, when they differ from
/// `current`. The request's options win over the finalizers already set,
/// which win over the resource's default policy.
pub fn gc_finalizers(
    policy: GcPolicy,
    opts: &DeleteOptions,
    current: &[&str],
) -> Option<Vec<String>> {
    let from_finalizers = || {
        current.iter().find_map(|f| match *f {
            ORPHAN_FINALIZER => Some(PropagationPolicy::Orphan),
            FOREGROUND_FINALIZER => Some(PropagationPolicy::Foreground),
            _ => None,
        })
    };
    let chosen = match (opts.orphan_dependents, opts.propagation_policy) {
        // Never collected: the collector's finalizers only go.
        _ if policy == GcPolicy::Unsupported => Some(PropagationPolicy::Background),
        (Some(true), _) => Some(PropagationPolicy::Orphan),
        (Some(false), _) => Some(PropagationPolicy::Background),
        (None, Some(p)) => Some(p),
        (None, None) => from_finalizers(),
    };
    let chosen = chosen.unwrap_or(match policy {
        GcPolicy::OrphanDependents => PropagationPolicy::Orphan,
        _ => PropagationPolicy::Background,
    });
    let mut wanted: Vec<String> = current
        .iter()
        .filter(|f| **f != ORPHAN_FINALIZER && **f != FOREGROUND_FINALIZER)
        .map(|f| (*f).to_owned())
        .collect();
    match chosen {
        PropagationPolicy::Orphan => wanted.push(ORPHAN_FINALIZER.into()),
        PropagationPolicy::Foreground => wanted.push(FOREGROUND_FINALIZER.into()),
        PropagationPolicy::Background => {}
    }
    let same =
        wanted.len() == current.len() && wanted.iter().all(|f| current.contains(&f.as_str()));
    (!same).then_some(wanted)
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
#[path = "deletion_tests.rs"]
mod tests;
