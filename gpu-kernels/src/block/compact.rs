//! WarpCompact: the tile offsets of a warp's flagged items, packed into shared memory, and the
//! rounds that walk them. A selective first predicate leaves most of a tile's rows dropped;
//! the steps after it then run over the survivors, a few per lane, instead of over every item
//! slot with its flag off (the SSB probes spent most of their instructions on dropped rows).
//!
//! A ballot per item, not a compaction that packs each thread's codes into two words and
//! walks their set fields after one warp-wide sum: that takes fewer instructions per item,
//! but its per-thread loop serializes on the warp's longest lane, so it is no faster at low
//! survival and slower when many rows survive. Each item's write is predicated, not skipped
//! by a branch on its ballot: the branches serialize a warp's items, and skipping them lost
//! more where one or two lanes hold survivors than it saved where none do (the perf log,
//! 2026-12-05).
use super::Tile;
use crate::arch::{Shared, ballot, lane_id, lanemask_lt, popc, sync_warp, thread_idx};

/// Shared-memory entries a block of `NT` threads needs for [`warp_compact`] of `IPT` items
/// per thread (one slot per item of the tile).
pub const fn compact_slots(nt: usize, ipt: usize) -> usize {
    nt * ipt
}

/// Writes the tile offsets of the warp's flagged items (of `T` items in `NT x IPT` tiles) to
/// its part of `buf` and returns their number (the same in every lane). Ends with a warp
/// barrier, so the entries can be read by any lane of the warp. The entries are in item
/// order, and each item's in lane order.
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
    unsafe { compact_ballot::<T, NT, IPT, 0>(&flags.map(u32::from), buf) }
}

/// [`warp_compact`] of the items whose `CODE_BITS`-bit code is not 0, each keeping its code
/// beside its offset (a value the first test found, so the survivor rounds need not look it
/// up again): entries are `offset | code << (16 - CODE_BITS)`, so the tile must have at most
/// `2^(16 - CODE_BITS)` items.
///
/// # Safety
/// As for [`warp_compact`]; every code is below `2^CODE_BITS`.
#[inline(always)]
pub unsafe fn warp_compact_coded<T, const NT: usize, const IPT: usize, const CODE_BITS: u32>(
    codes: &[u32; IPT],
    buf: Shared<u16>,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { compact_ballot::<T, NT, IPT, CODE_BITS>(codes, buf) }
}

/// [`warp_compact`] for a selective test, which leaves a warp a few of its items: each lane
/// writes its own flagged items after those of the lanes below it, placed by one prefix sum
/// of the lanes' counts by bit planes, so that the work goes with the survivors, not the item
/// slots (its loop takes as many steps as the lane with the most survivors). A warp with no
/// survivor skips it all. The entries are in lane order, and each lane's in item order.
///
/// # Safety
/// As for [`warp_compact`].
#[inline(always)]
pub unsafe fn warp_compact_sparse<T, const NT: usize, const IPT: usize>(
    flags: &[bool; IPT],
    buf: Shared<u16>,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { compact_sparse::<T, NT, IPT, 0>(&flags.map(u32::from), buf) }
}

/// [`warp_compact_coded`] as [`warp_compact_sparse`] compacts: for a selective test.
///
/// # Safety
/// As for [`warp_compact_coded`].
#[inline(always)]
pub unsafe fn warp_compact_coded_sparse<
    T,
    const NT: usize,
    const IPT: usize,
    const CODE_BITS: u32,
>(
    codes: &[u32; IPT],
    buf: Shared<u16>,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { compact_sparse::<T, NT, IPT, CODE_BITS>(codes, buf) }
}

/// The sparse compaction of the items with a non-zero code, keeping the code where
/// `TAG_BITS` is not 0: a lane's codes are packed into one word, so that its loop can take
/// the code of any item without indexing its registers.
///
/// # Safety
/// As for [`warp_compact`].
#[inline(always)]
unsafe fn compact_sparse<T, const NT: usize, const IPT: usize, const TAG_BITS: u32>(
    codes: &[u32; IPT],
    buf: Shared<u16>,
) -> u32 {
    const {
        assert!(
            IPT <= 32 && IPT * TAG_BITS as usize <= 32,
            "a lane's flags and codes are one word each"
        )
    };
    let (mut mask, mut packed) = (0u32, 0u32);
    for (k, &c) in codes.iter().enumerate() {
        mask |= ((c != 0) as u32) << k;
        if TAG_BITS != 0 {
            packed |= c << (k as u32 * TAG_BITS);
        }
    }
    if ballot(mask != 0) == 0 {
        return 0;
    }
    let t = thread_idx();
    let mine = popc(mask);
    let below = lanemask_lt();
    let (mut before, mut count) = (0u32, 0u32);
    // A lane's count is at most IPT: its bits, one ballot each.
    for b in 0..u32::BITS - (IPT as u32).leading_zeros() {
        let plane = ballot(mine >> b & 1 != 0);
        before += popc(plane & below) << b;
        count += popc(plane) << b;
    }
    let mut at = (t / 32) * 32 * IPT + before as usize;
    while mask != 0 {
        let k = mask.trailing_zeros();
        let tag = if TAG_BITS == 0 {
            0
        } else {
            packed >> (k * TAG_BITS) & ((1 << TAG_BITS) - 1)
        };
        // SAFETY: the lane's entries follow those of the lanes below it, all of them at
        // most 32 * IPT, within the warp's part of `buf`.
        unsafe { buf.write(at, entry::<T, NT, IPT, TAG_BITS>(t, k, tag)) };
        at += 1;
        mask &= mask - 1;
    }
    sync_warp();
    count
}

/// The entry of thread `t`'s item `k` with its `TAG_BITS`-bit code `tag`: the item's tile
/// offset, the code in the high bits. Both compactions write these.
#[inline(always)]
fn entry<T, const NT: usize, const IPT: usize, const TAG_BITS: u32>(
    t: usize,
    k: u32,
    tag: u32,
) -> u16 {
    const {
        assert!(
            NT * IPT <= 1 << (16 - TAG_BITS),
            "tile too large for coded 16-bit offsets"
        )
    };
    (Tile::<T, NT, IPT>::offset(t, k as usize) as u32 | tag << (16 - TAG_BITS)) as u16
}

/// The compaction of the items with a non-zero code, keeping the code where `TAG_BITS` is
/// not 0: a ballot per item, and each surviving lane writes its entry after the survivors of
/// lower lanes and earlier items.
///
/// # Safety
/// As for [`warp_compact`].
#[inline(always)]
unsafe fn compact_ballot<T, const NT: usize, const IPT: usize, const TAG_BITS: u32>(
    codes: &[u32; IPT],
    buf: Shared<u16>,
) -> u32 {
    let t = thread_idx();
    let part = (t / 32) * 32 * IPT;
    let below = lanemask_lt();
    let mut count = 0u32;
    for (k, &c) in codes.iter().enumerate() {
        let f = c != 0;
        let mask = ballot(f);
        if f {
            let at = part + (count + popc(mask & below)) as usize;
            let tag = if TAG_BITS == 0 { 0 } else { c };
            // SAFETY: at most 32 * IPT entries per warp, all within its part of `buf`.
            unsafe { buf.write(at, entry::<T, NT, IPT, TAG_BITS>(t, k as u32, tag)) };
        }
        count += popc(mask);
    }
    sync_warp();
    count
}

/// Calls `f(offsets, live)` for the `count` entries [`warp_compact`] left, `S` per lane and
/// round: entry `r * 32 * S + s * 32 + lane` is item `s` of a lane in round `r`, `live` where
/// it exists (a dead slot holds the warp's first item, so that reads at it stay in the
/// warp's rows). Uniform across the warp: rounds stop when the entries do. A warp with at
/// most 32 entries gets one round in which only the first slots can be live, known at
/// compile time, so that the later slots' work folds away (a selective first test leaves a
/// few).
///
/// # Safety
/// As for [`warp_compact`], whose `buf` and count these are, with the same `T`.
#[inline(always)]
pub unsafe fn for_each_survivor<T, const NT: usize, const IPT: usize, const S: usize>(
    buf: Shared<u16>,
    count: u32,
    mut f: impl FnMut(&[u32; S], &[bool; S]),
) {
    // SAFETY: forwarded.
    unsafe {
        for_each_survivor_coded::<T, NT, IPT, S, 0>(
            buf,
            count,
            #[inline(always)]
            |offsets, _, live| f(offsets, live),
        )
    }
}

/// [`for_each_survivor`] over the entries of [`warp_compact_coded`]: `f(offsets, codes, live)`.
///
/// # Safety
/// As for [`warp_compact_coded`], whose `buf` and count these are, with the same `T` and
/// `CODE_BITS`.
#[inline(always)]
pub unsafe fn for_each_survivor_coded<
    T,
    const NT: usize,
    const IPT: usize,
    const S: usize,
    const CODE_BITS: u32,
>(
    buf: Shared<u16>,
    count: u32,
    mut f: impl FnMut(&[u32; S], &[u32; S], &[bool; S]),
) {
    let warp = thread_idx() / 32 * 32;
    let part = warp * IPT;
    // A dead slot holds the warp's first item, so that whatever `f` reads at it lies in the
    // warp's own rows.
    let own = Tile::<T, NT, IPT>::offset(warp, 0) as u32;
    let lane = lane_id();
    let offset_mask = (1u32 << (16 - CODE_BITS)) - 1;
    let round = |first: u32| {
        let mut offsets = [own; S];
        let mut codes = [0u32; S];
        let mut live = [false; S];
        for s in 0..S {
            let j = first + s as u32 * 32 + lane;
            live[s] = j < count;
            if live[s] {
                // SAFETY: j < count <= 32 * IPT entries of the warp's part.
                let entry = unsafe { buf.read(part + j as usize) } as u32;
                offsets[s] = entry & offset_mask;
                codes[s] = entry >> (16 - CODE_BITS);
            }
        }
        (offsets, codes, live)
    };
    if S > 1 && count <= 32 {
        // `f` inlined a second time, with the later slots dead in its code.
        if count > 0 {
            let (offsets, codes, live) = round(0);
            let mut first_only = [false; S];
            first_only[0] = live[0];
            f(&offsets, &codes, &first_only);
        }
    } else {
        let mut first = 0u32;
        while first < count {
            let (offsets, codes, live) = round(first);
            f(&offsets, &codes, &live);
            first += 32 * S as u32;
        }
    }
    // The next tile's compaction overwrites the entries.
    sync_warp();
}
