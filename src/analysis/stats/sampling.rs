//! The seeded random stream shared by the bootstrap and the Monte Carlo permutation test:
//! ChaCha20 (`rand_chacha`, a portable, documented stream) and one fixed rule for turning its
//! 32-bit words into indices. Results are therefore reproducible from the recorded seed on any
//! platform and do not depend on how `rand`'s own range sampling may change between versions.

use std::sync::mpsc::{Receiver, Sender};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The generator every seeded procedure here uses: `ChaCha20Rng::seed_from_u64(seed)`.
pub(crate) fn seeded_rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// A source of the seeded stream's 32-bit words, in stream order.
pub(crate) trait Words {
    /// The next word.
    fn next_word(&mut self) -> u32;
}

impl Words for ChaCha20Rng {
    #[inline]
    fn next_word(&mut self) -> u32 {
        self.next_u32()
    }
}

/// The words of [`seeded_rng`]`(seed)`, generated ahead in chunks by other threads while they
/// are used (for long draws: generating the stream is most of a large bootstrap's cost). The
/// stream is addressable by position (`ChaCha20Rng::set_word_pos`), so chunk `i` is generated
/// by thread `i mod G` from its own position; the words are the stream's, in order, whoever
/// generates them.
pub(crate) struct PrefetchedWords {
    chunk: Vec<u32>,
    at: usize,
    /// Index of the next chunk.
    next: usize,
    /// Per generating thread: its full chunks, in stream order.
    full: Vec<Receiver<Vec<u32>>>,
    /// Per generating thread: used chunks back to it.
    used: Vec<Sender<Vec<u32>>>,
}

/// Words per chunk of [`PrefetchedWords`] (256 KiB).
const WORDS_PER_CHUNK: usize = 1 << 16;

/// Draws of at least this many words are worth generating threads (about 10 ms of stream).
pub(crate) const PREFETCH_MIN_WORDS: u64 = 1 << 20;

impl Words for PrefetchedWords {
    #[inline]
    fn next_word(&mut self) -> u32 {
        if self.at == self.chunk.len() {
            self.next_chunk();
        }
        let word = self.chunk[self.at];
        self.at += 1;
        word
    }
}

impl PrefetchedWords {
    #[cold]
    fn next_chunk(&mut self) {
        let generator = self.next % self.full.len();
        let full = self.full[generator]
            .recv()
            .expect("the generating threads run while their words are used");
        let used = std::mem::replace(&mut self.chunk, full);
        if !used.is_empty() {
            let previous = (self.next + self.full.len() - 1) % self.full.len();
            // A generating thread ends only after this end is dropped.
            let _ = self.used[previous].send(used);
        }
        self.next += 1;
        self.at = 0;
    }
}

/// The words of [`seeded_rng`]`(seed)`: drawn as used, or generated ahead by other threads.
// One value per bootstrap, on the stack: boxing the generator would cost an indirection a word.
#[allow(clippy::large_enum_variant)]
pub(crate) enum SeededWords {
    Drawn(ChaCha20Rng),
    Prefetched(PrefetchedWords),
}

impl Words for SeededWords {
    #[inline]
    fn next_word(&mut self) -> u32 {
        match self {
            SeededWords::Drawn(rng) => rng.next_u32(),
            SeededWords::Prefetched(words) => words.next_word(),
        }
    }
}

/// Run `draw` on the words of [`seeded_rng`]`(seed)`: generated ahead by other threads (one
/// per CPU, at most four) when `words` (about how many `draw` uses) is at least `prefetch_from`
/// and the machine has more than one CPU, else drawn as used. Either way `draw` sees the same
/// words.
pub(crate) fn with_seeded_words<R>(
    seed: u64,
    words: u64,
    prefetch_from: u64,
    draw: impl FnOnce(&mut SeededWords) -> R,
) -> R {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if words < prefetch_from || cpus < 2 {
        return draw(&mut SeededWords::Drawn(seeded_rng(seed)));
    }
    let generators = cpus.min(4);
    std::thread::scope(|scope| {
        let mut full = Vec::with_capacity(generators);
        let mut used = Vec::with_capacity(generators);
        for generator in 0..generators {
            let (full_sender, full_chunks) = std::sync::mpsc::sync_channel::<Vec<u32>>(1);
            let (used_sender, used_chunks) = std::sync::mpsc::channel::<Vec<u32>>();
            for _ in 0..2 {
                used_sender
                    .send(Vec::with_capacity(WORDS_PER_CHUNK))
                    .expect("receiver alive");
            }
            full.push(full_chunks);
            used.push(used_sender);
            scope.spawn(move || {
                let mut rng = seeded_rng(seed);
                let mut chunk_index = generator;
                // Ends when the words are no longer used (either channel closed).
                while let Ok(mut chunk) = used_chunks.recv() {
                    rng.set_word_pos((chunk_index * WORDS_PER_CHUNK) as u128);
                    chunk.clear();
                    chunk.extend(std::iter::repeat_with(|| rng.next_u32()).take(WORDS_PER_CHUNK));
                    if full_sender.send(chunk).is_err() {
                        return;
                    }
                    chunk_index += generators;
                }
            });
        }
        let mut words = SeededWords::Prefetched(PrefetchedWords {
            chunk: Vec::new(),
            at: 0,
            next: 0,
            full,
            used,
        });
        draw(&mut words)
    })
}

/// A uniform integer in `0..bound` (`bound ≥ 1`) by Lemire's multiply-and-reject method
/// (Lemire, "Fast random integer generation in an interval", ACM TOMACS 2019) on 32-bit words:
/// unbiased, and usually one word per draw.
#[inline]
pub(crate) fn uniform_below(words: &mut impl Words, bound: u32) -> u32 {
    debug_assert!(bound > 0);
    let mut product = u64::from(words.next_word()) * u64::from(bound);
    let mut low = product as u32;
    if low < bound {
        let threshold = bound.wrapping_neg() % bound;
        while low < threshold {
            product = u64::from(words.next_word()) * u64::from(bound);
            low = product as u32;
        }
    }
    (product >> 32) as u32
}

/// Shuffle `items` in place by Fisher–Yates on the seeded stream ([`seeded_rng`],
/// [`uniform_below`]): the same seed gives the same order on every platform.
pub(crate) fn seeded_shuffle<T>(items: &mut [T], seed: u64) {
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
    fn prefetched_words_are_the_stream_in_order() {
        let count = 3 * WORDS_PER_CHUNK + 17;
        let mut direct = seeded_rng(11);
        let expected: Vec<u32> = (0..count).map(|_| direct.next_u32()).collect();
        for prefetch_from in [0, u64::MAX] {
            let drawn: Vec<u32> = with_seeded_words(11, count as u64, prefetch_from, |words| {
                (0..count).map(|_| words.next_word()).collect()
            });
            assert!(drawn == expected, "prefetch from {prefetch_from} words");
        }
        // Using fewer words than generated ends the generating thread too.
        let few = with_seeded_words(11, 1 << 30, 0, |words| words.next_word());
        assert_eq!(few, expected[0]);
    }

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
