//! Sort-based group-by on the GPU: the radix sort of the keys with a payload, then one pass
//! that reduces each run of equal keys into its group's record (kernels in
//! `tessera_kernels::ops::groupby_sort`). Its work does not depend on the group count, so it
//! is the variant for many groups, where the hash group-by's tables leave shared memory.
use tessera_kernels::layout::STATUS_STRIDE;
use tessera_kernels::ops::groupby::RECORDS_HEADER;
use tessera_kernels::ops::groupby_sort::{
    GROUPBY_RUNS_0, GROUPBY_RUNS_2, GROUPBY_RUNS_3, GROUPBY_RUNS_4, GROUPBY_RUNS_CARRY,
    GROUPBY_RUNS_ONE, GROUPBY_RUNS64_0, GROUPBY_RUNS64_1, GROUPBY_RUNS64_2, GROUPBY_RUNS64_3,
    GROUPBY_RUNS64_4, RunsParams, carry_words, staged_bytes,
};

use super::records::{
    Accumulators, DeviceGrouped, GpuKey, check, kernel_for, payload_column, ptr, read_head,
    value_ptr,
};
use super::{Agg, DeviceKeyColumn, DeviceValueColumn, Grouped};
use crate::error::{Error, Result};
use crate::ops::sort::{Order, RadixSort, SortKey, row_ids};
use crate::runtime::{DeviceColumn, Gpu, PodBuffer, grid_per_sm, tile_grid};

const NAME: &str = "group_by_sort";

/// The group-by of `keys` (key columns as [`crate::ops::group_by`] takes them) with `aggs`
/// over `values`, by sorting:
/// the keys sorted with the value column every accumulator reads (a `u32` one) or with row
/// ids (the values then read at each row), then one pass over the sorted rows. The result is
/// ordered by key, with the semantics [`crate::cpu::group_by`] documents (float sums agree to
/// rounding).
///
/// Its time is about that of the radix sort whatever the group count: the variant for many
/// groups. It needs room on the device for the sorted columns and a record per possible
/// group (as many as rows).
///
/// Errors, before any work: what [`crate::ops::check_group_by`] checks, more than eight key
/// columns, and aggregates that need more than four accumulators; once the ranges of packed
/// key columns are read, key columns whose ranges need more than 64 bits together (group
/// those with [`crate::cpu::group_by`]); and an `Err` naming the bytes when the device has no
/// room for the records.
pub fn group_by_sort(
    gpu: &Gpu,
    keys: &[DeviceKeyColumn],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<Grouped> {
    group_by_sort_device(gpu, keys, values, aggs)?.to_host(gpu)
}

/// [`group_by_sort`] with the result left on the device.
pub fn group_by_sort_device(
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
    sort_checked(gpu, key.key(), values, checked.accs)
}

/// The sort-based group-by of a checked grouping of `n > 0` rows.
pub(super) fn sort_checked(
    gpu: &Gpu,
    key: GpuKey,
    values: &[DeviceValueColumn],
    accs: Accumulators,
) -> Result<DeviceGrouped> {
    match key {
        GpuKey::U32(c) => sorted(gpu, c, values, accs),
        GpuKey::I32(c) => sorted(gpu, c, values, accs),
        GpuKey::U64(c) => sorted(gpu, c, values, accs),
    }
}

/// Sorts the keys with their payload and reduces the runs.
fn sorted<K: SortKey>(
    gpu: &Gpu,
    keys: &DeviceColumn<K>,
    values: &[DeviceValueColumn],
    accs: Accumulators,
) -> Result<DeviceGrouped> {
    let n = keys.len();
    let a = accs.list.len();
    let mut params = RunsParams {
        n: n as u32,
        ..RunsParams::default()
    };
    // The payload: the `u32` column every accumulator reads, else row ids.
    let shared_u32 = payload_column(values, &accs);
    let rows;
    let payload = match (a, shared_u32) {
        (0, _) => None,
        (_, Some(col)) => Some(col),
        _ => {
            rows = row_ids(gpu, n)?;
            params.rows = 1;
            Some(&rows)
        }
    };
    for (i, &(col, c)) in accs.list.iter().enumerate() {
        params.codes[i] = c;
        if params.rows != 0 {
            params.values[i] = value_ptr(gpu, values[col]);
        }
    }
    let mut sorted_keys = gpu.scratch::<K>(n)?;
    let mut sort = RadixSort::<K>::new(gpu, n, payload.is_some())?;
    let sorted_payload = match payload {
        Some(p) => {
            let mut out = gpu.scratch::<u32>(n)?;
            sort.sort_pairs(gpu, keys, p, &mut sorted_keys, &mut out, Order::Ascending)?;
            Some(out)
        }
        None => {
            sort.sort_keys(gpu, keys, &mut sorted_keys, Order::Ascending)?;
            None
        }
    };
    drop(sort);
    params.keys = ptr(gpu, &sorted_keys);
    params.payload = sorted_payload.as_ref().map_or(0, |p| ptr(gpu, p));

    let runs = if size_of::<K>() == 8 {
        let more = [GROUPBY_RUNS64_2, GROUPBY_RUNS64_3, GROUPBY_RUNS64_4];
        kernel_for(&accs.list, GROUPBY_RUNS64_0, [GROUPBY_RUNS64_1; 12], more)
    } else {
        let more = [GROUPBY_RUNS_2, GROUPBY_RUNS_3, GROUPBY_RUNS_4];
        kernel_for(&accs.list, GROUPBY_RUNS_0, GROUPBY_RUNS_ONE, more)
    };
    let carry_spec = GROUPBY_RUNS_CARRY[a];
    let tiles = runs.tiles(n as u64) as usize;
    let words = accs.words();
    let record_bytes = (RECORDS_HEADER + n * words) * 8;
    let mut records = gpu
        .scratch::<u64>(RECORDS_HEADER + n * words)
        .map_err(|e| {
            Error::invalid(format!(
                "{NAME}: the records of up to {n} groups need {record_bytes} bytes of device \
             memory beside the sorted rows, which the device does not have ({e}); group \
             fewer rows at a time"
            ))
        })?;
    let mut status = gpu.zeros::<u64>(tiles * STATUS_STRIDE)?;
    let mut carry = gpu.scratch::<u64>(tiles * carry_words(a))?;
    let buf = PodBuffer::upload(gpu, std::slice::from_ref(&params))?;
    let smem = staged_bytes(runs.tile() as usize, a);
    gpu.allow_max_dynamic_smem(&runs)?;
    let cfg = tile_grid(&runs, n, smem as u32)?;
    // SAFETY: the parameters describe `n` sorted rows (and the value columns with row ids);
    // one tile per block; zeroed status words and carry words for every tile; records for
    // as many groups as rows; the staged records' shared memory.
    unsafe { gpu.launch(&runs, cfg, (&buf, &mut status, &mut records, &mut carry)) }?;
    let t32 = tiles as u32;
    let cfg = grid_per_sm(gpu, &carry_spec, tiles, 8)?;
    // SAFETY: every tile's carry, written by the pass above; its groups' records.
    unsafe { gpu.launch(&carry_spec, cfg, (&buf, &t32, &carry, &mut records)) }?;
    let (groups, _, head) = read_head(gpu, &records, n, words)?;
    if groups == 0 || groups > n {
        return Err(Error::invalid(format!(
            "{NAME}: the pass counted {groups} groups among {n} rows (internal)"
        )));
    }
    Ok(DeviceGrouped::new(accs, groups, Some(records), head))
}
