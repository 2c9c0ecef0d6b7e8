//! Hash group-by on the GPU: one 32-bit key (a column, or key columns packed into 32 bits by
//! `keys.rs`), any aggregates of up to four distinct
//! accumulators (a sum and a mean of one column share one). See
//! `tessera_kernels::ops::groupby` for the kernels and the accumulators' forms.
//!
//! The call estimates the group count from a sample of 4096 rows
//! ([`groups_from_sample_counts`], from counts the GPU makes), sizes a global table of twice
//! that, four times for a skewed sample, at most twice a dense table's range (and, while the
//! groups fit, a table per block in shared memory), aggregates in one pass over the rows,
//! and runs again with a table four times larger if the estimate was short. Where the
//! sample's words alone call for a small
//! shared table (`quick_plan`: up to a few hundred keys, nearly all seen more than once, or
//! a range of a few thousand keys), the kernels take it from the sample on the GPU: the host
//! queues the sample and the aggregation together and reads the sample's words while the
//! aggregation runs, instead of waiting for the sample before it sizes the tables. A second
//! launch, of the wide kernel below, is queued after that one: where the sample calls for a
//! dense table too large for the first launch but within a block's shared memory
//! (`wide_plan`: about 4,000 to 16,000 keys with one accumulator, the range not much
//! sparser than the groups), it takes that table, on the same global table and state. Its
//! blocks leave their tables in partial tables of their own, which a fold launch then adds up
//! slot by slot into the global table (one merge per group, where every block merging its
//! table made a global atomic per slot per block, all at the pass's end). Other
//! samples make both return at once, and the host sizes the tables from the estimate. The
//! groups then leave the table in key order: their keys and slots compacted,
//! then ranked (up to [`RANK_MAX`] groups: by a bitmap of their range where it fits the
//! kernel's shared memory, as a dense table's groups do, else by counting) or sorted with the
//! radix sort, and
//! written as records on the device ([`DeviceGrouped`]), the first of them read back with
//! the group count in one copy.
//! Estimates of a few groups get a tiny shared table with a copy of each slot per lane, so
//! that a warp's lanes do not serialize on the same words; a key on at least an eighth of the
//! sampled rows adds up in each thread's registers instead ([`k::hot_key`]), merged once per
//! block. Where the sampled keys span a range whose every key fits a block's shared memory,
//! the table is dense: a slot per key of the range (with a sixteenth to spare on either
//! side), found by the key's offset, without a walk or key words; keys outside it go to the
//! global table. A table that leaves room for one block per SM takes the 1,024-thread kernel,
//! whose threads copy their rows of the block's next tile into shared memory (`cp.async`)
//! while they add up the current one, so that the reads stay in flight through the atomics.
use tessera_kernels::ops::groupby::{
    self as k, GroupByParams, LANE_COPIES, MIN_SHARED_SLOTS, SAMPLE_WORDS, SharedPlan, TINY_GROUPS,
    TINY_SLOTS, TableForm, entry_bytes, shared_limit, shared_table_bytes,
};
use tessera_kernels::spec::KernelSpec;

use super::records::{
    Accumulators, DeviceGrouped, GpuKey, check, kernel_for, ptr, read_head, value_ptr,
};
use super::{Agg, DeviceKeyColumn, DeviceValueColumn, Grouped};
use crate::error::{Error, Result};
use crate::ops::sort::{Order, sort_pairs};
use crate::runtime::{DeviceColumn, Gpu, HostWords, KernelArg, grid_per_sm};
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};

/// Most groups ranked by `GROUPBY_RANK` (whose counting grows as their square where their
/// range is too wide for its bitmap); more are sorted by the radix sort.
const RANK_MAX: usize = 32 * 1024;

/// Fewest slots of the global table.
const MIN_GLOBAL_SLOTS: u64 = 1024;

/// Slots of the global table of the launches that take their plans from the sample's words
/// ([`k::quick_plan`], [`k::wide_plan`]): room for the groups such a sample leaves possible
/// (a dense table a block holds, up to about 16,000 keys with one accumulator, and as many
/// keys outside it), and few enough that the ranking orders them ([`RANK_MAX`]).
const QUICK_GLOBAL_SLOTS: u64 = 1 << 15;

/// Words the sample zeroes beside the quick attempts' table, for [`HashPlan::zeroed_words`]:
/// the most a tile-local pass's totals take.
const ZEROED_WORDS: usize = super::partition::LOCAL_TOTALS_MOST;

const _: () = assert!(QUICK_GLOBAL_SLOTS as usize <= RANK_MAX);

/// Most slots of the global table a first attempt takes on the sample's word; a larger
/// group count grows it by overflow.
const FIRST_GLOBAL_SLOTS: u64 = 1 << 28;

/// The group-by of `keys` (key columns as [`crate::ops::group_by`] takes them, whose ranges
/// pack into 32 bits) with `aggs` over `values`, by hashing;
/// the result is ordered by key, with the semantics [`crate::cpu::group_by`] documents (float
/// sums agree to rounding: the GPU adds in another order).
///
/// Fast while the groups fit a block's shared memory (on an H100 about 14 000 with one
/// accumulator, or any number of keys within a range of about 17 000): a row then costs
/// shared-memory atomics only. More groups go through global
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
        FirstLook::Done(r, ..) => Ok(r),
        FirstLook::Plan(plan) => plan.run(gpu, accs),
    }
}

const NAME: &str = "group_by_hash";

/// A hash grouping of `n > 0` rows, prepared: its parameters with the shared tables sized
/// from the estimated group count, and its kernel.
pub(super) struct HashPlan {
    params: GroupByParams,
    spec: KernelSpec<k::HashArgs>,
    /// Whether the kernel stages its tiles where they fit ([`with_stage`]).
    staged: bool,
    est: usize,
    skewed: bool,
    /// The least and the greatest sampled key of a `u32` key (without `u32::MAX`), where the
    /// sample saw one.
    sampled: Option<(u32, u32)>,
    /// The quick attempts' table, kept until the plan is dropped: its memory goes back
    /// after whatever runs next is queued, not in the way of it; its spare words
    /// ([`HashPlan::zeroed_words`]) serve the next launch.
    quick: Option<Box<GlobalTable>>,
}

/// What the first look at the keys gave.
pub(super) enum FirstLook {
    /// The grouping itself, with the sample's estimate: the sample called for a small shared
    /// table ([`k::quick_plan`]), so the aggregation followed it without the host reading it;
    /// whether that table was dense.
    Done(DeviceGrouped, SampleEstimate, bool),
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
        let mut params = hash_params(gpu, key, values, accs)?;
        let key_xor = params.key_xor;
        let n = params.n as usize;
        let aggs = accs.list.len();
        let base = hash_spec(&accs.list);
        let smem = k::quick_smem(aggs);
        if n < k::GROUPBY_SAMPLES || gpu.allow_max_dynamic_smem(&base)? < smem {
            let words = sample_words(gpu, &params)?;
            return Self::sized(gpu, params, accs, &words).map(FirstLook::Plan);
        }
        params.quick = k::QUICK_FIRST;
        let wide = WideAttempt::new(gpu, &mut params, &base, aggs)?;
        // The sample empties the table and zeroes the state as well: no set-up launches
        // between the call's start and the aggregation.
        let (mut table, staged) = GlobalTable::unset_later(
            gpu,
            &mut params,
            QUICK_GLOBAL_SLOTS,
            aggs,
            Some(&wide),
            ZEROED_WORDS,
        )?;
        // The sample needs none of the parameters: it starts before their upload. Its words
        // come to the host while the aggregation runs (or has returned at once).
        let host = gpu.host_words()?;
        sample(gpu, &params, SampleInto::Table(&mut table), Some(&host))?;
        table.upload(gpu, &staged)?;
        table.aggregate(gpu, &base, smem)?;
        wide.aggregate(gpu, &params, &mut table)?;
        let c = host.wait(SAMPLE_WORDS)?;
        drop(host);
        let c: [u32; SAMPLE_WORDS] = core::array::from_fn(|i| c[i]);
        let est = estimate_from(&c, n);
        let dense = match (
            k::quick_plan(c, key_xor, aggs),
            wide.plan(&c, &params, aggs),
        ) {
            (Some(plan), _) | (None, Some(plan)) => Some(plan.dense_base.is_some()),
            (None, None) => None,
        };
        if let Some(dense) = dense
            && let Some(r) = table.records(gpu, key_xor)?
        {
            let grouped = DeviceGrouped::new(accs.clone(), r.groups, Some(r.records), r.head);
            return Ok(FirstLook::Done(grouped, est, dense));
        }
        params.quick = 0;
        params.wide = k::WideAttempt::default();
        let mut plan = Self::sized(gpu, params, accs, &c)?;
        plan.quick = Some(Box::new(table));
        Ok(FirstLook::Plan(plan))
    }

    /// The plan for `params` (tables not yet sized) from the sample's [`SAMPLE_WORDS`].
    fn sized(
        gpu: &Gpu,
        mut params: GroupByParams,
        accs: &Accumulators,
        words: &[u32; SAMPLE_WORDS],
    ) -> Result<Self> {
        let SampleEstimate {
            groups: est,
            skewed,
        } = estimate_from(words, params.n as usize);
        let aggs = accs.list.len();
        let base = hash_spec(&accs.list);
        let max_smem = gpu.allow_max_dynamic_smem(&base)?;
        let dense = k::dense_plan(words[3], words[4], params.key_xor, aggs, max_smem);
        let plan = shared_plan(est, skewed, dense, aggs, max_smem);
        set_plan(&mut params, plan);
        // A tiny table's copies per lane keep a few keys' rows apart already.
        (params.hot, params.hot_key) = match k::hot_key(*words, params.n) {
            Some(h) if plan.copies != LANE_COPIES => (1, h),
            _ => (0, 0),
        };
        // A table that leaves room for one block per SM: the wide kernel, whose 1,024 threads
        // keep twice the rows in flight.
        let smem = table_smem(&params, accs);
        let wide = k::GROUPBY_HASH_WIDE[aggs];
        let spec = if params.shared_slots >= k::WIDE_MIN_SLOTS
            && gpu.blocks_per_sm(&base, smem)? == 1
            && gpu.allow_max_dynamic_smem(&wide)? >= smem
        {
            wide
        } else {
            base
        };
        let sampled = (params.key_xor == 0 && words[3] <= words[4]).then_some((words[3], words[4]));
        Ok(HashPlan {
            params,
            staged: aggs > 0 && spec == wide,
            spec,
            est,
            skewed,
            sampled,
            quick: None,
        })
    }

    /// [`ZEROED_WORDS`] zeroed words for the launch after the plan (the partitioned
    /// group-by's pass totals), where the plan followed a sample that zeroed them in the
    /// same launch as it emptied the quick attempts' table: no memset in front of that launch.
    pub(super) fn zeroed_words(&mut self) -> Result<Option<CudaViewMut<'_, u32>>> {
        self.quick.as_mut().map(|t| t.spare()).transpose()
    }

    /// Whether the blocks' tables are dense.
    pub(super) fn dense(&self) -> bool {
        self.params.dense != 0
    }

    /// The sampled keys' range, for a `u32` key: the whole key range is at least as wide.
    pub(super) fn sampled_range(&self) -> Option<(u32, u32)> {
        self.sampled
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
        let dense = (params.dense != 0).then_some(params.shared_slots);
        let mut slots = first_global_slots(self.est, self.skewed, dense);
        loop {
            let aggs = accs.list.len();
            let mut smem = table_smem(params, &accs);
            if self.staged {
                smem = with_stage(gpu, params, &self.spec, smem, aggs)?;
            }
            let mut table = GlobalTable::new(gpu, params, slots, aggs)?;
            table.aggregate(gpu, &self.spec, smem)?;
            if let Some(r) = table.records(gpu, params.key_xor)? {
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

/// Slots of the first attempt's global table for an estimated `groups` (`skewed`: a lower
/// bound) and, with a dense shared table, its slots: twice the estimate, four times a skewed
/// one (an overflow runs the whole aggregation again), but no more than twice the dense
/// range where that holds the estimate (the range bounds the groups the sample saw, and a
/// skewed sample's bound is often far above their number: a smaller table keeps the ranking
/// by counting, [`RANK_MAX`]).
fn first_global_slots(groups: usize, skewed: bool, dense: Option<u32>) -> u64 {
    let mut room = if skewed { 4 } else { 2 } * groups as u64;
    if let Some(slots) = dense {
        room = room.min(2 * (slots as u64).max(groups as u64));
    }
    room.clamp(MIN_GLOBAL_SLOTS, FIRST_GLOBAL_SLOTS)
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

/// The hash group-by's parameters for `key` (with `key_xor`, the bits that turn an `i32` key
/// into its order as `u32`) and the accumulators' columns, tables not yet sized.
fn hash_params(
    gpu: &Gpu,
    key: GpuKey,
    values: &[DeviceValueColumn],
    accs: &Accumulators,
) -> Result<GroupByParams> {
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
        key_xor,
        ..GroupByParams::default()
    };
    for (a, &(col, c)) in accs.list.iter().enumerate() {
        params.values[a] = value_ptr(gpu, values[col]);
        params.codes[a] = c;
    }
    Ok(params)
}

/// The sample's [`SAMPLE_WORDS`] (the host waits for them).
fn sample_words(gpu: &Gpu, params: &GroupByParams) -> Result<[u32; SAMPLE_WORDS]> {
    let mut state = gpu.scratch::<u32>(k::STATE_WORDS)?;
    sample(gpu, params, SampleInto::State(&mut state), None)?;
    let c = state.to_vec(gpu)?;
    Ok(core::array::from_fn(|i| c[k::STATE_SAMPLE + i]))
}

/// Where a sample goes: a state of [`k::STATE_WORDS`], or a table's state, the table
/// emptied by the same launch.
enum SampleInto<'a> {
    State(&'a mut DeviceColumn<u32>),
    Table(&'a mut GlobalTable),
}

/// Queues the sample of the key column `params` describes: one block writes its
/// [`SAMPLE_WORDS`] (distinct keys, those seen once and twice, the smallest and largest) to
/// the state's sample words (and to `host` where given) and zeroes its others (and empties
/// the table where there is one).
fn sample(
    gpu: &Gpu,
    params: &GroupByParams,
    into: SampleInto<'_>,
    host: Option<&HostWords<'_>>,
) -> Result<()> {
    let spec = &k::GROUPBY_SAMPLE;
    // One block samples; with a table, more empty it beside that one (a tile's worth each).
    let len = match &into {
        SampleInto::State(_) => 1,
        SampleInto::Table(t) => t.slots as usize + 1,
    };
    let cfg = grid_per_sm(gpu, spec, len, 1)?;
    let (keys, n, xor) = (&params.keys, &params.n, &params.key_xor);
    let codes = k::pack_codes(&params.codes);
    let (host, seq) = host.map_or((0, 0), |h| (h.device(), h.seq()));
    let no_u32 = || None::<&mut DeviceColumn<u32>>;
    match into {
        SampleInto::State(state) => {
            let no_acc = None::<&mut DeviceColumn<u64>>;
            let args = (
                keys,
                n,
                xor,
                state,
                &host,
                &seq,
                &0u32,
                &0u32,
                &codes,
                no_u32(),
                no_u32(),
                no_acc,
                no_u32(),
                &0u32,
            );
            // SAFETY: one block samples rows below `n` of the key column at `params.keys`;
            // it writes the state's STATE_WORDS words, and the host words at `host` where it
            // is not 0 (mapped page-locked words, held by the caller); no table.
            unsafe { gpu.launch(spec, cfg, args) }
        }
        SampleInto::Table(t) => {
            let (accs, slots, spare) = (t.accs, t.slots, t.spare as u32);
            t.with_parts(|mut p| {
                let args = (
                    keys,
                    n,
                    xor,
                    &mut p.t.state,
                    &host,
                    &seq,
                    &slots,
                    &accs,
                    &codes,
                    &mut p.t.keys,
                    &mut p.t.counts,
                    &mut p.t.acc,
                    &mut p.spare,
                    &spare,
                );
                // SAFETY: as above, with the table's state; the table's arrays hold its
                // `slots + 1` slots (accumulators: `accs` times that); `spare` words at
                // `p.spare`.
                unsafe { gpu.launch(spec, cfg, args) }
            })?
        }
    }
}

/// The estimate from a sample's counts `c` (its first three words) over `n` rows.
fn estimate_from(c: &[u32], n: usize) -> SampleEstimate {
    let [d, f1, f2] = [c[0], c[1], c[2]].map(|x| x as usize);
    groups_from_sample_counts(d, f1, f2, n.min(k::GROUPBY_SAMPLES), n)
}

/// Writes `plan` into `params`.
fn set_plan(params: &mut GroupByParams, plan: SharedPlan) {
    params.shared_slots = plan.slots;
    params.shared_copies = plan.copies;
    (params.dense, params.dense_base) = match plan.dense_base {
        Some(b) => (1, b),
        None => (0, 0),
    };
}

/// The dynamic shared memory of the blocks' tables that `params` plans (0 for none).
fn table_smem(params: &GroupByParams, accs: &Accumulators) -> usize {
    if params.shared_slots == 0 {
        return 0;
    }
    let form = TableForm {
        dense: params.dense != 0,
    };
    shared_table_bytes(
        params.shared_slots,
        params.shared_copies,
        accs.list.len(),
        form,
    )
}

/// The dynamic shared memory of a launch of `spec` (a [`k::GROUPBY_HASH_WIDE`] kernel of
/// `aggs >= 1` accumulators) whose tables take `table` bytes, with the staged tiles
/// ([`GroupByParams::stage_at`], set in `params`) after them where the table leaves room for
/// one block per SM and the tiles fit beside it (the block's threads alone then keep too few
/// rows in flight through the tile's atomics), there are full tiles, the columns are 16-byte
/// aligned, and no values are `f64`.
fn with_stage(
    gpu: &Gpu,
    params: &mut GroupByParams,
    spec: &KernelSpec<k::HashArgs>,
    table: usize,
    aggs: usize,
) -> Result<usize> {
    params.stage_at = 0;
    let tile = spec.tile() as usize;
    if !may_stage(params, aggs, tile) {
        return Ok(table);
    }
    let max = gpu.allow_max_dynamic_smem(spec)?;
    if let Some(at) = k::stage_offset(table, tile, aggs, max) {
        let total = at + k::HASH_STAGES * k::hash_stage_bytes(tile, aggs);
        if gpu.blocks_per_sm(spec, table)? == 1 && gpu.blocks_per_sm(spec, total)? == 1 {
            params.stage_at = at as u32;
            return Ok(total);
        }
    }
    Ok(table)
}

/// Whether a hash launch of `params` with `aggs` accumulators may take its full tiles of
/// `tile` rows through shared memory: there are full tiles, the columns are 16-byte aligned,
/// and no values are `f64`.
fn may_stage(params: &GroupByParams, aggs: usize, tile: usize) -> bool {
    let aligned = params.keys.is_multiple_of(16)
        && params.values[..aggs].iter().all(|v| v.is_multiple_of(16));
    let f64_values = params.codes[..aggs]
        .iter()
        .any(|&c| c & k::code::TYPE == k::code::F64);
    aggs > 0 && aligned && !f64_values && params.n as usize >= tile
}

/// The second launch after a sample ([`k::QUICK_WIDE`]): a [`k::GROUPBY_HASH_WIDE`] kernel
/// that takes a dense table too large for the first launch's ([`k::wide_plan`]), queued
/// blind after it on the same global table and state.
struct WideAttempt {
    spec: KernelSpec<k::HashArgs>,
    /// Its launch: as many blocks as `params.wide.blocks` says leave partial tables.
    cfg: LaunchConfig,
}

impl WideAttempt {
    /// The second launch for the first launch's `params` (tables not yet sized), in which it
    /// sets [`GroupByParams::wide`]. `base`: the narrow kernel for these accumulators, which
    /// the host plans for dense tables that leave room for two of its blocks on an SM.
    fn new(
        gpu: &Gpu,
        params: &mut GroupByParams,
        base: &KernelSpec<k::HashArgs>,
        aggs: usize,
    ) -> Result<Self> {
        let spec = k::GROUPBY_HASH_WIDE[aggs];
        // A dense table of about half the global table's slots at most (with its staged
        // tiles, which a count alone does not take): room for its groups and as many strays
        // (a count alone, 4 bytes a slot, would fit far more).
        let dense = TableForm { dense: true };
        let half = (QUICK_GLOBAL_SLOTS / 2) as u32;
        let stages = match aggs {
            0 => 0,
            _ => k::HASH_STAGES * k::hash_stage_bytes(spec.tile() as usize, aggs),
        };
        let most = k::shared_table_bytes(half, 1, aggs, dense) + stages;
        let smem = gpu.allow_max_dynamic_smem(&spec)?.min(most);
        let min_bytes = gpu.dynamic_smem_sharing(base, 2)? + 1;
        // Each block leaves its table in a partial table of its own, which one fold
        // launch adds up: a slot's adds from every block in one thread's loads, where each
        // block merging its table made as many global atomics on every slot.
        let cfg = hash_grid(gpu, &spec, smem, params.n)?;
        params.wide = k::WideAttempt {
            smem: smem as u32,
            min_bytes: min_bytes as u32,
            blocks: cfg.grid_dim.0,
            stride: (smem / 16 * 16) as u32,
            partials: 0,
        };
        Ok(WideAttempt { spec, cfg })
    }

    /// `u64` words of the partial tables of a launch of `params` (its `wide` set).
    fn partial_words(params: &GroupByParams) -> usize {
        params.wide.blocks as usize * params.wide.stride as usize / 8
    }

    /// The plan the second launch takes from the sample's words `c`, if it runs, for the
    /// first launch's `params`.
    fn plan(
        &self,
        c: &[u32; SAMPLE_WORDS],
        params: &GroupByParams,
        aggs: usize,
    ) -> Option<SharedPlan> {
        let w = params.wide;
        k::wide_plan(
            *c,
            params.key_xor,
            aggs,
            w.smem as usize,
            w.min_bytes as usize,
        )
    }

    /// The second launch's parameters, from the first launch's (with its table sized).
    fn params(&self, params: &GroupByParams, aggs: usize) -> GroupByParams {
        GroupByParams {
            quick: k::QUICK_WIDE,
            stage_at: may_stage(params, aggs, self.spec.tile() as usize) as u32,
            ..*params
        }
    }

    /// Queues the second launch after the first (of `params`) on the first's table, whose
    /// memory holds the second's parameters too ([`GlobalTable::unset`]), then the fold of
    /// its blocks' partial tables (which returns at once where the launch did).
    fn aggregate(&self, gpu: &Gpu, params: &GroupByParams, t: &mut GlobalTable) -> Result<()> {
        let smem = params.wide.smem as usize;
        let aggs = t.accs as usize;
        let fold = k::GROUPBY_FOLD[aggs];
        // The most slots a table in `smem` has, and the extra one.
        let slots = smem / k::entry_bytes(aggs, TableForm { dense: true }) + 1;
        let cfg = LaunchConfig {
            grid_dim: (slots.div_ceil(k::FOLD_SLOTS) as u32, 1, 1),
            block_dim: (fold.threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        t.with_parts(|mut p| {
            let second = p.second.ok_or_else(parts_err)?;
            launch_hash(gpu, &self.spec, self.cfg, &second, &mut p.t)?;
            let t = &mut p.t;
            // SAFETY: after the launch of `second`, whose `wide.blocks` blocks (its grid,
            // `self.cfg`) leave their partial tables in this table's memory; the table's
            // arrays and state as `second` says.
            unsafe {
                gpu.launch(
                    &fold,
                    cfg,
                    (
                        &second,
                        &mut t.keys,
                        &mut t.counts,
                        &mut t.acc,
                        &mut t.state,
                    ),
                )
            }
        })?
    }
}

/// Each block's shared table for an estimated `groups` and the sample's `dense` table where
/// it fits ([`k::dense_plan`]), for `accs` accumulators, in `max_smem` bytes: for a few
/// groups, [`TINY_SLOTS`] slots with a copy per lane; else the dense table where it takes
/// at most twice the slots of the hashed one (no walk, no key words); else the hashed table
/// of [`hashed_slots`].
fn shared_plan(
    groups: usize,
    skewed: bool,
    dense: Option<SharedPlan>,
    accs: usize,
    max_smem: usize,
) -> SharedPlan {
    let hashed = TableForm { dense: false };
    if groups <= TINY_GROUPS as usize
        && shared_table_bytes(TINY_SLOTS, LANE_COPIES, accs, hashed) <= max_smem
    {
        return SharedPlan {
            slots: TINY_SLOTS,
            copies: LANE_COPIES,
            dense_base: None,
        };
    }
    let slots = hashed_slots(groups, skewed, accs, hashed, max_smem);
    if let Some(plan) = dense
        && (slots == 0 || plan.slots as u64 <= 2 * slots as u64)
    {
        return plan;
    }
    SharedPlan {
        slots,
        copies: 1,
        dense_base: None,
    }
}

/// Slots of each block's hashed table (`form`) for an estimated `groups`: room for them (twice
/// them where the sample was `skewed`: its estimate is a lower bound) at a tenth below the
/// table's limit (at least [`MIN_SHARED_SLOTS`]); where that does not fit `max_smem` bytes but
/// the largest table that does holds most of the groups, that one (the rest go to the global
/// table); else 0 (none).
fn hashed_slots(groups: usize, skewed: bool, accs: usize, form: TableForm, max_smem: usize) -> u32 {
    let fits =
        (max_smem / entry_bytes(accs, form)).saturating_sub(k::shared_entries(0, 1) as usize) / 256
            * 256;
    let room = if skewed { 2 * groups } else { groups };
    let want = (room as u64 * 4 / 3 * 11 / 10)
        .max(MIN_SHARED_SLOTS as u64)
        .next_multiple_of(256);
    if want <= fits as u64 {
        return want as u32;
    }
    if fits >= MIN_SHARED_SLOTS as usize
        && groups as u64 * 4 <= shared_limit(fits as u32) as u64 * 5
    {
        return fits as u32;
    }
    0
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

/// The global table of one attempt, in one allocation (one driver call where five were,
/// on the way from the call's start to its first launch): `spare` words that the sample
/// zeroes for a later launch ([`GlobalTable::spare`]), the launch's parameters (and
/// those of a second launch on the same table, [`WideAttempt`]), its state words, the keys
/// and the counts (`slots + 1` each, as `u32`), then `slots + 1` accumulator words per
/// accumulator, and the second launch's partial tables ([`k::WideAttempt::partials`]).
struct GlobalTable {
    mem: DeviceColumn<u64>,
    slots: u32,
    limit: u32,
    accs: u32,
    n: u32,
    /// Whether the memory holds a second launch's parameters.
    second: bool,
    /// `u32` words at the memory's start (in whole `u64` words), zeroed by [`sample`] and
    /// used by no launch on the table ([`GlobalTable::spare`]).
    spare: usize,
}

/// `u64` words of one launch's parameters.
const PARAM_WORDS: usize = size_of::<GroupByParams>() / 8;
/// `u64` words of a table's memory taken by the parameters: two launches'.
const PARAMS_WORDS: usize = 2 * PARAM_WORDS;
/// `u64` words of a table's memory before its keys: the parameters and the state words.
const KEYS_AT: usize = PARAMS_WORDS + k::STATE_WORDS.div_ceil(2);

const _: () = assert!(size_of::<GroupByParams>() == 8 * PARAM_WORDS);
const _: () = assert!(align_of::<GroupByParams>() <= 8);

/// Views of a global table's memory that its readers take (see [`GlobalTable`]).
struct Parts<'a> {
    state: CudaView<'a, u32>,
    keys: CudaView<'a, u32>,
    counts: CudaView<'a, u32>,
    acc: CudaView<'a, u64>,
}

/// [`Parts`] to write to: the parameters (of the first launch and the second), and the
/// rest.
struct PartsMut<'a> {
    params: CudaView<'a, GroupByParams>,
    /// Where the memory holds them ([`GlobalTable::unset`]).
    second: Option<CudaView<'a, GroupByParams>>,
    /// The spare words ([`GlobalTable::spare`]).
    spare: CudaViewMut<'a, u32>,
    t: TableMut<'a>,
}

/// The parts of a table's memory that its launches write.
struct TableMut<'a> {
    state: CudaViewMut<'a, u32>,
    keys: CudaViewMut<'a, u32>,
    counts: CudaViewMut<'a, u32>,
    acc: CudaViewMut<'a, u64>,
}

/// An error for a table's memory too small for its parts (which its sizing rules out).
fn parts_err() -> Error {
    Error::invalid("group_by_hash: a table's memory is smaller than its parts (internal)")
}

/// Queues `spec` over the rows `params` describes into the global table `t` of those
/// parameters, with the launch's state words in `t.state`, as `cfg` ([`hash_grid`]) says.
fn launch_hash(
    gpu: &Gpu,
    spec: &KernelSpec<k::HashArgs>,
    cfg: LaunchConfig,
    params: impl KernelArg<*const GroupByParams>,
    t: &mut TableMut<'_>,
) -> Result<()> {
    // SAFETY: the parameters describe the launch's columns and this table; the shared memory
    // is the shared table's size (or, for a second attempt, what it plans in).
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (params, &mut t.keys, &mut t.counts, &mut t.acc, &mut t.state),
        )
    }
}

/// The launch of `spec` over `n` rows with `smem` bytes of dynamic shared memory a block:
/// the blocks resident at once, at most a tile each.
fn hash_grid(
    gpu: &Gpu,
    spec: &KernelSpec<k::HashArgs>,
    smem: usize,
    n: u32,
) -> Result<LaunchConfig> {
    let per_sm = gpu.blocks_per_sm(spec, smem)?.max(1);
    let mut cfg = grid_per_sm(gpu, spec, n as usize, per_sm.into())?;
    cfg.shared_mem_bytes = smem as u32;
    Ok(cfg)
}

impl GlobalTable {
    /// An empty table of `slots` slots (the arrays one more) for `params`, which it completes.
    fn new(gpu: &Gpu, params: &mut GroupByParams, slots: u64, accs: usize) -> Result<Self> {
        let mut t = Self::unset(gpu, params, slots, accs, None)?;
        let len = slots as usize + 1;
        let cfg = grid_per_sm(gpu, &k::GROUPBY_INIT, len, 8)?;
        let accs = t.accs;
        t.with_parts(|mut p| {
            gpu.stream()
                .memset_zeros(&mut p.t.state)
                .map_err(Error::driver(
                    "zeroing a group-by's state",
                    4 * k::STATE_WORDS,
                ))?;
            // SAFETY: the arrays hold `slots + 1` items (accumulators: `accs` times that).
            unsafe {
                gpu.launch(
                    &k::GROUPBY_INIT,
                    cfg,
                    (
                        &p.params,
                        &accs,
                        &mut p.t.keys,
                        &mut p.t.counts,
                        &mut p.t.acc,
                    ),
                )
            }
        })??;
        Ok(t)
    }

    /// [`GlobalTable::new`] without emptying the table or zeroing its state, which
    /// [`sample`] does; with the parameters of the `wide` attempt on it where there is one
    /// (in the same copy).
    fn unset(
        gpu: &Gpu,
        params: &mut GroupByParams,
        slots: u64,
        accs: usize,
        wide: Option<&WideAttempt>,
    ) -> Result<Self> {
        let (mut table, staged) = Self::unset_later(gpu, params, slots, accs, wide, 0)?;
        table.upload(gpu, &staged)?;
        Ok(table)
    }

    /// [`GlobalTable::unset`] without the parameters' upload: those of its launches
    /// (`params`, and the second launch's with `wide`), for [`GlobalTable::upload`]; with
    /// `spare` more `u32` words, which [`sample`] zeroes.
    fn unset_later(
        gpu: &Gpu,
        params: &mut GroupByParams,
        slots: u64,
        accs: usize,
        wide: Option<&WideAttempt>,
        spare: usize,
    ) -> Result<(Self, Vec<GroupByParams>)> {
        let slots = slots as u32;
        params.global_slots = slots;
        params.global_limit =
            (slots - 1).min((slots as f64 * tessera_kernels::hash::MAX_FILL) as u32);
        let len = slots as usize + 1;
        let table = KEYS_AT + len + len * accs;
        let partials = wide.map_or(0, |_| WideAttempt::partial_words(params));
        let at = spare.div_ceil(2);
        let mem = gpu.scratch::<u64>(at + table + partials)?;
        let mut second = wide.map_or(*params, |w| w.params(params, accs));
        if partials != 0 {
            second.wide.partials = ptr(gpu, &mem) + 8 * (at + table) as u64;
        }
        let launches = if wide.is_some() { 2 } else { 1 };
        let staged = [*params, second][..launches].to_vec();
        let table = GlobalTable {
            mem,
            slots,
            limit: params.global_limit,
            accs: accs as u32,
            n: params.n,
            second: wide.is_some(),
            spare,
        };
        Ok((table, staged))
    }

    /// Uploads the parameters of the table's launches ([`GlobalTable::unset_later`]) in one
    /// copy, before any launch that reads them.
    fn upload(&mut self, gpu: &Gpu, staged: &[GroupByParams]) -> Result<()> {
        let words: &[u64] = bytemuck::cast_slice(staged);
        let at = self.spare_at();
        gpu.stream()
            .memcpy_htod(
                words,
                &mut self.mem.view_mut().slice_mut(at..at + words.len()),
            )
            .map_err(Error::driver(
                "uploading kernel parameters",
                8 * words.len(),
            ))
    }

    /// `u64` words before the parameters: the spare words'.
    fn spare_at(&self) -> usize {
        self.spare.div_ceil(2)
    }

    /// The spare words, zeroed by the sample that emptied the table (where it ran).
    fn spare(&mut self) -> Result<CudaViewMut<'_, u32>> {
        // SAFETY: `u32` words (plain data) in `u64` words, the memory's first.
        unsafe { self.mem.buf.transmute_mut::<u32>(self.spare) }.ok_or_else(parts_err)
    }

    /// The table's parts to read.
    fn parts(&self) -> Result<Parts<'_>> {
        let len = self.slots as usize + 1;
        let all = self.mem.view().split_at(self.spare_at()).1;
        let (head, tail) = all.split_at(KEYS_AT);
        let state = head.split_at(PARAMS_WORDS).1;
        let (kc, acc) = tail.split_at(len);
        // The partial tables of a second launch, if any, follow the accumulators.
        let acc = acc.slice(..len * self.accs as usize);
        // SAFETY: the state, keys and counts are `u32` words (plain data) in `u64` words.
        unsafe {
            Ok(Parts {
                state: state.transmute(k::STATE_WORDS).ok_or_else(parts_err)?,
                keys: kc.transmute(len).ok_or_else(parts_err)?,
                counts: kc
                    .transmute::<u32>(2 * len)
                    .ok_or_else(parts_err)?
                    .split_at(len)
                    .1,
                acc,
            })
        }
    }

    /// Runs `f` with the table's parts to write to.
    fn with_parts<R>(&mut self, f: impl FnOnce(PartsMut<'_>) -> R) -> Result<R> {
        let (len, spare, spare_at) = (self.slots as usize + 1, self.spare, self.spare_at());
        let mut whole = self.mem.view_mut();
        let (mut spare_words, mut all) = whole.split_at_mut(spare_at);
        let (mut head, mut tail) = all.split_at_mut(KEYS_AT);
        let (params, mut state) = head.split_at_mut(PARAMS_WORDS);
        let (mut kc, mut acc) = tail.split_at_mut(len);
        let acc = acc.slice_mut(..len * self.accs as usize);
        // SAFETY: the parameters' words hold one `GroupByParams` (8-byte aligned, plain data,
        // written by `unset`), or two where `second` says so; the state, keys and counts are
        // `u32` words (plain data) in `u64` words, the keys and the counts the two halves of
        // `kc`'s.
        unsafe {
            let (first, second) = params.as_view().split_at(PARAM_WORDS);
            let params = first.transmute(1).ok_or_else(parts_err)?;
            let second = match self.second {
                true => Some(second.transmute(1).ok_or_else(parts_err)?),
                false => None,
            };
            let state = state.transmute_mut(k::STATE_WORDS).ok_or_else(parts_err)?;
            let mut kc = kc.transmute_mut::<u32>(2 * len).ok_or_else(parts_err)?;
            let (keys, counts) = kc.split_at_mut(len);
            let spare = spare_words.transmute_mut(spare).ok_or_else(parts_err)?;
            Ok(f(PartsMut {
                params,
                second,
                spare,
                t: TableMut {
                    state,
                    keys,
                    counts,
                    acc,
                },
            }))
        }
    }

    /// One pass over the table's `n` rows into it, the blocks given `smem` bytes of shared
    /// memory for their tables.
    fn aggregate(&mut self, gpu: &Gpu, spec: &KernelSpec<k::HashArgs>, smem: usize) -> Result<()> {
        let n = self.n;
        let cfg = hash_grid(gpu, spec, smem, n)?;
        self.with_parts(|mut p| launch_hash(gpu, spec, cfg, &p.params, &mut p.t))?
    }

    /// The groups' records in key order, their count and the first of them on the host
    /// (`None` when the table overflowed): ranked by counting where the table's limit is
    /// small, else sorted by the radix sort.
    fn records(&self, gpu: &Gpu, key_xor: u32) -> Result<Option<TableRecords>> {
        let len = self.slots + 1;
        let t = self.parts()?;
        // Keys in the table's slots, and the key of the extra slot.
        let most = self.limit + 1;
        let words = k::record_words(self.accs as usize);
        let mut cursor = gpu.zeros::<u32>(k::CURSOR_WORDS)?;
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
                    &t.keys,
                    &t.counts,
                    &mut cursor,
                    &mut keys,
                    &mut slots,
                ),
            )
        }?;
        let smem = 4 * k::rank_staged(most as usize);
        // Smaller GPUs than the H100 give a block less shared memory: the sort then.
        if most as usize <= RANK_MAX && gpu.allow_max_dynamic_smem(&k::GROUPBY_RANK)? >= smem {
            let mut records = gpu.scratch::<u64>(k::RECORDS_HEADER + most as usize * words)?;
            // A thread per lane of each key's RANK_LANES, in the blocks resident at once: a
            // grid for `most` groups would be mostly blocks past the groups that came.
            let spec = &k::GROUPBY_RANK;
            let per_sm = gpu.blocks_per_sm(spec, smem)?;
            let mut cfg = grid_per_sm(gpu, spec, most as usize * k::RANK_LANES, per_sm.into())?;
            cfg.shared_mem_bytes = smem as u32;
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
                        &t.state,
                        &keys,
                        &slots,
                        &t.counts,
                        &t.acc,
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
        let state = gpu.stream().clone_dtoh(&t.state).map_err(Error::driver(
            "reading a group-by's state",
            4 * k::STATE_WORDS,
        ))?;
        if state[k::STATE_OVERFLOW] != 0 {
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
                    &t.counts,
                    &t.acc,
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
    use super::{
        MIN_GLOBAL_SLOTS, RANK_MAX, first_global_slots, groups_from_sample_counts,
        groups_from_sample_keys,
    };
    use tessera_kernels::ops::groupby::shared_limit;
    use tessera_kernels::ops::groupby::{self as k, GroupByParams, quick_plan};

    /// The sample's words reach the host through the mapped words as the sample leaves them
    /// in its state, call after call; waiting for words that no launch was handed is an
    /// error once the GPU is done, not a hang.
    #[test]
    fn gpu_sample_words_reach_the_host_directly() {
        let what = "gpu_sample_words_reach_the_host_directly";
        let Some(gpu) = crate::gpu_or_skip(what) else {
            return;
        };
        for n in [1usize, 4095, 4096, 100_000] {
            let keys: Vec<u32> = (0..n as u32)
                .map(|i| i.wrapping_mul(2_654_435_761) % 977)
                .collect();
            let col = gpu.upload(&keys).unwrap();
            let params = GroupByParams {
                keys: super::ptr(&gpu, &col),
                n: n as u32,
                ..GroupByParams::default()
            };
            for _ in 0..3 {
                let mut state = gpu.scratch::<u32>(k::STATE_WORDS).unwrap();
                let host = gpu.host_words().unwrap();
                let into = super::SampleInto::State(&mut state);
                super::sample(&gpu, &params, into, Some(&host)).unwrap();
                let got = host.wait(k::SAMPLE_WORDS).unwrap();
                drop(host);
                let dev = state.to_vec(&gpu).unwrap();
                assert_eq!(got, dev[k::STATE_SAMPLE..][..k::SAMPLE_WORDS], "{n}");
                // The distinct keys among the sampled rows, and the range.
                let sampled = n.min(k::GROUPBY_SAMPLES);
                assert!(
                    got[0] as usize <= sampled.min(977) && got[0] > 0,
                    "{n} {got:?}"
                );
                assert!(got[3] <= got[4] && got[4] < 977, "{n} {got:?}");
            }
            let mut state = gpu.scratch::<u32>(k::STATE_WORDS).unwrap();
            let host = gpu.host_words().unwrap();
            super::sample(&gpu, &params, super::SampleInto::State(&mut state), None).unwrap();
            assert!(
                host.wait(k::SAMPLE_WORDS).is_err(),
                "{n}: words no launch wrote"
            );
        }
    }

    /// Every full sample for which the kernels take a hashed table on the sample's word alone
    /// gets one with room for twice the host's estimate, whatever the row count; uniform keys
    /// of up to 500 groups get one where their range is too wide for a dense table.
    #[test]
    fn quick_plans_hold_twice_the_estimate() {
        let s = k::GROUPBY_SAMPLES;
        // No range (every sampled key u32::MAX): no dense table.
        let none = (u32::MAX, 0);
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
                        let c = [d, f1, f2, none.0, none.1, 0, 0];
                        let Some(plan) = quick_plan(c, 0, 1) else {
                            continue;
                        };
                        assert_eq!(plan.dense_base, None);
                        quick += 1;
                        let est =
                            groups_from_sample_counts(d as usize, f1 as usize, f2 as usize, s, n);
                        let room = 2 * est.groups as u32;
                        assert!(
                            room <= shared_limit(plan.slots),
                            "d {d} f1 {f1} f2 {f2} n {n}: {est:?}"
                        );
                    }
                }
            }
        }
        assert!(quick > 1000);
        for g in [1u64, 2, 23, 24, 100, 500] {
            // Keys spread over all of u32: no dense table.
            let spread = |x: u64| (x % g) as u32 * (u32::MAX / 512);
            let mut keys = sample(s, spread);
            keys.sort_unstable();
            let d = keys.chunk_by(|a, b| a == b).count() as u32;
            let f1 = keys
                .chunk_by(|a, b| a == b)
                .filter(|r| r.len() == 1)
                .count() as u32;
            let (lo, hi) = (keys[0], keys[keys.len() - 1]);
            let want = if g < 24 {
                k::TINY_SLOTS
            } else {
                k::MIN_SHARED_SLOTS
            };
            let plan = quick_plan([d, f1, 0, lo, hi, 0, 0], 0, 1);
            assert_eq!(plan.map(|p| p.slots), Some(want), "{g} groups");
        }
    }

    /// A sample whose keys span a narrow range gets a dense table on its word alone, its base
    /// a sixteenth of the range (and 16) below the least key, as a key word (`i32` keys in
    /// their order); wider ranges, and ranges of keys too few for a table, do not.
    #[test]
    fn quick_plans_take_dense_ranges() {
        let plan = quick_plan([100, 0, 0, 1000, 1099, 0, 0], 0, 1).unwrap();
        assert_eq!(plan.dense_base, Some(1000 - 100 / 16 - 16));
        assert!(plan.slots as u64 >= 100 + 2 * (100 / 16 + 16));
        assert_eq!(plan.copies, 1);
        // i32 keys -50 ..= 49: the base is a key word below -50.
        let x = 0x8000_0000u32;
        let (lo, hi) = ((-50i32) as u32 ^ x, 49u32 ^ x);
        let plan = quick_plan([100, 0, 0, lo, hi, 0, 0], x, 1).unwrap();
        assert_eq!(plan.dense_base, Some((-50i32 - 100 / 16 - 16) as u32));
        // Three thousand keys fit a launch's quick table; ten thousand do not.
        let plan = quick_plan([2300, 1000, 600, 0, 2999, 0, 0], 0, 1).unwrap();
        assert_eq!(plan.dense_base, Some(0));
        assert_eq!(quick_plan([3400, 2500, 700, 0, 9999, 0, 0], 0, 1), None);
        // A few keys: the tiny table, whatever their range.
        let plan = quick_plan([3, 0, 0, 5, 7, 0, 0], 0, 1).unwrap();
        assert_eq!((plan.slots, plan.dense_base), (k::TINY_SLOTS, None));
        // Near the top of the order the range stops below u32::MAX.
        let (base, slots) = k::dense_range(u32::MAX - 10, u32::MAX - 1).unwrap();
        assert_eq!(base, u32::MAX - 10 - 16);
        assert!(base as u64 + slots >= u32::MAX as u64);
        assert_eq!(k::dense_range(5, 4), None);
    }

    /// The second attempt takes the dense table of a full sample whose range is too wide for
    /// the first attempt's and fits a block (ten thousand uniform keys, or the same with a
    /// heavy hitter outside the range), not a range sparser than three times Chao's bound on
    /// the groups, a table that leaves room for two narrow blocks, or a sample the first
    /// attempt takes.
    #[test]
    fn wide_plans_take_dense_ranges_the_first_attempt_leaves() {
        let (smem, min_bytes) = (227 * 1024, 100 * 1024);
        let words = |keys: &mut Vec<u32>| {
            keys.sort_unstable();
            let runs = || keys.chunk_by(|a, b| a == b);
            let d = runs().count() as u32;
            let f1 = runs().filter(|r| r.len() == 1).count() as u32;
            let f2 = runs().filter(|r| r.len() == 2).count() as u32;
            let in_range = || keys.iter().filter(|&&k| k != u32::MAX);
            let lo = in_range().min().copied().unwrap_or(u32::MAX);
            let hi = in_range().max().copied().unwrap_or(0);
            [d, f1, f2, lo, hi, 0, 0]
        };
        let s = k::GROUPBY_SAMPLES;
        let plan = |c| k::wide_plan(c, 0, 1, smem, min_bytes);
        let mut uniform = sample(s, |x| (x % 10_000) as u32);
        let c = words(&mut uniform);
        assert_eq!(quick_plan(c, 0, 1), None);
        let p = plan(c).expect("ten thousand keys in a range");
        assert_eq!(p.copies, 1);
        let base = p.dense_base.unwrap();
        assert!(
            base <= c[3] && base as u64 + p.slots as u64 > c[4] as u64,
            "{p:?}"
        );
        let mut heavy = sample(s, |x| {
            if x & 1 == 0 {
                u32::MAX
            } else {
                (x / 2 % 10_000) as u32
            }
        });
        assert!(plan(words(&mut heavy)).is_some());
        // 4,000 keys over a range of 16,000: sparse.
        let mut sparse = sample(s, |x| (x % 4000) as u32 * 4);
        assert_eq!(plan(words(&mut sparse)), None);
        // Fewer bytes than `min_bytes`: the host's narrow kernel.
        let mut small = sample(s, |x| (x % 6000) as u32);
        let c = words(&mut small);
        assert_eq!(quick_plan(c, 0, 1), None);
        assert_eq!(plan(c), None);
        assert!(k::wide_plan(c, 0, 1, smem, 0).is_some());
        // A range wider than a block's table, and one the first attempt takes.
        let mut wide = sample(s, |x| (x % 40_000) as u32);
        assert_eq!(plan(words(&mut wide)), None);
        let mut few = sample(s, |x| (x % 100) as u32);
        assert_eq!(plan(words(&mut few)), None);
        // The staged tiles go after the table where both fit.
        assert_eq!(k::stage_offset(0, 4096, 1, smem), Some(16));
        assert_eq!(k::stage_offset(1001, 4096, 1, smem), Some(1008));
        let stages = k::HASH_STAGES * k::hash_stage_bytes(4096, 1);
        assert_eq!(
            k::stage_offset(smem - stages, 4096, 1, smem),
            Some(smem - stages)
        );
        assert_eq!(k::stage_offset(smem - stages + 1, 4096, 1, smem), None);
    }

    /// A key on at least an eighth of the sampled rows (and two) is hot, whatever the row
    /// count; fewer rows are a smaller sample.
    #[test]
    fn hot_keys_hold_an_eighth_of_the_sample() {
        let c = |key, rows| [100, 0, 0, 0, 99, key, rows];
        assert_eq!(k::hot_key(c(7, 512), 1 << 27), Some(7));
        assert_eq!(k::hot_key(c(7, 511), 1 << 27), None);
        assert_eq!(k::hot_key(c(u32::MAX, 2048), 4096), Some(u32::MAX));
        assert_eq!(k::hot_key(c(7, 2), 16), Some(7));
        assert_eq!(k::hot_key(c(7, 1), 8), None);
        assert_eq!(k::hot_key(c(7, 1), 1), None);
    }

    /// A dense range caps the first global table at twice its slots: a heavy hitter's skewed
    /// estimate of 10^4 uniform keys (Chao's bound, 10,963) keeps the ranking by counting.
    #[test]
    fn dense_ranges_cap_the_first_global_table() {
        assert_eq!(first_global_slots(10_000, false, None), 20_000);
        assert_eq!(first_global_slots(10_963, true, None), 43_852);
        let capped = first_global_slots(10_963, true, Some(11_296));
        assert_eq!(capped, 22_592);
        let limit = (capped as f64 * tessera_kernels::hash::MAX_FILL) as usize;
        assert!(limit < RANK_MAX && limit > 10_000);
        // The estimate beyond the range: twice the estimate.
        assert_eq!(first_global_slots(30_000, true, Some(11_296)), 60_000);
        assert_eq!(first_global_slots(3, false, Some(64)), MIN_GLOBAL_SLOTS);
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
