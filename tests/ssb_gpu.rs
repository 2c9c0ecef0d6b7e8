//! The SSB GPU engine against the CPU engine (the oracle): all 13 queries at each selected
//! scale factor, resident (plain and compressed columns) and in coprocessor mode (plain and
//! compressed transfers), and on data
//! written to dbgen `.tbl` files and loaded back; edge cases (empty lineorder, lineorder shorter than a tile and than a
//! chunk, qualifying rows in the partial last tile); the bytes-touched model against the rows
//! the engines aggregate.
//!
//! Environment:
//! * `TESSERA_SSB_SF`: the scale factors of the whole-benchmark tests, comma-separated
//!   (default `0.01,0.1`). The acceptance run on the GPU machine is
//!   `TESSERA_SSB_SF=0.1,1 TESSERA_REQUIRE_GPU=1 cargo test --release --test ssb_gpu`.
//!   The `.tbl` round trip runs at the largest of them; the edge cases and the model test
//!   always use SF 0.01.
//! * `TESSERA_TEST_MAX_N` (compute-sanitizer runs): scale factors whose lineorder exceeds it
//!   are skipped, except SF 0.01 and below.
mod common;

use std::collections::HashMap;
use std::sync::Mutex;

use tessera::compress::{Encoded, Scheme};
use tessera::ssb::gpu::{
    CoprocessorEngine, FactCol, GpuEngine, PACKED_SCHEMES, encode_fact, model,
};
use tessera::ssb::{Engine, GenConfig, Query, QueryResult, SsbData, cpu, generate, storage, tbl};

/// Generated data at `scale`, generated once per test binary (tests share it).
fn sf(scale: f64) -> &'static SsbData {
    static DATA: Mutex<Vec<(f64, &'static SsbData)>> = Mutex::new(Vec::new());
    // Held while generating: tests asking for the same scale factor wait for one generation.
    let mut cache = DATA.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, d)) = cache.iter().find(|(s, _)| *s == scale) {
        return d;
    }
    let d: &'static SsbData = Box::leak(Box::new(generate(&GenConfig::new(scale)).unwrap()));
    cache.push((scale, d));
    d
}

/// The CPU engine's answers at `scale`, computed once per test binary.
fn cpu_answers(scale: f64) -> &'static HashMap<Query, QueryResult> {
    static ANSWERS: Mutex<Vec<(f64, &'static HashMap<Query, QueryResult>)>> =
        Mutex::new(Vec::new());
    let mut cache = ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, a)) = cache.iter().find(|(s, _)| *s == scale) {
        return a;
    }
    let data = sf(scale);
    let a = Box::leak(Box::new(
        Query::ALL
            .into_iter()
            .map(|q| (q, cpu::run(data, q)))
            .collect(),
    ));
    cache.push((scale, a));
    a
}

/// The scale factors of `TESSERA_SSB_SF` (default SF 0.01 and SF 0.1), less those whose
/// lineorder (about 6 million rows per SF) exceeds `TESSERA_TEST_MAX_N`.
fn scale_factors() -> Vec<f64> {
    let list = std::env::var("TESSERA_SSB_SF").unwrap_or_else(|_| "0.01,0.1".into());
    list.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .ok()
                .filter(|&sf: &f64| sf > 0.0 && sf.is_finite())
                .unwrap_or_else(|| panic!("TESSERA_SSB_SF={list:?}: {s:?} is no scale factor"))
        })
        .filter(|&sf| {
            let fits = sf <= 0.01 || !common::capped(&[(6e6 * sf) as usize]).is_empty();
            if !fits {
                eprintln!("note: SF {sf} is over TESSERA_TEST_MAX_N: not run");
            }
            fits
        })
        .collect()
}

/// Every query of `engine` against the CPU engine's answers at `scale`.
fn all_queries_agree_at(engine: &dyn Engine, scale: f64, what: &str) {
    let answers = cpu_answers(scale);
    for q in Query::ALL {
        let got = engine
            .run(q)
            .unwrap_or_else(|e| panic!("SF {scale} {what} {q}: {e}"));
        assert_eq!(got, answers[&q], "SF {scale} {what} {q}: GPU vs CPU engine");
    }
}

/// Every query of `engine` against the CPU engine on `data` (data made for one test).
fn all_queries_agree(engine: &dyn Engine, data: &SsbData, what: &str) {
    for q in Query::ALL {
        let expected = cpu::run(data, q);
        let got = engine.run(q).unwrap_or_else(|e| panic!("{what} {q}: {e}"));
        assert_eq!(got, expected, "{what} {q}: GPU vs CPU engine");
    }
}

fn all_queries_match_the_cpu_engine_at_each_scale_factor(gpu: &tessera::Gpu) {
    for scale in scale_factors() {
        let e = GpuEngine::new(gpu, sf(scale)).unwrap();
        all_queries_agree_at(&e, scale, "resident");
        // The answers are not trivially empty.
        for q in [Query::Q1_1, Query::Q2_1, Query::Q3_1, Query::Q4_1] {
            assert!(
                !cpu_answers(scale)[&q].rows.is_empty(),
                "SF {scale} {q} found no rows"
            );
        }
        // Timed runs give the same results as untimed ones, repeatedly.
        for q in [Query::Q2_1, Query::Q4_3] {
            let (r, ms) = e.run_timed(q).unwrap();
            assert!(ms > 0.0);
            assert_eq!(r, e.run(q).unwrap(), "SF {scale} {q}: timed vs untimed");
        }
    }
}

fn queries_without_supplier_codes_fall_back_to_lookups(gpu: &tessera::Gpu) {
    // q3.1 and q4.2 group by 5 supplier nations, q3.2 and q4.3 by 10 cities, q3.3 and q3.4 by
    // 2: with no code slot every one of them falls back, with 5 the cities' queries do.
    let scale = 0.01;
    for slots in [0, 5] {
        let e = GpuEngine::with_code_slots(gpu, sf(scale), slots).unwrap();
        all_queries_agree_at(&e, scale, &format!("{slots} code slots"));
    }
}

fn coprocessor_mode_matches_the_cpu_engine_at_each_scale_factor(gpu: &tessera::Gpu) {
    for scale in scale_factors() {
        let data = sf(scale);
        let coproc = CoprocessorEngine::new(gpu, data).unwrap();
        all_queries_agree_at(&coproc, scale, "coprocessor");
        for q in Query::ALL {
            let (r, ms) = coproc.run_timed(q).unwrap();
            assert!(ms > 0.0);
            assert_eq!(
                &r,
                &cpu_answers(scale)[&q],
                "SF {scale} {q}: timed coprocessor"
            );
            // It ships the flight's lineorder columns and at least the dimension keys it joins.
            let lo = 4 * data.lineorder.len() as u64;
            assert!(coproc.shipped_bytes(q) >= 4 * lo, "SF {scale} {q}");
        }
    }
}

/// Coprocessor mode over compressed columns: each chunk ships its rows' compressed words
/// (GPU-FOR: whole blocks and their starts, rebased), fewer bytes than the plain columns; at
/// each scale factor in the default chunks, and in chunks of one GPU-FOR block up to several
/// tiles (many chunks, short last ones) on awkward lineorder sizes, plain and compressed.
fn compressed_coprocessor_mode_matches_the_cpu_engine(gpu: &tessera::Gpu) {
    for scale in scale_factors() {
        let data = sf(scale);
        let encoded = encode_fact(data, &PACKED_SCHEMES).unwrap();
        let co = CoprocessorEngine::compressed(gpu, data, &encoded).unwrap();
        all_queries_agree_at(&co, scale, "compressed coprocessor");
        let plain = CoprocessorEngine::new(gpu, data).unwrap();
        for q in Query::ALL {
            let (packed, whole) = (co.shipped_bytes(q), plain.shipped_bytes(q));
            assert!(
                packed < whole,
                "SF {scale} {q}: ships {packed} of {whole} bytes"
            );
        }
    }
    let data = sf(0.01);
    for n in common::capped(&[0, 1, 129, 4095, 30_001, data.lineorder.len()]) {
        let d = truncated(data, n);
        let encoded = encode_fact(&d, &PACKED_SCHEMES).unwrap();
        for chunk in [128, 4096, 3 * 4096 + 128] {
            let co = CoprocessorEngine::with_chunks(gpu, &d, Some(&encoded), chunk).unwrap();
            all_queries_agree(
                &co,
                &d,
                &format!("compressed coprocessor, {n} rows, chunks {chunk}"),
            );
            let co = CoprocessorEngine::with_chunks(gpu, &d, None, chunk).unwrap();
            all_queries_agree(&co, &d, &format!("coprocessor, {n} rows, chunks {chunk}"));
        }
    }
    for chunk in [0, 100, 4097] {
        let err = CoprocessorEngine::with_chunks(gpu, data, None, chunk)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("multiple of 128"), "{err}");
    }
    let encoded = encode_fact(data, &PACKED_SCHEMES).unwrap();
    let err = CoprocessorEngine::compressed(gpu, data, &encoded[..8])
        .err()
        .expect("refused");
    assert!(err.to_string().contains("8 columns"), "{err}");
}

fn loaded_tbl_data_gives_the_same_results(gpu: &tessera::Gpu) {
    let scale = scale_factors().into_iter().reduce(f64::max).unwrap_or(0.01);
    let dir = std::env::temp_dir().join(format!("tessera-ssb-gpu-tbl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    tbl::write_tbl_dir(sf(scale), &dir, false).unwrap();
    let loaded = tbl::load_tbl_dir(&dir, false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        loaded.tables() == sf(scale).tables(),
        "SF {scale}: the .tbl round trip changed columns"
    );
    let e = GpuEngine::new(gpu, &loaded).unwrap();
    all_queries_agree_at(&e, scale, "loaded .tbl");
}

/// Lineorder cut to its first `n` rows (dimensions whole).
fn truncated(data: &SsbData, n: usize) -> SsbData {
    let mut d = data.clone();
    for (_, col) in d.lineorder.columns_mut() {
        col.truncate(n);
    }
    d
}

fn awkward_lineorder_sizes(gpu: &tessera::Gpu) {
    let data = sf(0.01);
    // Empty, one row, around each flight's probe tile (1024 rows for flight 1, 2048 for
    // flights 2 and 4, 3072 for flight 3) and its multiples, and a partial last tile.
    let sizes = [
        0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072, 3073, 4097, 6145, 9215, 30_001,
    ];
    for n in common::capped(&sizes) {
        let d = truncated(data, n);
        let e = GpuEngine::new(gpu, &d).unwrap();
        all_queries_agree(&e, &d, &format!("{n} lineorder rows"));
        let c = CoprocessorEngine::new(gpu, &d).unwrap();
        all_queries_agree(&c, &d, &format!("coprocessor, {n} lineorder rows"));
    }
}

/// With the probes' grids capped at a few blocks, each block walks many tiles, so the loop that
/// loads the next tile while it works on the current one runs all its iterations on small
/// inputs (without the cap it runs them only once a scale factor has more tiles than the GPU
/// has resident blocks, about SF 1 on an H100).
fn probes_walk_many_tiles_per_block(gpu: &tessera::Gpu) {
    let data = sf(0.01);
    for blocks in [1, 2, 3] {
        gpu.set_resident_block_cap(Some(blocks));
        for n in common::capped(&[3073, 6145, 9215, 30_001]) {
            let d = truncated(data, n);
            let e = GpuEngine::new(gpu, &d).unwrap();
            all_queries_agree(&e, &d, &format!("{blocks} blocks, {n} lineorder rows"));
        }
    }
    gpu.set_resident_block_cap(None);
    let e = GpuEngine::new(gpu, data).unwrap();
    all_queries_agree(&e, data, "uncapped after the capped runs");
}

fn compressed_columns_match_the_cpu_engine_at_each_scale_factor(gpu: &tessera::Gpu) {
    for scale in scale_factors() {
        let e = GpuEngine::compressed(gpu, sf(scale)).unwrap();
        let cols = e.packed_columns().expect("a compressed engine");
        assert_eq!(cols.len(), 9);
        assert!(
            cols.iter().any(|c| c.scheme == Scheme::For),
            "SF {scale}: {cols:?}"
        );
        for c in cols {
            let plain = 4 * sf(scale).lineorder.len();
            assert!(c.bytes <= plain + 64, "SF {scale}: {c:?} over {plain}");
        }
        all_queries_agree_at(&e, scale, "compressed");
    }
}

/// Every column in one scheme: GPU-FOR, NSF (lo_discount, lo_quantity and lo_suppkey take
/// one byte at SF 0.01, the prices four), None; at awkward lineorder sizes and with blocks
/// walking many tiles (the walks keep a plain first column's next tile or the next tile's
/// headers in flight).
fn every_compressed_kind_alone(gpu: &tessera::Gpu) {
    let data = sf(0.01);
    for scheme in PACKED_SCHEMES {
        let e = GpuEngine::compressed_in(gpu, data, &[scheme]).unwrap();
        assert!(
            e.packed_columns()
                .unwrap()
                .iter()
                .all(|c| c.scheme == scheme)
        );
        all_queries_agree(&e, data, scheme.name());
        for n in common::capped(&[0, 1, 127, 129, 1023, 1025, 2049, 3071, 3073, 9215, 30_001]) {
            let d = truncated(data, n);
            let e = GpuEngine::compressed_in(gpu, &d, &[scheme]).unwrap();
            all_queries_agree(&e, &d, &format!("{}, {n} lineorder rows", scheme.name()));
        }
    }
    gpu.set_resident_block_cap(Some(2));
    for n in common::capped(&[6145, 30_001]) {
        let d = truncated(data, n);
        let e = GpuEngine::compressed(gpu, &d).unwrap();
        all_queries_agree(&e, &d, &format!("compressed, 2 blocks, {n} lineorder rows"));
    }
    gpu.set_resident_block_cap(None);
    // Columns written to a data directory and read back (validated against the data).
    let dir = std::env::temp_dir().join(format!("tessera-ssb-packed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    storage::write_compressed(data, &dir).unwrap();
    let cols = storage::read_compressed(&dir, data).unwrap().unwrap();
    let e = GpuEngine::compressed_from(gpu, data, &cols).unwrap();
    all_queries_agree(&e, data, "compressed columns read from files");
    std::fs::remove_dir_all(&dir).unwrap();
    let short = truncated(data, 1000);
    let err = GpuEngine::compressed_from(gpu, &short, &cols)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("1000 rows"), "{err}");
    for bad in [&[][..], &[Scheme::Dfor], &[Scheme::For, Scheme::Rle]] {
        let err = GpuEngine::compressed_in(gpu, data, bad)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("GPU-FOR"), "{err}");
    }
}

/// The compressed probes specialized for their columns' kinds (every column GPU-FOR; and
/// lo_suppkey NSF at 2 bytes with the rest GPU-FOR, the choice at SF 20), with their survivors
/// queued across tiles for the selective queries, and the probe that reads the kinds at run
/// time, on mixtures none is specialized for: each taken where expected, resident and in
/// coprocessor mode, with blocks walking one tile and many.
fn compressed_probes_specialized_for_kinds(gpu: &tessera::Gpu) {
    use FactCol::*;
    // 400 suppliers at SF 0.2: lo_suppkey takes 2 bytes in NSF; lo_orderdate takes 2 over
    // its minimum at every scale.
    let full = sf(0.2);
    // The queries whose first test keeps few rows (a month or a week of dates; a nation or
    // two cities of suppliers) take the specialized probes that queue their survivors.
    let selective = ["q1.2", "q1.3", "q3.2", "q3.3", "q3.4", "q4.3"];
    let named = |kinds: [&str; 4], q: Query| -> String {
        let f = q.name().as_bytes()[1] - b'0';
        match kinds[f as usize - 1] {
            "" => format!("ssb_flight{f}_packed"),
            k if selective.contains(&q.name()) => format!("ssb_flight{f}_packed_{k}_queued"),
            k => format!("ssb_flight{f}_packed_{k}"),
        }
    };
    for n in common::capped(&[2049, 6145, 30_001, 100_000]) {
        let d = truncated(full, n);
        let by = |s| encode_fact(&d, &[s]).unwrap();
        let (fo, nsf, plain) = (by(Scheme::For), by(Scheme::Nsf), by(Scheme::Plain));
        assert!(
            matches!(&nsf[OrderDate as usize], Encoded::Nsf(c) if c.header().value_bytes == 2),
            "lo_orderdate in NSF at 2 bytes, over its minimum"
        );
        // GPU-FOR but for the columns named, each from the given encoding.
        let with = |cols: &[(FactCol, &[Encoded])]| {
            let mut out = fo.clone();
            for &(c, from) in cols {
                out[c as usize] = from[c as usize].clone();
            }
            out
        };
        let cases = [
            ("GPU-FOR", fo.clone(), [""; 4]),
            (
                "lo_orderdate NSF2",
                with(&[(OrderDate, &nsf[..])]),
                ["nfff", "ffnf", "ffnf", "fffnff"],
            ),
            (
                "lo_suppkey and lo_orderdate NSF2",
                with(&[(SuppKey, &nsf[..]), (OrderDate, &nsf[..])]),
                ["nfff", "nfnf", "nfnf", "nffnff"],
            ),
            ("lo_suppkey NSF2", with(&[(SuppKey, &nsf[..])]), [""; 4]),
            (
                "lo_orderdate NSF2, lo_suppkey None",
                with(&[(OrderDate, &nsf[..]), (SuppKey, &plain[..])]),
                ["nfff", "", "", ""],
            ),
            (
                "lo_orderdate None",
                with(&[(OrderDate, &plain[..])]),
                [""; 4],
            ),
            (
                "lo_orderdate NSF2, lo_discount NSF1",
                with(&[(OrderDate, &nsf[..]), (Discount, &nsf[..])]),
                ["", "ffnf", "ffnf", "fffnff"],
            ),
        ];
        for (what, cols, kinds) in cases {
            let what = format!("{what}, {n} lineorder rows");
            let e = GpuEngine::compressed_from(gpu, &d, &cols).unwrap();
            for q in Query::ALL {
                let probe = e.packed_probe(q).unwrap();
                assert_eq!(probe, named(kinds, q), "{what}: {q}");
            }
            all_queries_agree(&e, &d, &what);
            gpu.set_resident_block_cap(Some(2));
            all_queries_agree(&e, &d, &format!("{what}, 2 blocks"));
            gpu.set_resident_block_cap(None);
            let co = CoprocessorEngine::compressed(gpu, &d, &cols).unwrap();
            all_queries_agree(&co, &d, &format!("{what}, coprocessor"));
        }
    }
}

fn model_counts_the_rows_the_engines_aggregate() {
    let data = sf(0.01);
    let n = data.lineorder.len() as f64;
    for q in Query::ALL {
        let m = model(data, q);
        assert!(m.qualifying_rows as f64 <= n, "{q}");
        // At least the first column in full, at most every column in full plus the builds.
        let cols = match q.name().as_bytes()[1] {
            b'4' => 6.0,
            _ => 4.0,
        };
        assert!(m.read_bytes >= 4.0 * n, "{q}: {m:?}");
        assert!(m.read_bytes <= 4.0 * n * cols + 4e6, "{q}: {m:?}");
        assert!(
            m.line_read_bytes >= m.read_bytes - 1.0,
            "{q}: lines cover sectors"
        );
        assert_eq!(
            cpu::run(data, q).rows.is_empty(),
            m.qualifying_rows == 0,
            "{q}: model and engine disagree on whether rows qualify"
        );
    }
}

harness! {
    gpu: [
        all_queries_match_the_cpu_engine_at_each_scale_factor,
        queries_without_supplier_codes_fall_back_to_lookups,
        coprocessor_mode_matches_the_cpu_engine_at_each_scale_factor,
        compressed_coprocessor_mode_matches_the_cpu_engine,
        loaded_tbl_data_gives_the_same_results,
        awkward_lineorder_sizes,
        probes_walk_many_tiles_per_block,
        compressed_columns_match_the_cpu_engine_at_each_scale_factor,
        every_compressed_kind_alone,
        compressed_probes_specialized_for_kinds,
    ],
    cpu: [
        model_counts_the_rows_the_engines_aggregate,
    ],
}
