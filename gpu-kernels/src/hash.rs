//! Hash functions, slot arithmetic and table layouts shared by the hash-table kernels, the host
//! API and the CPU hash join (which therefore place and find keys exactly as the GPU does).
//!
//! Two table forms, both flat arrays of slots without pointers (thesis §3.6.3):
//!
//! * **Open addressing with linear probing.** A key starts at [`home_slot`] (Fibonacci
//!   hashing, [`hash32`], reduced to any capacity with a multiply-high) and walks [`next_slot`] until it
//!   finds an empty slot (build) or its key (probe). An empty slot holds [`EMPTY_KEY`], which is
//!   therefore not a valid key; the host rejects it. A table always keeps at least one slot empty
//!   so that every walk ends.
//! * **Perfect hashing** for dense keys (Crystal's SSB dimension tables): the slot of `key` is
//!   `key - min` ([`perfect_slot`]) in a table of `max - min + 1` slots; a probe is one load.
//!   Slots of absent keys hold [`EMPTY_KEY`], so a probe still compares the stored key.
//!
//! Key + payload tables store a [`Slot`] (key and payload interleaved, 8-byte aligned: one
//! probe of a `u32` key with a `u32` payload is one 8-byte access); key-only tables store keys.
//!
//! Keys are stored as their bits ([`HashKey::bits`]): 32-bit keys (`u32`, `i32`) in `u32` key
//! words, where the empty slot is [`EMPTY_KEY`] (so the `i32` key `-1`, whose bits those are, is
//! reserved as well), and `u64` keys in `u64` key words, where it is [`EMPTY_KEY64`]
//! (`u64::MAX`). 64-bit keys hash with [`hash64`] and [`home_slot64`]; [`KeyBits`] picks the
//! functions of a key word type. Perfect hashing takes 32-bit keys only: `key - min` on the
//! bits, wrapping, is the key's offset in `i32` order as much as in `u32` order.

/// The key value that marks an empty slot (and may therefore not be inserted).
pub const EMPTY_KEY: u32 = u32::MAX;

/// The key value that marks an empty slot of a table of 64-bit keys (and may therefore not be
/// inserted).
pub const EMPTY_KEY64: u64 = u64::MAX;

/// Largest fill (rows / capacity) the host accepts for a linear-probing table: beyond it the
/// expected probe length grows quickly (an unsuccessful search at fill `a` reads about
/// `(1 + 1 / (1 - a)^2) / 2` slots).
pub const MAX_FILL: f64 = 0.9;

/// Fill the host uses when the caller does not choose one (the thesis' 50%).
pub const DEFAULT_FILL: f64 = 0.5;

/// The stored form of keys: `u32` key words (32-bit keys) or `u64` key words (64-bit keys).
pub trait KeyBits: Copy + PartialEq + Default + Into<u64> {
    /// The word of an empty slot ([`EMPTY_KEY`] or [`EMPTY_KEY64`]).
    const EMPTY: Self;
    /// First slot a key probes in a table of `capacity` slots ([`home_slot`] or
    /// [`home_slot64`]).
    fn home_slot(self, capacity: u32) -> u32;
}

impl KeyBits for u32 {
    const EMPTY: Self = EMPTY_KEY;
    #[inline(always)]
    fn home_slot(self, capacity: u32) -> u32 {
        home_slot(self, capacity)
    }
}

impl KeyBits for u64 {
    const EMPTY: Self = EMPTY_KEY64;
    #[inline(always)]
    fn home_slot(self, capacity: u32) -> u32 {
        home_slot64(self, capacity)
    }
}

/// Keys of hash tables, compared bitwise: `u32` and `i32` as `u32` words, `u64` as `u64` words.
pub trait HashKey: Copy + PartialEq + Default {
    /// The stored word type.
    type Bits: KeyBits;
    /// The key's bits (what is hashed and stored).
    fn bits(self) -> Self::Bits;
    /// The key with these bits.
    fn from_bits(bits: Self::Bits) -> Self;
}

impl HashKey for u32 {
    type Bits = u32;
    #[inline(always)]
    fn bits(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        bits
    }
}

impl HashKey for i32 {
    type Bits = u32;
    #[inline(always)]
    fn bits(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        bits as i32
    }
}

impl HashKey for u64 {
    type Bits = u64;
    #[inline(always)]
    fn bits(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        bits
    }
}

/// One slot of a key + payload table: key and payload side by side, read in one access (8
/// bytes with `u32` key words, 16 with `u64` ones).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot<V, K = u32> {
    /// The key's bits, [`KeyBits::EMPTY`] when the slot is free.
    pub key: K,
    /// The payload.
    pub value: V,
}

impl<V, K: KeyBits> Slot<V, K> {
    /// Whether the slot holds no key.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.key == K::EMPTY
    }
}

/// Fibonacci (multiplicative) hashing, Knuth's: the key times `2^32 / phi`, wrapping. It is a
/// bijection on `u32` (the factor is odd), and [`home_slot`] keeps its high bits, which
/// depend on every key bit. Consecutive keys land golden-ratio fractions of the table apart,
/// so a range of dense keys (surrogate keys, the usual build side) fills a table at 50% with
/// almost no collisions: a probe is one slot, where a uniform hash such as murmur3 displaces a
/// quarter of the keys and a warp's longest walk over 128 items is ~9 slots, which every lane
/// of a lock-step probe waits for. Random keys are displaced as by a uniform hash, and strided
/// keys far less; it costs one multiply against murmur3's eight instructions.
#[inline(always)]
pub const fn hash32(key: u32) -> u32 {
    key.wrapping_mul(0x9e37_79b9)
}

/// First slot a key probes in a table of `capacity` slots (`capacity > 0`): the hash scaled to
/// `[0, capacity)` with a multiply-high, so any capacity works, not only powers of two.
#[inline(always)]
pub const fn home_slot(key: u32, capacity: u32) -> u32 {
    ((hash32(key) as u64 * capacity as u64) >> 32) as u32
}

/// [`hash32`] for 64-bit keys: the key times `2^64 / phi`, wrapping (a bijection on `u64`).
/// [`home_slot64`] keeps its high 32 bits, which depend on every key bit, so keys that differ
/// only above bit 32 spread as well as dense ones.
#[inline(always)]
pub const fn hash64(key: u64) -> u64 {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// [`home_slot`] for 64-bit keys: the high 32 bits of [`hash64`] scaled to `[0, capacity)`.
#[inline(always)]
pub const fn home_slot64(key: u64, capacity: u32) -> u32 {
    (((hash64(key) >> 32) * capacity as u64) >> 32) as u32
}

/// The slot after `slot` in a linear-probing walk, wrapping at the end of the table.
#[inline(always)]
pub const fn next_slot(slot: u32, capacity: u32) -> u32 {
    let s = slot + 1;
    if s == capacity { 0 } else { s }
}

/// Slot of `key` in a perfect-hash table over keys `min ..= min + len - 1`, or `None` when the
/// key lies outside (wrapping subtraction: keys below `min` become large and fail the bound).
#[inline(always)]
pub const fn perfect_slot(key: u32, min: u32, len: u32) -> Option<u32> {
    match perfect_pos(key, min, len) {
        (s, true) => Some(s),
        _ => None,
    }
}

/// [`perfect_slot`] as `(slot, inside)`, for branch-free probes: the slot is meaningful only
/// when `inside` (the `Option` form grows the probe kernels: more instructions and more
/// registers).
#[inline(always)]
pub const fn perfect_pos(key: u32, min: u32, len: u32) -> (u32, bool) {
    let s = key.wrapping_sub(min);
    (s, s < len)
}

/// [`perfect_slot`] with every key outside the table sent to slot `len`: for a table with one
/// slot more than its keys, whose extra slot reads as "absent", a probe needs neither a bounds
/// test nor a branch around its load (one `VIADDMNMX` in SASS).
#[inline(always)]
pub const fn perfect_clamped(key: u32, min: u32, len: u32) -> u32 {
    let s = key.wrapping_sub(min);
    if s < len { s } else { len }
}

/// Slots needed to hold `rows` keys at fill `fill` (at least `rows + 1`, so one stays empty),
/// or `None` when that exceeds `u32::MAX` slots.
pub fn capacity_for(rows: u64, fill: f64) -> Option<u32> {
    let q = rows as f64 / fill;
    let c = (q as u64 + ((q as u64 as f64) < q) as u64).max(rows + 1); // ceil without std
    u32::try_from(c).ok()
}

/// What a build reports to the host, in device memory (zeroed before the build): flags the
/// kernels raise with atomics (0 or 1) and the rows inserted.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct BuildState {
    /// Two inserted keys were equal (the table is not unique, so probes must walk on after a
    /// match to find every build row).
    pub duplicate: u32,
    /// An insert found no free slot (linear probing) or a key outside the range (perfect
    /// hashing); the table is then incomplete.
    pub overflow: u32,
    /// A key whose bits are the empty slot's ([`KeyBits::EMPTY`]) was offered (and skipped).
    pub sentinel: u32,
    /// Rows inserted (the build's flagged rows).
    pub inserted: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn hash_is_a_bijection_on_a_sample() {
        // Multiplication by an odd factor is invertible; check injectivity on a dense range.
        let mut v: Vec<u32> = (0..1u32 << 16).map(hash32).collect();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 1 << 16);
        assert_eq!(hash32(0), 0);
        assert_ne!(hash32(1), 1);
    }

    #[test]
    fn home_slot_is_in_range_for_any_capacity() {
        for cap in [1u32, 2, 3, 7, 1000, 1 << 20, u32::MAX] {
            for k in [0u32, 1, 2, 12345, EMPTY_KEY - 1, u32::MAX / 2] {
                assert!(home_slot(k, cap) < cap, "key {k} capacity {cap}");
            }
        }
        assert_eq!(home_slot(123, 1), 0);
    }

    #[test]
    fn dense_keys_spread_evenly() {
        // 2^16 dense keys into 2^10 slots: every slot gets 64 on average; a uniform hash keeps
        // the fullest slot well below twice that.
        let cap = 1024u32;
        let mut counts = vec![0u32; cap as usize];
        for k in 0..1u32 << 16 {
            counts[home_slot(k, cap) as usize] += 1;
        }
        let max = *counts.iter().max().unwrap();
        let min = *counts.iter().min().unwrap();
        assert!(max < 110 && min > 25, "min {min} max {max}");
    }

    /// A sequential model of the build: inserts `keys` in order into a linear-probing table of
    /// `cap` slots with the shared slot maths; the table and each key's slot displacement.
    fn build(keys: impl Iterator<Item = u32>, cap: u32) -> (Vec<u32>, Vec<u32>) {
        let mut table = vec![EMPTY_KEY; cap as usize];
        let d = keys
            .map(|k| {
                let (mut s, mut d) = (home_slot(k, cap), 0);
                while table[s as usize] != EMPTY_KEY {
                    s = next_slot(s, cap);
                    d += 1;
                }
                table[s as usize] = k;
                d
            })
            .collect();
        (table, d)
    }

    fn displacements(keys: impl Iterator<Item = u32>, cap: u32) -> Vec<u32> {
        build(keys, cap).1
    }

    #[test]
    fn dense_keys_rarely_collide_at_half_fill() {
        // The property the probe kernels' speed on surrogate keys rests on: a range of dense
        // keys at 50% fill leaves at most a few percent of them off their home slot (a uniform
        // hash leaves ~25%), for power-of-two and other capacities and any first key.
        for (rows, start) in [
            (512u32, 1u32),
            (4096, 1),
            (65536, 1),
            (5000, 583_981_819),
            (30_000, 7),
        ] {
            for cap in [2 * rows, 2 * rows + 3] {
                let d = displacements(start..start + rows, cap);
                let moved = d.iter().filter(|&&x| x > 0).count() as f64 / rows as f64;
                assert!(moved < 0.03, "rows {rows} start {start} cap {cap}: {moved}");
            }
        }
    }

    #[test]
    fn strided_and_random_keys_spread_like_a_uniform_hash() {
        // Mean displacement at 50% fill: ~0.5 for a uniform hash; strided keys must not
        // cluster (multiples of a power of two, and of the capacity itself).
        let cap = 1u32 << 14;
        let rows = cap / 2;
        let mut x = 0x2545_f491_u32;
        let random: Vec<u32> = (0..rows)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            })
            .collect();
        for (what, keys) in [
            ("random", random),
            ("stride 1024", (1..=rows).map(|i| i * 1024).collect()),
            ("stride cap", (1..=rows).map(|i| i * cap).collect()),
            ("stride 3", (1..=rows).map(|i| i * 3).collect()),
        ] {
            let d = displacements(keys.into_iter(), cap);
            let mean = d.iter().sum::<u32>() as f64 / d.len() as f64;
            assert!(mean < 1.0, "{what}: mean displacement {mean}");
        }
    }

    #[test]
    fn hash64_spreads_dense_and_high_keys() {
        for cap in [1u32, 2, 3, 7, 1000, 1 << 20, u32::MAX] {
            for k in [0u64, 1, 1 << 32, EMPTY_KEY64 - 1, u64::MAX / 2] {
                assert!(home_slot64(k, cap) < cap, "key {k} capacity {cap}");
            }
        }
        // Dense keys above 2^32, and keys that differ only in their high half, spread as a
        // uniform hash would (or better).
        let cap = 1u32 << 14;
        let rows = u64::from(cap / 2);
        for (what, keys) in [
            (
                "dense",
                (0..rows).map(|i| (5u64 << 32) + i).collect::<Vec<_>>(),
            ),
            ("high half", (0..rows).map(|i| i << 32).collect()),
            ("near max", (0..rows).map(|i| EMPTY_KEY64 - 1 - i).collect()),
        ] {
            let mut table = vec![EMPTY_KEY64; cap as usize];
            let mut total = 0u64;
            for k in keys {
                let mut s = home_slot64(k, cap);
                while table[s as usize] != EMPTY_KEY64 {
                    s = next_slot(s, cap);
                    total += 1;
                }
                table[s as usize] = k;
            }
            let mean = total as f64 / rows as f64;
            assert!(mean < 1.0, "{what}: mean displacement {mean}");
        }
        assert_eq!(<u64 as KeyBits>::EMPTY, u64::MAX);
        assert_eq!((-1i32).bits(), EMPTY_KEY);
    }

    #[test]
    fn perfect_slot_of_i32_bits_is_the_signed_offset() {
        // Wrapping subtraction of the bits gives `key - min` for keys in range and a value of
        // at least `len` for every other i32 key, negative ranges included.
        for (min, max) in [
            (-5i32, 5i32),
            (i32::MIN, i32::MIN + 3),
            (i32::MAX - 2, i32::MAX),
        ] {
            let len = (i64::from(max) - i64::from(min) + 1) as u32;
            for key in [
                i32::MIN,
                i32::MIN + 1,
                -6,
                -5,
                -1,
                0,
                5,
                6,
                i32::MAX - 3,
                i32::MAX,
            ] {
                let expected = (min..=max)
                    .contains(&key)
                    .then(|| (i64::from(key) - i64::from(min)) as u32);
                assert_eq!(perfect_slot(key.bits(), min.bits(), len), expected, "{key}");
            }
        }
    }

    #[test]
    fn next_slot_wraps() {
        assert_eq!(next_slot(0, 4), 1);
        assert_eq!(next_slot(3, 4), 0);
        assert_eq!(next_slot(0, 1), 0);
        assert_eq!(next_slot(u32::MAX - 1, u32::MAX), 0);
    }

    #[test]
    fn perfect_slot_bounds() {
        assert_eq!(perfect_slot(19920101, 19920101, 61131), Some(0));
        assert_eq!(perfect_slot(19981231, 19920101, 61131), Some(61130));
        assert_eq!(perfect_slot(19981232, 19920101, 61131), None);
        assert_eq!(perfect_slot(19920100, 19920101, 61131), None);
        assert_eq!(perfect_slot(0, 1, 10), None);
        assert_eq!(perfect_slot(u32::MAX, 0, u32::MAX), None);
    }

    #[test]
    fn perfect_clamped_sends_outside_keys_to_the_extra_slot() {
        assert_eq!(perfect_clamped(19920101, 19920101, 61131), 0);
        assert_eq!(perfect_clamped(19981231, 19920101, 61131), 61130);
        assert_eq!(perfect_clamped(19981232, 19920101, 61131), 61131);
        assert_eq!(perfect_clamped(19920100, 19920101, 61131), 61131);
        assert_eq!(perfect_clamped(0, 1, 10), 10);
    }

    #[test]
    fn capacity_keeps_a_slot_free() {
        assert_eq!(capacity_for(0, 0.5), Some(1));
        assert_eq!(capacity_for(1, 1.0), Some(2));
        assert_eq!(capacity_for(100, 0.5), Some(200));
        assert_eq!(capacity_for(3, 0.5), Some(6));
        assert_eq!(capacity_for(1 << 31, 0.5), None);
    }

    #[test]
    fn slot_is_one_8_byte_access() {
        assert_eq!(core::mem::size_of::<Slot<u32>>(), 8);
        assert_eq!(core::mem::align_of::<Slot<u32>>(), 8);
        assert_eq!(core::mem::size_of::<Slot<i32>>(), 8);
        assert_eq!(core::mem::size_of::<Slot<u32, u64>>(), 16);
        assert_eq!(core::mem::align_of::<Slot<u32, u64>>(), 8);
        assert!(
            Slot {
                key: EMPTY_KEY64,
                value: 0u32
            }
            .is_empty()
        );
        assert!(
            Slot {
                key: EMPTY_KEY,
                value: 0u32
            }
            .is_empty()
        );
    }

    #[test]
    fn linear_probing_finds_every_key_of_a_full_walk() {
        // A sequential model of build and probe with the shared slot maths.
        let cap = capacity_for(500, 0.9).unwrap();
        let keys: Vec<u32> = (0..500u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let (table, _) = build(keys.iter().copied(), cap);
        for &k in &keys {
            let mut s = home_slot(k, cap);
            while table[s as usize] != k {
                assert_ne!(table[s as usize], EMPTY_KEY, "key {k} lost");
                s = next_slot(s, cap);
            }
        }
    }
}
