//! BlockScan: exclusive prefix sum over the tile in tile order, and the block total.
use super::Tile;
use crate::arch::{
    Shared, Shuffle, block_dim, lane_id, shfl_idx, shfl_up, sync_threads, warp_id,
    warp_inclusive_sum,
};
use core::ops::Add;

/// Values the block scan adds up.
pub trait ScanValue: Copy + Default + Add<Output = Self> + Shuffle {}
impl<T: Copy + Default + Add<Output = T> + Shuffle> ScanValue for T {}

#[inline(always)]
fn warp_inclusive<S: ScanValue>(mut v: S) -> S {
    let lane = lane_id();
    let mut d = 1;
    while d < 32 {
        let up = shfl_up(v, d);
        if lane >= d {
            v = v + up;
        }
        d *= 2;
    }
    v
}

/// Writes to `out[k]` the sum of all values before item `k` in tile order and returns the sum
/// of the whole tile. `T` is the tile's item type (it fixes the arrangement); `temp` holds at
/// least `Tile::<T, NT, IPT>::SCAN_WORDS` values. Callers must pass a barrier before reusing
/// `temp`.
///
/// Three levels: sequential within a thread's vector, shuffles within the warp (one scan per
/// vector group), and one warp scanning the per-(group, warp) partials in shared memory.
#[inline(always)]
pub fn block_exclusive_sum<T, S: ScanValue, const NT: usize, const IPT: usize>(
    values: &[S; IPT],
    out: &mut [S; IPT],
    temp: Shared<S>,
) -> S {
    let v = Tile::<T, NT, IPT>::V;
    let groups = IPT / v;
    let warps = Tile::<T, NT, IPT>::WARPS;
    let (lane, w) = (lane_id(), warp_id());
    let mut warp_excl = [S::default(); IPT]; // per group; only the first `groups` are used
    for g in 0..groups {
        let mut s = S::default();
        for j in 0..v {
            out[g * v + j] = s;
            s = s + values[g * v + j];
        }
        let incl = warp_inclusive(s);
        warp_excl[g] = shfl_up(incl, 1);
        if lane == 0 {
            warp_excl[g] = S::default();
        }
        if lane == 31 {
            // SAFETY: one writer per (group, warp) slot, all below SCAN_WORDS.
            unsafe { temp.write(g * warps + w, incl) };
        }
    }
    sync_threads();
    let m = groups * warps;
    if w == 0 {
        let per = m.div_ceil(32);
        let first = lane as usize * per;
        let mut local = S::default();
        for i in 0..per {
            if first + i < m {
                // SAFETY: in bounds; only warp 0 touches the partials now.
                local = local + unsafe { temp.read(first + i) };
            }
        }
        let incl = warp_inclusive(local);
        let mut run = shfl_up(incl, 1);
        if lane == 0 {
            run = S::default();
        }
        for i in 0..per {
            if first + i < m {
                // SAFETY: as above; each lane rewrites its own entries.
                unsafe {
                    let x = temp.read(first + i);
                    temp.write(first + i, run);
                    run = run + x;
                }
            }
        }
        let total = shfl_idx(incl, 31);
        if lane == 0 {
            // SAFETY: slot m is reserved for the total.
            unsafe { temp.write(m, total) };
        }
    }
    sync_threads();
    for g in 0..groups {
        // SAFETY: read-only after the barrier.
        let base = unsafe { temp.read(g * warps + w) } + warp_excl[g];
        for j in 0..v {
            out[g * v + j] = base + out[g * v + j];
        }
    }
    // SAFETY: as above.
    unsafe { temp.read(m) }
}

/// Shared words [`block_exclusive_sum_any`] needs.
pub const ANY_SCAN_WORDS: usize = 33;

/// Exclusive prefix sum of one `u32` per thread in thread order, for a block of any width
/// that is a multiple of 32 (the launch's, not a constant: the kernels whose block size a
/// benchmark sweeps); returns (this thread's exclusive sum, the block's total). `temp` holds
/// [`ANY_SCAN_WORDS`] words; callers pass a barrier before reusing it.
#[inline(always)]
pub fn block_exclusive_sum_any(v: u32, temp: Shared<u32>) -> (u32, u32) {
    let (lane, w) = (lane_id(), warp_id());
    let warps = block_dim() / 32;
    let incl = warp_inclusive_sum(v);
    if lane == 31 {
        // SAFETY: one writer per warp, w < 32.
        unsafe { temp.write(w, incl) };
    }
    sync_threads();
    if w == 0 {
        // SAFETY: the warps' totals, written before the barrier; only warp 0 touches them now.
        let x = if (lane as usize) < warps {
            unsafe { temp.read(lane as usize) }
        } else {
            0
        };
        let xi = warp_inclusive_sum(x);
        // SAFETY: each lane rewrites its own word; lane 31 the total's.
        unsafe {
            if (lane as usize) < warps {
                temp.write(lane as usize, xi - x);
            }
            if lane == 31 {
                temp.write(32, xi);
            }
        }
    }
    sync_threads();
    // SAFETY: read-only after the barrier.
    unsafe { (temp.read(w) + incl - v, temp.read(32)) }
}
