//! Multi-key top-k on all cores: each thread keeps a buffer of its best rows, cut back to the
//! best `k` (a partial selection) whenever it doubles, the threads' buffers merge the same way,
//! and the survivors sort. Order and ties as [`crate::ops::top_k_multi`]: the result is one
//! exact list.
use std::cmp::Reverse;

use rayon::prelude::*;

use crate::error::Result;
use crate::ops::{TopKMultiRows, TopKOrder, TopKey, check_top_k_multi};

/// A row's place: the keys' oriented ranks (unused keys 0), then the smaller row; larger is
/// better.
type Entry = ([u64; 3], Reverse<u32>);

/// The `k` best rows of `keys` (1 to 3 columns of equal length, compared lexicographically,
/// first key most significant) by `order`, best first, with their keys and `values`; `Err`
/// for 0 or more than 3 columns, unequal lengths, or `k` outside `1..=n`.
pub fn top_k_multi<K: TopKey, V: Copy + Send + Sync>(
    keys: &[&[K]],
    values: &[V],
    k: usize,
    order: TopKOrder,
) -> Result<TopKMultiRows<K, V>> {
    let lens: Vec<usize> = keys.iter().map(|c| c.len()).collect();
    check_top_k_multi(&lens, values.len(), k)?;
    let entry = |r: usize| -> Entry {
        let rank = |c: usize| keys.get(c).map_or(0, |col| order.oriented_rank(col[r]));
        ([rank(0), rank(1), rank(2)], Reverse(r as u32))
    };
    let room = (2 * k).max(1 << 12);
    let mut best = (0..lens[0])
        .into_par_iter()
        .fold(Vec::new, |mut v, r| {
            v.push(entry(r));
            if v.len() >= room {
                keep_best(&mut v, k);
            }
            v
        })
        .reduce(Vec::new, |mut a, b| {
            a.extend(b);
            keep_best(&mut a, k);
            a
        });
    keep_best(&mut best, k);
    best.par_sort_unstable_by(|a, b| b.cmp(a));
    let rows: Vec<u32> = best.iter().map(|&(_, Reverse(r))| r).collect();
    Ok(TopKMultiRows {
        keys: keys
            .iter()
            .map(|col| rows.iter().map(|&r| col[r as usize]).collect())
            .collect(),
        values: rows.iter().map(|&r| values[r as usize]).collect(),
        rows,
    })
}

/// Cuts `v` to its best `k` entries (unordered).
fn keep_best(v: &mut Vec<Entry>, k: usize) {
    if v.len() > k {
        v.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        v.truncate(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// The result by a full sort of the rows.
    fn oracle<K: TopKey>(keys: &[&[K]], k: usize, order: TopKOrder) -> Vec<u32> {
        let mut rows: Vec<u32> = (0..keys[0].len() as u32).collect();
        rows.sort_by_key(|&r| {
            let ranks: Vec<u64> = keys
                .iter()
                .map(|c| order.oriented_rank(c[r as usize]))
                .collect();
            (Reverse(ranks), r)
        });
        rows.truncate(k);
        rows
    }

    #[test]
    fn matches_a_full_sort_with_ties_on_the_first_keys() {
        let mut rng = StdRng::seed_from_u64(3);
        for n in [1, 2, 33, 1000, 5000, 20_000] {
            let a: Vec<i32> = (0..n).map(|_| rng.random_range(0..4)).collect();
            let b: Vec<i32> = (0..n).map(|_| rng.random_range(0..3)).collect();
            let c: Vec<i32> = (0..n).map(|_| rng.random_range(-5..5)).collect();
            let vals: Vec<u32> = (0..n as u32).map(|r| r * 7).collect();
            for cols in [&[&a[..]][..], &[&a, &b], &[&a, &b, &c]] {
                for k in [1, 2, 31, 1024, n] {
                    if k > n {
                        continue;
                    }
                    for order in [TopKOrder::Largest, TopKOrder::Smallest] {
                        let got = top_k_multi(cols, &vals, k, order).unwrap();
                        assert_eq!(got.rows, oracle(cols, k, order), "n {n} k {k} {order:?}");
                        let r0 = got.rows[0] as usize;
                        assert_eq!(got.values[0], vals[r0]);
                        assert_eq!(got.keys.len(), cols.len());
                        assert_eq!(got.keys[cols.len() - 1][0], cols[cols.len() - 1][r0]);
                    }
                }
            }
        }
    }

    #[test]
    fn floats_order_by_total_order() {
        let a = [1.0f32, f32::NAN, 1.0, -0.0, 0.0, 1.0];
        let b = [2.0f32, 0.0, 3.0, 5.0, 5.0, 3.0];
        let got = top_k_multi(&[&a, &b], &[0u8; 6], 4, TopKOrder::Largest).unwrap();
        assert_eq!(got.rows, [1, 2, 5, 0]);
        let low = top_k_multi(&[&a, &b], &[0u8; 6], 2, TopKOrder::Smallest).unwrap();
        assert_eq!(low.rows, [3, 4]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let a = [1u32, 2, 3];
        assert!(top_k_multi::<u32, u32>(&[], &[1, 2, 3], 1, TopKOrder::Largest).is_err());
        assert!(top_k_multi(&[&a, &a, &a, &a], &[1, 2, 3], 1, TopKOrder::Largest).is_err());
        assert!(top_k_multi(&[&a, &a[..2]], &[1, 2, 3], 1, TopKOrder::Largest).is_err());
        assert!(top_k_multi(&[&a], &[1, 2], 1, TopKOrder::Largest).is_err());
        assert!(top_k_multi(&[&a], &[1, 2, 3], 0, TopKOrder::Largest).is_err());
        assert!(top_k_multi(&[&a], &[1, 2, 3], 4, TopKOrder::Largest).is_err());
    }
}
