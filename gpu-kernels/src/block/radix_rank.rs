//! BlockRadixRank: the stable position of every key of a tile in the tile sorted by one radix
//! digit, as the one-sweep sort (Adinets and Merrill, 2022) and the partition passes need it.
//!
//! Keys are held warp-striped (item `k` of lane `l` of warp `w` sits at tile offset
//! `w * 32 * IPT + k * 32 + l`, see [`warp_striped_offset`]): each warp ranks its own keys in
//! tile order, round by round, with a warp match ([`match_bits`]) finding the lanes that share
//! a digit and one shared-memory atomic per distinct digit on the warp's private counters. The
//! per-warp counts are then turned into tile positions with one scan over the digits. Every
//! digit is owned by one thread for the per-digit steps: thread `t` owns digits
//! `t * DPT .. t * DPT + DPT` (`DPT = ceil(BINS / NT)`), the arrangement of
//! [`super::block_exclusive_sum`] over `[u32; DPT]`.
use super::block_exclusive_sum;
use crate::arch::{
    Shared, lane_id, lanemask_lt, load_vector, match_bits, popc, shfl_idx, sync_threads,
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

/// Ranks each warp's keys with the same digit in tile order, round by round: a warp match
/// finds the lanes that share a digit and their leader takes that many positions from the
/// warp's cursor for the digit (`counters[base + d]`) with one shared-memory atomic. Digits
/// are below `BINS`; with `full` false some may be [`NO_DIGIT`], which the match tells apart by
/// one more bit.
#[inline(always)]
fn match_rank<const IPT: usize, const BINS: usize>(
    digit: &impl Fn(usize) -> u32,
    ranks: &mut [u32; IPT],
    counters: Shared<u32>,
    base: usize,
    full: bool,
) {
    let (lane, below) = (lane_id(), lanemask_lt());
    let bits = BINS.trailing_zeros() + !full as u32;
    for (k, r) in ranks.iter_mut().enumerate() {
        let d = digit(k);
        let peers = match_bits(d, bits);
        let leader = 31 - peers.leading_zeros();
        let mut first = 0;
        if lane == leader && d != NO_DIGIT {
            // SAFETY: d < BINS; the warp's own cursors, updated atomically across rounds.
            first = unsafe { counters.atomic_add(base + d as usize, popc(peers)) };
        }
        *r = shfl_idx(first, leader) + popc(peers & below);
    }
}

/// Phase one: returns the thread's digit totals over the whole tile (digit `t * DPT + j` in
/// `[j]`, zero past `BINS`), the per-warp counts staying in shared memory. `digit(k)` is item
/// `k`'s digit, in `0..BINS`, or [`NO_DIGIT`] unless `full`; it is called again rather than
/// stored, since registers bound the callers' occupancy. Pass `ranks` and the totals to
/// [`block_radix_rank_finish`] with the same `early` and `full`.
///
/// With `early` ("early counts", as CUB's one-sweep ranking does) the counts come from one
/// shared-memory atomic per item and the match-based ranking waits for phase two, so a caller
/// can publish the totals for the look-back sooner and later tiles wait less. It pays for the
/// passes with and without values alike, since the match takes ballots (see [`match_bits`]).
/// Without it the ranking happens here and `ranks` receives the ranks within the warp.
#[inline(always)]
pub fn block_radix_count<const NT: usize, const IPT: usize, const BINS: usize, const DPT: usize>(
    digit: impl Fn(usize) -> u32,
    ranks: &mut [u32; IPT],
    sh: RadixRankShared,
    early: bool,
    full: bool,
) -> [u32; DPT] {
    const { assert!(NT % 32 == 0 && DPT * NT >= BINS && BINS.is_power_of_two()) };
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
    if early {
        for k in 0..IPT {
            let d = digit(k);
            if d != NO_DIGIT {
                // SAFETY: d < BINS; the warp's own counters.
                unsafe { sh.counters.atomic_add(base + d as usize, 1) };
            }
        }
    } else {
        match_rank::<IPT, BINS>(&digit, ranks, sh.counters, base, full);
    }
    sync_threads();
    // Per digit: the tile total (the per-warp counts stay in shared memory for phase two).
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
/// digit arrangement), turns the per-warp counts into each warp's first position per digit,
/// and completes `ranks`: every valid item's position in the tile sorted by digit (stable);
/// positions of [`NO_DIGIT`] items are unspecified.
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
    early: bool,
    full: bool,
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
    if early {
        match_rank::<IPT, BINS>(&digit, ranks, sh.counters, base, full);
    } else {
        for (k, r) in ranks.iter_mut().enumerate() {
            let d = digit(k);
            if d != NO_DIGIT {
                // SAFETY: d < BINS; read-only after the barrier.
                *r += unsafe { sh.counters.read(base + d as usize) };
            }
        }
    }
    starts
}
