//! One call that chooses the GPU group-by variant ([`group_by`]).
//!
//! The cost model, from the estimated group count G (a sample of the keys; for a skewed
//! sample Chao's lower bound, with room to spare) and the key range: while a block's
//! shared-memory table holds the groups, the hash group-by costs about one read of the keys
//! and values (every row a shared-memory atomic, the global table one update per group per
//! block); past that its rows update a table in device memory with global atomics, whose
//! cost grows with the table. The partitioned group-by costs a histogram of the keys, one
//! radix pass for keys below 2^20 (two below 2^28) and one read, whatever G and the skew; the
//! sort-based one the whole radix sort (three or four passes) and one more pass. So: hash
//! while the groups fit shared memory, else partitioned where the key range allows, else
//! sort. `tessera bench groupby` prints every variant next to the choice at each G and
//! distribution, which is how the thresholds were checked (figures in `docs/perf-log.md`).
use super::hash::HashPlan;
use super::partition::PartPlan;
use super::records::{Checked, DeviceGrouped, check};
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
}

/// The group-by of `keys` (one `u32` or `i32` column) with `aggs` over `values` on the GPU,
/// by the variant the module's cost model picks for the estimated group count and the key
/// range; the result is ordered by key, with the semantics [`crate::cpu::group_by`] documents.
///
/// Errors, before any work: as [`crate::ops::group_by_hash`].
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
    let Checked { n, key, accs } = check(NAME, keys, values, aggs)?;
    let choice = |variant, estimated_groups| GroupByChoice {
        variant,
        estimated_groups,
    };
    if n == 0 {
        let empty = DeviceGrouped::empty(accs);
        return Ok((empty, choice(GroupByVariant::Hash, 0)));
    }
    let plan = HashPlan::new(gpu, key, values, &accs)?;
    let est = plan.estimate();
    if plan.in_shared() {
        return Ok((plan.run(gpu, accs)?, choice(GroupByVariant::Hash, est)));
    }
    if let Some(part) = PartPlan::new(gpu, key, accs.list.len())? {
        let r = part.run(gpu, values, accs)?;
        return Ok((r, choice(GroupByVariant::Partitioned, est)));
    }
    let r = sort_checked(gpu, key, values, accs)?;
    Ok((r, choice(GroupByVariant::Sort, est)))
}
