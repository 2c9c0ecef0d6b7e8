//! BlockShuffle: moves the flagged items of a tile to the front of a shared buffer, in tile
//! order, using group offsets from the block scan.
use super::{Tile, block_exclusive_sum};
use crate::arch::{Shared, opaque_u64, thread_idx};

/// Writes the flagged items (bit `k` of `mask` for item `k`) to their ranks in `buf`. Items
/// are in the tile arrangement of [`Tile`]: `starts[g * V]` is the rank of the first flagged
/// item of the thread's vector group `g` (an exclusive scan over group counts, as
/// [`block_compact`] computes), and ranks run on within the group. With `PREDICATED`,
/// unflagged items go to the thread's scratch slot `buf[NT * IPT + t]` instead of being skipped
/// by a branch (the thesis' "Pred" variant; `buf` then needs `NT * IPT + NT` items). Per-thread
/// slots keep the unread scratch writes free of races.
#[inline(always)]
pub fn block_shuffle<T: Copy, const NT: usize, const IPT: usize, const PREDICATED: bool>(
    items: &[T; IPT],
    mask: u64,
    starts: &[u32; IPT],
    buf: Shared<T>,
) {
    const { assert!(IPT <= 64) };
    let v = Tile::<T, NT, IPT>::V;
    let flag = |k: usize| (mask >> k) & 1 != 0;
    let scratch = NT * IPT + thread_idx();
    for g in 0..IPT / v {
        let mut r = starts[g * v];
        for j in 0..v {
            let k = g * v + j;
            if PREDICATED {
                // SAFETY: ranks of flagged items are distinct and below the tile's count; the
                // scratch slot is only written, never read back.
                unsafe { buf.write(if flag(k) { r as usize } else { scratch }, items[k]) };
            } else if flag(k) {
                // SAFETY: ranks of flagged items are distinct and below the tile's count.
                unsafe { buf.write(r as usize, items[k]) };
            }
            r += flag(k) as u32;
        }
    }
}

/// Moves the flagged items to the front of `buf` in tile order (scan, then [`block_shuffle`])
/// and returns their number. The scan runs over per-vector-group counts, not per-item flags:
/// only the `IPT / V` group offsets stay live across its barriers, and each item's rank is
/// rebuilt from its group's offset and the flags before it. A rank per item held across the
/// scan costs `IPT` registers, which limits how many tiles an SM keeps in flight.
/// `temp` is the scan's temporary storage (see [`super::block_exclusive_sum`]).
#[inline(always)]
pub fn block_compact<T: Copy, const NT: usize, const IPT: usize, const PREDICATED: bool>(
    items: &[T; IPT],
    flags: &[bool; IPT],
    buf: Shared<T>,
    temp: Shared<u32>,
) -> u32 {
    let ranks = block_compact_ranks::<T, NT, IPT>(flags, temp);
    block_shuffle::<T, NT, IPT, PREDICATED>(items, ranks.mask, &ranks.starts, buf);
    ranks.count
}

/// The scan half of [`block_compact`]: where the thread's flagged items go, for a later
/// [`block_shuffle`] (which needs no barrier, so other work may run between the two).
#[inline(always)]
pub fn block_compact_ranks<T, const NT: usize, const IPT: usize>(
    flags: &[bool; IPT],
    temp: Shared<u32>,
) -> CompactRanks<IPT> {
    const { assert!(IPT <= 64) };
    let v = Tile::<T, NT, IPT>::V;
    let mask = opaque_u64(
        flags
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &f)| m | (f as u64) << k),
    );
    let heads: [u32; IPT] = core::array::from_fn(|k| {
        if k % v == 0 {
            (mask >> k & ((1u64 << v) - 1)).count_ones()
        } else {
            0
        }
    });
    let mut starts = [0u32; IPT];
    let count = block_exclusive_sum::<T, u32, NT, IPT>(&heads, &mut starts, temp);
    CompactRanks {
        mask,
        starts,
        count,
    }
}

/// A thread's share of a compaction: its flags (bit `k` for item `k`), the rank of the first
/// flagged item of each vector group, and the tile's count.
#[derive(Clone, Copy)]
pub struct CompactRanks<const IPT: usize> {
    /// Flag bits.
    pub mask: u64,
    /// Group start ranks (see [`block_shuffle`]).
    pub starts: [u32; IPT],
    /// Flagged items in the tile.
    pub count: u32,
}

impl<const IPT: usize> CompactRanks<IPT> {
    /// Calls `f(k, first + rank)` for each of the thread's flagged items `k`, in order, with
    /// its rank among the tile's flagged items, for the ranks of a tile of `T` items
    /// ([`block_compact_ranks::<T, NT, IPT>`]): where a compaction writes each item itself
    /// rather than through [`block_shuffle`] (`first`: the tile's place in the output).
    #[inline(always)]
    pub fn for_each_ranked<T, const NT: usize>(&self, first: u32, mut f: impl FnMut(usize, u32)) {
        let v = Tile::<T, NT, IPT>::V;
        for g in 0..IPT / v {
            let mut r = first + self.starts[g * v];
            for k in g * v..(g + 1) * v {
                if (self.mask >> k) & 1 != 0 {
                    f(k, r);
                    r += 1;
                }
            }
        }
    }
}
