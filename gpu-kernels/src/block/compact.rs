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
    // SAFETY: forwarded.
    unsafe { warp_compact_tagged::<T, NT, IPT, 0>(flags, &[0; IPT], buf) }
}

/// [`warp_compact`] that keeps a `TAG_BITS`-bit tag with each offset (a value the first test
/// found, so the survivor rounds need not look it up again): entries are
/// `offset | tag << (16 - TAG_BITS)`, so the tile must have at most `2^(16 - TAG_BITS)` items.
///
/// # Safety
/// As for [`warp_compact`]; every tag is below `2^TAG_BITS`.
#[inline(always)]
pub unsafe fn warp_compact_tagged<T, const NT: usize, const IPT: usize, const TAG_BITS: u32>(
    flags: &[bool; IPT],
    tags: &[u32; IPT],
    buf: Shared<u16>,
) -> u32 {
    const {
        assert!(
            NT * IPT <= 1 << (16 - TAG_BITS),
            "tile too large for tagged 16-bit offsets"
        )
    };
    let t = thread_idx();
    let part = (t / 32) * 32 * IPT;
    let below = lanemask_lt();
    let mut count = 0u32;
    for (k, &f) in flags.iter().enumerate() {
        let mask = ballot(f);
        if f {
            let at = part + (count + popc(mask & below)) as usize;
            let entry = Tile::<T, NT, IPT>::offset(t, k) as u32 | tags[k] << (16 - TAG_BITS);
            // SAFETY: at most 32 * IPT entries per warp, all within its part of `buf`.
            unsafe { buf.write(at, entry as u16) };
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
    // SAFETY: forwarded.
    unsafe {
        for_each_survivor_tagged::<NT, IPT, S, 0>(
            buf,
            count,
            #[inline(always)]
            |offsets, _, live| f(offsets, live),
        )
    }
}

/// [`for_each_survivor`] over the entries of [`warp_compact_tagged`]: `f(offsets, tags, live)`.
///
/// # Safety
/// As for [`warp_compact_tagged`], whose `buf` and count these are, with the same `TAG_BITS`.
#[inline(always)]
pub unsafe fn for_each_survivor_tagged<
    const NT: usize,
    const IPT: usize,
    const S: usize,
    const TAG_BITS: u32,
>(
    buf: Shared<u16>,
    count: u32,
    mut f: impl FnMut(&[u32; S], &[u32; S], &[bool; S]),
) {
    let part = (thread_idx() / 32) * 32 * IPT;
    let lane = lane_id();
    let offset_mask = (1u32 << (16 - TAG_BITS)) - 1;
    let mut first = 0u32;
    while first < count {
        let mut offsets = [0u32; S];
        let mut tags = [0u32; S];
        let mut live = [false; S];
        for s in 0..S {
            let j = first + s as u32 * 32 + lane;
            live[s] = j < count;
            if live[s] {
                // SAFETY: j < count <= 32 * IPT entries of the warp's part.
                let entry = unsafe { buf.read(part + j as usize) } as u32;
                offsets[s] = entry & offset_mask;
                tags[s] = entry >> (16 - TAG_BITS);
            }
        }
        f(&offsets, &tags, &live);
        first += 32 * S as u32;
    }
    // The next tile's compaction overwrites the entries.
    sync_warp();
}
