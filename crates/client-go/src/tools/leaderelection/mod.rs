//! Leader election (upstream's `k8s.io/client-go/tools/leaderelection`):
//! candidates compete for one [`LeaseLock`]; the one that holds it renews
//! it every retry period, the others retry and take it over once they have
//! seen it unchanged for a whole lease duration. Expiry is judged only by
//! the local clock from when a change of the record was last seen, never
//! by the timestamps in it, so clock skew between candidates is harmless.
//!
//! [`LeaderElector::run`] is one term: it campaigns until it holds the
//! lock, runs `on_started_leading` with a [`CancellationToken`] that is
//! cancelled when the lock is lost or the run is stopped, renews until
//! then, and calls `on_stopped_leading`. As upstream, this does not fence:
//! a leader that stalls longer than the lease may act next to its
//! successor until it notices, so what it guards must stay idempotent.

pub mod resourcelock;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use resourcelock::{LeaderElectionRecord, LeaseClient, LeaseLock};

/// Retry periods are stretched by up to this factor at random.
pub const JITTER_FACTOR: f64 = 1.2;
/// component-base's defaults (`RecommendedDefaultLeaderElectionConfiguration`),
/// what kube-controller-manager and kube-scheduler run with.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Runs what the leader does, until its token is cancelled.
pub type OnStartedLeading = Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;
/// Told the identity of a new holder.
pub type OnNewLeader = Arc<dyn Fn(&str) + Send + Sync>;

/// What happens as leadership changes (upstream's `LeaderCallbacks`).
#[derive(Clone)]
pub struct LeaderCallbacks {
    /// Spawned once the lock is held.
    pub on_started_leading: OnStartedLeading,
    /// Called when a run ends, leading or not.
    pub on_stopped_leading: Arc<dyn Fn() + Send + Sync>,
    /// Called with each holder seen, the first one included.
    pub on_new_leader: Option<OnNewLeader>,
}

/// Upstream's `LeaderElectionConfig`.
#[derive(Clone)]
pub struct LeaderElectionConfig {
    pub lock: Arc<LeaseLock>,
    /// How long a candidate waits, from the last change of the record it
    /// saw, before taking the lock over.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before giving up.
    pub renew_deadline: Duration,
    /// How long candidates wait between tries.
    pub retry_period: Duration,
    pub callbacks: LeaderCallbacks,
    /// Release the lock when the run is stopped, so another candidate need
    /// not wait out the lease; what the leader ran has stopped by then.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// A config with upstream's default timings.
    pub fn new(lock: Arc<LeaseLock>, callbacks: LeaderCallbacks) -> Self {
        LeaderElectionConfig {
            lock,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            callbacks,
            release_on_cancel: false,
        }
    }
}

/// What a candidate last saw of the lock.
struct Observed {
    record: LeaderElectionRecord,
    /// When `record` was last seen to change (local, monotonic).
    time: Instant,
    /// The holder last told to `on_new_leader`.
    reported_leader: String,
}

/// One candidate (upstream's `LeaderElector`).
pub struct LeaderElector {
    config: LeaderElectionConfig,
    observed: Mutex<Observed>,
}

impl LeaderElector {
    /// Checks the config as upstream's `NewLeaderElector` does.
    pub fn new(config: LeaderElectionConfig) -> Result<Self, String> {
        let jittered_retry = config.retry_period.mul_f64(JITTER_FACTOR);
        if config.lease_duration <= config.renew_deadline {
            return Err("leaseDuration must be greater than renewDeadline".into());
        }
        if config.renew_deadline <= jittered_retry {
            return Err("renewDeadline must be greater than retryPeriod*JitterFactor".into());
        }
        if config.retry_period.is_zero() {
            return Err("retryPeriod must be greater than zero".into());
        }
        if config.lock.identity().is_empty() {
            return Err("Lock identity is empty".into());
        }
        Ok(LeaderElector {
            config,
            observed: Mutex::new(Observed {
                record: LeaderElectionRecord::default(),
                time: Instant::now(),
                reported_leader: String::new(),
            }),
        })
    }

    fn observed(&self) -> MutexGuard<'_, Observed> {
        self.observed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The holder last seen; empty when none was.
    pub fn leader(&self) -> String {
        self.observed().record.holder_identity.clone()
    }

    /// Whether the holder last seen is this candidate.
    pub fn is_leader(&self) -> bool {
        self.observed().record.holder_identity == self.config.lock.identity()
    }

    /// One term: campaigns until the lock is held or `stop`, then leads
    /// until the lock is lost or `stop`; `on_stopped_leading` either way.
    pub async fn run(&self, stop: CancellationToken) {
        if self.acquire(&stop).await {
            let leading = stop.child_token();
            let led = tokio::spawn((self.config.callbacks.on_started_leading)(leading.clone()));
            self.renew(&stop).await;
            leading.cancel();
            // What the lock guards has stopped before anyone may take over.
            let _ = tokio::time::timeout(self.config.renew_deadline, led).await;
            if self.config.release_on_cancel {
                self.release().await;
            }
        }
        (self.config.callbacks.on_stopped_leading)();
    }

    /// Tries every jittered retry period until the lock is held (true) or
    /// `stop` (false).
    async fn acquire(&self, stop: &CancellationToken) -> bool {
        let desc = self.config.lock.describe();
        tracing::info!(lock = %desc, "Attempting to acquire leader lease...");
        loop {
            if stop.is_cancelled() {
                return false;
            }
            let acquired = self.try_acquire_or_renew().await;
            self.maybe_report_transition();
            if acquired {
                tracing::info!(lock = %desc, "Successfully acquired lease");
                return true;
            }
            tracing::debug!(v = 4, lock = %desc, "Failed to acquire lease");
            let factor = rand::rng().random_range(0.0..JITTER_FACTOR);
            let wait = self.config.retry_period + self.config.retry_period.mul_f64(factor);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => return false,
            }
        }
    }

    /// Renews every retry period until a renewal has not succeeded within
    /// the renew deadline, or `stop`.
    async fn renew(&self, stop: &CancellationToken) {
        let desc = self.config.lock.describe();
        loop {
            let retry = async {
                while !self.try_acquire_or_renew().await {
                    tokio::time::sleep(self.config.retry_period).await;
                }
            };
            let renewed = tokio::select! {
                r = tokio::time::timeout(self.config.renew_deadline, retry) => r.is_ok(),
                _ = stop.cancelled() => return,
            };
            self.maybe_report_transition();
            if !renewed {
                tracing::info!(lock = %desc, err = "context deadline exceeded", "Failed to renew lease");
                return;
            }
            tracing::trace!(lock = %desc, "Successfully renewed lease");
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = stop.cancelled() => return,
            }
        }
    }

    /// Gives the lock up if held: no holder and a one-second lease, so the
    /// others take it at their next try. Retried on conflict with a
    /// renewal still in flight, within the renew deadline.
    async fn release(&self) {
        let desc = self.config.lock.describe();
        let release = async {
            loop {
                let old = self.config.lock.get().await?;
                if !self.is_leader() {
                    return Ok(());
                }
                let now = Some(Utc::now());
                let record = LeaderElectionRecord {
                    lease_duration_seconds: 1,
                    acquire_time: now,
                    renew_time: now,
                    leader_transitions: old.leader_transitions,
                    ..Default::default()
                };
                match self.config.lock.update(&record).await {
                    Err(e) if e.code == 409 => continue,
                    Err(e) => return Err(e),
                    Ok(()) => {
                        self.set_observed(record);
                        return Ok(());
                    }
                }
            }
        };
        match tokio::time::timeout(self.config.renew_deadline, release).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(lock = %desc, err = %e.message, "Failed to release lease")
            }
            Err(_) => tracing::error!(lock = %desc, "Failed to release lease: timed out"),
        }
    }

    fn set_observed(&self, record: LeaderElectionRecord) {
        let mut observed = self.observed();
        observed.record = record;
        observed.time = Instant::now();
    }

    /// Whether the lease last seen has not run out, by the local clock.
    fn is_lease_valid(&self, now: Instant) -> bool {
        let observed = self.observed();
        let duration = Duration::from_secs(observed.record.lease_duration_seconds.max(0) as u64);
        observed.time + duration > now
    }

    /// Renews the lock if held, takes it if free or expired; true when
    /// this candidate holds it afterwards (upstream's `tryAcquireOrRenew`).
    async fn try_acquire_or_renew(&self) -> bool {
        let lock = &self.config.lock;
        let now = Some(Utc::now());
        let mut record = LeaderElectionRecord {
            holder_identity: lock.identity().to_owned(),
            lease_duration_seconds: self.config.lease_duration.as_secs() as i64,
            acquire_time: now,
            renew_time: now,
            leader_transitions: 0,
        };
        // 1. The leader first writes over the Lease it last wrote.
        if self.is_leader() && self.is_lease_valid(Instant::now()) {
            let old = self.observed().record.clone();
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
            match lock.update(&record).await {
                Ok(()) => {
                    self.set_observed(record);
                    return true;
                }
                Err(e) => tracing::debug!(lock = %lock.describe(), err = %e.message,
                    "Failed to update lease optimistically, falling back to slow path"),
            }
        }
        // 2. Read the Lease, or create it.
        let old = match lock.get().await {
            Ok(old) => old,
            Err(e) if e.code == 404 => {
                if let Err(e) = lock.create(&record).await {
                    tracing::error!(lock = %lock.describe(), err = %e.message,
                        "Error initially creating lease lock");
                    return false;
                }
                self.set_observed(record);
                return true;
            }
            Err(e) => {
                tracing::error!(lock = %lock.describe(), err = %e.message, "Error retrieving lease lock");
                return false;
            }
        };
        // 3. A changed record restarts the wait for its expiry.
        if self.observed().record != old {
            self.set_observed(old.clone());
        }
        if !old.holder_identity.is_empty()
            && self.is_lease_valid(Instant::now())
            && !self.is_leader()
        {
            tracing::debug!(v = 4, lock = %lock.describe(), holder = %old.holder_identity,
                "Lease is held by and has not yet expired");
            return false;
        }
        // 4. Renew, or take over as the next leader.
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions + 1;
        }
        if let Err(e) = lock.update(&record).await {
            tracing::error!(lock = %lock.describe(), err = %e.message, "Failed to update lease");
            return false;
        }
        self.set_observed(record);
        true
    }

    /// Tells `on_new_leader` of a holder not told before.
    fn maybe_report_transition(&self) {
        let leader = {
            let mut observed = self.observed();
            if observed.record.holder_identity == observed.reported_leader {
                return;
            }
            observed.reported_leader = observed.record.holder_identity.clone();
            observed.reported_leader.clone()
        };
        if let Some(on_new_leader) = &self.config.callbacks.on_new_leader {
            on_new_leader(&leader);
        }
    }
}
