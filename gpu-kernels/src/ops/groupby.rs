//! Hash group-by (issue 22): one 32-bit key column, a count per group and up to
//! [`GROUPBY_MAX_AGGS`] accumulators, each a sum, min or max of a value column.
//!
//! The groups live in an open-addressing table in global memory (keys, counts, one 64-bit
//! accumulator word per aggregate; [`crate::hash::home_slot`] and linear probing). With
//! `shared_slots > 0` each block first aggregates into a table of its own in shared memory and
//! merges that table into the global one once, at its end: a row then costs shared-memory
//! atomics only, and the global table sees one update per group per block. A hashed shared
//! table stops taking new keys at three quarters full; a dense one ([`TableForm::dense`]) has
//! a slot for every key of a range the sample saw. Rows of keys a shared table does not hold
//! update the global table directly, so any group count is correct, only slower. Rows of a
//! key the sample saw on many rows ([`hot_key`]) add up in each thread's registers, merged
//! once per block, so that they do not serialize on one slot's words.
//!
//! Accumulators are 64-bit words in a form on which every merge is one 64-bit atomic:
//! integer sums as `u64` (an `i32` sign-extended: the wrapping sum is the `i64` sum), float
//! sums as `f64`, minima and maxima as the order-preserving bits of [`ordered32`] /
//! [`ordered_f64`] (for 32-bit types a minimum's high word is all ones, so that words of every
//! origin compare by their low word). In shared memory a 64-bit integer sum is two 32-bit
//! words, the carry of the low word's atomic added to the high word: 64-bit shared-memory
//! adds fall far behind 32-bit ones where many rows hit one word (issue 22's anchors; figures
//! in docs/perf-log.md).
//!
//! The key `u32::MAX` ([`EMPTY_KEY`](crate::hash::EMPTY_KEY), which marks an empty slot) has
//! a slot of its own past the table's last, in both tables.
#[cfg(target_arch = "nvptx64")]
use crate::hash::EMPTY_KEY;

/// Rows the group-count estimate samples, spread evenly ([`GROUPBY_SAMPLE`]).
pub const GROUPBY_SAMPLES: usize = 4096;

/// Most accumulators (besides the count, which every grouping keeps) one launch computes.
pub const GROUPBY_MAX_AGGS: usize = 4;

/// Accumulator codes: an operation plus the value column's type.
pub mod code {
    /// `u32` values.
    pub const U32: u32 = 0;
    /// `i32` values.
    pub const I32: u32 = 1;
    /// `f32` values.
    pub const F32: u32 = 2;
    /// `f64` values.
    pub const F64: u32 = 3;
    /// Mask of the type in a code.
    pub const TYPE: u32 = 3;
    /// Sum (64-bit integer or `f64`).
    pub const SUM: u32 = 0;
    /// Minimum.
    pub const MIN: u32 = 4;
    /// Maximum.
    pub const MAX: u32 = 8;
    /// Mask of the operation in a code.
    pub const OP: u32 = 12;
}

/// Parameters of a hash group-by launch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct GroupByParams {
    /// Device address of the `n` key words (`u32`, or `i32` bits).
    pub keys: u64,
    /// Device address of each accumulator's value column.
    pub values: [u64; GROUPBY_MAX_AGGS],
    /// Each accumulator's [`code`].
    pub codes: [u32; GROUPBY_MAX_AGGS],
    /// Rows.
    pub n: u32,
    /// Slots of each block's shared table (0: no shared table); the launch gives
    /// [`shared_table_bytes`] of dynamic shared memory.
    pub shared_slots: u32,
    /// Copies of each shared slot's count and accumulators: 1, or [`LANE_COPIES`] (one per
    /// lane, so that lanes adding to the same few groups do not serialize).
    pub shared_copies: u32,
    /// Nonzero ([`QUICK_FIRST`] or [`QUICK_WIDE`]): the launch follows [`GROUPBY_SAMPLE`]
    /// without the host's look at its words. The kernel reads them in the state words
    /// ([`STATE_SAMPLE`]) and takes its shared table from [`quick_plan`] (`QUICK_FIRST`) or
    /// [`wide_plan`] (`QUICK_WIDE`) and its hot key from [`hot_key`] instead of
    /// `shared_slots`, `shared_copies`, `dense` and `hot`; where that plan is none, every
    /// block returns at once (the table stays empty).
    pub quick: u32,
    /// Slots of the global table (its arrays hold one more, the slot of [`EMPTY_KEY`](crate::hash::EMPTY_KEY)).
    pub global_slots: u32,
    /// Most keys the global table takes before it reports an overflow.
    pub global_limit: u32,
    /// The bits that make the key words sort as `u32` (`0x8000_0000` for `i32` keys): the
    /// sample's range and a dense table's base are in that order.
    pub key_xor: u32,
    /// Nonzero: the shared table is dense ([`TableForm::dense`]), slot `s` holding the key
    /// word `dense_base + s`.
    pub dense: u32,
    /// See [`GroupByParams::dense`].
    pub dense_base: u32,
    /// Nonzero: rows of the key `hot_key` ([`hot_key`]) add up in each thread's registers
    /// instead of the tables, merged once per block at the end.
    pub hot: u32,
    /// See [`GroupByParams::hot`].
    pub hot_key: u32,
    /// Nonzero: full tiles come through [`HASH_STAGES`] buffers in shared memory
    /// ([`hash_stage_bytes`] each) from this byte offset of the dynamic shared memory, after
    /// the shared table; the key and value columns are 16-byte aligned. Read by the
    /// [`GROUPBY_HASH_WIDE`] kernels of one to four accumulators, ignored where an
    /// accumulator's values are `f64`. Under [`QUICK_WIDE`] the kernel places them itself
    /// ([`stage_offset`], in `wide.smem`): nonzero then only says that they may be staged.
    pub stage_at: u32,
    /// What a [`QUICK_WIDE`] launch plans in.
    pub wide: WideAttempt,
}

/// [`GroupByParams::quick`] of the first launch after the sample: the kernel that takes
/// small shared tables ([`quick_plan`]).
pub const QUICK_FIRST: u32 = 1;

/// [`GroupByParams::quick`] of the second launch after the sample, queued after the
/// [`QUICK_FIRST`] one on the same global table and state: a [`GROUPBY_HASH_WIDE`] kernel
/// that takes a dense table too large for the first ([`wide_plan`]).
pub const QUICK_WIDE: u32 = 2;

/// The second launch after a sample ([`QUICK_WIDE`]), in both launches' parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct WideAttempt {
    /// Dynamic shared memory its launch gives each block.
    pub smem: u32,
    /// Fewest bytes of the dense table it takes ([`wide_plan`]).
    pub min_bytes: u32,
    /// Blocks of its launch that each leave their table in a partial table at `partials`
    /// (blocks past them merge theirs into the global table).
    pub blocks: u32,
    /// Bytes from one block's partial table to the next (a multiple of 16).
    pub stride: u32,
    /// Device address of `blocks` partial tables of `stride` bytes ([`partial_bytes`] of
    /// them taken), which [`GROUPBY_FOLD`] folds into the global table after the launch; 0:
    /// every block merges its table into the global one itself.
    pub partials: u64,
}

/// Bytes of a block's partial table ([`WideAttempt::partials`]) for a dense table of `slots`
/// slots and `aggs` accumulators: each accumulator's `slots + 1` words (the last of the
/// [`EMPTY_KEY`](crate::hash::EMPTY_KEY) slot), then the `slots + 1` counts.
pub const fn partial_bytes(slots: u32, aggs: usize) -> usize {
    (slots as usize + 1) * (8 * aggs + 4)
}

/// Whether the blocks of a launch of `p` with the dense or hashed `plan` for `aggs`
/// accumulators leave their tables in partial tables ([`WideAttempt::partials`]) for
/// [`GROUPBY_FOLD`]: a [`QUICK_WIDE`] launch given them, a dense plan, and a partial table
/// that fits its stride. The wide kernel and the fold both ask it, so the fold reads only
/// tables that the launch's blocks wrote (those below [`WideAttempt::blocks`]).
pub fn takes_partials(p: &GroupByParams, plan: &SharedPlan, aggs: usize) -> bool {
    p.quick == QUICK_WIDE
        && p.wide.partials != 0
        && plan.dense_base.is_some()
        && partial_bytes(plan.slots, aggs) <= p.wide.stride as usize
}

/// State words of a launch: distinct keys inserted into the global table, whether a key
/// found it full (the host then runs again with a larger table), and the
/// [`SAMPLE_WORDS`] of [`GROUPBY_SAMPLE`] where it wrote them there.
pub const STATE_DISTINCT: usize = 0;
/// See [`STATE_DISTINCT`].
pub const STATE_OVERFLOW: usize = 1;
/// See [`STATE_DISTINCT`]: [`SAMPLE_WORDS`] words.
pub const STATE_SAMPLE: usize = 2;
/// Words of a launch's state.
pub const STATE_WORDS: usize = STATE_SAMPLE + SAMPLE_WORDS;

/// Words [`GROUPBY_SAMPLE`] writes: the distinct keys among the sampled rows, those seen
/// once and twice; the smallest and largest sampled key (in the order of `key ^ key_xor`,
/// leaving out the key `u32::MAX`, which has a slot of its own; the smallest above the
/// largest where no other key was sampled); and the most frequent sampled key and its rows.
pub const SAMPLE_WORDS: usize = 7;
const _: () = assert!(SAMPLE_WORDS < crate::spec::HOST_WORDS);

/// A sampled key on at least one in this many of the sampled rows is hot ([`hot_key`]).
pub const HOT_SHARE: u32 = 8;

/// The key whose rows a grouping adds up in registers, from a sample's [`SAMPLE_WORDS`] `c`
/// over `n` rows: the most frequent sampled key, where it holds at least one in
/// [`HOT_SHARE`] of the sampled rows (and two). Such a key's rows would otherwise meet on one
/// slot's words, a warp's lanes serializing there. The hash kernel takes none with a tiny
/// table ([`LANE_COPIES`]), whose copies per lane keep a few keys' rows apart already.
pub const fn hot_key(c: [u32; SAMPLE_WORDS], n: u32) -> Option<u32> {
    let samples = if n < GROUPBY_SAMPLES as u32 {
        n
    } else {
        GROUPBY_SAMPLES as u32
    };
    if c[6] >= 2 && c[6] as u64 * HOT_SHARE as u64 >= samples as u64 {
        Some(c[5])
    } else {
        None
    }
}

/// Bytes at the start of a shared table's memory that the end of a hash launch reuses to
/// add up each warp's hot-key rows (up to 32 warps, a count and `aggs` words each).
pub const fn hot_scratch_bytes(aggs: usize) -> usize {
    32 * 8 * (1 + aggs)
}

/// Most estimated groups given a tiny shared table of [`TINY_SLOTS`] slots with a copy of
/// its counts and accumulators per lane: lanes adding to the same few groups then touch
/// different words instead of serializing on one.
pub const TINY_GROUPS: u32 = 24;

/// Slots of a tiny shared table (its limit twice [`TINY_GROUPS`]).
pub const TINY_SLOTS: u32 = 64;

/// Fewest slots of a shared table: its limit leaves at least one slot per thread of a
/// block empty, so that no walk runs the table round.
pub const MIN_SHARED_SLOTS: u32 = 2048;

/// Most distinct keys, and most of them seen once, in a full sample ([`GROUPBY_SAMPLES`]
/// rows) for which [`quick_plan`] gives the [`MIN_SHARED_SLOTS`] table: even Chao's bound
/// for a skewed sample then stays below 650 groups, half that table's limit.
pub const QUICK_MAX_DISTINCT: u32 = 512;
/// See [`QUICK_MAX_DISTINCT`].
pub const QUICK_MAX_ONCE: u32 = 16;

/// A block's shared table as a plan gives it: slots, copies of each slot's words, and the
/// dense table's base key word (`None`: hashed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPlan {
    /// Slots (the key `u32::MAX` has one more).
    pub slots: u32,
    /// 1, or [`LANE_COPIES`].
    pub copies: u32,
    /// `Some(base)`: a dense table, slot `s` for the key word `base + s` (wrapping).
    pub dense_base: Option<u32>,
}

/// The dense table that a sample whose keys (as `key ^ key_xor`) run from `lo` to `hi`
/// calls for: its base in that order and its slots, with a sixteenth of the range (and at
/// least 16 keys) to spare on either side for keys the sample missed. `None` for an empty
/// range (`lo > hi`).
pub const fn dense_range(lo: u32, hi: u32) -> Option<(u32, u64)> {
    if lo > hi {
        return None;
    }
    let span = (hi - lo) as u64 + 1;
    let slack = span / 16 + 16;
    let base = (lo as u64).saturating_sub(slack);
    let top = if hi as u64 + slack > u32::MAX as u64 - 1 {
        u32::MAX as u64 - 1
    } else {
        hi as u64 + slack
    };
    Some((base as u32, (top - base + 1).next_multiple_of(32)))
}

/// The dense table of [`dense_range`] for sampled keys (as `key ^ key_xor`) from `lo` to
/// `hi`, its base as a key word, where it fits `max_bytes` of shared memory with `aggs`
/// accumulators.
pub const fn dense_plan(
    lo: u32,
    hi: u32,
    key_xor: u32,
    aggs: usize,
    max_bytes: usize,
) -> Option<SharedPlan> {
    let Some((base, slots)) = dense_range(lo, hi) else {
        return None;
    };
    let form = TableForm { dense: true };
    if slots <= u32::MAX as u64 && shared_table_bytes(slots as u32, 1, aggs, form) <= max_bytes {
        Some(SharedPlan {
            slots: slots as u32,
            copies: 1,
            dense_base: Some(base ^ key_xor),
        })
    } else {
        None
    }
}

/// Dynamic shared memory the launch that follows the sample unseen gives each block for
/// `aggs` accumulators: room for the tiny table, the [`MIN_SHARED_SLOTS`] table and 40 KiB
/// (for a dense table of about 3,000 keys with one accumulator; three blocks of 512 threads
/// still fit an SM).
pub const fn quick_smem(aggs: usize) -> usize {
    let hashed = TableForm { dense: false };
    let a = shared_table_bytes(TINY_SLOTS, LANE_COPIES, aggs, hashed);
    let b = shared_table_bytes(MIN_SHARED_SLOTS, 1, aggs, hashed);
    let m = if a > b { a } else { b };
    if m > 40 * 1024 { m } else { 40 * 1024 }
}

/// The shared table that a full sample's [`SAMPLE_WORDS`] `c` alone call for, for `aggs`
/// accumulators, in the [`quick_smem`] a launch gives: fewer than [`TINY_GROUPS`] keys, at
/// most one seen once: the tiny table with a copy per lane; a range of keys whose
/// [`dense_range`] fits: that dense table (every key in the range has its slot, whatever the
/// group count); up to [`QUICK_MAX_DISTINCT`] keys, at most
/// [`QUICK_MAX_ONCE`] of them seen once (the sample then saw nearly every group): the
/// [`MIN_SHARED_SLOTS`] table; else `None`, and the host sizes the tables from its estimate.
/// A hashed table holds twice the host's estimate for such samples.
pub const fn quick_plan(c: [u32; SAMPLE_WORDS], key_xor: u32, aggs: usize) -> Option<SharedPlan> {
    let (d, f1) = (c[0], c[1]);
    if d == 0 {
        return None;
    }
    if d < TINY_GROUPS && f1 <= 1 {
        return Some(SharedPlan {
            slots: TINY_SLOTS,
            copies: LANE_COPIES,
            dense_base: None,
        });
    }
    if let Some(plan) = dense_plan(c[3], c[4], key_xor, aggs, quick_smem(aggs)) {
        return Some(plan);
    }
    if d <= QUICK_MAX_DISTINCT && f1 <= QUICK_MAX_ONCE {
        Some(SharedPlan {
            slots: MIN_SHARED_SLOTS,
            copies: 1,
            dense_base: None,
        })
    } else {
        None
    }
}

/// The dense table that a full sample's [`SAMPLE_WORDS`] `c` call for in the second
/// launch after the sample ([`QUICK_WIDE`]), for `aggs` accumulators, where [`quick_plan`]
/// gives none: the sample's [`dense_plan`] in `smem` bytes, where it has at least
/// [`WIDE_MIN_SLOTS`] slots and takes at least `min_bytes` (a smaller table leaves room for
/// more blocks of the narrow kernel, which the host plans), and where its range is not much
/// sparser than the groups: at most three times Chao's lower bound on their number,
/// `d + f1^2 / (2 f2)` (a hashed table of the host's plan serves sparser ranges).
pub const fn wide_plan(
    c: [u32; SAMPLE_WORDS],
    key_xor: u32,
    aggs: usize,
    smem: usize,
    min_bytes: usize,
) -> Option<SharedPlan> {
    if quick_plan(c, key_xor, aggs).is_some() {
        return None;
    }
    let Some(plan) = dense_plan(c[3], c[4], key_xor, aggs, smem) else {
        return None;
    };
    let bytes = shared_table_bytes(plan.slots, 1, aggs, TableForm { dense: true });
    let (d, f1, f2) = (c[0] as u64, c[1] as u64, c[2] as u64);
    let chao = if f2 > 0 {
        d + f1 * f1 / (2 * f2)
    } else {
        d + f1 * f1.saturating_sub(1) / 2
    };
    if plan.slots < WIDE_MIN_SLOTS || bytes < min_bytes || plan.slots as u64 > 3 * chao {
        return None;
    }
    Some(plan)
}

/// Where a hash launch's staged tiles ([`GroupByParams::stage_at`]) of `tile` rows with
/// `aggs` accumulators go after a shared table of `table` bytes: its end rounded up to 16
/// bytes (and at least 16), where the [`HASH_STAGES`] tiles fit `smem` bytes with it.
pub const fn stage_offset(table: usize, tile: usize, aggs: usize, smem: usize) -> Option<usize> {
    let at = table.next_multiple_of(16);
    let at = if at < 16 { 16 } else { at };
    if at + HASH_STAGES * hash_stage_bytes(tile, aggs) <= smem {
        Some(at)
    } else {
        None
    }
}

/// Shared buffers of a hash kernel's staged tiles ([`GroupByParams::stage_at`]): each thread
/// copies its rows of the block's next tile (`cp.async`) while it adds up the current one, so
/// that the next tile's reads are in flight through the current tile's atomics without
/// holding registers.
pub const HASH_STAGES: usize = 2;

/// Bytes of one staged tile of `tile` rows with `aggs` accumulators
/// ([`GroupByParams::stage_at`]): the keys, then each accumulator's 32-bit values.
pub const fn hash_stage_bytes(tile: usize, aggs: usize) -> usize {
    4 * tile * (1 + aggs)
}

/// Copies of a tiny shared table's counts and accumulators: one per lane.
pub const LANE_COPIES: u32 = 32;

/// Largest shared table whose rows first look at their key's home slot alone (the host
/// sizes larger ones about 2/3 full; see the hash kernel).
pub const HOME_FIRST_MAX_SLOTS: u32 = 2048;

/// Entries of each array of a shared table of `slots` slots with `copies` copies: a copy of
/// each slot and of the slot of [`EMPTY_KEY`](crate::hash::EMPTY_KEY), then a spare entry per
/// lane, which rows without a slot update instead of branching around their atomics (their
/// contents are ignored).
#[inline(always)]
pub const fn shared_entries(slots: u32, copies: u32) -> u32 {
    (slots + 1) * copies + 32
}

/// How a shared table finds a key's slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableForm {
    /// Slot `s` is the key word `base + s` (no key array, no walk): for keys within a range
    /// the table spans; keys outside it go to the global table.
    pub dense: bool,
}

/// Dynamic shared memory of a shared table of `slots` slots with `copies` copies and `aggs`
/// accumulators in `form`: the accumulator words, then the keys (unless dense) and the
/// counts, each [`shared_entries`] long (and at least [`hot_scratch_bytes`]).
#[inline(always)]
pub const fn shared_table_bytes(slots: u32, copies: u32, aggs: usize, form: TableForm) -> usize {
    let table = shared_entries(slots, copies) as usize * entry_bytes(aggs, form);
    let scratch = hot_scratch_bytes(aggs);
    if table > scratch { table } else { scratch }
}

/// Bytes of a shared table's entry with `aggs` accumulators in `form`.
#[inline(always)]
pub const fn entry_bytes(aggs: usize, form: TableForm) -> usize {
    8 * aggs + 4 + 4 * !form.dense as usize
}

/// Keys a shared table of `slots` slots takes before it sends new keys to the global table.
#[inline(always)]
pub const fn shared_limit(slots: u32) -> u32 {
    slots / 4 * 3
}

macro_rules! ordered_float {
    ($($bits:ty: $ordered:ident, $unordered:ident, inf = $inf:literal, nan = $nan:literal;)*) => {$(
        /// Bits in the order of the floats they encode, with every NaN (either sign) above
        /// `+inf` and `-0.0` below `+0.0`.
        #[inline(always)]
        pub const fn $ordered(bits: $bits) -> $bits {
            const SIGN: $bits = 1 << (<$bits>::BITS - 1);
            if bits & !SIGN > $inf {
                <$bits>::MAX
            } else if bits & SIGN != 0 {
                !bits
            } else {
                bits | SIGN
            }
        }

        /// The float bits of the ordered image; NaN comes back as the canonical quiet NaN.
        #[inline(always)]
        pub const fn $unordered(ord: $bits) -> $bits {
            const SIGN: $bits = 1 << (<$bits>::BITS - 1);
            if ord == <$bits>::MAX {
                $nan
            } else if ord & SIGN != 0 {
                ord & !SIGN
            } else {
                !ord
            }
        }
    )*};
}

ordered_float! {
    u32: ordered_f32, unordered_f32, inf = 0x7f80_0000, nan = 0x7fc0_0000;
    u64: ordered_f64, unordered_f64, inf = 0x7ff0_0000_0000_0000, nan = 0x7ff8_0000_0000_0000;
}

/// A 32-bit value's order-preserving bits under `code`'s type (`u32` as is, `i32` with the
/// sign flipped, `f32` by [`ordered_f32`]).
#[inline(always)]
pub const fn ordered32(code: u32, bits: u32) -> u32 {
    match code & code::TYPE {
        code::I32 => bits ^ 0x8000_0000,
        code::F32 => ordered_f32(bits),
        _ => bits,
    }
}

/// The starting word of an accumulator.
#[inline(always)]
pub const fn acc_init(code: u32) -> u64 {
    if code & code::OP == code::MIN {
        u64::MAX
    } else {
        0
    }
}

/// A row's operand for an accumulator, from its value's bits (32-bit types in the low word).
#[inline(always)]
pub fn acc_operand(code: u32, raw: u64) -> u64 {
    let lo = raw as u32;
    match code & code::OP {
        code::SUM => match code & code::TYPE {
            code::U32 => lo as u64,
            code::I32 => lo as i32 as i64 as u64,
            code::F32 => (f32::from_bits(lo) as f64).to_bits(),
            _ => raw,
        },
        op => match code & code::TYPE {
            code::F64 => ordered_f64(raw),
            _ if op == code::MIN => 0xffff_ffff_0000_0000 | ordered32(code, lo) as u64,
            _ => ordered32(code, lo) as u64,
        },
    }
}

/// Two accumulator words of `code` combined: the word of their rows together.
#[inline(always)]
pub fn acc_combine(code: u32, x: u64, y: u64) -> u64 {
    match (code & code::OP, code & code::TYPE) {
        (code::SUM, code::F32 | code::F64) => (f64::from_bits(x) + f64::from_bits(y)).to_bits(),
        (code::SUM, _) => x.wrapping_add(y),
        (code::MIN, _) => x.min(y),
        _ => x.max(y),
    }
}

/// The value bits an accumulator word stands for: a sum's bits (`u64`, `i64` or `f64`), a
/// minimum's or maximum's value bits (32-bit types in the low word).
#[inline(always)]
pub const fn acc_result(code: u32, word: u64) -> u64 {
    if code & code::OP == code::SUM {
        return word;
    }
    match code & code::TYPE {
        code::F64 => unordered_f64(word),
        code::F32 => unordered_f32(word as u32) as u64,
        code::I32 => (word as u32 ^ 0x8000_0000) as u64,
        _ => word as u32 as u64,
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{GroupByParams, TableForm, acc_init, acc_operand, code};
    use crate::arch::{
        Shared, block_idx, copy_async_commit, copy_async_wait_all, copy_async_wait_groups,
        grid_dim, lane_id, load_relaxed_u32, red_global, shared_atomic, sync_threads, thread_idx,
    };
    use crate::block::{block_load_staged, block_stage};
    use crate::hash::{EMPTY_KEY, home_slot, next_slot};

    /// Whether a shared table holds accumulator code `c` as two arrays of 32-bit words (low
    /// words, then high words): integer sums, whose updates are 32-bit atomics. Their
    /// starting words are 0, so clearing the array as 64-bit words clears both.
    #[inline(always)]
    fn split_sum(c: u32) -> bool {
        c & code::OP == code::SUM && matches!(c & code::TYPE, code::U32 | code::I32)
    }

    /// The shared table of a block: accumulator words (`aggs` arrays of
    /// [`shared_entries`](super::shared_entries) 64-bit words, an integer sum's as low words
    /// then high words: [`split_sum`]), keys by slot (unless dense), counts, and
    /// the number of keys taken. Slot `s`'s count and accumulators for this lane are at entry
    /// `s * copies + lane_off`.
    #[derive(Clone, Copy)]
    pub struct SharedTable {
        acc: Shared<u64>,
        keys: Shared<u32>,
        counts: Shared<u32>,
        filled: Shared<u32>,
        slots: u32,
        copies: u32,
        form: TableForm,
        /// A dense table's first key word.
        base: u32,
        /// This lane's copy: its lane with [`super::LANE_COPIES`] copies, else 0.
        lane_off: u32,
        /// Shared-window addresses of `keys`, `counts`, `acc` and `filled`, converted once.
        key_at: u32,
        count_at: u32,
        acc_at: u32,
        filled_at: u32,
    }

    impl SharedTable {
        /// The table over the launch's dynamic shared memory (`base`: a dense table's first
        /// key word).
        ///
        /// # Safety
        /// The launch gives `shared_table_bytes(slots, copies, A, form)` bytes of dynamic
        /// shared memory; `copies` is 1 or [`super::LANE_COPIES`].
        #[inline(always)]
        pub unsafe fn new<const A: usize>(
            slots: u32,
            copies: u32,
            form: TableForm,
            base: u32,
            filled: Shared<u32>,
        ) -> Self {
            let len = super::shared_entries(slots, copies) as usize;
            // SAFETY: the arrays tile the dynamic shared memory the launch gives (a dense
            // table has no keys array: `keys` starts where `counts` does, and is never read).
            unsafe {
                let acc = crate::arch::dynamic_shared::<u64>(len * A);
                let words = acc.cast::<u32>();
                let key = 2 * len * A;
                let count = key + len * !form.dense as usize;
                let keys = Shared::from_raw(words.ptr(key), len);
                let counts = Shared::from_raw(words.ptr(count), len);
                SharedTable {
                    acc,
                    keys,
                    counts,
                    filled,
                    slots,
                    copies,
                    form,
                    base,
                    lane_off: lane_id() & (copies - 1),
                    key_at: keys.addr(0),
                    count_at: counts.addr(0),
                    acc_at: acc.addr(0),
                    filled_at: filled.addr(0),
                }
            }
        }

        /// Empties the table (all threads; a barrier follows).
        #[inline(always)]
        pub fn clear<const NT: usize, const A: usize>(&self, codes: &[u32; A]) {
            let len = self.entries();
            let mut s = thread_idx();
            while s < len {
                // SAFETY: s < len; each slot is this thread's alone until the barrier.
                unsafe {
                    if !self.form.dense {
                        self.keys.write(s, EMPTY_KEY);
                    }
                    self.counts.write(s, 0);
                    for (a, &c) in codes.iter().enumerate() {
                        self.acc.write(a * len + s, acc_init(c));
                    }
                }
                s += NT;
            }
            if thread_idx() == 0 {
                // SAFETY: one word.
                unsafe { self.filled.write(0, 0) };
            }
            sync_threads();
        }

        /// Entries of each array: the slots and the spare ones.
        #[inline(always)]
        fn entries(&self) -> usize {
            super::shared_entries(self.slots, self.copies) as usize
        }

        /// The count of entry `s` (after the barrier that ends the updates).
        #[inline(always)]
        pub fn count_of(&self, s: usize) -> u32 {
            // SAFETY: callers pass an entry below `entries()`.
            unsafe { self.counts.read(s) }
        }

        /// Accumulator `a`'s (code `c`) word of entry `s` (after the barrier that ends the
        /// updates).
        #[inline(always)]
        pub fn acc_of(&self, a: usize, c: u32, s: usize) -> u64 {
            let len = self.entries();
            // SAFETY: callers pass an entry below `entries()`; an integer sum's array holds
            // its low words, then its high words (`update` says why).
            unsafe {
                if split_sum(c) {
                    let words = self.acc.cast::<u32>();
                    let lo = words.read(2 * a * len + s);
                    let hi = words.read(2 * a * len + len + s);
                    (hi as u64) << 32 | lo as u64
                } else {
                    self.acc.read(a * len + s)
                }
            }
        }

        /// Whether the table is dense.
        #[inline(always)]
        pub fn dense(&self) -> bool {
            self.form.dense
        }

        /// This lane's entry of slot `s` (`s <= slots`).
        #[inline(always)]
        fn entry(&self, s: u32) -> u32 {
            s * self.copies + self.lane_off
        }

        /// This lane's spare entry.
        #[inline(always)]
        pub fn spare(&self) -> u32 {
            (self.slots + 1) * self.copies + lane_id()
        }

        /// The key in slot `s` (`s < slots`) of a hashed table.
        #[inline(always)]
        fn key(&self, s: u32) -> u32 {
            // SAFETY: s < slots; a race with a claim's CAS is benign (a stale EMPTY_KEY is
            // not the key: the row walks and finds it).
            unsafe { crate::arch::load_shared_u32(self.key_at + 4 * s) }
        }

        /// The key of slot `s` (`s <= slots`; after the barrier that ends the updates).
        #[inline(always)]
        fn key_of(&self, s: u32) -> u32 {
            if s == self.slots {
                EMPTY_KEY
            } else if self.form.dense {
                self.base.wrapping_add(s)
            } else {
                self.key(s)
            }
        }

        /// A dense table's slot of `key`: its offset from the base (`None` outside the
        /// range), the extra slot for [`EMPTY_KEY`].
        #[inline(always)]
        fn dense_slot(&self, key: u32) -> Option<u32> {
            let s = key.wrapping_sub(self.base);
            if key == EMPTY_KEY {
                Some(self.slots)
            } else if s < self.slots {
                Some(s)
            } else {
                None
            }
        }

        /// The slot of `key` in a hashed table, found or taken while the table is below its
        /// limit.
        #[inline(always)]
        fn slot(&self, key: u32) -> Option<u32> {
            let limit = super::shared_limit(self.slots);
            // At most `limit` + one per thread are taken, so an empty slot ends the walk.
            find_or_claim(
                key,
                self.slots,
                // A stale EMPTY_KEY makes the claim's CAS re-read the slot.
                |s| self.key(s),
                // SAFETY: one word.
                || unsafe { crate::arch::load_shared_u32(self.filled_at) } < limit,
                // SAFETY: slot s is in bounds.
                |s| unsafe { shared_atomic::cas_u32(self.key_at + 4 * s, EMPTY_KEY, key) },
                // SAFETY: one word.
                || unsafe { shared_atomic::red_add_u32(self.filled_at, 1) },
            )
        }

        /// Counts the tile's rows in their entries (a slot, or the lane's spare entry).
        #[inline(always)]
        pub fn count<const IPT: usize>(&self, entry: &[u32; IPT]) {
            for &e in entry {
                // SAFETY: every entry is below `entries()`.
                unsafe { shared_atomic::red_add_u32(self.count_at + 4 * e, 1) };
            }
        }

        /// Adds the tile's rows to accumulator `a` (code `c`) in their entries, from their
        /// values' raw bits: one dispatch on the code per tile, no test of the entry, and each
        /// kind's atomics issued for all rows before anything waits on their results. An
        /// integer sum's array holds all its low words, then all its high words: a warp's
        /// atomics on them spread over the 32 banks, where words of 64 bits would leave the
        /// low words 16.
        #[inline(always)]
        pub fn update<const IPT: usize>(
            &self,
            a: usize,
            c: u32,
            entry: &[u32; IPT],
            raw: &[u64; IPT],
        ) {
            let len = self.entries();
            let base = self.acc_at + 8 * (a * len) as u32;
            let at = |j: usize| base + 8 * entry[j];
            let lo_at = |j: usize| base + 4 * entry[j];
            let hi_at = |j: usize| base + 4 * (len as u32 + entry[j]);
            // SAFETY: every entry is below `entries()`; every update is atomic.
            unsafe {
                if split_sum(c) {
                    // 64-bit sums as two words, laid out as `acc_of` reads them: the low
                    // word's atomic, then its carry (and an i32's sign extension) into the
                    // high word where they are not 0.
                    let old: [u32; IPT] = core::array::from_fn(|j| {
                        crate::arch::SharedAdd::shared_add(lo_at(j), raw[j] as u32)
                    });
                    for j in 0..IPT {
                        let lo = raw[j] as u32;
                        let sign = if c & code::TYPE == code::I32 {
                            (lo as i32 >> 31) as u32
                        } else {
                            0
                        };
                        let hi = sign.wrapping_add((old[j] > !lo) as u32);
                        if hi != 0 {
                            shared_atomic::red_add_u32(hi_at(j), hi);
                        }
                    }
                    return;
                }
                match (c & code::OP, c & code::TYPE) {
                    (code::SUM, _) => {
                        for j in 0..IPT {
                            shared_atomic::add_f64(at(j), f64::from_bits(acc_operand(c, raw[j])));
                        }
                    }
                    (op, code::F64) => {
                        for j in 0..IPT {
                            let x = acc_operand(c, raw[j]);
                            if op == code::MIN {
                                shared_atomic::min_u64(at(j), x);
                            } else {
                                shared_atomic::max_u64(at(j), x);
                            }
                        }
                    }
                    (op, _) => {
                        for j in 0..IPT {
                            let x = super::ordered32(c, raw[j] as u32);
                            if op == code::MIN {
                                shared_atomic::min_u32(at(j), x);
                            } else {
                                shared_atomic::max_u32(at(j), x);
                            }
                        }
                    }
                }
            }
        }

        /// Merges the table into the global one (all threads; after a barrier).
        #[inline(always)]
        fn merge<const NT: usize, const A: usize>(&self, g: &GlobalTable, codes: &[u32; A]) {
            let mut s = thread_idx();
            while s <= self.slots as usize {
                let (count, words) = self.total(s, codes);
                if count != 0 {
                    g.merge(self.key_of(s as u32), count, codes, &words);
                }
                s += NT;
            }
        }

        /// Writes the table's slots (the extra one too) to the partial table at `at`, laid
        /// out as [`super::partial_bytes`] says, for [`super::GROUPBY_FOLD`] (all threads;
        /// after a barrier).
        ///
        /// # Safety
        /// `at` is 8-byte aligned and holds `partial_bytes(slots, A)` bytes.
        #[inline(always)]
        unsafe fn spill<const NT: usize, const A: usize>(&self, at: *mut u64, codes: &[u32; A]) {
            let len = self.slots as usize + 1;
            let counts = at.wrapping_add(A * len) as *mut u32;
            let mut s = thread_idx();
            while s < len {
                let (count, words) = self.total(s, codes);
                // SAFETY: s < len; the caller's promise.
                unsafe {
                    counts.add(s).write(count);
                    for (a, &w) in words.iter().enumerate() {
                        at.add(a * len + s).write(w);
                    }
                }
                s += NT;
            }
        }

        /// Slot `s`'s count and accumulator words, its copies combined (`s <= slots`; after
        /// the barrier that ends the updates).
        #[inline(always)]
        fn total<const A: usize>(&self, s: usize, codes: &[u32; A]) -> (u32, [u64; A]) {
            let first = s * self.copies as usize;
            // SAFETY: every entry below `first + copies` is below `entries()`.
            let mut count = unsafe { self.counts.read(first) };
            let mut words: [u64; A] = core::array::from_fn(|a| self.acc_of(a, codes[a], first));
            for e in first + 1..first + self.copies as usize {
                // SAFETY: as above.
                count += unsafe { self.counts.read(e) };
                for a in 0..A {
                    let w = self.acc_of(a, codes[a], e);
                    words[a] = super::acc_combine(codes[a], words[a], w);
                }
            }
            (count, words)
        }
    }

    /// The slot of `key` in an open-addressing table of `slots` slots, walking from its home
    /// slot by [`next_slot`] and claiming the first empty one while `room()` allows (the key
    /// [`EMPTY_KEY`] has slot `slots`, past the others): `None` when no slot may be claimed or
    /// the walk went round. `load(s)` reads slot `s`'s key, `claim(s)` swaps [`EMPTY_KEY`] for
    /// `key` there and returns the key it found, `took()` records a claim.
    #[inline(always)]
    fn find_or_claim(
        key: u32,
        slots: u32,
        load: impl Fn(u32) -> u32,
        room: impl Fn() -> bool,
        claim: impl Fn(u32) -> u32,
        took: impl Fn(),
    ) -> Option<u32> {
        if key == EMPTY_KEY {
            return Some(slots);
        }
        let mut s = home_slot(key, slots);
        for _ in 0..slots {
            let k = load(s);
            if k == key {
                return Some(s);
            }
            if k == EMPTY_KEY {
                if !room() {
                    return None;
                }
                let old = claim(s);
                if old == EMPTY_KEY {
                    took();
                    return Some(s);
                }
                if old == key {
                    return Some(s);
                }
            }
            s = next_slot(s, slots);
        }
        None
    }

    /// The global table: `slots + 1` keys, counts and (per accumulator) words, and the
    /// launch's state words.
    #[derive(Clone, Copy)]
    pub struct GlobalTable {
        /// Keys.
        pub keys: *mut u32,
        /// Counts.
        pub counts: *mut u32,
        /// Accumulator words, one array of `slots + 1` per accumulator.
        pub acc: *mut u64,
        /// [`super::STATE_WORDS`] words.
        pub state: *mut u32,
        /// Slots (the arrays hold one more).
        pub slots: u32,
        /// Most keys taken before an overflow is reported.
        pub limit: u32,
    }

    impl GlobalTable {
        /// The slot of `key`, inserting it; `None` (and the overflow flag) when the table is
        /// full.
        #[inline(always)]
        fn slot(&self, key: u32) -> Option<u32> {
            let distinct = self.state.wrapping_add(super::STATE_DISTINCT);
            let slot = find_or_claim(
                key,
                self.slots,
                // SAFETY: s < slots; a relaxed load sees other blocks' inserts.
                |s| unsafe { load_relaxed_u32(self.keys.add(s as usize)) },
                // SAFETY: the state words are in bounds.
                || unsafe { load_relaxed_u32(distinct) } < self.limit,
                // SAFETY: slot s is in bounds.
                |s| unsafe {
                    crate::arch::Atomic::atomic_cas(self.keys.add(s as usize), EMPTY_KEY, key)
                },
                // SAFETY: as above.
                || unsafe { red_global::add_u32(distinct, 1) },
            );
            if slot.is_none() {
                // SAFETY: as above.
                unsafe { crate::arch::atomic_or_u32(self.state.add(super::STATE_OVERFLOW), 1) };
            }
            slot
        }

        /// Adds `count` rows with these accumulator words (already operands) to `key`'s group.
        #[inline(always)]
        pub fn merge<const A: usize>(
            &self,
            key: u32,
            count: u32,
            codes: &[u32; A],
            words: &[u64; A],
        ) {
            let Some(s) = self.slot(key) else {
                return;
            };
            let s = s as usize;
            let len = self.slots as usize + 1;
            // SAFETY: s <= slots; every update is atomic.
            unsafe {
                red_global::add_u32(self.counts.add(s), count);
                for a in 0..A {
                    red_acc(self.acc.add(a * len + s), codes[a], words[a]);
                }
            }
        }
    }

    /// Merges accumulator `word` of `code` into the word at `at`, atomically.
    ///
    /// # Safety
    /// `at` is a valid, aligned global address.
    #[inline(always)]
    pub unsafe fn red_acc(at: *mut u64, code: u32, word: u64) {
        // SAFETY: by contract.
        unsafe {
            match (code & code::OP, code & code::TYPE) {
                (code::SUM, code::F32 | code::F64) => {
                    red_global::add_f64(at.cast(), f64::from_bits(word))
                }
                (code::SUM, _) => red_global::add_u64(at, word),
                (code::MIN, _) => red_global::min_u64(at, word),
                _ => red_global::max_u64(at, word),
            }
        }
    }

    /// The hash group-by of the launch's rows: blocks stride over tiles of `NT * IPT` rows,
    /// each row into the block's shared table (when there is one and it holds the key) or
    /// the global table; `STAGED`: full tiles through shared memory where `stage_at` says.
    ///
    /// # Safety
    /// `p` describes columns of `n` rows and the global table's arrays; with a shared table
    /// the launch gives its dynamic shared memory.
    #[inline(always)]
    pub unsafe fn group_by_hash<
        const NT: usize,
        const IPT: usize,
        const A: usize,
        const CODE: u32,
        const STAGED: bool,
    >(
        p: &GroupByParams,
        g: GlobalTable,
        filled: Shared<u32>,
    ) {
        // A kernel for one accumulator code has it as a constant: every dispatch on it folds.
        let codes: [u32; A] = core::array::from_fn(|a| {
            if CODE == super::ANY_CODE {
                p.codes[a]
            } else {
                CODE
            }
        });
        let mut plan = super::SharedPlan {
            slots: p.shared_slots,
            copies: p.shared_copies,
            dense_base: if p.dense != 0 {
                Some(p.dense_base)
            } else {
                None
            },
        };
        let mut hot = if p.hot != 0 { Some(p.hot_key) } else { None };
        let mut stage_at = p.stage_at;
        if p.quick != 0 {
            // SAFETY: the state words are in bounds; the sample kernel wrote them before.
            let c =
                core::array::from_fn(|i| unsafe { g.state.add(super::STATE_SAMPLE + i).read() });
            let smem = p.wide.smem as usize;
            let taken = if p.quick == super::QUICK_FIRST {
                super::quick_plan(c, p.key_xor, A)
            } else {
                super::wide_plan(c, p.key_xor, A, smem, p.wide.min_bytes as usize)
            };
            match taken {
                Some(q) => plan = q,
                None => return,
            }
            if p.quick == super::QUICK_WIDE {
                let form = TableForm { dense: true };
                let table = super::shared_table_bytes(plan.slots, 1, A, form);
                stage_at = match super::stage_offset(table, NT * IPT, A, smem) {
                    Some(at) if p.stage_at != 0 => at as u32,
                    _ => 0,
                };
            }
            hot = super::hot_key(c, p.n);
        }
        if plan.copies == super::LANE_COPIES {
            // A copy per lane already keeps a few keys' rows apart.
            hot = None;
        }
        let shared = plan.slots != 0;
        let copies = if plan.copies == super::LANE_COPIES {
            super::LANE_COPIES
        } else {
            1
        };
        let form = TableForm {
            dense: plan.dense_base.is_some(),
        };
        let base = plan.dense_base.unwrap_or(0);
        // SAFETY: with a shared table the launch gives its memory, as large as the plan's in
        // this form.
        let table = unsafe { SharedTable::new::<A>(plan.slots.max(1), copies, form, base, filled) };
        if shared {
            table.clear::<NT, A>(&codes);
        }
        let stage = if STAGED && stage_at != 0 && codes.iter().all(|&c| c & code::TYPE != code::F64)
        {
            // SAFETY: only the address; the launch gives the staged tiles' memory there.
            Some(unsafe { crate::arch::dynamic_shared::<u32>(0) }.addr(0) + stage_at)
        } else {
            None
        };
        // SAFETY: forwarded contracts.
        let hot_rows = unsafe {
            match hot {
                Some(h) => tile_loop::<NT, IPT, A, true>(&p, &codes, shared, &table, &g, h, stage),
                None => tile_loop::<NT, IPT, A, false>(&p, &codes, shared, &table, &g, 0, stage),
            }
        };
        sync_threads();
        if shared {
            match partial_table(p, &plan, A) {
                // SAFETY: the region is this block's, as large as the table's slots take.
                Some(at) => unsafe { table.spill::<NT, A>(at, &codes) },
                None => table.merge::<NT, A>(&g, &codes),
            }
        }
        if let Some(h) = hot {
            hot_rows.merge::<NT>(h, shared, &codes, &g);
        }
    }

    /// This block's partial table under a [`super::QUICK_WIDE`] launch with partials, for its
    /// dense `plan` with `aggs` accumulators; `None`: the block merges into the global table.
    #[inline(always)]
    fn partial_table(p: &GroupByParams, plan: &super::SharedPlan, aggs: usize) -> Option<*mut u64> {
        let w = p.wide;
        let block = crate::arch::block_idx();
        (super::takes_partials(p, plan, aggs) && block < w.blocks as usize)
            .then(|| (w.partials + block as u64 * w.stride as u64) as *mut u64)
    }

    /// Folds the partial tables of a [`super::QUICK_WIDE`] launch (of `p`) into the global
    /// table: the plan the launch took (from the same words, by the same function; none: it
    /// returned at once, nothing to fold), then each warp of a block of `NT` threads adds
    /// up one slot a lane over every `NT / 32`-th partial table, four loads in flight, the
    /// warps' sums combine in shared memory and the first warp merges each taken slot.
    /// Block `b` folds slots `32 b ..`.
    ///
    /// # Safety
    /// The launch of `p` ran before, with `p.wide.blocks` blocks whose partial tables lie at
    /// `p.wide.partials`; the global table and its state as `p` says.
    #[inline(always)]
    pub unsafe fn fold<const NT: usize, const A: usize>(p: &GroupByParams, g: GlobalTable) {
        const { assert!(NT.is_multiple_of(32) && NT <= super::FOLD_THREADS) };
        // SAFETY: the state words are in bounds; the sample wrote them before.
        let c = core::array::from_fn(|i| unsafe { g.state.add(super::STATE_SAMPLE + i).read() });
        let w = p.wide;
        let Some(plan) = super::wide_plan(c, p.key_xor, A, w.smem as usize, w.min_bytes as usize)
        else {
            return;
        };
        let (true, Some(base)) = (super::takes_partials(p, &plan, A), plan.dense_base) else {
            return;
        };
        let (len, blocks) = (plan.slots as usize + 1, w.blocks as usize);
        let lane = lane_id() as usize;
        let s = crate::arch::block_idx() * super::FOLD_SLOTS + lane;
        if s - lane >= len {
            return;
        }
        let codes: [u32; A] = core::array::from_fn(|a| p.codes[a]);
        let (warp, warps) = (thread_idx() / 32, NT / 32);
        let mut count = 0u32;
        let mut words: [u64; A] = core::array::from_fn(|a| super::acc_init(codes[a]));
        if s < len {
            const AHEAD: usize = 4;
            let mut b = warp;
            while b < blocks {
                let at = |u: usize| {
                    (w.partials + ((b + u * warps) * w.stride as usize) as u64) as *const u64
                };
                let ok = |u: usize| b + u * warps < blocks;
                let counts: [u32; AHEAD] = core::array::from_fn(|u| {
                    if ok(u) {
                        // SAFETY: a partial table below `blocks`, its count of slot s < len,
                        // as `spill` lays them out.
                        unsafe { (at(u).add(A * len) as *const u32).add(s).read() }
                    } else {
                        0
                    }
                });
                let got: [[u64; A]; AHEAD] = core::array::from_fn(|u| {
                    core::array::from_fn(|a| {
                        if ok(u) {
                            // SAFETY: as above, accumulator a's word of slot s.
                            unsafe { at(u).add(a * len + s).read() }
                        } else {
                            super::acc_init(codes[a])
                        }
                    })
                });
                for u in 0..AHEAD {
                    count += counts[u];
                    for a in 0..A {
                        words[a] = super::acc_combine(codes[a], words[a], got[u][a]);
                    }
                }
                b += AHEAD * warps;
            }
        }
        const T: usize = super::FOLD_THREADS;
        let sc = crate::shared_array!(groupby_fold_counts: [u32; T]);
        let sw = crate::shared_array!(groupby_fold_words: [u64; T * super::GROUPBY_MAX_AGGS]);
        let t = thread_idx();
        // SAFETY: t < NT <= FOLD_THREADS; a < A <= GROUPBY_MAX_AGGS.
        unsafe {
            sc.write(t, count);
            for a in 0..A {
                sw.write(a * NT + t, words[a]);
            }
        }
        sync_threads();
        if warp != 0 || s >= len {
            return;
        }
        for v in 1..warps {
            let at = v * 32 + lane;
            // SAFETY: as above; complete after the barrier.
            unsafe {
                count += sc.read(at);
                for a in 0..A {
                    words[a] = super::acc_combine(codes[a], words[a], sw.read(a * NT + at));
                }
            }
        }
        if count != 0 {
            let key = if s == plan.slots as usize {
                EMPTY_KEY
            } else {
                base.wrapping_add(s as u32)
            };
            g.merge(key, count, &codes, &words);
        }
    }

    /// The launch's tiles into the tables (`HOT`: rows of `hot_key` into the registers),
    /// this thread's hot rows added up. With `stage` (a shared-window address), full tiles
    /// come through [`super::HASH_STAGES`] buffers there: the block's next tiles are copied
    /// while it adds up this one; each iteration commits one copy group (maybe empty), so
    /// waiting until `HASH_STAGES - 1` are pending lands the current tile's.
    ///
    /// # Safety
    /// As for [`group_by_hash`]; with `stage`, the launch gives `HASH_STAGES` staged tiles'
    /// memory there, the columns are 16-byte aligned and no accumulator's values are `f64`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn tile_loop<const NT: usize, const IPT: usize, const A: usize, const HOT: bool>(
        p: &GroupByParams,
        codes: &[u32; A],
        shared: bool,
        table: &SharedTable,
        g: &GlobalTable,
        hot_key: u32,
        stage: Option<u32>,
    ) -> HotRows<A> {
        const STAGES: usize = super::HASH_STAGES;
        let values: [u64; A] = core::array::from_fn(|a| p.values[a]);
        let values = &values;
        let keys = p.keys as *const u32;
        let n = p.n as usize;
        let mut hot_rows = HotRows {
            count: 0,
            words: core::array::from_fn(|a| acc_init(codes[a])),
        };
        let tile = NT * IPT;
        let dense = table.dense();
        let (tiles, grid) = (n.div_ceil(tile), grid_dim());
        let full = |at: usize| (at + 1) * tile <= n;
        let bytes = super::hash_stage_bytes(tile, A) as u32;
        // Starts the copies of tile `at` (if full) to buffer `b`.
        let issue = |at: usize, b: usize| {
            if let Some(base) = stage
                && full(at)
            {
                let dst = base + b as u32 * bytes;
                // SAFETY: a full tile; buffer `b` is one of the stages, which this thread
                // last read an iteration before (its values returned).
                unsafe { stage_tile::<NT, IPT, A>(keys, values, at * tile, dst) };
            }
        };
        let mut at = block_idx();
        if stage.is_some() {
            for b in 0..STAGES - 1 {
                issue(at + b * grid, b);
                copy_async_commit();
            }
        }
        let mut cur = 0;
        let mut rounds = 0u32;
        while at < tiles {
            // A run whose global table overflowed is run again: stop early (every 8 tiles, an
            // L2 read).
            // SAFETY: the state words are in bounds.
            if rounds % 8 == 7
                && unsafe { load_relaxed_u32(g.state.add(super::STATE_OVERFLOW)) } != 0
            {
                break;
            }
            let start = at * tile;
            if stage.is_some() {
                issue(at + (STAGES - 1) * grid, (cur + STAGES - 1) % STAGES);
                copy_async_commit();
            }
            // One tile of `$rows`, or else of the rows `load_tile` reads for it.
            macro_rules! tile {
                ($full:literal, $dense:literal, $rows:expr) => {
                    hash_tile::<NT, IPT, A, $full, $dense, HOT>(
                        $rows,
                        codes,
                        n,
                        start,
                        shared,
                        table,
                        g,
                        hot_key,
                        &mut hot_rows,
                    )
                };
                ($full:literal, $dense:literal) => {
                    tile!(
                        $full,
                        $dense,
                        load_tile::<NT, IPT, A, $full>(keys, values, codes, n, start)
                    )
                };
            }
            // SAFETY: forwarded contracts; a staged tile's copies landed at the wait.
            unsafe {
                match (stage, full(at), dense) {
                    (Some(base), true, d) => {
                        copy_async_wait_groups::<{ STAGES as u32 - 1 }>();
                        let rows = load_staged_tile::<NT, IPT, A>(base + cur as u32 * bytes);
                        if d {
                            tile!(true, true, rows)
                        } else {
                            tile!(true, false, rows)
                        }
                    }
                    (None, true, true) => tile!(true, true),
                    (None, true, false) => tile!(true, false),
                    (_, false, true) => tile!(false, true),
                    (_, false, false) => tile!(false, false),
                }
            };
            at += grid;
            rounds += 1;
            cur = (cur + 1) % STAGES;
        }
        if stage.is_some() {
            // Copies of tiles this block did not reach (an early stop) land before it ends.
            copy_async_wait_all();
        }
        hot_rows
    }

    /// A thread's rows of a tile: their keys and each accumulator's raw value bits.
    type TileRows<const IPT: usize, const A: usize> = ([u32; IPT], [[u64; IPT]; A]);

    /// The rows of the tile from `start` this thread holds (row `start + j * NT + t` as item
    /// `j`; rows past `n` as [`EMPTY_KEY`] and 0 unless `FULL`), every load issued at once.
    ///
    /// # Safety
    /// `keys` and `values` are columns of `n` rows of the accumulators' types (`FULL`: the
    /// tile's rows are below `n`).
    #[inline(always)]
    unsafe fn load_tile<const NT: usize, const IPT: usize, const A: usize, const FULL: bool>(
        keys: *const u32,
        values: &[u64; A],
        codes: &[u32; A],
        n: usize,
        start: usize,
    ) -> TileRows<IPT, A> {
        let t = thread_idx();
        let row = |j: usize| start + j * NT + t;
        let in_bounds: [bool; IPT] = core::array::from_fn(|j| FULL || row(j) < n);
        // SAFETY: rows in bounds are below n.
        let k: [u32; IPT] = core::array::from_fn(|j| {
            if in_bounds[j] {
                unsafe { keys.add(row(j)).read() }
            } else {
                EMPTY_KEY
            }
        });
        let raw: [[u64; IPT]; A] = core::array::from_fn(|a| {
            let wide = codes[a] & code::TYPE == code::F64;
            core::array::from_fn(|j| {
                if !in_bounds[j] {
                    0
                } else if wide {
                    // SAFETY: as above; the column holds 64-bit values.
                    unsafe { (values[a] as *const u64).add(row(j)).read() }
                } else {
                    // SAFETY: as above; the column holds 32-bit values.
                    unsafe { (values[a] as *const u32).add(row(j)).read() as u64 }
                }
            })
        });
        (k, raw)
    }

    /// Starts the copies of this thread's rows of the full tile from `start` to the staged
    /// tile at the shared-window address `dst`: the keys, then each accumulator's values
    /// ([`super::hash_stage_bytes`]), each column as
    /// [`block_stage`] lays it out (a thread's rows are its 16-byte vectors of `block_load`).
    ///
    /// # Safety
    /// The tile's rows are below the columns' length; the columns are 16-byte aligned and hold
    /// 32-bit values; `dst` is 16-byte aligned and holds a staged tile that only this
    /// thread's reads of its own rows touch.
    #[inline(always)]
    unsafe fn stage_tile<const NT: usize, const IPT: usize, const A: usize>(
        keys: *const u32,
        values: &[u64; A],
        start: usize,
        dst: u32,
    ) {
        let bytes = 4 * (NT * IPT) as u32;
        // SAFETY: by contract.
        unsafe {
            block_stage::<u32, NT, IPT>(keys.add(start), dst);
            for a in 0..A {
                let column = (values[a] as *const u32).add(start);
                block_stage::<u32, NT, IPT>(column, dst + (1 + a as u32) * bytes);
            }
        }
    }

    /// This thread's rows of the staged tile at `src` (see [`stage_tile`]).
    ///
    /// # Safety
    /// This thread's copies to `src` landed.
    #[inline(always)]
    unsafe fn load_staged_tile<const NT: usize, const IPT: usize, const A: usize>(
        src: u32,
    ) -> TileRows<IPT, A> {
        let bytes = 4 * (NT * IPT) as u32;
        let column = |at: u32| {
            let mut rows = [0u32; IPT];
            // SAFETY: by contract.
            unsafe { block_load_staged::<u32, NT, IPT>(at, &mut rows) };
            rows
        };
        let k = column(src);
        let raw = core::array::from_fn(|a| column(src + (1 + a as u32) * bytes).map(|x| x as u64));
        (k, raw)
    }

    /// A thread's rows of the hot key ([`super::hot_key`]), added up in registers.
    struct HotRows<const A: usize> {
        count: u32,
        words: [u64; A],
    }

    impl<const A: usize> HotRows<A> {
        /// Adds one row, its values' raw bits `raw(a)`.
        #[inline(always)]
        fn add(&mut self, codes: &[u32; A], raw: impl Fn(usize) -> u64) {
            self.count += 1;
            for a in 0..A {
                self.words[a] =
                    super::acc_combine(codes[a], self.words[a], acc_operand(codes[a], raw(a)));
            }
        }

        /// Merges the block's hot rows into the global table under `key` (all threads): each
        /// warp's added up by shuffles, then, where the block has a shared table (whose memory
        /// is free after the barrier that follows its merge), the warps' in that memory by one
        /// thread; else each warp's lane 0 merges its own.
        #[inline(always)]
        fn merge<const NT: usize>(
            &self,
            key: u32,
            shared: bool,
            codes: &[u32; A],
            g: &GlobalTable,
        ) {
            use crate::arch::shfl_xor;
            let mut count = self.count;
            let mut words = self.words;
            let mut m = 16;
            while m > 0 {
                count += shfl_xor(count, m);
                for a in 0..A {
                    words[a] = super::acc_combine(codes[a], words[a], shfl_xor(words[a], m));
                }
                m /= 2;
            }
            if !shared {
                if lane_id() == 0 && count != 0 {
                    g.merge(key, count, codes, &words);
                }
                return;
            }
            const { assert!(NT <= 1024) };
            // SAFETY: the launch gives a shared table's memory, at least
            // `hot_scratch_bytes(A)`: 32 records of `1 + A` words; the table's merge is done
            // once every thread passes the barrier.
            let scratch = unsafe { crate::arch::dynamic_shared::<u64>(32 * (1 + A)) };
            sync_threads();
            let w = thread_idx() / 32;
            if lane_id() == 0 {
                // SAFETY: w < 32; each warp writes its own record.
                unsafe {
                    scratch.write(w * (1 + A), count as u64);
                    for a in 0..A {
                        scratch.write(w * (1 + A) + 1 + a, words[a]);
                    }
                }
            }
            sync_threads();
            if thread_idx() == 0 {
                for w in 1..NT / 32 {
                    // SAFETY: w < 32; the records are complete after the barrier.
                    unsafe {
                        count += scratch.read(w * (1 + A)) as u32;
                        for a in 0..A {
                            let x = scratch.read(w * (1 + A) + 1 + a);
                            words[a] = super::acc_combine(codes[a], words[a], x);
                        }
                    }
                }
                if count != 0 {
                    g.merge(key, count, codes, &words);
                }
            }
        }
    }

    /// One tile of rows, this thread's `rows` of the tile from `start` ([`load_tile`] or
    /// [`load_staged_tile`]), into the tables.
    ///
    /// # Safety
    /// As for [`group_by_hash`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn hash_tile<
        const NT: usize,
        const IPT: usize,
        const A: usize,
        const FULL: bool,
        const DENSE: bool,
        const HOT: bool,
    >(
        rows: TileRows<IPT, A>,
        codes: &[u32; A],
        n: usize,
        start: usize,
        shared: bool,
        table: &SharedTable,
        g: &GlobalTable,
        hot_key: u32,
        hot_rows: &mut HotRows<A>,
    ) {
        let (k, raw) = rows;
        let t = thread_idx();
        let in_bounds: [bool; IPT] = core::array::from_fn(|j| FULL || start + j * NT + t < n);
        // Rows of the hot key add up in registers; the others ("live") go to the tables.
        let mut live = in_bounds;
        if HOT {
            for j in 0..IPT {
                if in_bounds[j] && k[j] == hot_key {
                    live[j] = false;
                    hot_rows.add(codes, |a| raw[a][j]);
                }
            }
        }
        // Each row's entry in the shared table: its key's slot, or the lane's spare entry
        // (rows out of bounds, or whose key the table has no room for: those go to the global
        // table, bits of `global`).
        let spare = table.spare();
        let mut entry = [spare; IPT];
        let mut global = 0u32;
        let mut alive = 0u32;
        for (j, &l) in live.iter().enumerate() {
            alive |= (l as u32) << j;
        }
        if shared && DENSE {
            // A dense table's slot is the key's offset from its base, without a branch: keys
            // outside its range go to the global table.
            for j in 0..IPT {
                let s = table.dense_slot(k[j]);
                let held = live[j] && s.is_some();
                entry[j] = if held {
                    table.entry(s.unwrap_or(0))
                } else {
                    spare
                };
                global |= ((live[j] && !held) as u32) << j;
            }
        } else if shared {
            // In a small table most rows find their key in its home slot: one shared load, no
            // branch; the others walk. Larger tables run about 2/3 full, where the first look
            // misses too often to pay: every row walks.
            let mut walk = alive;
            if table.slots <= super::HOME_FIRST_MAX_SLOTS {
                walk = 0;
                for j in 0..IPT {
                    let home = home_slot(k[j], table.slots);
                    let hit = live[j] && table.key(home) == k[j] && k[j] != EMPTY_KEY;
                    entry[j] = if hit { table.entry(home) } else { spare };
                    walk |= ((!hit && live[j]) as u32) << j;
                }
            }
            if walk != 0 {
                for (j, e) in entry.iter_mut().enumerate() {
                    if walk >> j & 1 != 0 {
                        match table.slot(k[j]) {
                            Some(s) => *e = table.entry(s),
                            None => global |= 1 << j,
                        }
                    }
                }
            }
        }
        if shared {
            table.count(&entry);
            for a in 0..A {
                table.update(a, codes[a], &entry, &raw[a]);
            }
        } else {
            global = alive;
        }
        // The rows the shared table does not hold, one merge each: a loop over their bits,
        // so that the merge (a probe and an atomic per accumulator, each kind's code) is
        // inlined once per mode rather than once per item.
        let mut rest = global;
        while rest != 0 {
            let j = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let ops: [u64; A] = core::array::from_fn(|a| acc_operand(codes[a], pick(&raw[a], j)));
            g.merge(pick(&k.map(u64::from), j) as u32, 1, codes, &ops);
        }
    }

    /// `v[j]` by masks (`j < IPT`): an index the compiler cannot resolve would send `v` to
    /// local memory, and a chain of selects it turns back into one.
    #[inline(always)]
    fn pick<const IPT: usize>(v: &[u64; IPT], j: usize) -> u64 {
        let mut out = 0u64;
        for (i, &x) in v.iter().enumerate() {
            out |= x & 0u64.wrapping_sub((i == j) as u64);
        }
        out
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

/// The `CODE` of a hash kernel that reads its accumulators' codes from its parameters.
pub const ANY_CODE: u32 = u32::MAX;

/// The parameters of the hash group-by kernels.
pub type HashArgs = (*const GroupByParams, *mut u32, *mut u32, *mut u64, *mut u32);

/// Hash group-by kernels by accumulator count, for one accumulator by its code:
/// `(params, keys, counts, acc, state)`; the global table's arrays as [`GroupByParams`] says.
/// `STAGED`: whether they take full tiles through shared memory (see `group_by_hash`).
macro_rules! hash_kernels {
    (STAGED = $st:literal; $($spec:ident = $name:ident: $a:literal, $code:expr, NT = $nt:literal, MIN_BLOCKS = $mb:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = $nt, IPT = 4, MIN_BLOCKS = $mb](
                params: *const GroupByParams, keys: *mut u32, counts: *mut u32, acc: *mut u64,
                state: *mut u32
            ) {
                let filled = $crate::shared_array!(groupby_filled: [u32; 1]);
                // SAFETY: the host passes one parameter struct.
                let p = unsafe { params.read() };
                let g = GlobalTable { keys, counts, acc, state, slots: p.global_slots, limit: p.global_limit };
                // SAFETY: the host sizes the columns, the table and the shared memory as
                // `params` says.
                unsafe { group_by_hash::<NT, IPT, $a, { $code }, $st>(&p, g, filled) }
            }
        }
    )*};
}

/// The single-accumulator hash kernels, indexed by the accumulator's [`code`] (`op | type`).
pub const GROUPBY_HASH_ONE: [crate::spec::KernelSpec<HashArgs>; 12] = [
    GROUPBY_HASH_SUM_U32,
    GROUPBY_HASH_SUM_I32,
    GROUPBY_HASH_SUM_F32,
    GROUPBY_HASH_SUM_F64,
    GROUPBY_HASH_MIN_U32,
    GROUPBY_HASH_MIN_I32,
    GROUPBY_HASH_MIN_F32,
    GROUPBY_HASH_MIN_F64,
    GROUPBY_HASH_MAX_U32,
    GROUPBY_HASH_MAX_I32,
    GROUPBY_HASH_MAX_F32,
    GROUPBY_HASH_MAX_F64,
];

hash_kernels! {
    STAGED = false;
    GROUPBY_HASH_0 = groupby_hash_0: 0, ANY_CODE, NT = 1024, MIN_BLOCKS = 2;
    GROUPBY_HASH_SUM_U32 = groupby_hash_sum_u32: 1, code::SUM | code::U32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_SUM_I32 = groupby_hash_sum_i32: 1, code::SUM | code::I32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_SUM_F32 = groupby_hash_sum_f32: 1, code::SUM | code::F32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_SUM_F64 = groupby_hash_sum_f64: 1, code::SUM | code::F64, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MIN_U32 = groupby_hash_min_u32: 1, code::MIN | code::U32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MIN_I32 = groupby_hash_min_i32: 1, code::MIN | code::I32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MIN_F32 = groupby_hash_min_f32: 1, code::MIN | code::F32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MIN_F64 = groupby_hash_min_f64: 1, code::MIN | code::F64, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MAX_U32 = groupby_hash_max_u32: 1, code::MAX | code::U32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MAX_I32 = groupby_hash_max_i32: 1, code::MAX | code::I32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MAX_F32 = groupby_hash_max_f32: 1, code::MAX | code::F32, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_MAX_F64 = groupby_hash_max_f64: 1, code::MAX | code::F64, NT = 512, MIN_BLOCKS = 3;
    GROUPBY_HASH_2 = groupby_hash_2: 2, ANY_CODE, NT = 512, MIN_BLOCKS = 2;
    GROUPBY_HASH_3 = groupby_hash_3: 3, ANY_CODE, NT = 512, MIN_BLOCKS = 2;
    GROUPBY_HASH_4 = groupby_hash_4: 4, ANY_CODE, NT = 512, MIN_BLOCKS = 2;
}

hash_kernels! {
    STAGED = true;
    GROUPBY_HASH_WIDE_1 = groupby_hash_wide_1: 1, ANY_CODE, NT = 1024, MIN_BLOCKS = 1;
    GROUPBY_HASH_WIDE_2 = groupby_hash_wide_2: 2, ANY_CODE, NT = 1024, MIN_BLOCKS = 1;
    GROUPBY_HASH_WIDE_3 = groupby_hash_wide_3: 3, ANY_CODE, NT = 1024, MIN_BLOCKS = 1;
    GROUPBY_HASH_WIDE_4 = groupby_hash_wide_4: 4, ANY_CODE, NT = 1024, MIN_BLOCKS = 1;
}

/// Hash kernels of 1,024 threads by accumulator count, for shared tables so large that one
/// block fills an SM's shared memory: a 512-thread block alone on an SM keeps too few rows in
/// flight. Their tables need [`WIDE_MIN_SLOTS`] slots or more. Those of one to four
/// accumulators take their full tiles through shared memory where the launch gives the room
/// ([`GroupByParams::stage_at`]); the others ignore `stage_at`.
pub const GROUPBY_HASH_WIDE: [crate::spec::KernelSpec<HashArgs>; GROUPBY_MAX_AGGS + 1] = [
    GROUPBY_HASH_0,
    GROUPBY_HASH_WIDE_1,
    GROUPBY_HASH_WIDE_2,
    GROUPBY_HASH_WIDE_3,
    GROUPBY_HASH_WIDE_4,
];

/// Fold kernels by accumulator count: `(params, keys, counts, acc, state)` as the hash
/// kernels take them.
macro_rules! fold_kernels {
    ($($spec:ident = $name:ident: $a:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = 256, IPT = 1](
                params: *const GroupByParams, keys: *mut u32, counts: *mut u32, acc: *mut u64,
                state: *mut u32
            ) {
                // SAFETY: the host passes one parameter struct, read through a reference.
                let p = unsafe { &*params };
                let g = GlobalTable { keys, counts, acc, state, slots: p.global_slots, limit: p.global_limit };
                // SAFETY: the host launches it after the `QUICK_WIDE` launch of `params`.
                unsafe { fold::<NT, $a>(p, g) }
            }
        }
    )*};
}

fold_kernels! {
    GROUPBY_FOLD_0 = groupby_fold_0: 0;
    GROUPBY_FOLD_1 = groupby_fold_1: 1;
    GROUPBY_FOLD_2 = groupby_fold_2: 2;
    GROUPBY_FOLD_3 = groupby_fold_3: 3;
    GROUPBY_FOLD_4 = groupby_fold_4: 4;
}

/// Kernels that fold a [`QUICK_WIDE`] launch's partial tables ([`WideAttempt::partials`])
/// into the global table, by accumulator count: a block of 256 threads folds 32 slots, so a
/// launch for a table of up to `slots` slots takes `(slots + 1).div_ceil(32)` blocks.
pub const GROUPBY_FOLD: [crate::spec::KernelSpec<HashArgs>; GROUPBY_MAX_AGGS + 1] = [
    GROUPBY_FOLD_0,
    GROUPBY_FOLD_1,
    GROUPBY_FOLD_2,
    GROUPBY_FOLD_3,
    GROUPBY_FOLD_4,
];

/// Slots a block of a [`GROUPBY_FOLD`] kernel folds.
pub const FOLD_SLOTS: usize = 32;

/// Threads of a [`GROUPBY_FOLD`] block (the `NT` of `fold_kernels!`, a literal there), which
/// size its shared arrays.
pub const FOLD_THREADS: usize = 256;
const _: () = assert!(GROUPBY_FOLD_0.threads() as usize == FOLD_THREADS);

/// Fewest slots of a shared table in a [`GROUPBY_HASH_WIDE`] kernel: its limit
/// ([`shared_limit`]) leaves a slot free for each of the block's 1,024 threads.
pub const WIDE_MIN_SLOTS: u32 = 4 * 1024;

const _: () = assert!(WIDE_MIN_SLOTS - shared_limit(WIDE_MIN_SLOTS) >= 1024);
const _: () = assert!(GROUPBY_HASH_0.threads() == 1024);

crate::kernel! {
    /// Empties a global table of `len` slots (its `slots + 1`) with `aggs` accumulators.
    GROUPBY_INIT = groupby_init[NT = 256, IPT = 1](
        params: *const GroupByParams, aggs: u32, keys: *mut u32, counts: *mut u32, acc: *mut u64
    ) {
        let stride = crate::arch::grid_dim() * NT;
        // SAFETY: the host passes one parameter struct, read through a reference (a copy
        // lowers to a byte loop into local memory).
        let p = unsafe { &*params };
        let (slots, codes) = (p.global_slots, pack_codes(&p.codes));
        // SAFETY: the arrays hold `global_slots + 1` items.
        unsafe { empty_table(slots, aggs, codes, keys, counts, acc, crate::arch::global_idx(), stride) };
    }
}

/// The accumulators' [`code`]s, 8 bits each, in one word: what emptying a table needs of
/// them, as a scalar kernel argument ([`GROUPBY_SAMPLE`] runs before the parameters are on
/// the device).
pub const fn pack_codes(codes: &[u32; GROUPBY_MAX_AGGS]) -> u32 {
    let mut packed = 0;
    let mut a = 0;
    while a < GROUPBY_MAX_AGGS {
        packed |= (codes[a] & 0xff) << (8 * a);
        a += 1;
    }
    packed
}

/// Accumulator `a`'s code from [`pack_codes`]' word.
#[inline(always)]
pub const fn packed_code(packed: u32, a: usize) -> u32 {
    (packed >> (8 * a)) & 0xff
}
const _: () = assert!(
    u32::BITS - (code::TYPE | code::OP).leading_zeros() <= 8,
    "a code fits its 8 bits"
);

/// Empties the slots `first`, `first + stride`, ... of a global table of `slots + 1` slots:
/// their keys, counts and `aggs` accumulators of the [`pack_codes`] word `codes`.
///
/// # Safety
/// The arrays hold `slots + 1` items (`acc`: `aggs` times that).
#[cfg(target_arch = "nvptx64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn empty_table(
    slots: u32,
    aggs: u32,
    codes: u32,
    keys: *mut u32,
    counts: *mut u32,
    acc: *mut u64,
    first: usize,
    stride: usize,
) {
    let len = slots as usize + 1;
    let mut s = first;
    while s < len {
        // SAFETY: s < len, the arrays' length.
        unsafe {
            keys.add(s).write(EMPTY_KEY);
            counts.add(s).write(0);
            for a in 0..(aggs as usize).min(GROUPBY_MAX_AGGS) {
                acc.add(a * len + s).write(acc_init(packed_code(codes, a)));
            }
        }
        s += stride;
    }
}

crate::kernel! {
    /// Writes each taken slot's key (xor `key_xor`, which makes `i32` keys sort as `u32`) and
    /// slot index, in any order, at places `cursor` hands out (at most `most`: a table that
    /// overflowed holds more keys than its limit, and the host runs again). The cursor's
    /// [`CURSOR_WORDS`] start at 0; [`CURSOR_LOW`] and [`CURSOR_HIGH`] end with the taken
    /// keys' range (xor `key_xor`) for [`GROUPBY_RANK`].
    GROUPBY_COMPACT = groupby_compact[NT = 256, IPT = 1](
        len: u32, key_xor: u32, most: u32, keys: *const u32, counts: *const u32,
        cursor: *mut u32, out_keys: *mut u32, out_slots: *mut u32
    ) {
        use crate::arch::{ballot, lane_id, shfl_idx, warp_reduce};
        let len = len as usize;
        let slots = len - 1;
        // The range of this thread's keys: the greatest key, and the greatest complement.
        let (mut high, mut low_not) = (0u32, 0u32);
        let mut s = crate::arch::global_idx();
        let stride = crate::arch::grid_dim() * NT;
        // Every lane of a warp runs the same number of rounds, so the ballot is converged.
        let rounds = len.div_ceil(stride);
        for _ in 0..rounds {
            // SAFETY: s < len, the arrays' length.
            let taken = s < len && unsafe { counts.add(s).read() } != 0;
            let mask = ballot(taken);
            let mut base = 0u32;
            if lane_id() == 0 && mask != 0 {
                // SAFETY: one cursor word.
                base = unsafe { crate::arch::Atomic::atomic_add(cursor, mask.count_ones()) };
            }
            base = shfl_idx(base, 0);
            let at = base + (mask & ((1u32 << lane_id()) - 1)).count_ones();
            if taken && at < most {
                let key = if s == slots { EMPTY_KEY } else {
                    // SAFETY: s < slots.
                    unsafe { keys.add(s).read() }
                };
                // SAFETY: the outputs hold `most` items.
                unsafe {
                    out_keys.add(at as usize).write(key ^ key_xor);
                    out_slots.add(at as usize).write(s as u32);
                }
                high = high.max(key ^ key_xor);
                low_not = low_not.max(!(key ^ key_xor));
            }
            s += stride;
        }
        let high = warp_reduce(high, u32::max);
        let low_not = warp_reduce(low_not, u32::max);
        if lane_id() == 0 && (high | low_not) != 0 {
            // SAFETY: the cursor's words.
            unsafe {
                crate::arch::Atomic::atomic_max(cursor.add(CURSOR_HIGH), high);
                crate::arch::Atomic::atomic_max(cursor.add(CURSOR_LOW), low_not);
            }
        }
    }
}

/// Words of [`GROUPBY_COMPACT`]'s cursor: the keys taken, then [`CURSOR_LOW`] and
/// [`CURSOR_HIGH`].
pub const CURSOR_WORDS: usize = 3;

/// The cursor's word with the complement of the least compacted key (0 when none).
pub const CURSOR_LOW: usize = 1;

/// The cursor's word with the greatest compacted key.
pub const CURSOR_HIGH: usize = 2;

/// `u64` words of a group's record in the output: its key's bits, its count, then one word
/// per accumulator.
pub const fn record_words(aggs: usize) -> usize {
    2 + aggs
}

/// Words before the records: [`HEAD_GROUPS`] and [`HEAD_RETRY`].
pub const RECORDS_HEADER: usize = 2;

/// The records' header word with the group count.
pub const HEAD_GROUPS: usize = 0;

/// The records' header word that is not 0 where the records are not the grouping's and the
/// host plans again: a hash table overflowed, or a key lay outside the range a tile-local
/// partitioning took from a sample.
pub const HEAD_RETRY: usize = 1;

/// Lanes that rank one key together in [`GROUPBY_RANK`].
pub const RANK_LANES: usize = 8;

/// Keys [`GROUPBY_RANK`] stages for `most` groups: whole groups of four per lane of a
/// key's [`RANK_LANES`] (the rest [`EMPTY_KEY`](crate::hash::EMPTY_KEY), below no key).
pub const fn rank_staged(most: usize) -> usize {
    most.next_multiple_of(4 * RANK_LANES)
}

/// Words of a bitmap over the keys' range that [`GROUPBY_RANK`] has room for, for `most`
/// groups: its staging memory, less the scan's words, halved (the bits, then the counts of
/// bits before each word).
#[cfg(target_arch = "nvptx64")]
const fn rank_bitmap_words(most: usize) -> usize {
    rank_staged(most).saturating_sub(crate::block::ANY_SCAN_WORDS) / 2
}

/// Ranks the `g` compacted keys (xor `key_xor`), which lie within `low .. low + 32 * words`,
/// by a bitmap of that range in shared memory: every block that ranks keys sets the bits of
/// all of them, counts the bits before each word, and ranks its keys (one a thread, `NT`
/// keys from `NT` times its index, striding over the grid) by the bits below theirs.
/// `O(g + words)` a block where counting is `O(g)` a key.
///
/// # Safety
/// The launch gives at least `4 * (2 * words + ANY_SCAN_WORDS)` bytes of dynamic shared
/// memory; `keys` and `slots` hold `g` compacted keys and slots, all keys within the range;
/// the rest as for [`write_record`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn rank_by_bitmap<const NT: usize>(
    g: usize,
    low: u32,
    words: usize,
    key_xor: u32,
    aggs: usize,
    len: usize,
    keys: *const u32,
    slots: *const u32,
    counts: *const u32,
    acc: *const u64,
    records: *mut u64,
) {
    use crate::arch::{Shared, block_idx, grid_dim, shared_atomic, sync_threads, thread_idx};
    use crate::block::{ANY_SCAN_WORDS, block_exclusive_sum_any};
    let first = block_idx() * NT;
    if first >= g {
        return;
    }
    // SAFETY: by contract: the bits (`words`), the counts before each word (`words`), the
    // scan's words.
    let (bits, before, temp) = unsafe {
        let all = crate::arch::dynamic_shared::<u32>(2 * words + ANY_SCAN_WORDS);
        (
            Shared::from_raw(all.ptr(0), words),
            Shared::from_raw(all.ptr(words), words),
            Shared::from_raw(all.ptr(2 * words), ANY_SCAN_WORDS),
        )
    };
    let mut w = thread_idx();
    while w < words {
        // SAFETY: w < words.
        unsafe { bits.write(w, 0) };
        w += NT;
    }
    sync_threads();
    // Eight loads in flight a thread: `g` keys are a few dozen round trips to the L2 else.
    const LOADS: usize = 8;
    let mut j = thread_idx();
    while j < g {
        let k: [u32; LOADS] = core::array::from_fn(|u| {
            let i = j + u * NT;
            // SAFETY: i < g. Past g, the least key, whose bit is set anyway.
            if i < g {
                unsafe { keys.add(i).read() }
            } else {
                low
            }
        });
        for key in k {
            let off = key.wrapping_sub(low);
            // SAFETY: off < 32 * words, by contract.
            unsafe { shared_atomic::or_b32(bits.addr(off as usize / 32), 1 << (off % 32)) };
        }
        j += LOADS * NT;
    }
    sync_threads();
    // Each thread's run of words: their bits counted, the runs' sums scanned, and each
    // word's count of bits before it written.
    let per = words.div_ceil(NT);
    let start = (thread_idx() * per).min(words);
    let end = (start + per).min(words);
    let mut mine = 0;
    for w in start..end {
        // SAFETY: w < words.
        mine += unsafe { bits.read(w) }.count_ones();
    }
    let (mut run, _) = block_exclusive_sum_any(mine, temp);
    for w in start..end {
        // SAFETY: w < words; this thread's words.
        unsafe {
            before.write(w, run);
            run += bits.read(w).count_ones();
        }
    }
    sync_threads();
    let mut i = first + thread_idx();
    while i < g {
        // SAFETY: i < g; the word of the key's offset is below `words`, by contract.
        unsafe {
            let key = keys.add(i).read();
            let off = key.wrapping_sub(low);
            let w = off as usize / 32;
            let below = bits.read(w) & ((1u32 << (off % 32)) - 1);
            let rank = before.read(w) + below.count_ones();
            let s = slots.add(i).read() as usize;
            write_record(
                records,
                rank as usize,
                key ^ key_xor,
                aggs,
                len,
                s,
                counts,
                acc,
            );
        }
        i += grid_dim() * NT;
    }
}

/// Writes group `rank`'s record from table slot `s`.
///
/// # Safety
/// `records` holds the header and record `rank`; the table's arrays hold slot `s`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn write_record(
    records: *mut u64,
    rank: usize,
    key: u32,
    aggs: usize,
    len: usize,
    s: usize,
    counts: *const u32,
    acc: *const u64,
) {
    // SAFETY: by contract.
    unsafe {
        let r = records.add(RECORDS_HEADER + rank * record_words(aggs));
        r.write(key as u64);
        r.add(1).write(counts.add(s).read() as u64);
        for a in 0..aggs {
            r.add(2 + a).write(acc.add(a * len + s).read());
        }
    }
}

crate::kernel! {
    /// The groups in key order: where the `G = min(*cursor, most)` compacted keys (distinct)
    /// span at most 32 times `rank_bitmap_words(most)`, by a bitmap of their range
    /// (`rank_by_bitmap`; a dense table's groups); else by counting: every block stages
    /// them in dynamic shared memory (`4 * rank_staged(most)` bytes), and [`RANK_LANES`] lanes
    /// rank one key by the number below it, each over every `RANK_LANES`-th group of four,
    /// and write its record there (work G^2 / 4 vector loads). Blocks stride over the keys:
    /// any grid ranks them all, and a grid of the resident blocks stages them once a block.
    /// Block 0 writes the header: G and the global table's overflow flag. For small G.
    GROUPBY_RANK = groupby_rank[NT = 256, IPT = 1](
        key_xor: u32, most: u32, len: u32, aggs: u32, cursor: *const u32, state: *const u32,
        keys: *const u32, slots: *const u32, counts: *const u32, acc: *const u64,
        records: *mut u64
    ) {
        use crate::arch::{block_idx, grid_dim, shfl_xor, sync_threads, thread_idx};
        // SAFETY: one cursor word.
        let g = unsafe { cursor.read() }.min(most) as usize;
        if block_idx() == 0 && thread_idx() == 0 {
            // SAFETY: the header's words; the state's.
            unsafe {
                records.add(HEAD_GROUPS).write(g as u64);
                records.add(HEAD_RETRY).write(state.add(STATE_OVERFLOW).read() as u64);
            }
        }
        // SAFETY: the cursor's words.
        let (low, high) = unsafe { (!cursor.add(CURSOR_LOW).read(), cursor.add(CURSOR_HIGH).read()) };
        if g > 0 && low <= high {
            let words = (high - low) as usize / 32 + 1;
            if words <= rank_bitmap_words(most as usize) {
                // SAFETY: the launch gives `4 * rank_staged(most)` bytes; the compaction's
                // keys lie in `low ..= high`.
                unsafe {
                    rank_by_bitmap::<NT>(
                        g, low, words, key_xor, aggs as usize, len as usize, keys, slots, counts,
                        acc, records,
                    )
                };
                return;
            }
        }
        let per_block = NT / RANK_LANES;
        if block_idx() * per_block >= g {
            return;
        }
        let staged_len = rank_staged(g);
        // SAFETY: the launch gives `4 * rank_staged(most)` bytes, at least `staged_len` words.
        let staged = unsafe { crate::arch::dynamic_shared::<u32>(staged_len) };
        let mut j = thread_idx();
        while j < staged_len {
            // SAFETY: j < staged_len; keys below g are compacted.
            let key = if j < g { unsafe { keys.add(j).read() } } else { EMPTY_KEY };
            // SAFETY: j < staged_len.
            unsafe { staged.write(j, key) };
            j += NT;
        }
        sync_threads();
        let part = thread_idx() % RANK_LANES;
        // The block's keys, then those `grid_dim()` blocks on: the same count of rounds for
        // every lane of the block.
        let mut first = block_idx() * per_block;
        while first < g {
            let i = first + thread_idx() / RANK_LANES;
            // SAFETY: i < g.
            let key = if i < g { unsafe { staged.read(i) } } else { 0 };
            let mut rank = 0u32;
            let mut at = staged.addr(4 * part);
            let end = staged.addr(staged_len);
            while at < end {
                // SAFETY: a 16-byte aligned group of four staged words (the array starts the
                // dynamic shared memory, and each group starts at a multiple of four words).
                let [a, b, c, d] = unsafe { crate::arch::load_shared_v4_u32(at) };
                rank += (a < key) as u32 + (b < key) as u32 + (c < key) as u32 + (d < key) as u32;
                at += (16 * RANK_LANES) as u32;
            }
            // Every lane runs the same loop, so the lanes of a key reconverge here.
            let mut m = RANK_LANES as u32 / 2;
            while m > 0 {
                rank += shfl_xor(rank, m);
                m /= 2;
            }
            if part == 0 && i < g {
                // SAFETY: rank < g; `slots` holds g slots of the table.
                unsafe {
                    let s = slots.add(i).read() as usize;
                    write_record(records, rank as usize, key ^ key_xor, aggs as usize, len as usize, s, counts, acc);
                }
            }
            first += grid_dim() * per_block;
        }
    }
}

crate::kernel! {
    /// The groups' records in key order after a sort: record `i` from slot `order[i]`, its key
    /// `sorted[i] ^ key_xor`.
    GROUPBY_GATHER = groupby_gather[NT = 256, IPT = 1](
        groups: u32, key_xor: u32, len: u32, aggs: u32, sorted: *const u32, order: *const u32,
        counts: *const u32, acc: *const u64, records: *mut u64
    ) {
        let groups = groups as usize;
        let mut i = crate::arch::global_idx();
        while i < groups {
            // SAFETY: i < groups; `order` indexes the table's arrays of `len`; the records
            // hold `groups`.
            unsafe {
                let s = order.add(i).read() as usize;
                let key = sorted.add(i).read() ^ key_xor;
                write_record(records, i, key, aggs as usize, len as usize, s, counts, acc);
            }
            i += crate::arch::grid_dim() * NT;
        }
    }
}

crate::kernel! {
    /// The `groups` records of `words` words after the header, field by field: word `f` of
    /// record `i` to `fields[f * groups + i]`, so that the host reads each result column from
    /// consecutive words.
    GROUPBY_RECORD_FIELDS = groupby_record_fields[NT = 256, IPT = 1](
        records: *const u64, groups: u32, words: u32, fields: *mut u64
    ) {
        // Records have at least two words; the bound spares a division check.
        let (g, w) = (groups as usize, (words as usize).max(2));
        let mut i = crate::arch::global_idx();
        while i < g * w {
            let (r, f) = (i / w, i % w);
            // SAFETY: i < g * w, within the records after the header and within the fields.
            unsafe { fields.add(f * g + r).write(records.add(RECORDS_HEADER + i).read()) };
            i += crate::arch::grid_dim() * NT;
        }
    }
}

/// Slots of the sample kernel's shared set: about 1.5 per sampled key, and with a count each
/// within the 48 KB of static shared memory.
pub const GROUPBY_SAMPLE_SLOTS: usize = 6016;

crate::kernel! {
    /// What [`GROUPBY_SAMPLES`] rows spread evenly over the `n` (all of them where fewer) say
    /// about the groups, counted in a shared set of [`GROUPBY_SAMPLE_SLOTS`] slots with a
    /// count each: the [`SAMPLE_WORDS`] (the distinct keys among them, those seen
    /// once and twice, for the host's estimate, see `groups_from_sample_counts` there; the
    /// smallest and largest key as `key ^ key_xor`, for a dense table; the most frequent key
    /// and its rows, for [`hot_key`]). `keys`: the device address of the `n` key words.
    ///
    /// `out` is a state of [`STATE_WORDS`]: the sample's words go to its [`STATE_SAMPLE`] and
    /// its words before them are zeroed. Where `tkeys` is not null, the launch's blocks also
    /// empty a global table of `slots + 1` slots with `aggs` accumulators of the
    /// [`pack_codes`] word `codes` (as [`GROUPBY_INIT`] does), so that an aggregation follows
    /// the sample without set-up of its own; the table's parameters need not be on the
    /// device yet. The blocks also zero the `zero_len` words at `zero` (memory a later launch
    /// needs zeroed, where the host would otherwise queue a memset in front of that launch).
    /// Block 0 samples; any others only empty and zero.
    ///
    /// Where `host` is not 0, it is the device's address of [`crate::spec::HOST_WORDS`]
    /// page-locked host words: the block writes its [`SAMPLE_WORDS`] to words `1..` and then
    /// `seq` to word 0 (a release at system scope), so that the host reads them as soon as
    /// they land, without a copy behind the kernel.
    GROUPBY_SAMPLE = groupby_sample[NT = 1024, IPT = 4](
        keys: u64, n: u32, key_xor: u32, out: *mut u32, host: u64, seq: u32,
        slots: u32, aggs: u32, codes: u32, tkeys: *mut u32, tcounts: *mut u32, tacc: *mut u64,
        zero: *mut u32, zero_len: u32
    ) {
        use crate::arch::{sync_threads, thread_idx};
        use crate::arch::shared_atomic::{cas_u32, max_u32, min_u32, red_add_u32};
        const SLOTS: u32 = GROUPBY_SAMPLE_SLOTS as u32;
        const { assert!(GROUPBY_SAMPLES < GROUPBY_SAMPLE_SLOTS, "an empty slot ends every walk") };
        let set = crate::shared_array!(groupby_sample_set: [u32; GROUPBY_SAMPLE_SLOTS]);
        let counts = crate::shared_array!(groupby_sample_counts: [u32; GROUPBY_SAMPLE_SLOTS]);
        // The empty-slot key's rows, then the distinct keys, those seen once and twice, the
        // smallest and the largest key.
        let stats = crate::shared_array!(groupby_sample_stats: [u32; 6]);
        // The most frequent key: its rows in the high word, the key in the low one.
        let top = crate::shared_array!(groupby_sample_top: [u64; 1]);
        let t = thread_idx();
        let block = crate::arch::block_idx();
        if !tkeys.is_null() {
            let (first, stride) = (block * NT + t, crate::arch::grid_dim() * NT);
            // SAFETY: the table's arrays hold `slots + 1` items (the caller's promise).
            unsafe { empty_table(slots, aggs, codes, tkeys, tcounts, tacc, first, stride) };
        }
        let mut z = block * NT + t;
        while z < zero_len as usize {
            // SAFETY: z < zero_len, the words at `zero` (the caller's promise).
            unsafe { zero.add(z).write(0) };
            z += crate::arch::grid_dim() * NT;
        }
        // The other blocks only empty and zero.
        if block != 0 {
            return;
        }
        let mut s = t;
        while s < GROUPBY_SAMPLE_SLOTS {
            // SAFETY: s < GROUPBY_SAMPLE_SLOTS.
            unsafe {
                set.write(s, EMPTY_KEY);
                counts.write(s, 0);
            }
            s += NT;
        }
        if t < 6 {
            // SAFETY: six words.
            unsafe { stats.write(t, if t == 4 { u32::MAX } else { 0 }) };
        }
        if t == 0 {
            // SAFETY: one word.
            unsafe { top.write(0, 0) };
        }
        if t < STATE_SAMPLE {
            // SAFETY: the state's words before the sample's.
            unsafe { out.add(t).write(0) };
        }
        sync_threads();
        let out = out.wrapping_add(STATE_SAMPLE);
        let (keys, n) = (keys as *const u32, n as usize);
        let samples = n.min(GROUPBY_SAMPLES);
        // Row `j * n / samples` of sample `j`: a shift where `samples` is the constant.
        let row = |j: usize| if n >= GROUPBY_SAMPLES { j * n / GROUPBY_SAMPLES } else { j };
        // Every sampled key loaded before the first is counted: one round trip, not one per
        // key.
        const PER: usize = GROUPBY_SAMPLES / NT;
        const { assert!(PER * NT == GROUPBY_SAMPLES, "the threads' keys cover the sample") };
        let sampled: [u32; PER] = core::array::from_fn(|i| {
            let j = t + i * NT;
            if j < samples {
                // SAFETY: row(j) < n.
                unsafe { keys.add(row(j)).read() }
            } else {
                EMPTY_KEY
            }
        });
        let (mut lo, mut hi) = (u32::MAX, 0u32);
        for (i, &key) in sampled.iter().enumerate() {
            if t + i * NT >= samples {
                continue;
            }
            if key == EMPTY_KEY {
                // SAFETY: one word.
                unsafe { red_add_u32(stats.addr(0), 1) };
            } else {
                (lo, hi) = (lo.min(key ^ key_xor), hi.max(key ^ key_xor));
                let mut h = crate::hash::home_slot(key, SLOTS);
                loop {
                    // A slot that holds the key already takes no compare-and-swap (few keys:
                    // every row's swap would queue on one word).
                    // SAFETY: h < SLOTS; fewer keys than slots, so the walk ends. A race with
                    // another thread's swap is benign: a stale EMPTY_KEY goes to the swap,
                    // which returns the key that won.
                    let seen = unsafe { crate::arch::load_shared_u32(set.addr(h as usize)) };
                    let old = if seen == EMPTY_KEY {
                        // SAFETY: as above.
                        unsafe { cas_u32(set.addr(h as usize), EMPTY_KEY, key) }
                    } else {
                        seen
                    };
                    if old == EMPTY_KEY || old == key {
                        // SAFETY: h < SLOTS.
                        unsafe { red_add_u32(counts.addr(h as usize), 1) };
                        break;
                    }
                    h = crate::hash::next_slot(h, SLOTS);
                }
            }
        }
        // One atomic per warp for the block's range.
        let lo = crate::arch::warp_reduce(lo, |a, b| a.min(b));
        let hi = crate::arch::warp_reduce(hi, |a, b| a.max(b));
        if lo <= hi && crate::arch::lane_id() == 0 {
            // SAFETY: two words.
            unsafe {
                min_u32(stats.addr(4), lo);
                max_u32(stats.addr(5), hi);
            }
        }
        sync_threads();
        // The set's keys, and the empty-slot key as one more where the sample holds it.
        let mut mine = [0u32; 3];
        let mut best = 0u64;
        let mut tally = |c: u32, key: u32| {
            if c != 0 {
                mine[0] += 1;
                mine[1] += (c == 1) as u32;
                mine[2] += (c == 2) as u32;
                best = best.max((c as u64) << 32 | key as u64);
            }
        };
        let mut s = t;
        while s < GROUPBY_SAMPLE_SLOTS {
            // SAFETY: s < GROUPBY_SAMPLE_SLOTS; complete after the barrier.
            unsafe { tally(counts.read(s), set.read(s)) };
            s += NT;
        }
        if t == 0 {
            // SAFETY: one word, complete after the barrier.
            tally(unsafe { stats.read(0) }, EMPTY_KEY);
        }
        // A warp's tallies first, then one atomic per warp (the 64-bit maximum is a
        // compare-and-swap loop).
        let mine = mine.map(|m| crate::arch::warp_reduce(m, |a, b| a + b));
        let best = crate::arch::warp_reduce(best, |a, b| a.max(b));
        if crate::arch::lane_id() == 0 {
            for (i, &m) in mine.iter().enumerate() {
                if m != 0 {
                    // SAFETY: words 1 to 3.
                    unsafe { red_add_u32(stats.addr(1 + i), m) };
                }
            }
            if best != 0 {
                // SAFETY: one word.
                unsafe { crate::arch::shared_atomic::max_u64(top.addr(0), best) };
            }
        }
        sync_threads();
        // Word `i` of the sample's: the stats, then the most frequent key and its rows.
        let word = |i: usize| {
            // SAFETY: i < SAMPLE_WORDS; the stats are complete after the barrier.
            unsafe {
                match i {
                    0..5 => stats.read(1 + i),
                    5 => top.read(0) as u32,
                    _ => (top.read(0) >> 32) as u32,
                }
            }
        };
        if t < SAMPLE_WORDS {
            // SAFETY: SAMPLE_WORDS output words.
            unsafe { out.add(t).write(word(t)) };
        }
        if t == 0 && host != 0 {
            let host = host as *mut u32;
            // SAFETY: HOST_WORDS > SAMPLE_WORDS words at `host` (the caller's promise); the
            // release makes the words land before the sequence number that vouches for them.
            unsafe {
                for i in 0..SAMPLE_WORDS {
                    host.add(1 + i).write(word(i));
                }
                crate::arch::store_release_sys_u32(host, seq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ordered bits sort as the floats' total order with every NaN on top, and map back
    /// (NaN to the canonical NaN).
    #[test]
    fn ordered_floats_keep_the_documented_order() {
        let f = [
            f32::NEG_INFINITY,
            -3.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            1e-40,
            2.0,
            f32::MAX,
            f32::INFINITY,
        ];
        for w in f.windows(2) {
            assert!(
                ordered_f32(w[0].to_bits()) < ordered_f32(w[1].to_bits()),
                "{w:?}"
            );
            let (a, b) = (w[0] as f64, w[1] as f64);
            assert!(ordered_f64(a.to_bits()) < ordered_f64(b.to_bits()), "{w:?}");
        }
        for x in f {
            assert_eq!(unordered_f32(ordered_f32(x.to_bits())), x.to_bits());
            let d = x as f64;
            assert_eq!(unordered_f64(ordered_f64(d.to_bits())), d.to_bits());
        }
        for nan in [f32::NAN, -f32::NAN, f32::from_bits(0x7f80_0001)] {
            assert_eq!(ordered_f32(nan.to_bits()), u32::MAX);
            assert!(ordered_f32(f32::INFINITY.to_bits()) < u32::MAX);
            assert_eq!(unordered_f32(u32::MAX), f32::NAN.to_bits());
            let d = nan as f64;
            assert_eq!(ordered_f64(d.to_bits()), u64::MAX);
            assert_eq!(unordered_f64(u64::MAX), f64::NAN.to_bits());
        }
    }

    /// A block's partial table takes no more than its dense shared table, so that the
    /// shared memory a wide launch plans in bounds both.
    #[test]
    fn partial_tables_fit_the_shared_tables_they_copy() {
        for aggs in 0..=GROUPBY_MAX_AGGS {
            for slots in [1, 255, WIDE_MIN_SLOTS, 10_656, 1 << 15] {
                let shared = shared_table_bytes(slots, 1, aggs, TableForm { dense: true });
                assert!(
                    partial_bytes(slots, aggs) <= shared,
                    "{slots} slots, {aggs}"
                );
            }
        }
    }

    /// Every accumulator's code comes back from the packed word, whatever the others.
    #[test]
    fn packed_codes_round_trip() {
        let all: [u32; 12] = core::array::from_fn(|i| (i as u32 / 4) * 4 + i as u32 % 4);
        for first in 0..all.len() {
            let codes: [u32; GROUPBY_MAX_AGGS] =
                core::array::from_fn(|a| all[(first + 5 * a) % all.len()]);
            let packed = pack_codes(&codes);
            for (a, &c) in codes.iter().enumerate() {
                assert_eq!(packed_code(packed, a), c, "{codes:?}");
                assert_eq!(acc_init(packed_code(packed, a)), acc_init(c));
            }
        }
    }

    /// Partial tables only for a wide launch given them, with a dense plan whose table fits
    /// the stride; each condition alone turns them off.
    #[test]
    fn partials_need_every_condition() {
        let dense = SharedPlan {
            slots: 10_656,
            copies: 1,
            dense_base: Some(7),
        };
        let p = GroupByParams {
            quick: QUICK_WIDE,
            wide: WideAttempt {
                stride: partial_bytes(dense.slots, 1) as u32,
                partials: 1 << 20,
                blocks: 132,
                ..WideAttempt::default()
            },
            ..GroupByParams::default()
        };
        assert!(takes_partials(&p, &dense, 1));
        let first = GroupByParams {
            quick: QUICK_FIRST,
            ..p
        };
        assert!(!takes_partials(&first, &dense, 1));
        let mut none = p;
        none.wide.partials = 0;
        assert!(!takes_partials(&none, &dense, 1));
        let hashed = SharedPlan {
            dense_base: None,
            ..dense
        };
        assert!(!takes_partials(&p, &hashed, 1));
        assert!(
            !takes_partials(&p, &dense, 2),
            "the table outgrows the stride"
        );
    }

    /// The single-accumulator kernels sit at their codes.
    #[test]
    fn single_accumulator_kernels_are_indexed_by_code() {
        for (op, on) in [(code::SUM, "sum"), (code::MIN, "min"), (code::MAX, "max")] {
            for (ty, tn) in [
                (code::U32, "u32"),
                (code::I32, "i32"),
                (code::F32, "f32"),
                (code::F64, "f64"),
            ] {
                let name = GROUPBY_HASH_ONE[(op | ty) as usize].name();
                assert_eq!(name, std::format!("groupby_hash_{on}_{tn}"));
            }
        }
    }

    /// Integer and float operands and results round-trip through the accumulator words.
    #[test]
    fn accumulator_words_round_trip() {
        for v in [0i32, 1, -1, i32::MIN, i32::MAX] {
            let raw = v as u32 as u64;
            assert_eq!(acc_operand(code::SUM | code::I32, raw) as i64, v as i64);
            for op in [code::MIN, code::MAX] {
                let w = acc_operand(op | code::I32, raw);
                assert_eq!(acc_result(op | code::I32, w) as u32 as i32, v);
            }
        }
        assert!(
            acc_operand(code::MIN | code::I32, (-1i32) as u32 as u64)
                < acc_operand(code::MIN | code::I32, 0)
        );
        let x = -2.5f32;
        let w = acc_operand(code::SUM | code::F32, x.to_bits() as u64);
        assert_eq!(f64::from_bits(w), -2.5);
        let w = acc_operand(code::MAX | code::F32, x.to_bits() as u64);
        assert_eq!(acc_result(code::MAX | code::F32, w) as u32, x.to_bits());
    }
}
