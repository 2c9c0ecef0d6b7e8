//! tessera: GPU data analytics in Rust, from the device code up.
//!
//! This root crate gathers the workspace for the `tessera` binary, the integration tests and
//! the benchmarks: the library ([`tessera_host`]: runtime, operators, CPU versions) re-exported
//! at the root, so that they write `tessera::Gpu`, `tessera::ops::select`, and its two
//! applications as [`ssb`] (the Star Schema Benchmark) and [`bench`](mod@bench) (the benchmark suites). A
//! program that wants only the operators depends on `tessera-host`.
pub use tessera_bench as bench;
pub use tessera_host::*;
pub use tessera_ssb as ssb;
