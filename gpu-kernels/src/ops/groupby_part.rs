//! Partitioned group-by (issue 22): many groups over a narrow key range. The host sorts the
//! rows by the key's bits above its low `slot_bits` (one or two radix passes instead of the
//! whole sort), so that each partition (the rows of one value of those high bits) holds at
//! most `2^slot_bits` groups; then a block aggregates a partition's rows in a shared-memory
//! table indexed directly by the key's low bits, and writes its groups in key order: slot
//! order within the partition, partitions in order. Work per row is one pass over the sorted
//! rows with shared-memory atomics, whatever the group count.
//!
//! The host cuts the partitions into [`PartItem`]s, one block each, in partition order. A
//! partition with more rows than one block should take (a heavy hitter's) is split over
//! several items: each merges its table into the partition's table in device memory, and the
//! last to finish writes the groups from there. The groups' places come from the decoupled
//! look-back over the items (`block::block_tile_prefix`): an item publishes how many
//! groups it writes (zero for a split partition's items but the last).
//!
//! Where the key's range needs few bits above a table's (at most [`LOCAL_MAX_BITS`]), the rows
//! are not sorted at all: [`GROUPBY_PART_LOCAL`] orders each tile of [`LOCAL_TILE`] rows by
//! partition in place (no histogram before it, no look-back, every write coalesced) and notes
//! where each partition's run of the tile starts and how long it is; the aggregation then
//! reads a partition's runs tile after tile, a warp per run ([`PartParams::tiles`] not 0).
//! Keys count from the range's least ([`PartParams::base`]) in both forms.
//!
//! The records are [`record_words`](crate::ops::groupby::record_words) words each after a
//! [`RECORDS_HEADER`](crate::ops::groupby::RECORDS_HEADER), as the other group-bys write them.
use crate::ops::groupby::GROUPBY_MAX_AGGS;

/// One block's work: rows `begin .. end` of partition `part`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct PartItem {
    /// First row.
    pub begin: u32,
    /// One past the last row.
    pub end: u32,
    /// The partition: the value of the key's bits above the slot bits.
    pub part: u32,
    /// The partition's index among the split ones, or [`WHOLE`].
    pub split: u32,
}

/// [`PartItem::split`] of a partition one item covers.
pub const WHOLE: u32 = u32::MAX;

/// [`PartItem::part`] of an item with no rows (the padding [`GROUPBY_PART_CUT`] writes past
/// the items it cut): its block returns at once.
pub const NO_PART: u32 = u32::MAX;

/// Most items [`GROUPBY_PART_CUT`] cuts `parts` partitions into for `blocks` blocks: each
/// partition's share of `blocks`, rounded (at most half a block over), and at least one.
pub const fn local_items(parts: usize, blocks: usize) -> usize {
    blocks + 2 * parts
}

/// Parameters of a partitioned group-by.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct PartParams {
    /// Device address of the `n` key words, sorted by their bits above `slot_bits` (every
    /// key below `2^(slot_bits + 16)`).
    pub keys: u64,
    /// Device address of the `n` payload words (see `rows`); unused without accumulators.
    pub payload: u64,
    /// With `rows` 1 or 2, the device address of each accumulator's value column.
    pub values: [u64; GROUPBY_MAX_AGGS],
    /// Each accumulator's [`code`](crate::ops::groupby::code).
    pub codes: [u32; GROUPBY_MAX_AGGS],
    /// Device address of the [`PartItem`]s, one per block.
    pub items: u64,
    /// Device address of each split partition's item count (`u32`), `splits` words, then
    /// one word with the number of split partitions the items use (at most `splits`):
    /// [`GROUPBY_PART_INIT`] fills only their tables.
    pub chunks: u64,
    /// Device address of each split partition's finished items (`u32`, zeroed).
    pub done: u64,
    /// Device address of the split partitions' counts: `splits * 2^slot_bits` `u32` words.
    pub split_counts: u64,
    /// Device address of the split partitions' accumulator words: `2^slot_bits` per
    /// accumulator per split partition, in that order ([`GROUPBY_PART_INIT`] fills them).
    pub split_acc: u64,
    /// With `tiles` not 0, device address of the runs [`GROUPBY_PART_LOCAL`] wrote: the word
    /// of partition `q` and tile `t` at `q * tiles + t` ([`local_run`]).
    pub runs: u64,
    /// Rows.
    pub n: u32,
    /// 0: the payload holds the value bits of a 32-bit column (every accumulator reads
    /// them); 1: the payload holds row ids, each accumulator reads its column there; 2: no
    /// payload, the rows are in input order and each accumulator reads its column at the row.
    pub rows: u32,
    /// Bits of the key below the partition's: a table has `2^slot_bits` slots (at most 12).
    pub slot_bits: u32,
    /// Split partitions.
    pub splits: u32,
    /// The least key: a row's partition and slot are those of `key - base`.
    pub base: u32,
    /// 0: the rows are sorted by partition and an item's `begin .. end` are rows. Else the
    /// rows are ordered by partition within each tile of [`LOCAL_TILE`] (`tiles` of them), an
    /// item's `begin .. end` are tiles, and `runs` says where each partition's rows are.
    pub tiles: u32,
    /// With `tiles` not 0: 0, an item's `part` indexes the runs; else its low `run_bits` bits
    /// do, the rows having been sorted by the partition's bits above those first. A tile
    /// where one value of those bits ends and the next begins then holds runs of both, and
    /// the aggregation skips the rows of a partition not the item's.
    pub run_bits: u32,
    /// Unused (no padding in the struct).
    pub reserved: u32,
}

/// Rows of a tile of [`GROUPBY_PART_LOCAL`].
pub const LOCAL_TILE: usize = 8192;

/// Most bits of a tile-local partition (partitions up to 128, runs of 64 rows on average).
pub const LOCAL_MAX_BITS: u32 = 7;

/// The run word of a partition in a tile: its first row in the tile (low 16 bits) and its
/// row count (high 16).
#[inline(always)]
pub const fn local_run(first: u32, rows: u32) -> u32 {
    first | rows << 16
}

/// Most slot bits a table takes.
pub const PART_MAX_SLOT_BITS: u32 = 12;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{LOCAL_TILE, PartItem, PartParams, WHOLE};
    use crate::arch::{
        Atomic, Shared, ballot, block_idx, fence_device, lane_id, lanemask_lt, load_relaxed_u32,
        load_relaxed_u64, popc, red_global, shfl_idx, sync_threads, thread_idx, warp_id,
    };
    use crate::ops::groupby::{
        ANY_CODE, RECORDS_HEADER, SharedTable, TableForm, record_words, red_acc,
    };

    /// Static shared memory of [`group_by_part`].
    #[derive(Clone, Copy)]
    pub struct PartShared {
        /// The table's fill word (unused: its slots are fixed).
        pub filled: Shared<u32>,
        /// `NT / 32 + 1` words: each warp's groups, then the item's.
        pub warp_groups: Shared<u32>,
        /// One word.
        pub slot: Shared<u32>,
    }

    /// Aggregates rows `row(j)` where `live[j]` into the table (every load issued before the
    /// first atomic).
    ///
    /// # Safety
    /// As for [`group_by_part`]; live rows are below `n`.
    #[inline(always)]
    unsafe fn part_rows<const IPT: usize, const A: usize>(
        p: &PartParams,
        codes: &[u32; A],
        table: &SharedTable,
        row: impl Fn(usize) -> usize,
        live: [bool; IPT],
        only: Option<u32>,
    ) {
        let mask = (1u32 << p.slot_bits) - 1;
        // SAFETY: live rows are below n.
        let k: [u32; IPT] = core::array::from_fn(|j| {
            if live[j] {
                unsafe { (p.keys as *const u32).add(row(j)).read() }
            } else {
                0
            }
        });
        let mut raw = [[0u64; IPT]; A];
        if A > 0 {
            // SAFETY: live rows are below n; the payload holds n words.
            let pay: [u32; IPT] = core::array::from_fn(|j| {
                if live[j] && p.rows != 2 {
                    unsafe { (p.payload as *const u32).add(row(j)).read() }
                } else {
                    0
                }
            });
            for a in 0..A {
                let wide =
                    codes[a] & crate::ops::groupby::code::TYPE == crate::ops::groupby::code::F64;
                for j in 0..IPT {
                    raw[a][j] = if !live[j] {
                        0
                    } else if p.rows == 0 {
                        pay[j] as u64
                    } else {
                        let at = if p.rows == 1 { pay[j] as usize } else { row(j) };
                        // SAFETY: row ids and rows are below n, the columns' length.
                        unsafe {
                            if wide {
                                (p.values[a] as *const u64).add(at).read()
                            } else {
                                (p.values[a] as *const u32).add(at).read() as u64
                            }
                        }
                    };
                }
            }
        }
        let spare = table.spare();
        let entry: [u32; IPT] = core::array::from_fn(|j| {
            let key = k[j].wrapping_sub(p.base);
            let mine = only.is_none_or(|part| key >> p.slot_bits == part);
            if live[j] && mine { key & mask } else { spare }
        });
        table.count(&entry);
        for a in 0..A {
            table.update(a, codes[a], &entry, &raw[a]);
        }
    }

    /// Aggregates partition `part`'s runs of tiles `begin .. end` (a tile-local
    /// partitioning): each warp takes every `NT / 32`-th tile's run (their run words loaded 32
    /// at a time), `32 * IPT` rows at a time, a lane's rows past the run's end not loaded (their
    /// atomics go to the lane's spare entry). `ONLY` (`p.run_bits` not 0): the runs are
    /// those of `part`'s low `p.run_bits` bits, and rows of another partition are skipped
    /// too; a parameter of the function, so that the other form's loop does not test rows.
    ///
    /// # Safety
    /// As for [`group_by_part`]; `begin <= end <= p.tiles`.
    #[inline(always)]
    unsafe fn part_runs<const NT: usize, const IPT: usize, const A: usize, const ONLY: bool>(
        p: &PartParams,
        codes: &[u32; A],
        table: &SharedTable,
        part: u32,
        begin: usize,
        end: usize,
    ) {
        let lane = lane_id() as usize;
        let (run, only) = if ONLY {
            (part & ((1 << p.run_bits) - 1), Some(part))
        } else {
            (part, None)
        };
        let runs = (p.runs as *const u32).wrapping_add(run as usize * p.tiles as usize);
        let warps = NT / 32;
        let mut t0 = begin + warp_id();
        while t0 < end {
            // Lane m holds the run word of the warp's m-th next tile: one load for 32 runs.
            let mine = t0 + lane * warps;
            // SAFETY: a run word of the partition, below `tiles`.
            let words = if mine < end {
                unsafe { runs.add(mine).read() }
            } else {
                0
            };
            let mut m = 0;
            while m < 32 && t0 + m * warps < end {
                let run = shfl_idx(words, m as u32);
                let first = (t0 + m * warps) * LOCAL_TILE + (run & 0xffff) as usize + lane;
                let rows = (run >> 16) as usize;
                // Every load of up to `32 * IPT` rows is issued before their atomics: a run
                // of about 128 rows costs one round trip to memory, not one per 32 rows.
                let mut at = 0;
                while at < rows {
                    let live = core::array::from_fn(|j| at + 32 * j + lane < rows);
                    // SAFETY: live rows are rows of the run, below n.
                    unsafe {
                        part_rows::<IPT, A>(p, codes, table, |j| first + at + 32 * j, live, only)
                    };
                    at += 32 * IPT;
                }
                m += 1;
            }
            t0 += 32 * warps;
        }
    }

    /// Writes the item's groups: each warp counts the occupied slots of its share, in slot
    /// order, the look-back places the item's groups after those of the items before it, and
    /// the warps write their records there. `count(s)` and `acc(a, s)` read slot `s`.
    ///
    /// # Safety
    /// As for [`group_by_part`].
    #[inline(always)]
    unsafe fn emit<const NT: usize, const A: usize>(
        p: &PartParams,
        item: usize,
        part: u32,
        status: *mut u64,
        records: *mut u64,
        sh: &PartShared,
        count: impl Fn(usize) -> u32,
        acc: impl Fn(usize, usize) -> u64,
    ) {
        const { assert!(NT % 32 == 0) };
        let warps = NT / 32;
        let slots = 1usize << p.slot_bits;
        let share = slots.div_ceil(warps).next_multiple_of(32);
        let (w, lane) = (warp_id(), lane_id() as usize);
        let first = w * share;
        let occupied = |s: usize| s < slots && count(s) != 0;
        let mut mine = 0u32;
        let mut r = 0;
        while r < share {
            mine += popc(ballot(occupied(first + r + lane)));
            r += 32;
        }
        if lane == 0 {
            // SAFETY: w < warps.
            unsafe { sh.warp_groups.write(w, mine) };
        }
        sync_threads();
        if thread_idx() == 0 {
            let mut run = 0u32;
            for i in 0..warps {
                // SAFETY: i < warps; the item's word at `warps`.
                unsafe {
                    let g = sh.warp_groups.read(i);
                    sh.warp_groups.write(i, run);
                    run += g;
                }
            }
            // SAFETY: as above.
            unsafe { sh.warp_groups.write(warps, run) };
        }
        sync_threads();
        // SAFETY: written before the barrier.
        let total = unsafe { sh.warp_groups.read(warps) };
        // SAFETY: one status word per item, zeroed; items start in index order.
        let base = unsafe { crate::block::block_tile_prefix(status, item, total, 0, sh.slot) };
        if thread_idx() == 0 && total > 0 {
            // SAFETY: the header's group count.
            unsafe { u64::atomic_add(records, total as u64) };
        }
        // SAFETY: written before the look-back's barrier.
        let mut rank = base + unsafe { sh.warp_groups.read(w) };
        let words = record_words(A);
        let mut r = 0;
        while r < share {
            let s = first + r + lane;
            let occ = occupied(s);
            let b = ballot(occ);
            if occ {
                let g = (rank + popc(b & lanemask_lt())) as usize;
                // SAFETY: the records hold a record for every group, g among them.
                unsafe {
                    let out = records.add(RECORDS_HEADER + g * words);
                    out.write(p.base.wrapping_add(part << p.slot_bits | s as u32) as u64);
                    out.add(1).write(count(s) as u64);
                    for a in 0..A {
                        out.add(2 + a).write(acc(a, s));
                    }
                }
            }
            rank += popc(b);
            r += 32;
        }
    }

    /// The partitioned group-by of the launch's items, one per block; `LOCAL`: of a tile-local
    /// partitioning (`p.tiles` not 0), whose items are tile ranges of a partition.
    ///
    /// # Safety
    /// `p` describes the sorted rows, one item per block (in partition order), the split
    /// partitions' tables (initialized) and counters (zeroed); `status` holds a zeroed status
    /// word per item; `records` a zeroed header and a record per group; the launch gives the
    /// table's dynamic shared memory (`shared_table_bytes(2^slot_bits, 1, A,
    /// TableForm::default())`).
    #[inline(always)]
    pub unsafe fn group_by_part<
        const NT: usize,
        const IPT: usize,
        const A: usize,
        const CODE: u32,
        const LOCAL: bool,
    >(
        p: &PartParams,
        status: *mut u64,
        records: *mut u64,
        sh: PartShared,
    ) {
        let codes: [u32; A] =
            core::array::from_fn(|a| if CODE == ANY_CODE { p.codes[a] } else { CODE });
        let item = block_idx();
        // SAFETY: one item per block.
        let it: PartItem = unsafe { (p.items as *const PartItem).add(item).read() };
        if it.part == super::NO_PART {
            // Padding after the items: no block waits on it.
            return;
        }
        let slots = 1u32 << p.slot_bits;
        let form = TableForm { dense: LOCAL };
        // SAFETY: the launch gives the table's memory (the tile-local form's without keys).
        let table = unsafe { SharedTable::new::<A>(slots, 1, form, 0, sh.filled) };
        table.clear::<NT, A>(&codes);
        let (mut start, end) = (it.begin as usize, it.end as usize);
        if LOCAL {
            // SAFETY: the item's tiles are below `tiles`.
            unsafe {
                if p.run_bits == 0 {
                    part_runs::<NT, IPT, A, false>(p, &codes, &table, it.part, start, end)
                } else {
                    part_runs::<NT, IPT, A, true>(p, &codes, &table, it.part, start, end)
                }
            };
        } else {
            let t = thread_idx();
            while start < end {
                let row = |j: usize| start + j * NT + t;
                let live = core::array::from_fn(|j| row(j) < end);
                // SAFETY: live rows are below end <= n.
                unsafe { part_rows::<IPT, A>(p, &codes, &table, row, live, None) };
                start += NT * IPT;
            }
        }
        sync_threads();
        let slots = slots as usize;
        if it.split == WHOLE {
            // SAFETY: forwarded contract.
            unsafe {
                emit::<NT, A>(
                    p,
                    item,
                    it.part,
                    status,
                    records,
                    &sh,
                    |s| table.count_of(s),
                    |a, s| table.acc_of(a, codes[a], s),
                )
            };
            return;
        }
        let split = it.split as usize;
        let counts = (p.split_counts as *mut u32).wrapping_add(split * slots);
        let acc = (p.split_acc as *mut u64).wrapping_add(split * A * slots);
        let mut s = thread_idx();
        while s < slots {
            let c = table.count_of(s);
            if c != 0 {
                // SAFETY: the split partition's table holds `slots` counts and words per
                // accumulator; every update is atomic.
                unsafe {
                    red_global::add_u32(counts.add(s), c);
                    for a in 0..A {
                        red_acc(
                            acc.add(a * slots + s),
                            codes[a],
                            table.acc_of(a, codes[a], s),
                        );
                    }
                }
            }
            s += NT;
        }
        // The merges are visible device-wide before this item counts as finished.
        fence_device();
        sync_threads();
        if thread_idx() == 0 {
            // SAFETY: the split partition's counters.
            let last = unsafe {
                let chunks = (p.chunks as *const u32).add(split).read();
                u32::atomic_add((p.done as *mut u32).add(split), 1) + 1 == chunks
            };
            // SAFETY: one word.
            unsafe { sh.slot.write(0, last as u32) };
        }
        sync_threads();
        // SAFETY: written before the barrier.
        let last = unsafe { sh.slot.read(0) } != 0;
        sync_threads();
        if !last {
            if thread_idx() == 0 {
                // SAFETY: one status word per item.
                unsafe { crate::block::block_tile_publish(status, item, 0, 0) };
            }
            return;
        }
        // Every other item's merges happened before its count, which this one has seen.
        fence_device();
        // SAFETY: forwarded contract; the split partition's table is complete.
        unsafe {
            emit::<NT, A>(
                p,
                item,
                it.part,
                status,
                records,
                &sh,
                |s| load_relaxed_u32(counts.add(s)),
                |a, s| load_relaxed_u64(acc.add(a * slots + s)),
            )
        };
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

/// The arguments of the partitioned group-by kernels: `(params, status, records)`.
pub type PartArgs = (*const PartParams, *mut u64, *mut u64);

macro_rules! part_kernels {
    // The sorted form's kernels: 256 threads of 8 rows.
    (sorted: $($spec:ident = $name:ident: $a:literal, $code:expr, MIN_BLOCKS = $mb:literal;)*) => {
        part_kernels! {$(
            $spec = $name: $a, $code, NT = 256, IPT = 8, MIN_BLOCKS = $mb, LOCAL = false;
        )*}
    };
    // The tile-local form's: `$mb` blocks per SM (see `LOCAL_PER_SM` and `TWO_PER_SM`), around
    // tables that share its shared memory.
    (local NT = $nt:literal, MIN_BLOCKS = $mb:literal:
        $($spec:ident = $name:ident: $a:literal, $code:expr;)*) => {
        part_kernels! {$(
            $spec = $name: $a, $code, NT = $nt, IPT = 4, MIN_BLOCKS = $mb, LOCAL = true;
        )*}
    };
    ($($spec:ident = $name:ident: $a:literal, $code:expr, NT = $nt:literal, IPT = $ipt:literal,
        MIN_BLOCKS = $mb:literal, LOCAL = $local:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = $nt, IPT = $ipt, MIN_BLOCKS = $mb](
                params: *const PartParams, status: *mut u64, records: *mut u64
            ) {
                let sh = PartShared {
                    filled: $crate::shared_array!(part_filled: [u32; 1]),
                    warp_groups: $crate::shared_array!(part_warp_groups: [u32; NT / 32 + 1]),
                    slot: $crate::shared_array!(part_slot: [u32; 1]),
                };
                // SAFETY: the host passes one parameter struct.
                let p = unsafe { params.read() };
                // SAFETY: the host sizes the launch, items, tables, status and records as
                // `group_by_part` asks.
                unsafe { group_by_part::<NT, IPT, $a, { $code }, $local>(&p, status, records, sh) }
            }
        }
    )*};
}

#[cfg(target_arch = "nvptx64")]
use crate::ops::groupby::{ANY_CODE, code};

part_kernels! {
    sorted:
    GROUPBY_PART_0 = groupby_part_0: 0, ANY_CODE, MIN_BLOCKS = 3;
    GROUPBY_PART_SUM_U32 = groupby_part_sum_u32: 1, code::SUM | code::U32, MIN_BLOCKS = 3;
    GROUPBY_PART_SUM_I32 = groupby_part_sum_i32: 1, code::SUM | code::I32, MIN_BLOCKS = 3;
    GROUPBY_PART_SUM_F32 = groupby_part_sum_f32: 1, code::SUM | code::F32, MIN_BLOCKS = 3;
    GROUPBY_PART_SUM_F64 = groupby_part_sum_f64: 1, code::SUM | code::F64, MIN_BLOCKS = 3;
    GROUPBY_PART_MIN_U32 = groupby_part_min_u32: 1, code::MIN | code::U32, MIN_BLOCKS = 3;
    GROUPBY_PART_MIN_I32 = groupby_part_min_i32: 1, code::MIN | code::I32, MIN_BLOCKS = 3;
    GROUPBY_PART_MIN_F32 = groupby_part_min_f32: 1, code::MIN | code::F32, MIN_BLOCKS = 3;
    GROUPBY_PART_MIN_F64 = groupby_part_min_f64: 1, code::MIN | code::F64, MIN_BLOCKS = 3;
    GROUPBY_PART_MAX_U32 = groupby_part_max_u32: 1, code::MAX | code::U32, MIN_BLOCKS = 3;
    GROUPBY_PART_MAX_I32 = groupby_part_max_i32: 1, code::MAX | code::I32, MIN_BLOCKS = 3;
    GROUPBY_PART_MAX_F32 = groupby_part_max_f32: 1, code::MAX | code::F32, MIN_BLOCKS = 3;
    GROUPBY_PART_MAX_F64 = groupby_part_max_f64: 1, code::MAX | code::F64, MIN_BLOCKS = 3;
    GROUPBY_PART_2 = groupby_part_2: 2, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_PART_3 = groupby_part_3: 3, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_PART_4 = groupby_part_4: 4, ANY_CODE, MIN_BLOCKS = 1;
}

// One level: one block of 1,024 threads per SM around a table that fills its shared memory
// (fewer partitions, longer runs; an item's phases are long enough not to need overlapping).
part_kernels! {
    local NT = 1024, MIN_BLOCKS = 1:
    GROUPBY_PART_LOCAL_0 = groupby_part_local_0: 0, ANY_CODE;
    GROUPBY_PART_LOCAL_SUM_U32 = groupby_part_local_sum_u32: 1, code::SUM | code::U32;
    GROUPBY_PART_LOCAL_1 = groupby_part_local_1: 1, ANY_CODE;
    GROUPBY_PART_LOCAL_2 = groupby_part_local_2: 2, ANY_CODE;
}

// Two levels: two blocks per SM around half tables. An item there is one partition of about
// a table's rows, so its phases (clear, runs, emit, look-back) are short; one block's memory
// phases overlap the other's instead of leaving the SM idle between them.
part_kernels! {
    local NT = 512, MIN_BLOCKS = 2:
    GROUPBY_PART_TWO_0 = groupby_part_two_0: 0, ANY_CODE;
    GROUPBY_PART_TWO_SUM_U32 = groupby_part_two_sum_u32: 1, code::SUM | code::U32;
    GROUPBY_PART_TWO_1 = groupby_part_two_1: 1, ANY_CODE;
    GROUPBY_PART_TWO_2 = groupby_part_two_2: 2, ANY_CODE;
}

/// Blocks per SM of the one-level tile-local kernels (`GROUPBY_PART_LOCAL_*`).
pub const LOCAL_PER_SM: usize = 1;

/// Blocks per SM of the two-level tile-local kernels (`GROUPBY_PART_TWO_*`).
pub const TWO_PER_SM: usize = 2;

/// The aggregation kernel of a tile-local partitioning with the accumulators whose codes are
/// `codes` (`None` past two accumulators), of one level or of two (`two`), and the blocks per
/// SM it is built for (its table a share of an SM's shared memory).
pub fn local_kernel(
    codes: &[u32],
    two: bool,
) -> Option<(crate::spec::KernelSpec<PartArgs>, usize)> {
    use crate::ops::groupby::code;
    let (family, per_sm) = if two {
        let two = [
            GROUPBY_PART_TWO_0,
            GROUPBY_PART_TWO_SUM_U32,
            GROUPBY_PART_TWO_1,
            GROUPBY_PART_TWO_2,
        ];
        (two, TWO_PER_SM)
    } else {
        let one = [
            GROUPBY_PART_LOCAL_0,
            GROUPBY_PART_LOCAL_SUM_U32,
            GROUPBY_PART_LOCAL_1,
            GROUPBY_PART_LOCAL_2,
        ];
        (one, LOCAL_PER_SM)
    };
    let i = match codes {
        [] => 0,
        [c] if *c == code::SUM | code::U32 => 1,
        [_] => 2,
        [_, _] => 3,
        _ => return None,
    };
    Some((family[i], per_sm))
}

/// Shared memory of [`GROUPBY_PART_LOCAL`].
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
pub struct LocalShared {
    /// Each partition's row count in the tile, then its cursor ([`LOCAL_BINS`] words).
    pub counts: crate::arch::Shared<u32>,
    /// The tile in partition order, keys then payload.
    pub tile: crate::arch::Shared<u32>,
}

/// Most partitions of a tile-local partitioning: `2^LOCAL_MAX_BITS`.
pub const LOCAL_BINS: usize = 1 << LOCAL_MAX_BITS;

/// Copies of the partitions' totals [`GROUPBY_PART_LOCAL`] adds to (tile `t` to copy
/// `t % LOCAL_TOTAL_COPIES`), so that the tiles' adds do not queue on one word per partition.
pub const LOCAL_TOTAL_COPIES: usize = 32;

/// Orders one tile of rows by partition, in place: keys (and payload) from `keys_in` /
/// `pay_in` to the same tile of `keys_out` / `pay_out`, and the tile's run word of each
/// partition into `runs` (see [`PartParams::runs`]), each partition's row count added to its
/// word of the tile's copy of `totals` (`LOCAL_TOTAL_COPIES` copies of `2^bits` words). A
/// row's partition is `(key - base) >> shift` in `bits` bits (at most [`LOCAL_MAX_BITS`]);
/// a key outside that range (`key - base` of more than `shift + bits` bits: the range was a
/// sample's) sets the word after the totals, and [`GROUPBY_PART_CUT`] then cuts no items.
/// With `wrap`, a row's partition is the low `bits` bits of `(key - base) >> shift` and no
/// key is outside (the rows were sorted by the bits above first).
/// `payload`: 0 none, 1 the column `pay_in`, 2 each row's index.
///
/// The order within a partition's run is that of shared-memory atomics (the aggregation does
/// not need the rows' order): a count per row, a scan of the counts, and a place per row taken
/// from its partition's cursor.
///
/// # Safety
/// One block per tile of `n` rows; the columns hold `n` rows; `runs` holds `2^bits * tiles`
/// words, `totals` `LOCAL_TOTAL_COPIES * 2^bits + 1`; `shift + bits < 32`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn part_local<const NT: usize, const IPT: usize, const FULL: bool>(
    io: (*const u32, *const u32, *mut u32, *mut u32),
    n: usize,
    base: u32,
    shift: u32,
    bits: u32,
    wrap: bool,
    payload: u32,
    runs: *mut u32,
    totals: *mut u32,
    sh: LocalShared,
) {
    use crate::arch::{
        Atomic, ballot, block_idx, lane_id, sync_threads, thread_idx, warp_id, warp_inclusive_sum,
    };
    use crate::block::{block_load_warp_striped, warp_striped_count, warp_striped_offset};
    const { assert!(NT * IPT == LOCAL_TILE && NT >= LOCAL_BINS && LOCAL_BINS == 4 * 32) };
    let (keys_in, pay_in, keys_out, pay_out) = io;
    let (tile, t) = (block_idx(), thread_idx());
    let start = tile * LOCAL_TILE;
    let valid = if FULL { LOCAL_TILE } else { n - start };
    if t < LOCAL_BINS {
        // SAFETY: t < LOCAL_BINS.
        unsafe { sh.counts.write(t, 0) };
    }
    // SAFETY: the tile lies within the columns.
    let keys = unsafe { block_load_warp_striped::<u32, NT, IPT>(keys_in.add(start), valid, 0) };
    let mine = if FULL {
        IPT
    } else {
        warp_striped_count::<IPT>(t, valid)
    };
    let mask = (1u32 << bits) - 1;
    let digit = |k: usize| ((keys[k].wrapping_sub(base) >> shift) & mask) as usize;
    // Every key tested (no early exit, so that the loop unrolls over registers).
    let mut outside = false;
    for (k, &key) in keys.iter().enumerate() {
        outside |= !wrap && k < mine && key.wrapping_sub(base) >> (shift + bits) != 0;
    }
    if ballot(outside) != 0 && lane_id() == 0 {
        // SAFETY: the word after the totals.
        unsafe { u32::atomic_max(totals.add(LOCAL_TOTAL_COPIES << bits), 1) };
    }
    sync_threads();
    for k in 0..IPT {
        if k < mine {
            // SAFETY: digits are below 2^bits <= LOCAL_BINS.
            unsafe { sh.counts.atomic_add(digit(k), 1) };
        }
    }
    sync_threads();
    if warp_id() == 0 {
        // Lane l scans partitions 4 l .. 4 l + 4, and turns each count into its cursor.
        let l = lane_id() as usize;
        // SAFETY: 4 * 32 words, written before the barrier.
        let c: [u32; 4] = core::array::from_fn(|j| unsafe { sh.counts.read(4 * l + j) });
        let sum = c[0] + c[1] + c[2] + c[3];
        let mut at = warp_inclusive_sum(sum) - sum;
        let tiles = n.div_ceil(LOCAL_TILE);
        let copy = totals.wrapping_add((tile % LOCAL_TOTAL_COPIES) << bits);
        for (j, &c) in c.iter().enumerate() {
            let d = 4 * l + j;
            if d <= mask as usize {
                // SAFETY: one run word per partition and tile, one total per partition.
                unsafe {
                    runs.add(d * tiles + tile).write(local_run(at, c));
                    if c != 0 {
                        u32::atomic_add(copy.add(d), c);
                    }
                }
            }
            // SAFETY: d < LOCAL_BINS; warp 0 alone between the barriers.
            unsafe { sh.counts.write(d, at) };
            at += c;
        }
    }
    sync_threads();
    let places: [u32; IPT] = core::array::from_fn(|k| {
        if k < mine {
            // SAFETY: the partition's cursor; its places are below its start plus its count.
            unsafe {
                let at = sh.counts.atomic_add(digit(k), 1);
                sh.tile.write(at as usize, keys[k]);
                at
            }
        } else {
            0
        }
    });
    let write_out = |out: *mut u32| {
        sync_threads();
        for k in 0..IPT {
            let i = k * NT + t;
            if FULL || i < valid {
                // SAFETY: written before the barrier; the tile's row i is within the column.
                unsafe { out.add(start + i).write(sh.tile.read(i)) };
            }
        }
    };
    write_out(keys_out);
    if payload != 0 {
        // Loaded only now, so that the keys' phase holds fewer registers.
        let vals: [u32; IPT] = if payload == 1 {
            // SAFETY: as for the keys.
            unsafe { block_load_warp_striped::<u32, NT, IPT>(pay_in.add(start), valid, 0) }
        } else {
            core::array::from_fn(|k| (start + warp_striped_offset::<IPT>(t, k)) as u32)
        };
        sync_threads(); // every key has left the staging area
        for k in 0..IPT {
            if k < mine {
                // SAFETY: the row's place, below the tile's rows.
                unsafe { sh.tile.write(places[k] as usize, vals[k]) };
            }
        }
        write_out(pay_out);
    }
}

crate::kernel! {
    /// One tile of a tile-local partitioning (see [`part_local`]).
    GROUPBY_PART_LOCAL = groupby_part_local[NT = 512, IPT = 16, MIN_BLOCKS = 2](
        keys_in: *const u32,
        pay_in: *const u32,
        keys_out: *mut u32,
        pay_out: *mut u32,
        n: u32,
        base: u32,
        shift: u32,
        bits: u32,
        wrap: u32,
        payload: u32,
        runs: *mut u32,
        totals: *mut u32
    ) {
        let sh = LocalShared {
            counts: crate::shared_array!(local_counts: [u32; LOCAL_BINS]),
            tile: crate::shared_array!(local_tile: [u32; NT * IPT]),
        };
        let n = n as usize;
        let io = (keys_in, pay_in, keys_out, pay_out);
        let wrap = wrap != 0;
        let full = (crate::arch::block_idx() + 1) * NT * IPT <= n;
        // SAFETY: the host launches one block per tile and sizes the buffers as `part_local`
        // asks.
        unsafe {
            if full {
                part_local::<NT, IPT, true>(io, n, base, shift, bits, wrap, payload, runs, totals, sh)
            } else {
                part_local::<NT, IPT, false>(io, n, base, shift, bits, wrap, payload, runs, totals, sh)
            }
        }
    }
}

crate::kernel! {
    /// Cuts the partitions of a tile-local partitioning into items, as `Work::cut_local` does
    /// on the host, so that the aggregation is queued without a round trip: partition `q`'s
    /// rows are the sum of its words in the `LOCAL_TOTAL_COPIES` copies of `totals` (`parts`
    /// words each, then the word a key outside the range sets); its share of `blocks` blocks,
    /// `rows * blocks / n` rounded, clamped to `1 ..= tiles` (none for no rows), is its count
    /// of items of even tile ranges, in partition order. A split partition (more than one
    /// item) gets the next index among them and its item count in `chunks`, whose word
    /// `parts` gets the number of split partitions. The items after
    /// the last, up to `most` ([`local_items`]), are padding ([`NO_PART`]). A key outside the
    /// range sets the records' second header word and leaves every item padding.
    ///
    /// One block; `parts <= NT`, `n > 0`; `items` holds `most` items (four words each),
    /// `chunks` `parts + 1` words.
    GROUPBY_PART_CUT = groupby_part_cut[NT = 128, IPT = 1](
        totals: *const u32,
        parts: u32,
        tiles: u32,
        n: u32,
        blocks: u32,
        items: *mut u32,
        most: u32,
        chunks: *mut u32,
        records: *mut u64
    ) {
        use crate::block::{ANY_SCAN_WORDS, block_exclusive_sum_any};
        const { assert!(NT >= LOCAL_BINS) };
        let q = crate::arch::thread_idx();
        let (parts, items) = (parts as usize, items.cast::<PartItem>());
        // SAFETY: the word after the copies.
        let outside = unsafe { totals.add(LOCAL_TOTAL_COPIES * parts).read() } != 0;
        let mut rows = 0u64;
        if q < parts && !outside {
            for c in 0..LOCAL_TOTAL_COPIES {
                // SAFETY: copy c's word of partition q.
                rows += unsafe { totals.add(c * parts + q).read() } as u64;
            }
        }
        // Neither a division by 0 nor a clamp's panic on the device (n > 0, tiles > 0).
        let n = (n as u64).max(1);
        let share = (rows * blocks as u64 + n / 2) / n;
        let pieces = if rows == 0 {
            0
        } else {
            share.min(tiles as u64).max(1) as u32
        };
        let temp = crate::shared_array!(cut_scan: [u32; ANY_SCAN_WORDS]);
        let (first, total) = block_exclusive_sum_any(pieces, temp);
        crate::arch::sync_threads();
        let (split, used) = block_exclusive_sum_any((pieces > 1) as u32, temp);
        let most = most as usize;
        if pieces > 1 {
            // SAFETY: fewer split partitions than partitions.
            unsafe { chunks.add(split as usize).write(pieces) };
        }
        if q == 0 {
            // SAFETY: the word after the `parts` counts.
            unsafe { chunks.add(parts).write(used) };
        }
        let each = tiles.div_ceil(pieces.max(1));
        for i in 0..pieces {
            let at = (first + i) as usize;
            if at < most {
                let item = PartItem {
                    begin: (i * each).min(tiles),
                    end: ((i + 1) * each).min(tiles),
                    part: q as u32,
                    split: if pieces == 1 { WHOLE } else { split },
                };
                // SAFETY: at < most, the items' length.
                unsafe { items.add(at).write(item) };
            }
        }
        let mut at = total as usize + q;
        while at < most {
            let pad = PartItem {
                begin: 0,
                end: 0,
                part: NO_PART,
                split: WHOLE,
            };
            // SAFETY: at < most.
            unsafe { items.add(at).write(pad) };
            at += NT;
        }
        if q == 0 && outside {
            // SAFETY: the records' header.
            unsafe { records.add(crate::ops::groupby::HEAD_RETRY).write(1) };
        }
    }
}

/// Bits of the partitions [`GROUPBY_PART_HIST`] counts: two 8-bit radix digits above a
/// sorted-form table, or a radix digit above the bits of a tile-local partitioning.
pub const HIST_JOINT_BITS: u32 = 15;

/// Words of [`GROUPBY_PART_HIST`]'s output: a count per partition, then the count of the keys
/// past them.
pub const HIST_JOINT_WORDS: usize = (1 << HIST_JOINT_BITS) + 1;

/// Dynamic shared memory of [`GROUPBY_PART_HIST`]: a word per partition.
pub const HIST_JOINT_SHARED: usize = 4 << HIST_JOINT_BITS;

crate::kernel! {
    /// Each partition's row count, the partition of a key `(key - base) >> shift`, for the
    /// first `2^HIST_JOINT_BITS` partitions, into `bins`, then the count of the keys past
    /// them into `bins[2^HIST_JOINT_BITS]`. One shared-memory atomic per key, where counting
    /// two 8-bit digits apart takes two; every digit's histogram is a sum of these counts.
    ///
    /// `bins` zeroed, [`HIST_JOINT_WORDS`] words; [`HIST_JOINT_SHARED`] bytes of dynamic
    /// shared memory; `shift < 32`; the keys' start 16-byte aligned. Any grid size.
    GROUPBY_PART_HIST = groupby_part_hist[NT = 1024, IPT = 16](
        keys: *const u32,
        n: u32,
        base: u32,
        shift: u32,
        bins: *mut u32
    ) {
        use crate::arch::{Atomic, lane_id, red_global, sync_threads, thread_idx, warp_reduce};
        use crate::block::grid_for_each;
        const BINS: usize = 1 << HIST_JOINT_BITS;
        // SAFETY: the host gives HIST_JOINT_SHARED bytes.
        let sh = unsafe { crate::arch::dynamic_shared::<u32>(BINS) };
        let t = thread_idx();
        let mut i = t;
        while i < BINS {
            // SAFETY: i < BINS.
            unsafe { sh.write(i, 0) };
            i += NT;
        }
        sync_threads();
        let mut outside = 0u32;
        // SAFETY: `n` keys, whose start is 16-byte aligned.
        unsafe {
            grid_for_each::<u32, NT, IPT>(keys, n as usize, |v| {
                let bin = (v.wrapping_sub(base) >> shift) as usize;
                if bin < BINS {
                    // SAFETY: bin < BINS.
                    sh.atomic_add(bin, 1);
                } else {
                    outside += 1;
                }
            })
        };
        sync_threads();
        let mut i = t;
        while i < BINS {
            // SAFETY: i < BINS, in both.
            unsafe {
                let c = sh.read(i);
                if c != 0 {
                    red_global::add_u32(bins.add(i), c);
                }
            }
            i += NT;
        }
        let outside = warp_reduce(outside, |a, b| a + b);
        if lane_id() == 0 && outside != 0 {
            // SAFETY: the word after the partitions'.
            unsafe { u32::atomic_add(bins.add(BINS), outside) };
        }
    }
}

crate::kernel! {
    /// The least and the greatest of `n` keys into `out[0]` and `out[1]` (which the host sets
    /// to `u32::MAX` and 0). Any grid size.
    GROUPBY_PART_RANGE = groupby_part_range[NT = 256, IPT = 16](keys: *const u32, n: u32, out: *mut u32) {
        use crate::arch::{Atomic, lane_id, warp_reduce};
        use crate::block::grid_for_each;
        let (mut lo, mut hi) = (u32::MAX, 0u32);
        // SAFETY: `n` keys, whose start is 16-byte aligned.
        unsafe {
            grid_for_each::<u32, NT, IPT>(keys, n as usize, |v| {
                lo = lo.min(v);
                hi = hi.max(v);
            })
        };
        lo = warp_reduce(lo, |a, b| a.min(b));
        hi = warp_reduce(hi, |a, b| a.max(b));
        if lane_id() == 0 && lo <= hi {
            // SAFETY: out holds two words.
            unsafe {
                u32::atomic_min(out, lo);
                u32::atomic_max(out.add(1), hi);
            }
        }
    }
}

/// The single-accumulator partitioned kernels, indexed by the accumulator's
/// [`code`](crate::ops::groupby::code) (`op | type`).
pub const GROUPBY_PART_ONE: [crate::spec::KernelSpec<PartArgs>; 12] = [
    GROUPBY_PART_SUM_U32,
    GROUPBY_PART_SUM_I32,
    GROUPBY_PART_SUM_F32,
    GROUPBY_PART_SUM_F64,
    GROUPBY_PART_MIN_U32,
    GROUPBY_PART_MIN_I32,
    GROUPBY_PART_MIN_F32,
    GROUPBY_PART_MIN_F64,
    GROUPBY_PART_MAX_U32,
    GROUPBY_PART_MAX_I32,
    GROUPBY_PART_MAX_F32,
    GROUPBY_PART_MAX_F64,
];

crate::kernel! {
    /// Each partition's first row: `starts[q]` is the first of the `n` keys (sorted by their
    /// bits from `shift` up) whose bits from `shift` up are at least `q`, for `q` in
    /// `0 ..= parts`. One binary search per partition.
    GROUPBY_PART_BOUNDS = groupby_part_bounds[NT = 256, IPT = 1](
        keys: *const u32, n: u32, shift: u32, parts: u32, starts: *mut u32
    ) {
        let mut q = crate::arch::global_idx();
        while q <= parts as usize {
            let (mut lo, mut hi) = (0usize, n as usize);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                // SAFETY: mid < hi <= n.
                if ((unsafe { keys.add(mid).read() } >> shift) as usize) < q {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            // SAFETY: `starts` holds `parts + 1` words.
            unsafe { starts.add(q).write(lo as u32) };
            q += crate::arch::grid_dim() * NT;
        }
    }
}

crate::kernel! {
    /// Empties the tables of the split partitions the items use (the word after the
    /// `splits` chunk counts says how many): counts 0, each of the `aggs` accumulators' words
    /// its starting word.
    GROUPBY_PART_INIT = groupby_part_init[NT = 256, IPT = 1](params: *const PartParams, aggs: u32) {
        // SAFETY: one parameter struct, aligned, not written while the kernel runs. Read
        // through a reference: a copy lowers to a byte loop into local memory.
        let p = unsafe { &*params };
        let slots = 1usize << p.slot_bits;
        // SAFETY: the chunk counts are followed by the number of split partitions used.
        let used = unsafe { (p.chunks as *const u32).add(p.splits as usize).read() };
        let (aggs, len) = (aggs as usize, used.min(p.splits) as usize * slots);
        let mut i = crate::arch::global_idx();
        while i < len {
            // Shifts, not a 64-bit division by a value the compiler does not know.
            let (split, s) = (i >> p.slot_bits, i & (slots - 1));
            // SAFETY: the tables hold `len` counts and `aggs * len` words.
            unsafe {
                (p.split_counts as *mut u32).add(i).write(0);
                for (a, &c) in p.codes.iter().enumerate().take(aggs) {
                    let at = (split * aggs + a) * slots + s;
                    (p.split_acc as *mut u64).add(at).write(crate::ops::groupby::acc_init(c));
                }
            }
            i += crate::arch::grid_dim() * NT;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_kernels_by_accumulators_and_level() {
        use crate::ops::groupby::code;
        let sum = code::SUM | code::U32;
        let max = code::MAX | code::F64;
        let name = |codes: &[u32], two| local_kernel(codes, two).map(|(k, s)| (k.name(), s));
        assert_eq!(
            name(&[], false),
            Some(("groupby_part_local_0", LOCAL_PER_SM))
        );
        assert_eq!(name(&[sum], false), Some(("groupby_part_local_sum_u32", 1)));
        assert_eq!(name(&[max], false), Some(("groupby_part_local_1", 1)));
        assert_eq!(
            name(&[sum, max], true),
            Some(("groupby_part_two_2", TWO_PER_SM))
        );
        assert_eq!(name(&[sum], true), Some(("groupby_part_two_sum_u32", 2)));
        assert_eq!(name(&[sum; 3], false), None);
        assert_eq!(name(&[sum; 3], true), None);
    }

    #[test]
    fn params_have_no_padding() {
        assert_eq!(size_of::<PartItem>(), 16);
        assert_eq!(
            size_of::<PartParams>(),
            8 * 2 + 8 * GROUPBY_MAX_AGGS + 4 * GROUPBY_MAX_AGGS + 8 * 6 + 4 * 8
        );
    }
}
