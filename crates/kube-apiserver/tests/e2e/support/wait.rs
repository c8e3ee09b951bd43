//! Waiting for what the server does in the background.

use std::time::{Duration, Instant};

/// Polls `check` until it holds, failing the test after `timeout`.
pub fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
