//! The SSB GPU engine against the CPU engine (the oracle): all 13 queries at SF 0.01 and
//! SF 0.1, on generated data and on data written to dbgen `.tbl` files and loaded back; the
//! coprocessor mode against the resident mode; edge cases (empty lineorder, lineorder shorter
//! than a tile and than a chunk, qualifying rows in the partial last tile); the bytes-touched
//! model against the rows the engines aggregate.
mod common;

use std::sync::OnceLock;

use tessera::ssb::gpu::{CoprocessorEngine, GpuEngine, model};
use tessera::ssb::{Engine, GenConfig, Query, SsbData, cpu, generate, tbl};

fn sf(scale: f64) -> &'static SsbData {
    static SMALL: OnceLock<SsbData> = OnceLock::new();
    static LARGER: OnceLock<SsbData> = OnceLock::new();
    let cell = if scale < 0.05 { &SMALL } else { &LARGER };
    cell.get_or_init(|| generate(&GenConfig::new(scale)).unwrap())
}

/// SF 0.1 unless `TESSERA_TEST_MAX_N` asks for small data (compute-sanitizer runs).
fn larger_sf() -> Option<f64> {
    (!common::capped(&[600_000]).is_empty()).then_some(0.1)
}

fn all_queries_agree(engine: &dyn Engine, data: &SsbData, what: &str) {
    for q in Query::ALL {
        let expected = cpu::run(data, q);
        let got = engine.run(q).unwrap_or_else(|e| panic!("{what} {q}: {e}"));
        assert_eq!(got, expected, "{what} {q}: GPU vs CPU engine");
    }
}

#[test]
fn all_queries_match_the_cpu_engine_at_sf_0_01() {
    let Some(gpu) = common::gpu("ssb gpu sf 0.01") else {
        return;
    };
    let data = sf(0.01);
    let e = GpuEngine::new(gpu, data).unwrap();
    all_queries_agree(&e, data, "SF 0.01");
    // The answers are not trivially empty.
    for q in [Query::Q1_1, Query::Q2_1, Query::Q3_1, Query::Q4_1] {
        assert!(!e.run(q).unwrap().rows.is_empty(), "{q} found no rows");
    }
}

#[test]
fn all_queries_match_the_cpu_engine_at_sf_0_1() {
    let Some(gpu) = common::gpu("ssb gpu sf 0.1") else {
        return;
    };
    let Some(scale) = larger_sf() else {
        eprintln!("SKIPPED (TESSERA_TEST_MAX_N): ssb gpu sf 0.1");
        return;
    };
    let data = sf(scale);
    let e = GpuEngine::new(gpu, data).unwrap();
    all_queries_agree(&e, data, "SF 0.1");
    // Timed runs give the same results as untimed ones, repeatedly.
    for q in [Query::Q2_1, Query::Q4_3] {
        let (r, ms) = e.run_timed(q).unwrap();
        assert!(ms > 0.0);
        assert_eq!(r, e.run(q).unwrap());
    }
}

#[test]
fn loaded_tbl_data_gives_the_same_results() {
    let Some(gpu) = common::gpu("ssb gpu tbl") else {
        return;
    };
    let scale = larger_sf().unwrap_or(0.01);
    let dir = std::env::temp_dir().join(format!("tessera-ssb-gpu-tbl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    tbl::write_tbl_dir(sf(scale), &dir, false).unwrap();
    let loaded = tbl::load_tbl_dir(&dir, false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let e = GpuEngine::new(gpu, &loaded).unwrap();
    all_queries_agree(&e, &loaded, "loaded .tbl");
}

#[test]
fn coprocessor_mode_matches_resident_mode() {
    let Some(gpu) = common::gpu("ssb gpu coprocessor") else {
        return;
    };
    let scale = larger_sf().unwrap_or(0.01);
    let data = sf(scale);
    let resident = GpuEngine::new(gpu, data).unwrap();
    let coproc = CoprocessorEngine::new(gpu, data).unwrap();
    for q in Query::ALL {
        let (r, ms) = coproc.run_timed(q).unwrap();
        assert!(ms > 0.0);
        assert_eq!(r, resident.run(q).unwrap(), "{q}: coprocessor vs resident");
        // It ships the flight's lineorder columns and at least the dimension keys it joins.
        let lo = 4 * data.lineorder.len() as u64;
        assert!(coproc.shipped_bytes(q) >= 4 * lo, "{q}");
    }
}

/// Lineorder cut to its first `n` rows (dimensions whole).
fn truncated(data: &SsbData, n: usize) -> SsbData {
    let mut d = data.clone();
    for (_, col) in d.lineorder.columns_mut() {
        col.truncate(n);
    }
    d
}

#[test]
fn awkward_lineorder_sizes() {
    let Some(gpu) = common::gpu("ssb gpu sizes") else {
        return;
    };
    let data = sf(0.01);
    // Empty, one row, around a probe tile (1024 and 2048 rows), and a partial last tile.
    for n in common::capped(&[0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 30_001]) {
        let d = truncated(data, n);
        let e = GpuEngine::new(gpu, &d).unwrap();
        all_queries_agree(&e, &d, &format!("{n} lineorder rows"));
        let c = CoprocessorEngine::new(gpu, &d).unwrap();
        all_queries_agree(&c, &d, &format!("coprocessor, {n} lineorder rows"));
    }
}

#[test]
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
