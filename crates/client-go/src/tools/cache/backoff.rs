//! The reflector's wait between failed attempts (upstream's exponential
//! backoff manager from `apimachinery/pkg/util/wait`, with the values
//! `NewReflector` gives it): 800 ms doubling to 30 s, each wait stretched
//! by a random fraction up to itself, back to 800 ms after two quiet
//! minutes.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    /// A failure this long after the previous one starts over.
    reset_after: Duration,
    next: Duration,
    last: Option<Instant>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            Duration::from_secs(120),
        )
    }
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration, reset_after: Duration) -> Self {
        Backoff {
            initial,
            max,
            reset_after,
            next: initial,
            last: None,
        }
    }

    /// How long to wait before the next attempt.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > self.reset_after)
        {
            self.next = self.initial;
        }
        self.last = Some(now);
        let base = self.next;
        self.next = (base * 2).min(self.max);
        base + base.mul_f64(rand::rng().random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn doubles_up_to_the_cap_with_jitter_and_resets_when_quiet() {
        let mut b = Backoff::default();
        let bases = [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000];
        for base in bases {
            let base = Duration::from_millis(base);
            let d = b.next_delay();
            assert!(d >= base && d < base * 2, "{d:?} for {base:?}");
        }
        tokio::time::advance(Duration::from_secs(121)).await;
        assert!(b.next_delay() < Duration::from_millis(1600));
    }
}
