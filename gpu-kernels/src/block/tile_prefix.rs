//! Ordering across tiles in one pass: the decoupled look-back of Merrill and Garland
//! (single-pass parallel prefix scan), as CUB's order-preserving select uses, and dynamic tile
//! ids for kernels that want them.
//!
//! Each tile publishes one 64-bit status word: the value in the low half, and in the high half
//! a tag, the launch's epoch shifted left by two above the kind (1: the tile's own aggregate,
//! 2: the inclusive prefix up to and including it). Tag and value change together in one
//! relaxed device-scope store, so no fence is needed between them. A word whose tag carries
//! another epoch reads as not yet published, so status words need zeroing only once: each
//! later launch over the same words uses a larger epoch (at most [`MAX_EPOCH`]), which saves a
//! memset per launch. Tile `t`'s word is word `t * STATUS_STRIDE` of the status array, alone on
//! its 128-byte line (see [`STATUS_STRIDE`]).
use crate::arch::{
    Atomic, Shared, ballot, lane_id, load_relaxed_u64, store_relaxed_u64, sync_threads, thread_idx,
    warp_id, warp_reduce,
};
pub use crate::layout::MAX_EPOCH;
use crate::layout::STATUS_STRIDE;

/// Predecessors each lane of the looking-back warp reads per round trip. One, across all 32
/// lanes and without a backoff while polling: the wait is for the predecessors' loads, not for
/// the walk, so wider reads, narrower windows and a `nanosleep` backoff gain nothing.
const LOOKBACK: usize = 1;

/// Status kind: the value is the tile's own aggregate.
const AGGREGATE: u32 = 1;
/// Status kind: the value is the inclusive prefix up to this tile.
const PREFIX: u32 = 2;

/// A status word of `kind` with `value`, in `epoch`.
#[inline(always)]
fn status_word(epoch: u32, kind: u32, value: u32) -> u64 {
    (((epoch << 2) | kind) as u64) << 32 | value as u64
}

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

/// Publishes this tile's `aggregate` alone, for a tile that needs no prefix itself: later
/// tiles' look-backs add it and walk on. One thread calls it.
///
/// # Safety
/// As for [`block_tile_prefix`].
#[inline(always)]
pub unsafe fn block_tile_publish(status: *mut u64, tile: usize, aggregate: u32, epoch: u32) {
    // SAFETY: in bounds (STATUS_STRIDE words per tile).
    unsafe {
        store_relaxed_u64(
            status.add(tile * STATUS_STRIDE),
            status_word(epoch, AGGREGATE, aggregate),
        )
    };
}

/// Publishes this tile's `aggregate` and returns the sum of the aggregates of all earlier tiles
/// (to every thread), in the launch's `epoch`. Warp 0 looks back 32 predecessors at a time
/// until it meets a published prefix, reading [`LOOKBACK`] words per lane per round trip.
/// `slot` is one shared word.
///
/// # Safety
/// `status` holds `STATUS_STRIDE` words per tile, none written in `epoch` by an earlier launch
/// (zeroed words for epoch 0); every tile's predecessors are running or done: ids from
/// [`block_dynamic_tile_id`], or block indices (blocks are dispatched in index order, which
/// CUB's single-pass scan also relies on).
#[inline(always)]
pub unsafe fn block_tile_prefix(
    status: *mut u64,
    tile: usize,
    aggregate: u32,
    epoch: u32,
    slot: Shared<u32>,
) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { block_tile_prefix_with(status, tile, aggregate, epoch, slot, || {}) }
}

/// [`block_tile_prefix`] that runs `work` on every thread while the first round trip is in
/// flight: warp 0 publishes the aggregate and issues its loads of the nearest window, all
/// threads run `work` (which must not wait at a barrier), and only then does warp 0 read the
/// window. The compaction's shuffle into shared memory hides the round trip this way.
///
/// # Safety
/// As for [`block_tile_prefix`].
#[inline(always)]
pub unsafe fn block_tile_prefix_with(
    status: *mut u64,
    tile: usize,
    aggregate: u32,
    epoch: u32,
    slot: Shared<u32>,
    work: impl FnOnce(),
) -> u32 {
    let lane = lane_id();
    let prefix_tag = (epoch << 2) | PREFIX;
    let aggregate_tag = (epoch << 2) | AGGREGATE;
    // A round trip reads LOOKBACK words per lane: word j of lane l is predecessor
    // `base - 32 * j - l`, so each load instruction reads 32 words and the window runs
    // nearest first in (j, l) order.
    let window = |base: isize| -> [u64; LOOKBACK] {
        core::array::from_fn(|j| {
            let idx = base - (32 * j + lane as usize) as isize;
            if idx >= 0 {
                // SAFETY: 0 <= idx < tile, in bounds.
                unsafe { load_relaxed_u64(status.add(idx as usize * STATUS_STRIDE)) }
            } else {
                status_word(epoch, PREFIX, 0) // before tile 0: an empty prefix
            }
        })
    };
    let mut base = tile as isize - 1;
    let mut s = [0u64; LOOKBACK];
    if warp_id() == 0 && tile > 0 {
        if lane == 0 {
            // SAFETY: in bounds (STATUS_STRIDE words per tile).
            unsafe {
                store_relaxed_u64(
                    status.add(tile * STATUS_STRIDE),
                    status_word(epoch, AGGREGATE, aggregate),
                )
            };
        }
        s = window(base);
    }
    work();
    if warp_id() == 0 {
        let mut exclusive = 0u32;
        if tile > 0 {
            // Until every word between this tile and the nearest published prefix (or the
            // whole window, when it holds none) is published. Words beyond the nearest prefix
            // do not matter: waiting for them would make every tile wait for the slowest of
            // its 32 * LOOKBACK predecessors.
            loop {
                let mut ready = true;
                let mut found = None;
                for (j, &w) in s.iter().enumerate() {
                    let tag = (w >> 32) as u32;
                    let prefix = ballot(tag == prefix_tag);
                    // Neither tag of this epoch: not yet published.
                    let invalid = ballot(tag.wrapping_sub(aggregate_tag) > 1);
                    let stop = prefix.trailing_zeros(); // 32: no prefix in this row
                    let nearer = if stop >= 31 {
                        u32::MAX
                    } else {
                        (2u32 << stop) - 1
                    };
                    if invalid & nearer != 0 {
                        ready = false;
                        break;
                    }
                    if stop < 32 {
                        found = Some((j, stop));
                        break;
                    }
                }
                if !ready {
                    s = window(base);
                    continue;
                }
                let mut v = 0u32;
                for (j, &w) in s.iter().enumerate() {
                    let take = match found {
                        Some((fj, fl)) => j < fj || (j == fj && lane <= fl),
                        None => true,
                    };
                    if take {
                        v = v.wrapping_add(w as u32);
                    }
                }
                exclusive = exclusive.wrapping_add(warp_reduce(v, u32::wrapping_add));
                if found.is_some() {
                    break;
                }
                base -= (32 * LOOKBACK) as isize;
                s = window(base);
            }
        }
        if lane == 0 {
            let inclusive = exclusive.wrapping_add(aggregate);
            // SAFETY: in bounds; slot 0 exists.
            unsafe {
                store_relaxed_u64(
                    status.add(tile * STATUS_STRIDE),
                    status_word(epoch, PREFIX, inclusive),
                );
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
