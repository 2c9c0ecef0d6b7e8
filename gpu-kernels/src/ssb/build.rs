//! The dimension builds: one launch builds every dimension a query joins. A block takes a tile
//! of one dimension, evaluates the plan's predicates on the columns it names (each loaded only
//! where rows still qualify), and inserts the qualifying keys with their group value into the
//! dimension's `DenseMap` and `BitFilter` (and its `CodeMap` when the plan gives it one); it
//! also widens the plan's range of group values, which fixes the query's group layout. The
//! same launch clears the group slots the last query used, so that a query is two memsets,
//! this kernel and its probe: a query takes well under a millisecond, so every launch the host
//! queues is a visible share of it.
//!
//! Each column is read only where rows still qualify, not in full and at once to cut the
//! builds' chains of load latencies: the part and customer builds would read more than they
//! wait.
#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{Atomic, Shared, block_idx, grid_dim, thread_idx};
    use crate::block::*;
    use crate::ssb::plan::{DIMS, DimJob, JOB_COLS, PRED_COLS, Plan};
    use crate::ssb::{BitFilter, CodeMap, DenseMap, load, load_sel};

    /// The block's share of the query's builds: the joined dimensions' tiles (dimensions with
    /// a nonzero `LEN` in the plan, in order) are numbered across dimensions, and block `b`
    /// builds tile `b` if there is one.
    ///
    /// # Safety
    /// `jobs` is the job table (one [`DimJob`] per dimension) of columns that hold its row counts; `plan` describes
    /// `payload` and `bits`, whose slots of the joined dimensions are zeroed.
    #[inline(always)]
    pub unsafe fn build_dimensions<const NT: usize, const IPT: usize>(
        jobs: *const DimJob,
        payload: *mut u16,
        bits: *mut u32,
        plan: *mut Plan,
        temp: [Shared<u32>; 2],
    ) {
        let mut tile = block_idx();
        for d in 0..DIMS {
            // SAFETY: within the plan and the job table; the values are the same for every
            // thread, so the branch below is uniform over the block.
            unsafe {
                let (dim, job) = (&raw const (*plan).dims[d], jobs.add(d));
                let rows = if (*dim).len != 0 {
                    (*job).rows as usize
                } else {
                    0
                };
                let tiles = rows.div_ceil(NT * IPT);
                if tile < tiles {
                    let col = #[inline(always)]
                    |c: usize| (*job).cols[c] as *const i32;
                    let cols = [col(1), col(2), col(3), col(4)];
                    let group = col((*dim).group_col as usize % JOB_COLS);
                    let start = tile * NT * IPT;
                    build_tile::<NT, IPT>(
                        col(0),
                        cols,
                        group,
                        start,
                        rows,
                        d,
                        payload,
                        bits,
                        plan,
                        temp,
                    );
                    return;
                }
                tile -= tiles;
            }
        }
    }

    /// Zeroes group slots `0 .. slots` of `sums` and `counts`, grid-stride.
    ///
    /// # Safety
    /// Both hold `slots` slots.
    #[inline(always)]
    pub unsafe fn clear_groups<const NT: usize>(sums: *mut u64, counts: *mut u32, slots: usize) {
        let mut i = block_idx() * NT + thread_idx();
        while i < slots {
            // SAFETY: i < slots.
            unsafe {
                sums.add(i).write(0);
                counts.add(i).write(0);
            }
            i += grid_dim() * NT;
        }
    }

    /// Builds the tile at `start` of dimension `d` from `keys`, the predicate columns `cols`
    /// and the group column `group`.
    ///
    /// # Safety
    /// Every column holds `n > start` rows; `plan` describes `payload` and `bits`, whose slots
    /// of dimension `d` are zeroed.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn build_tile<const NT: usize, const IPT: usize>(
        keys: *const i32,
        cols: [*const i32; PRED_COLS],
        group: *const i32,
        start: usize,
        n: usize,
        d: usize,
        payload: *mut u16,
        bits: *mut u32,
        plan: *mut Plan,
        temp: [Shared<u32>; 2],
    ) {
        let valid = (n - start).min(NT * IPT);
        // SAFETY: forwarded contracts; the tile lies within the columns.
        unsafe {
            let key = load::<NT, IPT>(keys, start, valid);
            let mut flags = [false; IPT];
            block_pred::<i32, NT, IPT>(&key, valid, &mut flags, Combine::Set, |_| true);
            let dim = &raw mut (*plan).dims[d];
            for (c, &col) in cols.iter().enumerate() {
                let p = (*dim).preds[c];
                if !p.is_any() {
                    let v = load_sel::<NT, IPT>(col, start, valid, &flags);
                    block_pred::<i32, NT, IPT>(&v, valid, &mut flags, Combine::And, |x| {
                        p.matches(x)
                    });
                }
            }
            let value: [u32; IPT] = if (*dim).has_group != 0 {
                load_sel::<NT, IPT>(group, start, valid, &flags).map(|v| v as u32)
            } else {
                [0; IPT]
            };
            let map = block_build::<i32, DenseMap, NT, IPT>(
                &key,
                &value,
                &flags,
                DenseMap::of(plan, d, payload),
            );
            let set = block_build_keys::<i32, BitFilter, NT, IPT>(
                &key,
                &flags,
                BitFilter::of(plan, d, bits),
            );
            if map.overflow || set.overflow {
                (*plan).status.bad_dimension = 1;
            }
            if let Some(codes) = CodeMap::of(plan, d, bits) {
                let mut complete = true;
                for k in 0..IPT {
                    if flags[k] {
                        complete &= codes.insert(plan, key[k] as u32, value[k]);
                    }
                }
                if !complete {
                    (*plan).status.codes_overflow = 1;
                }
            }
            let lo: [u32; IPT] =
                core::array::from_fn(|k| if flags[k] { value[k] } else { u32::MAX });
            let hi: [u32; IPT] = core::array::from_fn(|k| if flags[k] { value[k] } else { 0 });
            let lo = block_min::<u32, NT, IPT>(&lo, usize::MAX, u32::MAX, temp[0]);
            let hi = block_max::<u32, NT, IPT>(&hi, usize::MAX, 0, temp[1]);
            if thread_idx() == 0 && lo <= hi {
                u32::atomic_min(&raw mut (*dim).group_min, lo);
                u32::atomic_max(&raw mut (*dim).group_max, hi);
            }
        }
    }
}

crate::kernel! {
    /// A query's dimension builds and its group table's clearing:
    /// `(jobs, payload, bits, plan, sums, counts, clear)`. The plan says which dimensions are
    /// built, which predicate columns and whether the group column are read; the first `clear`
    /// group slots are zeroed.
    SSB_BUILD = ssb_build[NT = 256, IPT = 8](
        jobs: *const crate::ssb::plan::DimJob, payload: *mut u16, bits: *mut u32,
        plan: *mut crate::ssb::plan::Plan, sums: *mut u64,
        counts: *mut u32, clear: u32
    ) {
        let temp = [
            crate::shared_array!(ssb_build_lo: [u32; NT / 32 + 1]),
            crate::shared_array!(ssb_build_hi: [u32; NT / 32 + 1]),
        ];
        // SAFETY: the host passes the engine's job table, the query's plan with the zeroed
        // tables of its dimensions, and group tables of at least `clear` slots.
        unsafe {
            clear_groups::<NT>(sums, counts, clear as usize);
            build_dimensions::<NT, IPT>(jobs, payload, bits, plan, temp);
        }
    }
}
