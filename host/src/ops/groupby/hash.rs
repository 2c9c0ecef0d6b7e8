//! Hash group-by on the GPU: one 32-bit key (a column, or key columns packed into 32 bits by
//! `keys.rs`), any aggregates of up to four distinct
//! accumulators (a sum and a mean of one column share one). See
//! `tessera_kernels::ops::groupby` for the kernels and the accumulators' forms.
//!
//! The call estimates the group count from a sample of 4096 rows
//! ([`groups_from_sample_counts`], from counts the GPU makes), sizes a global table of twice
//! that, four times for a skewed sample (and, while the groups fit, a table per block in
//! shared memory), aggregates in one pass over the rows, and runs again with a table four
//! times larger if the estimate was short. Where the sample's counts alone call for a small
//! shared table (`quick_plan`: up to a few hundred keys, nearly all seen more than once),
//! the kernels take it from the sample on the GPU: the host queues the sample and the
//! aggregation together and reads the sample's counts while the aggregation runs, instead of
//! waiting for the sample before it sizes the tables. Other samples make the aggregation
//! return at once, and the host sizes the tables from the estimate. The groups then leave
//! the table in key order: their keys and slots compacted, then ranked by counting (up to
//! [`RANK_MAX`] groups) or sorted with the radix sort, and written as records on the device
//! ([`DeviceGrouped`]), the first of them read back with the group count in one copy.
//! Estimates of a few groups get a tiny shared table with a copy of each slot per lane, so
//! that a warp's lanes do not serialize on the same words.
use cudarc::driver::CudaViewMut;
use tessera_kernels::ops::groupby::{
    self as k, GroupByParams, LANE_COPIES, MIN_SHARED_SLOTS, TINY_GROUPS, TINY_SLOTS, shared_limit,
    shared_table_bytes,
};
use tessera_kernels::spec::KernelSpec;

use super::records::{
    Accumulators, DeviceGrouped, GpuKey, check, kernel_for, ptr, read_head, value_ptr,
};
use super::{Agg, DeviceKeyColumn, DeviceValueColumn, Grouped};
use crate::error::{Error, Result};
use crate::ops::sort::{Order, sort_pairs};
use crate::runtime::{DeviceColumn, Gpu, PodBuffer, grid_per_sm, tile_grid};

/// Most groups ranked by counting (`GROUPBY_RANK`, whose work grows as their square); more
/// are sorted by the radix sort.
const RANK_MAX: usize = 32 * 1024;

/// Fewest slots of the global table.
const MIN_GLOBAL_SLOTS: u64 = 1024;

/// Slots of the global table of a grouping that runs on the sample's word alone
/// ([`k::quick_plan`]): room for the groups such a sample leaves possible, and few enough
/// that the ranking orders them.
const QUICK_GLOBAL_SLOTS: u64 = 4096;

/// Most slots of the global table a first attempt takes on the sample's word; a larger
/// group count grows it by overflow.
const FIRST_GLOBAL_SLOTS: u64 = 1 << 28;

/// The group-by of `keys` (key columns as [`crate::ops::group_by`] takes them, whose ranges
/// pack into 32 bits) with `aggs` over `values`, by hashing;
/// the result is ordered by key, with the semantics [`crate::cpu::group_by`] documents (float
/// sums agree to rounding: the GPU adds in another order).
///
/// Fast while the groups fit a block's shared memory (about 14 000 with one accumulator on
/// an H100): a row then costs shared-memory atomics only. More groups go through global
/// atomics on a table in device memory, correct at any count but slower than
/// [`crate::ops::group_by_sort`] once the table leaves the L2 cache; [`crate::ops::group_by`]
/// chooses.
///
/// Errors, before any work: what [`crate::ops::check_group_by`] checks, more than eight key
/// columns, and aggregates that need more than four accumulators; once the ranges of packed
/// key columns are read, key columns whose ranges need more than 32 bits together (group
/// those with [`crate::ops::group_by_sort`]).
pub fn group_by_hash(
    gpu: &Gpu,
    keys: &[DeviceKeyColumn],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<Grouped> {
    group_by_hash_device(gpu, keys, values, aggs)?.to_host(gpu)
}

/// [`group_by_hash`] with the result left on the device.
pub fn group_by_hash_device(
    gpu: &Gpu,
    keys: &[DeviceKeyColumn],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<DeviceGrouped> {
    let mut checked = check(NAME, keys, values, aggs)?;
    if checked.n == 0 {
        return Ok(DeviceGrouped::empty(checked.accs));
    }
    let key = checked.key(gpu, NAME)?;
    let accs = checked.accs;
    match HashPlan::first_look(gpu, key.key(), values, &accs)? {
        FirstLook::Done(r, _) => Ok(r),
        FirstLook::Plan(plan) => plan.run(gpu, accs),
    }
}

const NAME: &str = "group_by_hash";

/// A hash grouping of `n > 0` rows, prepared: its parameters with the shared tables sized
/// from the estimated group count, and its kernel.
pub(super) struct HashPlan {
    params: GroupByParams,
    spec: KernelSpec<k::HashArgs>,
    key_xor: u32,
    est: usize,
    skewed: bool,
}

/// What the first look at the keys gave.
pub(super) enum FirstLook {
    /// The grouping itself, with the sample's estimate: the sample called for a small shared
    /// table ([`k::quick_plan`]), so the aggregation followed it without the host reading it.
    Done(DeviceGrouped, SampleEstimate),
    /// The plan sized from the sample's estimate.
    Plan(HashPlan),
}

impl HashPlan {
    /// Samples the keys and, where the sample calls for a small shared table, groups at once:
    /// the sample and the aggregation are queued together, and the host reads the sample's
    /// counts (copied to page-locked memory between the two) while the aggregation runs.
    /// Else (or when the groups overflowed that table) the plan sized from the sample's
    /// estimate. Inputs of fewer rows than a sample, and accumulators whose small tables do
    /// not fit shared memory, are sampled first (one synchronization), then planned.
    pub(super) fn first_look(
        gpu: &Gpu,
        key: GpuKey,
        values: &[DeviceValueColumn],
        accs: &Accumulators,
    ) -> Result<FirstLook> {
        let (mut params, key_xor) = hash_params(gpu, key, values, accs)?;
        let n = params.n as usize;
        let aggs = accs.list.len();
        let base = hash_spec(&accs.list);
        let smem = shared_table_bytes(TINY_SLOTS, LANE_COPIES, aggs).max(shared_table_bytes(
            MIN_SHARED_SLOTS,
            1,
            aggs,
        ));
        if n < k::GROUPBY_SAMPLES || gpu.allow_max_dynamic_smem(&base)? < smem {
            let est = estimate_groups(gpu, &params)?;
            return Self::sized(gpu, params, key_xor, accs, est).map(FirstLook::Plan);
        }
        params.quick = 1;
        let mut table = GlobalTable::new(gpu, &mut params, QUICK_GLOBAL_SLOTS, aggs)?;
        {
            let mut state = table.state.view_mut();
            sample(
                gpu,
                &params,
                &mut state.slice_mut(k::STATE_SAMPLE..k::STATE_SAMPLE + 3),
            )?;
        }
        // The sample's counts come back while the aggregation runs (or has returned at once).
        let view = table.state.view();
        let mut early = gpu.read_early(&view.slice(k::STATE_SAMPLE..k::STATE_SAMPLE + 3))?;
        table.aggregate(gpu, &base, smem)?;
        let c = early.wait()?;
        drop(early);
        let est = estimate_from(&c, n);
        if k::quick_plan(c[0], c[1]).is_some()
            && let Some(r) = table.records(gpu, key_xor)?
        {
            let grouped = DeviceGrouped::new(accs.clone(), r.groups, Some(r.records), r.head);
            return Ok(FirstLook::Done(grouped, est));
        }
        params.quick = 0;
        Self::sized(gpu, params, key_xor, accs, est).map(FirstLook::Plan)
    }

    /// The plan for `params` (tables not yet sized) from the sample's estimate.
    fn sized(
        gpu: &Gpu,
        mut params: GroupByParams,
        key_xor: u32,
        accs: &Accumulators,
        estimate: SampleEstimate,
    ) -> Result<Self> {
        let SampleEstimate {
            groups: est,
            skewed,
        } = estimate;
        let aggs = accs.list.len();
        let base = hash_spec(&accs.list);
        let max_smem = gpu.allow_max_dynamic_smem(&base)?;
        (params.shared_slots, params.shared_copies) = shared_slots(est, skewed, aggs, max_smem);
        // A table that leaves room for one block per SM: the wide kernel, whose 1,024 threads
        // keep twice the rows in flight.
        let smem = shared_table_bytes(params.shared_slots, params.shared_copies, aggs);
        let wide = k::GROUPBY_HASH_WIDE[aggs];
        let spec = if params.shared_slots >= k::WIDE_MIN_SLOTS
            && gpu.blocks_per_sm(&base, smem)? == 1
            && gpu.allow_max_dynamic_smem(&wide)? >= smem
        {
            wide
        } else {
            base
        };
        Ok(HashPlan {
            params,
            spec,
            key_xor,
            est,
            skewed,
        })
    }

    /// The estimated group count.
    pub(super) fn estimate(&self) -> usize {
        self.est
    }

    /// Whether the blocks aggregate in shared memory (most groups fit a block's table).
    pub(super) fn in_shared(&self) -> bool {
        self.params.shared_slots != 0
    }

    /// Aggregates, growing the global table until it holds every group.
    pub(super) fn run(mut self, gpu: &Gpu, accs: Accumulators) -> Result<DeviceGrouped> {
        let params = &mut self.params;
        // A skewed sample's estimate is a lower bound, and an overflow runs the whole
        // aggregation again: twice the room then.
        let room = if self.skewed { 4 } else { 2 } * self.est as u64;
        let mut slots = room.clamp(MIN_GLOBAL_SLOTS, FIRST_GLOBAL_SLOTS);
        loop {
            let aggs = accs.list.len();
            let mut table = GlobalTable::new(gpu, params, slots, aggs)?;
            let smem = if params.shared_slots == 0 {
                0
            } else {
                shared_table_bytes(params.shared_slots, params.shared_copies, aggs)
            };
            table.aggregate(gpu, &self.spec, smem)?;
            if let Some(r) = table.records(gpu, self.key_xor)? {
                return Ok(DeviceGrouped::new(accs, r.groups, Some(r.records), r.head));
            }
            if slots > u32::MAX as u64 / 4 {
                return Err(Error::invalid(format!(
                    "{NAME}: more than {} groups do not fit a hash table of 32-bit slots",
                    params.global_limit
                )));
            }
            slots *= 4;
        }
    }
}

/// The group count that `d` distinct keys among `s` evenly spread rows of `n` suggest: the
/// `g` at which `s` uniform draws from `g` keys show `d` distinct on average,
/// `g (1 - e^(-s/g)) = d`, solved by bisection; `n` when the sample saw no repeat.
pub fn groups_from_sample(d: usize, s: usize, n: usize) -> usize {
    if d >= s {
        return n;
    }
    let seen = |g: f64| g * (1.0 - (-(s as f64) / g).exp());
    let (mut lo, mut hi) = (d as f64, n as f64);
    if seen(hi) <= d as f64 {
        return n;
    }
    for _ in 0..64 {
        let mid = 0.5 * (lo + hi);
        if seen(mid) < d as f64 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (hi.ceil() as usize).clamp(d.max(1), n)
}

/// What a sample of the keys says about the group count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleEstimate {
    /// The estimated group count.
    pub groups: usize,
    /// Whether the sample looks skewed (a few keys take most rows): then `groups` is a lower
    /// bound.
    pub skewed: bool,
}

/// The group count that a sample of `n` rows' keys suggests: as
/// [`groups_from_sample_counts`] says from its distinct keys and those seen once and twice.
pub fn groups_from_sample_keys(sample: &mut [u32], n: usize) -> SampleEstimate {
    sample.sort_unstable();
    let (mut d, mut f1, mut f2) = (0usize, 0usize, 0usize);
    for run in sample.chunk_by(|a, b| a == b) {
        d += 1;
        match run.len() {
            1 => f1 += 1,
            2 => f2 += 1,
            _ => {}
        }
    }
    groups_from_sample_counts(d, f1, f2, sample.len(), n)
}

/// The group count that `d` distinct keys among `s` sampled rows of `n` suggest, `f1` of them
/// seen once and `f2` twice. Uniform keys: the uniform estimate ([`groups_from_sample`]). A
/// skewed sample, where Chao's lower bound `d + f1^2 / (2 f2)` (bias-corrected
/// `d + f1 (f1 - 1) / 2` without doubletons) is more than 1.25 times the uniform estimate:
/// that bound. With a heavy hitter on half the rows, the other half's keys are mostly seen
/// once and the uniform estimate takes them for all there is (a fifth of 10^4 groups).
pub fn groups_from_sample_counts(
    d: usize,
    f1: usize,
    f2: usize,
    s: usize,
    n: usize,
) -> SampleEstimate {
    let uniform = groups_from_sample(d, s, n);
    let chao = if f2 > 0 {
        d as f64 + (f1 * f1) as f64 / (2 * f2) as f64
    } else {
        d as f64 + (f1 * f1.saturating_sub(1)) as f64 / 2.0
    };
    let chao = (chao.ceil() as usize).clamp(d.min(n), n);
    let skewed = chao as f64 > 1.25 * uniform as f64;
    SampleEstimate {
        groups: if skewed { chao } else { uniform },
        skewed,
    }
}

/// The hash group-by's parameters for `key` and the accumulators' columns, tables not yet
/// sized, and the bits that turn an `i32` key into its order as `u32`.
fn hash_params(
    gpu: &Gpu,
    key: GpuKey,
    values: &[DeviceValueColumn],
    accs: &Accumulators,
) -> Result<(GroupByParams, u32)> {
    let (key_ptr, key_xor, n) = match key {
        GpuKey::U32(c) => (ptr(gpu, c), 0, c.len()),
        GpuKey::I32(c) => (ptr(gpu, c), 0x8000_0000, c.len()),
        GpuKey::U64(_) => {
            return Err(Error::invalid(format!(
                "{NAME}: the key columns' ranges need more than 32 bits packed, the most its \
                 tables hold; group them with group_by_sort (or group_by, which chooses)"
            )));
        }
    };
    let mut params = GroupByParams {
        keys: key_ptr,
        n: n as u32,
        ..GroupByParams::default()
    };
    for (a, &(col, c)) in accs.list.iter().enumerate() {
        params.values[a] = value_ptr(gpu, values[col]);
        params.codes[a] = c;
    }
    Ok((params, key_xor))
}

/// The group count estimated from a sample of the keys: one block counts the sample's keys
/// (distinct, seen once, seen twice) and the host reads the three counts.
fn estimate_groups(gpu: &Gpu, params: &GroupByParams) -> Result<SampleEstimate> {
    let mut out = gpu.scratch::<u32>(3)?;
    sample(gpu, params, &mut out.view_mut())?;
    Ok(estimate_from(&out.to_vec(gpu)?, params.n as usize))
}

/// Queues the sample of the key column `params` describes: one block writes its three counts
/// (distinct, seen once, seen twice) to `out`.
fn sample(gpu: &Gpu, params: &GroupByParams, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
    let cfg = grid_per_sm(gpu, &k::GROUPBY_SAMPLE, 1, 1)?;
    // SAFETY: one block samples rows below `n` of the key column at `params.keys`; it writes
    // the three words of `out`.
    unsafe { gpu.launch(&k::GROUPBY_SAMPLE, cfg, (&params.keys, &params.n, out)) }
}

/// The estimate from a sample's three counts `c` over `n` rows.
fn estimate_from(c: &[u32], n: usize) -> SampleEstimate {
    let [d, f1, f2] = [c[0], c[1], c[2]].map(|x| x as usize);
    groups_from_sample_counts(d, f1, f2, n.min(k::GROUPBY_SAMPLES), n)
}

/// Slots and copies of each block's shared table for an estimated `groups`: for a few groups,
/// [`TINY_SLOTS`] slots with a copy per lane; else room for them (twice them where the sample
/// was `skewed`: its estimate is a lower bound) at a tenth below the table's limit (at least
/// [`MIN_SHARED_SLOTS`]); where that does not fit `max_smem` bytes but the largest table that
/// does holds most of the groups, that one (the rest go to the global table); else none.
fn shared_slots(groups: usize, skewed: bool, accs: usize, max_smem: usize) -> (u32, u32) {
    if groups <= TINY_GROUPS as usize
        && shared_table_bytes(TINY_SLOTS, LANE_COPIES, accs) <= max_smem
    {
        return (TINY_SLOTS, LANE_COPIES);
    }
    let fits =
        (max_smem / (8 * accs + 8)).saturating_sub(k::shared_entries(0, 1) as usize) / 256 * 256;
    let room = if skewed { 2 * groups } else { groups };
    let want = (room as u64 * 4 / 3 * 11 / 10)
        .max(MIN_SHARED_SLOTS as u64)
        .next_multiple_of(256);
    if want <= fits as u64 {
        return (want as u32, 1);
    }
    if fits >= MIN_SHARED_SLOTS as usize
        && groups as u64 * 4 <= shared_limit(fits as u32) as u64 * 5
    {
        return (fits as u32, 1);
    }
    (0, 1)
}

/// The hash kernel for these accumulators: one per code for a single accumulator (the
/// dispatch on it folds away), else one per count.
fn hash_spec(list: &[(usize, u32)]) -> KernelSpec<k::HashArgs> {
    let more = [k::GROUPBY_HASH_2, k::GROUPBY_HASH_3, k::GROUPBY_HASH_4];
    kernel_for(list, k::GROUPBY_HASH_0, k::GROUPBY_HASH_ONE, more)
}

/// A table's groups as records in key order: their count, and the first of them on the host.
struct TableRecords {
    records: DeviceColumn<u64>,
    groups: usize,
    head: Vec<u64>,
}

/// The global table of one attempt.
struct GlobalTable {
    params: PodBuffer<GroupByParams>,
    keys: DeviceColumn<u32>,
    counts: DeviceColumn<u32>,
    acc: DeviceColumn<u64>,
    state: DeviceColumn<u32>,
    slots: u32,
    limit: u32,
    accs: u32,
    n: u32,
}

impl GlobalTable {
    /// An empty table of `slots` slots (the arrays one more) for `params`, which it completes.
    fn new(gpu: &Gpu, params: &mut GroupByParams, slots: u64, accs: usize) -> Result<Self> {
        let slots = slots as u32;
        params.global_slots = slots;
        params.global_limit =
            (slots - 1).min((slots as f64 * tessera_kernels::hash::MAX_FILL) as u32);
        let len = slots as usize + 1;
        let params_buf = PodBuffer::upload(gpu, std::slice::from_ref(params))?;
        let mut t = GlobalTable {
            params: params_buf,
            keys: gpu.scratch(len)?,
            counts: gpu.scratch(len)?,
            acc: gpu.scratch(len * accs)?,
            state: gpu.zeros(k::STATE_WORDS)?,
            slots,
            limit: params.global_limit,
            accs: accs as u32,
            n: params.n,
        };
        let cfg = grid_per_sm(gpu, &k::GROUPBY_INIT, len, 8)?;
        // SAFETY: the arrays hold `slots + 1` items (accumulators: `accs` times that).
        unsafe {
            gpu.launch(
                &k::GROUPBY_INIT,
                cfg,
                (&t.params, &t.accs, &mut t.keys, &mut t.counts, &mut t.acc),
            )
        }?;
        Ok(t)
    }

    /// One pass over the table's `n` rows into it, the blocks given `smem` bytes of shared
    /// memory for their tables.
    fn aggregate(&mut self, gpu: &Gpu, spec: &KernelSpec<k::HashArgs>, smem: usize) -> Result<()> {
        let per_sm = gpu.blocks_per_sm(spec, smem)?.max(1);
        let mut cfg = grid_per_sm(gpu, spec, self.n as usize, per_sm.into())?;
        cfg.shared_mem_bytes = smem as u32;
        let t = self;
        // SAFETY: the parameters describe the launch's columns and this table; the shared
        // memory is the shared table's size.
        unsafe {
            gpu.launch(
                spec,
                cfg,
                (
                    &t.params,
                    &mut t.keys,
                    &mut t.counts,
                    &mut t.acc,
                    &mut t.state,
                ),
            )
        }
    }

    /// The groups' records in key order, their count and the first of them on the host
    /// (`None` when the table overflowed): ranked by counting where the table's limit is
    /// small, else sorted by the radix sort.
    fn records(&self, gpu: &Gpu, key_xor: u32) -> Result<Option<TableRecords>> {
        let len = self.slots + 1;
        // Keys in the table's slots, and the key of the extra slot.
        let most = self.limit + 1;
        let words = k::record_words(self.accs as usize);
        let mut cursor = gpu.zeros::<u32>(1)?;
        let mut keys = gpu.scratch::<u32>(most as usize)?;
        let mut slots = gpu.scratch::<u32>(most as usize)?;
        let cfg = grid_per_sm(gpu, &k::GROUPBY_COMPACT, len as usize, 8)?;
        // SAFETY: the table's arrays hold `len` items; the outputs `most`.
        unsafe {
            gpu.launch(
                &k::GROUPBY_COMPACT,
                cfg,
                (
                    &len,
                    &key_xor,
                    &most,
                    &self.keys,
                    &self.counts,
                    &mut cursor,
                    &mut keys,
                    &mut slots,
                ),
            )
        }?;
        if most as usize <= RANK_MAX {
            let mut records = gpu.scratch::<u64>(k::RECORDS_HEADER + most as usize * words)?;
            let smem = 4 * k::rank_staged(most as usize);
            gpu.allow_max_dynamic_smem(&k::GROUPBY_RANK)?;
            // A thread per lane of each key's RANK_LANES.
            let cfg = tile_grid(&k::GROUPBY_RANK, most as usize * k::RANK_LANES, smem as u32)?;
            // SAFETY: `most` compacted keys and slots of this table, its state; records for
            // `most` groups; `4 * rank_staged(most)` bytes of shared memory.
            unsafe {
                gpu.launch(
                    &k::GROUPBY_RANK,
                    cfg,
                    (
                        &key_xor,
                        &most,
                        &len,
                        &self.accs,
                        &cursor,
                        &self.state,
                        &keys,
                        &slots,
                        &self.counts,
                        &self.acc,
                        &mut records,
                    ),
                )
            }?;
            // The header and the first groups in one copy: one synchronization for most
            // calls, without copying the room of groups that did not come.
            let (groups, overflow, head) = read_head(gpu, &records, most as usize, words)?;
            return Ok((!overflow).then_some(TableRecords {
                records,
                groups,
                head,
            }));
        }
        if self.state.to_vec(gpu)?[k::STATE_OVERFLOW] != 0 {
            return Ok(None);
        }
        let groups = cursor.to_vec(gpu)?[0] as usize;
        if groups > most as usize {
            return Err(Error::invalid(format!(
                "group_by_hash: the table holds {groups} groups, more than its limit {most}"
            )));
        }
        keys.set_len(groups);
        slots.set_len(groups);
        let (sorted, order) = sort_pairs(gpu, &keys, &slots, Order::Ascending)?;
        let mut records = gpu.scratch::<u64>(k::RECORDS_HEADER + groups * words)?;
        let g32 = groups as u32;
        let cfg = grid_per_sm(gpu, &k::GROUPBY_GATHER, groups, 8)?;
        // SAFETY: `sorted` and `order` hold `groups` keys and slots of this table; the records
        // `groups`.
        unsafe {
            gpu.launch(
                &k::GROUPBY_GATHER,
                cfg,
                (
                    &g32,
                    &key_xor,
                    &len,
                    &self.accs,
                    &sorted,
                    &order,
                    &self.counts,
                    &self.acc,
                    &mut records,
                ),
            )
        }?;
        Ok(Some(TableRecords {
            records,
            groups,
            head: Vec::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{groups_from_sample_counts, groups_from_sample_keys};
    use tessera_kernels::ops::groupby::shared_limit;
    use tessera_kernels::ops::groupby::{self as k, quick_plan};

    /// Every full sample for which the kernels take a table on the sample's word alone gets
    /// one with room for twice the host's estimate, whatever the row count; uniform keys
    /// of up to 500 groups get one.
    #[test]
    fn quick_plans_hold_twice_the_estimate() {
        let s = k::GROUPBY_SAMPLES;
        let mut quick = 0;
        for n in [s, 100_000, 1 << 27, u32::MAX as usize] {
            for d in 0..=k::QUICK_MAX_DISTINCT + 8 {
                for f1 in 0..=(k::QUICK_MAX_ONCE + 2).min(d) {
                    // A full sample's counts: more rows than the keys seen once or twice
                    // hold, so some key is seen three times or more. Chao's bound is
                    // largest at few doubletons.
                    let most = (d - f1).saturating_sub(1);
                    for f2 in [0, 1, 2, 3, most / 2, most]
                        .into_iter()
                        .filter(|&f| f <= most)
                    {
                        let Some((slots, _)) = quick_plan(d, f1) else {
                            continue;
                        };
                        quick += 1;
                        let est =
                            groups_from_sample_counts(d as usize, f1 as usize, f2 as usize, s, n);
                        let room = 2 * est.groups as u32;
                        assert!(
                            room <= shared_limit(slots),
                            "d {d} f1 {f1} f2 {f2} n {n}: {est:?}"
                        );
                    }
                }
            }
        }
        assert!(quick > 1000);
        for g in [1u64, 2, 23, 24, 100, 500] {
            let mut keys = sample(s, |x| (x % g) as u32);
            keys.sort_unstable();
            let d = keys.chunk_by(|a, b| a == b).count() as u32;
            let f1 = keys
                .chunk_by(|a, b| a == b)
                .filter(|r| r.len() == 1)
                .count() as u32;
            let want = if g < 24 {
                k::TINY_SLOTS
            } else {
                k::MIN_SHARED_SLOTS
            };
            assert_eq!(quick_plan(d, f1).map(|p| p.0), Some(want), "{g} groups");
        }
    }

    /// `s` keys drawn by `f` from a fixed-seed stream.
    fn sample(s: usize, mut f: impl FnMut(u64) -> u32) -> Vec<u32> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..s)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f(x)
            })
            .collect()
    }

    /// Within `factor` of `g`, or off by one (the bisection's rounding at tiny `g`).
    fn within(est: usize, g: usize, factor: f64) -> bool {
        est.abs_diff(g) <= 1
            || (est as f64) <= g as f64 * factor && (est as f64) >= g as f64 / factor
    }

    #[test]
    fn estimates_uniform_and_skewed_samples() {
        let n = 1 << 27;
        for g in [2u64, 100, 10_000, 1_000_000] {
            let mut uniform = sample(4096, |x| (x % g) as u32);
            let est = groups_from_sample_keys(&mut uniform, n);
            assert!(!est.skewed, "uniform {g}: {est:?}");
            assert!(within(est.groups, g as usize, 1.3), "uniform {g}: {est:?}");
            // Half the rows on one key: the uniform estimate alone saw about g / 5 at 10^4.
            let mut heavy = sample(4096, |x| if x & 1 == 0 { 0 } else { (x / 2 % g) as u32 });
            let est = groups_from_sample_keys(&mut heavy, n);
            assert!(within(est.groups, g as usize, 1.5), "heavy {g}: {est:?}");
            assert_eq!(est.skewed, g >= 10_000, "heavy {g}: {est:?}");
        }
        // No repeat: as many groups as rows, at most.
        let mut distinct: Vec<u32> = (0..4096).collect();
        assert_eq!(groups_from_sample_keys(&mut distinct, 4096).groups, 4096);
        assert!(groups_from_sample_keys(&mut distinct, n).groups >= 1 << 20);
    }
}
