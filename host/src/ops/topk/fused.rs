//! Top-k fused with a filter and with a computed key (thesis §4.4.4): `WHERE p(x) ORDER BY
//! key LIMIT k` where the key is a column or `w0 * c0 + w1 * c1` of two `u32` columns, in the
//! threshold filter's one read of the columns it needs, instead of a selection or a
//! projection that writes an intermediate column for a top-k to read again.
//!
//! The kernels are those of [`SelectTopK`] reading their keys through a key source (see
//! `tessera_kernels::ops::topk`): rows the filter rejects are not live (never counted, never
//! candidates, never ties), so the result is exactly the top-k of the matching rows, in the
//! order and with the ties of the module documentation of [`crate::ops::top_k`] (smaller row
//! first among equal keys). **Fewer than `k` matches**: the result holds every matching row,
//! best first (so it may be shorter than `k`, or empty).
use tessera_kernels::ops::topk::{self as kt, RowPredicate, SourceParams};

use super::select::Feed;
use super::{SelectTopK, TopKAlgorithm, TopKOrder, TopKRows, TopKey, check_top_k};
use crate::error::{Error, Result};
use crate::ops::check_same_len;
use crate::runtime::{DeviceColumn, Gpu, PodBuffer};

/// Which rows a filter keeps, by the `u32` value each row has in the filter's column. The CPU
/// twins (`crate::cpu::top_k_where` and the others) take the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    /// `lo <= x <= hi` (nothing when `lo > hi`).
    Range {
        /// Smallest kept value.
        lo: u32,
        /// Largest kept value.
        hi: u32,
    },
    /// `x` equal to one of 1 to [`Keep::MAX_VALUES`] values (`x IN (...)`).
    In(Vec<u32>),
}

impl Keep {
    /// Most values of [`Keep::In`].
    pub const MAX_VALUES: usize = RowPredicate::MAX_VALUES;

    /// `x < v` (nothing when `v` is 0).
    pub fn lt(v: u32) -> Keep {
        match v.checked_sub(1) {
            Some(hi) => Keep::Range { lo: 0, hi },
            None => Keep::Range { lo: 1, hi: 0 },
        }
    }

    /// The predicate the kernels evaluate; `Err` for a set of no values or more than
    /// [`Keep::MAX_VALUES`].
    pub fn predicate(&self) -> Result<RowPredicate> {
        match self {
            Keep::Range { lo, hi } => Ok(RowPredicate::range(*lo, *hi)),
            Keep::In(values) => RowPredicate::set(values).ok_or_else(|| {
                Error::invalid(format!(
                    "top_k filter: IN takes 1 to {} values, got {}",
                    Keep::MAX_VALUES,
                    values.len()
                ))
            }),
        }
    }
}

/// A row filter of a [`TopKQuery`]: the rows whose value in `column` the [`Keep`] keeps.
#[derive(Clone, Debug)]
pub struct RowFilter<'a> {
    column: &'a DeviceColumn<u32>,
    keep: Keep,
}

impl<'a> RowFilter<'a> {
    /// The rows whose value in `column` `keep` keeps.
    pub fn new(column: &'a DeviceColumn<u32>, keep: Keep) -> RowFilter<'a> {
        RowFilter { column, keep }
    }

    /// `lo <= column <= hi`.
    pub fn range(column: &'a DeviceColumn<u32>, lo: u32, hi: u32) -> RowFilter<'a> {
        Self::new(column, Keep::Range { lo, hi })
    }

    /// `column < v`.
    pub fn lt(column: &'a DeviceColumn<u32>, v: u32) -> RowFilter<'a> {
        Self::new(column, Keep::lt(v))
    }

    /// `column IN (values)`: 1 to [`Keep::MAX_VALUES`] values, or the query is an `Err`.
    pub fn is_in(column: &'a DeviceColumn<u32>, values: &[u32]) -> RowFilter<'a> {
        Self::new(column, Keep::In(values.to_vec()))
    }

    /// What the filter keeps.
    pub fn keep(&self) -> &Keep {
        &self.keep
    }
}

/// What a query ranks by.
#[derive(Clone, Copy, Debug)]
enum Ranking<'a, K: TopKey> {
    Column(&'a DeviceColumn<K>),
    Linear {
        c0: &'a DeviceColumn<u32>,
        w0: f32,
        c1: &'a DeviceColumn<u32>,
        w1: f32,
    },
}

/// A top-k query on the GPU: `[WHERE filter] ORDER BY key LIMIT k`, the key a column or a
/// linear function of two `u32` columns; run by [`top_k_query`] or
/// [`SelectTopK::run_query`].
#[derive(Clone, Debug)]
pub struct TopKQuery<'a, K: TopKey> {
    ranking: Ranking<'a, K>,
    filter: Option<RowFilter<'a>>,
}

impl<'a, K: TopKey> TopKQuery<'a, K> {
    /// Ranks the rows by `keys`.
    pub fn column(keys: &'a DeviceColumn<K>) -> TopKQuery<'a, K> {
        TopKQuery {
            ranking: Ranking::Column(keys),
            filter: None,
        }
    }

    /// Keeps only the rows `filter` keeps (replacing an earlier filter).
    pub fn filter(mut self, filter: RowFilter<'a>) -> TopKQuery<'a, K> {
        self.filter = Some(filter);
        self
    }

    /// Rows of the table (the length of the first key column).
    pub fn rows(&self) -> usize {
        match self.ranking {
            Ranking::Column(keys) => keys.len(),
            Ranking::Linear { c0, .. } => c0.len(),
        }
    }

    /// Checks the query for a top-`k` before any work: `1 <= k <= rows`, every column as
    /// long as the first, a valid predicate. Returns the device constants.
    fn check(&self, k: usize) -> Result<SourceParams> {
        let (c1, mut params) = match self.ranking {
            Ranking::Linear { c1, w0, w1, .. } => (
                Some(c1.len()),
                SourceParams {
                    w0,
                    w1,
                    ..SourceParams::default()
                },
            ),
            Ranking::Column(_) => (None, SourceParams::default()),
        };
        let filter = self.filter.as_ref().map(|f| (f.column.len(), &f.keep));
        if let Some(keep) = check_query(self.rows(), k, c1, filter)? {
            params.keep = keep;
        }
        Ok(params)
    }
}

/// The checks of a fused top-k on the GPU and the CPU, before any work: `1 <= k <= n`, the
/// second key column (`c1`: its length) and the filter column (its length and what it keeps)
/// as long as the first, a valid predicate (returned).
pub(crate) fn check_query(
    n: usize,
    k: usize,
    c1: Option<usize>,
    filter: Option<(usize, &Keep)>,
) -> Result<Option<RowPredicate>> {
    check_top_k(n, k)?;
    if let Some(len) = c1 {
        check_same_len("top_k_query", "the second key column", len, n)?;
    }
    filter
        .map(|(len, keep)| {
            check_same_len("top_k_query", "the filter column", len, n)?;
            keep.predicate()
        })
        .transpose()
}

impl<'a> TopKQuery<'a, f32> {
    /// Ranks the rows by `w0 * c0 + w1 * c1` in `f32` (each `u32` converted to the nearest
    /// `f32`, each product and the sum rounded once, no fused multiply-add: the key
    /// `tessera_kernels::ops::topk::linear_key` computes, on the GPU and the CPU alike).
    pub fn linear(
        c0: &'a DeviceColumn<u32>,
        w0: f32,
        c1: &'a DeviceColumn<u32>,
        w1: f32,
    ) -> TopKQuery<'a, f32> {
        TopKQuery {
            ranking: Ranking::Linear { c0, w0, c1, w1 },
            filter: None,
        }
    }
}

impl SelectTopK {
    /// The `k` best rows of `query` by `order`, best first, with their keys and row ids in the
    /// table; every matching row, best first, where fewer than `k` match. `Err` before any
    /// work unless `1 <= k <= query.rows()`, every column has `query.rows()` items and an
    /// `IN` filter has 1 to [`Keep::MAX_VALUES`] values.
    pub fn run_query<K: TopKey>(
        &mut self,
        gpu: &Gpu,
        query: &TopKQuery<'_, K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<K>> {
        let params = query.check(k)?;
        let mut buf = match self.params.take() {
            Some(b) => b,
            None => PodBuffer::zeroed(gpu, 1)?,
        };
        buf.write(gpu, 0, &params)?;
        let fcol = query.filter.as_ref().map(|f| f.column);
        let filtered = fcol.is_some();
        let result = match query.ranking {
            Ranking::Column(keys) => {
                let feed = Feed {
                    c0: keys,
                    c1: None,
                    fcol,
                    params: Some(&buf),
                    kernels: if filtered { K::SELECT_WHERE } else { K::SELECT },
                };
                self.run_feed::<K, K>(gpu, &feed, k, order, TopKAlgorithm::Threshold)
            }
            // Only `TopKQuery::linear` makes this ranking, so `K` is `f32`, the key type of
            // the linear kernels.
            Ranking::Linear { c0, c1, .. } => {
                let feed = Feed {
                    c0,
                    c1: Some(c1),
                    fcol,
                    params: Some(&buf),
                    kernels: if filtered {
                        kt::TOPK_LINEAR_WHERE
                    } else {
                        kt::TOPK_LINEAR
                    },
                };
                self.run_feed::<K, u32>(gpu, &feed, k, order, TopKAlgorithm::Threshold)
            }
        };
        self.params = Some(buf);
        result
    }
}

/// The `k` best rows of `query` by `order` on the GPU, best first, with their keys and row ids
/// in the table (see [`SelectTopK::run_query`], which reuses its buffers across calls):
///
/// ```no_run
/// # fn main() -> tessera_host::Result<()> {
/// use tessera_host::Gpu;
/// use tessera_host::ops::{RowFilter, TopKOrder, TopKQuery, top_k_query};
/// let gpu = Gpu::new()?;
/// let (time, retweets, likes, lang) = (
///     gpu.upload(&[1u32, 2, 3, 4])?,
///     gpu.upload(&[5u32, 9, 7, 3])?,
///     gpu.upload(&[1u32, 0, 8, 2])?,
///     gpu.upload(&[0u32, 1, 2, 0])?,
/// );
/// // WHERE time < 4 ORDER BY retweets DESC LIMIT 2: rows 1 and 2.
/// let q = TopKQuery::column(&retweets).filter(RowFilter::lt(&time, 4));
/// assert_eq!(top_k_query(&gpu, &q, 2, TopKOrder::Largest)?.rows, [1, 2]);
/// // WHERE lang IN (0, 2) ORDER BY retweets + 0.5 * likes DESC LIMIT 2: rows 2 and 0.
/// let q = TopKQuery::linear(&retweets, 1.0, &likes, 0.5).filter(RowFilter::is_in(&lang, &[0, 2]));
/// assert_eq!(top_k_query(&gpu, &q, 2, TopKOrder::Largest)?.rows, [2, 0]);
/// # Ok(())
/// # }
/// ```
pub fn top_k_query<K: TopKey>(
    gpu: &Gpu,
    query: &TopKQuery<'_, K>,
    k: usize,
    order: TopKOrder,
) -> Result<TopKRows<K>> {
    query.check(k)?;
    SelectTopK::new(gpu)?.run_query(gpu, query, k, order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_builds_the_kernel_predicate() {
        let lt = Keep::lt(10).predicate().unwrap();
        assert!(lt.keeps(0) && lt.keeps(9) && !lt.keeps(10) && !lt.keeps(u32::MAX));
        let none = Keep::lt(0).predicate().unwrap();
        assert!(!none.keeps(0) && !none.keeps(1) && !none.keeps(u32::MAX));
        let all = Keep::Range {
            lo: 0,
            hi: u32::MAX,
        }
        .predicate()
        .unwrap();
        assert!(all.keeps(0) && all.keeps(u32::MAX));
        let set = Keep::In(vec![0, 2]).predicate().unwrap();
        assert!(set.keeps(0) && set.keeps(2) && !set.keeps(1) && !set.keeps(3));
        let four = Keep::In(vec![7, 1, 9, 4]).predicate().unwrap();
        assert!([7, 1, 9, 4].iter().all(|&x| four.keeps(x)));
        assert!(!four.keeps(0) && !four.keeps(2));
    }

    #[test]
    fn bad_sets_are_errors() {
        for values in [vec![], vec![1, 2, 3, 4, 5]] {
            let e = Keep::In(values).predicate().unwrap_err().to_string();
            assert!(e.contains("1 to 4 values"), "{e}");
        }
    }
}
