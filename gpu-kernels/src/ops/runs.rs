//! Runs of equal adjacent values of a `u32` column: on a sorted column, its distinct values
//! and how many rows hold each (`GROUP BY x` with `COUNT(*)` after a sort). Two reads of the
//! column: [`RUNS_COUNT`] counts each tile's run heads (a row whose value differs from the
//! row before, and row 0), the host's scan of those counts places each tile's heads, and
//! [`RUNS_WRITE`] writes every head's value and row with a block compaction; [`RUNS_LENGTHS`]
//! turns the head rows into run lengths.

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{Shared, block_idx, thread_idx};
    use crate::block::{CompactRanks, Tile, block_compact_ranks, block_load};

    /// Loads this block's tile of the `n` keys and ranks its run heads in the tile.
    ///
    /// # Safety
    /// `keys` holds `n` keys; one block per tile.
    #[inline(always)]
    pub unsafe fn tile_heads<const NT: usize, const IPT: usize>(
        keys: *const u32,
        n: usize,
        items: &mut [u32; IPT],
        scan: Shared<u32>,
    ) -> (usize, CompactRanks<IPT>) {
        let start = block_idx() * NT * IPT;
        let valid = (n - start).min(NT * IPT);
        // SAFETY: the tile's `valid` keys are in bounds.
        unsafe { block_load::<u32, NT, IPT>(keys.add(start), valid, items) };
        let t = thread_idx();
        let v = Tile::<u32, NT, IPT>::V;
        let heads: [bool; IPT] = core::array::from_fn(|k| {
            let o = Tile::<u32, NT, IPT>::offset(t, k);
            let i = start + o;
            if o >= valid {
                false
            } else if i == 0 {
                true
            } else if k % v != 0 {
                // The row before is the previous item of this thread's vector.
                items[k - 1] != items[k]
            } else {
                // SAFETY: 0 < i < n; the row before is in another thread's vector (an L1 hit).
                unsafe { keys.add(i - 1).read() != items[k] }
            }
        });
        (start, block_compact_ranks::<u32, NT, IPT>(&heads, scan))
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

crate::kernel! {
    /// Each tile's count of run heads, one block per tile.
    RUNS_COUNT = runs_count[NT = 256, IPT = 16](keys: *const u32, n: u32, tile_counts: *mut u32) {
        let scan = crate::shared_array!(runs_scan: [u32; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]);
        let mut items = [0u32; IPT];
        // SAFETY: the host launches one block per tile of the `n` keys.
        let (_, cr) = unsafe { tile_heads::<NT, IPT>(keys, n as usize, &mut items, scan) };
        if crate::arch::thread_idx() == 0 {
            // SAFETY: one count per tile.
            unsafe { tile_counts.add(crate::arch::block_idx()).write(cr.count) };
        }
    }
}

crate::kernel! {
    /// Writes each run head's value and row at its place: the tile's exclusive prefix of head
    /// counts plus its rank in the tile.
    RUNS_WRITE = runs_write[NT = 256, IPT = 16](keys: *const u32, n: u32, tile_prefix: *const u32, values: *mut u32, starts: *mut u32) {
        use crate::block::Tile;
        let scan = crate::shared_array!(runs_scan: [u32; Tile::<u32, NT, IPT>::SCAN_WORDS]);
        let mut items = [0u32; IPT];
        // SAFETY: the host launches one block per tile of the `n` keys.
        let (start, cr) = unsafe { tile_heads::<NT, IPT>(keys, n as usize, &mut items, scan) };
        // SAFETY: the host passes the exclusive prefix sum of the tiles' head counts.
        let before = unsafe { tile_prefix.add(crate::arch::block_idx()).read() };
        let t = crate::arch::thread_idx();
        cr.for_each_ranked::<u32, NT>(before, |k, r| {
            let r = r as usize;
            // SAFETY: the host sized `values` and `starts` for every head; `r` is one.
            unsafe {
                values.add(r).write(items[k]);
                starts.add(r).write((start + Tile::<u32, NT, IPT>::offset(t, k)) as u32);
            }
        });
    }
}

crate::kernel! {
    /// `lengths[j] = starts[j + 1] - starts[j]` (the last run ends at `n`).
    RUNS_LENGTHS = runs_lengths[NT = 256, IPT = 1](starts: *const u32, runs: u32, n: u32, lengths: *mut u32) {
        let mut j = crate::arch::global_idx();
        while j < runs as usize {
            // SAFETY: j < runs, the length of `starts` and `lengths`.
            unsafe {
                let end = if j + 1 < runs as usize { starts.add(j + 1).read() } else { n };
                lengths.add(j).write(end - starts.add(j).read());
            }
            j += crate::arch::grid_dim() * NT;
        }
    }
}
