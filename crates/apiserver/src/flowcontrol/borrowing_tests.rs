//! The allocation algorithm against numbers worked out by hand from
//! upstream's algorithm.

use super::*;

fn level(nominal: usize, lower: usize, upper: usize, hwm: usize, smoothed: f64) -> LevelSeats {
    LevelSeats {
        exempt: false,
        nominal,
        lower,
        upper,
        current: nominal,
        demand: SeatDemandStats {
            high_watermark: hwm,
            smoothed,
            ..Default::default()
        },
    }
}

fn exempt(hwm: usize) -> LevelSeats {
    LevelSeats {
        exempt: true,
        ..level(0, 0, 0, hwm, 0.0)
    }
}

#[test]
fn unbounded_targets_scale_by_one_fraction() {
    let items = [
        AllocItem {
            target: 10.0,
            lower: 5.0,
            upper: 40.0,
        },
        AllocItem {
            target: 30.0,
            lower: 0.0,
            upper: 90.0,
        },
    ];
    let (allocs, fair) = compute_allocation(60, &items).unwrap();
    assert_eq!(allocs, [15.0, 45.0]);
    assert_eq!(fair, 1.5);
}

#[test]
fn bounds_stop_classes_and_the_rest_share_the_remainder() {
    let items = [
        AllocItem {
            target: 10.0,
            lower: 5.0,
            upper: 12.0,
        },
        AllocItem {
            target: 10.0,
            lower: 2.0,
            upper: 100.0,
        },
    ];
    let (allocs, fair) = compute_allocation(40, &items).unwrap();
    assert!((fair - 2.8).abs() < 1e-9, "{fair}");
    assert!((allocs[0] - 12.0).abs() < 1e-9);
    assert!((allocs[1] - 28.0).abs() < 1e-9);
}

#[test]
fn impossible_problems_are_errors() {
    let item = |lower, upper| AllocItem {
        target: lower,
        lower,
        upper,
    };
    assert_eq!(
        compute_allocation(5, &[item(3.0, 4.0), item(3.0, 4.0)]),
        Err(AllocError::LowerBoundsTooHigh(6.0, 5))
    );
    assert_eq!(
        compute_allocation(9, &[item(3.0, 4.0), item(3.0, 4.0)]),
        Err(AllocError::UpperBoundsTooLow(8.0, 9))
    );
    // Exactly the lower bounds: no room to move.
    assert_eq!(
        compute_allocation(6, &[item(3.0, 4.0), item(3.0, 4.0)]),
        Ok((vec![3.0, 3.0], 1.0))
    );
}

/// Upstream's bootstrap levels at 600 server seats, all idle: nominal
/// seats sum to 602, lower limits to 258, so each level gets its lower
/// limit times 602/258.
#[test]
fn idle_bootstrap_levels_share_in_proportion_to_their_lower_limits() {
    // (nominal, lendable%) of system, node-high, leader-election,
    // workload-high, workload-low, global-default, catch-all.
    let configured = [
        (74, 33),
        (98, 25),
        (25, 0),
        (98, 50),
        (245, 90),
        (49, 50),
        (13, 0),
    ];
    let mut levels: Vec<LevelSeats> = configured
        .iter()
        .map(|&(nominal, lendable)| {
            let lendable = (nominal as f64 * lendable as f64 / 100.0).round() as usize;
            level(nominal, nominal - lendable, nominal + 600, 0, 0.0)
        })
        .collect();
    levels.push(exempt(0));
    let lowers: Vec<usize> = levels.iter().map(|l| l.lower).collect();
    assert_eq!(lowers, [50, 73, 25, 49, 24, 24, 13, 0]);
    let allocation = allocate(602, &levels).unwrap();
    assert_eq!(allocation.limits, [117, 170, 58, 114, 56, 56, 30, 0]);
    assert!((allocation.fair_frac - 602.0 / 258.0).abs() < 1e-9);
    assert_eq!(allocation.targets[0], 50.0);
}

#[test]
fn a_busy_level_borrows_what_an_idle_one_lends() {
    let busy = level(10, 5, 20, 15, 15.0);
    let idle = level(10, 5, 20, 0, 0.0);
    let allocation = allocate(20, &[busy, idle]).unwrap();
    assert_eq!(allocation.limits, [15, 5]);
    assert_eq!(allocation.targets, [15.0, 5.0]);
    assert_eq!(allocation.fair_frac, 1.0);
}

#[test]
fn exempt_use_shrinks_what_the_others_get() {
    let busy = level(10, 5, 20, 15, 15.0);
    let idle = level(10, 5, 20, 0, 0.0);
    // 12 seats left over floors of 15 and lower limits of 10: each level
    // gets its lower limit plus 40% of its floor above it.
    let allocation = allocate(20, &[busy, idle, exempt(8)]).unwrap();
    assert_eq!(allocation.limits, [7, 5, 8]);
    assert_eq!(allocation.fair_frac, 0.0);
    // Less left than the lower limits: they get their lower limits.
    let allocation = allocate(20, &[busy, idle, exempt(12)]).unwrap();
    assert_eq!(allocation.limits, [5, 5, 12]);
}

#[test]
fn demand_statistics_follow_upstream() {
    let t0 = Instant::now();
    let mut integrator = Integrator::new(t0);
    integrator.set(0.0, t0);
    integrator.set(4.0, t0 + Duration::from_secs(2));
    let results = integrator.reset(t0 + Duration::from_secs(4));
    assert_eq!(results.duration, 4.0);
    assert_eq!(results.average, 2.0);
    assert_eq!(results.deviation, 2.0);
    assert_eq!(results.max, 4.0);
    let mut stats = SeatDemandStats::default();
    stats.update(results);
    assert_eq!(
        stats,
        SeatDemandStats {
            average: 2.0,
            stddev: 2.0,
            high_watermark: 4,
            smoothed: 4.0
        }
    );
    // Demand falls to nothing: the high watermark still remembers the
    // period's start, and the smoothed demand decays.
    integrator.set(0.0, t0 + Duration::from_secs(4));
    stats.update(integrator.reset(t0 + Duration::from_secs(14)));
    assert_eq!(stats.high_watermark, 4);
    assert_eq!(stats.average, 0.0);
    assert!((stats.smoothed - 0.977 * 4.0).abs() < 1e-9);
    // Nothing integrated: only the watermark moves.
    let before = stats;
    stats.update(integrator.reset(t0 + Duration::from_secs(14)));
    assert_eq!(stats.high_watermark, 0);
    assert_eq!(stats.smoothed, before.smoothed);
}
