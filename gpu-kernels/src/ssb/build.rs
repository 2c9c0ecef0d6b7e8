//! The dimension build: one kernel for every dimension and query. A block takes a tile of the
//! dimension, evaluates the plan's predicates on the columns it names (each loaded only where
//! rows still qualify), and inserts the qualifying keys with their group value into the
//! dimension's `DenseMap` and `BitFilter`; it also
//! widens the plan's range of group values, which fixes the query's group layout.
//!
//! Measured and dropped: reading every column in full and at once instead of each where rows
//! still qualify, to cut the builds' chains of load latencies: SF 20 q3.3 0.318 -> 0.330 ms,
//! q4.2 0.793 -> 0.804 (the part and customer builds read more than they waited).
#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{Atomic, Shared, block_idx, thread_idx};
    use crate::block::*;
    use crate::ssb::plan::{self, PRED_COLS, dim, status};
    use crate::ssb::tables::word;
    use crate::ssb::{BitFilter, ColPred, DenseMap, load, load_sel};

    /// Builds dimension `d` from its tile of `keys`, the predicate columns `cols` and the
    /// group column `group`.
    ///
    /// # Safety
    /// Every column holds `n` rows; the grid has one block per tile; `plan` describes
    /// `payload` and `bits`, whose slots of dimension `d` are zeroed.
    #[inline(always)]
    pub unsafe fn build_dimension<const NT: usize, const IPT: usize>(
        keys: *const i32,
        cols: [*const i32; PRED_COLS],
        group: *const i32,
        n: usize,
        d: usize,
        payload: *mut u16,
        bits: *mut u32,
        plan: *mut u32,
        temp: [Shared<u32>; 2],
    ) {
        let base = d * plan::DIM_WORDS;
        let start = block_idx() * NT * IPT;
        let valid = (n - start).min(NT * IPT);
        // SAFETY: forwarded contracts; the tile lies within the columns.
        unsafe {
            let key = load::<NT, IPT>(keys, start, valid);
            let mut flags = [false; IPT];
            block_pred::<i32, NT, IPT>(&key, valid, &mut flags, Combine::Set, |_| true);
            for (c, &col) in cols.iter().enumerate() {
                let p = ColPred::at(plan, base + dim::PREDS + 3 * c);
                if !p.is_any() {
                    let v = load_sel::<NT, IPT>(col, start, valid, &flags);
                    block_pred::<i32, NT, IPT>(&v, valid, &mut flags, Combine::And, |x| {
                        p.matches(x)
                    });
                }
            }
            let value: [u32; IPT] = if word(plan, base + dim::HAS_GROUP) != 0 {
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
                plan.add(plan::STATUS + status::BAD_DIMENSION).write(1);
            }
            let lo: [u32; IPT] =
                core::array::from_fn(|k| if flags[k] { value[k] } else { u32::MAX });
            let hi: [u32; IPT] = core::array::from_fn(|k| if flags[k] { value[k] } else { 0 });
            let lo = block_min::<u32, NT, IPT>(&lo, usize::MAX, u32::MAX, temp[0]);
            let hi = block_max::<u32, NT, IPT>(&hi, usize::MAX, 0, temp[1]);
            if thread_idx() == 0 && lo <= hi {
                u32::atomic_min(plan.add(base + dim::GROUP_MIN), lo);
                u32::atomic_max(plan.add(base + dim::GROUP_MAX), hi);
            }
        }
    }
}

crate::kernel! {
    /// Dimension build: `(keys, c0, c1, c2, c3, group, n, dim, payload, bits, plan)`; the
    /// plan says which predicate columns and whether the group column are read.
    SSB_BUILD = ssb_build[NT = 256, IPT = 8](
        keys: *const i32, c0: *const i32, c1: *const i32, c2: *const i32, c3: *const i32,
        group: *const i32, n: u32, dim: u32, payload: *mut u16, bits: *mut u32, plan: *mut u32
    ) {
        let temp = [
            crate::shared_array!(ssb_build_lo: [u32; NT / 32 + 1]),
            crate::shared_array!(ssb_build_hi: [u32; NT / 32 + 1]),
        ];
        // SAFETY: the host launches one block per tile of columns of n rows, with the plan
        // and the zeroed table of dimension `dim`.
        unsafe {
            build_dimension::<NT, IPT>(keys, [c0, c1, c2, c3], group, n as usize, dim as usize,
                payload, bits, plan, temp)
        }
    }
}
