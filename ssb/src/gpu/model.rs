//! The bytes-touched model of a query on the GPU engine, computed from the data.
//!
//! The thesis models q1.1 and q2.1 by the cache lines each lineorder column read touches: the
//! first column in full, every later one only where rows still qualify (`min(4|L|/C, |L|σ)`
//! per column, §3.7.3). Here the touched units are counted exactly, row by row, following the
//! probe kernel's own order of columns and tests, for two unit sizes: 32-byte sectors (what
//! [`tessera_host::ops`]' selective loads skip, and the model the engine is held to) and the thesis'
//! 128-byte lines. The dimension builds add their column reads and table writes; the hash
//! tables themselves are assumed to stay in L2 (the largest, part at SF 20, is 2 MB).
//!
//! [`packed_model`] counts the same way over the compressed columns: the sectors of their
//! arrays that hold the values the probe reads (a GPU-FOR value adds its block's index entry,
//! which holds its header), so that the compressed engine, too, is held to the bytes it must
//! read.
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use tessera_host::Result;
use tessera_host::compress::Encoded;
use tessera_kernels::compress::format::{
    BLOCK, MINIBLOCK, block_header, block_position, spans_next, width,
};
use tessera_kernels::ssb::plan::{self as P, column};

use super::packed::{Parts, check_columns, parts};
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

/// A row test.
type Test<'a> = Box<dyn Fn(i32) -> bool + Sync + 'a>;

/// A probe's step: a lineorder column and the test applied once it is read.
type Step<'a> = (FactCol, Test<'a>);

/// The probe kernel's steps for query `q`, in its order.
fn steps<'a>(data: &'a SsbData, q: Query) -> Vec<Step<'a>> {
    let p = q.params();
    let dim = |d| Qualifies::new(data, q, d);
    let pred = |pr: Pred| -> Test { Box::new(move |v| pr.matches(v)) };
    let qual = |d: usize| -> Test {
        let t = dim(d);
        Box::new(move |k| t.test(k))
    };
    let none = || -> Test { Box::new(|_| true) };
    match Flight::of(q) {
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
    }
}

/// The dimension builds' bytes, read and written: the key, the restricted columns and the
/// group column of each joined dimension read, its payload slots (2 bytes) and bitmap
/// written; the group table is cleared.
fn builds(data: &SsbData, q: Query) -> (f64, f64) {
    let p = q.params();
    let (mut build_read, mut build_written) = (0f64, 0f64);
    let joined: Vec<usize> = match Flight::of(q) {
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
    (build_read, build_written)
}

/// The model of query `q` over `data`.
pub fn model(data: &SsbData, q: Query) -> QueryModel {
    let steps = steps(data, q);
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
    let (build_read, build_written) = builds(data, q);
    QueryModel {
        read_bytes: sectors as f64 * 32.0 + build_read,
        written_bytes: build_written,
        line_read_bytes: lines as f64 * 128.0 + build_read,
        qualifying_rows: rows,
    }
}

/// The model of query `q` over the compressed query columns `encoded` (in [`FactCol::ALL`]
/// order, as the compressed probes read them): the 32-byte sectors of each column's arrays
/// that hold a value the probe reads, the first column's in full and a later one's only
/// where rows still qualify. A GPU-FOR value read adds its block's index entry, which holds
/// its header (a walk reads the header from the block's first words, in a sector it mostly
/// reads for its values too); the bits of a value are those of its miniblock's width.
/// `line_read_bytes` is left 0.
pub fn packed_model(data: &SsbData, q: Query, encoded: &[Encoded]) -> Result<QueryModel> {
    check_columns(encoded, data.lineorder.len())?;
    let steps = steps(data, q);
    let cols: Vec<&[i32]> = steps.iter().map(|(c, _)| c.of(data)).collect();
    // In `FactCol::ALL` order, as `check_columns` vouched.
    let parts: Vec<Parts> = steps
        .iter()
        .map(|&(c, _)| parts(&encoded[c as usize]))
        .collect::<Result<_>>()?;
    let touched: Vec<Touched> = parts.iter().map(Touched::new).collect();
    let n = data.lineorder.len();
    let rows = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let (lo, hi) = (b * BLOCK, ((b + 1) * BLOCK).min(n));
            let mut alive = [true; BLOCK];
            for (j, (_, test)) in steps.iter().enumerate() {
                touched[j].mark(&parts[j], b, &alive[..hi - lo]);
                for i in lo..hi {
                    alive[i - lo] = alive[i - lo] && test(cols[j][i]);
                }
            }
            alive[..hi - lo].iter().filter(|&&a| a).count() as u64
        })
        .sum();
    let sectors: u64 = touched.iter().map(Touched::count).sum();
    let (build_read, build_written) = builds(data, q);
    Ok(QueryModel {
        read_bytes: sectors as f64 * 32.0 + build_read,
        written_bytes: build_written,
        line_read_bytes: 0.0,
        qualifying_rows: rows,
    })
}

/// The 32-byte sectors of a column's arrays that a probe touches: one bit each, for the data
/// and for GPU-FOR's block index ([`P::PackedCol::index`]).
struct Touched {
    data: Vec<AtomicU64>,
    index: Vec<AtomicU64>,
}

impl Touched {
    fn new(p: &Parts) -> Touched {
        let bits = |words: usize| {
            (0..words.div_ceil(8 * 64))
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        Touched {
            data: bits(p.data.len()),
            index: bits(p.block_starts().len() * P::INDEX_WORDS),
        }
    }

    /// Marks the sectors of the values of block `b` (rows `b * BLOCK..`) that are `alive`.
    fn mark(&self, p: &Parts, b: usize, alive: &[bool]) {
        let set = |bits: &[AtomicU64], word: usize| {
            let sector = word / 8;
            bits[sector / 64].fetch_or(1 << (sector % 64), Ordering::Relaxed);
        };
        let rows = alive
            .iter()
            .enumerate()
            .filter(|(_, a)| **a)
            .map(|(i, _)| b * BLOCK + i);
        match p.kind {
            column::GPU_FOR => {
                if !alive.contains(&true) {
                    return;
                }
                set(&self.index, b * P::INDEX_WORDS);
                let s = p.starts[b] as usize;
                // The header counts as the index entry, where a row read finds it.
                let (_, widths) = block_header(&p.data[s..]);
                for i in rows {
                    let w = width(widths, i % BLOCK / MINIBLOCK);
                    if w == 0 {
                        continue;
                    }
                    let (word, bit) = block_position(widths, i % BLOCK);
                    set(&self.data, s + word);
                    if spans_next(bit, w) {
                        set(&self.data, s + word + 1);
                    }
                }
            }
            column::NSF1 => rows.for_each(|i| set(&self.data, i / 4)),
            column::NSF2 => rows.for_each(|i| set(&self.data, i / 2)),
            _ => rows.for_each(|i| set(&self.data, i)),
        }
    }

    fn count(&self) -> u64 {
        let ones = |bits: &[AtomicU64]| -> u64 {
            bits.iter()
                .map(|w| w.load(Ordering::Relaxed).count_ones() as u64)
                .sum()
        };
        ones(&self.data) + ones(&self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::{first_share, model, packed_model, part_first, steps};
    use crate::generator::{GenConfig, generate};
    use crate::gpu::FactCol;
    use crate::gpu::plan::QUEUE_BELOW;
    use crate::query::Query;
    use tessera_host::compress::{Encoded, Scheme};

    #[test]
    fn the_compressed_model_counts_what_the_probes_read() {
        let data = generate(&GenConfig::new(0.01)).unwrap();
        let columns = |scheme: Scheme| -> Vec<Encoded> {
            FactCol::ALL
                .iter()
                .map(|c| scheme.encode(bytemuck::cast_slice(c.of(&data))).unwrap())
                .collect()
        };
        let (plain, nsf, gpu_for) = (
            columns(Scheme::Plain),
            columns(Scheme::Nsf),
            columns(Scheme::For),
        );
        for &q in Query::ALL.iter() {
            // Over 4-byte values, the sectors are the uncompressed model's.
            let m = model(&data, q);
            let p = packed_model(&data, q, &plain).unwrap();
            assert_eq!(p.read_bytes, m.read_bytes, "{}", q.name());
            assert_eq!(p.qualifying_rows, m.qualifying_rows, "{}", q.name());
            // Narrower values touch fewer sectors; GPU-FOR's first column is read whole,
            // block starts included.
            let n = packed_model(&data, q, &nsf).unwrap();
            let f = packed_model(&data, q, &gpu_for).unwrap();
            assert!(n.read_bytes < m.read_bytes, "{}", q.name());
            assert!(f.read_bytes < m.read_bytes, "{}", q.name());
            let Encoded::For(first) = &gpu_for[steps(&data, q)[0].0 as usize] else {
                panic!("GPU-FOR columns");
            };
            let blocks = first.block_starts().len() - 1;
            let index = blocks * tessera_kernels::ssb::plan::INDEX_WORDS;
            let whole = (first.data().len().div_ceil(8) + index / 8) * 32;
            assert!(f.read_bytes >= whole as f64, "{}", q.name());
        }
        // A column the probes cannot read, or of another length, is refused.
        let mut short = plain.clone();
        short[0] = Scheme::Plain.encode(&[1, 2, 3]).unwrap();
        assert!(packed_model(&data, Query::Q1_1, &short).is_err());
    }

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
