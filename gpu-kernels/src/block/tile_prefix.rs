//! Ordering across tiles in one pass: dynamic tile ids and the decoupled look-back of Merrill
//! and Garland (single-pass parallel prefix scan), as CUB's order-preserving select uses.
//!
//! Each tile publishes one 64-bit status word: the flag in the high half (0 not ready,
//! [`AGGREGATE`] its own total, [`PREFIX`] the total of all tiles up to and including it) and the
//! value in the low half. Flag and value change together in one relaxed device-scope store, so
//! no fence is needed between them. Status words must be zero before the launch.
use crate::arch::{
    Atomic, Shared, ballot, lane_id, load_relaxed_u64, store_relaxed_u64, sync_threads, thread_idx,
    warp_id, warp_reduce,
};

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
/// (to every thread). Warp 0 looks back 32 predecessors per round trip until it meets a
/// published prefix. `slot` is one shared word.
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
    // SAFETY: forwarded contract.
    unsafe { block_publish_aggregate(status, tile, aggregate) };
    if warp_id() == 0 {
        // SAFETY: forwarded contract; lane 0 published the aggregate above. (2, 4 and 8 rows
        // per round trip were no faster for one tile per block: walks are short there.)
        let exclusive = unsafe { warp_lookback::<1>(status, tile) };
        // SAFETY: forwarded contract.
        unsafe { warp_publish_prefix(status, tile, exclusive, aggregate) };
        if lane_id() == 0 {
            // SAFETY: slot 0 exists.
            unsafe { slot.write(0, exclusive) };
        }
    }
    sync_threads();
    // SAFETY: written before the barrier.
    unsafe { slot.read(0) }
}

/// Publishes `aggregate` as tile `tile`'s status (thread 0 stores; call from every thread or
/// from warp 0), so that successors can look back past it before it learns its own prefix.
///
/// # Safety
/// `status` holds one zeroed word per tile; `tile` was taken with [`block_dynamic_tile_id`].
#[inline(always)]
pub unsafe fn block_publish_aggregate(status: *mut u64, tile: usize, aggregate: u32) {
    if thread_idx() == 0 {
        // Tile 0's aggregate is already its inclusive prefix.
        let flag = if tile == 0 { PREFIX } else { AGGREGATE };
        // SAFETY: in bounds (one word per tile).
        unsafe { store_relaxed_u64(status.add(tile), flag | aggregate as u64) };
    }
}

/// Warp-wide: publishes tile `tile`'s inclusive prefix, `exclusive + aggregate` (lane 0
/// stores).
///
/// # Safety
/// As for [`block_publish_aggregate`].
#[inline(always)]
pub unsafe fn warp_publish_prefix(status: *mut u64, tile: usize, exclusive: u32, aggregate: u32) {
    if lane_id() == 0 {
        let inclusive = exclusive.wrapping_add(aggregate);
        // SAFETY: in bounds (one word per tile).
        unsafe { store_relaxed_u64(status.add(tile), PREFIX | inclusive as u64) };
    }
}

/// Warp-wide, blocking: the sum of the aggregates of all tiles before `tile`, which must have
/// published its own status (so that its successors never wait for a tile that is waiting).
/// Each round trip reads `ROWS` words per lane, `32 * ROWS` predecessors nearest first.
///
/// # Safety
/// As for [`block_publish_aggregate`].
#[inline(always)]
pub unsafe fn warp_lookback<const ROWS: usize>(status: *mut u64, tile: usize) -> u32 {
    let mut base = tile as isize - 1;
    let mut exclusive = 0u32;
    loop {
        // Word j of lane l is predecessor `base - 32 * j - l`: each row is one coalesced load.
        let words: [u64; ROWS] = core::array::from_fn(|j| {
            let idx = base - (32 * j + lane_id() as usize) as isize;
            if idx >= 0 {
                // SAFETY: 0 <= idx < tile, in bounds.
                unsafe { load_relaxed_u64(status.add(idx as usize)) }
            } else {
                PREFIX // before tile 0: an empty prefix
            }
        });
        let w = evaluate(&words);
        if w.ready {
            exclusive = exclusive.wrapping_add(w.sum);
            if w.closed {
                return exclusive;
            }
            base -= (32 * ROWS) as isize;
        }
    }
}

/// What one round trip learned.
struct Window {
    /// Every predecessor before the nearest prefix (or in the window, without one) published.
    ready: bool,
    /// The window holds a prefix.
    closed: bool,
    /// The sum of the words up to and including the nearest prefix, or of the whole window.
    sum: u32,
}

/// Warp-wide evaluation of a window, rows nearest first and lane 0 nearest in a row. Words
/// beyond the nearest prefix do not matter: waiting for them would make every tile wait for
/// the slowest of its predecessors in the window. (Publishing the prefixes that a closing
/// window implies for the aggregates nearer than its prefix, so that later look-backs stop
/// sooner, made the 2^29-item selection 5% slower on the H100: the extra stores contend for
/// the status lines that every look-back polls.)
#[inline(always)]
fn evaluate<const ROWS: usize>(words: &[u64; ROWS]) -> Window {
    let mut w = Window {
        ready: true,
        closed: false,
        sum: 0,
    };
    let mut v = 0u32;
    for word in words {
        let prefix = ballot(word >> 32 == PREFIX >> 32);
        let invalid = ballot(word >> 32 == 0);
        let stop = prefix.trailing_zeros(); // 32: no prefix in this row
        let nearer = if stop >= 31 {
            u32::MAX
        } else {
            (2u32 << stop) - 1
        };
        if invalid & nearer != 0 {
            w.ready = false;
            return w;
        }
        if lane_id() <= stop {
            v = v.wrapping_add(*word as u32);
        }
        if stop < 32 {
            w.closed = true;
            break;
        }
    }
    w.sum = warp_reduce(v, u32::wrapping_add);
    w
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
