//! Shared test helpers: one GPU per test binary (module load JIT-compiles every kernel once),
//! the sizes every operator is tested on, and seeded data.
#![allow(dead_code)]
use std::sync::OnceLock;

use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::Gpu;

/// The GPU, or `None` with a visible SKIPPED line (a panic under `TESSERA_REQUIRE_GPU=1`).
pub fn gpu(test: &str) -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    let g = GPU.get_or_init(|| tessera::gpu_or_skip("GPU tests"));
    if g.is_none() {
        eprintln!("SKIPPED (no GPU): {test}");
    }
    g.as_ref()
}

/// Default selection tile (128 threads x 16 items).
pub const TILE: usize = 2048;

/// 0, 1, 127, 128, 129, a tile minus / exactly / plus one, 2^20 + 3, 2^24.
pub const SIZES: [usize; 10] = [
    0,
    1,
    127,
    128,
    129,
    TILE - 1,
    TILE,
    TILE + 1,
    (1 << 20) + 3,
    1 << 24,
];

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
