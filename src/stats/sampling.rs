//! The seeded random stream shared by the bootstrap and the Monte Carlo permutation test:
//! ChaCha20 (`rand_chacha`, a portable, documented stream) and one fixed rule for turning its
//! 32-bit words into indices. Results are therefore reproducible from the recorded seed on any
//! platform and do not depend on how `rand`'s own range sampling may change between versions.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The generator every seeded procedure here uses: `ChaCha20Rng::seed_from_u64(seed)`.
pub fn seeded_rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// A uniform integer in `0..bound` (`bound ≥ 1`) by Lemire's multiply-and-reject method
/// (Lemire, "Fast random integer generation in an interval", ACM TOMACS 2019) on 32-bit words:
/// unbiased, and usually one word per draw.
#[inline]
pub(crate) fn uniform_below(rng: &mut ChaCha20Rng, bound: u32) -> u32 {
    debug_assert!(bound > 0);
    let mut product = u64::from(rng.next_u32()) * u64::from(bound);
    let mut low = product as u32;
    if low < bound {
        let threshold = bound.wrapping_neg() % bound;
        while low < threshold {
            product = u64::from(rng.next_u32()) * u64::from(bound);
            low = product as u32;
        }
    }
    (product >> 32) as u32
}

/// Shuffle `items` in place by Fisher–Yates on the seeded stream ([`seeded_rng`],
/// [`uniform_below`]): the same seed gives the same order on every platform.
pub fn seeded_shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = seeded_rng(seed);
    for i in (1..items.len()).rev() {
        let bound = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let j = uniform_below(&mut rng, bound) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_draws_in_range() {
        let mut a = seeded_rng(7);
        let mut b = seeded_rng(7);
        let draws_a: Vec<u32> = (0..1000).map(|_| uniform_below(&mut a, 10)).collect();
        let draws_b: Vec<u32> = (0..1000).map(|_| uniform_below(&mut b, 10)).collect();
        assert_eq!(draws_a, draws_b);
        assert!(draws_a.iter().all(|&x| x < 10));
        let mut counts = [0u32; 10];
        for x in draws_a {
            counts[x as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (60..=140).contains(&c)),
            "{counts:?}"
        );
        let mut one = seeded_rng(1);
        assert!((0..100).all(|_| uniform_below(&mut one, 1) == 0));
        let mut order: Vec<u32> = (0..20).collect();
        seeded_shuffle(&mut order, 5);
        let mut again: Vec<u32> = (0..20).collect();
        seeded_shuffle(&mut again, 5);
        assert_eq!(order, again);
        assert_ne!(order, (0..20).collect::<Vec<_>>());
        order.sort();
        assert_eq!(order, (0..20).collect::<Vec<_>>());
        let mut c = seeded_rng(8);
        assert_ne!(
            (0..8).map(|_| c.next_u32()).collect::<Vec<_>>(),
            (0..8).map(|_| seeded_rng(7).next_u32()).collect::<Vec<_>>()
        );
    }
}
