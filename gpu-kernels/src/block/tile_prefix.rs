//! Ordering across tiles in one pass: dynamic tile ids and the decoupled look-back of Merrill
//! and Garland (single-pass parallel prefix scan), as CUB's order-preserving select uses.
//!
//! Each tile publishes one 64-bit status word: the flag in the high half (0 not ready,
//! [`AGGREGATE`] its own total, [`PREFIX`] the total of all tiles up to and including it) and the
//! value in the low half. Flag and value change together in one relaxed device-scope store, so
//! no fence is needed between them. Status words must be zero before the launch.
use crate::arch::{
    Atomic, Shared, ballot, lane_id, load_relaxed_u64, shfl_xor, store_relaxed_u64, sync_threads,
    thread_idx, warp_id,
};

/// Predecessors each lane of the looking-back warp reads per round trip. (4, with nanosleep
/// backoff while waiting, measured slower on the H100 than 1 without backoff.)
const LOOKBACK: usize = 1;

/// Status flag: the value is the tile's own aggregate.
pub const AGGREGATE: u64 = 1 << 32;
/// Status flag: the value is the inclusive prefix up to this tile.
pub const PREFIX: u64 = 2 << 32;

/// Takes the next tile id from a zeroed global counter, so tiles start in id order and a tile
/// only ever waits for tiles that are already running. `slot` is one shared word.
///
/// # Safety
/// `counter` is a valid global address.
#[inline(always)]
pub unsafe fn block_dynamic_tile_id(counter: *mut u32, slot: Shared<u32>) -> usize {
    if thread_idx() == 0 {
        // SAFETY: valid address by contract; slot 0 exists.
        unsafe { slot.write(0, u32::atomic_add(counter, 1)) };
    }
    sync_threads();
    // SAFETY: written before the barrier.
    unsafe { slot.read(0) as usize }
}

/// Publishes this tile's `aggregate` and returns the sum of the aggregates of all earlier tiles
/// (to every thread). Warp 0 looks back 32 predecessors at a time until it meets a published
/// prefix, reading [`LOOKBACK`] words per lane per round trip. `slot` is one shared word.
///
/// # Safety
/// `status` holds one zeroed word per tile; tile ids were taken with [`block_dynamic_tile_id`].
#[inline(always)]
pub unsafe fn block_tile_prefix(
    status: *mut u64,
    tile: usize,
    aggregate: u32,
    slot: Shared<u32>,
) -> u32 {
    if warp_id() == 0 {
        let lane = lane_id();
        let mut exclusive = 0u32;
        if tile > 0 {
            if lane == 0 {
                // SAFETY: in bounds (one word per tile).
                unsafe { store_relaxed_u64(status.add(tile), AGGREGATE | aggregate as u64) };
            }
            // Lane l reads the LOOKBACK predecessors starting `l * LOOKBACK` before the
            // window's nearest one: one L2 round trip covers 32 * LOOKBACK tiles.
            let mut last = tile as isize - 1 - (lane as usize * LOOKBACK) as isize;
            loop {
                let mut s = [0u64; LOOKBACK];
                loop {
                    let mut invalid = false;
                    for (j, w) in s.iter_mut().enumerate() {
                        let idx = last - j as isize;
                        *w = if idx >= 0 {
                            // SAFETY: 0 <= idx < tile.
                            unsafe { load_relaxed_u64(status.add(idx as usize)) }
                        } else {
                            PREFIX // before tile 0: an empty prefix
                        };
                        invalid |= *w >> 32 == 0;
                    }
                    if ballot(invalid) == 0 {
                        break;
                    }
                }
                // The nearest published prefix: lowest lane that has one, its nearest word.
                let mine = s.iter().position(|&w| w >> 32 == PREFIX >> 32);
                let lanes = ballot(mine.is_some());
                let stop = if lanes != 0 {
                    lanes.trailing_zeros()
                } else {
                    32
                };
                let upto = if lane < stop {
                    LOOKBACK
                } else if lane == stop {
                    mine.map_or(0, |j| j + 1)
                } else {
                    0
                };
                let mut v = s[..upto]
                    .iter()
                    .fold(0u32, |a, &w| a.wrapping_add(w as u32));
                let mut m = 16;
                while m > 0 {
                    v = v.wrapping_add(shfl_xor(v, m));
                    m /= 2;
                }
                exclusive = exclusive.wrapping_add(v);
                if lanes != 0 {
                    break;
                }
                last -= (32 * LOOKBACK) as isize;
            }
        }
        if lane == 0 {
            let inclusive = exclusive.wrapping_add(aggregate);
            // SAFETY: in bounds; slot 0 exists.
            unsafe {
                store_relaxed_u64(status.add(tile), PREFIX | inclusive as u64);
                slot.write(0, exclusive);
            }
        }
    }
    sync_threads();
    // SAFETY: written before the barrier.
    unsafe { slot.read(0) }
}

/// The unordered alternative: reserves `count` output slots with one global atomic per block
/// (Crystal's original selection) and returns the first slot to every thread.
///
/// # Safety
/// `cursor` is a valid global address.
#[inline(always)]
pub unsafe fn block_atomic_offset(cursor: *mut u32, count: u32, slot: Shared<u32>) -> u32 {
    if thread_idx() == 0 {
        // SAFETY: valid address by contract.
        unsafe { slot.write(0, u32::atomic_add(cursor, count)) };
    }
    sync_threads();
    // SAFETY: written before the barrier.
    unsafe { slot.read(0) }
}
