//! The reference SSB dbgen's own `.tbl` files load unchanged, and the loader reports where
//! they depart from the specification (CPU only).
//!
//! * The fixture `tests/fixtures/dbgen/` holds real dbgen lines with every quirk of its
//!   output (see its README.md): the tests check the decoded values against the
//!   specification's and the quirk report against the fixture's counts.
//! * `TESSERA_DBGEN_DIR=DIR` (a directory of `dbgen -s SF -T a` output, SF >= 1): loads it,
//!   checks the cardinalities and the quirk report, and runs the 13 queries on the CPU engine
//!   against DuckDB (`tests/ssb_duckdb.py`). Without the variable (or DuckDB) that test is
//!   reported as ignored, with the reason. For example:
//!   `TESSERA_DBGEN_DIR=/data/ssb-sf1 cargo test --release --test ssb_dbgen -- --nocapture`.
//! * The loader's limits: endless or binary input, invisible bytes in values.
mod common;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use tessera::ssb::calendar::{DateAttrs, days_from_civil, split_datekey};
use tessera::ssb::dict::{SEASONS, WEEKDAYS};
use tessera::ssb::tbl::{self, Handling, LoadReport, MAX_LINE};
use tessera::ssb::{Query, SsbData, cpu, dicts};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dbgen")
}

/// A fresh temporary directory for one test.
fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-dbgen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the fixture in a temporary directory.
fn fixture_copy(name: &str) -> PathBuf {
    let dir = temp(name);
    for e in std::fs::read_dir(fixture()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "tbl") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    dir
}

/// The quirks as comparable tuples.
fn tuples(r: &LoadReport) -> Vec<(&str, &str, &str, Handling, u64, u64)> {
    r.quirks
        .iter()
        .map(|q| {
            (
                q.column,
                q.found.as_str(),
                q.spec.as_str(),
                q.handling,
                q.rows,
                q.first_line,
            )
        })
        .collect()
}

fn fixture_loads_and_reports_every_dbgen_quirk() {
    let (data, report) = tbl::load_tbl_dir_with_report(&fixture(), false).unwrap();
    let counts: Vec<usize> = data.tables().iter().map(|t| t.1[0].1.len()).collect();
    assert_eq!(counts, [15, 20, 1, 3, 32]);
    use Handling::*;
    assert_eq!(
        tuples(&report),
        [
            (
                "lo_orderpriority",
                "4-NOT SPECI",
                "4-NOT SPECIFIED",
                Mapped,
                5,
                1
            ),
            ("d_month", "Augest", "August", Mapped, 1, 1),
            ("d_month", "Octorber", "October", Mapped, 1, 32),
            (
                "d_datekey",
                "19930831 ..= 19931001 (32 rows)",
                "19920101 ..= 19981230 (2556 days, in order)",
                Coverage,
                0,
                0
            ),
            // dbgen's weekday is the next day's: 1993-08-31 was a Tuesday.
            ("d_dayofweek", "Wednesday", "Tuesday", Kept, 32, 1),
            ("d_daynuminweek", "4", "3", Kept, 32, 1),
            // Its "Saturday" (a Friday, line 4) ends its week; 5 Fridays and 4 Saturdays.
            ("d_lastdayinweekfl", "1", "0", Kept, 9, 4),
            // Inverted: 0 on the last day of a month (August 31), 1 on every other day.
            ("d_lastdayinmonthfl", "0", "1", Kept, 32, 1),
            // Its weekend is a Friday and Saturday: 5 Fridays and 4 Sundays differ.
            ("d_weekdayfl", "0", "1", Kept, 9, 4),
        ]
    );
    assert_eq!(report.find("d_month", "Augest").map(|q| q.rows), Some(1));
    assert!(report.find("d_month", "September").is_none());
    let text = report.to_string();
    assert!(
        text.starts_with("accepted 9 departures from the SSB specification:\n"),
        "{text}"
    );
    for line in [
        "\n  lineorder.lo_orderpriority: '4-NOT SPECI' read as the specification's \
         '4-NOT SPECIFIED' (5 rows, first at lineorder.tbl:1)",
        "\n  date.d_month: 'Octorber' read as the specification's 'October' (1 row, first at \
         date.tbl:32)",
        "\n  date.d_dayofweek: 32 rows differ from the specification, kept as in the file \
         (first at date.tbl:1: 'Wednesday' where the specification has 'Tuesday')",
        "\n  date.d_datekey: the file covers 19930831 ..= 19931001 (32 rows), the \
         specification 19920101 ..= 19981230 (2556 days, in order)",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
}

fn fixture_values_are_the_specifications() {
    let data = tbl::load_tbl_dir(&fixture(), false).unwrap();
    let d = dicts();
    let t = &data.date;
    let months: Vec<String> = t.d_month.iter().map(|&c| d.month.decode(c)).collect();
    assert_eq!(months[0], "August");
    assert!(months[1..31].iter().all(|m| m == "September"));
    assert_eq!(months[31], "October");
    // What dbgen gets right is the calendar's; what it gets wrong is kept as it wrote it.
    for i in 0..t.len() {
        let (y, m, dd) = split_datekey(t.d_datekey[i]).unwrap();
        let a = DateAttrs::of_day(days_from_civil(y, m, dd));
        assert_eq!(d.month.decode(t.d_month[i]), a.month_name());
        assert_eq!(
            d.yearmonth.decode(t.d_yearmonth[i]),
            format!("{}{y}", &a.month_name()[..3])
        );
        assert_eq!(
            (
                t.d_year[i],
                t.d_yearmonthnum[i],
                t.d_daynuminmonth[i],
                t.d_daynuminyear[i],
                t.d_monthnuminyear[i],
                t.d_weeknuminyear[i],
                t.d_holidayfl[i],
            ),
            (
                y,
                y * 100 + m as i32,
                dd as i32,
                a.daynuminyear as i32,
                m as i32,
                a.weeknuminyear as i32,
                i32::from(a.holiday),
            )
        );
        assert_eq!(
            d.sellingseason.decode(t.d_sellingseason[i]),
            SEASONS[a.season]
        );
        assert_eq!(t.d_daynuminweek[i], a.daynuminweek as i32 % 7 + 1);
        assert_eq!(
            d.dayofweek.decode(t.d_dayofweek[i]),
            WEEKDAYS[a.daynuminweek as usize % 7]
        );
        assert_eq!(t.d_lastdayinmonthfl[i], i32::from(!a.lastdayinmonth));
    }
    let lo = &data.lineorder;
    let priorities: Vec<String> = lo
        .lo_orderpriority
        .iter()
        .map(|&c| d.orderpriority.decode(c))
        .collect();
    assert_eq!(priorities[..5], ["4-NOT SPECIFIED"; 5]);
    assert_eq!(priorities[5], "2-HIGH");
    // The other tables hold the specification's values as they are.
    assert_eq!(d.city.decode(data.supplier.s_city[0]), "PERU     2");
    assert_eq!(
        d.p_type.decode(data.part.p_type[0]),
        "PROMO BURNISHED COPPER"
    );
    assert_eq!(d.brand1.decode(data.part.p_brand1[0]), "MFGR#1121");
    assert_eq!(
        d.mktsegment.decode(data.customer.c_mktsegment[1]),
        "AUTOMOBILE"
    );
}

/// DuckDB's result lines per query over the `.tbl` files of `dir` (`tests/ssb_duckdb.py`).
fn duckdb_results(dir: &Path) -> HashMap<String, Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ssb_duckdb.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut results: HashMap<String, Vec<String>> = HashMap::new();
    let mut current = String::new();
    for line in String::from_utf8(out.stdout).expect("UTF-8").lines() {
        if let Some(q) = line.strip_prefix("== ") {
            current = q.to_string();
            results.insert(current.clone(), Vec::new());
        } else {
            results
                .get_mut(&current)
                .expect("a query header first")
                .push(line.to_string());
        }
    }
    results
}

/// The 13 queries on the CPU engine equal DuckDB's over the same files; returns the row
/// counts per query.
fn agrees_with_duckdb(data: &SsbData, dir: &Path) -> Vec<usize> {
    let duck = duckdb_results(dir);
    Query::ALL
        .iter()
        .map(|&q| {
            let ours = cpu::run(data, q).to_lines();
            assert_eq!(
                ours,
                duck[q.name()],
                "{q}: tessera (CPU) vs DuckDB on {dir:?}"
            );
            ours.len()
        })
        .collect()
}

fn fixture_queries_match_duckdb() {
    let data = tbl::load_tbl_dir(&fixture(), false).unwrap();
    let rows = agrees_with_duckdb(&data, &fixture());
    // The fixture's one supplier is in AMERICA (PERU) and its year 1993: q1.1 finds rows.
    assert!(rows[0] > 0, "{rows:?}");
}

/// dbgen's reference lineorder counts (`-T a`) for the scale factors the specification lists.
fn reference_lineorder_rows(sf: u64) -> Option<usize> {
    match sf {
        1 => Some(6_001_171),
        10 => Some(59_986_214),
        20 => Some(119_994_746),
        _ => None,
    }
}

fn dbgen_directory_loads_with_cardinalities_quirks_and_duckdb_answers() {
    let dir = PathBuf::from(std::env::var_os("TESSERA_DBGEN_DIR").expect("TESSERA_DBGEN_DIR"));
    let start = Instant::now();
    let (data, report) = tbl::load_tbl_dir_with_report(&dir, false).unwrap();
    let load_s = start.elapsed().as_secs_f64();
    eprintln!("{report}");
    // The scale factor follows from the suppliers (2,000 x SF).
    let n = data.supplier.len();
    assert!(n % 2000 == 0 && n > 0, "{n} suppliers is not 2,000 x SF");
    let sf = (n / 2000) as u64;
    assert_eq!(data.customer.len(), 30_000 * sf as usize);
    assert_eq!(
        data.part.len(),
        200_000 * (1 + sf.ilog2() as usize),
        "part rows at SF {sf}"
    );
    assert_eq!(data.date.len(), 2556);
    let lo = data.lineorder.len();
    match reference_lineorder_rows(sf) {
        Some(r) => assert_eq!(lo, r, "lineorder rows at SF {sf}"),
        None => assert!(
            lo.abs_diff(6_000_000 * sf as usize) < 6_000 * sf as usize,
            "{lo} lineorder rows at SF {sf}"
        ),
    }
    // The whole date table's quirks; the lineorder priority's count depends on the data.
    use Handling::*;
    let q = tuples(&report);
    assert_eq!(q[0].0, "lo_orderpriority");
    assert!(q[0].4 > lo as u64 / 6, "{q:?}");
    assert_eq!(
        q[1..],
        [
            ("d_month", "Augest", "August", Mapped, 217, 214),
            ("d_month", "Octorber", "October", Mapped, 217, 275),
            ("d_dayofweek", "Thursday", "Wednesday", Kept, 2556, 1),
            ("d_daynuminweek", "5", "4", Kept, 2556, 1),
            ("d_lastdayinweekfl", "1", "0", Kept, 730, 3),
            ("d_lastdayinmonthfl", "1", "0", Kept, 2556, 1),
            ("d_weekdayfl", "0", "1", Kept, 730, 3),
        ]
    );
    let rows = agrees_with_duckdb(&data, &dir);
    assert!(
        rows.iter().all(|&r| r > 0),
        "a query found no rows: {rows:?}"
    );
    eprintln!(
        "ssb_dbgen SF {sf} ({}): {lo} lineorder rows loaded in {load_s:.1} s; 13 queries \
         identical in DuckDB and tessera's CPU engine (rows per query: {rows:?}), {:.1} s",
        dir.display(),
        start.elapsed().as_secs_f64()
    );
}

/// The loader's error for the fixture with `table.tbl` replaced by `bytes`.
fn error_with(name: &str, table: &str, bytes: &[u8]) -> String {
    let dir = fixture_copy(name);
    std::fs::write(dir.join(format!("{table}.tbl")), bytes).unwrap();
    let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    e
}

fn endless_and_oversized_input_is_refused_with_bounded_memory() {
    // A device that never ends (before: read until memory ran out).
    let dir = fixture_copy("dev-zero");
    let lo = dir.join("lineorder.tbl");
    std::fs::remove_file(&lo).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &lo).unwrap();
    let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
    assert!(
        e.contains("lineorder.tbl: a character device, not a regular file"),
        "{e}"
    );
    // A directory, and an empty file.
    std::fs::remove_file(&lo).unwrap();
    std::fs::create_dir(&lo).unwrap();
    let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
    assert!(e.contains("a directory, not a regular file"), "{e}");
    std::fs::remove_dir(&lo).unwrap();
    std::fs::write(&lo, b"").unwrap();
    let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
    assert!(e.contains("lineorder.tbl: the file is empty"), "{e}");
    // 16 GiB of zero bytes without a line end (a sparse file: no disk used); before, the
    // loader grew one line until it aborted.
    let f = std::fs::File::create(&lo).unwrap();
    f.set_len(16 << 30).unwrap();
    let t = Instant::now();
    let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
    assert!(
        e.contains("lineorder.tbl:1: no line end in ") && e.contains("65536"),
        "{e}"
    );
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    // A size no .tbl can have (sparse, if the file system allows it).
    match f.set_len(3 << 40) {
        Ok(()) => {
            let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
            assert!(e.contains("3298534883328 bytes, over the"), "{e}");
        }
        Err(e) => eprintln!("note: no 3 TiB sparse file here ({e}): that size is not tried"),
    }
    drop(f);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn overlong_lines_are_refused_with_file_line_and_limit() {
    let fixture_lines = std::fs::read_to_string(fixture().join("lineorder.tbl")).unwrap();
    // A long line that ends (within a block) and one that does not end before EOF.
    for tail in ["\n", ""] {
        let mut text = fixture_lines.clone();
        text.push_str(&"9".repeat(MAX_LINE + 1));
        text.push_str(tail);
        let e = error_with("long-line", "lineorder", text.as_bytes());
        assert!(
            e.contains(&format!(
                "lineorder.tbl:16: the line is {} bytes long, over the limit of 65536",
                MAX_LINE + 1
            )),
            "{e}"
        );
    }
}

fn invisible_bytes_are_shown_escaped() {
    let supplier = std::fs::read(fixture().join("supplier.tbl")).unwrap();
    let with = |from: &[u8], to: &[u8]| {
        let s = String::from_utf8_lossy(&supplier).into_owned();
        let i = s.find(std::str::from_utf8(from).unwrap()).unwrap();
        [&supplier[..i], to, &supplier[i + from.len()..]].concat()
    };
    let cases: [(&[u8], &[u8], &str); 5] = [
        (
            b"|AMERICA|",
            "|\u{feff}AMERICA|".as_bytes(),
            "'\\u{feff}AMERICA'",
        ),
        (b"|AMERICA|", b"|AMERICA\0|", "'AMERICA\\0'"),
        (b"|AMERICA|", b"|AMER\xffICA|", "'AMER\\xffICA'"),
        (b"|AMERICA|", b"|AMERICA\t|", "'AMERICA\\t'"),
        (b"|PERU|", "|PERU\u{a0}|".as_bytes(), "'PERU\\u{a0}'"),
    ];
    for (from, to, shown) in cases {
        let e = error_with("invisible", "supplier", &with(from, to));
        assert!(e.contains("supplier.tbl:1: column "), "{e}");
        assert!(e.contains(&format!("{shown} is not a known")), "{e}");
    }
    // A byte order mark at the start of a file.
    let e = error_with(
        "bom",
        "supplier",
        &[b"\xEF\xBB\xBF", &supplier[..]].concat(),
    );
    assert!(
        e.contains("supplier.tbl:1: the file starts with a UTF-8 byte order mark ('\\u{feff}')"),
        "{e}"
    );
}

harness! {
    cpu: [
        fixture_loads_and_reports_every_dbgen_quirk,
        fixture_values_are_the_specifications,
        endless_and_oversized_input_is_refused_with_bounded_memory,
        overlong_lines_are_refused_with_file_line_and_limit,
        invisible_bytes_are_shown_escaped,
    ],
    duckdb: [fixture_queries_match_duckdb],
    extra: [Test::duckdb(
        "dbgen_directory_loads_with_cardinalities_quirks_and_duckdb_answers",
        dbgen_directory_loads_with_cardinalities_quirks_and_duckdb_answers,
    )
    .ignored_if(
        std::env::var_os("TESSERA_DBGEN_DIR").is_none(),
        "set TESSERA_DBGEN_DIR to a directory of `dbgen -s SF -T a` output",
    )],
}
