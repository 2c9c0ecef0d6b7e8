//! GPU operators: each wraps its kernels (whose names and tile shapes come from the kernel
//! crate's specs) behind a safe, typed call.

mod bandwidth;
mod baseline;
mod decompress;
mod decompress_base;
mod groupby;
mod join;
mod pkjoin;
mod project;
mod runs;
mod scan;
mod select;
mod sort;
mod sort_msd;
#[doc(hidden)]
#[cfg(feature = "testing")]
pub mod testing;
mod topk;

pub use bandwidth::read_sum_into_for_bench;
pub use bandwidth::{copy_u32, read_sum_u32};
pub use baseline::ThreeKernelSelect;
#[cfg(feature = "sweeps")]
pub use decompress::ForAblation;
pub use decompress::{
    DeviceDforColumn, DeviceForColumn, ForTile, decompress_dfor, decompress_dfor_into,
    decompress_for, decompress_for_into, sum_dfor, sum_dfor_into, sum_for, sum_for_into,
};
pub use decompress_base::{
    BASELINE_TILE, DeviceEncoded, DeviceNsfColumn, DeviceNsvColumn, DeviceRforColumn,
    DeviceRleColumn, DeviceVerticalColumn, check_gpu_decodable, decompress_nsf,
    decompress_nsf_into, decompress_nsv, decompress_nsv_into, decompress_rfor,
    decompress_rfor_into, decompress_rle, decompress_rle_into, decompress_vertical,
    decompress_vertical_into, sum_nsf, sum_nsf_into, sum_nsv, sum_nsv_into, sum_rfor,
    sum_rfor_into, sum_rle, sum_rle_into, sum_vertical, sum_vertical_into,
};
pub(crate) use groupby::key_layout;
pub use groupby::{
    Agg, AtomicTarget, DeviceGrouped, DeviceKeyColumn, DeviceOrderedAggregates, DeviceValueColumn,
    GROUPBY_SAMPLES, GroupByChoice, GroupByVariant, Grouped, KeyColumn, OrderedAggregates,
    OrderedLoads, OrderedPipeline, OrderedPlan, OrderedVariant, ResultColumn, SampleEstimate,
    ValueColumn, aggregate_sorted, check_group_by, group_by, group_by_device, group_by_hash,
    group_by_hash_device, group_by_partitioned, group_by_partitioned_device, group_by_sort,
    group_by_sort_device, groups_from_sample, groups_from_sample_counts, groups_from_sample_keys,
};
pub(crate) use join::join_perfect_layout;
pub use join::l2_read_bandwidth;
pub use join::{
    HashTable, JOIN_TILE, JoinAggregate, JoinKey, JoinPairs, JoinSum, KeySet, ProbePath,
    TableLayout, TableOptions, join, join_sum, semi_join, shared_table_limit,
};
pub(crate) use join::{all_keys, reserved_key_error};
pub use pkjoin::{
    PkJoin, PkJoinResult, PkJoinRows, PkJoinSteps, PkKey, PkPayload, PkStep, pk_join,
};
pub(crate) use pkjoin::{check_pk_inputs, pk_duplicate_error};
pub use project::{project_linear, project_linear_into, project_sigmoid, project_sigmoid_into};
pub use runs::{Runs, count_runs};
pub use scan::exclusive_scan;
pub use select::{
    Predicate, Select2Item, SelectItem, SelectVariant, Selection, select, select_where2,
    select_with,
};
pub use sort::{
    MSD_MIN_ITEMS, Order, Partitions, RadixPartition, RadixSort, SortKey, SortStrategy,
    radix_partition, sort, sort_pairs,
};
#[doc(hidden)]
pub use sort_msd::MsdKernels;
pub use tessera_kernels::predicate::CmpOp;
pub(crate) use topk::check_query;
pub(crate) use topk::check_top_k;
pub(crate) use topk::check_top_k_multi;
pub use topk::{
    BUCKET_TILE, BitonicConfig, BitonicKey, BitonicTopK, BucketKey, BucketSelectTopK, Keep,
    PerThreadKey, PerThreadTopK, PerThreadVariant, RowFilter, SamplePlan, SelectTopK, SortTopK,
    THRESHOLD_MAX_K, TopKAlgorithm, TopKDevice, TopKOrder, TopKQuery, TopKRows, TopKey,
    bitonic_model_ms, choose, model_ms, top_k, top_k_query,
};
pub use topk::{MultiKey, MultiPath, TopKMulti, TopKMultiRows, top_k_multi};

/// Items per tile of the default 4-byte selection kernels (the If variant).
pub const SELECT_TILE: usize = tessera_kernels::ops::select::SELECT_F32.tile() as usize;
/// Items per tile of the 4-byte Pred selection kernels.
pub const SELECT_PRED_TILE: usize = tessera_kernels::ops::select::SELECT_PRED_F32.tile() as usize;

/// Items per tile of the 4-byte top-k filter kernels.
pub const TOPK_TILE: usize = tessera_kernels::ops::topk::TOPK_FILTER_F32.tile() as usize;

/// The last look-back epoch before a selection's state is zeroed again (see
/// [`Selection::set_epoch`]).
#[doc(hidden)]
pub const SELECT_MAX_EPOCH: u32 = tessera_kernels::layout::MAX_EPOCH;

/// Fails unless `len == expected`, naming the operator and the argument.
pub(crate) fn check_same_len(
    op: &str,
    what: &str,
    len: usize,
    expected: usize,
) -> crate::Result<()> {
    if len != expected {
        return Err(crate::Error::invalid(format!(
            "{op}: {what} has {len} items, expected {expected}"
        )));
    }
    Ok(())
}
