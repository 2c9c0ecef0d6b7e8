//! SSB host side: generator cardinalities and domains, the columnar format, the `.tbl`
//! writer and loader (round trips and malformed lines), and the CPU engine against a
//! row-at-a-time reference and hand-checked data.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tessera::ssb::calendar::{days_from_civil, split_datekey};
use tessera::ssb::dict::{NATIONS, REGIONS};
use tessera::ssb::generator::{order_key, retail_price};
use tessera::ssb::{
    Cardinalities, Device, GenConfig, Query, QueryResult, Row, SsbData, cpu, dicts, engine, format,
    generate, tbl,
};

/// SF 0.01, generated once per test binary.
fn sf001() -> &'static SsbData {
    static DATA: OnceLock<SsbData> = OnceLock::new();
    DATA.get_or_init(|| generate(&GenConfig::new(0.01)).unwrap())
}

/// A fresh temporary directory for one test.
fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-ssb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn day(key: i32) -> i64 {
    let (y, m, d) = split_datekey(key).unwrap_or_else(|| panic!("{key} is not a date"));
    days_from_civil(y, m, d)
}

#[test]
fn cardinalities_follow_the_specification() {
    let c = |sf| Cardinalities::at(sf).unwrap();
    assert_eq!(
        (
            c(1.0).customers,
            c(1.0).suppliers,
            c(1.0).parts,
            c(1.0).orders,
            c(1.0).dates
        ),
        (30_000, 2_000, 200_000, 1_500_000, 2_556)
    );
    assert_eq!(c(10.0).parts, 800_000);
    assert_eq!(c(20.0).parts, 1_000_000);
    assert_eq!((c(20.0).customers, c(20.0).suppliers), (600_000, 40_000));
    assert_eq!(
        (
            c(0.01).customers,
            c(0.01).suppliers,
            c(0.01).parts,
            c(0.01).orders
        ),
        (300, 20, 2_000, 15_000)
    );
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 301.0] {
        let e = Cardinalities::at(bad).unwrap_err().to_string();
        assert!(e.contains("scale factor"), "{e}");
    }
}

#[test]
fn generated_tables_respect_domains_and_distributions() {
    let data = sf001();
    data.validate().unwrap();
    let card = Cardinalities::at(0.01).unwrap();
    let d = dicts();
    let (c, s, p, dt) = (&data.customer, &data.supplier, &data.part, &data.date);
    assert_eq!(
        (c.len(), s.len(), p.len(), dt.len()),
        (300, 20, 2_000, 2_556)
    );

    // Date: every day from 1992-01-01, attributes consistent with the key.
    for i in 0..dt.len() {
        assert_eq!(day(dt.d_datekey[i]), days_from_civil(1992, 1, 1) + i as i64);
        let (y, m, dd) = split_datekey(dt.d_datekey[i]).unwrap();
        assert_eq!(
            (dt.d_year[i], dt.d_monthnuminyear[i], dt.d_daynuminmonth[i]),
            (y, m as i32, dd as i32)
        );
        assert_eq!(dt.d_yearmonthnum[i], y * 100 + m as i32);
        let ym = d.yearmonth.get(dt.d_yearmonth[i]).unwrap();
        assert!(
            ym.ends_with(&y.to_string())
                && d.month.get(dt.d_month[i]).unwrap().starts_with(&ym[..3])
        );
        assert_eq!(dt.d_weeknuminyear[i], dt.d_daynuminyear[i] / 7 + 1);
        assert!((1..=7).contains(&dt.d_daynuminweek[i]));
    }

    // Dimensions: keys 1..=N, hierarchies consistent.
    let region_of: HashMap<i32, i32> = NATIONS
        .iter()
        .map(|n| {
            (
                d.nation.code(n.0).unwrap(),
                d.region.code(REGIONS[n.1]).unwrap(),
            )
        })
        .collect();
    for (keys, city, nation, region) in [
        (&c.c_custkey, &c.c_city, &c.c_nation, &c.c_region),
        (&s.s_suppkey, &s.s_city, &s.s_nation, &s.s_region),
    ] {
        for i in 0..keys.len() {
            assert_eq!(keys[i], i as i32 + 1);
            assert_eq!(region_of[&nation[i]], region[i]);
            let (cs, ns) = (
                d.city.get(city[i]).unwrap(),
                d.nation.get(nation[i]).unwrap(),
            );
            assert_eq!(cs.len(), 10);
            assert!(cs[..9].trim_end() == &ns[..ns.len().min(9)], "{cs} / {ns}");
        }
    }
    for i in 0..p.len() {
        assert_eq!(p.p_partkey[i], i as i32 + 1);
        let (m, ca, b) = (
            d.mfgr.get(p.p_mfgr[i]).unwrap(),
            d.category.get(p.p_category[i]).unwrap(),
            d.brand1.get(p.p_brand1[i]).unwrap(),
        );
        assert!(
            ca.starts_with(m) && ca.len() == 7 && b.starts_with(ca),
            "{m} {ca} {b}"
        );
        assert!((1..=40).contains(&b[7..].parse::<i32>().unwrap()));
        assert!((1..=50).contains(&p.p_size[i]));
    }
    let distinct = |v: &[i32]| v.iter().collect::<std::collections::HashSet<_>>().len();
    assert_eq!(distinct(&p.p_category), 25);
    assert_eq!(distinct(&p.p_color), 92);
    assert_eq!(distinct(&p.p_type), 150);
    assert_eq!(distinct(&p.p_container), 40);
    assert_eq!(distinct(&p.p_size), 50);

    // Lineorder: orders of 1..=7 lines, per-order fields shared, derived columns exact.
    let lo = &data.lineorder;
    let n = lo.len();
    assert!(
        (card.orders * 39 / 10..card.orders * 41 / 10).contains(&n),
        "{n} rows"
    );
    let mut orders = 0;
    let mut i = 0;
    while i < n {
        orders += 1;
        assert_eq!(lo.lo_orderkey[i], order_key(orders));
        let lines = (i..n)
            .take_while(|&j| lo.lo_orderkey[j] == lo.lo_orderkey[i])
            .count();
        assert!((1..=7).contains(&lines));
        let mut total = 0i64;
        for (l, j) in (i..i + lines).enumerate() {
            assert_eq!(lo.lo_linenumber[j], l as i32 + 1);
            for col in [
                &lo.lo_custkey,
                &lo.lo_orderdate,
                &lo.lo_orderpriority,
                &lo.lo_ordtotalprice,
            ] {
                assert_eq!(col[j], col[i]);
            }
            let rp = retail_price(lo.lo_partkey[j]);
            assert_eq!(lo.lo_extendedprice[j], rp * lo.lo_quantity[j]);
            assert_eq!(
                lo.lo_revenue[j],
                lo.lo_extendedprice[j] * (100 - lo.lo_discount[j]) / 100
            );
            assert_eq!(lo.lo_supplycost[j], 6 * rp / 10);
            assert_eq!(lo.lo_shippriority[j], 0);
            total += i64::from(lo.lo_revenue[j]) * i64::from(100 + lo.lo_tax[j]) / 100;
            let lag = day(lo.lo_commitdate[j]) - day(lo.lo_orderdate[j]);
            assert!((30..=90).contains(&lag), "commit lag {lag}");
        }
        assert_eq!(i64::from(lo.lo_ordtotalprice[i]), total);
        i += lines;
    }
    assert_eq!(orders, card.orders);
    let in_range = |v: &[i32], lo: i32, hi: i32| v.iter().all(|x| (lo..=hi).contains(x));
    assert!(in_range(&lo.lo_custkey, 1, 300) && lo.lo_custkey.iter().all(|k| k % 3 != 0));
    assert!(in_range(&lo.lo_partkey, 1, 2_000) && in_range(&lo.lo_suppkey, 1, 20));
    assert!(in_range(&lo.lo_orderdate, 19920101, 19980802));
    assert!(in_range(&lo.lo_quantity, 1, 50) && distinct(&lo.lo_quantity) == 50);
    assert!(in_range(&lo.lo_discount, 0, 10) && distinct(&lo.lo_discount) == 11);
    assert!(in_range(&lo.lo_tax, 0, 8) && distinct(&lo.lo_tax) == 9);
    assert_eq!(distinct(&lo.lo_shipmode), 7);
    assert_eq!(distinct(&lo.lo_orderpriority), 5);
    // Uniform: each discount within 10% of n / 11; order years near 1/7 (1998 is shorter).
    let mut counts = [0usize; 11];
    lo.lo_discount.iter().for_each(|&x| counts[x as usize] += 1);
    assert!(
        counts.iter().all(|&k| k.abs_diff(n / 11) < n / 110),
        "{counts:?}"
    );
    let in_1993 = lo
        .lo_orderdate
        .iter()
        .filter(|&&k| k / 10_000 == 1993)
        .count();
    let expected = n as f64 * 365.0 / 2406.0;
    assert!(
        (in_1993 as f64 - expected).abs() < 0.05 * expected,
        "{in_1993} vs {expected}"
    );
}

#[test]
fn format_round_trip_and_errors_name_the_file() {
    let data = sf001();
    let dir = temp("format");
    format::write_dir(data, &dir).unwrap();
    assert!(format::exists(&dir));
    assert_eq!(&format::read_dir(&dir).unwrap(), data);

    // A flipped byte in one column file.
    let col = format::column_path(&dir, "lineorder", "lo_revenue");
    let good = std::fs::read(&col).unwrap();
    let mut bad = good.clone();
    *bad.last_mut().unwrap() ^= 0x40;
    std::fs::write(&col, &bad).unwrap();
    let e = format::read_dir(&dir).unwrap_err().to_string();
    assert!(
        e.contains("lo_revenue.col") && e.contains("checksum mismatch"),
        "{e}"
    );
    std::fs::write(&col, &good).unwrap();

    // A column with another length than its table's.
    let other = format::column_path(&dir, "part", "p_size");
    format::write_column(&other, &[1, 2, 3]).unwrap();
    let e = format::read_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("p_size has 3 rows"), "{e}");
    format::write_column(&other, &data.part.p_size).unwrap();

    // A dictionary that is not ours.
    let dict = dir.join("dict").join("region.json");
    std::fs::write(
        &dict,
        r#"["AMERICA","AFRICA","ASIA","EUROPE","MIDDLE EAST"]"#,
    )
    .unwrap();
    let e = format::read_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("region.json") && e.contains("differs"), "{e}");

    let e = format::read_dir(&dir.join("nowhere"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("meta.json") && e.contains("missing"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tbl_round_trip_gives_identical_columns() {
    let data = sf001();
    let dir = temp("tbl-round-trip");
    tbl::write_tbl_dir(data, &dir, false).unwrap();
    let first = std::fs::read_to_string(dir.join("lineorder.tbl")).unwrap();
    let line = first.lines().next().unwrap();
    assert_eq!(line.split('|').count(), 18, "{line}");
    assert!(line.ends_with('|'));
    let loaded = tbl::load_tbl_dir(&dir, false).unwrap();
    assert_eq!(loaded.tables(), data.tables());
    // Without the trailing `|` and with CRLF line ends, dbgen variants load the same.
    let date = std::fs::read_to_string(dir.join("date.tbl")).unwrap();
    let variant: String = date
        .lines()
        .map(|l| format!("{}\r\n", l.trim_end_matches('|')))
        .collect();
    std::fs::write(dir.join("date.tbl"), variant).unwrap();
    assert_eq!(tbl::load_tbl_dir(&dir, false).unwrap().date, data.date);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Replaces line `n` (1-based) of `dir/table.tbl` and returns the loader's error.
fn load_with_line(dir: &Path, table: &str, n: usize, line: &str) -> String {
    let path = dir.join(format!("{table}.tbl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let saved = lines[n - 1].to_string();
    lines[n - 1] = line;
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = tbl::load_tbl_dir(dir, false).expect_err(line).to_string();
    lines[n - 1] = &saved;
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    e
}

#[test]
fn malformed_tbl_lines_are_errors_naming_file_line_and_column() {
    let data = sf001();
    let dir = temp("tbl-errors");
    tbl::write_tbl_dir(data, &dir, false).unwrap();
    let good =
        "1|1|7381|155|8|19960102|5-LOW|0|17|2116823|17366547|4|2032150|74711|2|19960212|TRUCK|";
    // Line 100,000 lies in the second 4 MiB block: numbering carries across blocks.
    let n = data.lineorder.len().min(100_000);
    let cases: [(&str, &str); 8] = [
        (
            "1|1|7381|155|8|19960102|5-LOW|0|17|",
            "expected 17 fields, found 9",
        ),
        (&format!("{good}9|"), "expected 17 fields, found 18"),
        (
            &good.replace("|17|", "|1x|"),
            "column 9 (lo_quantity): '1x' is not an integer",
        ),
        (
            &good.replace("19960102", "19960231"),
            "column 6 (lo_orderdate): '19960231' is not a date",
        ),
        (
            &good.replace("TRUCK", "BOAT"),
            "column 17 (lo_shipmode): 'BOAT' is not a known",
        ),
        (
            &good.replace("|2116823|", "|99999999999|"),
            "column 10 (lo_extendedprice)",
        ),
        ("", "empty line"),
        (
            &good.replace("|5-LOW|", "||"),
            "column 7 (lo_orderpriority): '' is not a known",
        ),
    ];
    for (line, needle) in cases {
        let e = load_with_line(&dir, "lineorder", n, line);
        assert!(
            e.contains(&format!("lineorder.tbl:{n}: ")) && e.contains(needle),
            "{e}"
        );
    }
    let e = load_with_line(
        &dir,
        "part",
        7,
        "7|x|MFGR#1|MFGR#16|MFGR#1612|red|PROMO BRUSHED TIN|5|SM BOX|",
    );
    assert!(
        e.contains("part.tbl:7: column 4 (p_category): 'MFGR#16'"),
        "{e}"
    );
    let e = load_with_line(
        &dir,
        "customer",
        2,
        "2|n|a|PERU     0|PERU|AMERICA|27-1|BUILDING|x|",
    );
    assert!(
        e.contains("customer.tbl:2: expected 8 fields, found 9"),
        "{e}"
    );
    std::fs::remove_file(dir.join("supplier.tbl")).unwrap();
    let e = tbl::load_tbl_dir(&dir, false).unwrap_err().to_string();
    assert!(
        e.contains("supplier.tbl") && e.contains("cannot open"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Row-at-a-time evaluation of a query straight from its parameters: the CPU engine's
/// reference, sharing none of its join tables, ranks or parallel merging.
fn reference(data: &SsbData, q: Query) -> QueryResult {
    let p = q.params();
    let index = |keys: &[i32]| -> HashMap<i32, usize> {
        keys.iter().enumerate().map(|(i, &k)| (k, i)).collect()
    };
    let (di, pi, si, ci) = (
        index(&data.date.d_datekey),
        index(&data.part.p_partkey),
        index(&data.supplier.s_suppkey),
        index(&data.customer.c_custkey),
    );
    let lo = &data.lineorder;
    let mut groups: HashMap<Vec<i32>, i64> = HashMap::new();
    for i in 0..lo.len() {
        if !p.lo_discount.matches(lo.lo_discount[i]) || !p.lo_quantity.matches(lo.lo_quantity[i]) {
            continue;
        }
        let (Some(&d), Some(&pt), Some(&s), Some(&c)) = (
            di.get(&lo.lo_orderdate[i]),
            pi.get(&lo.lo_partkey[i]),
            si.get(&lo.lo_suppkey[i]),
            ci.get(&lo.lo_custkey[i]),
        ) else {
            continue;
        };
        if !(p.date_matches(&data.date, d)
            && p.part_matches(&data.part, pt)
            && p.supplier_matches(&data.supplier, s)
            && p.customer_matches(&data.customer, c))
        {
            continue;
        }
        use tessera::ssb::GroupCol::*;
        let key = p
            .group_by
            .iter()
            .map(|g| match g {
                DYear => data.date.d_year[d],
                PBrand1 => data.part.p_brand1[pt],
                PCategory => data.part.p_category[pt],
                CNation => data.customer.c_nation[c],
                SNation => data.supplier.s_nation[s],
                CCity => data.customer.c_city[c],
                SCity => data.supplier.s_city[s],
            })
            .collect();
        *groups.entry(key).or_default() += p.agg.value(
            lo.lo_extendedprice[i],
            lo.lo_discount[i],
            lo.lo_revenue[i],
            lo.lo_supplycost[i],
        );
    }
    let rows = groups
        .into_iter()
        .map(|(groups, value)| Row { groups, value })
        .collect();
    QueryResult::new(q, rows)
}

#[test]
fn cpu_engine_matches_the_row_at_a_time_reference() {
    let data = sf001();
    let eng = engine(Device::Cpu, data).unwrap();
    for q in Query::ALL {
        let got = eng.run(q).unwrap();
        assert_eq!(got, reference(data, q), "{q}");
        // With 20 suppliers only the two-city queries may find nothing.
        let two_cities = matches!(q, Query::Q3_3 | Query::Q3_4);
        assert!(
            !got.rows.is_empty() || two_cities,
            "{q}: no rows at SF 0.01"
        );
    }
}

/// A tiny data set: the real date table, two parts, suppliers and customers, five lines.
fn tiny() -> SsbData {
    let mut data = generate(&GenConfig::new(0.01)).unwrap();
    let d = dicts();
    let code = |dict: &tessera::ssb::Dict, s: &str| dict.code(s).unwrap();
    data.part = tessera::ssb::Part {
        p_partkey: vec![1, 2],
        p_mfgr: vec![code(&d.mfgr, "MFGR#1"), code(&d.mfgr, "MFGR#2")],
        p_category: vec![code(&d.category, "MFGR#12"), code(&d.category, "MFGR#22")],
        p_brand1: vec![code(&d.brand1, "MFGR#121"), code(&d.brand1, "MFGR#2221")],
        p_color: vec![0, 1],
        p_type: vec![0, 1],
        p_size: vec![1, 2],
        p_container: vec![0, 1],
    };
    let city = |s: &str| code(&d.city, s);
    data.supplier = tessera::ssb::Supplier {
        s_suppkey: vec![1, 2],
        s_city: vec![city("UNITED ST1"), city("CHINA    3")],
        s_nation: vec![code(&d.nation, "UNITED STATES"), code(&d.nation, "CHINA")],
        s_region: vec![code(&d.region, "AMERICA"), code(&d.region, "ASIA")],
    };
    data.customer = tessera::ssb::Customer {
        c_custkey: vec![1, 2],
        c_city: vec![city("UNITED ST2"), city("JAPAN    0")],
        c_nation: vec![code(&d.nation, "UNITED STATES"), code(&d.nation, "JAPAN")],
        c_region: vec![code(&d.region, "AMERICA"), code(&d.region, "ASIA")],
        c_mktsegment: vec![0, 1],
    };
    // (orderdate, cust, part, supp, quantity, extendedprice, discount, revenue, supplycost)
    let rows = [
        (19930315, 1, 1, 1, 10, 1000, 2, 980, 60),
        (19930316, 2, 1, 1, 30, 3000, 2, 2940, 60),
        (19940205, 1, 2, 2, 30, 5000, 5, 4750, 100),
        (19971201, 2, 2, 2, 26, 7000, 6, 6580, 100),
        (19980101, 1, 1, 1, 20, 2000, 0, 2000, 60),
    ];
    let mut lo = tessera::ssb::Lineorder::default();
    for (k, r) in rows.iter().enumerate() {
        lo.lo_orderkey.push(k as i32 + 1);
        lo.lo_linenumber.push(1);
        lo.lo_custkey.push(r.1);
        lo.lo_partkey.push(r.2);
        lo.lo_suppkey.push(r.3);
        lo.lo_orderdate.push(r.0);
        lo.lo_orderpriority.push(0);
        lo.lo_shippriority.push(0);
        lo.lo_quantity.push(r.4);
        lo.lo_extendedprice.push(r.5);
        lo.lo_ordtotalprice.push(r.5);
        lo.lo_discount.push(r.6);
        lo.lo_revenue.push(r.7);
        lo.lo_supplycost.push(r.8);
        lo.lo_tax.push(0);
        lo.lo_commitdate.push(r.0);
        lo.lo_shipmode.push(0);
    }
    data.lineorder = lo;
    data.validate().unwrap();
    data
}

#[test]
fn queries_on_hand_checked_data() {
    let data = tiny();
    let run = |q: Query| cpu::run(&data, q).to_lines();
    // q1.1: 1993, discount 1..3, quantity < 25: row 1 only (row 2 has quantity 30).
    assert_eq!(run(Query::Q1_1), ["2000"]);
    // q1.2: January 1994: nothing.
    assert!(run(Query::Q1_2).is_empty());
    // q1.3: week 6 of 1994 (Feb 4..10), discount 5..7, quantity 26..35: row 3.
    assert_eq!(run(Query::Q1_3), ["25000"]);
    // q2.1: MFGR#12 from AMERICA: rows 1, 2 (1993) and 5 (1998).
    assert_eq!(
        run(Query::Q2_1),
        ["1993|MFGR#121|3920", "1998|MFGR#121|2000"]
    );
    // q2.2: MFGR#2221 from ASIA: rows 3, 4.
    assert_eq!(
        run(Query::Q2_2),
        ["1994|MFGR#2221|4750", "1997|MFGR#2221|6580"]
    );
    assert!(run(Query::Q2_3).is_empty());
    // q3.1: customer and supplier in ASIA, 1992..1997: rows 4 (JAPAN, CHINA).
    assert_eq!(run(Query::Q3_1), ["JAPAN|CHINA|1997|6580"]);
    // q3.2: both UNITED STATES, 1992..1997: row 1 (row 2's customer is in JAPAN).
    assert_eq!(run(Query::Q3_2), ["UNITED ST2|UNITED ST1|1993|980"]);
    // q4.1: both in AMERICA, MFGR#1/2: rows 1 and 5.
    assert_eq!(
        run(Query::Q4_1),
        ["1993|UNITED STATES|920", "1998|UNITED STATES|1940"]
    );
    assert_eq!(run(Query::Q4_2), ["1998|UNITED STATES|MFGR#12|1940"]);
    assert!(run(Query::Q4_3).is_empty());
    for q in Query::ALL {
        assert_eq!(cpu::run(&data, q), reference(&data, q), "{q}");
    }
}

#[test]
fn the_gpu_engine_without_a_gpu_is_an_error_not_a_panic() {
    match engine(Device::Gpu, sf001()) {
        Ok(_) => assert!(tessera::Gpu::available(), "a GPU engine without a GPU"),
        Err(e) => assert!(
            !tessera::Gpu::available(),
            "a GPU is present but its engine failed: {e}"
        ),
    }
}
