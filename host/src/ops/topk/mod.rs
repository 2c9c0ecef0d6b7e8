//! Top-k: the `k` largest (or smallest) keys of a column with their row ids, on the GPU by one
//! of several algorithms ([`TopKAlgorithm`]), and what they share with the CPU version
//! ([`crate::cpu::top_k`]): the key types, the order every implementation returns, and the
//! checks made before any work.
//!
//! **Order.** Keys compare by [`TopKey::rank`]: integers by value, floats as
//! [`f32::total_cmp`] orders them, so `+NaN` is above `+inf` (the largest) and `-NaN` below
//! `-inf` (the smallest), and `-0.0` is below `+0.0`. A result lists its keys best first
//! (largest first for [`TopKOrder::Largest`]). **Ties**: among equal keys the smaller row id
//! ranks first, so where equal keys straddle the `k`-th place the result keeps the smallest
//! row ids. The result is therefore one exact list, the same for every implementation.
//!
//! **Queries.** [`top_k_query`] ranks by a column or by `w0 * c0 + w1 * c1` of two `u32`
//! columns and keeps only the rows a [`RowFilter`] keeps, in the threshold filter's one read
//! of those columns; the same order and ties apply to the matching rows, and where fewer than
//! `k` rows match the result holds all of them.
mod buffers;
mod cost;
mod fused;
mod select;
mod sort;

pub use cost::{TopKDevice, bitonic_model_ms, model_ms};

pub(crate) use fused::check_query;
pub use fused::{Keep, RowFilter, TopKQuery, top_k_query};
pub use select::{SAMPLE_TARGET, SamplePlan, SelectTopK};
pub use sort::SortTopK;

use tessera_kernels::ops::topk::{self as kt, SourceKernels};
use tessera_kernels::radix::RadixKey;

use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, DeviceItem, Gpu, MAX_COLUMN_LEN};

mod bitonic;
pub use bitonic::{BitonicConfig, BitonicKey, BitonicTopK};
mod multi;
pub(crate) use multi::check_top_k_multi;
pub use multi::{MultiKey, MultiPath, TopKMulti, TopKMultiRows, top_k_multi};
mod bucket;
pub use bucket::{BUCKET_TILE, BucketKey, BucketSelectTopK};
mod perthread;
pub use perthread::{PerThreadKey, PerThreadTopK, PerThreadVariant};

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
pub trait TopKey: DeviceItem + RadixKey<Bits: Into<u64>> {
    /// A `u64` that orders keys as top-k does (see the module documentation): `a` ranks
    /// above `b` exactly when `a.rank() > b.rank()`, and equal ranks are equal keys.
    fn rank(self) -> u64 {
        self.to_bits().into()
    }
    /// The key of a device rank: [`RadixKey::ordered`] bits, complemented for the smallest
    /// (see `tessera_kernels::ops::topk`), widened to `u64`.
    #[doc(hidden)]
    fn from_rank(rank: u64, order: TopKOrder) -> Self;
    /// Sort and choose for this key type, or `Err` where the radix sort does not take it.
    #[doc(hidden)]
    fn sort_top_k(
        sort: &mut SortTopK,
        gpu: &Gpu,
        keys: &DeviceColumn<Self>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<Self>>;
    /// Whether [`TopKey::sort_top_k`] takes this key type.
    #[doc(hidden)]
    const SORTABLE: bool;
    /// The selection kernels over a key column.
    #[doc(hidden)]
    const SELECT: SourceKernels<Self>;
    /// The selection kernels over a key column behind a row filter.
    #[doc(hidden)]
    const SELECT_WHERE: SourceKernels<Self>;
}

macro_rules! top_key {
    ($($t:ty: $bits:ty, sort = $sortable:tt, $kernels:ident, $where:ident;)*) => {$(
        impl TopKey for $t {
            fn from_rank(rank: u64, order: TopKOrder) -> Self {
                // Device ranks of `$t` fit its bit width: the cast drops only zeros.
                let raw = <$t as RadixKey>::unordered(rank as $bits, order == TopKOrder::Smallest);
                <$t as RadixKey>::from_raw(raw)
            }
            fn sort_top_k(
                sort: &mut SortTopK,
                gpu: &Gpu,
                keys: &DeviceColumn<Self>,
                k: usize,
                order: TopKOrder,
            ) -> Result<TopKRows<Self>> {
                top_key!(@sort $sortable, sort, gpu, keys, k, order)
            }
            const SORTABLE: bool = $sortable;
            const SELECT: SourceKernels<$t> = kt::$kernels;
            const SELECT_WHERE: SourceKernels<$t> = kt::$where;
        }
    )*};
    (@sort true, $sort:ident, $gpu:ident, $keys:ident, $k:ident, $order:ident) => {
        $sort.sorted($gpu, $keys, $k, $order)
    };
    (@sort false, $sort:ident, $gpu:ident, $keys:ident, $k:ident, $order:ident) => {{
        let _ = ($sort, $gpu, $keys, $k, $order);
        Err(Error::invalid(format!(
            "top_k by sort and choose takes f32, i32 and u32 keys, not {:?}; use the \
             threshold filter or radix select",
            <Self as DeviceItem>::TYPE
        )))
    }};
}
top_key! {
    u32: u32, sort = true, TOPK_U32, TOPK_WHERE_U32;
    i32: u32, sort = true, TOPK_I32, TOPK_WHERE_I32;
    f32: u32, sort = true, TOPK_F32, TOPK_WHERE_F32;
    f64: u64, sort = false, TOPK_F64, TOPK_WHERE_F64;
}

/// The top-k algorithms on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopKAlgorithm {
    /// Estimates the `k`-th key from a sample, keeps the keys that reach it in one read of the
    /// input, and finishes on those; falls back to [`TopKAlgorithm::RadixSelect`] when the
    /// estimate keeps too few or too many.
    Threshold,
    /// Exact radix select (8-bit digits, one read of the input per digit), then one pass that
    /// keeps the keys reaching the `k`-th.
    RadixSelect,
    /// Sort and choose: the radix sort of keys with their rows, then the first `k`.
    Sort,
}

impl TopKAlgorithm {
    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            TopKAlgorithm::Threshold => "threshold",
            TopKAlgorithm::RadixSelect => "radix select",
            TopKAlgorithm::Sort => "sort",
        }
    }
}

/// The `k` best keys of `keys` by `order`, best first, with their rows, on the GPU: each
/// call chooses the algorithm (see [`choose`]). `Err` unless `1 <= k <= keys.len()`.
pub fn top_k<K: TopKey>(
    gpu: &Gpu,
    keys: &DeviceColumn<K>,
    k: usize,
    order: TopKOrder,
) -> Result<TopKRows<K>> {
    check_top_k(keys.len(), k)?;
    match choose::<K>(keys.len(), k) {
        TopKAlgorithm::Sort => SortTopK::new().run(gpu, keys, k, order),
        a => SelectTopK::new(gpu)?.run(gpu, keys, k, order, a),
    }
}

/// The algorithm [`top_k`] runs for `k` of `n` keys of type `K`: the cheapest by the cost
/// model ([`model_ms`]) with [`TopKDevice::H100`]'s figures, among the threshold filter (`k` up
/// to [`THRESHOLD_MAX_K`]), radix select and, for the 4-byte keys the radix sort takes, sort
/// and choose. (Bitonic Top-K, [`BitonicTopK`], is never cheaper by the model nor in the
/// measurements, so the call does not consider it.)
pub fn choose<K: TopKey>(n: usize, k: usize) -> TopKAlgorithm {
    let dev = TopKDevice::H100;
    let cost = |a| model_ms(a, n, size_of::<K>(), k, &dev);
    let sort = if K::SORTABLE {
        TopKAlgorithm::Sort
    } else {
        TopKAlgorithm::RadixSelect
    };
    [TopKAlgorithm::Threshold, TopKAlgorithm::RadixSelect, sort]
        .into_iter()
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or(TopKAlgorithm::RadixSelect)
}

/// The largest `k` for which [`top_k`] takes the threshold filter.
pub const THRESHOLD_MAX_K: usize = 1 << 16;

impl TopKOrder {
    /// `key`'s [`TopKey::rank`] oriented so that a larger value is always better
    /// (complemented for [`TopKOrder::Smallest`]).
    pub fn oriented_rank<K: TopKey>(self, key: K) -> u64 {
        match self {
            TopKOrder::Largest => key.rank(),
            TopKOrder::Smallest => !key.rank(),
        }
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
