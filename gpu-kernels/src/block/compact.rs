//! WarpCompact: the tile offsets of a warp's flagged items, packed into shared memory, and the
//! rounds that walk them. A selective first predicate leaves most of a tile's rows dropped;
//! the steps after it then run over the survivors, a few per lane, instead of over every item
//! slot with its flag off (the SSB probes spent most of their instructions on dropped rows).
use super::Tile;
use crate::arch::{Shared, ballot, lane_id, lanemask_lt, popc, sync_warp, thread_idx};

/// Shared-memory entries a block of `NT` threads needs for [`warp_compact`] of `IPT` items
/// per thread (one slot per item of the tile).
pub const fn compact_slots(nt: usize, ipt: usize) -> usize {
    nt * ipt
}

/// Writes the tile offsets of the warp's flagged items (of `T` items in `NT x IPT` tiles) to
/// its part of `buf` and returns their number (the same in every lane). Ends with a warp
/// barrier, so the entries can be read by any lane of the warp.
///
/// # Safety
/// Called by every lane of the warp; `buf` holds [`compact_slots`]`(NT, IPT)` entries, and
/// the warp's part is not in use by [`for_each_survivor`] of an earlier tile (it is not:
/// those rounds end before the warp gets here again).
#[inline(always)]
pub unsafe fn warp_compact<T, const NT: usize, const IPT: usize>(
    flags: &[bool; IPT],
    buf: Shared<u16>,
) -> u32 {
    // Offsets are stored as u16.
    const { assert!(NT * IPT <= 1 << 16, "tile too large for 16-bit offsets") };
    let t = thread_idx();
    let part = (t / 32) * 32 * IPT;
    let below = lanemask_lt();
    let mut count = 0u32;
    for (k, &f) in flags.iter().enumerate() {
        let mask = ballot(f);
        if f {
            let at = part + (count + popc(mask & below)) as usize;
            // SAFETY: at most 32 * IPT entries per warp, all within its part of `buf`.
            unsafe { buf.write(at, Tile::<T, NT, IPT>::offset(t, k) as u16) };
        }
        count += popc(mask);
    }
    sync_warp();
    count
}

/// Calls `f(offsets, live)` for the `count` entries [`warp_compact`] left, `S` per lane and
/// round: entry `r * 32 * S + s * 32 + lane` is item `s` of a lane in round `r`, `live` where
/// it exists. Uniform across the warp: rounds stop when the entries do.
///
/// # Safety
/// As for [`warp_compact`], whose `buf` and count these are.
#[inline(always)]
pub unsafe fn for_each_survivor<const NT: usize, const IPT: usize, const S: usize>(
    buf: Shared<u16>,
    count: u32,
    mut f: impl FnMut(&[u32; S], &[bool; S]),
) {
    let part = (thread_idx() / 32) * 32 * IPT;
    let lane = lane_id();
    let mut first = 0u32;
    while first < count {
        let mut offsets = [0u32; S];
        let mut live = [false; S];
        for s in 0..S {
            let j = first + s as u32 * 32 + lane;
            live[s] = j < count;
            if live[s] {
                // SAFETY: j < count <= 32 * IPT entries of the warp's part.
                offsets[s] = unsafe { buf.read(part + j as usize) } as u32;
            }
        }
        f(&offsets, &live);
        first += 32 * S as u32;
    }
    // The next tile's compaction overwrites the entries.
    sync_warp();
}
