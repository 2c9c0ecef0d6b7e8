//! dbgen's `.tbl` files: a streaming, parallel loader and a writer of the same format.
//!
//! One row per line, fields separated by `|`, one trailing `|` (accepted without it too),
//! dates as `yyyymmdd` (`yyyy-mm-dd` accepted), in the column order of the reference
//! ssb-dbgen's `print.c`: lineorder 17 fields, part 9, supplier 7, customer 8, date 17.
//! Strings are encoded with the fixed dictionaries of [`super::dict`], exactly as the
//! generator encodes them; free-text fields (names, addresses, phones, p_name, d_date) are
//! checked for presence and skipped. A malformed line is an error naming the file, the line
//! and the column; no row is ever skipped.
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use rayon::prelude::*;

use super::calendar::split_datekey;
use super::data::{Customer, Date, Lineorder, Meta, Part, SsbData, Supplier};
use super::dict::{COLORS, Dict, MONTHS, NATIONS, dicts};
use super::generator::{DEFAULT_SEED, progress_bar};
use super::rng::{Rng, Stream};
use crate::{Error, Result};

/// How a `.tbl` field is read.
#[derive(Clone, Copy)]
enum Kind {
    /// A decimal integer.
    Int,
    /// A date, stored as `yyyymmdd`.
    Date,
    /// A string of a fixed domain, stored as its code.
    Code(&'static Dict),
    /// Free text that is not stored.
    Skip,
}

/// The fields of each table's `.tbl` lines, in file order; the stored ones are, in order,
/// the table's columns.
fn fields(table: &str) -> Vec<(&'static str, Kind)> {
    let d = dicts();
    use Kind::*;
    match table {
        "lineorder" => vec![
            ("lo_orderkey", Int),
            ("lo_linenumber", Int),
            ("lo_custkey", Int),
            ("lo_partkey", Int),
            ("lo_suppkey", Int),
            ("lo_orderdate", Date),
            ("lo_orderpriority", Code(&d.orderpriority)),
            ("lo_shippriority", Int),
            ("lo_quantity", Int),
            ("lo_extendedprice", Int),
            ("lo_ordtotalprice", Int),
            ("lo_discount", Int),
            ("lo_revenue", Int),
            ("lo_supplycost", Int),
            ("lo_tax", Int),
            ("lo_commitdate", Date),
            ("lo_shipmode", Code(&d.shipmode)),
        ],
        "part" => vec![
            ("p_partkey", Int),
            ("p_name", Skip),
            ("p_mfgr", Code(&d.mfgr)),
            ("p_category", Code(&d.category)),
            ("p_brand1", Code(&d.brand1)),
            ("p_color", Code(&d.color)),
            ("p_type", Code(&d.p_type)),
            ("p_size", Int),
            ("p_container", Code(&d.container)),
        ],
        "supplier" => vec![
            ("s_suppkey", Int),
            ("s_name", Skip),
            ("s_address", Skip),
            ("s_city", Code(&d.city)),
            ("s_nation", Code(&d.nation)),
            ("s_region", Code(&d.region)),
            ("s_phone", Skip),
        ],
        "customer" => vec![
            ("c_custkey", Int),
            ("c_name", Skip),
            ("c_address", Skip),
            ("c_city", Code(&d.city)),
            ("c_nation", Code(&d.nation)),
            ("c_region", Code(&d.region)),
            ("c_phone", Skip),
            ("c_mktsegment", Code(&d.mktsegment)),
        ],
        "date" => vec![
            ("d_datekey", Date),
            ("d_date", Skip),
            ("d_dayofweek", Code(&d.dayofweek)),
            ("d_month", Code(&d.month)),
            ("d_year", Int),
            ("d_yearmonthnum", Int),
            ("d_yearmonth", Code(&d.yearmonth)),
            ("d_daynuminweek", Int),
            ("d_daynuminmonth", Int),
            ("d_daynuminyear", Int),
            ("d_monthnuminyear", Int),
            ("d_weeknuminyear", Int),
            ("d_sellingseason", Code(&d.sellingseason)),
            ("d_lastdayinweekfl", Int),
            ("d_lastdayinmonthfl", Int),
            ("d_holidayfl", Int),
            ("d_weekdayfl", Int),
        ],
        _ => unreachable!("no SSB table named {table}"),
    }
}

/// Bytes read per block; blocks are parsed in parallel.
const BLOCK: usize = 4 << 20;

/// A decimal `i32` (optional `-`), or `None`.
fn parse_int(s: &[u8]) -> Option<i32> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 10 {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(b - b'0');
    }
    i32::try_from(if neg { -v } else { v }).ok()
}

/// A date as `yyyymmdd` or `yyyy-mm-dd`, returned as `yyyymmdd` when it is a real date.
fn parse_date(s: &[u8]) -> Option<i32> {
    let key = match s.len() {
        8 => parse_int(s)?,
        10 if s[4] == b'-' && s[7] == b'-' => {
            parse_int(&s[..4])? * 10_000 + parse_int(&s[5..7])? * 100 + parse_int(&s[8..])?
        }
        _ => return None,
    };
    split_datekey(key).map(|_| key)
}

/// Quotes a field for an error message (at most 40 characters).
fn quote(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(s);
    let short: String = t.chars().take(40).collect();
    format!(
        "'{short}{}'",
        if t.chars().count() > 40 { "..." } else { "" }
    )
}

/// Parses a block of whole lines; `first_line` is the 1-based number of its first line.
fn parse_block(
    block: &[u8],
    first_line: u64,
    path: &Path,
    fields: &[(&'static str, Kind)],
    ncols: usize,
) -> Result<Vec<Vec<i32>>> {
    let mut cols: Vec<Vec<i32>> = (0..ncols)
        .map(|_| Vec::with_capacity(block.len() / 64))
        .collect();
    let body = block.strip_suffix(b"\n").unwrap_or(block);
    if body.is_empty() && block.is_empty() {
        return Ok(cols);
    }
    for (n, line) in body.split(|&b| b == b'\n').enumerate() {
        let at = |msg: String| {
            Error::Data(format!(
                "{}:{}: {msg}",
                path.display(),
                first_line + n as u64
            ))
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Err(at(format!("empty line (expected {} fields)", fields.len())));
        }
        let line = line.strip_suffix(b"|").unwrap_or(line);
        let found = || line.split(|&b| b == b'|').count();
        let mut items = line.split(|&b| b == b'|');
        let mut c = 0;
        for (j, &(name, kind)) in fields.iter().enumerate() {
            let Some(text) = items.next() else {
                return Err(at(format!(
                    "expected {} fields, found {}",
                    fields.len(),
                    found()
                )));
            };
            let problem = |what: &str| {
                at(format!(
                    "column {} ({name}): {} is not {what}",
                    j + 1,
                    quote(text)
                ))
            };
            let v = match kind {
                Kind::Skip => continue,
                Kind::Int => parse_int(text).ok_or_else(|| problem("an integer"))?,
                Kind::Date => parse_date(text).ok_or_else(|| problem("a date (yyyymmdd)"))?,
                Kind::Code(dict) => std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| dict.code(s))
                    .ok_or_else(|| problem(&format!("a known {name} value")))?,
            };
            cols[c].push(v);
            c += 1;
        }
        if items.next().is_some() {
            return Err(at(format!(
                "expected {} fields, found {}",
                fields.len(),
                found()
            )));
        }
    }
    Ok(cols)
}

/// Reads `path` in blocks of whole lines, `batch` blocks at a time.
struct Blocks {
    file: File,
    path: PathBuf,
    carry: Vec<u8>,
    next_line: u64,
    eof: bool,
}

impl Blocks {
    /// The next block of whole lines and the number of its first line.
    fn next_block(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        let mut buf = std::mem::take(&mut self.carry);
        while !self.eof {
            let start = buf.len();
            buf.resize(start + BLOCK, 0);
            let mut filled = start;
            while filled < buf.len() {
                match self.file.read(&mut buf[filled..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(k) => filled += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(Error::Data(format!(
                            "{}: read failed: {e}",
                            self.path.display()
                        )));
                    }
                }
            }
            buf.truncate(filled);
            if self.eof {
                break;
            }
            // A block ends at a line end; a line longer than a block makes the block grow.
            if let Some(p) = buf[start..].iter().rposition(|&b| b == b'\n') {
                self.carry = buf.split_off(start + p + 1);
                break;
            }
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let first = self.next_line;
        self.next_line += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(Some((buf, first)))
    }
}

/// Loads one table's `.tbl` file into its columns.
fn load_table(
    path: &Path,
    table: &str,
    mut cols: Vec<(&'static str, &mut Vec<i32>)>,
    bar: &ProgressBar,
) -> Result<()> {
    let fields = fields(table);
    debug_assert!(
        fields
            .iter()
            .filter(|f| !matches!(f.1, Kind::Skip))
            .map(|f| f.0)
            .eq(cols.iter().map(|c| c.0))
    );
    let file = File::open(path).map_err(Error::io(path, "cannot open"))?;
    let mut blocks = Blocks {
        file,
        path: path.to_path_buf(),
        carry: Vec::new(),
        next_line: 1,
        eof: false,
    };
    let batch = 2 * rayon::current_num_threads();
    loop {
        let mut work = Vec::with_capacity(batch);
        while work.len() < batch {
            match blocks.next_block()? {
                Some(b) => work.push(b),
                None => break,
            }
        }
        if work.is_empty() {
            return Ok(());
        }
        let parsed: Vec<Result<Vec<Vec<i32>>>> = work
            .par_iter()
            .map(|(b, first)| parse_block(b, *first, path, &fields, cols.len()))
            .collect();
        // The first error in file order is the one reported.
        for p in parsed {
            for (dst, src) in cols.iter_mut().zip(p?) {
                dst.1.extend_from_slice(&src);
            }
        }
        bar.inc(work.iter().map(|w| w.0.len() as u64).sum());
    }
}

/// The `.tbl` file of `table` in `dir`.
pub fn tbl_path(dir: &Path, table: &str) -> PathBuf {
    dir.join(format!("{table}.tbl"))
}

/// Loads `lineorder.tbl`, `part.tbl`, `supplier.tbl`, `customer.tbl` and `date.tbl` from
/// `dir` (as dbgen writes them, or as [`write_tbl_dir`] does).
pub fn load_tbl_dir(dir: &Path, progress: bool) -> Result<SsbData> {
    let mut data = SsbData::empty(Meta {
        scale_factor: None,
        seed: None,
        source: format!("tbl:{}", dir.display()),
    });
    for (table, cols) in data.tables_mut() {
        let path = tbl_path(dir, table);
        let bytes = std::fs::metadata(&path)
            .map_err(Error::io(&path, "cannot open"))?
            .len();
        let bar = progress_bar(bytes, table, progress);
        load_table(&path, table, cols, &bar)?;
        bar.finish_and_clear();
    }
    data.validate()
        .map_err(|e| Error::Data(format!("{}: {e}", dir.display())))?;
    Ok(data)
}

/// Rows per formatting task of the writer.
const WRITE_CHUNK: usize = 1 << 15;

/// Writes `rows` lines to `path`, formatted in parallel chunks and written in order.
fn write_table(
    path: &Path,
    rows: usize,
    bar: &ProgressBar,
    line: impl Fn(usize, &mut String) + Sync,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io(path, "write failed")(e);
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io)?);
    let chunks: Vec<usize> = (0..rows.div_ceil(WRITE_CHUNK)).collect();
    for batch in chunks.chunks(4 * rayon::current_num_threads()) {
        let texts: Vec<String> = batch
            .par_iter()
            .map(|&c| {
                let mut s = String::with_capacity(WRITE_CHUNK * 64);
                for r in c * WRITE_CHUNK..((c + 1) * WRITE_CHUNK).min(rows) {
                    line(r, &mut s);
                }
                s
            })
            .collect();
        for t in texts {
            w.write_all(t.as_bytes()).map_err(io)?;
        }
        bar.inc(batch.len() as u64 * WRITE_CHUNK as u64);
    }
    w.flush().map_err(io)
}

/// Random text of dbgen's address alphabet, 10..=25 characters.
fn address(rng: &mut Rng) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,. ";
    let len = rng.between(10, 25);
    (0..len)
        .map(|_| ALPHABET[rng.below(ALPHABET.len() as u32) as usize] as char)
        .collect()
}

/// dbgen's phone numbers: the nation's country code (10 + its dbgen index), then digits.
fn phone(rng: &mut Rng, nation_index: usize) -> String {
    format!(
        "{}-{}-{}-{}",
        10 + nation_index,
        rng.between(100, 999),
        rng.between(100, 999),
        rng.between(1000, 9999)
    )
}

/// `d_date`, e.g. `January 1, 1992`, of a `yyyymmdd` key.
fn long_date(key: i32) -> String {
    split_datekey(key).map_or_else(
        || key.to_string(),
        |(y, m, d)| format!("{} {d}, {y}", MONTHS[m as usize - 1]),
    )
}

/// Writes the data set as dbgen's five `.tbl` files in `dir` (created if needed). The
/// free-text fields are synthesized deterministically from the data set's seed.
pub fn write_tbl_dir(data: &SsbData, dir: &Path, progress: bool) -> Result<()> {
    data.validate()?;
    std::fs::create_dir_all(dir).map_err(Error::io(dir, "cannot create"))?;
    let d = dicts();
    let seed = data.meta.seed.unwrap_or(DEFAULT_SEED);
    // Codes back to strings (valid: validated above) and nation codes to dbgen's indexes.
    let s = |dict: &'static Dict, code: i32| dict.get(code).unwrap_or("");
    let mut nation_index = [0usize; 25];
    for (i, n) in NATIONS.iter().enumerate() {
        nation_index[d.nation.known(n.0) as usize] = i;
    }
    let text = |table: u64, key: i32| Rng::new(seed, Stream::Text, (table << 40) | key as u64);
    let bar = |n: usize, label| progress_bar(n as u64, label, progress);

    let lo = &data.lineorder;
    let b = bar(lo.len(), "lineorder");
    write_table(&tbl_path(dir, Lineorder::NAME), lo.len(), &b, |i, out| {
        let _ = writeln!(
            out,
            "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|",
            lo.lo_orderkey[i],
            lo.lo_linenumber[i],
            lo.lo_custkey[i],
            lo.lo_partkey[i],
            lo.lo_suppkey[i],
            lo.lo_orderdate[i],
            s(&d.orderpriority, lo.lo_orderpriority[i]),
            lo.lo_shippriority[i],
            lo.lo_quantity[i],
            lo.lo_extendedprice[i],
            lo.lo_ordtotalprice[i],
            lo.lo_discount[i],
            lo.lo_revenue[i],
            lo.lo_supplycost[i],
            lo.lo_tax[i],
            lo.lo_commitdate[i],
            s(&d.shipmode, lo.lo_shipmode[i]),
        );
    })?;
    b.finish_and_clear();

    let p = &data.part;
    let b = bar(p.len(), "part");
    write_table(&tbl_path(dir, Part::NAME), p.len(), &b, |i, out| {
        // p_name: two more colors, distinct from each other and from p_color, as dbgen's.
        let mut rng = text(1, p.p_partkey[i]);
        let color = s(&d.color, p.p_color[i]);
        let mut pick = |not: &[&str]| loop {
            let c = COLORS[rng.below(92) as usize];
            if !not.contains(&c) {
                break c;
            }
        };
        let w1 = pick(&[color]);
        let w2 = pick(&[color, w1]);
        let _ = writeln!(
            out,
            "{}|{w1} {w2}|{}|{}|{}|{color}|{}|{}|{}|",
            p.p_partkey[i],
            s(&d.mfgr, p.p_mfgr[i]),
            s(&d.category, p.p_category[i]),
            s(&d.brand1, p.p_brand1[i]),
            s(&d.p_type, p.p_type[i]),
            p.p_size[i],
            s(&d.container, p.p_container[i]),
        );
    })?;
    b.finish_and_clear();

    let t = &data.supplier;
    let b = bar(t.len(), "supplier");
    write_table(&tbl_path(dir, Supplier::NAME), t.len(), &b, |i, out| {
        let key = t.s_suppkey[i];
        let mut rng = text(2, key);
        let _ = writeln!(
            out,
            "{key}|Supplier#{key:09}|{}|{}|{}|{}|{}|",
            address(&mut rng),
            s(&d.city, t.s_city[i]),
            s(&d.nation, t.s_nation[i]),
            s(&d.region, t.s_region[i]),
            phone(&mut rng, nation_index[t.s_nation[i] as usize]),
        );
    })?;
    b.finish_and_clear();

    let c = &data.customer;
    let b = bar(c.len(), "customer");
    write_table(&tbl_path(dir, Customer::NAME), c.len(), &b, |i, out| {
        let key = c.c_custkey[i];
        let mut rng = text(3, key);
        let _ = writeln!(
            out,
            "{key}|Customer#{key:09}|{}|{}|{}|{}|{}|{}|",
            address(&mut rng),
            s(&d.city, c.c_city[i]),
            s(&d.nation, c.c_nation[i]),
            s(&d.region, c.c_region[i]),
            phone(&mut rng, nation_index[c.c_nation[i] as usize]),
            s(&d.mktsegment, c.c_mktsegment[i]),
        );
    })?;
    b.finish_and_clear();

    let t = &data.date;
    write_table(
        &tbl_path(dir, Date::NAME),
        t.len(),
        &ProgressBar::hidden(),
        |i, out| {
            let _ = writeln!(
                out,
                "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|",
                t.d_datekey[i],
                long_date(t.d_datekey[i]),
                s(&d.dayofweek, t.d_dayofweek[i]),
                s(&d.month, t.d_month[i]),
                t.d_year[i],
                t.d_yearmonthnum[i],
                s(&d.yearmonth, t.d_yearmonth[i]),
                t.d_daynuminweek[i],
                t.d_daynuminmonth[i],
                t.d_daynuminyear[i],
                t.d_monthnuminyear[i],
                t.d_weeknuminyear[i],
                s(&d.sellingseason, t.d_sellingseason[i]),
                t.d_lastdayinweekfl[i],
                t.d_lastdayinmonthfl[i],
                t.d_holidayfl[i],
                t.d_weekdayfl[i],
            );
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_match_dbgen_and_the_stored_columns() {
        let counts: Vec<usize> = ["lineorder", "part", "supplier", "customer", "date"]
            .iter()
            .map(|t| fields(t).len())
            .collect();
        assert_eq!(counts, [17, 9, 7, 8, 17]);
        let stored = |t: &str| -> Vec<&str> {
            fields(t)
                .into_iter()
                .filter(|f| !matches!(f.1, Kind::Skip))
                .map(|f| f.0)
                .collect()
        };
        assert_eq!(stored("lineorder"), Lineorder::COLUMNS);
        assert_eq!(stored("part"), Part::COLUMNS);
        assert_eq!(stored("supplier"), Supplier::COLUMNS);
        assert_eq!(stored("customer"), Customer::COLUMNS);
        assert_eq!(stored("date"), Date::COLUMNS);
    }

    #[test]
    fn scalar_parsers() {
        assert_eq!(parse_int(b"2147483647"), Some(i32::MAX));
        assert_eq!(parse_int(b"-2147483648"), Some(i32::MIN));
        assert_eq!(parse_int(b"2147483648"), None);
        assert_eq!(parse_int(b""), None);
        assert_eq!(parse_int(b"-"), None);
        assert_eq!(parse_int(b"1 "), None);
        assert_eq!(parse_int(b"12a"), None);
        assert_eq!(parse_date(b"19960229"), Some(19960229));
        assert_eq!(parse_date(b"1996-02-29"), Some(19960229));
        assert_eq!(parse_date(b"19970229"), None);
        assert_eq!(parse_date(b"1997-2-28"), None);
        assert_eq!(long_date(19920101), "January 1, 1992");
    }
}
