//! Shared test helpers: the harness that reports a test without its GPU or DuckDB as ignored
//! ([`harness`]), the sizes every operator is tested on, and seeded data.
#![allow(dead_code)]
pub mod harness;

use rand::{Rng, SeedableRng, rngs::StdRng};

/// Default selection tile of the 4-byte kernels.
pub const TILE: usize = tessera::ops::SELECT_TILE;
/// Selection tile of the 4-byte Pred kernels.
pub const PRED_TILE: usize = tessera::ops::SELECT_PRED_TILE;

/// 0, 1, 127, 128, 129, a tile minus / exactly / plus one (for both selection tiles), 2^20 + 3,
/// 2^24; capped by `TESSERA_TEST_MAX_N` (compute-sanitizer runs use small sizes).
pub fn sizes() -> Vec<usize> {
    capped(&[
        0,
        1,
        127,
        128,
        129,
        TILE - 1,
        TILE,
        TILE + 1,
        PRED_TILE - 1,
        PRED_TILE,
        PRED_TILE + 1,
        (1 << 20) + 3,
        1 << 24,
    ])
}

/// Sizes at most `TESSERA_TEST_MAX_N`, from a test's own list.
pub fn capped(list: &[usize]) -> Vec<usize> {
    let max = std::env::var("TESSERA_TEST_MAX_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    list.iter().copied().filter(|&n| n <= max).collect()
}

/// `n` uniform floats in [0, 1).
pub fn uniform_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<f32>()).collect()
}

/// `n` integers uniform in [0, m).
pub fn uniform_i32(n: usize, m: i32, seed: u64) -> Vec<i32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..m)).collect()
}

/// Two top-k results agree: keys bit for bit, then rows.
pub fn same<K: tessera::ops::TopKey + bytemuck::Pod + std::fmt::Debug>(
    got: &tessera::ops::TopKRows<K>,
    want: &tessera::ops::TopKRows<K>,
    what: &str,
) {
    assert_eq!(got.rows.len(), want.rows.len(), "{what}: length");
    let bits =
        |v: &[K]| -> Vec<Vec<u8>> { v.iter().map(|x| bytemuck::bytes_of(x).to_vec()).collect() };
    if bits(&got.keys) != bits(&want.keys) {
        let i = (0..got.keys.len())
            .find(|&i| bits(&got.keys[i..=i]) != bits(&want.keys[i..=i]))
            .unwrap();
        panic!(
            "{what}: key {i} is {:?} (row {}), expected {:?} (row {})",
            got.keys[i], got.rows[i], want.keys[i], want.rows[i]
        );
    }
    assert_eq!(got.rows, want.rows, "{what}: rows");
}
