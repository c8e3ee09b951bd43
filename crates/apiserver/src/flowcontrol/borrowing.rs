//! Borrowing of seats between priority levels (upstream's `conc_alloc.go`
//! and `updateBorrowingLocked`): every adjustment period each level's seat
//! demand (seats in use plus seats waiting, integrated over time) sets the
//! least it keeps, and the server's seats are shared out in proportion to
//! smoothed demand, within each level's lower limit (nominal less
//! lendable) and upper limit (nominal plus borrowing limit).

use std::time::Duration;

use tokio::time::Instant;

/// Upstream's period between re-allocations.
pub const ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);
/// Decay of smoothed demand per period (a half-life of five minutes).
const SMOOTHING: f64 = 0.977;
/// Targets below this count as this, so that none divides by zero.
const MIN_TARGET: f64 = 0.001;
const EPSILON: f64 = 0.000_000_1;

/// One class to allocate to: its target and bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocItem {
    pub target: f64,
    pub lower: f64,
    pub upper: f64,
}

/// Why an allocation problem has no solution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllocError {
    #[error("lower bound {0} is negative")]
    NegativeLowerBound(usize),
    #[error("target {0} is below its lower bound")]
    TargetBelowLowerBound(usize),
    #[error("upper bound {0} is below its lower bound")]
    UpperBelowLower(usize),
    #[error("lower bounds sum to {0}, more than the required {1}")]
    LowerBoundsTooHigh(f64, usize),
    #[error("upper bounds sum to {0}, less than the required {1}")]
    UpperBoundsTooLow(f64, usize),
    #[error("ran out of bounds to consider")]
    OutOfBounds,
}

/// The allocation summing to `required` in which every class gets
/// `fair_frac` times its target unless a bound stops it, and that
/// fraction (upstream's `computeConcurrencyAllocation`).
pub fn compute_allocation(
    required: usize,
    items: &[AllocItem],
) -> Result<(Vec<f64>, f64), AllocError> {
    let required_f = required as f64;
    let (mut low_sum, mut high_sum, mut target_sum) = (0.0, 0.0, 0.0);
    let (mut lb_min, mut lb_max) = (f64::from(f32::MAX), 0.0f64);
    let (mut ub_min, mut ub_max) = (f64::from(f32::MAX), 0.0f64);
    let mut targets = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if item.lower < 0.0 {
            return Err(AllocError::NegativeLowerBound(i));
        }
        if item.target < item.lower {
            return Err(AllocError::TargetBelowLowerBound(i));
        }
        if item.upper < item.lower {
            return Err(AllocError::UpperBelowLower(i));
        }
        let target = item.target.max(MIN_TARGET);
        low_sum += item.lower;
        high_sum += item.upper;
        target_sum += target;
        let (rel_lower, rel_upper) = (item.lower / target, item.upper / target);
        (lb_min, lb_max) = (lb_min.min(rel_lower), lb_max.max(rel_lower));
        (ub_min, ub_max) = (ub_min.min(rel_upper), ub_max.max(rel_upper));
        targets.push(target);
    }
    if low_sum - required_f > EPSILON {
        return Err(AllocError::LowerBoundsTooHigh(low_sum, required));
    }
    if required_f - high_sum > EPSILON {
        return Err(AllocError::UpperBoundsTooLow(high_sum, required));
    }
    if required == 0 {
        return Ok((vec![0.0; items.len()], 0.0));
    }
    if low_sum - required_f > -EPSILON {
        return Ok((items.iter().map(|i| i.lower).collect(), lb_min));
    }
    if required_f - high_sum > -EPSILON {
        return Ok((items.iter().map(|i| i.upper).collect(), ub_max));
    }
    let fair = required_f / target_sum;
    let fair = if lb_max <= fair && fair <= ub_min {
        fair
    } else {
        bounded_fair_frac(required_f, low_sum, lb_min, items, &targets)?
    };
    let allocs = items
        .iter()
        .zip(&targets)
        .map(|(item, target)| (fair * target).min(item.upper).max(item.lower))
        .collect();
    Ok((allocs, fair))
}

/// Raises the fair fraction from the lowest relative lower bound, bound by
/// bound, until the allocations reach the required sum.
fn bounded_fair_frac(
    required: f64,
    low_sum: f64,
    lb_min: f64,
    items: &[AllocItem],
    targets: &[f64],
) -> Result<f64, AllocError> {
    // (relative bound, the item's target, whether it is a lower bound)
    let mut bounds: Vec<(f64, f64, bool)> = items
        .iter()
        .zip(targets)
        .flat_map(|(item, &t)| [(item.lower / t, t, true), (item.upper / t, t, false)])
        .collect();
    bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum = low_sum;
    let mut fair = lb_min;
    // The classes whose allocation moves with the fraction, and their
    // target sum; the deltas apply once the fraction passes a bound.
    let (mut sensitive, mut sensitive_targets) = (0i64, 0.0);
    let (mut delta_count, mut delta_targets) = (0i64, 0.0);
    let mut next = 0;
    while sum < required {
        let next_bound = loop {
            sensitive += delta_count;
            sensitive_targets += delta_targets;
            let &(bound, target, lower) = bounds.get(next).ok_or(AllocError::OutOfBounds)?;
            (delta_count, delta_targets) = if lower { (1, target) } else { (-1, -target) };
            next += 1;
            if bound > fair {
                break bound;
            }
        };
        if sensitive == 0 {
            fair = next_bound;
            continue;
        }
        let candidate = fair + (required - sum) / sensitive_targets;
        if candidate <= next_bound {
            fair = candidate;
            break;
        }
        sum += (next_bound - fair) * sensitive_targets;
        fair = next_bound;
    }
    Ok(fair)
}

/// Time-weighted statistics of a value over a period (upstream's
/// `Integrator`).
#[derive(Debug, Clone)]
pub struct Integrator {
    x: f64,
    last: Instant,
    elapsed: f64,
    integral_x: f64,
    integral_xx: f64,
    min: f64,
    max: f64,
}

/// What an [`Integrator`] saw over a period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntegratorResults {
    /// Seconds integrated.
    pub duration: f64,
    /// NaN when nothing was integrated.
    pub average: f64,
    pub deviation: f64,
    pub max: f64,
}

impl Integrator {
    pub fn new(now: Instant) -> Self {
        Integrator {
            x: 0.0,
            last: now,
            elapsed: 0.0,
            integral_x: 0.0,
            integral_xx: 0.0,
            min: 0.0,
            max: 0.0,
        }
    }

    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.elapsed += dt;
        self.integral_x += self.x * dt;
        self.integral_xx += self.x * self.x * dt;
    }

    pub fn set(&mut self, x: f64, now: Instant) {
        self.advance(now);
        self.x = x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The results up to now, starting a new period.
    pub fn reset(&mut self, now: Instant) -> IntegratorResults {
        self.advance(now);
        let (average, deviation) = if self.elapsed > 0.0 {
            let avg = self.integral_x / self.elapsed;
            let variance = self.integral_xx / self.elapsed - avg * avg;
            (
                avg,
                if variance >= 0.0 {
                    variance.sqrt()
                } else {
                    f64::NAN
                },
            )
        } else {
            (f64::NAN, f64::NAN)
        };
        let results = IntegratorResults {
            duration: self.elapsed,
            average,
            deviation,
            max: self.max,
        };
        (self.elapsed, self.integral_x, self.integral_xx) = (0.0, 0.0, 0.0);
        (self.min, self.max) = (self.x, self.x);
        results
    }
}

/// A level's seat demand over the last period, and smoothed over many.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeatDemandStats {
    pub average: f64,
    pub stddev: f64,
    pub high_watermark: usize,
    pub smoothed: f64,
}

impl SeatDemandStats {
    pub fn update(&mut self, obs: IntegratorResults) {
        self.high_watermark = obs.max.round().max(0.0) as usize;
        if obs.duration <= 0.0 {
            return;
        }
        let deviation = if obs.deviation.is_nan() {
            0.0
        } else {
            obs.deviation
        };
        self.average = obs.average;
        self.stddev = deviation;
        let envelope = obs.average + deviation;
        self.smoothed = envelope.max(SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * envelope);
    }
}

/// What re-allocation needs of a level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelSeats {
    pub exempt: bool,
    pub nominal: usize,
    /// Nominal less lendable.
    pub lower: usize,
    /// Nominal plus the borrowing limit.
    pub upper: usize,
    /// The limit in force now, kept when allocation fails.
    pub current: usize,
    pub demand: SeatDemandStats,
}

/// Each level's new limit and allocation target, and the fair fraction.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    pub limits: Vec<usize>,
    pub targets: Vec<f64>,
    pub fair_frac: f64,
}

/// Shares `nominal_sum` seats among `levels` (in order).
pub fn allocate(nominal_sum: usize, levels: &[LevelSeats]) -> Option<Allocation> {
    let mut items = Vec::with_capacity(levels.len());
    let mut floors = Vec::with_capacity(levels.len());
    let mut remaining = nominal_sum as i64;
    let (mut lower_sum, mut floor_sum) = (0i64, 0i64);
    for level in levels {
        let hwm = level.demand.high_watermark;
        if level.exempt {
            // The exempt level's use is simply taken off the top.
            let floor = level.lower.max(hwm);
            remaining -= floor as i64;
            floors.push(floor);
            continue;
        }
        // A level keeps at least what it used lately, up to its nominal.
        let floor = level.lower.max(level.nominal.min(hwm));
        floors.push(floor);
        items.push(AllocItem {
            lower: floor as f64,
            upper: level.upper as f64,
            target: (floor as f64).max(level.demand.smoothed),
        });
        lower_sum += level.lower as i64;
        floor_sum += floor as i64;
    }
    if items.is_empty() && nominal_sum > 0 {
        return None;
    }
    let (allocs, fair_frac) = if remaining <= floor_sum {
        (None, 0.0)
    } else {
        match compute_allocation(nominal_sum, &items) {
            Ok((allocs, fair)) => (Some(allocs), fair),
            Err(e) => {
                tracing::error!(error = %e, "unable to derive new concurrency limits");
                let current = levels.iter().filter(|l| !l.exempt);
                (Some(current.map(|l| l.current as f64).collect()), 0.0)
            }
        }
    };
    let share = if remaining > lower_sum && remaining <= floor_sum {
        (remaining - lower_sum) as f64 / (floor_sum - lower_sum) as f64
    } else {
        0.0
    };
    let mut limits = Vec::with_capacity(levels.len());
    let mut targets = Vec::with_capacity(levels.len());
    let mut item = 0;
    for (level, &floor) in levels.iter().zip(&floors) {
        if level.exempt {
            limits.push(floor);
            targets.push(floor as f64);
            continue;
        }
        let limit = match &allocs {
            Some(allocs) => allocs[item].round() as usize,
            None if remaining <= lower_sum => level.lower,
            None => level.lower + ((floor - level.lower) as f64 * share).round() as usize,
        };
        limits.push(limit);
        targets.push(items[item].target);
        item += 1;
    }
    Some(Allocation {
        limits,
        targets,
        fair_frac,
    })
}

#[cfg(test)]
#[path = "borrowing_tests.rs"]
mod tests;
