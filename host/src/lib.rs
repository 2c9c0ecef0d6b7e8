//! tessera's host library: the runtime that loads the embedded PTX ([`Gpu`]), typed device
//! columns ([`DeviceColumn`]), typed kernel launches ([`Gpu::launch`]), the GPU operators
//! ([`ops`]) and their CPU implementations ([`cpu`]), and the compressed column formats
//! ([`compress`]: GPU-FOR, GPU-DFOR and the baselines, encoders, validation, on-disk form).
//! Its applications, the Star Schema Benchmark (`tessera-ssb`) and the benchmark suites
//! (`tessera-bench`), are crates of their own.
//!
//! ```no_run
//! use tessera_host::{Gpu, ops::{self, Predicate}};
//! let gpu = Gpu::new()?;
//! let y = gpu.upload(&[3.0f32, 0.2, 0.9, 0.4])?;
//! let small = ops::select(&gpu, &y, Predicate::lt(0.5))?;
//! assert_eq!(small.to_vec(&gpu)?, [0.2, 0.4]);
//! # Ok::<(), tessera_host::Error>(())
//! ```
//!
//! Limits: columns hold at most [`MAX_COLUMN_LEN`] (2^32 - 1) items; longer ones are rejected
//! with [`Error::InvalidArgument`].

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod compress;
pub mod cpu;
mod error;
pub mod ops;
pub mod preflight;
pub mod runtime;

pub use error::{Error, Result};
pub use runtime::{DeviceColumn, DeviceItem, ElemType, Gpu, KernelCode, MAX_COLUMN_LEN};

/// Opens the GPU for a test or benchmark: `Some` when one is present; `None`, with a visible
/// notice, when not; a panic when `TESSERA_REQUIRE_GPU=1` demands one.
pub fn gpu_or_skip(what: &str) -> Option<Gpu> {
    let required = std::env::var("TESSERA_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let said = what.to_string();
    match Gpu::new_with_notice(move || eprintln!("{said}: {}", Gpu::JIT_NOTICE)) {
        Ok(g) => Some(g),
        Err(e) if required => panic!("{what}: TESSERA_REQUIRE_GPU=1 but no GPU: {e}"),
        Err(e) => {
            eprintln!("SKIPPED (no GPU): {what}: {e}");
            None
        }
    }
}
