//! The bytes-touched model of a query on the GPU engine, computed from the data.
//!
//! The thesis models q1.1 and q2.1 by the cache lines each lineorder column read touches: the
//! first column in full, every later one only where rows still qualify (`min(4|L|/C, |L|σ)`
//! per column, §3.7.3). Here the touched units are counted exactly, row by row, following the
//! probe kernel's own order of columns and tests, for two unit sizes: 32-byte sectors (what
//! [`tessera_host::ops`]' selective loads skip, and the model the engine is held to) and the thesis'
//! 128-byte lines. The dimension builds add their column reads and table writes; the hash
//! tables themselves are assumed to stay in L2 (the largest, part at SF 20, is 2 MB).
use rayon::prelude::*;
use tessera_kernels::ssb::plan as P;

use super::{FactCol, Flight, dim_columns, dim_preds};
use crate::data::SsbData;
use crate::query::{Pred, Query};

/// Bytes a query moves.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryModel {
    /// Bytes read, counting 32-byte sectors of lineorder columns.
    pub read_bytes: f64,
    /// Bytes written (dimension tables, bitmaps, the group table's clearing).
    pub written_bytes: f64,
    /// Bytes read counting 128-byte lines instead (the thesis' C = 128).
    pub line_read_bytes: f64,
    /// Lineorder rows that reach the aggregate.
    pub qualifying_rows: u64,
}

/// Rows per sector and per line of a 4-byte column.
const SECTOR: usize = 8;
const LINE: usize = 32;

/// Which keys of a dimension qualify, indexed by `key - min`.
struct Qualifies {
    min: i64,
    ok: Vec<bool>,
}

impl Qualifies {
    fn new(data: &SsbData, q: Query, d: usize) -> Qualifies {
        let p = q.params();
        let cols = dim_columns(data, d);
        let preds = dim_preds(&p, d);
        let keys = cols[0];
        let min = keys.iter().copied().min().unwrap_or(0) as i64;
        let max = keys.iter().copied().max().unwrap_or(-1) as i64;
        let mut ok = vec![false; (max - min + 1).max(0) as usize];
        for i in 0..keys.len() {
            if preds
                .iter()
                .enumerate()
                .all(|(c, pr)| pr.matches(cols[c + 1][i]))
            {
                ok[(keys[i] as i64 - min) as usize] = true;
            }
        }
        Qualifies { min, ok }
    }

    fn test(&self, key: i32) -> bool {
        let s = key as i64 - self.min;
        s >= 0 && (s as usize) < self.ok.len() && self.ok[s as usize]
    }
}

/// Whether flight 4 joins part before customer: the share of qualifying part keys is the
/// smaller one (q4.3), so fewer rows reach the second lookup. Else customer goes first: its
/// table is also the smaller one.
pub(crate) fn part_first(data: &SsbData, q: Query) -> bool {
    share(data, q, P::PART) < share(data, q, P::CUSTOMER)
}

/// The share of dimension `d`'s rows that qualify for query `q`.
fn share(data: &SsbData, q: Query, d: usize) -> f64 {
    let rows = dim_columns(data, d)[0].len().max(1) as f64;
    Qualifies::new(data, q, d).ok.iter().filter(|&&k| k).count() as f64 / rows
}

/// The share of lineorder rows the probe's first test keeps, estimated from its dimension:
/// the qualifying dates for flight 1 (order dates spread evenly over the date table), the
/// qualifying suppliers for flights 2-4.
pub(crate) fn first_share(data: &SsbData, q: Query) -> f64 {
    let d = match Flight::of(q) {
        Flight::One => P::DATE,
        _ => P::SUPPLIER,
    };
    share(data, q, d)
}

/// The model of query `q` over `data`.
pub fn model(data: &SsbData, q: Query) -> QueryModel {
    let p = q.params();
    let flight = Flight::of(q);
    let dim = |d| Qualifies::new(data, q, d);
    type Test<'a> = Box<dyn Fn(i32) -> bool + Sync + 'a>;
    let pred = |pr: Pred| -> Test { Box::new(move |v| pr.matches(v)) };
    let qual = |d: usize| -> Test {
        let t = dim(d);
        Box::new(move |k| t.test(k))
    };
    let none = || -> Test { Box::new(|_| true) };
    // The kernel's steps: a column and the test applied once it is loaded.
    let steps: Vec<(FactCol, Test)> = match flight {
        Flight::One => {
            let date: Test = match p.orderdate_range(&data.date) {
                Some((lo, hi)) => Box::new(move |v| lo <= v && v <= hi),
                None => qual(P::DATE),
            };
            vec![
                (FactCol::OrderDate, date),
                (FactCol::Discount, pred(p.lo_discount)),
                (FactCol::Quantity, pred(p.lo_quantity)),
                (FactCol::ExtendedPrice, none()),
            ]
        }
        Flight::Two => vec![
            (FactCol::SuppKey, qual(P::SUPPLIER)),
            (FactCol::PartKey, qual(P::PART)),
            (FactCol::OrderDate, qual(P::DATE)),
            (FactCol::Revenue, none()),
        ],
        Flight::Three => vec![
            (FactCol::SuppKey, qual(P::SUPPLIER)),
            (FactCol::CustKey, qual(P::CUSTOMER)),
            (FactCol::OrderDate, qual(P::DATE)),
            (FactCol::Revenue, none()),
        ],
        Flight::Four => {
            let (part, customer) = ((FactCol::PartKey, P::PART), (FactCol::CustKey, P::CUSTOMER));
            let (a, b) = if part_first(data, q) {
                (part, customer)
            } else {
                (customer, part)
            };
            vec![
                (FactCol::SuppKey, qual(P::SUPPLIER)),
                (a.0, qual(a.1)),
                (b.0, qual(b.1)),
                (FactCol::OrderDate, qual(P::DATE)),
                (FactCol::Revenue, none()),
                (FactCol::SupplyCost, none()),
            ]
        }
    };
    let cols: Vec<&[i32]> = steps.iter().map(|(c, _)| c.of(data)).collect();
    let n = data.lineorder.len();
    // Per line of 32 rows: the sectors and the line each column touches.
    let (sectors, lines, rows) = (0..n.div_ceil(LINE))
        .into_par_iter()
        .map(|l| {
            let (lo, hi) = (l * LINE, ((l + 1) * LINE).min(n));
            let mut alive = [true; LINE];
            let mut sectors = 0u64;
            let mut lines = 0u64;
            for (j, (_, test)) in steps.iter().enumerate() {
                let mut any_line = false;
                for s in (lo..hi).step_by(SECTOR) {
                    let e = (s + SECTOR).min(hi);
                    if (s..e).any(|i| alive[i - lo]) {
                        sectors += 1;
                        any_line = true;
                    }
                }
                lines += any_line as u64;
                for i in lo..hi {
                    alive[i - lo] = alive[i - lo] && test(cols[j][i]);
                }
            }
            let rows = alive[..hi - lo].iter().filter(|&&a| a).count() as u64;
            (sectors, lines, rows)
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    // Builds: read the key, the restricted columns and the group column of each joined
    // dimension, write its payload slots (2 bytes) and bitmap; the group table is cleared.
    let (mut build_read, mut build_written) = (0f64, 0f64);
    let joined: Vec<usize> = match flight {
        Flight::One if p.orderdate_range(&data.date).is_some() => vec![],
        Flight::One => vec![P::DATE],
        Flight::Two => vec![P::DATE, P::PART, P::SUPPLIER],
        Flight::Three => vec![P::DATE, P::SUPPLIER, P::CUSTOMER],
        Flight::Four => vec![P::DATE, P::PART, P::SUPPLIER, P::CUSTOMER],
    };
    for d in joined {
        let cols = dim_columns(data, d);
        let rows = cols[0].len() as f64;
        let restricted = dim_preds(&p, d).iter().filter(|pr| !pr.is_any()).count();
        build_read += rows * 4.0 * (2 + restricted) as f64;
        let span = Qualifies::new(data, q, d).ok.len() as f64;
        build_written += span * 2.0 + span / 8.0;
        // The supplier's code map when the query groups by it.
        if d == P::SUPPLIER && p.group_by.iter().any(|&g| super::group_source(g).0 == d) {
            build_written += (P::code_words(span as usize) * 4) as f64;
        }
    }
    build_written += (P::GLOBAL_GROUPS * 12) as f64;
    QueryModel {
        read_bytes: sectors as f64 * 32.0 + build_read,
        written_bytes: build_written,
        line_read_bytes: lines as f64 * 128.0 + build_read,
        qualifying_rows: rows,
    }
}

#[cfg(test)]
mod tests {
    use super::{first_share, part_first};
    use crate::generator::{GenConfig, generate};
    use crate::gpu::plan::QUEUE_BELOW;
    use crate::query::Query;

    #[test]
    fn flight_4_joins_the_narrower_of_part_and_customer_first() {
        let data = generate(&GenConfig::new(0.01)).unwrap();
        // q4.1 / q4.2: customers of one region (1 in 5) against parts of two manufacturers
        // (2 in 5); q4.3: one category (1 in 25) against the same customers.
        assert!(!part_first(&data, Query::Q4_1));
        assert!(!part_first(&data, Query::Q4_2));
        assert!(part_first(&data, Query::Q4_3));
    }

    #[test]
    fn the_selective_first_tests_queue_their_survivors() {
        let data = generate(&GenConfig::new(0.05)).unwrap();
        // A year of dates (1 in 7) and a region of suppliers (1 in 5) keep too many rows; a
        // month or a week, a nation (1 in 25) or two cities (2 in 250) few enough.
        let selective = |q: Query| first_share(&data, q) < QUEUE_BELOW;
        let queued: Vec<&str> = Query::ALL
            .iter()
            .filter(|&&q| selective(q))
            .map(|q| q.name())
            .collect();
        assert_eq!(queued, ["q1.2", "q1.3", "q3.2", "q3.3", "q3.4", "q4.3"]);
        let year = first_share(&data, Query::Q1_1);
        assert!((year - 1.0 / 7.0).abs() < 0.01, "q1.1 keeps {year}");
    }
}
