//! The CPU engine: hash joins in the thesis' "standalone CPU" style, multi-threaded with
//! rayon. It is the oracle of the GPU engine and the CPU side of the SSB benchmark.
//!
//! Per query: each joined dimension is built into a join table that maps a key to `-1` (the
//! row fails the query's predicates) or to the *rank* of its group value among the
//! qualifying rows; the probe then scans lineorder in parallel chunks, chains the lookups
//! (most selective dimension first), and adds each qualifying row's value to a per-task
//! group table indexed by the ranks (a mixed-radix number, so a group table has only as
//! many slots as there are group combinations). The tables are merged at the end.
use std::collections::HashMap;

use rayon::prelude::*;

use super::data::SsbData;
use super::engine::Engine;
use super::query::{Dim, GroupCol, Query, QueryParams, QueryResult, Row};
use tessera_host::Result;

/// Lineorder rows per parallel task.
const PROBE_CHUNK: usize = 1 << 16;

/// The CPU engine over one data set.
pub struct CpuEngine<'a> {
    data: &'a SsbData,
}

impl<'a> CpuEngine<'a> {
    /// An engine over `data`.
    pub fn new(data: &'a SsbData) -> CpuEngine<'a> {
        CpuEngine { data }
    }
}

impl Engine for CpuEngine<'_> {
    fn name(&self) -> &str {
        "cpu"
    }

    fn run(&self, q: Query) -> Result<QueryResult> {
        Ok(run(self.data, q))
    }
}

/// Key -> payload map of a dimension: a direct array over the key range when the keys are
/// dense (as dbgen's are: Crystal's "perfect hashing"), a hash map otherwise.
enum KeyMap {
    Dense { min: i32, slots: Vec<i32> },
    Hashed(HashMap<i32, i32>),
}

impl KeyMap {
    fn build(keys: &[i32], payload: &[i32]) -> KeyMap {
        let (Some(&min), Some(&max)) = (keys.iter().min(), keys.iter().max()) else {
            return KeyMap::Hashed(HashMap::new());
        };
        let span = (i64::from(max) - i64::from(min) + 1) as usize;
        if span <= 4 * keys.len() + 4096 && span < 1 << 31 {
            let mut slots = vec![-1; span];
            for (&k, &p) in keys.iter().zip(payload) {
                slots[(k - min) as usize] = p;
            }
            KeyMap::Dense { min, slots }
        } else {
            KeyMap::Hashed(keys.iter().copied().zip(payload.iter().copied()).collect())
        }
    }

    /// The payload of `key`, or -1 when it has none.
    #[inline]
    fn get(&self, key: i32) -> i32 {
        match self {
            // Keys below `min` wrap to offsets of 2^31 and more: out of range, as the span
            // is smaller.
            KeyMap::Dense { min, slots } => slots
                .get(key.wrapping_sub(*min) as u32 as usize)
                .copied()
                .unwrap_or(-1),
            KeyMap::Hashed(m) => m.get(&key).copied().unwrap_or(-1),
        }
    }
}

/// A built dimension: its join table, the group values by rank, and the rank's weight in
/// the group index.
struct Join<'a> {
    fk: &'a [i32],
    map: KeyMap,
    /// Group values of the ranks (one value, 0, when the dimension only filters).
    values: Vec<i32>,
    group: Option<GroupCol>,
    stride: usize,
    qualifying: usize,
    rows: usize,
}

/// Builds the join table of one dimension: `pass(i)` says whether row `i` qualifies and
/// `group(i)` is its group value.
fn build<'a>(
    fk: &'a [i32],
    keys: &[i32],
    group: Option<GroupCol>,
    pass: impl Fn(usize) -> bool + Sync,
    group_value: impl Fn(usize) -> i32 + Sync,
) -> Join<'a> {
    let ok: Vec<bool> = (0..keys.len()).into_par_iter().map(&pass).collect();
    let mut values: Vec<i32> = match group {
        Some(_) => (0..keys.len())
            .filter(|&i| ok[i])
            .map(&group_value)
            .collect(),
        None => vec![0],
    };
    values.sort_unstable();
    values.dedup();
    let rank: HashMap<i32, i32> = values
        .iter()
        .enumerate()
        .map(|(r, &v)| (v, r as i32))
        .collect();
    let payload: Vec<i32> = (0..keys.len())
        .map(|i| match (ok[i], group) {
            (false, _) => -1,
            (true, None) => 0,
            (true, Some(_)) => rank[&group_value(i)],
        })
        .collect();
    Join {
        fk,
        map: KeyMap::build(keys, &payload),
        values,
        group,
        stride: 0,
        qualifying: ok.iter().filter(|&&b| b).count(),
        rows: keys.len(),
    }
}

/// The group column a query takes from `dim`, if any.
fn group_of(p: &QueryParams, dim: Dim) -> Option<GroupCol> {
    p.group_by.iter().copied().find(|g| g.dim() == dim)
}

/// Runs query `q` over `data`.
pub fn run(data: &SsbData, q: Query) -> QueryResult {
    let p = q.params();
    let lo = &data.lineorder;
    let mut joins: Vec<Join> = Vec::new();
    if p.joins(Dim::Date) {
        let t = &data.date;
        let g = group_of(&p, Dim::Date);
        joins.push(build(
            &lo.lo_orderdate,
            &t.d_datekey,
            g,
            |i| p.date_matches(t, i),
            |i| t.d_year[i],
        ));
    }
    if p.joins(Dim::Part) {
        let t = &data.part;
        let g = group_of(&p, Dim::Part);
        let col = if g == Some(GroupCol::PCategory) {
            &t.p_category
        } else {
            &t.p_brand1
        };
        joins.push(build(
            &lo.lo_partkey,
            &t.p_partkey,
            g,
            |i| p.part_matches(t, i),
            |i| col[i],
        ));
    }
    if p.joins(Dim::Supplier) {
        let t = &data.supplier;
        let g = group_of(&p, Dim::Supplier);
        let col = if g == Some(GroupCol::SCity) {
            &t.s_city
        } else {
            &t.s_nation
        };
        joins.push(build(
            &lo.lo_suppkey,
            &t.s_suppkey,
            g,
            |i| p.supplier_matches(t, i),
            |i| col[i],
        ));
    }
    if p.joins(Dim::Customer) {
        let t = &data.customer;
        let g = group_of(&p, Dim::Customer);
        let col = if g == Some(GroupCol::CCity) {
            &t.c_city
        } else {
            &t.c_nation
        };
        joins.push(build(
            &lo.lo_custkey,
            &t.c_custkey,
            g,
            |i| p.customer_matches(t, i),
            |i| col[i],
        ));
    }
    // Group index: the ranks as a mixed-radix number, the first group column most significant.
    let mut groups = 1usize;
    for g in p.group_by.iter().rev() {
        let j = joins
            .iter_mut()
            .find(|j| j.group == Some(*g))
            .expect("every group column's dimension is joined");
        j.stride = groups;
        groups *= j.values.len();
    }
    if joins.iter().any(|j| j.qualifying == 0) {
        groups = 0;
    }
    // Probe the most selective dimension first, as the thesis' plans do.
    let selectivity = |j: &Join| j.qualifying as f64 / j.rows.max(1) as f64;
    joins.sort_by(|a, b| selectivity(a).total_cmp(&selectivity(b)));
    let (sums, counts) = probe(data, &p, &joins, groups);
    let mut rows = Vec::new();
    for g in 0..groups {
        if counts[g] == 0 {
            continue;
        }
        let values = p
            .group_by
            .iter()
            .map(|gc| {
                let j = joins
                    .iter()
                    .find(|j| j.group == Some(*gc))
                    .expect("joined above");
                j.values[g / j.stride % j.values.len()]
            })
            .collect();
        rows.push(Row {
            groups: values,
            value: sums[g],
        });
    }
    QueryResult::new(q, rows)
}

/// Scans lineorder in parallel chunks: per task a group table of sums and counts, merged.
fn probe(data: &SsbData, p: &QueryParams, joins: &[Join], groups: usize) -> (Vec<i64>, Vec<u64>) {
    let lo = &data.lineorder;
    let n = lo.lo_orderdate.len();
    if groups == 0 {
        return (Vec::new(), Vec::new());
    }
    let (disc, qty, agg) = (p.lo_discount, p.lo_quantity, p.agg);
    (0..n.div_ceil(PROBE_CHUNK))
        .into_par_iter()
        .fold(
            || (vec![0i64; groups], vec![0u64; groups]),
            |(mut sums, mut counts), c| {
                'row: for i in c * PROBE_CHUNK..((c + 1) * PROBE_CHUNK).min(n) {
                    if !disc.matches(lo.lo_discount[i]) || !qty.matches(lo.lo_quantity[i]) {
                        continue;
                    }
                    let mut g = 0;
                    for j in joins {
                        let r = j.map.get(j.fk[i]);
                        if r < 0 {
                            continue 'row;
                        }
                        g += r as usize * j.stride;
                    }
                    sums[g] += agg.value(
                        lo.lo_extendedprice[i],
                        lo.lo_discount[i],
                        lo.lo_revenue[i],
                        lo.lo_supplycost[i],
                    );
                    counts[g] += 1;
                }
                (sums, counts)
            },
        )
        .reduce(
            || (vec![0i64; groups], vec![0u64; groups]),
            |(mut s, mut c), (s2, c2)| {
                s.iter_mut().zip(s2).for_each(|(a, b)| *a += b);
                c.iter_mut().zip(c2).for_each(|(a, b)| *a += b);
                (s, c)
            },
        )
}
