//! Radix keys: order-preserving maps from key types to unsigned bit patterns, shared by the
//! sorting kernels and the host (which checks them in unit tests and sorts with them on the CPU).
//!
//! Sorting the mapped bits as unsigned integers sorts the keys ascending; complementing the bits
//! sorts them descending. Floats sort as [`f32::total_cmp`] orders them: -NaN < -inf < ... <
//! -0.0 < +0.0 < ... < +inf < +NaN.

/// A key a radix sort can order, through its bits.
pub trait RadixKey: Copy {
    /// The unsigned bit pattern (`u32` or `u64`).
    type Bits: RadixBits;
    /// Order-preserving map to bits.
    fn to_bits(self) -> Self::Bits;
    /// Inverse of [`RadixKey::to_bits`].
    fn from_bits(bits: Self::Bits) -> Self;
    /// The key's memory representation (a bit cast: kernels move keys as raw words).
    fn into_raw(self) -> Self::Bits;
    /// Inverse of [`RadixKey::into_raw`].
    fn from_raw(raw: Self::Bits) -> Self;
    /// Order-preserving bits of the key whose memory representation is `raw`, complemented when
    /// `descending`.
    #[inline(always)]
    fn ordered(raw: Self::Bits, descending: bool) -> Self::Bits {
        let b = Self::from_raw(raw).to_bits();
        if descending { b.flip() } else { b }
    }
    /// Inverse of [`RadixKey::ordered`].
    #[inline(always)]
    fn unordered(bits: Self::Bits, descending: bool) -> Self::Bits {
        let b = if descending { bits.flip() } else { bits };
        Self::from_bits(b).into_raw()
    }
}

/// The unsigned words radix passes work on (`u32`, `u64`; convertible to and from the `u64`
/// ranks of top-k).
pub trait RadixBits: Copy + Eq + Ord + Default + Into<u64> + TryFrom<u64> {
    /// Bits in the word.
    const BITS: u32;
    /// `(self >> shift) & ((1 << width) - 1)`.
    fn digit(self, shift: u32, width: u32) -> u32;
    /// All bits complemented (turns an ascending order into a descending one).
    fn flip(self) -> Self;
}

impl RadixBits for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn digit(self, shift: u32, width: u32) -> u32 {
        (self >> shift) & ((1u32 << width) - 1)
    }
    #[inline(always)]
    fn flip(self) -> Self {
        !self
    }
}

impl RadixBits for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn digit(self, shift: u32, width: u32) -> u32 {
        ((self >> shift) as u32) & ((1u32 << width) - 1)
    }
    #[inline(always)]
    fn flip(self) -> Self {
        !self
    }
}

impl RadixKey for u32 {
    type Bits = u32;
    #[inline(always)]
    fn into_raw(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_raw(raw: u32) -> Self {
        raw
    }
    #[inline(always)]
    fn to_bits(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits(b: u32) -> Self {
        b
    }
}

impl RadixKey for u64 {
    type Bits = u64;
    #[inline(always)]
    fn into_raw(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_raw(raw: u64) -> Self {
        raw
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_bits(b: u64) -> Self {
        b
    }
}

impl RadixKey for i32 {
    type Bits = u32;
    #[inline(always)]
    fn into_raw(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_raw(raw: u32) -> Self {
        raw as i32
    }
    #[inline(always)]
    fn to_bits(self) -> u32 {
        (self as u32) ^ (1 << 31)
    }
    #[inline(always)]
    fn from_bits(b: u32) -> Self {
        (b ^ (1 << 31)) as i32
    }
}

impl RadixKey for i64 {
    type Bits = u64;
    #[inline(always)]
    fn into_raw(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_raw(raw: u64) -> Self {
        raw as i64
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
    #[inline(always)]
    fn from_bits(b: u64) -> Self {
        (b ^ (1 << 63)) as i64
    }
}

impl RadixKey for f32 {
    type Bits = u32;
    #[inline(always)]
    fn into_raw(self) -> u32 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_raw(raw: u32) -> Self {
        f32::from_bits(raw)
    }
    /// Negative floats: all bits flipped; others: the sign bit set.
    #[inline(always)]
    fn to_bits(self) -> u32 {
        let b = self.to_bits();
        b ^ (((b as i32 >> 31) as u32) | (1 << 31))
    }
    #[inline(always)]
    fn from_bits(b: u32) -> Self {
        let mask = ((!b as i32 >> 31) as u32) | (1 << 31);
        f32::from_bits(b ^ mask)
    }
}

impl RadixKey for f64 {
    type Bits = u64;
    #[inline(always)]
    fn into_raw(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_raw(raw: u64) -> Self {
        f64::from_bits(raw)
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        let b = self.to_bits();
        b ^ (((b as i64 >> 63) as u64) | (1 << 63))
    }
    #[inline(always)]
    fn from_bits(b: u64) -> Self {
        let mask = ((!b as i64 >> 63) as u64) | (1 << 63);
        f64::from_bits(b ^ mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn check_order<K: RadixKey + core::fmt::Debug>(
        mut v: Vec<K>,
        cmp: impl Fn(&K, &K) -> core::cmp::Ordering,
    ) where
        K::Bits: core::fmt::Debug,
    {
        v.sort_by(&cmp);
        for w in v.windows(2) {
            let (a, b) = (w[0].to_bits(), w[1].to_bits());
            assert_eq!(cmp(&w[0], &w[1]), a.cmp(&b), "{:?} vs {:?}", w[0], w[1]);
            assert!(a.flip() >= b.flip());
        }
        for &k in &v {
            assert_eq!(K::from_bits(k.to_bits()).to_bits(), k.to_bits());
            for desc in [false, true] {
                let o = K::ordered(k.into_raw(), desc);
                assert!(K::unordered(o, desc) == k.into_raw());
            }
        }
    }

    #[test]
    fn maps_preserve_order() {
        check_order(
            std::vec![0u32, 1, 7, u32::MAX, 1 << 31, (1 << 31) - 1],
            Ord::cmp,
        );
        check_order(
            std::vec![0i32, -1, 1, i32::MIN, i32::MAX, -77, 77],
            Ord::cmp,
        );
        check_order(std::vec![0i64, -1, 1, i64::MIN, i64::MAX], Ord::cmp);
        check_order(std::vec![0u64, 1, u64::MAX, 1 << 63], Ord::cmp);
        check_order(
            std::vec![
                0.0f32,
                -0.0,
                1.5,
                -1.5,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                -f32::NAN,
                f32::MIN_POSITIVE,
                -f32::MIN_POSITIVE,
                f32::MAX,
                f32::MIN
            ],
            f32::total_cmp,
        );
        check_order(
            std::vec![
                0.0f64,
                -0.0,
                2.5,
                -2.5,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                -f64::NAN
            ],
            f64::total_cmp,
        );
    }

    #[test]
    fn digits() {
        assert_eq!(0xabcd_1234u32.digit(8, 8), 0x12);
        assert_eq!(0xabcd_1234u32.digit(28, 4), 0xa);
        assert_eq!(0x1234_5678_9abc_def0u64.digit(56, 8), 0x12);
        assert_eq!(0x1234_5678_9abc_def0u64.digit(0, 11), 0x6f0);
    }
}
