//! Top-k: the `k` largest (or smallest) keys of a column with their row ids. This module holds
//! what the GPU operator and its CPU version ([`crate::cpu::top_k`]) share: the key types, the
//! order every implementation returns, and the checks made before any work. The GPU kernels
//! are not built yet.
//!
//! **Order.** Keys compare by [`TopKey::rank`]: integers by value, floats as
//! [`f32::total_cmp`] orders them, so `+NaN` is above `+inf` (the largest) and `-NaN` below
//! `-inf` (the smallest), and `-0.0` is below `+0.0`. A result lists its keys best first
//! (largest first for [`TopKOrder::Largest`]). **Ties**: among equal keys the smaller row id
//! ranks first, so where equal keys straddle the `k`-th place the result keeps the smallest
//! row ids. The result is therefore one exact list, the same for every implementation.
use crate::error::{Error, Result};
use crate::runtime::{DeviceItem, MAX_COLUMN_LEN};

mod bitonic;
pub use bitonic::{BitonicConfig, BitonicKey, BitonicTopK};

/// Which end of the order a top-k keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TopKOrder {
    /// The `k` largest keys, largest first.
    #[default]
    Largest,
    /// The `k` smallest keys, smallest first.
    Smallest,
}

/// Key types of top-k: `f32`, `f64`, `i32`, `u32`. Sealed through [`DeviceItem`].
pub trait TopKey: DeviceItem {
    /// A `u64` that orders keys as top-k does (see the module documentation): `a` ranks
    /// above `b` exactly when `a.rank() > b.rank()`, and equal ranks are equal keys.
    fn rank(self) -> u64;
}

impl TopKey for u32 {
    fn rank(self) -> u64 {
        u64::from(self)
    }
}

impl TopKey for i32 {
    fn rank(self) -> u64 {
        u64::from((self as u32) ^ (1 << 31))
    }
}

impl TopKey for f32 {
    fn rank(self) -> u64 {
        let b = self.to_bits();
        u64::from(if b >> 31 == 1 { !b } else { b | (1 << 31) })
    }
}

impl TopKey for f64 {
    fn rank(self) -> u64 {
        let b = self.to_bits();
        if b >> 63 == 1 { !b } else { b | (1 << 63) }
    }
}

/// The result of a top-k on the host: keys best first and the row id of each.
#[derive(Clone, Debug, PartialEq)]
pub struct TopKRows<K> {
    /// The `k` keys, best first.
    pub keys: Vec<K>,
    /// Row of each key in the input.
    pub rows: Vec<u32>,
}

/// Checks a top-k of `k` over `n` keys before any work: `1 <= k <= n <= MAX_COLUMN_LEN`.
pub(crate) fn check_top_k(n: usize, k: usize) -> Result<()> {
    if n > MAX_COLUMN_LEN {
        return Err(Error::invalid(format!(
            "top_k: {n} keys exceed the column limit of {MAX_COLUMN_LEN}"
        )));
    }
    if k == 0 {
        return Err(Error::invalid(
            "top_k: k is 0; ask for at least one key (k in 1..=n)",
        ));
    }
    if k > n {
        return Err(Error::invalid(format!(
            "top_k: k = {k} exceeds the {n} keys of the input; k must be in 1..=n"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_total_order() {
        let f = [
            f32::from_bits(0xffc0_0000), // -NaN
            f32::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ];
        for w in f.windows(2) {
            assert!(w[0].rank() < w[1].rank(), "{} < {}", w[0], w[1]);
            assert_eq!(w[0].total_cmp(&w[1]), std::cmp::Ordering::Less);
        }
        let d = [
            f64::NEG_INFINITY,
            -2.0,
            -0.0,
            0.0,
            1e-300,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in d.windows(2) {
            assert!(w[0].rank() < w[1].rank());
        }
        let i = [i32::MIN, -1, 0, 1, i32::MAX];
        for w in i.windows(2) {
            assert!(w[0].rank() < w[1].rank());
        }
        assert!(0u32.rank() < u32::MAX.rank());
    }

    #[test]
    fn k_is_checked() {
        assert!(check_top_k(10, 0).is_err());
        assert!(check_top_k(10, 11).is_err());
        assert!(check_top_k(0, 1).is_err());
        assert!(check_top_k(10, 10).is_ok() && check_top_k(1, 1).is_ok());
    }
}
