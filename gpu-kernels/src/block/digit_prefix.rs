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

/// Predecessors a look-back reads per round trip. (4 was measured slower on the H100 for the
/// 8-bit sort passes: 14.1 ms against 13.1 ms for 2^28 key + value pairs; the extra status
/// reads while spinning cost more than the round trips they save.)
const WINDOW: usize = 1;

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
/// [`super::block_radix_count`]); tile 0's totals are already prefixes. Call it as early as
/// possible: successors wait for it.
///
/// # Safety
/// `status` holds `BINS` zeroed words per tile, tile-major; `tile` came from
/// [`super::block_dynamic_tile_id`].
#[inline(always)]
pub unsafe fn block_digit_publish<S: StatusWord, const BINS: usize, const DPT: usize>(
    status: *mut S,
    tile: usize,
    totals: &[u32; DPT],
) {
    let t = crate::arch::thread_idx();
    let flag = if tile == 0 { PREFIX } else { AGGREGATE };
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
/// # Safety
/// As for [`block_digit_publish`], which this tile must have called first.
#[inline(always)]
pub unsafe fn block_digit_lookback<S: StatusWord, const BINS: usize, const DPT: usize>(
    status: *mut S,
    tile: usize,
    totals: &[u32; DPT],
) -> [u32; DPT] {
    let t = crate::arch::thread_idx();
    core::array::from_fn(|j| {
        let d = t * DPT + j;
        let mut excl = 0u32;
        if d < BINS && tile > 0 {
            // Predecessors `next - 1 ..= next - WINDOW` are read together: walking back over
            // tiles that only published their own counts costs one round trip per WINDOW tiles.
            let mut next = tile;
            'walk: loop {
                let words: [(u32, u32); WINDOW] = core::array::from_fn(|k| {
                    if next > k {
                        // SAFETY: next - 1 - k < tile, in bounds.
                        unsafe { S::poll(status.add((next - 1 - k) * BINS + d)) }
                    } else {
                        (PREFIX, 0) // before tile 0: an empty prefix
                    }
                });
                let mut sum = 0u32;
                for &(flag, count) in &words {
                    if flag == 0 {
                        continue 'walk; // not published yet: read the window again
                    }
                    sum = sum.wrapping_add(count);
                    if flag == PREFIX {
                        excl = excl.wrapping_add(sum);
                        break 'walk;
                    }
                }
                excl = excl.wrapping_add(sum);
                next -= WINDOW;
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
