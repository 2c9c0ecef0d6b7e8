//! Sort and choose (thesis §4.3): the radix sort of the keys with their row ids, then the
//! first `k`. The sort is stable, so equal keys keep the smaller row first, as top-k's ties
//! do.
use crate::ops::sort::fill_row_ids;

use super::{TopKOrder, TopKRows, TopKey, check_top_k};
use crate::error::Result;
use crate::ops::{Order, RadixSort, SortKey};
use crate::runtime::{DeviceColumn, Gpu};

/// Sort and choose, for the key types the radix sort takes (`f32`, `i32`, `u32`).
#[derive(Default)]
pub struct SortTopK {
    /// Buffers of the last run, reused when the next one fits.
    rows: Option<(DeviceColumn<u32>, DeviceColumn<u32>)>,
}

impl SortTopK {
    /// No buffers yet.
    pub fn new() -> SortTopK {
        SortTopK::default()
    }

    /// Whether sort and choose takes keys of type `K`.
    pub fn supports<K: TopKey>() -> bool {
        K::SORTABLE
    }

    /// The `k` best of `keys` by `order`, best first.
    pub fn run<K: TopKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<K>> {
        check_top_k(keys.len(), k)?;
        K::sort_top_k(self, gpu, keys, k, order)
    }

    /// Sort and choose for a key type the radix sort takes.
    pub(super) fn sorted<S: SortKey + TopKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<S>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<S>> {
        let n = keys.len();
        let (mut rows, mut rows_out) = match self.rows.take() {
            Some((a, b)) if a.capacity() >= n => (a, b),
            _ => (gpu.zeros::<u32>(n)?, gpu.zeros::<u32>(n)?),
        };
        rows.set_len(n);
        rows_out.set_len(n);
        fill_row_ids(gpu, &mut rows)?;
        let mut sorted = gpu.zeros::<S>(n)?;
        let mut sort = RadixSort::<S>::new(gpu, n, true)?;
        let dir = match order {
            TopKOrder::Largest => Order::Descending,
            TopKOrder::Smallest => Order::Ascending,
        };
        sort.sort_pairs(gpu, keys, &rows, &mut sorted, &mut rows_out, dir)?;
        sorted.set_len(k);
        let mut first = rows_out;
        first.set_len(k);
        let result = TopKRows {
            keys: sorted.to_vec(gpu)?,
            rows: first.to_vec(gpu)?,
        };
        self.rows = Some((rows, first));
        Ok(result)
    }
}
