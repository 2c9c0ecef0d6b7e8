//! Bitonic top-k on all cores (thesis §4.3.2, the CPU thread of Algorithm 5): each rayon task
//! reduces its partition, one vector of [`VECTOR`] items at a time, with the network's three
//! operators (local sort, merge, rebuild) until one sorted run of `k'` remains, and the tasks'
//! runs merge into the answer the same way. The work depends on `n` and `k` only, not on the
//! data; the result is the exact list of [`crate::cpu::top_k`].
//!
//! **Items.** A key becomes the `u128` `(rank << 32) | !row`, `rank` complemented for the
//! smallest keys, so a larger item is always the better one and, among equal keys, the one
//! with the smaller row. Padding is the item 0 (rank 0, row `u32::MAX`): rows stay below
//! `u32::MAX`, so it is worse than every real item and never chosen while `k <= n`.
//!
//! **Runs.** `k'` is `k` rounded up to a power of two. Sorted runs of `k'` items alternate
//! best-first (even run index) and best-last (odd), so every pair of neighbouring runs is
//! bitonic: *merge* keeps the better of item `i` of each, a bitonic run holding the pair's best
//! `k'`, and *rebuild* sorts that run in the direction of its new index.
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::ops::{TopKOrder, TopKRows, TopKey, check_top_k};

/// Items per vector (the thesis' `vectorSize`).
const VECTOR: usize = 2048;
/// Largest `k`: two sorted runs of `k'` must fit one vector for a merge.
const MAX_K: usize = VECTOR / 2;
/// Merges per vector while a pass has several vectors: the thesis' reduction by 16.
const MERGES: u32 = 4;
/// Keys per rayon task: many vectors, so a task's passes dwarf the merge of the tasks' runs.
const CHUNK: usize = 1 << 16;

/// A candidate: `(rank << 32) | !row`, larger is better.
type Item = u128;
/// Padding, below every real item.
const WORST: Item = 0;

/// The `k` best of `keys` by `order`, best first, with their rows, by bitonic top-k; `Err`
/// unless `1 <= k <= min(keys.len(), 1024)`.
pub fn top_k_bitonic<K: TopKey>(keys: &[K], k: usize, order: TopKOrder) -> Result<TopKRows<K>> {
    check_top_k(keys.len(), k)?;
    if k > MAX_K {
        return Err(Error::invalid(format!(
            "cpu bitonic top-k: k = {k} exceeds its limit of {MAX_K} (two sorted runs of k \
             must fit one vector of {VECTOR}); use cpu::top_k for larger k"
        )));
    }
    let run = k.next_power_of_two();
    let rank = |x: K| order.oriented_rank(x);
    let best = keys
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let first = c * CHUNK;
            let get = |i: usize| match chunk.get(i) {
                Some(&x) => (Item::from(rank(x)) << 32) | Item::from(!((first + i) as u32)),
                None => WORST,
            };
            partition_top(chunk.len(), run, get)
        })
        .reduce(|| vec![WORST; run], merge_runs);
    // The first `k` of the best `k'` are real items: `k <= n` of them beat the padding.
    let rows: Vec<u32> = best[..k].iter().map(|&e| !(e as u32)).collect();
    Ok(TopKRows {
        keys: rows.iter().map(|&r| keys[r as usize]).collect(),
        rows,
    })
}

/// The best `run` of a partition's `n` items (`get(i)`, padding from `n` on), one run sorted
/// best first: the SortReducer pass, then BitonicReducer passes until one run remains.
fn partition_top(n: usize, run: usize, get: impl Fn(usize) -> Item) -> Vec<Item> {
    let mut cur = pass(n, run, true, get);
    while cur.len() > run {
        let prev = cur;
        cur = pass(prev.len(), run, false, |i| {
            prev.get(i).copied().unwrap_or(WORST)
        });
    }
    cur
}

/// One pass over `len` items in vectors: `sort` (the SortReducer) sorts the items into runs
/// first, the BitonicReducer's input is runs already. Each vector merges and rebuilds
/// [`MERGES`] times (down to one run when the pass has one vector) and appends its runs, which
/// keep alternating across vectors.
fn pass(len: usize, run: usize, sort: bool, get: impl Fn(usize) -> Item) -> Vec<Item> {
    // A short input takes one vector of its own size, not a padded full one.
    let size = len.next_power_of_two().clamp(run, VECTOR);
    let vectors = len.div_ceil(size);
    let most = (size / run).trailing_zeros();
    let merges = if vectors == 1 { most } else { most.min(MERGES) };
    let out_len = size >> merges;
    let mut out = Vec::with_capacity(vectors * out_len);
    let mut v = vec![WORST; size];
    for j in 0..vectors {
        for (i, x) in v.iter_mut().enumerate() {
            *x = get(j * size + i);
        }
        // The direction of the vector's first output run: its index in `out` is even or odd.
        let flip = (j * out_len / run) & 1;
        if sort {
            local_sort(&mut v, run, flip);
        }
        let mut live = size;
        for _ in 0..merges {
            live = merge(&mut v[..live], run);
            rebuild(&mut v[..live], run, flip);
        }
        out.extend_from_slice(&v[..live]);
    }
    out
}

/// Local sort (Algorithm 2): `v` into sorted runs of `run`, run `r` best first when `r + flip`
/// is even. Every level alternates its blocks by the same rule, so two neighbouring blocks
/// always form the bitonic input of the next level.
fn local_sort(v: &mut [Item], run: usize, flip: usize) {
    let mut len = 1;
    while len < run {
        let dir = len << 1;
        let mut inc = len;
        while inc > 0 {
            exchange(v, inc, |i| ((i / dir) + flip) & 1 == 0);
            inc >>= 1;
        }
        len <<= 1;
    }
}

/// Merge: run `2q` against run `2q + 1` (opposite directions), item by item, the better kept
/// as run `q` (bitonic, the pair's best `run`), in place. Returns the items left.
fn merge(v: &mut [Item], run: usize) -> usize {
    let half = v.len() / 2;
    for q in 0..half / run {
        for i in 0..run {
            // Reads lie at or after the write, so the front can be overwritten in place.
            v[q * run + i] = v[2 * q * run + i].max(v[(2 * q + 1) * run + i]);
        }
    }
    half
}

/// Rebuild (Algorithm 4): bitonic runs of `run` into sorted ones, run `r` best first when
/// `r + flip` is even.
fn rebuild(v: &mut [Item], run: usize, flip: usize) {
    let mut inc = run / 2;
    while inc > 0 {
        exchange(v, inc, |i| ((i / run) + flip) & 1 == 0);
        inc >>= 1;
    }
}

/// One step of the network: every `i` with bit `inc` clear against `i + inc`, the better one
/// first where `best_first(i)`, last elsewhere. `best_first` is constant over blocks of at
/// least `2 * inc`, so it is asked once per block.
fn exchange(v: &mut [Item], inc: usize, best_first: impl Fn(usize) -> bool) {
    for (b, block) in v.chunks_exact_mut(2 * inc).enumerate() {
        let first = best_first(b * 2 * inc);
        let (lo, hi) = block.split_at_mut(inc);
        for (x, y) in lo.iter_mut().zip(hi) {
            if (*x < *y) == first {
                std::mem::swap(x, y);
            }
        }
    }
}

/// The best `run` of two runs sorted best first, sorted best first: the second read backwards
/// makes the pair bitonic for one merge and rebuild.
fn merge_runs(mut a: Vec<Item>, b: Vec<Item>) -> Vec<Item> {
    for (x, &y) in a.iter_mut().zip(b.iter().rev()) {
        *x = (*x).max(y);
    }
    let run = a.len();
    rebuild(&mut a, run, 0);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::top_k;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    const SIZES: [usize; 9] = [1, 2, 15, 16, 17, 2047, 2048, 2049, 100_000];

    /// Every `k` of the brief that fits `n`, and `n` itself within the limit.
    fn ks(n: usize) -> impl Iterator<Item = usize> {
        [1, 2, 31, 32, 33, MAX_K, n]
            .into_iter()
            .filter(move |&k| k <= n.min(MAX_K))
    }

    /// Same rows and same keys (by rank: a NaN is a key like any other) as the heap top-k.
    fn check<K: TopKey>(keys: &[K], what: &str) {
        let n = keys.len();
        let ranks = |r: &TopKRows<K>| r.keys.iter().map(|x| x.rank()).collect::<Vec<_>>();
        for k in ks(n) {
            for order in [TopKOrder::Largest, TopKOrder::Smallest] {
                let got = top_k_bitonic(keys, k, order).unwrap();
                let want = top_k(keys, k, order).unwrap();
                assert_eq!(got.rows, want.rows, "{what} n {n} k {k} {order:?}");
                assert_eq!(ranks(&got), ranks(&want), "{what} n {n} k {k} {order:?}");
            }
        }
    }

    /// Floats with NaNs of both signs, infinities and both zeros among the ordinary values.
    fn floats(rng: &mut StdRng, n: usize) -> Vec<f64> {
        let special = [
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
        ];
        (0..n)
            .map(|_| {
                if rng.random_range(0..10) == 0 {
                    special[rng.random_range(0..special.len())]
                } else {
                    rng.random_range(-1e3..1e3)
                }
            })
            .collect()
    }

    #[test]
    fn matches_the_heap_top_k_on_every_type() {
        let mut rng = StdRng::seed_from_u64(11);
        for n in SIZES {
            let f64s = floats(&mut rng, n);
            let f32s: Vec<f32> = f64s.iter().map(|&x| x as f32).collect();
            check(&f32s, "f32");
            check(&f64s, "f64");
            let i32s: Vec<i32> = (0..n).map(|_| rng.random()).collect();
            check(&i32s, "i32");
            let u32s: Vec<u32> = (0..n).map(|_| rng.random()).collect();
            check(&u32s, "u32");
        }
    }

    #[test]
    fn ties_keep_the_smallest_rows() {
        let mut rng = StdRng::seed_from_u64(12);
        let pool = [-0.0f32, 0.0, 1.0, f32::NAN];
        for n in SIZES {
            let i32s: Vec<i32> = (0..n).map(|_| rng.random_range(-1..=1)).collect();
            check(&i32s, "i32 ties");
            let f32s: Vec<f32> = (0..n).map(|_| pool[rng.random_range(0..4)]).collect();
            check(&f32s, "f32 ties");
            let same = vec![7u32; n];
            check(&same, "u32 all equal");
        }
        let keys = [5u32, 7, 7, 3, 7, 7];
        let top = top_k_bitonic(&keys, 3, TopKOrder::Largest).unwrap();
        assert_eq!(top.rows, [1, 2, 4]);
        let bottom = top_k_bitonic(&keys, 2, TopKOrder::Smallest).unwrap();
        assert_eq!(bottom.rows, [3, 0]);
    }

    #[test]
    fn bad_k_is_an_error_not_a_panic() {
        let keys: Vec<u32> = (0..2000).collect();
        assert!(top_k_bitonic(&keys, 0, TopKOrder::Largest).is_err());
        assert!(top_k_bitonic(&keys[..3], 4, TopKOrder::Largest).is_err());
        assert!(top_k_bitonic::<u32>(&[], 1, TopKOrder::Smallest).is_err());
        let err = top_k_bitonic(&keys, MAX_K + 1, TopKOrder::Largest).unwrap_err();
        assert!(err.to_string().contains("limit of 1024"), "{err}");
        assert!(top_k_bitonic(&keys, MAX_K, TopKOrder::Smallest).is_ok());
    }
}
