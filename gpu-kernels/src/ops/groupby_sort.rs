//! Sort-based group-by (issue 22; seed 000's sort, boundary flags, scan and reduce by key):
//! after the radix sort of the keys with a payload (the value bits of the one 32-bit column
//! every accumulator reads, or row ids), one pass reduces each run of equal keys into its
//! group's record, in key order by construction.
//!
//! A block takes one tile of `NT * IPT` consecutive sorted rows, `IPT` per thread. A row is a
//! head where its key differs from the row before, and a run's group is the rank of its head
//! among all heads: the tile's share comes from the decoupled look-back over the tiles' head
//! counts, the rank within the tile from a segmented scan over the threads (per thread: its
//! heads, and the count and accumulators since the last of them). Every run's part in the
//! tile is complete at its last row there, which writes it: a run with its head in the tile
//! writes its group's record with plain stores; the part of the run that enters the tile from
//! before (at most one a tile) goes to the tile's carry, which [`GROUPBY_RUNS_CARRY`] adds to
//! that group with atomics once the pass is done. Work per row does not depend on the runs'
//! lengths, so one group over every row costs what all-distinct keys cost.
//!
//! The records are [`record_words`](crate::ops::groupby::record_words) words each after a
//! [`RECORDS_HEADER`](crate::ops::groupby::RECORDS_HEADER), as the hash
//! group-by writes them: key bits, count, accumulator words (forms of
//! [`crate::ops::groupby`]).
use crate::ops::groupby::GROUPBY_MAX_AGGS;
#[cfg(target_arch = "nvptx64")]
use crate::ops::groupby::{ANY_CODE, code};

/// Parameters of a sort-based reduction.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct RunsParams {
    /// Device address of the `n` sorted key words (`u32`, `i32` bits in `i32` order, or `u64`
    /// for the `GROUPBY_RUNS64_*` kernels).
    pub keys: u64,
    /// Device address of the `n` sorted payload words (see `rows`); unused without
    /// accumulators.
    pub payload: u64,
    /// With `rows`, the device address of each accumulator's value column.
    pub values: [u64; GROUPBY_MAX_AGGS],
    /// Each accumulator's [`code`](crate::ops::groupby::code).
    pub codes: [u32; GROUPBY_MAX_AGGS],
    /// Rows.
    pub n: u32,
    /// 1: the payload holds row ids and each accumulator reads its value column there; 0:
    /// the payload holds the value bits of a 32-bit column (every accumulator reads them).
    pub rows: u32,
}

/// Dynamic shared memory of a reduction kernel (`GROUPBY_RUNS_*`) of `tile` rows with `aggs`
/// accumulators: the tile's records, staged.
pub const fn staged_bytes(tile: usize, aggs: usize) -> usize {
    8 * tile * crate::ops::groupby::record_words(aggs)
}

/// `u64` words of a tile's carry: the group it belongs to, the count (0: no carry), then one
/// word per accumulator.
pub const fn carry_words(aggs: usize) -> usize {
    2 + aggs
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{RunsParams, carry_words};
    use crate::arch::{Shared, Shuffle, lane_id, load_vector, shfl_up, sync_threads, thread_idx};
    use crate::ops::groupby::{ANY_CODE, acc_combine, acc_init, acc_operand, code};
    use crate::ops::groupby::{HEAD_GROUPS, HEAD_RETRY, RECORDS_HEADER, record_words};

    /// The part of a run a span of rows holds: the heads among them, and the count and
    /// accumulators of the rows since the last head (all of them without one).
    #[derive(Clone, Copy)]
    pub struct Part<const A: usize> {
        heads: u32,
        count: u32,
        acc: [u64; A],
    }

    impl<const A: usize> Shuffle for Part<A> {
        #[inline(always)]
        fn shuffle_words(self, f: impl Fn(u32) -> u32) -> Self {
            Part {
                heads: f(self.heads),
                count: f(self.count),
                acc: self.acc.map(|w| w.shuffle_words(&f)),
            }
        }
    }

    impl<const A: usize> Part<A> {
        #[inline(always)]
        fn empty(codes: &[u32; A]) -> Self {
            Part {
                heads: 0,
                count: 0,
                acc: core::array::from_fn(|a| acc_init(codes[a])),
            }
        }

        /// The rows of `self` followed by those of `later`.
        #[inline(always)]
        fn then(self, later: Self, codes: &[u32; A]) -> Self {
            if later.heads > 0 {
                Part {
                    heads: self.heads + later.heads,
                    ..later
                }
            } else {
                Part {
                    heads: self.heads,
                    count: self.count + later.count,
                    acc: core::array::from_fn(|a| acc_combine(codes[a], self.acc[a], later.acc[a])),
                }
            }
        }

        /// `self` followed by one row with these operands.
        #[inline(always)]
        fn row(self, head: bool, ops: &[u64; A], codes: &[u32; A]) -> Self {
            if head {
                Part {
                    heads: self.heads + 1,
                    count: 1,
                    acc: *ops,
                }
            } else {
                Part {
                    heads: self.heads,
                    count: self.count + 1,
                    acc: core::array::from_fn(|a| acc_combine(codes[a], self.acc[a], ops[a])),
                }
            }
        }
    }

    /// Shared memory of [`reduce_runs`]: each warp's [`Part`] (heads and counts, then the
    /// accumulator words) and the look-back's word.
    #[derive(Clone, Copy)]
    pub struct RunsShared {
        /// `2 * NT / 32` words.
        pub warp_words: Shared<u32>,
        /// `A * NT / 32` words.
        pub warp_acc: Shared<u64>,
        /// One word.
        pub slot: Shared<u32>,
        /// The tile's records: [`staged_bytes`](super::staged_bytes) of dynamic shared
        /// memory.
        pub staged: Shared<u64>,
    }

    /// A sorted key word: a `u32` key, or a `u64` one (packed composite and 64-bit keys).
    pub trait RunKey: Copy + PartialEq + Default {
        /// The key's bits in a record's key word.
        fn word(self) -> u64;
    }
    impl RunKey for u32 {
        #[inline(always)]
        fn word(self) -> u64 {
            self as u64
        }
    }
    impl RunKey for u64 {
        #[inline(always)]
        fn word(self) -> u64 {
            self
        }
    }

    /// `IPT` consecutive words from `at`, `valid` of them read (a full thread's rows in
    /// 16-byte loads).
    ///
    /// # Safety
    /// `at .. at + valid` is readable; with `valid == IPT`, `at` is 16-byte aligned.
    #[inline(always)]
    unsafe fn load_rows<T: Copy + Default, const IPT: usize>(
        at: *const T,
        valid: usize,
    ) -> [T; IPT] {
        let mut w = [T::default(); IPT];
        if valid == IPT {
            // Words per 16-byte load: 4 `u32` or 2 `u64` (IPT is a multiple of 4).
            let v = 16 / core::mem::size_of::<T>();
            for g in 0..IPT / v {
                // SAFETY: by contract, in bounds and aligned.
                unsafe {
                    if v == 4 {
                        w[4 * g..4 * g + 4].copy_from_slice(&load_vector::<T, 4>(at.add(4 * g)));
                    } else {
                        w[2 * g..2 * g + 2].copy_from_slice(&load_vector::<T, 2>(at.add(2 * g)));
                    }
                }
            }
        } else {
            for (j, x) in w.iter_mut().enumerate().take(valid) {
                // SAFETY: j < valid.
                *x = unsafe { at.add(j).read() };
            }
        }
        w
    }

    /// Reduces this block's tile of sorted rows: records of the runs whose heads it holds,
    /// the carry of the run that enters it, the header (last tile).
    ///
    /// # Safety
    /// `p` describes `n` sorted rows; `status` holds `STATUS_STRIDE` zeroed words per tile
    /// (one tile per block, grid = tiles); `records` the header and a record per distinct
    /// key; `carry` [`carry_words`] words per tile; `sh.staged` room for `NT * IPT` records.
    #[inline(always)]
    pub unsafe fn reduce_runs<
        K: RunKey,
        const NT: usize,
        const IPT: usize,
        const A: usize,
        const CODE: u32,
    >(
        p: &RunsParams,
        status: *mut u64,
        records: *mut u64,
        carry: *mut u64,
        sh: RunsShared,
    ) {
        const { assert!(IPT.is_multiple_of(4) && NT.is_multiple_of(32)) };
        // A kernel for one accumulator code has it as a constant: every dispatch on it folds.
        let codes: [u32; A] =
            core::array::from_fn(|a| if CODE == ANY_CODE { p.codes[a] } else { CODE });
        let n = p.n as usize;
        let tile = crate::arch::block_idx();
        let tiles = crate::arch::grid_dim();
        let tile_start = tile * NT * IPT;
        let tile_end = n.min(tile_start + NT * IPT);
        let base = tile_start + thread_idx() * IPT;
        let valid = tile_end.saturating_sub(base).min(IPT);
        let keys = p.keys as *const K;
        // SAFETY: rows base .. base + valid exist; base is a multiple of IPT (of 4) from an
        // aligned column.
        let k: [K; IPT] = unsafe { load_rows::<K, IPT>(keys.add(base), valid) };
        // The key before this thread's first row, and the one after its last, where the tile
        // holds them (a run ends at the tile's last row regardless).
        // SAFETY: 0 < base <= base + valid - 1 < n.
        let before = if base > 0 && valid > 0 {
            unsafe { keys.add(base - 1).read() }
        } else {
            K::default()
        };
        let after = if valid == IPT && base + IPT < tile_end {
            // SAFETY: base + IPT < tile_end <= n.
            unsafe { keys.add(base + IPT).read() }
        } else {
            K::default()
        };
        let head: [bool; IPT] = core::array::from_fn(|j| {
            let prev = if j == 0 { before } else { k[j - 1] };
            j < valid && (base + j == 0 || k[j] != prev)
        });
        let end: [bool; IPT] = core::array::from_fn(|j| {
            let next = if j + 1 < IPT { k[j + 1] } else { after };
            j < valid && (base + j + 1 == tile_end || next != k[j])
        });
        let ops: [[u64; A]; IPT] = if A == 0 || valid == 0 {
            [[0; A]; IPT]
        } else {
            let payload = p.payload as *const u32;
            // SAFETY: as for the keys.
            let pay: [u32; IPT] = unsafe { load_rows::<u32, IPT>(payload.add(base), valid) };
            core::array::from_fn(|j| {
                core::array::from_fn(|a| {
                    let raw = if j >= valid {
                        return acc_init(codes[a]);
                    } else if p.rows == 0 {
                        pay[j] as u64
                    } else if codes[a] & code::TYPE == code::F64 {
                        // SAFETY: the payload holds row ids below n of the value column.
                        unsafe { (p.values[a] as *const u64).add(pay[j] as usize).read() }
                    } else {
                        // SAFETY: as above.
                        unsafe { (p.values[a] as *const u32).add(pay[j] as usize).read() as u64 }
                    };
                    acc_operand(codes[a], raw)
                })
            })
        };

        // The thread's part, then the segmented scan over the block: warps by shuffles,
        // then the warps' parts through shared memory.
        let mut total = Part::<A>::empty(&codes);
        for j in 0..IPT {
            if j < valid {
                total = total.row(head[j], &ops[j], &codes);
            }
        }
        let lane = lane_id();
        let mut inclusive = total;
        let mut d = 1;
        while d < 32 {
            let up = shfl_up(inclusive, d);
            if lane >= d {
                inclusive = up.then(inclusive, &codes);
            }
            d *= 2;
        }
        let warp = thread_idx() / 32;
        let warps = NT / 32;
        if lane == 31 {
            // SAFETY: warp < NT / 32; the arrays hold 2 and A words per warp.
            unsafe {
                sh.warp_words.write(2 * warp, inclusive.heads);
                sh.warp_words.write(2 * warp + 1, inclusive.count);
                for a in 0..A {
                    sh.warp_acc.write(a * warps + warp, inclusive.acc[a]);
                }
            }
        }
        let from_lane = shfl_up(inclusive, 1);
        sync_threads();
        let mut state = Part::<A>::empty(&codes);
        let mut tile_heads = 0;
        for w in 0..warps {
            // SAFETY: w < NT / 32.
            let part = unsafe {
                Part {
                    heads: sh.warp_words.read(2 * w),
                    count: sh.warp_words.read(2 * w + 1),
                    acc: core::array::from_fn(|a| sh.warp_acc.read(a * warps + w)),
                }
            };
            if w < warp {
                state = state.then(part, &codes);
            }
            tile_heads += part.heads;
        }
        if lane > 0 {
            state = state.then(from_lane, &codes);
        }
        // SAFETY: one tile per block in block order; the status words are zeroed (epoch 0).
        let tile_base =
            unsafe { crate::block::block_tile_prefix(status, tile, tile_heads, 0, sh.slot) };
        if tile == tiles - 1 && thread_idx() == 0 {
            // SAFETY: the header's two words.
            unsafe {
                records
                    .add(HEAD_GROUPS)
                    .write((tile_base + tile_heads) as u64);
                records.add(HEAD_RETRY).write(0);
            }
        }
        let cw = carry_words(A);
        if thread_idx() == 0 && head[0] {
            // SAFETY: this tile's carry words; no run enters the tile.
            unsafe { carry.add(tile * cw + 1).write(0) };
        }
        // The tile's records go to shared memory first (record `l` of the tile at `l * w`),
        // then out in one coalesced copy: written where they end, a warp's stores would touch
        // a line per lane.
        let w = record_words(A);
        for j in 0..IPT {
            if j >= valid {
                continue;
            }
            state = state.row(head[j], &ops[j], &codes);
            if !end[j] {
                continue;
            }
            if state.heads > 0 {
                let at = (state.heads - 1) as usize * w;
                // SAFETY: a tile has at most NT * IPT records, the staging area's room.
                unsafe {
                    sh.staged.write(at, k[j].word());
                    sh.staged.write(at + 1, state.count as u64);
                    for a in 0..A {
                        sh.staged.write(at + 2 + a, state.acc[a]);
                    }
                }
            } else {
                // SAFETY: this tile's carry words; a run entering the tile follows at least
                // one head (row 0's), so `tile_base >= 1`.
                unsafe {
                    let at = carry.add(tile * cw);
                    at.write((tile_base - 1) as u64);
                    at.add(1).write(state.count as u64);
                    for a in 0..A {
                        at.add(2 + a).write(state.acc[a]);
                    }
                }
            }
        }
        sync_threads();
        let words = tile_heads as usize * w;
        // SAFETY: records `tile_base .. tile_base + tile_heads` are this tile's.
        let out = unsafe { records.add(RECORDS_HEADER + tile_base as usize * w) };
        let mut i = thread_idx();
        while i < words {
            // SAFETY: i < words, within the staged records and this tile's records.
            unsafe { out.add(i).write(sh.staged.read(i)) };
            i += NT;
        }
    }

    /// Adds tile `t`'s carry (if any) to its group's record.
    ///
    /// # Safety
    /// `carry` holds tile `t`'s words as [`reduce_runs`] wrote them; `records` the group.
    #[inline(always)]
    pub unsafe fn merge_carry<const A: usize>(
        codes: &[u32; A],
        t: usize,
        carry: *const u64,
        records: *mut u64,
    ) {
        let c = carry.wrapping_add(t * carry_words(A));
        // SAFETY: by contract.
        unsafe {
            let count = c.add(1).read();
            if count == 0 {
                return;
            }
            let g = c.read() as usize;
            let r = records.add(RECORDS_HEADER + g * record_words(A));
            crate::arch::red_global::add_u64(r.add(1), count);
            for a in 0..A {
                crate::ops::groupby::red_acc(r.add(2 + a), codes[a], c.add(2 + a).read());
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

/// The arguments of the reduction kernels: `(params, status, records, carry)`.
pub type RunsArgs = (*const RunsParams, *mut u64, *mut u64, *mut u64);

/// The arguments of the carry kernels: `(params, tiles, carry, records)`.
pub type CarryArgs = (*const RunsParams, u32, *const u64, *mut u64);

macro_rules! runs_kernels {
    ($($runs:ident = $rname:ident: $k:ty, $a:literal, $code:expr, MIN_BLOCKS = $mb:literal;)*) => {$(
        $crate::kernel! {
            $runs = $rname[NT = 256, IPT = 8, MIN_BLOCKS = $mb](
                params: *const RunsParams, status: *mut u64, records: *mut u64, carry: *mut u64
            ) {
                let sh = RunsShared {
                    warp_words: $crate::shared_array!(runs_warp_words: [u32; 2 * NT / 32]),
                    warp_acc: $crate::shared_array!(runs_warp_acc: [u64; GROUPBY_MAX_AGGS * NT / 32]),
                    slot: $crate::shared_array!(runs_slot: [u32; 1]),
                    // SAFETY: the host gives `staged_bytes(NT * IPT, A)` bytes.
                    staged: unsafe {
                        $crate::arch::dynamic_shared::<u64>(staged_bytes(NT * IPT, $a) / 8)
                    },
                };
                // SAFETY: the host passes one parameter struct.
                let p = unsafe { params.read() };
                // SAFETY: the host sizes the launch, status, records and carries as
                // `reduce_runs` asks.
                unsafe { reduce_runs::<$k, NT, IPT, $a, { $code }>(&p, status, records, carry, sh) }
            }
        }
    )*};
}

macro_rules! carry_kernels {
    ($($carry:ident = $cname:ident: $a:literal;)*) => {$(
        $crate::kernel! {
            $carry = $cname[NT = 256, IPT = 1](
                params: *const RunsParams, tiles: u32, carry: *const u64, records: *mut u64
            ) {
                // SAFETY: the host passes one parameter struct.
                let p = unsafe { params.read() };
                let codes: [u32; $a] = core::array::from_fn(|a| p.codes[a]);
                let mut t = $crate::arch::global_idx();
                while t < tiles as usize {
                    // SAFETY: the carries of `tiles` tiles after their reduction.
                    unsafe { merge_carry::<$a>(&codes, t, carry, records) };
                    t += $crate::arch::grid_dim() * NT;
                }
            }
        }
    )*};
}

runs_kernels! {
    GROUPBY_RUNS_0 = groupby_runs_0: u32, 0, ANY_CODE, MIN_BLOCKS = 3;
    GROUPBY_RUNS_SUM_U32 = groupby_runs_sum_u32: u32, 1, code::SUM | code::U32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_SUM_I32 = groupby_runs_sum_i32: u32, 1, code::SUM | code::I32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_SUM_F32 = groupby_runs_sum_f32: u32, 1, code::SUM | code::F32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_SUM_F64 = groupby_runs_sum_f64: u32, 1, code::SUM | code::F64, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MIN_U32 = groupby_runs_min_u32: u32, 1, code::MIN | code::U32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MIN_I32 = groupby_runs_min_i32: u32, 1, code::MIN | code::I32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MIN_F32 = groupby_runs_min_f32: u32, 1, code::MIN | code::F32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MIN_F64 = groupby_runs_min_f64: u32, 1, code::MIN | code::F64, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MAX_U32 = groupby_runs_max_u32: u32, 1, code::MAX | code::U32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MAX_I32 = groupby_runs_max_i32: u32, 1, code::MAX | code::I32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MAX_F32 = groupby_runs_max_f32: u32, 1, code::MAX | code::F32, MIN_BLOCKS = 3;
    GROUPBY_RUNS_MAX_F64 = groupby_runs_max_f64: u32, 1, code::MAX | code::F64, MIN_BLOCKS = 3;
    GROUPBY_RUNS_2 = groupby_runs_2: u32, 2, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_RUNS_3 = groupby_runs_3: u32, 3, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_RUNS_4 = groupby_runs_4: u32, 4, ANY_CODE, MIN_BLOCKS = 1;
    GROUPBY_RUNS64_0 = groupby_runs64_0: u64, 0, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_RUNS64_1 = groupby_runs64_1: u64, 1, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_RUNS64_2 = groupby_runs64_2: u64, 2, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_RUNS64_3 = groupby_runs64_3: u64, 3, ANY_CODE, MIN_BLOCKS = 2;
    GROUPBY_RUNS64_4 = groupby_runs64_4: u64, 4, ANY_CODE, MIN_BLOCKS = 1;
}

carry_kernels! {
    GROUPBY_RUNS_CARRY_0 = groupby_runs_carry_0: 0;
    GROUPBY_RUNS_CARRY_1 = groupby_runs_carry_1: 1;
    GROUPBY_RUNS_CARRY_2 = groupby_runs_carry_2: 2;
    GROUPBY_RUNS_CARRY_3 = groupby_runs_carry_3: 3;
    GROUPBY_RUNS_CARRY_4 = groupby_runs_carry_4: 4;
}

/// The single-accumulator reduction kernels, indexed by the accumulator's
/// [`code`](crate::ops::groupby::code) (`op | type`).
pub const GROUPBY_RUNS_ONE: [crate::spec::KernelSpec<RunsArgs>; 12] = [
    GROUPBY_RUNS_SUM_U32,
    GROUPBY_RUNS_SUM_I32,
    GROUPBY_RUNS_SUM_F32,
    GROUPBY_RUNS_SUM_F64,
    GROUPBY_RUNS_MIN_U32,
    GROUPBY_RUNS_MIN_I32,
    GROUPBY_RUNS_MIN_F32,
    GROUPBY_RUNS_MIN_F64,
    GROUPBY_RUNS_MAX_U32,
    GROUPBY_RUNS_MAX_I32,
    GROUPBY_RUNS_MAX_F32,
    GROUPBY_RUNS_MAX_F64,
];

/// The carry kernels by accumulator count.
pub const GROUPBY_RUNS_CARRY: [crate::spec::KernelSpec<CarryArgs>; GROUPBY_MAX_AGGS + 1] = [
    GROUPBY_RUNS_CARRY_0,
    GROUPBY_RUNS_CARRY_1,
    GROUPBY_RUNS_CARRY_2,
    GROUPBY_RUNS_CARRY_3,
    GROUPBY_RUNS_CARRY_4,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_have_no_padding() {
        assert_eq!(size_of::<RunsParams>(), 8 * 6 + 4 * GROUPBY_MAX_AGGS + 8);
        assert_eq!(carry_words(0), 2);
    }
}
