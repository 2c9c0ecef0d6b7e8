//! The fused top-k queries on all cores, the GPU's oracle: a top-k of the rows a filter keeps
//! ([`top_k_where`]), of a linear key of two `u32` columns ([`top_k_linear`]) or both
//! ([`top_k_linear_where`]), with the semantics of [`crate::ops::top_k_query`] (every
//! matching row, best first, where fewer than `k` match), and the runs of a sorted column
//! ([`count_runs`]).
use tessera_kernels::ops::topk::{RowPredicate, linear_key};

use super::topk::top_k_live;
use crate::error::Result;
use crate::ops::{Keep, TopKOrder, TopKRows, TopKey, check_query};

/// `SELECT ... WHERE keep(column) ORDER BY keys LIMIT k`: the `k` best rows of `keys` by
/// `order` among those whose `column` value `keep` keeps, best first.
pub fn top_k_where<K: TopKey>(
    keys: &[K],
    column: &[u32],
    keep: &Keep,
    k: usize,
    order: TopKOrder,
) -> Result<TopKRows<K>> {
    let p = predicate(check_query(
        keys.len(),
        k,
        None,
        Some((column.len(), keep)),
    )?);
    Ok(top_k_live(keys.len(), k, order, |i| {
        p.keeps(column[i]).then(|| keys[i])
    }))
}

/// `ORDER BY w0 * c0 + w1 * c1 LIMIT k`, the key computed as on the GPU (see
/// [`crate::ops::TopKQuery::linear`]).
pub fn top_k_linear(
    c0: &[u32],
    w0: f32,
    c1: &[u32],
    w1: f32,
    k: usize,
    order: TopKOrder,
) -> Result<TopKRows<f32>> {
    check_query(c0.len(), k, Some(c1.len()), None)?;
    Ok(top_k_live(c0.len(), k, order, |i| {
        Some(linear_key(w0, c0[i], w1, c1[i]))
    }))
}

/// [`top_k_linear`] of the rows whose `column` value `keep` keeps.
#[allow(clippy::too_many_arguments)]
pub fn top_k_linear_where(
    c0: &[u32],
    w0: f32,
    c1: &[u32],
    w1: f32,
    column: &[u32],
    keep: &Keep,
    k: usize,
    order: TopKOrder,
) -> Result<TopKRows<f32>> {
    let filter = Some((column.len(), keep));
    let p = predicate(check_query(c0.len(), k, Some(c1.len()), filter)?);
    Ok(top_k_live(c0.len(), k, order, |i| {
        p.keeps(column[i]).then(|| linear_key(w0, c0[i], w1, c1[i]))
    }))
}

/// The predicate `check_query` returned for a filter (it returns one whenever a filter is
/// given; the fallback keeps every row).
fn predicate(p: Option<RowPredicate>) -> RowPredicate {
    p.unwrap_or(RowPredicate::range(0, u32::MAX))
}

/// The runs of equal adjacent values of `keys`, in row order: each run's value and length
/// (on a sorted column, the distinct values and their counts).
pub fn count_runs(keys: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let (mut values, mut counts) = (Vec::new(), Vec::<u32>::new());
    for (i, &x) in keys.iter().enumerate() {
        match counts.last_mut() {
            Some(c) if keys[i - 1] == x => *c += 1,
            _ => {
                values.push(x);
                counts.push(1);
            }
        }
    }
    (values, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_keeps_matching_rows_and_returns_fewer_than_k() {
        let keys = [5u32, 9, 7, 3, 9, 1];
        let lang = [0u32, 1, 2, 0, 0, 3];
        let r = top_k_where(&keys, &lang, &Keep::In(vec![0, 2]), 3, TopKOrder::Largest).unwrap();
        assert_eq!(
            (r.rows.as_slice(), r.keys.as_slice()),
            (&[4, 2, 0][..], &[9, 7, 5][..])
        );
        // Two rows match: both, best first.
        let r = top_k_where(&keys, &lang, &Keep::In(vec![2, 3]), 5, TopKOrder::Smallest).unwrap();
        assert_eq!(r.rows, [5, 2]);
        let none = top_k_where(&keys, &lang, &Keep::lt(0), 2, TopKOrder::Largest).unwrap();
        assert!(none.rows.is_empty() && none.keys.is_empty());
        // Ties: the smaller row first.
        let r = top_k_where(&keys, &lang, &Keep::lt(2), 2, TopKOrder::Largest).unwrap();
        assert_eq!(r.rows, [1, 4]);
    }

    #[test]
    fn linear_keys_are_rounded_as_on_the_gpu() {
        let (rt, likes) = ([1u32, 3, 0, 16_777_217], [4u32, 0, 7, 1]);
        let r = top_k_linear(&rt, 1.0, &likes, 0.5, 4, TopKOrder::Largest).unwrap();
        // 16777217 is not an f32: it rounds to 16777216, and 16777216 + 0.5 back to it;
        // equal keys keep the smaller row first.
        assert_eq!(r.rows, [3, 2, 0, 1]);
        assert_eq!(r.keys, [16_777_216.0, 3.5, 3.0, 3.0]);
        let f = top_k_linear_where(
            &rt,
            1.0,
            &likes,
            0.5,
            &[1, 1, 0, 1],
            &Keep::lt(1),
            2,
            TopKOrder::Largest,
        )
        .unwrap();
        assert_eq!(f.rows, [2]);
    }

    #[test]
    fn bad_queries_are_errors() {
        let (a, b) = ([1u32, 2, 3], [1u32, 2]);
        assert!(top_k_linear(&a, 1.0, &b, 1.0, 1, TopKOrder::Largest).is_err());
        assert!(top_k_where(&a, &b, &Keep::lt(5), 1, TopKOrder::Largest).is_err());
        assert!(top_k_where(&a, &a, &Keep::In(vec![]), 1, TopKOrder::Largest).is_err());
        assert!(top_k_where(&a, &a, &Keep::In(vec![1; 5]), 1, TopKOrder::Largest).is_err());
        assert!(top_k_where(&a, &a, &Keep::lt(5), 0, TopKOrder::Largest).is_err());
        assert!(top_k_where(&a, &a, &Keep::lt(5), 4, TopKOrder::Largest).is_err());
    }

    #[test]
    fn runs_of_a_sorted_column() {
        assert_eq!(count_runs(&[]), (vec![], vec![]));
        assert_eq!(count_runs(&[4]), (vec![4], vec![1]));
        assert_eq!(
            count_runs(&[0, 0, 2, 5, 5, 5, 9]),
            (vec![0, 2, 5, 9], vec![2, 1, 3, 1])
        );
    }
}
