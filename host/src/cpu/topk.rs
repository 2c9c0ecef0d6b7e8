//! Heap top-k on all cores: each chunk of the input keeps its best `k` in a bounded heap, the
//! chunks' heaps merge, and the survivors sort. The order and the ties are those of
//! [`crate::ops::TopKey`]: the result is one exact list.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use crate::error::Result;
use crate::ops::{TopKOrder, TopKRows, TopKey, check_top_k};

/// Rows per chunk: enough that a chunk's heap work dwarfs its merge.
const CHUNK: usize = 1 << 16;

/// A candidate: larger is better (rank, then the smaller row).
type Entry = (u64, Reverse<u32>);

/// The `k` best of `keys` by `order`, best first, with their rows; `Err` unless
/// `1 <= k <= keys.len()`.
pub fn top_k<K: TopKey>(keys: &[K], k: usize, order: TopKOrder) -> Result<TopKRows<K>> {
    check_top_k(keys.len(), k)?;
    Ok(top_k_live(keys.len(), k, order, |i| Some(keys[i])))
}

/// The `k` best of the rows `0..n` whose `key(row)` is `Some` (the live rows), by `order`,
/// best first; all of them where fewer than `k` are live. The fused top-k's twins share it.
pub(crate) fn top_k_live<K: TopKey>(
    n: usize,
    k: usize,
    order: TopKOrder,
    key: impl Fn(usize) -> Option<K> + Sync,
) -> TopKRows<K> {
    let best = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut heap = Heap::new(k);
            for i in c * CHUNK..n.min((c + 1) * CHUNK) {
                if let Some(x) = key(i) {
                    heap.offer((order.oriented_rank(x), Reverse(i as u32)));
                }
            }
            heap
        })
        .reduce(
            || Heap::new(k),
            |mut a, b| {
                for e in b.0 {
                    a.offer(e.0);
                }
                a
            },
        );
    let mut entries: Vec<Entry> = best.0.into_iter().map(|Reverse(e)| e).collect();
    entries.sort_unstable_by(|a, b| b.cmp(a));
    let rows: Vec<u32> = entries.iter().map(|&(_, Reverse(r))| r).collect();
    TopKRows {
        keys: rows.iter().filter_map(|&r| key(r as usize)).collect(),
        rows,
    }
}

/// The best `k` entries seen: a min-heap whose top is the worst kept.
struct Heap(BinaryHeap<Reverse<Entry>>, usize);

impl Heap {
    fn new(k: usize) -> Heap {
        Heap(BinaryHeap::with_capacity(k.min(CHUNK) + 1), k)
    }

    fn offer(&mut self, e: Entry) {
        if self.0.len() < self.1 {
            self.0.push(Reverse(e));
        } else if let Some(mut worst) = self.0.peek_mut()
            && e > worst.0
        {
            *worst = Reverse(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// The result by a full sort: rank descending, then row ascending.
    fn oracle<K: TopKey>(keys: &[K], k: usize, order: TopKOrder) -> TopKRows<K> {
        let rank = |x: K| match order {
            TopKOrder::Largest => x.rank(),
            TopKOrder::Smallest => !x.rank(),
        };
        let mut rows: Vec<u32> = (0..keys.len() as u32).collect();
        rows.sort_by_key(|&r| (Reverse(rank(keys[r as usize])), r));
        rows.truncate(k);
        TopKRows {
            keys: rows.iter().map(|&r| keys[r as usize]).collect(),
            rows,
        }
    }

    fn check<K: TopKey>(keys: &[K]) {
        let n = keys.len();
        for k in [1, 2, 31, 32, 33, 1024, n.saturating_sub(1), n] {
            if k == 0 || k > n {
                continue;
            }
            for order in [TopKOrder::Largest, TopKOrder::Smallest] {
                let got = top_k(keys, k, order).unwrap();
                let want = oracle(keys, k, order);
                // Keys compared as bits: NaNs are keys like any other here.
                assert_eq!(got.rows, want.rows, "n {n} k {k} {order:?}");
                assert_eq!(got.keys.len(), k);
            }
        }
    }

    #[test]
    fn matches_a_full_sort_on_awkward_sizes_and_distributions() {
        let mut rng = StdRng::seed_from_u64(7);
        for n in [1, 2, 31, 32, 33, 1000, CHUNK - 1, CHUNK + 1, 3 * CHUNK + 17] {
            let uniform: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
            check(&uniform);
            let increasing: Vec<u32> = (0..n as u32).collect();
            check(&increasing);
            let ties: Vec<i32> = (0..n).map(|i| (i % 3) as i32 - 1).collect();
            check(&ties);
            let wide: Vec<f64> = (0..n).map(|_| rng.random_range(-1e6..1e6)).collect();
            check(&wide);
        }
    }

    #[test]
    fn nan_and_signed_zero_order_as_documented() {
        let keys = [
            1.0f32,
            f32::NAN,
            -0.0,
            f32::INFINITY,
            0.0,
            -f32::NAN,
            f32::NEG_INFINITY,
        ];
        let top = top_k(&keys, 2, TopKOrder::Largest).unwrap();
        assert_eq!(top.rows, [1, 3]);
        let bottom = top_k(&keys, 3, TopKOrder::Smallest).unwrap();
        assert_eq!(bottom.rows, [5, 6, 2]);
        check(&keys);
    }

    #[test]
    fn ties_keep_the_smallest_rows() {
        let keys = [5u32, 7, 7, 3, 7, 7];
        assert_eq!(top_k(&keys, 3, TopKOrder::Largest).unwrap().rows, [1, 2, 4]);
        assert_eq!(top_k(&keys, 2, TopKOrder::Smallest).unwrap().rows, [3, 0]);
    }

    #[test]
    fn bad_k_is_an_error_not_a_panic() {
        let keys = [1u32, 2, 3];
        assert!(top_k(&keys, 0, TopKOrder::Largest).is_err());
        assert!(top_k(&keys, 4, TopKOrder::Largest).is_err());
        assert!(top_k::<u32>(&[], 1, TopKOrder::Smallest).is_err());
    }
}
