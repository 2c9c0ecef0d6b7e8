//! Multi-threaded CPU implementations of every operator (rayon). They are the correctness
//! oracle of the GPU tests and the CPU side of the benchmarks, and evaluate predicates, hashes
//! and radix maps with the same code as the kernels.

mod basic;
mod decompress;
mod groupby;
mod join;
mod ordered;
mod pkjoin;
mod sort;
mod topk;
mod topk_bitonic;
mod topk_fused;
mod topk_multi;

pub use basic::{exclusive_scan, project_linear, project_sigmoid, select, select_where2, sum_u32};
pub use decompress::{decompress, decompress_sum};
pub use groupby::group_by;
pub use join::{CpuHashTable, join, join_sum, semi_join};
pub use ordered::aggregate_runs;
pub use pkjoin::{PkJoinRows, pk_join};
pub use sort::{CpuPartitions, radix_partition, sort, sort_pairs};
pub use topk::top_k;
pub use topk_bitonic::top_k_bitonic;
pub use topk_fused::{count_runs, top_k_linear, top_k_linear_where, top_k_where};
pub use topk_multi::top_k_multi;
