//! The group table of a probe kernel: sums (`u64`, wrapping: an `i64` sum as its bits) and
//! row counts per group slot of the query's [`GroupLayout`]. Small tables (every SSB query:
//! at most 1,944 slots, q3.1) live in shared memory, so rows are added with shared-memory
//! atomics and a block touches global memory once per non-empty slot when it is done; larger
//! ones go straight to the global table.
use super::plan::{self, GLOBAL_GROUPS, GroupLayout, SMEM_GROUPS, status};
use super::tables::word;
use crate::arch::{Atomic, Shared, sync_threads, thread_idx};

/// Where rows are added.
#[derive(Clone, Copy)]
pub struct GroupTable {
    /// The query's group layout.
    pub layout: GroupLayout,
    out_sums: *mut u64,
    out_counts: *mut u32,
    /// The block's shared-memory table, when the layout fits; else rows go to `out_*`.
    shared: Option<(Shared<u64>, Shared<u32>)>,
}

impl GroupTable {
    /// The table of the plan's layout: shared memory (zeroed here, then a barrier) when it
    /// fits, else the global table. `None`, with the overflow status set, when the layout is
    /// larger than the global table; all threads get the same answer.
    ///
    /// # Safety
    /// `plan` is a built plan; `out_sums` / `out_counts` hold [`GLOBAL_GROUPS`] slots; the
    /// shared buffers hold [`SMEM_GROUPS`] slots.
    #[inline(always)]
    pub unsafe fn new<const NT: usize>(
        plan: *mut u32,
        out_sums: *mut u64,
        out_counts: *mut u32,
        sh_sums: Shared<u64>,
        sh_counts: Shared<u32>,
    ) -> Option<GroupTable> {
        // SAFETY: by contract.
        let layout = GroupLayout::from_plan(|i| unsafe { word(plan, i) });
        if layout.total > GLOBAL_GROUPS as u64 {
            if thread_idx() == 0 {
                // SAFETY: the status words are in the plan.
                unsafe { plan.add(plan::STATUS + status::GROUPS_OVERFLOW).write(1) };
            }
            return None;
        }
        let shared = layout.total as usize <= SMEM_GROUPS.min(sh_sums.len()).min(sh_counts.len());
        if shared {
            let mut i = thread_idx();
            while i < layout.total as usize {
                // SAFETY: i < total <= the buffers' length; one writer per slot.
                unsafe {
                    sh_sums.write(i, 0);
                    sh_counts.write(i, 0);
                }
                i += NT;
            }
            sync_threads();
        }
        Some(GroupTable {
            layout,
            out_sums,
            out_counts,
            shared: shared.then_some((sh_sums, sh_counts)),
        })
    }

    /// Whether dimension `d` contributes to the group (has more than one value).
    #[inline(always)]
    pub fn grouped(&self, d: usize) -> bool {
        self.layout.ext[d] > 1
    }

    /// Adds dimension `d`'s part to the rows' group slots: `group[k] += (v[k] - min) * stride`
    /// (meaningful for the rows that end up flagged).
    #[inline(always)]
    pub fn fold<const IPT: usize>(&self, group: &mut [u32; IPT], d: usize, v: &[u32; IPT]) {
        for k in 0..IPT {
            group[k] = group[k].wrapping_add(
                v[k].wrapping_sub(self.layout.min[d])
                    .wrapping_mul(self.layout.stride[d]),
            );
        }
    }

    /// Adds `value(k)` to slot `group[k]` for every flagged row.
    #[inline(always)]
    pub fn add<const IPT: usize>(
        &self,
        flags: &[bool; IPT],
        group: &[u32; IPT],
        value: impl Fn(usize) -> u64,
    ) {
        for k in 0..IPT {
            if flags[k] {
                let i = group[k] as usize;
                // SAFETY: a flagged row passed every dimension, so each of its values lies in
                // the range its build recorded and i < total.
                unsafe {
                    if let Some((sums, counts)) = self.shared {
                        sums.atomic_add(i, value(k));
                        counts.atomic_add(i, 1);
                    } else {
                        u64::atomic_add(self.out_sums.add(i), value(k));
                        u32::atomic_add(self.out_counts.add(i), 1);
                    }
                }
            }
        }
    }

    /// Adds this block's shared table to the global one (all threads; starts with a barrier).
    #[inline(always)]
    pub fn flush<const NT: usize>(&self) {
        let Some((sums, counts)) = self.shared else {
            return;
        };
        sync_threads();
        let mut i = thread_idx();
        while i < self.layout.total as usize {
            // SAFETY: i < total; the shared slots are final after the barrier.
            unsafe {
                let c = counts.read(i);
                if c != 0 {
                    u64::atomic_add(self.out_sums.add(i), sums.read(i));
                    u32::atomic_add(self.out_counts.add(i), c);
                }
            }
            i += NT;
        }
    }
}
