//! The checks a data set passes before any query runs on it. Each guards an assumption of the
//! engines that would otherwise give a silent wrong answer:
//!
//! * every column of a table has the same row count;
//! * every dictionary-encoded value is a code of its dictionary;
//! * dimension keys are unique and dense: `p_partkey`, `s_suppkey` and `c_custkey` are
//!   `1..=N` for `N` rows (as dbgen writes them; the join tables are indexed by key and keep
//!   one row per key, where SQL would join every copy), `d_datekey` valid `yyyymmdd` dates of
//!   consecutive days (dbgen's are 1992-01-01 ..= 1998-12-30);
//! * every lineorder row's foreign keys (`lo_custkey`, `lo_partkey`, `lo_suppkey`,
//!   `lo_orderdate`) have their dimension row: the engines drop a row that has none (and
//!   flight 1's join-free date range test would count it), so mixing the tables of two data
//!   sets (two scale factors) could not be noticed in the results;
//! * [`complete`] (a data set as stored or loaded): in addition, no table is empty.
//!
//! [`consistent`] is what [`SsbData::validate`] runs; [`complete`] is
//! [`SsbData::validate_complete`]. Errors are [`Error::Data`] naming the table, the column,
//! the first offending row (rows count from 0) and value, and the fix. The lineorder passes
//! run in parallel over chunks, each a branch-free range or bitmap test per value.
use rayon::prelude::*;

use super::calendar::{civil_from_days, days_from_civil, split_datekey};
use super::data::{Customer, Date, Lineorder, Part, SsbData, Supplier};
use super::dict::dicts;
use tessera_host::{Error, Result};

/// The fix for data that mixes data sets or was edited: make it again from one source.
const REMAKE: &str = "regenerate the data set (`tessera ssb gen`) or load all five .tbl files \
                      of one dbgen run (`tessera ssb load-tbl`)";

/// Values per parallel task of the column passes.
const CHUNK: usize = 1 << 16;

/// The first position in `col` whose value fails `ok`, scanning chunks in parallel (each
/// chunk's test has no early exit, so it vectorizes; only a failing chunk is searched).
fn first_failing(col: &[i32], ok: impl Fn(i32) -> bool + Sync) -> Option<usize> {
    col.par_chunks(CHUNK)
        .enumerate()
        .find_first(|(_, c)| !c.iter().fold(true, |all, &v| all & ok(v)))
        .map(|(i, c)| i * CHUNK + c.iter().position(|&v| !ok(v)).expect("a failing value"))
}

/// Where the table's rows came from, for messages: `" (customer.tbl in DIR)"` or nothing.
fn origin(data: &SsbData, table: &str) -> String {
    data.meta
        .source
        .strip_prefix("tbl:")
        .map_or_else(String::new, |dir| format!(" ({table}.tbl in {dir})"))
}

/// Every check but the emptiness of tables: what the engines rely on (an empty lineorder
/// gives empty results, and so does a data set with no rows at all).
pub fn consistent(data: &SsbData) -> Result<()> {
    row_counts(data)?;
    codes(data)?;
    if !data.lineorder.is_empty()
        && let Some((table, _)) = data.tables()[1..].iter().find(|(_, c)| c[0].1.is_empty())
    {
        return Err(empty(data, table));
    }
    dense_keys(Part::NAME, "p_partkey", &data.part.p_partkey)?;
    dense_keys(Supplier::NAME, "s_suppkey", &data.supplier.s_suppkey)?;
    dense_keys(Customer::NAME, "c_custkey", &data.customer.c_custkey)?;
    let dates = DateKeys::of(&data.date.d_datekey)?;
    foreign_keys(data, &dates)
}

/// [`consistent`], and every table has rows: what a data set written or loaded must be.
pub fn complete(data: &SsbData) -> Result<()> {
    for (table, cols) in data.tables() {
        if cols[0].1.is_empty() {
            return Err(empty(data, table));
        }
    }
    consistent(data)
}

fn empty(data: &SsbData, table: &str) -> Error {
    Error::Data(format!(
        "table {table} has no rows{}: an SSB data set needs all five tables (was its file \
         empty or cut short?); {REMAKE}",
        origin(data, table)
    ))
}

/// Every column of a table has the first column's row count.
fn row_counts(data: &SsbData) -> Result<()> {
    for (table, cols) in data.tables() {
        let (first, n) = (cols[0].0, cols[0].1.len());
        if let Some((name, col)) = cols.iter().find(|(_, c)| c.len() != n) {
            return Err(Error::Data(format!(
                "table {table}: column {name} has {} rows, {first} has {n}: the columns of a \
                 table come from different data sets or a file was cut short; {REMAKE}",
                col.len()
            )));
        }
    }
    Ok(())
}

/// Every dictionary-encoded value is a code of its dictionary.
fn codes(data: &SsbData) -> Result<()> {
    let d = dicts();
    for (table, cols) in data.tables() {
        for (name, col) in &cols {
            let Some(dict) = d.for_column(name) else {
                continue;
            };
            let len = dict.len() as u32;
            if let Some(row) = first_failing(col, |c| (c as u32) < len) {
                return Err(Error::Data(format!(
                    "table {table}: column {name} {} holds {}, not a code of the {} \
                     dictionary ({} values): the file was not written by this tessera; {REMAKE}",
                    Row(row),
                    col[row],
                    dict.name(),
                    dict.len()
                )));
            }
        }
    }
    Ok(())
}

/// The first of the slots `0..n` that none of `slots` is (slots out of range are ignored).
fn first_gap(n: usize, slots: impl Iterator<Item = usize>) -> Option<usize> {
    let mut seen = vec![false; n];
    for s in slots.filter(|&s| s < n) {
        seen[s] = true;
    }
    seen.iter().position(|&s| !s)
}

/// A row in messages, counted from 1: for a table loaded from `.tbl`, its line number.
struct Row(usize);

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "row {}", self.0 + 1)
    }
}

/// The error of a key seen twice, at rows `first` and `second`.
fn duplicate(table: &str, column: &str, key: i32, first: usize, second: usize) -> Error {
    Error::Data(format!(
        "table {table}: {column} {key} appears again: at rows {} and {}: dimension \
         keys must be unique (SQL joins every copy, tessera's join tables keep one, so results \
         would differ); remove the duplicate rows, or {REMAKE}",
        first + 1,
        second + 1
    ))
}

/// Checks that `keys` are `1..=N` for `N` rows, in any order: the first key out of that range
/// (there is then a gap, named too) or seen a second time is an error.
fn dense_keys(table: &str, column: &str, keys: &[i32]) -> Result<()> {
    let n = keys.len();
    let mut seen = vec![0u64; n / 64 + 1];
    for (row, &k) in keys.iter().enumerate() {
        let slot = (k as u32).wrapping_sub(1) as usize;
        if slot >= n {
            let gap = first_gap(n, keys.iter().map(|&k| (k as u32).wrapping_sub(1) as usize));
            return Err(Error::Data(format!(
                "table {table}: {} holds {column} {k}, outside 1..={n}: keys must be \
                 1..=N for N rows, as dbgen writes them (the engines index their join tables \
                 by key){}; {REMAKE}",
                Row(row),
                gap.map_or_else(String::new, |s| format!("; key {} has no row", s + 1))
            )));
        }
        let (w, b) = (slot / 64, 1u64 << (slot % 64));
        if seen[w] & b != 0 {
            let first = keys.iter().position(|&x| x == k).expect("seen before");
            return Err(duplicate(table, column, k, first, row));
        }
        seen[w] |= b;
    }
    Ok(())
}

/// The date keys as a bitmap over their `yyyymmdd` range (for the lineorder pass).
struct DateKeys {
    min: i32,
    max: i32,
    /// Bit `k - min` is set when `k` is a key; the bit past the range is clear.
    bits: Vec<u64>,
}

impl DateKeys {
    /// Checks that `d_datekey` holds valid dates, each once, of consecutive days (in any
    /// order), and returns them as a bitmap.
    fn of(keys: &[i32]) -> Result<DateKeys> {
        const COL: &str = "d_datekey";
        let mut days = Vec::with_capacity(keys.len());
        for (row, &k) in keys.iter().enumerate() {
            let Some((y, m, d)) = split_datekey(k) else {
                return Err(Error::Data(format!(
                    "table {}: {} holds {COL} {k}, not a yyyymmdd date; {REMAKE}",
                    Date::NAME,
                    Row(row)
                )));
            };
            days.push(days_from_civil(y, m, d));
        }
        let Some(&first) = days.iter().min() else {
            return Ok(DateKeys {
                min: 0,
                max: -1,
                bits: vec![0],
            });
        };
        let n = keys.len();
        let key_of = |day: i64| {
            let (y, m, d) = civil_from_days(day);
            super::calendar::datekey(y, m, d)
        };
        let mut seen = vec![false; n];
        for (row, &day) in days.iter().enumerate() {
            let slot = (day - first) as usize;
            if slot >= n {
                let gap = first_gap(n, days.iter().map(|&d| (d - first) as usize));
                return Err(Error::Data(format!(
                    "table {}: {} holds {COL} {}, but {n} rows of consecutive days from \
                     {} end at {}{}: the date table must hold consecutive days, as dbgen's \
                     1992-01-01 ..= 1998-12-30; {REMAKE}",
                    Date::NAME,
                    Row(row),
                    keys[row],
                    key_of(first),
                    key_of(first + n as i64 - 1),
                    gap.map_or_else(String::new, |s| format!(
                        " (day {} has no row)",
                        key_of(first + s as i64)
                    )),
                )));
            }
            if seen[slot] {
                let at = days.iter().position(|&d| d == day).expect("seen before");
                return Err(duplicate(Date::NAME, COL, keys[row], at, row));
            }
            seen[slot] = true;
        }
        let (min, max) = (key_of(first), key_of(first + n as i64 - 1));
        let span = (max - min) as usize + 1;
        let mut bits = vec![0u64; span / 64 + 1];
        for &k in keys {
            let o = (k - min) as usize;
            bits[o / 64] |= 1 << (o % 64);
        }
        Ok(DateKeys { min, max, bits })
    }

    /// Whether `key` is a date key (no branch: keys out of range read the clear bit).
    #[inline]
    fn contains(&self, key: i32) -> bool {
        let span = (self.max.wrapping_sub(self.min) as u32).wrapping_add(1);
        let o = (key.wrapping_sub(self.min) as u32).min(span) as usize;
        self.bits[o / 64] >> (o % 64) & 1 != 0
    }
}

/// Every lineorder foreign key has its dimension row (the dimensions passed the key checks:
/// a key of `1..=N` keys is a range test, a date a bitmap test).
fn foreign_keys(data: &SsbData, dates: &DateKeys) -> Result<()> {
    let lo = &data.lineorder;
    let dense = [
        (
            "lo_custkey",
            lo.lo_custkey.as_slice(),
            Customer::NAME,
            "c_custkey",
            data.customer.len(),
        ),
        (
            "lo_partkey",
            lo.lo_partkey.as_slice(),
            Part::NAME,
            "p_partkey",
            data.part.len(),
        ),
        (
            "lo_suppkey",
            lo.lo_suppkey.as_slice(),
            Supplier::NAME,
            "s_suppkey",
            data.supplier.len(),
        ),
    ];
    // One parallel pass per column; the smallest failing row wins (the first column's on a
    // tie).
    let mut failures: Vec<(usize, String)> = dense
        .iter()
        .filter_map(|&(fk, col, dim, key, n)| {
            let n32 = n as u32;
            first_failing(col, |v| (v as u32).wrapping_sub(1) < n32).map(|row| {
                let what = format!("{dim} row ({key} is 1..={n})");
                (row, message(data, row, fk, col[row], &what, dim))
            })
        })
        .collect();
    if let Some(row) = first_failing(&lo.lo_orderdate, |v| dates.contains(v)) {
        let what = if dates.max < dates.min {
            "date row (the date table is empty)".to_string()
        } else {
            format!("date row (d_datekey is {}..={})", dates.min, dates.max)
        };
        let v = lo.lo_orderdate[row];
        failures.push((
            row,
            message(data, row, "lo_orderdate", v, &what, Date::NAME),
        ));
    }
    match failures.into_iter().min_by_key(|(row, _)| *row) {
        Some((_, msg)) => Err(Error::Data(msg)),
        None => Ok(()),
    }
}

fn message(data: &SsbData, row: usize, fk: &str, value: i32, what: &str, dim: &str) -> String {
    format!(
        "table {}: {} holds {fk} {value}, which has no {what}{}: lineorder and {dim} are \
         not from one data set (another scale factor?); {REMAKE}",
        Lineorder::NAME,
        Row(row),
        origin(data, Lineorder::NAME)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GenConfig, generate};

    /// SF 0.01, generated once.
    fn base() -> &'static SsbData {
        static DATA: std::sync::OnceLock<SsbData> = std::sync::OnceLock::new();
        DATA.get_or_init(|| generate(&GenConfig::new(0.01)).unwrap())
    }

    fn err(data: &SsbData) -> String {
        data.validate().unwrap_err().to_string()
    }

    fn has(e: &str, needles: &[&str]) {
        for n in needles {
            assert!(e.contains(n), "{n:?} missing from: {e}");
        }
    }

    #[test]
    fn first_failing_finds_the_first_across_chunks() {
        let mut col = vec![1; 5 * CHUNK + 17];
        assert_eq!(first_failing(&col, |v| v == 1), None);
        for at in [5 * CHUNK + 16, 3 * CHUNK, CHUNK - 1, 0] {
            col[at] = 2;
            assert_eq!(first_failing(&col, |v| v == 1), Some(at));
        }
    }

    #[test]
    fn generated_data_passes() {
        base().validate().unwrap();
        base().validate_complete().unwrap();
    }

    #[test]
    fn duplicate_dimension_keys_are_refused() {
        let mut d = base().clone();
        d.supplier.s_suppkey[9] = 7;
        has(
            &err(&d),
            &[
                "supplier",
                "s_suppkey 7 appears again: at rows 7 and 10",
                "unique",
            ],
        );
        let mut d = base().clone();
        d.date.d_datekey[3] = d.date.d_datekey[1];
        has(
            &err(&d),
            &["date", "d_datekey 19920102 appears again: at rows 2 and 4"],
        );
    }

    #[test]
    fn sparse_dimension_keys_are_refused() {
        let mut d = base().clone();
        d.customer.c_custkey[4] = 99_999;
        has(
            &err(&d),
            &[
                "customer: row 5 holds c_custkey 99999, outside 1..=300",
                "; key 5 has no row",
            ],
        );
        let mut d = base().clone();
        d.part.p_partkey[0] = 0;
        has(
            &err(&d),
            &["part: row 1 holds p_partkey 0", "key 1 has no row"],
        );
        let mut d = base().clone();
        d.date.d_datekey[10] = 19990105;
        has(
            &err(&d),
            &[
                "date: row 11 holds d_datekey 19990105",
                "day 19920111 has no row",
                "consecutive",
            ],
        );
        let mut d = base().clone();
        d.date.d_datekey[10] = 19920231;
        has(
            &err(&d),
            &["row 11 holds d_datekey 19920231, not a yyyymmdd date"],
        );
    }

    #[test]
    fn foreign_keys_without_a_dimension_row_are_refused() {
        let mut d = base().clone();
        let n = d.lineorder.len();
        d.lineorder.lo_suppkey[n - 3] = 99_999;
        d.lineorder.lo_custkey[n - 2] = 99_999;
        has(
            &err(&d),
            &[
                &format!("lineorder: row {} holds lo_suppkey 99999", n - 2),
                "no supplier row (s_suppkey is 1..=20)",
                "another scale factor",
            ],
        );
        let mut d = base().clone();
        d.lineorder.lo_orderdate[50_000] = 19920231;
        has(
            &err(&d),
            &[
                "row 50001 holds lo_orderdate 19920231",
                "no date row (d_datekey is 19920101..=19981230)",
            ],
        );
        // Below and above the date range.
        for (v, row) in [(19911231, 5), (19990101, 6)] {
            let mut d = base().clone();
            d.lineorder.lo_orderdate[row] = v;
            has(
                &err(&d),
                &[&format!("row {} holds lo_orderdate {v}", row + 1)],
            );
        }
        let mut d = base().clone();
        d.lineorder.lo_partkey[1] = -1;
        has(
            &err(&d),
            &[
                "row 2 holds lo_partkey -1",
                "no part row (p_partkey is 1..=2000)",
            ],
        );
    }

    #[test]
    fn another_scale_factor_is_named() {
        // Lineorder of SF 0.01 with the dimensions of a smaller data set.
        let mut d = base().clone();
        let small = generate(&GenConfig::new(0.001)).unwrap();
        d.supplier = small.supplier;
        has(
            &err(&d),
            &[
                "lo_suppkey",
                "no supplier row (s_suppkey is 1..=2)",
                "another scale factor",
            ],
        );
    }

    #[test]
    fn empty_tables_are_refused() {
        let mut d = base().clone();
        d.customer = Customer::default();
        has(&err(&d), &["table customer has no rows"]);
        d.meta.source = "tbl:/data/ssb".into();
        has(
            &err(&d),
            &["table customer has no rows (customer.tbl in /data/ssb)"],
        );
        // An empty lineorder is a valid input of the engines but not a data set.
        let mut d = base().clone();
        for (_, col) in d.lineorder.columns_mut() {
            col.clear();
        }
        d.validate().unwrap();
        let e = d.validate_complete().unwrap_err().to_string();
        has(&e, &["table lineorder has no rows"]);
    }

    #[test]
    fn unequal_columns_and_bad_codes_are_refused() {
        let mut d = base().clone();
        d.part.p_size.pop();
        has(
            &err(&d),
            &["table part: column p_size has 1999 rows, p_partkey has 2000"],
        );
        let mut d = base().clone();
        d.lineorder.lo_shipmode[12] = 7;
        has(
            &err(&d),
            &["lo_shipmode row 13 holds 7, not a code of the shipmode dictionary"],
        );
    }

    /// `cargo test --release -p tessera-ssb --lib validate::tests::time_at_sf_1 -- --ignored
    /// --nocapture`: how long the checks take on SF 1 (6M lineorder rows).
    #[test]
    #[ignore = "timing, SF 1"]
    fn time_at_sf_1() {
        let data = generate(&GenConfig::new(1.0)).unwrap();
        data.validate().unwrap();
        let mut ms: Vec<f64> = (0..7)
            .map(|_| {
                let t = std::time::Instant::now();
                data.validate().unwrap();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        let t = std::time::Instant::now();
        foreign_keys(&data, &DateKeys::of(&data.date.d_datekey).unwrap()).unwrap();
        let fk = t.elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "validate at SF 1 ({} lineorder rows, {} threads): median {:.1} ms, min {:.1} ms; \
             foreign keys alone {fk:.1} ms",
            data.lineorder.len(),
            rayon::current_num_threads(),
            ms[3],
            ms[0]
        );
    }
}
