//! Partitioned group-by on the GPU (kernels in `tessera_kernels::ops::groupby_part`): for many
//! groups over a narrow key range. Each partition of rows (the keys of one value of the bits
//! above a table's) aggregates in a shared-memory table indexed by the key's low bits, its
//! groups written in key order. Keys of a wider range (or `i32` keys) take the sort-based
//! group-by.
//!
//! The key range comes first (one read of the keys, or a sample's range that the pass then
//! checks: [`partitioned`]). Where it needs at most
//! [`LOCAL_MAX_BITS`] bits above a table that fills an SM's shared memory, each tile of rows
//! is ordered by partition in place, which costs one read and one write of the rows and no
//! histogram (the tile-local form). Keys below 2^(that table's bits + [`HIST_JOINT_BITS`])
//! take two levels: each partition's row count (one shared-memory atomic per key), one radix
//! pass on the partition's bits above the tile-local form's, then that form, whose
//! aggregation there runs two blocks per SM around half tables where they reach the keys
//! (`GROUPBY_PART_TWO_*`: a partition's short phases overlap another's). Else the rows
//! are sorted by the key's bits above its low [`PART_MAX_SLOT_BITS`] (a histogram, then one
//! radix pass for keys below 2^20 and two below 2^28, instead of the whole sort).
use tessera_kernels::layout::STATUS_STRIDE;
use tessera_kernels::ops::groupby::{RECORDS_HEADER, TableForm, shared_table_bytes};
use tessera_kernels::ops::groupby_part::{
    GROUPBY_PART_0, GROUPBY_PART_2, GROUPBY_PART_3, GROUPBY_PART_4, GROUPBY_PART_BOUNDS,
    GROUPBY_PART_CUT, GROUPBY_PART_HIST, GROUPBY_PART_INIT, GROUPBY_PART_LOCAL, GROUPBY_PART_ONE,
    GROUPBY_PART_RANGE, HIST_JOINT_BITS, HIST_JOINT_SHARED, HIST_JOINT_WORDS, LOCAL_BINS,
    LOCAL_MAX_BITS, LOCAL_TILE, LOCAL_TOTAL_COPIES, PART_MAX_SLOT_BITS, PartArgs, PartItem,
    PartParams, WHOLE, local_items, local_kernel,
};
use tessera_kernels::ops::sort::SORT_BITS as RADIX_BITS;
use tessera_kernels::spec::KernelSpec;

use super::records::{
    Accumulators, DeviceGrouped, GpuKey, check, kernel_for, payload_column, ptr, read_head,
    value_ptr,
};
use super::sort::sort_checked;
use super::{Agg, DeviceKeyColumn, DeviceValueColumn, Grouped};
use crate::error::{Error, Result};
use crate::ops::sort::{RadixSort, digit_histograms, row_ids};
use crate::runtime::{DeviceColumn, Gpu, PodBuffer, grid_per_sm, tile_grid};
use cudarc::driver::CudaViewMut;

const NAME: &str = "group_by_partitioned";

/// Most radix passes the partitioning runs (beyond them the sort-based group-by costs less).
const MAX_PASSES: u32 = 2;

/// The group-by of `keys` (key columns as [`crate::ops::group_by`] takes them) with `aggs`
/// over `values`, partitioned: the rows grouped by the key's high bits, then each partition
/// aggregated in a shared-memory table indexed by the low bits, in key order. The result is
/// ordered by key, with the semantics [`crate::cpu::group_by`] documents (float sums agree
/// to rounding).
///
/// It pays for many groups of a narrow key range, whatever the group count and skew (a
/// partition with many rows is shared by several blocks). After one read of the keys for
/// their range: with one or two accumulators and keys within a range of 2^21 (2^20 with
/// two; half that where an SM has less than 200 KB of shared memory), each tile of 8,192
/// rows is ordered by partition in place (one read and one write of the rows), then
/// aggregated (one read); keys below 2^29 (2^28 with two; half that with less shared
/// memory) cost a histogram and one radix pass before that; otherwise `u32` keys below 2^20
/// cost a histogram, one radix pass and one aggregation pass, below 2^28 two passes. Packed
/// key columns count
/// as the `u32` key of their packed bits. Wider keys, and a lone `i32` key column, run the
/// sort-based group-by ([`crate::ops::group_by_sort`]).
///
/// Errors: as [`crate::ops::group_by_sort`]; and an `Err` naming the bytes
/// when the device has no room for the partitioned rows and the records.
pub fn group_by_partitioned(
    gpu: &Gpu,
    keys: &[DeviceKeyColumn],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<Grouped> {
    group_by_partitioned_device(gpu, keys, values, aggs)?.to_host(gpu)
}

/// [`group_by_partitioned`] with the result left on the device.
pub fn group_by_partitioned_device(
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
    match partitioned(gpu, key.key(), values, &accs, None, None)? {
        Some(r) => Ok(r),
        None => sort_checked(gpu, key.key(), values, accs),
    }
}

/// Words of a tile-local pass's totals over `parts` partitions: [`LOCAL_TOTAL_COPIES`] per
/// partition, and the word a key outside the range sets.
const fn totals_words(parts: usize) -> usize {
    LOCAL_TOTAL_COPIES * parts + 1
}

/// Most words of a tile-local pass's totals.
pub(super) const LOCAL_TOTALS_MOST: usize = totals_words(LOCAL_BINS);

/// The partitioned group-by of `key` with the accumulators `accs` over `values`, or `None`
/// where the keys need the sort-based group-by. `sampled` as [`PartPlan::new`] takes it: where
/// a key lies outside a sample's range, the grouping is planned again from the whole range.
/// `zeroed`: zeroed words the first attempt's pass may take for its totals (as
/// [`PartPlan::run`] takes them).
pub(super) fn partitioned(
    gpu: &Gpu,
    key: GpuKey,
    values: &[DeviceValueColumn],
    accs: &Accumulators,
    sampled: Option<(u32, u32)>,
    mut zeroed: Option<CudaViewMut<'_, u32>>,
) -> Result<Option<DeviceGrouped>> {
    for sampled in [sampled, None] {
        let Some(plan) = PartPlan::new(gpu, key, accs, sampled)? else {
            return Ok(None);
        };
        // A second attempt's pass zeroes its own totals: the first's wrote these.
        if let Some(r) = plan.run(gpu, values, accs, zeroed.take())? {
            return Ok(Some(r));
        }
    }
    Err(Error::invalid(format!(
        "{NAME}: a key lay outside the keys' own range (internal)"
    )))
}

/// A partitioned grouping of `n > 0` rows, planned from the key range.
pub(super) struct PartPlan<'a> {
    keys: &'a DeviceColumn<u32>,
    /// The tile-local form (`hist` then unused).
    local: Option<LocalPlan>,
    /// Bit length of the largest key (at least `slot_bits`).
    key_bits: u32,
    /// Bits of a table's slot.
    slot_bits: u32,
    /// The histograms of the digits the partitioning sorts by (none: one partition, the rows
    /// as they are).
    hist: Vec<u32>,
}

impl<'a> PartPlan<'a> {
    /// The plan for `key` with the accumulators `accs` (the key range: one read of the keys,
    /// one synchronization; for the sorted form also the histograms of the key's digits above
    /// the slot bits), or `None` where the keys need the sort-based group-by.
    ///
    /// `sampled`, the least and the greatest key of a sample of the keys where there was one:
    /// a sample alone too wide for the tile-local form skips the range's read; else the form
    /// takes the widest range it can from a little below the sample's least key (a
    /// thirty-second of the sample's range), without the read. Its pass then checks every key
    /// against that range, and [`PartPlan::run`] returns `None` where a key lies outside it.
    pub(super) fn new(
        gpu: &Gpu,
        key: GpuKey<'a>,
        accs: &Accumulators,
        sampled: Option<(u32, u32)>,
    ) -> Result<Option<Self>> {
        let GpuKey::U32(keys) = key else {
            return Ok(None);
        };
        let aggs = accs.list.len();
        let codes: Vec<u32> = accs.list.iter().map(|&(_, c)| c).collect();
        let width = |(least, most): (u32, u32)| u32::BITS - (most - least).leading_zeros();
        if let Some((spec, per_sm)) = local_kernel(&codes, false) {
            let slot_bits = local_slot_bits(gpu, &spec, aggs, per_sm)?;
            let widest = slot_bits + LOCAL_MAX_BITS;
            let ((least, most), guessed) = match sampled {
                Some(r) if width(r) > widest => ((0, u32::MAX), false),
                Some((lo, hi)) => {
                    // As wide a range as the form takes, from a little below the sample's
                    // least key: keys the sample missed are likely within it, even skewed.
                    let base = lo.saturating_sub((hi - lo) / 32 + 1);
                    let top = base.saturating_add(((1u64 << widest) - 1) as u32);
                    ((base, top.max(hi)), true)
                }
                None => (key_range(gpu, keys)?, false),
            };
            let width = width((least, most));
            let bits = width.saturating_sub(slot_bits);
            // Keys below one sorted-form table need neither form's pass.
            if bits <= LOCAL_MAX_BITS && most >> sorted_slot_bits(aggs) != 0 {
                return Ok(Some(PartPlan {
                    keys,
                    local: Some(LocalPlan {
                        spec,
                        per_sm,
                        base: least,
                        slot_bits,
                        bits,
                        upper: None,
                    }),
                    key_bits: slot_bits + bits,
                    slot_bits,
                    hist: Vec::new(),
                }));
            }
            if guessed {
                // The sample's range is too wide for the form: so is the whole range.
                return Self::new(gpu, key, accs, None);
            }
            // Two levels: the rows sorted by the radix digit above the form's bits, then each
            // tile ordered by those bits. For keys from 0 (the radix pass sorts the keys' own
            // bits) below 2^(slot_bits + HIST_JOINT_BITS), as the sample's greatest key (or
            // the range) suggests and the partitions' counts check. The kernel of two blocks
            // per SM where its half tables reach that far (an item's short phases then
            // overlap another's), else the one-level kernel's.
            let top = sampled.map_or(most, |(_, hi)| hi);
            let reach = |slot_bits: u32| top >> slot_bits >> HIST_JOINT_BITS == 0;
            let fit = if bits > LOCAL_MAX_BITS {
                let (two, two_per_sm) = local_kernel(&codes, true).unwrap_or((spec, per_sm));
                let two_bits = local_slot_bits(gpu, &two, aggs, two_per_sm)?;
                if reach(two_bits) {
                    Some((two, two_per_sm, two_bits))
                } else {
                    reach(slot_bits).then_some((spec, per_sm, slot_bits))
                }
            } else {
                None
            };
            if let Some((spec, per_sm, slot_bits)) = fit {
                let Some(bins) = joint_bins(gpu, keys, 0, slot_bits)? else {
                    return Self::sorted(gpu, keys, aggs, sampled, Some(slot_bits));
                };
                // The radix digit takes the partition's high 8 bits, the tile-local pass the
                // rest (at least one): the fewer its bits, the longer its runs.
                let high = bins.iter().rposition(|&c| c != 0).unwrap_or(0) as u32;
                let part_bits = u32::BITS - high.leading_zeros();
                return Ok(Some(PartPlan {
                    keys,
                    local: Some(LocalPlan {
                        spec,
                        per_sm,
                        base: 0,
                        slot_bits,
                        bits: part_bits.saturating_sub(RADIX_BITS).max(1),
                        upper: Some(bins),
                    }),
                    key_bits: slot_bits + part_bits,
                    slot_bits,
                    hist: Vec::new(),
                }));
            }
        }
        Self::sorted(gpu, keys, aggs, sampled, None)
    }

    /// The sorted form's plan for `aggs` accumulators (`sampled` as [`PartPlan::new`] takes
    /// it; `past`: the shift of partition counts that found a key past them).
    fn sorted(
        gpu: &Gpu,
        keys: &'a DeviceColumn<u32>,
        aggs: usize,
        sampled: Option<(u32, u32)>,
        past: Option<u32>,
    ) -> Result<Option<Self>> {
        let slot_bits = sorted_slot_bits(aggs);
        // A sample's keys all within the partition counts: likely every key, which the counts
        // check (a key past wider counts lies past these). Else three digits, which reach
        // past bit 32.
        let joint = match sampled {
            Some((_, hi))
                if hi >> slot_bits >> HIST_JOINT_BITS == 0
                    && past.is_none_or(|s| slot_bits > s) =>
            {
                joint_bins(gpu, keys, 0, slot_bits)?
            }
            _ => None,
        };
        let mut hist = match joint {
            Some(bins) => bin_digits(&bins, 3),
            None => digit_histograms(gpu, keys, slot_bits, 3)?,
        };
        let bins = hist.len() / 3;
        // The highest digit not 0 in every key, and its largest value there.
        let top = (0..3).rev().find_map(|d| {
            let last = hist[d * bins..(d + 1) * bins]
                .iter()
                .rposition(|&c| c != 0)?;
            (last > 0).then_some((d, last as u32))
        });
        let (passes, key_bits) = match top {
            None => (0, slot_bits),
            Some((d, last)) => (
                d + 1,
                slot_bits + 8 * d as u32 + (32 - last.leading_zeros()),
            ),
        };
        if passes > MAX_PASSES as usize {
            return Ok(None);
        }
        hist.truncate(passes * bins);
        Ok(Some(PartPlan {
            keys,
            local: None,
            key_bits,
            slot_bits,
            hist,
        }))
    }

    /// Partitions, aggregates and writes the groups; `None` (nothing aggregated) where a key
    /// lies outside a tile-local plan's range. A tile-local pass takes its totals from
    /// `zeroed` where those words (all zero, used by nothing else until the call returns)
    /// are enough, instead of zeroing its own with a memset in front of its launch.
    pub(super) fn run(
        self,
        gpu: &Gpu,
        values: &[DeviceValueColumn],
        accs: &Accumulators,
        zeroed: Option<CudaViewMut<'_, u32>>,
    ) -> Result<Option<DeviceGrouped>> {
        let keys = self.keys;
        let n = keys.len();
        let a = accs.list.len();
        let mut params = PartParams {
            n: n as u32,
            slot_bits: self.slot_bits,
            ..PartParams::default()
        };
        for (i, &(col, c)) in accs.list.iter().enumerate() {
            params.codes[i] = c;
            params.values[i] = value_ptr(gpu, values[col]);
        }
        // The payload the partitioning moves with the keys: the `u32` column every
        // accumulator reads, else row ids; none without accumulators.
        let shared_u32 = payload_column(values, accs);
        // Room for a record per possible group: no more than the rows, or the keys below
        // 2^key_bits.
        let most = n.min(1usize << self.key_bits);
        let words = accs.words();
        // Allocated once the rows' first pass is queued (the GPU waits for no more host work
        // than that pass needs).
        let new_records = || -> Result<DeviceColumn<u64>> {
            let mut records = gpu
                .scratch::<u64>(RECORDS_HEADER + most * words)
                .map_err(|e| {
                    Error::invalid(format!(
                        "{NAME}: the records of up to {most} groups need {} bytes of device \
                         memory beside the partitioned rows, which the device does not have \
                         ({e}); group fewer rows at a time",
                        (RECORDS_HEADER + most * words) * 8
                    ))
                })?;
            gpu.stream()
                .memset_zeros(&mut records.view_mut().slice_mut(..RECORDS_HEADER))
                .map_err(Error::driver(
                    "zeroing a group-by's header",
                    8 * RECORDS_HEADER,
                ))?;
            Ok(records)
        };
        let mut records;
        let slots = 1usize << self.slot_bits;
        // The partitioned rows live until the aggregation has read them.
        let (mut sorted_keys, mut sorted_payload, mut ids, mut pass) = (None, None, None, None);
        let (mut radix_keys, mut radix_payload) = (None, None);
        // The items (one per block, in partition order) and each split partition's count.
        let (items, chunks, blocks): (DeviceColumn<u32>, DeviceColumn<u32>, usize);
        if let Some(local) = &self.local {
            // Row ids, where the partitioning needs them, are its rows' own indices.
            let mut payload = match (a, shared_u32) {
                (0, _) => 0,
                (_, Some(_)) => 1,
                _ => {
                    params.rows = 1;
                    2
                }
            };
            let (mut keys_in, mut pay_in) = (keys, shared_u32.unwrap_or(keys));
            if let Some(bins) = &local.upper {
                // The radix pass moves the payload: row ids from a column of them.
                let moved = match (payload, shared_u32) {
                    (0, _) => None,
                    (_, Some(col)) => Some(col),
                    _ => Some(&*ids.insert(row_ids(gpu, n)?)),
                };
                let rk = radix_keys.insert(gpu.scratch::<u32>(n).map_err(room(n))?);
                let mut sort = RadixSort::<u32>::new(gpu, n, moved.is_some()).map_err(room(n))?;
                let from = local.slot_bits + local.bits;
                let hist = bins_above(bins, local.bits);
                match moved {
                    Some(p) => {
                        let rp = radix_payload.insert(gpu.scratch::<u32>(n).map_err(room(n))?);
                        sort.sort_digits(gpu, keys, &mut *rk, Some((p, &mut *rp)), from, hist)?;
                        (pay_in, payload) = (&*rp, 1);
                    }
                    None => sort.sort_digits(gpu, keys, &mut *rk, None, from, hist)?,
                }
                keys_in = &*rk;
            }
            let tiles = n.div_ceil(LOCAL_TILE);
            let parts = 1usize << local.bits;
            // The pass's outputs in one allocation, its totals zeroed: of the driver calls
            // the GPU waits for before the pass, one allocation instead of four.
            let totals_len = totals_words(parts);
            let mut zeroed = zeroed.filter(|z| z.len() >= totals_len);
            let lay = PassLayout::new(n, payload != 0, parts * tiles, parts, zeroed.is_none());
            let mem = pass.insert(gpu.scratch::<u32>(lay.words()).map_err(room(n))?);
            let totals_at = lay.part(PassLayout::TOTALS);
            if zeroed.is_none() {
                gpu.stream()
                    .memset_zeros(&mut mem.view_mut().slice_mut(totals_at.clone()))
                    .map_err(Error::driver(
                        "zeroing a pass's totals",
                        4 * totals_at.len(),
                    ))?;
            }
            let first = ptr(gpu, mem);
            let at = |part: usize| first + 4 * lay.part(part).start as u64;
            let keys_at = at(PassLayout::KEYS);
            let (payload_at, runs_at) = (at(PassLayout::PAYLOAD), at(PassLayout::RUNS));
            let spec = GROUPBY_PART_LOCAL;
            let cfg = tile_grid(&spec, n, 0)?;
            let (n32, base, shift, bits) = (n as u32, local.base, local.slot_bits, local.bits);
            let wrap = u32::from(local.upper.is_some());
            lay.with_views(mem, |[mut sk, mut sp, mut r, own]| {
                let mut totals = match zeroed.as_mut() {
                    Some(z) => z.slice_mut(..totals_len),
                    None => own,
                };
                // SAFETY: one block per tile of the `n` rows; the outputs hold `n` rows (the
                // payload's one word where there is none, never written), `parts * tiles`
                // run words and `LOCAL_TOTAL_COPIES * parts + 1` zeroed words for the
                // totals and the range's check.
                unsafe {
                    gpu.launch(
                        &spec,
                        cfg,
                        (
                            keys_in,
                            pay_in,
                            &mut sk,
                            &mut sp,
                            &n32,
                            &base,
                            &shift,
                            &bits,
                            &wrap,
                            &payload,
                            &mut r,
                            &mut totals,
                        ),
                    )
                }
            })?;
            let totals = match &zeroed {
                Some(z) => z.slice(..totals_len),
                None => mem.view().slice(totals_at),
            };
            records = new_records()?;
            (params.keys, params.payload) = (keys_at, payload_at);
            (params.runs, params.tiles, params.base) = (runs_at, tiles as u32, base);
            if let Some(bins) = &local.upper {
                // Cut on the host, which has the partitions' counts.
                let resident = gpu.sm_count() as usize * local.per_sm;
                let work = Work::cut_upper(bins, local.bits, n, resident);
                params.run_bits = local.bits;
                (items, chunks, blocks) = work.upload(gpu, &mut params)?;
            } else {
                // The items are cut on the device (`Work::cut_local` is its twin), from the
                // totals the host does not wait for; every partition may be split.
                let sms = gpu.sm_count() as usize * local.per_sm;
                blocks = local_items(parts, sms);
                let mut it = gpu.scratch::<u32>(4 * blocks)?;
                let mut ch = gpu.scratch::<u32>(parts + 1)?;
                let spec = GROUPBY_PART_CUT;
                let cfg = cudarc::driver::LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (spec.threads(), 1, 1),
                    shared_mem_bytes: 0,
                };
                let (p32, t32, b32, m32) = (parts as u32, tiles as u32, sms as u32, blocks as u32);
                // SAFETY: one block of at least `parts` threads; the totals as the pass wrote
                // them; `blocks` items of four words, `parts + 1` chunk words, the records' header.
                unsafe {
                    gpu.launch(
                        &spec,
                        cfg,
                        (
                            &totals,
                            &p32,
                            &t32,
                            &n32,
                            &b32,
                            &mut it,
                            &m32,
                            &mut ch,
                            &mut records,
                        ),
                    )
                }?;
                params.splits = parts as u32;
                (items, chunks) = (it, ch);
            }
        } else {
            records = new_records()?;
            if self.hist.is_empty() {
                // One partition: the rows as they are.
                params.keys = ptr(gpu, keys);
                (params.rows, params.payload) = match shared_u32 {
                    Some(col) => (0, ptr(gpu, col)),
                    None => (2, 0),
                };
            } else {
                let payload = match (a, shared_u32) {
                    (0, _) => None,
                    (_, Some(col)) => Some(col),
                    _ => {
                        params.rows = 1;
                        Some(&*ids.insert(row_ids(gpu, n)?))
                    }
                };
                let sk = sorted_keys.insert(gpu.scratch::<u32>(n).map_err(room(n))?);
                let mut sort = RadixSort::<u32>::new(gpu, n, payload.is_some()).map_err(room(n))?;
                let (from, hist) = (self.slot_bits, self.hist);
                match payload {
                    Some(p) => {
                        let sp = sorted_payload.insert(gpu.scratch::<u32>(n).map_err(room(n))?);
                        sort.sort_digits(gpu, keys, sk, Some((p, &mut *sp)), from, hist)?;
                        params.payload = ptr(gpu, sp);
                    }
                    None => sort.sort_digits(gpu, keys, sk, None, from, hist)?,
                }
                params.keys = ptr(gpu, sk);
            }
            let parts = 1usize << self.key_bits.saturating_sub(self.slot_bits);
            let starts = match &sorted_keys {
                None => vec![0, n as u32],
                Some(sk) => partition_starts(gpu, sk, self.slot_bits, parts)?,
            };
            let work = Work::cut(&starts, rows_per_item(gpu, n));
            (items, chunks, blocks) = work.upload(gpu, &mut params)?;
        }
        params.items = ptr(gpu, &items);
        let (done, split_counts, split_acc);
        if params.splits > 0 {
            let splits = params.splits as usize;
            done = gpu.zeros::<u32>(splits)?;
            split_counts = gpu.scratch::<u32>(splits * slots)?;
            split_acc = gpu.scratch::<u64>((splits * a * slots).max(1))?;
            (params.chunks, params.done) = (ptr(gpu, &chunks), ptr(gpu, &done));
            params.split_counts = ptr(gpu, &split_counts);
            params.split_acc = ptr(gpu, &split_acc);
        }
        let buf = PodBuffer::upload(gpu, std::slice::from_ref(&params))?;
        if params.splits > 0 {
            let spec = GROUPBY_PART_INIT;
            let cfg = grid_per_sm(gpu, &spec, params.splits as usize * slots, 8)?;
            let a32 = a as u32;
            // SAFETY: the parameters name the split partitions' tables, sized above.
            unsafe { gpu.launch(&spec, cfg, (&buf, &a32)) }?;
        }
        let mut status = gpu.zeros::<u64>(blocks * STATUS_STRIDE)?;
        let (spec, form) = match &self.local {
            Some(local) => (local.spec, LOCAL_FORM),
            None => {
                let more = [GROUPBY_PART_2, GROUPBY_PART_3, GROUPBY_PART_4];
                let spec = kernel_for(&accs.list, GROUPBY_PART_0, GROUPBY_PART_ONE, more);
                (spec, TableForm::default())
            }
        };
        let smem = shared_table_bytes(slots as u32, 1, a, form);
        gpu.allow_max_dynamic_smem(&spec)?;
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (spec.threads(), 1, 1),
            shared_mem_bytes: smem as u32,
        };
        // SAFETY: the parameters describe the partitioned rows, one item per block in
        // partition order (padding after them), the split partitions' tables (initialized
        // above) and counters (zeroed); a zeroed status word per item; records with a zeroed
        // header and room for every group; the table's dynamic shared memory.
        unsafe { gpu.launch(&spec, cfg, (&buf, &mut status, &mut records)) }?;
        let (groups, outside, head) = read_head(gpu, &records, most, words)?;
        if outside {
            // A key outside a sample's range: nothing was aggregated.
            return Ok(None);
        }
        if groups == 0 || groups > most {
            return Err(Error::invalid(format!(
                "{NAME}: the pass counted {groups} groups among {n} rows (internal)"
            )));
        }
        Ok(Some(DeviceGrouped::new(
            accs.clone(),
            groups,
            Some(records),
            head,
        )))
    }
}

/// The tile-local pass's outputs in one allocation of `u32` words, each part from a 256-byte
/// boundary: the partitioned keys, their payload (one word where there is none), each
/// tile's runs, and the totals (`LOCAL_TOTAL_COPIES` copies per partition, then the word a
/// key outside the range sets; none where the pass takes zeroed words from elsewhere).
struct PassLayout {
    /// Each part's first word, then the words in all.
    starts: [usize; 5],
    lens: [usize; 4],
}

impl PassLayout {
    const KEYS: usize = 0;
    const PAYLOAD: usize = 1;
    const RUNS: usize = 2;
    const TOTALS: usize = 3;
    /// Words from a part's start to a 256-byte boundary.
    const ALIGN: usize = 64;

    /// The layout for `n` rows (`payload`: with a payload word per row), `runs` run words
    /// and `parts` partitions (`totals`: with their totals).
    fn new(n: usize, payload: bool, runs: usize, parts: usize, totals: bool) -> Self {
        let lens = [
            n,
            if payload { n } else { 1 },
            runs,
            if totals { totals_words(parts) } else { 0 },
        ];
        let mut starts = [0; 5];
        for i in 0..lens.len() {
            starts[i + 1] = (starts[i] + lens[i]).next_multiple_of(Self::ALIGN);
        }
        PassLayout { starts, lens }
    }

    /// Words of the allocation.
    fn words(&self) -> usize {
        self.starts[4]
    }

    /// The words of part `i`.
    fn part(&self, i: usize) -> std::ops::Range<usize> {
        self.starts[i]..self.starts[i] + self.lens[i]
    }

    /// `f` of the four parts of `mem` (which holds [`PassLayout::words`]), writable.
    fn with_views<R>(
        &self,
        mem: &mut DeviceColumn<u32>,
        f: impl FnOnce([CudaViewMut<'_, u32>; 4]) -> R,
    ) -> R {
        let mut all = mem.view_mut();
        let s = self.starts;
        let (keys, mut rest) = all.split_at_mut(s[1]);
        let (payload, mut rest) = rest.split_at_mut(s[2] - s[1]);
        let (runs, mut rest) = rest.split_at_mut(s[3] - s[2]);
        let (totals, _) = rest.split_at_mut(self.lens[Self::TOTALS]);
        f([keys, payload, runs, totals])
    }
}

/// The error of an allocation for `n` partitioned rows.
fn room(n: usize) -> impl Fn(Error) -> Error {
    move |e| {
        Error::invalid(format!(
            "{NAME}: partitioning {n} rows needs up to {} bytes of device memory for the \
             partitioned keys, payload, row ids and temporaries, which the device does not \
             have ({e}); group fewer rows at a time",
            28 * n
        ))
    }
}

/// The tile-local form of a plan: partitions of `bits` bits above `slot_bits`, counted from
/// the least key `base` (of the keys' range or a sample's, which the pass checks), and the
/// aggregation kernel.
struct LocalPlan {
    spec: KernelSpec<PartArgs>,
    /// Blocks of `spec` an SM holds.
    per_sm: usize,
    base: u32,
    slot_bits: u32,
    bits: u32,
    /// Two levels: each partition's row count ([`joint_bins`]), the partition's bits above
    /// `bits` a radix digit that the rows are sorted by before the tile-local pass.
    upper: Option<Vec<u32>>,
}

/// The tile-local form's tables: a slot per key (no key array).
const LOCAL_FORM: TableForm = TableForm { dense: true };

/// Slot bits of the sorted form's tables: 4,096 slots leave room for three blocks per SM with
/// one accumulator.
fn sorted_slot_bits(aggs: usize) -> u32 {
    if aggs <= 1 {
        PART_MAX_SLOT_BITS
    } else {
        PART_MAX_SLOT_BITS - 1
    }
}

/// Slot bits of the tile-local form's tables with `aggs` accumulators: the largest table (at
/// most 2^14 slots) that fits the shared memory of `spec`'s block, `per_sm` blocks per SM.
fn local_slot_bits(
    gpu: &Gpu,
    spec: &KernelSpec<PartArgs>,
    aggs: usize,
    per_sm: usize,
) -> Result<u32> {
    let room = gpu.dynamic_smem_sharing(spec, per_sm)?;
    Ok((8..=14)
        .rev()
        .find(|&b| shared_table_bytes(1 << b, 1, aggs, LOCAL_FORM) <= room)
        .unwrap_or(8))
}

/// The least and the greatest of the `keys` (`n > 0`; one read, one synchronization).
fn key_range(gpu: &Gpu, keys: &DeviceColumn<u32>) -> Result<(u32, u32)> {
    let mut out = gpu.upload(&[u32::MAX, 0])?;
    let spec = GROUPBY_PART_RANGE;
    let cfg = grid_per_sm(gpu, &spec, keys.len(), 8)?;
    let n = keys.len() as u32;
    // SAFETY: `n` keys; two words set to the neutral values; any grid size.
    unsafe { gpu.launch(&spec, cfg, (keys, &n, &mut out)) }?;
    let r = out.to_vec(gpu)?;
    Ok((r[0], r[1]))
}

/// Each partition's row count, the partition of a key `(key - base) >> shift`, for the first
/// `2^HIST_JOINT_BITS` partitions ([`GROUPBY_PART_HIST`], one shared-memory atomic per key):
/// `None` where a key lies past them, or where an SM's shared memory cannot hold their
/// counts. One read of the keys, one synchronization.
pub(crate) fn joint_bins(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    base: u32,
    shift: u32,
) -> Result<Option<Vec<u32>>> {
    let spec = GROUPBY_PART_HIST;
    if gpu.allow_max_dynamic_smem(&spec)? < HIST_JOINT_SHARED {
        return Ok(None);
    }
    let n = keys.len();
    let mut out = gpu.zeros::<u32>(HIST_JOINT_WORDS)?;
    // One block per SM: the counts take more than half an SM's shared memory.
    let blocks = spec.tiles(n as u64).clamp(1, gpu.sm_count() as u64) as u32;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: HIST_JOINT_SHARED as u32,
    };
    let n32 = n as u32;
    // SAFETY: `n` keys (a column's start is aligned); zeroed output words; the counts'
    // shared memory; shift < 32; any grid size.
    unsafe { gpu.launch(&spec, cfg, (keys, &n32, &base, &shift, &mut out)) }?;
    let mut bins = out.to_vec(gpu)?;
    if bins.pop() != Some(0) {
        return Ok(None);
    }
    Ok(Some(bins))
}

/// The row counts of the values of the partitions' bits above their low `bits` (a radix
/// digit's histogram: the partitions in use have at most `bits + RADIX_BITS` bits).
fn bins_above(bins: &[u32], bits: u32) -> Vec<u32> {
    let mut hist: Vec<u32> = bins.chunks(1 << bits).map(|g| g.iter().sum()).collect();
    debug_assert!(hist.iter().skip(1 << RADIX_BITS).all(|&c| c == 0));
    hist.resize(1 << RADIX_BITS, 0);
    hist
}

/// The histograms of `digits` 8-bit digits of each partition's index, from partition counts
/// (`bins`), as [`digit_histograms`] gives them for the keys.
fn bin_digits(bins: &[u32], digits: usize) -> Vec<u32> {
    let mut hist = vec![0u32; digits << 8];
    for (p, &c) in bins.iter().enumerate() {
        for d in 0..digits {
            hist[d << 8 | (p >> (8 * d) & 255)] += c;
        }
    }
    hist
}

/// Rows one block aggregates at most: about eight blocks per SM over the rows, so that a
/// heavy partition is shared out and the blocks balance.
fn rows_per_item(gpu: &Gpu, n: usize) -> usize {
    n.div_ceil(8 * gpu.sm_count() as usize).max(1 << 14)
}

/// Each partition's first row and, last, the row count: `parts + 1` words (one binary search
/// per partition over the sorted keys; synchronizes).
fn partition_starts(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    slot_bits: u32,
    parts: usize,
) -> Result<Vec<u32>> {
    let mut starts = gpu.scratch::<u32>(parts + 1)?;
    let spec = GROUPBY_PART_BOUNDS;
    let cfg = grid_per_sm(gpu, &spec, parts + 1, 8)?;
    let (n32, p32) = (keys.len() as u32, parts as u32);
    // SAFETY: `keys` holds its keys sorted by their bits from `slot_bits` up; `starts` holds
    // `parts + 1` words.
    unsafe { gpu.launch(&spec, cfg, (keys, &n32, &slot_bits, &p32, &mut starts)) }?;
    starts.to_vec(gpu)
}

/// The blocks' work: items in partition order, and each split partition's item count.
#[derive(Debug, PartialEq)]
struct Work {
    items: Vec<PartItem>,
    chunks: Vec<u32>,
}

/// Items of a tile-local partition of `rows` of the `n` rows, over `tiles` tiles, cut for
/// `blocks` blocks: its share of them, rounded, at least one and at most one per tile; none
/// for no rows (the arithmetic `GROUPBY_PART_CUT` does on the device).
fn pieces(rows: u64, n: usize, blocks: usize, tiles: usize) -> usize {
    let share = (rows as u128 * blocks as u128 + n as u128 / 2) / n.max(1) as u128;
    if rows == 0 {
        0
    } else {
        (share as usize).min(tiles).max(1)
    }
}

impl Work {
    /// Cuts the partitions (`starts`, `parts + 1` words) into items of at most `most` rows
    /// each, evenly within a partition; empty partitions get none.
    fn cut(starts: &[u32], most: usize) -> Work {
        let mut w = Work {
            items: Vec::with_capacity(starts.len()),
            chunks: Vec::new(),
        };
        for (q, s) in starts.windows(2).enumerate() {
            let rows = (s[1] - s[0]) as usize;
            w.push(q as u32, s[0] as usize, s[1] as usize, rows.div_ceil(most));
        }
        w
    }

    /// Cuts the partitions of a tile-local form (`totals`: each one's rows of the `n`, over
    /// `tiles` tiles) into about `blocks` items (one per block the device runs at once) of
    /// even tile ranges, each partition's share of them its share of the rows, rounded (at
    /// least one, at most one per tile; even rows per item where a partition's rows are
    /// spread evenly over the tiles); empty partitions get none. The twin of
    /// `GROUPBY_PART_CUT`, which cuts them on the device.
    #[cfg(test)]
    fn cut_local(totals: &[u64], tiles: usize, n: usize, blocks: usize) -> Work {
        let mut w = Work {
            items: Vec::with_capacity(totals.len()),
            chunks: Vec::new(),
        };
        for (q, &rows) in totals.iter().enumerate() {
            w.push(q as u32, 0, tiles, pieces(rows, n, blocks, tiles));
        }
        w
    }

    /// Cuts the partitions of a two-level form (`bins`: each one's rows of the `n`; its low
    /// `bits` bits those of the tile-local pass, the bits above them the radix digit the rows
    /// were sorted by first) as [`Work::cut_local`] does, each into even ranges of the tiles
    /// where its digit's rows lie.
    fn cut_upper(bins: &[u32], bits: u32, n: usize, blocks: usize) -> Work {
        let mut w = Work {
            items: Vec::new(),
            chunks: Vec::new(),
        };
        let sub = 1usize << bits;
        let mut first = 0;
        for (d, group) in bins.chunks(sub).enumerate() {
            let rows: usize = group.iter().map(|&c| c as usize).sum();
            let (begin, end) = (first / LOCAL_TILE, (first + rows).div_ceil(LOCAL_TILE));
            for (q, &c) in group.iter().enumerate() {
                let pieces = pieces(c as u64, n, blocks, end - begin);
                w.push((d * sub + q) as u32, begin, end, pieces);
            }
            first += rows;
        }
        w
    }

    /// Uploads the items and the chunk counts, then how many split partitions there are
    /// (which the tables' init reads), and sets `params.splits`: `(items, chunks, blocks)`.
    fn upload(
        self,
        gpu: &Gpu,
        params: &mut PartParams,
    ) -> Result<(DeviceColumn<u32>, DeviceColumn<u32>, usize)> {
        params.splits = self.chunks.len() as u32;
        let items = gpu.upload(bytemuck::cast_slice::<PartItem, u32>(&self.items))?;
        let mut counts = self.chunks;
        counts.push(params.splits);
        Ok((items, gpu.upload(&counts)?, self.items.len()))
    }

    /// Partition `q`'s items: `begin .. end` cut evenly into `pieces` (none for 0).
    fn push(&mut self, q: u32, begin: usize, end: usize, pieces: usize) {
        if pieces == 0 {
            return;
        }
        let split = if pieces == 1 {
            WHOLE
        } else {
            self.chunks.push(pieces as u32);
            self.chunks.len() as u32 - 1
        };
        let each = (end - begin).div_ceil(pieces);
        for i in 0..pieces {
            self.items.push(PartItem {
                begin: (begin + i * each).min(end) as u32,
                end: (begin + (i + 1) * each).min(end) as u32,
                part: q,
                split,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pass's parts lie in order, apart, each from a 256-byte boundary, within the
    /// allocation, with the lengths the pass writes.
    #[test]
    fn pass_layout_parts_are_aligned_and_apart() {
        for n in [1usize, 63, 64, 65, 8191, 8193, 1 << 27] {
            for payload in [false, true] {
                for parts in [1, 64, 128] {
                    for totals in [false, true] {
                        let runs = parts * n.div_ceil(LOCAL_TILE);
                        let lay = PassLayout::new(n, payload, runs, parts, totals);
                        let lens = [
                            n,
                            if payload { n } else { 1 },
                            runs,
                            if totals {
                                LOCAL_TOTAL_COPIES * parts + 1
                            } else {
                                0
                            },
                        ];
                        let mut end = 0;
                        for (i, len) in lens.into_iter().enumerate() {
                            let r = lay.part(i);
                            assert!(
                                r.start >= end && r.start.is_multiple_of(64),
                                "{n} {payload} {parts} {totals} {i}"
                            );
                            assert_eq!(r.len(), len);
                            end = r.end;
                        }
                        assert!(end <= lay.words());
                        assert!(lay.part(PassLayout::TOTALS).len() <= LOCAL_TOTALS_MOST);
                    }
                }
            }
        }
    }

    fn item(begin: u32, end: u32, part: u32, split: u32) -> PartItem {
        PartItem {
            begin,
            end,
            part,
            split,
        }
    }

    #[test]
    fn two_level_items_span_their_digits_tiles() {
        const T: u32 = LOCAL_TILE as u32;
        // Digit 0: partition 0 with 3 tiles of rows, partition 1 with 5 rows (tiles 0 .. 4);
        // digit 1: partition 2 with a tile of rows from row 3 T + 5 (tiles 3 .. 5).
        let bins = [3 * T, 5, T, 0];
        let w = Work::cut_upper(&bins, 1, 4 * T as usize + 5, 4);
        assert_eq!(
            w.items,
            vec![
                item(0, 2, 0, 0),
                item(2, 4, 0, 0),
                item(4, 4, 0, 0),
                item(0, 4, 1, WHOLE),
                item(3, 5, 2, WHOLE),
            ]
        );
        assert_eq!(w.chunks, vec![3]);
        assert_eq!(bins_above(&bins, 1)[..3], [3 * T + 5, T, 0]);
        assert_eq!(bin_digits(&[1, 2, 3], 2)[..3], [1, 2, 3]);
        assert_eq!(bin_digits(&[1; 257], 2)[256..258], [256, 1]);
    }

    #[test]
    fn work_skips_empty_partitions_and_splits_heavy_ones() {
        let w = Work::cut(&[0, 0, 3, 3, 10], 4);
        assert_eq!(
            w.items,
            vec![item(0, 3, 1, WHOLE), item(3, 7, 3, 0), item(7, 10, 3, 0),]
        );
        assert_eq!(w.chunks, vec![2]);
        let none = Work::cut(&[0, 0], 4);
        assert!(none.items.is_empty() && none.chunks.is_empty());
    }

    #[test]
    fn local_work_cuts_tile_ranges_by_rows() {
        // 112 rows over 28 blocks: 4 rows a block, so 3 rows take one, 9 two.
        let w = Work::cut_local(&[0, 3, 9, 100], 10, 112, 28);
        assert_eq!(
            w.items,
            vec![
                item(0, 10, 1, WHOLE),
                item(0, 5, 2, 0),
                item(5, 10, 2, 0),
                // More pieces than tiles: one per tile.
                item(0, 1, 3, 1),
                item(1, 2, 3, 1),
                item(2, 3, 3, 1),
                item(3, 4, 3, 1),
                item(4, 5, 3, 1),
                item(5, 6, 3, 1),
                item(6, 7, 3, 1),
                item(7, 8, 3, 1),
                item(8, 9, 3, 1),
                item(9, 10, 3, 1),
            ]
        );
        assert_eq!(w.chunks, vec![2, 10]);
    }
}
