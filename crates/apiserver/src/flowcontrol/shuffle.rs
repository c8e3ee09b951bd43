//! Shuffle sharding (upstream's `shufflesharding.Dealer`): a flow's hash
//! deals it a hand of distinct queues, so that flows rarely share all of
//! their queues with one another.

/// Deals `hand_size` distinct queues out of `count`, the flow's hash
/// picking each card among those left (upstream's shuffle sharding dealer).
pub fn deal(flow_hash: u64, hand_size: usize, count: usize) -> Vec<usize> {
    let mut remaining = flow_hash;
    let mut hand: Vec<usize> = Vec::with_capacity(hand_size);
    for left in (count.saturating_sub(hand_size.min(count)) + 1..=count).rev() {
        let mut card = (remaining % left as u64) as usize;
        remaining /= left as u64;
        // Count past the cards already dealt, as a real deck would.
        let mut taken = hand.clone();
        taken.sort_unstable();
        for t in taken {
            if card >= t {
                card += 1;
            }
        }
        hand.push(card);
    }
    hand
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_are_distinct_queues() {
        for flow in 0..200u64 {
            let hand = deal(flow.wrapping_mul(0x9e37_79b9_7f4a_7c15), 6, 64);
            assert_eq!(hand.len(), 6);
            assert!(hand.iter().all(|&q| q < 64));
            let mut unique = hand.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), 6, "{hand:?}");
        }
        assert_eq!(deal(7, 8, 3).len(), 3);
        // A hand of one is the hash modulo the queues.
        assert_eq!(deal(6, 1, 4), [2]);
    }
}
