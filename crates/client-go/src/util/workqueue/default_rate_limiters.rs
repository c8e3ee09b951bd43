//! How long a failed item waits before it is handed out again (upstream's
//! `workqueue/default_rate_limiters.go`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub trait RateLimiter<T>: Send + Sync {
    /// The wait before `item` is handed out again; counts a failure.
    fn when(&self, item: &T) -> Duration;
    /// Clears `item`'s failures (it succeeded).
    fn forget(&self, item: &T);
    /// The failures counted for `item`.
    fn num_requeues(&self, item: &T) -> u32;
}

/// `base * 2^failures`, at most `max`, per item.
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailureRateLimiter {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Eq + Hash + Clone + Send> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(item.clone()).or_insert(0);
        let exp = *count;
        *count = count.saturating_add(1);
        let wait = self.base.as_secs_f64() * 2f64.powi(exp.min(1024) as i32);
        Duration::try_from_secs_f64(wait).map_or(self.max, |w| w.min(self.max))
    }

    fn forget(&self, item: &T) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.get(item).copied().unwrap_or(0)
    }
}

/// A token bucket over every item (upstream's `BucketRateLimiter` over
/// `rate.Limiter`): `qps` tokens a second, at most `burst` saved up.
pub struct BucketRateLimiter {
    qps: f64,
    burst: f64,
    /// Tokens left (negative: owed) as of an instant.
    tokens: Mutex<(f64, Instant)>,
}

impl BucketRateLimiter {
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst);
        BucketRateLimiter {
            qps,
            burst,
            tokens: Mutex::new((burst, Instant::now())),
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(tokens.1).as_secs_f64() * self.qps;
        let left = (tokens.0 + refill).min(self.burst) - 1.0;
        *tokens = (left, now);
        if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.qps)
        }
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The longest wait of several limiters.
pub struct MaxOfRateLimiter<T>(pub Vec<Box<dyn RateLimiter<T>>>);

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let waits = self.0.iter().map(|l| l.when(item));
        waits.max().unwrap_or_default()
    }

    fn forget(&self, item: &T) {
        self.0.iter().for_each(|l| l.forget(item));
    }

    fn num_requeues(&self, item: &T) -> u32 {
        let counts = self.0.iter().map(|l| l.num_requeues(item));
        counts.max().unwrap_or(0)
    }
}

/// Upstream's `DefaultControllerRateLimiter`: per item 5 ms doubling to
/// 1000 s, overall 10 a second with bursts of 100.
pub fn default_controller_rate_limiter<T: Eq + Hash + Clone + Send + 'static>(
) -> MaxOfRateLimiter<T> {
    MaxOfRateLimiter(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_failures_double_up_to_the_cap_until_forgotten() {
        let l = ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1),
        );
        let waits: Vec<u128> = (0..10).map(|_| l.when(&"a").as_millis()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert_eq!(l.when(&"b"), Duration::from_millis(5));
        assert_eq!(l.num_requeues(&"a"), 10);
        l.forget(&"a");
        assert_eq!(l.num_requeues(&"a"), 0);
        assert_eq!(l.when(&"a"), Duration::from_millis(5));
        // Thousands of failures stay at the cap.
        (0..5000).for_each(|_| {
            l.when(&"c");
        });
        assert_eq!(l.when(&"c"), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_spends_its_burst_then_paces() {
        let l = BucketRateLimiter::new(10.0, 3);
        let when = |l: &BucketRateLimiter| RateLimiter::<&str>::when(l, &"x");
        for _ in 0..3 {
            assert_eq!(when(&l), Duration::ZERO);
        }
        assert_eq!(when(&l).as_millis(), 100);
        assert_eq!(when(&l).as_millis(), 200);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(when(&l), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_limiter_takes_the_longer_wait() {
        let l = default_controller_rate_limiter::<String>();
        let a = "a".to_owned();
        assert_eq!(l.when(&a), Duration::from_millis(5));
        assert_eq!(l.when(&a), Duration::from_millis(10));
        assert_eq!(l.num_requeues(&a), 2);
        // The bucket (100 saved) owes after 100 more: 0.1 s per item.
        for i in 0..98 {
            l.when(&i.to_string());
        }
        assert_eq!(l.when(&"z".to_owned()), Duration::from_millis(100));
    }
}
