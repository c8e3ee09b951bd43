//! The `Retry-After` of rejected requests (upstream's
//! `droppedRequestsTracker`): one second per level to start with, doubled
//! (up to 32) while a level drops at least three requests per second of
//! the current value, and lowered by one when it drops fewer than that
//! value over the last period.

use std::collections::HashMap;
use std::sync::Mutex;

const MAX_RETRY_AFTER: i64 = 32;

/// One level's recent drops.
#[derive(Debug)]
struct LevelDrops {
    /// (unix second, drops in it), oldest first.
    history: Vec<(i64, i64)>,
    current_second: i64,
    current_count: i64,
    retry_after: i64,
    raised_at: i64,
}

impl Default for LevelDrops {
    fn default() -> Self {
        LevelDrops {
            history: Vec::new(),
            current_second: 0,
            current_count: 0,
            retry_after: 1,
            raised_at: 0,
        }
    }
}

impl LevelDrops {
    fn record(&mut self, second: i64) {
        if self.current_second == second {
            self.current_count += 1;
            return;
        }
        self.history.push((self.current_second, self.current_count));
        let kept = (2 * self.retry_after).min(MAX_RETRY_AFTER);
        let stale = self
            .history
            .iter()
            .take_while(|(t, _)| second - t > kept)
            .count();
        self.history.drain(..stale);
        self.current_second = second;
        self.current_count = 1;
        self.adjust(second);
    }

    fn adjust(&mut self, second: i64) {
        let dropped: i64 = self
            .history
            .iter()
            .rev()
            .take_while(|(t, _)| second - t <= self.retry_after)
            .filter(|(t, _)| *t < second)
            .map(|(_, n)| n)
            .sum();
        if second - self.raised_at >= self.retry_after && dropped >= 3 * self.retry_after {
            self.retry_after = (self.retry_after * 2).min(MAX_RETRY_AFTER);
            self.raised_at = second;
        } else if dropped < self.retry_after && self.retry_after > 1 {
            self.retry_after -= 1;
        }
    }
}

/// Drops by priority level.
#[derive(Debug, Default)]
pub struct DroppedRequests {
    levels: Mutex<HashMap<String, LevelDrops>>,
}

impl DroppedRequests {
    /// Notes a request of `level` dropped at unix second `second` and
    /// returns the `Retry-After` (seconds) to answer it with.
    pub fn record(&self, level: &str, second: i64) -> i64 {
        let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let drops = match levels.get_mut(level) {
            Some(drops) => drops,
            None => levels.entry(level.to_owned()).or_default(),
        };
        drops.record(second);
        drops.retry_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_grows_under_sustained_drops_and_falls_back() {
        let dropped = DroppedRequests::default();
        let at = |second, times| {
            (0..times)
                .map(|_| dropped.record("pl", second))
                .last()
                .unwrap_or(0)
        };
        assert_eq!(at(100, 3), 1);
        // Three drops in the last second: double.
        assert_eq!(at(101, 1), 2);
        // Four drops over the last two seconds, but raised a second ago.
        assert_eq!(at(102, 1), 2);
        // Quiet since: back down by one.
        assert_eq!(at(110, 1), 1);
        // Other levels keep their own count.
        assert_eq!(dropped.record("other", 110), 1);
    }

    #[test]
    fn retry_after_is_capped() {
        let dropped = DroppedRequests::default();
        let mut last = 0;
        for second in 1000..1100 {
            for _ in 0..200 {
                last = dropped.record("pl", second);
            }
        }
        assert_eq!(last, MAX_RETRY_AFTER);
    }
}
