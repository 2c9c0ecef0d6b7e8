//! Decoupled look-back per digit, as the one-sweep radix sort does it: every tile publishes one
//! status word per digit (its count of that digit, then the count over all tiles up to and
//! including it), and the thread that owns a digit walks back over its predecessors' words for
//! that digit alone. All digits look back at once, one thread each.
//!
//! A status word holds a flag and a count that change together in one relaxed store:
//! [`StatusWord`] is `u32` (flag in the top two bits, so counts below 2^30) or `u64` (flag in the
//! high half). Status words must be zero before the launch.
use crate::arch::{load_relaxed_u32, load_relaxed_u64, store_relaxed_u32, store_relaxed_u64};

/// A look-back status word.
pub trait StatusWord: Copy {
    /// Largest count the word can carry.
    const MAX_COUNT: u64;
    /// Publishes `count` with `flag` (1: the tile's own count, 2: the inclusive prefix).
    ///
    /// # Safety
    /// `p` is a valid, aligned global address.
    unsafe fn publish(p: *mut Self, flag: u32, count: u32);
    /// Reads `(flag, count)`; flag 0 means not yet published.
    ///
    /// # Safety
    /// As for [`StatusWord::publish`].
    unsafe fn poll(p: *const Self) -> (u32, u32);
}

const AGGREGATE: u32 = 1;
const PREFIX: u32 = 2;

impl StatusWord for u32 {
    const MAX_COUNT: u64 = (1 << 30) - 1;
    #[inline(always)]
    unsafe fn publish(p: *mut Self, flag: u32, count: u32) {
        // SAFETY: forwarded.
        unsafe { store_relaxed_u32(p, (flag << 30) | count) }
    }
    #[inline(always)]
    unsafe fn poll(p: *const Self) -> (u32, u32) {
        // SAFETY: forwarded.
        let w = unsafe { load_relaxed_u32(p) };
        (w >> 30, w & ((1 << 30) - 1))
    }
}

impl StatusWord for u64 {
    const MAX_COUNT: u64 = u32::MAX as u64;
    #[inline(always)]
    unsafe fn publish(p: *mut Self, flag: u32, count: u32) {
        // SAFETY: forwarded.
        unsafe { store_relaxed_u64(p, ((flag as u64) << 32) | count as u64) }
    }
    #[inline(always)]
    unsafe fn poll(p: *const Self) -> (u32, u32) {
        // SAFETY: forwarded.
        let w = unsafe { load_relaxed_u64(p) };
        ((w >> 32) as u32, w as u32)
    }
}

/// Publishes this tile's digit totals (the thread's digits `t * DPT + j`, see
/// [`super::block_radix_count`]); the totals of a `first` tile (tile 0, or the first tile of a
/// segment in a segmented pass) are already prefixes. Call it as early as possible: successors
/// wait for it.
///
/// # Safety
/// `status` holds `BINS` zeroed words per tile, tile-major; `tile` came from
/// [`super::block_dynamic_tile_id`].
#[inline(always)]
pub unsafe fn block_digit_publish<S: StatusWord, const BINS: usize, const DPT: usize>(
    status: *mut S,
    tile: usize,
    first: bool,
    totals: &[u32; DPT],
) {
    let t = crate::arch::thread_idx();
    let flag = if first { PREFIX } else { AGGREGATE };
    for (j, &c) in totals.iter().enumerate() {
        let d = t * DPT + j;
        if d < BINS {
            // SAFETY: in bounds by contract.
            unsafe { S::publish(status.add(tile * BINS + d), flag, c) };
        }
    }
}

/// For each of the thread's digits: the count of that digit in all earlier tiles. Publishes
/// this tile's inclusive prefixes on the way out.
///
/// The walk reads one predecessor per round trip, not a window of several once the nearest
/// one has published: the status lines of recent tiles are the L2's hottest, and every extra
/// read of them costs more than the round trips it saves.
///
/// # Safety
/// As for [`block_digit_publish`], which this tile must have called first with the same
/// `first`; the walk stops at the nearest earlier `first` tile at the latest.
#[inline(always)]
pub unsafe fn block_digit_lookback<S: StatusWord, const BINS: usize, const DPT: usize>(
    status: *mut S,
    tile: usize,
    first: bool,
    totals: &[u32; DPT],
) -> [u32; DPT] {
    let t = crate::arch::thread_idx();
    core::array::from_fn(|j| {
        let d = t * DPT + j;
        let mut excl = 0u32;
        if d < BINS && !first {
            // A first tile carries a prefix, so the walk ends before `next` passes it.
            let mut next = tile;
            loop {
                // SAFETY: next - 1 < tile, in bounds by contract.
                let (flag, count) = unsafe { S::poll(status.add((next - 1) * BINS + d)) };
                if flag == 0 {
                    continue; // not published yet: read it again
                }
                excl = excl.wrapping_add(count);
                if flag == PREFIX {
                    break;
                }
                next -= 1;
            }
            // SAFETY: in bounds.
            unsafe {
                S::publish(
                    status.add(tile * BINS + d),
                    PREFIX,
                    excl.wrapping_add(totals[j]),
                )
            };
        }
        excl
    })
}
