//! Group-by on the CPU (rayon), sort-based: the rows' ids sorted by composite key (packed into
//! one integer from the columns' ranges where it fits 64 bits, as the GPU packs it; ties by row,
//! so the order within a group is the input's), group boundaries where the key changes, then
//! each group reduced in parallel. The oracle of the GPU variants and the benchmarks' CPU row.
use std::cmp::Ordering;

use rayon::prelude::*;
use tessera_kernels::ops::groupby_keys::{key_type, ordered_key};

use crate::error::Result;
use crate::ops::{Agg, Grouped, KeyColumn, ResultColumn, ValueColumn, check_group_by, key_layout};

/// Groups the rows of `keys` (the composite key) and computes `aggs` over `values` per group;
/// the result is ordered by key. Semantics, result types and errors as
/// [`crate::ops::check_group_by`]'s module documents them.
pub fn group_by(keys: &[KeyColumn], values: &[ValueColumn], aggs: &[Agg]) -> Result<Grouped> {
    let rows = check_group_by(keys, values, aggs)?;
    let order = sorted_rows(keys, rows);
    let same = |a: u32, b: u32| keys.iter().all(|k| key_cmp(k, a, b) == Ordering::Equal);
    // The first position of each group, then `rows` as the end of the last.
    let mut starts: Vec<usize> = (0..rows)
        .into_par_iter()
        .filter(|&p| p == 0 || !same(order[p - 1], order[p]))
        .collect();
    starts.push(rows);
    let groups: Vec<&[u32]> = starts.windows(2).map(|w| &order[w[0]..w[1]]).collect();
    let keys_out = keys
        .iter()
        .map(|k| {
            let first = |g: &&[u32]| g[0] as usize;
            match k {
                KeyColumn::U32(c) => {
                    ResultColumn::U32(groups.par_iter().map(|g| c[first(g)]).collect())
                }
                KeyColumn::I32(c) => {
                    ResultColumn::I32(groups.par_iter().map(|g| c[first(g)]).collect())
                }
                KeyColumn::I64(c) => {
                    ResultColumn::I64(groups.par_iter().map(|g| c[first(g)]).collect())
                }
            }
        })
        .collect();
    let aggregates = aggs
        .iter()
        .map(|&a| aggregate(a, values, &groups))
        .collect();
    Ok(Grouped {
        keys: keys_out,
        aggregates,
    })
}

/// Row ids in composite-key order, ties by row. As the GPU packs them: each column's offset
/// from its least value in as many bits as its range needs, the first column highest; keys of
/// up to 32 bits sort as `u64`s (key above, row below), of up to 64 as `u128`s, wider ones by
/// comparison.
fn sorted_rows(keys: &[KeyColumn], rows: usize) -> Vec<u32> {
    // Each column's range of ordered values, then the packed key's layout.
    let (fields, bits) = key_layout(keys.iter().map(|k| {
        let (lo, hi) = (0..rows)
            .into_par_iter()
            .map(|i| ordered(k, i))
            .fold(|| (u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)))
            .reduce(|| (u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        (key_type_of(k), lo, hi)
    }));
    let key = |i: usize| {
        keys.iter()
            .zip(&fields)
            .fold(0u64, |key, (k, f)| key | f.pack(ordered(k, i)))
    };
    if bits <= 32 {
        let mut v: Vec<u64> = (0..rows)
            .into_par_iter()
            .map(|i| key(i) << 32 | i as u64)
            .collect();
        v.par_sort_unstable();
        v.into_par_iter().map(|x| x as u32).collect()
    } else if bits <= 64 {
        let mut v: Vec<u128> = (0..rows)
            .into_par_iter()
            .map(|i| (key(i) as u128) << 32 | i as u128)
            .collect();
        v.par_sort_unstable();
        v.into_par_iter().map(|x| x as u32).collect()
    } else {
        let mut order: Vec<u32> = (0..rows as u32).collect();
        order.par_sort_unstable_by(|&a, &b| {
            keys.iter()
                .map(|k| key_cmp(k, a, b))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| a.cmp(&b))
        });
        order
    }
}

/// Row `i` of key column `k` as bits whose unsigned order is the column type's order.
fn ordered(k: &KeyColumn, i: usize) -> u64 {
    let word = match k {
        KeyColumn::U32(c) => c[i] as u64,
        KeyColumn::I32(c) => c[i] as u32 as u64,
        KeyColumn::I64(c) => c[i] as u64,
    };
    ordered_key(key_type_of(k), word)
}

/// The kernels' type code of a key column.
fn key_type_of(k: &KeyColumn) -> u32 {
    match k {
        KeyColumn::U32(_) => key_type::U32,
        KeyColumn::I32(_) => key_type::I32,
        KeyColumn::I64(_) => key_type::I64,
    }
}

/// Rows `a` and `b` of key column `k` compared.
fn key_cmp(k: &KeyColumn, a: u32, b: u32) -> Ordering {
    let (a, b) = (a as usize, b as usize);
    match k {
        KeyColumn::U32(c) => c[a].cmp(&c[b]),
        KeyColumn::I32(c) => c[a].cmp(&c[b]),
        KeyColumn::I64(c) => c[a].cmp(&c[b]),
    }
}

/// Aggregate `a` of every group (each group its rows, in input order).
fn aggregate(a: Agg, values: &[ValueColumn], groups: &[&[u32]]) -> ResultColumn {
    let Some(col) = a.column() else {
        return ResultColumn::U64(groups.par_iter().map(|g| g.len() as u64).collect());
    };
    macro_rules! per_group {
        ($c:expr, $f:expr) => {
            groups
                .par_iter()
                .map(|g| $f(g.iter().map(|&r| $c[r as usize])))
                .collect()
        };
    }
    match (a, values[col]) {
        (Agg::Sum(_), ValueColumn::U32(c)) => ResultColumn::U64(per_group!(c, sum_as::<u64, _>)),
        (Agg::Sum(_), ValueColumn::I32(c)) => ResultColumn::I64(per_group!(c, sum_as::<i64, _>)),
        (Agg::Sum(_), ValueColumn::F32(c)) => ResultColumn::F64(per_group!(c, sum_as::<f64, _>)),
        (Agg::Sum(_), ValueColumn::F64(c)) => ResultColumn::F64(per_group!(c, sum_as::<f64, _>)),
        (Agg::Mean(_), ValueColumn::U32(c)) => ResultColumn::F64(per_group!(c, |it: _| {
            let (s, n) = sum_count::<u64, _>(it);
            s as f64 / n as f64
        })),
        (Agg::Mean(_), ValueColumn::I32(c)) => ResultColumn::F64(per_group!(c, |it: _| {
            let (s, n) = sum_count::<i64, _>(it);
            s as f64 / n as f64
        })),
        (Agg::Mean(_), ValueColumn::F32(c)) => ResultColumn::F64(per_group!(c, |it: _| {
            let (s, n) = sum_count::<f64, _>(it);
            s / n as f64
        })),
        (Agg::Mean(_), ValueColumn::F64(c)) => ResultColumn::F64(per_group!(c, |it: _| {
            let (s, n) = sum_count::<f64, _>(it);
            s / n as f64
        })),
        (Agg::Min(_), ValueColumn::U32(c)) => {
            ResultColumn::U32(per_group!(c, |it: _| Iterator::min(it).expect("a group has rows")))
        }
        (Agg::Min(_), ValueColumn::I32(c)) => {
            ResultColumn::I32(per_group!(c, |it: _| Iterator::min(it).expect("a group has rows")))
        }
        (Agg::Max(_), ValueColumn::U32(c)) => {
            ResultColumn::U32(per_group!(c, |it: _| Iterator::max(it).expect("a group has rows")))
        }
        (Agg::Max(_), ValueColumn::I32(c)) => {
            ResultColumn::I32(per_group!(c, |it: _| Iterator::max(it).expect("a group has rows")))
        }
        (Agg::Min(_), ValueColumn::F32(c)) => {
            ResultColumn::F32(per_group!(c, |it: _| float_extreme(it, Ordering::Less)))
        }
        (Agg::Max(_), ValueColumn::F32(c)) => {
            ResultColumn::F32(per_group!(c, |it: _| float_extreme(it, Ordering::Greater)))
        }
        (Agg::Min(_), ValueColumn::F64(c)) => {
            ResultColumn::F64(per_group!(c, |it: _| float_extreme(it, Ordering::Less)))
        }
        (Agg::Max(_), ValueColumn::F64(c)) => {
            ResultColumn::F64(per_group!(c, |it: _| float_extreme(it, Ordering::Greater)))
        }
        (Agg::Count, _) => unreachable!("count reads no column"),
    }
}

/// A value widened to the sum's type.
trait Widen<T> {
    fn widen(self) -> T;
}
impl Widen<u64> for u32 {
    fn widen(self) -> u64 {
        self as u64
    }
}
impl Widen<i64> for i32 {
    fn widen(self) -> i64 {
        self as i64
    }
}
impl Widen<f64> for f32 {
    fn widen(self) -> f64 {
        self as f64
    }
}
impl Widen<f64> for f64 {
    fn widen(self) -> f64 {
        self
    }
}

fn sum_as<S: Default + std::ops::Add<Output = S>, V: Widen<S>>(it: impl Iterator<Item = V>) -> S {
    it.fold(S::default(), |s, v| s + v.widen())
}

fn sum_count<S: Default + std::ops::Add<Output = S>, V: Widen<S>>(
    it: impl Iterator<Item = V>,
) -> (S, u64) {
    it.fold((S::default(), 0), |(s, n), v| (s + v.widen(), n + 1))
}

/// A float type with the total order of the module documentation.
trait Float: Copy {
    const NAN: Self;
    fn is_nan(self) -> bool;
    fn total(self, other: Self) -> Ordering;
}
impl Float for f32 {
    const NAN: f32 = f32::NAN;
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn total(self, other: f32) -> Ordering {
        self.total_cmp(&other)
    }
}
impl Float for f64 {
    const NAN: f64 = f64::NAN;
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn total(self, other: f64) -> Ordering {
        self.total_cmp(&other)
    }
}

/// The least (`Less`) or greatest (`Greater`) value of a non-empty group, every NaN above
/// `+inf`; a NaN result canonical.
fn float_extreme<F: Float>(it: impl Iterator<Item = F>, want: Ordering) -> F {
    let rank = |x: F, y: F| match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.total(y),
    };
    let best = it
        .reduce(|b, v| if rank(v, b) == want { v } else { b })
        .expect("a group has rows");
    if best.is_nan() { F::NAN } else { best }
}
