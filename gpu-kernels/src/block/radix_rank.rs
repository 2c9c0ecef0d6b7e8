//! BlockRadixRank: the stable position of every key of a tile in the tile sorted by one radix
//! digit, as the one-sweep sort (Adinets and Merrill, 2022) and the partition passes need it.
//!
//! Keys are held warp-striped (item `k` of lane `l` of warp `w` sits at tile offset
//! `w * 32 * IPT + k * 32 + l`, see [`warp_striped_offset`]): each warp ranks its own keys in
//! tile order, round by round, with `match.any` finding the lanes that share a digit and one
//! shared-memory atomic per distinct digit on the warp's private counters. The per-warp counts
//! are then turned into tile positions with one scan over the digits. Every digit is owned by
//! one thread for the per-digit steps: thread `t` owns digits `t * DPT .. t * DPT + DPT`
//! (`DPT = ceil(BINS / NT)`), the arrangement of [`super::block_exclusive_sum`] over `[u32; DPT]`.
use super::block_exclusive_sum;
use crate::arch::{
    Atomic, Shared, lane_id, lanemask_lt, load_vector, match_any, popc, shfl_idx, sync_threads,
    thread_idx, warp_id,
};

/// Digit of an item that is not part of the tile (the tail): ranked by nobody.
pub const NO_DIGIT: u32 = u32::MAX;

/// Tile offset of item `k` of thread `t` in the warp-striped arrangement.
#[inline(always)]
pub const fn warp_striped_offset<const IPT: usize>(t: usize, k: usize) -> usize {
    (t / 32) * 32 * IPT + k * 32 + t % 32
}

/// How many of thread `t`'s items are among the first `n` of the tile in the warp-striped
/// arrangement (they are its first ones): one small number to test instead of `IPT` offsets.
#[inline(always)]
pub const fn warp_striped_count<const IPT: usize>(t: usize, n: usize) -> usize {
    let first = (t / 32) * 32 * IPT + t % 32;
    if n <= first {
        0
    } else {
        let c = (n - first).div_ceil(32);
        if c < IPT { c } else { IPT }
    }
}

/// Loads the `n` valid items at `tile` (all `NT * IPT` when `n` is at least that) warp-striped;
/// items past `n` are `fill`.
///
/// # Safety
/// `tile` is valid for `min(n, NT * IPT)` reads.
#[inline(always)]
pub unsafe fn block_load_warp_striped<T: Copy, const NT: usize, const IPT: usize>(
    tile: *const T,
    n: usize,
    fill: T,
) -> [T; IPT] {
    let t = thread_idx();
    let mine = warp_striped_count::<IPT>(t, n) as u32;
    let first = tile.wrapping_add(warp_striped_offset::<IPT>(t, 0));
    core::array::from_fn(|k| {
        if (k as u32) < mine {
            // SAFETY: item k of this thread is among the n valid ones.
            unsafe { load_vector::<T, 1>(first.add(k * 32))[0] }
        } else {
            fill
        }
    })
}

/// Shared memory of the ranking.
#[derive(Clone, Copy)]
pub struct RadixRankShared {
    /// Per-warp digit counters, `NT / 32 * BINS` words.
    pub counters: Shared<u32>,
    /// Scan partials, `Tile::<u32, NT, DPT>::SCAN_WORDS` words.
    pub scan: Shared<u32>,
}

/// Phase one: ranks each warp's keys among the warp's keys with the same digit, in tile order,
/// and returns the thread's digit totals over the whole tile (digit `t * DPT + j` in `[j]`,
/// zero past `BINS`). `digit(k)` is item `k`'s digit, in `0..BINS` or [`NO_DIGIT`]; it is
/// called again rather than stored, since registers bound the callers' occupancy. `in_warp` receives the
/// ranks within the warp; pass them to [`block_radix_rank_finish`].
#[inline(always)]
pub fn block_radix_count<const NT: usize, const IPT: usize, const BINS: usize, const DPT: usize>(
    digit: impl Fn(usize) -> u32,
    in_warp: &mut [u32; IPT],
    sh: RadixRankShared,
) -> [u32; DPT] {
    const { assert!(NT % 32 == 0 && DPT * NT >= BINS) };
    let t = thread_idx();
    let warps = NT / 32;
    let mut i = t;
    while i < warps * BINS {
        // SAFETY: in bounds; each thread zeroes its own words.
        unsafe { sh.counters.write(i, 0) };
        i += NT;
    }
    sync_threads();
    let base = warp_id() * BINS;
    let (lane, below) = (lane_id(), lanemask_lt());
    for (k, r) in in_warp.iter_mut().enumerate() {
        let d = digit(k);
        let peers = match_any(d);
        let leader = 31 - peers.leading_zeros();
        let mut first = 0;
        if lane == leader && d != NO_DIGIT {
            // SAFETY: d < BINS; the warp's own counters, updated atomically across rounds.
            first = unsafe { sh.counters.atomic_add(base + d as usize, popc(peers)) };
        }
        *r = shfl_idx(first, leader) + popc(peers & below);
    }
    sync_threads();
    // Per digit: the tile total (the per-warp counts stay in shared memory until phase two).
    core::array::from_fn(|j| {
        let d = t * DPT + j;
        let mut run = 0;
        if d < BINS {
            for w in 0..warps {
                // SAFETY: in bounds; read-only in this phase.
                run += unsafe { sh.counters.read(w * BINS + d) };
            }
        }
        run
    })
}

/// Phase two: scans the digit totals into the tile's digit starts (returned, in the thread's
/// digit arrangement) and turns `ranks` (the in-warp ranks of phase one) into every valid
/// item's position in the tile sorted by digit (stable); positions of [`NO_DIGIT`] items are
/// unspecified.
#[inline(always)]
pub fn block_radix_rank_finish<
    const NT: usize,
    const IPT: usize,
    const BINS: usize,
    const DPT: usize,
>(
    digit: impl Fn(usize) -> u32,
    ranks: &mut [u32; IPT],
    totals: &[u32; DPT],
    sh: RadixRankShared,
) -> [u32; DPT] {
    let t = thread_idx();
    let warps = NT / 32;
    let mut starts = [0u32; DPT];
    block_exclusive_sum::<u32, u32, NT, DPT>(totals, &mut starts, sh.scan);
    // Each warp's first position for each digit: the digit's tile start plus the counts of
    // the warps before it.
    for (j, &s) in starts.iter().enumerate() {
        let d = t * DPT + j;
        if d < BINS {
            let mut run = s;
            for w in 0..warps {
                // SAFETY: digit d is owned by this thread alone in this phase.
                unsafe {
                    let c = sh.counters.read(w * BINS + d);
                    sh.counters.write(w * BINS + d, run);
                    run += c;
                }
            }
        }
    }
    sync_threads();
    let base = warp_id() * BINS;
    for (k, r) in ranks.iter_mut().enumerate() {
        let d = digit(k);
        if d != NO_DIGIT {
            // SAFETY: d < BINS; read-only after the barrier.
            *r += unsafe { sh.counters.read(base + d as usize) };
        }
    }
    starts
}
