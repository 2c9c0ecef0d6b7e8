//! Multi-threaded CPU implementations of every operator (rayon). They are the correctness
//! oracle of the GPU tests and the CPU side of the benchmarks, and evaluate predicates, hashes
//! and radix maps with the same code as the kernels.

mod basic;
mod join;
mod pkjoin;
mod sort;

pub use basic::*;
pub use join::*;
pub use pkjoin::*;
pub use sort::*;
