//! BlockShuffle: moves the flagged items of a tile to the front of a shared buffer, in tile
//! order, using the ranks from the block scan.
use crate::arch::Shared;

/// Writes item `k` to `buf[ranks[k]]` where `flags[k]` is set. With `PREDICATED`, unflagged
/// items go to the thread's scratch slot `buf[NT * IPT + t]` instead of being skipped by a
/// branch (the thesis' "Pred" variant; `buf` then needs `NT * IPT + NT` items). Per-thread slots
/// keep the unread scratch writes free of races.
#[inline(always)]
pub fn block_shuffle<T: Copy, const NT: usize, const IPT: usize, const PREDICATED: bool>(
    items: &[T; IPT],
    flags: &[bool; IPT],
    ranks: &[u32; IPT],
    buf: Shared<T>,
) {
    for k in 0..IPT {
        if PREDICATED {
            let slot = if flags[k] {
                ranks[k] as usize
            } else {
                NT * IPT
            };
            // SAFETY: ranks of flagged items are distinct and below the tile's count; the
            // scratch slot is only written, never read back.
            unsafe { buf.write(slot, items[k]) };
        } else if flags[k] {
            // SAFETY: ranks of flagged items are distinct and below the tile's count.
            unsafe { buf.write(ranks[k] as usize, items[k]) };
        }
    }
}
