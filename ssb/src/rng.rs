//! The generator's random numbers: a counter-based stream per (seed, stream, row), so every
//! value depends only on the seed and the row, never on chunking or thread count.

/// What a stream generates (part of its seed, so streams are independent).
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub(crate) enum Stream {
    /// One order and its lines.
    Order = 1,
    /// One part.
    Part = 2,
    /// One supplier.
    Supplier = 3,
    /// One customer.
    Customer = 4,
    /// Text that only the `.tbl` writer needs (names, addresses, phones).
    Text = 5,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finalizer: a bijective 64-bit mixer.
const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 sequence started from a hash of (seed, stream, row).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// The stream of `row` of `stream` under `seed`.
    pub(crate) fn new(seed: u64, stream: Stream, row: u64) -> Rng {
        let base = mix64(seed ^ mix64((stream as u64).wrapping_mul(GOLDEN)));
        Rng(mix64(base ^ row.wrapping_mul(GOLDEN)))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix64(self.0)
    }

    /// Uniform in `0..n` (multiply-shift on 32 random bits; bias below n / 2^32).
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn between(&mut self, lo: i32, hi: i32) -> i32 {
        lo + self.below((hi - lo + 1) as u32) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_and_independent_streams() {
        let mut counts = [0u32; 7];
        for row in 0..70_000 {
            counts[Rng::new(9, Stream::Order, row).below(7) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
        let a: Vec<u32> = (0..8)
            .map(|r| Rng::new(1, Stream::Part, r).below(1000))
            .collect();
        let b: Vec<u32> = (0..8)
            .map(|r| Rng::new(1, Stream::Supplier, r).below(1000))
            .collect();
        let c: Vec<u32> = (0..8)
            .map(|r| Rng::new(2, Stream::Part, r).below(1000))
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
        let mut r = Rng::new(3, Stream::Text, 0);
        assert!(
            (0..1000)
                .map(|_| r.between(30, 90))
                .all(|v| (30..=90).contains(&v))
        );
    }
}
