//! The group table of a probe kernel: sums (`u64`, wrapping: an `i64` sum as its bits) per
//! group slot of the query's [`GroupLayout`], and counts that are non-zero exactly where a
//! slot holds rows. Small tables (every SSB query at SF 20: at most 2,646 slots, q3.1) live in
//! shared memory, as sums and one occupancy bit per slot, so rows are added with
//! shared-memory atomics and a block touches global memory once per non-empty slot when it is
//! done (its count then grows by one per block, not per row); larger ones go straight to the
//! global table.
use super::plan::{GLOBAL_GROUPS, GroupLayout, Plan, SMEM_GROUPS};
use crate::arch::{Atomic, Shared, sync_threads, thread_idx};

/// `sums[i] += v` as two 32-bit shared atomics, low word first with the carry into the high
/// one (skipped when there is nothing to add: always for values below 2^32 that do not carry).
/// A 64-bit `atom.shared.add` is a compare-and-swap loop in SASS (`ATOMS.CAST.SPIN.64`), and
/// rows of the same group retried each other's swaps.
///
/// # Safety
/// `i < sums.len()`; the slot is read only after a barrier.
#[inline(always)]
unsafe fn add_wide(sums: Shared<u64>, i: usize, v: u64) {
    // Little-endian halves of slot i.
    let words = sums.cast::<u32>();
    let (lo, hi) = (v as u32, (v >> 32) as u32);
    // SAFETY: words 2i and 2i + 1 are slot i.
    unsafe {
        let old = words.atomic_add(2 * i, lo);
        let high = hi.wrapping_add(old.overflowing_add(lo).1 as u32);
        if high != 0 {
            words.atomic_add(2 * i + 1, high);
        }
    }
}

/// A dimension's part of a group slot: `(value - min) * stride`, carried beside the dimension's
/// table in a probe's join, so that the join needs neither the group table nor the dimension's
/// index.
#[derive(Clone, Copy)]
pub struct GroupPart {
    min: u32,
    stride: u32,
}

impl GroupPart {
    /// Adds this part of the values `v` to the rows' group slots:
    /// `group[k] += (v[k] - min) * stride` (meaningful for the rows that end up flagged).
    #[inline(always)]
    pub fn fold<const IPT: usize>(self, group: &mut [u32; IPT], v: &[u32; IPT]) {
        for k in 0..IPT {
            group[k] = group[k].wrapping_add(v[k].wrapping_sub(self.min).wrapping_mul(self.stride));
        }
    }
}

/// Where rows are added.
#[derive(Clone, Copy)]
pub struct GroupTable {
    /// The query's group layout.
    pub layout: GroupLayout,
    out_sums: *mut u64,
    out_counts: *mut u32,
    /// The block's shared-memory table (sums, occupancy bits), when the layout fits; else
    /// rows go to `out_*`.
    shared: Option<(Shared<u64>, Shared<u32>)>,
}

impl GroupTable {
    /// The table of the plan's layout: shared memory (zeroed here, then a barrier) when it
    /// fits, else the global table. `None`, with the overflow status set, when the layout is
    /// larger than the global table; all threads get the same answer.
    ///
    /// # Safety
    /// `plan` is a built plan; `out_sums` / `out_counts` hold [`GLOBAL_GROUPS`] slots; the
    /// shared buffers hold [`SMEM_GROUPS`] sums and [`SMEM_GROUPS`]` / 32` occupancy words.
    #[inline(always)]
    pub unsafe fn new<const NT: usize>(
        plan: *mut Plan,
        out_sums: *mut u64,
        out_counts: *mut u32,
        sh_sums: Shared<u64>,
        sh_occupied: Shared<u32>,
    ) -> Option<GroupTable> {
        // SAFETY: by contract.
        let layout = GroupLayout::from_ranges(|d| unsafe {
            let dim = &raw const (*plan).dims[d];
            ((*dim).group_min, (*dim).group_max)
        });
        if layout.total > GLOBAL_GROUPS as u64 {
            if thread_idx() == 0 {
                // SAFETY: the status words are in the plan.
                unsafe { (*plan).status.groups_overflow = 1 };
            }
            return None;
        }
        let total = layout.total as usize;
        let shared = total <= SMEM_GROUPS.min(sh_sums.len()).min(sh_occupied.len() * 32);
        if shared {
            let mut i = thread_idx();
            while i < total {
                // SAFETY: i < total <= the buffers' length; one writer per slot and word.
                unsafe {
                    sh_sums.write(i, 0);
                    if i % 32 == 0 {
                        sh_occupied.write(i / 32, 0);
                    }
                }
                i += NT;
            }
            sync_threads();
        }
        Some(GroupTable {
            layout,
            out_sums,
            out_counts,
            shared: shared.then_some((sh_sums, sh_occupied)),
        })
    }

    /// Whether dimension `d` contributes to the group (has more than one value).
    #[inline(always)]
    pub fn grouped(&self, d: usize) -> bool {
        self.layout.ext[d] > 1
    }

    /// Dimension `d`'s part of the group slots.
    #[inline(always)]
    pub fn part(&self, d: usize) -> GroupPart {
        GroupPart {
            min: self.layout.min[d],
            stride: self.layout.stride[d],
        }
    }

    /// Adds dimension `d`'s part to the rows' group slots ([`GroupPart::fold`]).
    #[inline(always)]
    pub fn fold<const IPT: usize>(&self, group: &mut [u32; IPT], d: usize, v: &[u32; IPT]) {
        self.part(d).fold(group, v);
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
                    if let Some((sums, occupied)) = self.shared {
                        add_wide(sums, i, value(k));
                        occupied.atomic_or(i / 32, 1 << (i % 32));
                    } else {
                        u64::atomic_add(self.out_sums.add(i), value(k));
                        u32::atomic_add(self.out_counts.add(i), 1);
                    }
                }
            }
        }
    }

    /// Adds this block's shared table to the global one (all threads; starts with a barrier,
    /// whichever the table).
    #[inline(always)]
    pub fn flush<const NT: usize>(&self) {
        // The barrier comes first, for every table: a probe's last round ends in branches on
        // each row's flags, and behind a test of the table's kind LLVM joined those branches
        // to the barrier, which lanes of a warp must reach together.
        sync_threads();
        let Some((sums, occupied)) = self.shared else {
            return;
        };
        let mut i = thread_idx();
        while i < self.layout.total as usize {
            // SAFETY: i < total; the shared slots are final after the barrier.
            unsafe {
                if occupied.read(i / 32) >> (i % 32) & 1 != 0 {
                    u64::atomic_add(self.out_sums.add(i), sums.read(i));
                    u32::atomic_add(self.out_counts.add(i), 1);
                }
            }
            i += NT;
        }
    }
}
