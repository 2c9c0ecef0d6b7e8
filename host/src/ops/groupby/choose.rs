//! One call that chooses the GPU group-by variant ([`group_by`]).
//!
//! The cost model, from the estimated group count G (a sample of the keys; for a skewed
//! sample Chao's lower bound, with room to spare) and the key range: while a block's
//! shared-memory table holds the groups, the hash group-by costs about one read of the keys
//! and values (every row a shared-memory atomic, the global table one update per group per
//! block); past that its rows update a table in device memory with global atomics, whose
//! cost grows with the table. The partitioned group-by costs, whatever G and the skew, for a
//! key range of up to 2^21 keys (which the sample's range plans, and the pass checks) one
//! read and write of the rows, ordered by partition within tiles, and one read; for wider
//! ranges below 2^28 a histogram of the keys, one or two radix passes and one read. The
//! sort-based one costs the whole radix sort (three or four passes) and one more pass. So: hash
//! while the groups fit shared memory, else partitioned where the key range allows, else
//! sort. `tessera bench groupby` prints every variant next to the choice at each G and
//! distribution, which is how the thresholds were checked (figures in `docs/perf-log.md`).
use super::hash::{FirstLook, HashPlan};
use super::partition::partitioned;
use super::records::{DeviceGrouped, GpuKey, check};
use super::sort::sort_checked;
use super::{Agg, DeviceKeyColumn, DeviceValueColumn, Grouped};
use crate::error::Result;
use crate::runtime::Gpu;

/// A GPU group-by variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupByVariant {
    /// [`crate::ops::group_by_hash`].
    Hash,
    /// [`crate::ops::group_by_partitioned`].
    Partitioned,
    /// [`crate::ops::group_by_sort`].
    Sort,
}

/// What [`group_by_device`] chose, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupByChoice {
    /// The variant that ran.
    pub variant: GroupByVariant,
    /// The group count estimated from a sample of the keys (0 for empty input).
    pub estimated_groups: usize,
    /// Whether the sample called for a small shared table
    /// ([`quick_plan`](tessera_kernels::ops::groupby::quick_plan)) or a dense one that a
    /// block holds ([`wide_plan`](tessera_kernels::ops::groupby::wide_plan)), so that the
    /// hash group-by ran right after it, without waiting for the host to read the sample.
    pub quick: bool,
    /// Whether the hash group-by's shared tables were dense: a slot for every key in the
    /// range the sample saw (with some to spare), found by the key's offset instead of a walk.
    pub dense: bool,
}

/// The group-by of `keys` with `aggs` over `values` on the GPU, by the variant the module's
/// cost model picks for the estimated group count and the key range; the result is ordered
/// by key, with the semantics [`crate::cpu::group_by`] documents.
///
/// The key: one to eight columns of `u32`, `i32` or `i64`. One `u32` or `i32` column is
/// grouped as it is. Otherwise the columns' ranges are read first (one pass over them) and
/// each row's columns packed into one key: each column's offset from its least value in as
/// many bits as its range needs, the first column highest, so that the packed order is the
/// key order. A packed key of up to 32 bits takes every variant; of 33 to 64 bits the
/// sort-based one (64-bit radix sort, passes over constant digits skipped). Key columns whose
/// ranges need more than 64 bits together are an `Err` naming each column's bits.
///
/// Errors: as [`crate::ops::group_by_sort`].
pub fn group_by(
    gpu: &Gpu,
    keys: &[DeviceKeyColumn],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<Grouped> {
    group_by_device(gpu, keys, values, aggs)?.0.to_host(gpu)
}

/// [`group_by`] with the result left on the device, and what it chose.
pub fn group_by_device(
    gpu: &Gpu,
    keys: &[DeviceKeyColumn],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<(DeviceGrouped, GroupByChoice)> {
    const NAME: &str = "group_by";
    let mut checked = check(NAME, keys, values, aggs)?;
    let choice = |variant, estimated_groups| GroupByChoice {
        variant,
        estimated_groups,
        quick: false,
        dense: false,
    };
    if checked.n == 0 {
        let empty = DeviceGrouped::empty(checked.accs);
        return Ok((empty, choice(GroupByVariant::Hash, 0)));
    }
    let prepared = checked.key(gpu, NAME)?;
    let (key, accs) = (prepared.key(), checked.accs);
    if let GpuKey::U64(_) = key {
        // Only the sort takes keys of more than 32 bits; no estimate is made.
        let r = sort_checked(gpu, key, values, accs)?;
        return Ok((r, choice(GroupByVariant::Sort, 0)));
    }
    let mut plan = match HashPlan::first_look(gpu, key, values, &accs)? {
        FirstLook::Done(r, est, dense) => {
            let quick = GroupByChoice {
                quick: true,
                dense,
                ..choice(GroupByVariant::Hash, est.groups)
            };
            return Ok((r, quick));
        }
        FirstLook::Plan(plan) => plan,
    };
    let est = plan.estimate();
    if plan.in_shared() {
        let dense = GroupByChoice {
            dense: plan.dense(),
            ..choice(GroupByVariant::Hash, est)
        };
        return Ok((plan.run(gpu, accs)?, dense));
    }
    let sampled = plan.sampled_range();
    let zeroed = plan.zeroed_words()?;
    if let Some(r) = partitioned(gpu, key, values, &accs, sampled, zeroed)? {
        return Ok((r, choice(GroupByVariant::Partitioned, est)));
    }
    let r = sort_checked(gpu, key, values, accs)?;
    Ok((r, choice(GroupByVariant::Sort, est)))
}
