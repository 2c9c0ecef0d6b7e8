//! dbgen's `.tbl` files: a streaming, parallel loader and a writer of the same format.
//!
//! One row per line, fields separated by `|`, one trailing `|` (accepted without it too),
//! dates as `yyyymmdd` (`yyyy-mm-dd` accepted), in the column order of the reference
//! ssb-dbgen's `print.c`: lineorder 17 fields, part 9, supplier 7, customer 8, date 17.
//! Strings are encoded with the fixed dictionaries of [`super::dict`], exactly as the
//! generator encodes them; free-text fields (names, addresses, phones, p_name, d_date) are
//! checked for presence and skipped. A malformed line is an error naming the file, the line
//! and the column (invisible bytes in the value shown escaped); no row is ever skipped.
//!
//! The reference dbgen's own files load unchanged, and [`load_tbl_dir_with_report`] says where
//! they depart from the specification (a [`LoadReport`] of [`Quirk`]s):
//! * spellings of dictionary values ([`super::dict::Alias`]: `4-NOT SPECI`, `Augest`,
//!   `Octorber`) are read as the specification's value;
//! * date rows whose attributes are not the calendar's for their `d_datekey` (dbgen's
//!   weekday is one day late, its `d_lastdayinmonthfl` inverted) are kept as the file has
//!   them, so that queries see what other engines loading the same files see.
//!
//! Files that cannot be `.tbl` data are refused before or while reading, with bounded
//! memory: a file that is not a regular file (a device such as `/dev/zero`, a pipe, a
//! directory), an empty one or one over [`MAX_FILE`] bytes, a line over [`MAX_LINE`] bytes,
//! a UTF-8 byte order mark.
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use rayon::prelude::*;

use super::calendar::{days_from_civil, first_day, split_datekey};
use super::data::{Customer, Date, Lineorder, Meta, Part, SsbData, Supplier};
use super::dict::{COLORS, Dict, MONTHS, NATIONS, dicts};
use super::generator::{DEFAULT_SEED, gen_date, progress_bar};
use super::rng::{Rng, Stream};
use tessera_host::{Error, Result};

/// The longest line the loader reads, in bytes: SSB's longest valid line is under 300
/// bytes, so a longer one is not SSB data (a binary file, a file without line ends).
pub const MAX_LINE: usize = 64 << 10;

/// The largest `.tbl` file the loader opens, in bytes (2 TiB): a table holds fewer than 2^31
/// rows (its keys are `i32`) of under 1 KiB each.
pub const MAX_FILE: u64 = 2 << 40;

/// A UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How a `.tbl` field is read.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
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
pub(crate) fn fields(table: &str) -> Vec<(&'static str, Kind)> {
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

/// How the loader stored a value that departs from the specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Read as the specification's value: a spelling of it ([`super::dict::Alias`]).
    Mapped,
    /// Stored as the file has it: a valid value, but not the specification's for its row.
    Kept,
    /// The table's keys cover another range than the specification's (`found` and `spec`
    /// are the ranges; `rows` counts the rows outside the specification's, `first_line` is
    /// the first of them, or 0): loaded as they are.
    Coverage,
}

/// One way the loaded files depart from the SSB specification that the loader accepted:
/// a spelling of a value, or a column whose values differ from the specification's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quirk {
    /// Table, e.g. `date`.
    pub table: &'static str,
    /// Column, e.g. `d_month`.
    pub column: &'static str,
    /// What the file holds: the spelling ([`Handling::Mapped`]) or the value on the first
    /// row that differs ([`Handling::Kept`]).
    pub found: String,
    /// The specification's value: the one `found` was read as, or the one the first
    /// differing row should hold.
    pub spec: String,
    /// How the loader stored it.
    pub handling: Handling,
    /// Rows affected.
    pub rows: u64,
    /// The (1-based) line of the table's `.tbl` file where it was first seen (0: none, for
    /// [`Handling::Coverage`]).
    pub first_line: u64,
}

impl fmt::Display for Quirk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, c, n, line) = (self.table, self.column, self.rows, self.first_line);
        let (rows, differ) = if n == 1 {
            ("row", "differs")
        } else {
            ("rows", "differ")
        };
        let (found, spec) = (quote(self.found.as_bytes()), quote(self.spec.as_bytes()));
        match self.handling {
            Handling::Mapped => write!(
                f,
                "{t}.{c}: {found} read as the specification's {spec} ({n} {rows}, first at \
                 {t}.tbl:{line})"
            ),
            Handling::Kept => write!(
                f,
                "{t}.{c}: {n} {rows} {differ} from the specification, kept as in the file (first at \
                 {t}.tbl:{line}: {found} where the specification has {spec})"
            ),
            Handling::Coverage => {
                write!(
                    f,
                    "{t}.{c}: the file covers {}, the specification {}",
                    self.found, self.spec
                )?;
                if n > 0 {
                    write!(f, " ({n} {rows} outside it, first at {t}.tbl:{line})")?;
                }
                Ok(())
            }
        }
    }
}

/// What [`load_tbl_dir_with_report`] accepted that departs from the specification, in table
/// order (lineorder, part, supplier, customer, date), then column order. Its `Display` is a
/// line per quirk under a heading, or one line saying there are none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The quirks.
    pub quirks: Vec<Quirk>,
}

impl LoadReport {
    /// Whether the files hold exactly the specification's values.
    pub fn is_empty(&self) -> bool {
        self.quirks.is_empty()
    }

    /// The quirk of `column` whose file value is `found`, if any.
    pub fn find(&self, column: &str, found: &str) -> Option<&Quirk> {
        self.quirks
            .iter()
            .find(|q| q.column == column && q.found == found)
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.quirks.is_empty() {
            return write!(f, "the .tbl files hold the SSB specification's values");
        }
        write!(
            f,
            "accepted {} departure{} from the SSB specification:",
            self.quirks.len(),
            if self.quirks.len() == 1 { "" } else { "s" }
        )?;
        for q in &self.quirks {
            write!(f, "\n  {q}")?;
        }
        Ok(())
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

/// Quotes a field for a message (its first 40 characters): what a terminal would not show
/// is escaped as in Rust source, so it can be seen: control characters (`\0`, `\t`,
/// `\u{7f}`), invisible ones (a byte order mark `\u{feff}`, `\u{200b}`), whitespace other
/// than a space (`\u{a0}`), a quote and a backslash (`\'`, `\\`), and bytes that are not
/// UTF-8 (`\xff`).
fn quote(s: &[u8]) -> String {
    const MAX: usize = 40;
    let mut out = String::from("'");
    let mut shown = 0;
    'chunks: for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            if shown == MAX {
                break 'chunks;
            }
            shown += 1;
            let escaped = c.escape_debug();
            if c == ' ' || c == '"' {
                out.push(c);
            } else if escaped.len() == 1 && c.is_whitespace() {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            } else {
                out.extend(escaped);
            }
        }
        for b in chunk.invalid() {
            if shown == MAX {
                break 'chunks;
            }
            shown += 1;
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    let total: usize = s
        .utf8_chunks()
        .map(|c| c.valid().chars().count() + c.invalid().len())
        .sum();
    if total > MAX {
        out.push_str("...");
    }
    out.push('\'');
    out
}

/// Uses of one dictionary alias in a block or a file.
#[derive(Clone, Copy, Debug, Default)]
struct AliasUse {
    rows: u64,
    /// 0 while `rows` is 0.
    first_line: u64,
}

impl AliasUse {
    fn add(&mut self, other: AliasUse) {
        if self.rows == 0 {
            self.first_line = other.first_line;
        }
        self.rows += other.rows;
    }
}

/// The stored columns of a block, and the uses of each field's aliases (`[field][alias]`).
#[derive(Debug)]
struct Parsed {
    cols: Vec<Vec<i32>>,
    aliases: Vec<Vec<AliasUse>>,
}

/// Parses a block of whole lines; `first_line` is the 1-based number of its first line.
fn parse_block(
    block: &[u8],
    first_line: u64,
    path: &Path,
    fields: &[(&'static str, Kind)],
    ncols: usize,
) -> Result<Parsed> {
    let mut cols: Vec<Vec<i32>> = (0..ncols)
        .map(|_| Vec::with_capacity(block.len() / 64))
        .collect();
    let mut aliases: Vec<Vec<AliasUse>> = fields
        .iter()
        .map(|f| match f.1 {
            Kind::Code(dict) => vec![AliasUse::default(); dict.aliases().len()],
            _ => Vec::new(),
        })
        .collect();
    let body = block.strip_suffix(b"\n").unwrap_or(block);
    if body.is_empty() && block.is_empty() {
        return Ok(Parsed { cols, aliases });
    }
    for (n, line) in body.split(|&b| b == b'\n').enumerate() {
        let line_no = first_line + n as u64;
        let at = |msg: String| Error::Data(format!("{}:{line_no}: {msg}", path.display()));
        if line.len() > MAX_LINE {
            return Err(at(format!(
                "the line is {} bytes long, over the limit of {MAX_LINE} (an SSB line is under \
                 300 bytes): not a dbgen .tbl file",
                line.len()
            )));
        }
        if line_no == 1 && line.starts_with(BOM) {
            return Err(at(format!(
                "the file starts with a UTF-8 byte order mark ({}); dbgen writes none: remove \
                 those 3 bytes",
                quote(&line[..3])
            )));
        }
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
                Kind::Code(dict) => {
                    let found = std::str::from_utf8(text).ok().and_then(|s| dict.resolve(s));
                    match found {
                        Some((code, None)) => code,
                        Some((code, Some(a))) => {
                            let u = &mut aliases[j][a];
                            if u.rows == 0 {
                                u.first_line = line_no;
                            }
                            u.rows += 1;
                            code
                        }
                        None => return Err(problem(&format!("a known {name} value"))),
                    }
                }
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
    Ok(Parsed { cols, aliases })
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
    /// The next block of whole lines and the number of its first line. A line longer than
    /// [`MAX_LINE`] is an error, so a block is at most `BLOCK + MAX_LINE` bytes.
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
                    Err(e) => return Err(Error::io(&self.path, "read failed")(e)),
                }
            }
            buf.truncate(filled);
            if self.eof {
                break;
            }
            // A block ends at a line end.
            if let Some(p) = buf[start..].iter().rposition(|&b| b == b'\n') {
                self.carry = buf.split_off(start + p + 1);
                break;
            }
            // No line end in `buf`: all of it is the start of line `next_line`.
            if buf.len() > MAX_LINE {
                return Err(Error::Data(format!(
                    "{}:{}: no line end in {} bytes, over the line limit of {MAX_LINE} (an SSB \
                     line is under 300 bytes): not a dbgen .tbl file",
                    self.path.display(),
                    self.next_line,
                    buf.len()
                )));
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

/// What a file is, for the message that refuses one that is not a regular file.
fn file_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a named pipe";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// The size of the `.tbl` file at `path` after checking that it can be one: a regular file
/// (not a device or a pipe, which could be endless), neither empty nor over [`MAX_FILE`].
fn tbl_file_len(path: &Path) -> Result<u64> {
    let meta = std::fs::metadata(path).map_err(Error::io(path, "cannot open"))?;
    if !meta.is_file() {
        return Err(Error::Data(format!(
            "{}: {}, not a regular file: a .tbl file is dbgen's output",
            path.display(),
            file_kind(meta.file_type())
        )));
    }
    match meta.len() {
        0 => Err(Error::Data(format!(
            "{}: the file is empty: an SSB table has rows at every scale factor (was dbgen \
             interrupted?)",
            path.display()
        ))),
        n if n > MAX_FILE => Err(Error::Data(format!(
            "{}: {n} bytes, over the {MAX_FILE} bytes (2 TiB) that a .tbl table can hold \
             (fewer than 2^31 rows of under 1 KiB): not SSB data",
            path.display()
        ))),
        n => Ok(n),
    }
}

/// Loads one table's `.tbl` file (checked by [`tbl_file_len`]) into its columns; returns
/// the uses of its aliases as quirks.
fn load_table(
    path: &Path,
    table: &'static str,
    mut cols: Vec<(&'static str, &mut Vec<i32>)>,
    bar: &ProgressBar,
) -> Result<Vec<Quirk>> {
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
    let mut uses: Vec<Vec<AliasUse>> = fields
        .iter()
        .map(|f| match f.1 {
            Kind::Code(dict) => vec![AliasUse::default(); dict.aliases().len()],
            _ => Vec::new(),
        })
        .collect();
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
            break;
        }
        let parsed: Vec<Result<Parsed>> = work
            .par_iter()
            .map(|(b, first)| parse_block(b, *first, path, &fields, cols.len()))
            .collect();
        // The first error in file order is the one reported.
        for p in parsed {
            let p = p?;
            for (dst, src) in cols.iter_mut().zip(p.cols) {
                dst.1.extend_from_slice(&src);
            }
            for (total, block) in uses.iter_mut().zip(p.aliases) {
                for (t, b) in total.iter_mut().zip(block) {
                    t.add(b);
                }
            }
        }
        bar.inc(work.iter().map(|w| w.0.len() as u64).sum());
    }
    let mut quirks = Vec::new();
    for (&(column, kind), uses) in fields.iter().zip(uses) {
        let Kind::Code(dict) = kind else { continue };
        for (alias, u) in dict.aliases().iter().zip(uses) {
            if u.rows > 0 {
                quirks.push(Quirk {
                    table,
                    column,
                    found: alias.spelling.to_string(),
                    spec: alias.value.to_string(),
                    handling: Handling::Mapped,
                    rows: u.rows,
                    first_line: u.first_line,
                });
            }
        }
    }
    Ok(quirks)
}

/// The columns of the date table that differ from the specification's calendar, kept as they
/// are: `d_datekey` against the calendar's days in order (1992-01-01 ..= 1998-12-30, what
/// the generator writes; a [`Handling::Coverage`] quirk), every other column against the
/// calendar's value for its row's `d_datekey` (rows whose key is outside the calendar are
/// counted under `d_datekey` only). Row `i` is line `i + 1` of `date.tbl`.
fn calendar_quirks(date: &Date) -> Vec<Quirk> {
    let mut spec = Date::default();
    gen_date(&mut spec);
    let d = dicts();
    let show = |column: &str, v: i32| match d.for_column(column) {
        Some(dict) => dict.decode(v),
        None => v.to_string(),
    };
    let quirk = |column: &'static str, rows: u64, row: usize, found: String, spec: String| Quirk {
        table: Date::NAME,
        column,
        found,
        spec,
        handling: Handling::Kept,
        rows,
        first_line: row as u64 + 1,
    };
    let mut quirks = Vec::new();
    let (keys, spec_keys) = (&date.d_datekey, &spec.d_datekey);
    // The calendar's row of each key (None outside the calendar).
    let rows: Vec<Option<usize>> = keys
        .iter()
        .map(|&k| {
            let (y, m, dd) = split_datekey(k)?;
            let day = usize::try_from(days_from_civil(y, m, dd) - first_day()).ok()?;
            (day < spec_keys.len()).then_some(day)
        })
        .collect();
    if keys != spec_keys {
        let range = |k: &[i32]| match (k.iter().min(), k.iter().max()) {
            (Some(lo), Some(hi)) => format!("{lo} ..= {hi} ({} rows)", k.len()),
            _ => "no rows".to_string(),
        };
        let outside = rows.iter().filter(|r| r.is_none()).count() as u64;
        let first = rows
            .iter()
            .position(Option::is_none)
            .map_or(0, |i| i as u64 + 1);
        quirks.push(Quirk {
            table: Date::NAME,
            column: "d_datekey",
            found: range(keys),
            spec: range(spec_keys).replace("rows", "days, in order"),
            handling: Handling::Coverage,
            rows: outside,
            first_line: first,
        });
    }
    for ((column, col), (_, spec_col)) in date.columns().into_iter().zip(spec.columns()).skip(1) {
        let mut first = None;
        let mut n = 0u64;
        for (i, (&v, row)) in col.iter().zip(&rows).enumerate() {
            if let Some(r) = *row
                && v != spec_col[r]
            {
                first.get_or_insert((i, v, spec_col[r]));
                n += 1;
            }
        }
        if let Some((i, v, s)) = first {
            quirks.push(quirk(column, n, i, show(column, v), show(column, s)));
        }
    }
    quirks
}

/// The `.tbl` file of `table` in `dir`.
pub fn tbl_path(dir: &Path, table: &str) -> PathBuf {
    dir.join(format!("{table}.tbl"))
}

/// Loads `lineorder.tbl`, `part.tbl`, `supplier.tbl`, `customer.tbl` and `date.tbl` from
/// `dir` (as dbgen writes them, or as [`write_tbl_dir`] does), and reports what it accepted
/// that departs from the specification (see the [module](self) documentation). The data set
/// is validated ([`SsbData::validate_complete`]).
pub fn load_tbl_dir_with_report(dir: &Path, progress: bool) -> Result<(SsbData, LoadReport)> {
    let mut data = SsbData::empty(Meta {
        scale_factor: None,
        seed: None,
        source: format!("tbl:{}", dir.display()),
    });
    let mut report = LoadReport::default();
    for (table, cols) in data.tables_mut() {
        let path = tbl_path(dir, table);
        let bar = progress_bar(tbl_file_len(&path)?, table, progress);
        report.quirks.extend(load_table(&path, table, cols, &bar)?);
        bar.finish_and_clear();
    }
    report.quirks.extend(calendar_quirks(&data.date));
    data.validate_complete()
        .map_err(|e| Error::Data(format!("{}: {e}", dir.display())))?;
    Ok((data, report))
}

/// [`load_tbl_dir_with_report`] without the report.
pub fn load_tbl_dir(dir: &Path, progress: bool) -> Result<SsbData> {
    load_tbl_dir_with_report(dir, progress).map(|(data, _)| data)
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
    data.validate_complete()?;
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

    #[test]
    fn quote_shows_invisible_bytes_escaped() {
        assert_eq!(quote(b"UNITED KI1"), "'UNITED KI1'");
        assert_eq!(quote("\u{feff}AMERICA".as_bytes()), "'\\u{feff}AMERICA'");
        assert_eq!(quote(b"A\0B\x01\x7f"), "'A\\0B\\u{1}\\u{7f}'");
        assert_eq!(quote(b"\t\r\n"), "'\\t\\r\\n'");
        assert_eq!(quote(b"AMER\xffICA\xc3"), "'AMER\\xffICA\\xc3'");
        assert_eq!(
            quote("PERU\u{a0}\u{2003}\u{200b}".as_bytes()),
            "'PERU\\u{a0}\\u{2003}\\u{200b}'"
        );
        assert_eq!(quote("it's \\ \"é\"".as_bytes()), "'it\\'s \\\\ \"é\"'");
        let long = "x".repeat(41);
        assert_eq!(quote(long.as_bytes()), format!("'{}...'", &long[..40]));
        assert_eq!(quote(&[0xff; 40]), format!("'{}'", "\\xff".repeat(40)));
    }

    /// Parses `text` as the lines of `table` from line 1.
    fn parse(table: &str, text: &str) -> Result<Parsed> {
        let f = fields(table);
        let n = f.iter().filter(|f| !matches!(f.1, Kind::Skip)).count();
        parse_block(text.as_bytes(), 1, Path::new("t.tbl"), &f, n)
    }

    #[test]
    fn aliases_are_read_as_the_specifications_values_and_counted() {
        let line = |month: &str| {
            format!("19921001|x|Friday|{month}|1992|199210|Oct1992|6|1|275|10|40|Fall|0|1|0|1|\n")
        };
        let text = [
            line("October"),
            line("Octorber"),
            line("October"),
            line("Octorber"),
        ]
        .concat();
        let p = parse("date", &text).unwrap();
        let october = dicts().month.known("October");
        assert_eq!(p.cols[2], [october; 4]);
        let u = &p.aliases[3][1];
        assert_eq!((u.rows, u.first_line), (2, 2));
        assert_eq!(p.aliases[3][0].rows, 0);
        assert!(p.aliases[2].is_empty());
    }

    #[test]
    fn a_line_over_the_limit_and_a_byte_order_mark_are_refused() {
        let long = format!("1|{}|\n", "x".repeat(MAX_LINE));
        let e = parse("supplier", &long).unwrap_err().to_string();
        assert!(
            e.contains("t.tbl:1: the line is 65539 bytes long, over the limit of 65536"),
            "{e}"
        );
        let e = parse("supplier", "\u{feff}1|n|a|PERU     0|PERU|AMERICA|27-1|\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("t.tbl:1: the file starts with a UTF-8 byte order mark ('\\u{feff}')"),
            "{e}"
        );
    }

    #[test]
    fn calendar_quirks_of_the_specifications_calendar_are_none() {
        let mut date = Date::default();
        gen_date(&mut date);
        assert_eq!(calendar_quirks(&date), []);
        date.d_lastdayinmonthfl[5] = 1;
        let q = calendar_quirks(&date);
        assert_eq!(
            q.iter().map(|q| q.to_string()).collect::<Vec<_>>(),
            [
                "date.d_lastdayinmonthfl: 1 row differs from the specification, kept as in the file \
              (first at date.tbl:6: '1' where the specification has '0')"
            ]
        );
    }
}
