//! A small seeded generator for chaos tests and soaks.

/// xorshift64* (Vigna): a seed names a sequence, the same on every machine. Not for
/// anything but choosing what a test does next.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    /// The generator of `seed` (0 is taken as 1: xorshift needs a bit set).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_names_a_sequence() {
        let run = |seed| {
            let mut rng = SeededRng::new(seed);
            (0..8).map(|_| rng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(run(46), run(46));
        assert_ne!(run(46), run(7));
        assert_eq!(SeededRng::new(0).next_u64(), SeededRng::new(1).next_u64());
    }

    #[test]
    fn a_shuffle_keeps_every_item_and_is_seeded() {
        let shuffled = |seed| {
            let mut items: Vec<u32> = (0..10).collect();
            SeededRng::new(seed).shuffle(&mut items);
            items
        };
        let mut sorted = shuffled(3);
        assert_ne!(sorted, (0..10).collect::<Vec<_>>());
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_eq!(shuffled(3), shuffled(3));
    }
}
