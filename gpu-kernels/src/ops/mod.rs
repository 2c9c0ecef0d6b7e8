//! Operator kernels. Each module holds a family's generic kernel body (a short sequence of
//! block-wide calls) and the macro-instantiated entry points with their [`crate::spec::KernelSpec`]s.

pub mod aggregate_ordered;
#[cfg(feature = "sweeps")]
pub mod atomics;
pub mod bandwidth;
pub mod baseline;
pub mod decompress;
pub mod decompress_base;
pub mod groupby;
pub mod groupby_keys;
pub mod groupby_part;
pub mod groupby_sort;
pub mod join;
pub mod pkjoin;
pub mod project;
pub mod runs;
pub mod scan;
pub mod select;
pub mod sort;
pub mod sort_msd;
#[cfg(feature = "testing")]
pub mod testing;
pub mod topk;
pub mod topk_bitonic;
pub mod topk_bucket;
pub mod topk_multi;
pub mod topk_perthread;
