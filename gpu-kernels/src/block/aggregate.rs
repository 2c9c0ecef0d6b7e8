//! BlockAggregate: sum, min, max and count over the valid items of a tile.
use super::Tile;
use crate::arch::{Shared, Shuffle, lane_id, sync_threads, thread_idx, warp_id, warp_reduce};

/// Reduces the first `n` items of the tile with `op` (associative and commutative, with
/// `identity`); every thread gets the result. `temp` holds at least `NT / 32 + 1` values.
/// Callers must pass a barrier before reusing `temp`.
#[inline(always)]
pub fn block_reduce<T: Copy + Shuffle, const NT: usize, const IPT: usize>(
    items: &[T; IPT],
    n: usize,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
    temp: Shared<T>,
) -> T {
    let full = n >= Tile::<T, NT, IPT>::ITEMS;
    let t = thread_idx();
    let mut acc = identity;
    for (k, &x) in items.iter().enumerate() {
        if full || Tile::<T, NT, IPT>::offset(t, k) < n {
            acc = op(acc, x);
        }
    }
    let acc = warp_reduce(acc, op);
    let warps = Tile::<T, NT, IPT>::WARPS;
    if lane_id() == 0 {
        // SAFETY: one writer per warp slot.
        unsafe { temp.write(warp_id(), acc) };
    }
    sync_threads();
    if warp_id() == 0 {
        let lane = lane_id() as usize;
        // SAFETY: slots below `warps` were written before the barrier.
        let mine = if lane < warps {
            unsafe { temp.read(lane) }
        } else {
            identity
        };
        let r = warp_reduce(mine, op);
        if lane == 0 {
            // SAFETY: the broadcast slot.
            unsafe { temp.write(warps, r) };
        }
    }
    sync_threads();
    // SAFETY: written before the barrier.
    unsafe { temp.read(warps) }
}

/// Sum of the first `n` items.
#[inline(always)]
pub fn block_sum<
    T: Copy + Shuffle + Default + core::ops::Add<Output = T>,
    const NT: usize,
    const IPT: usize,
>(
    items: &[T; IPT],
    n: usize,
    temp: Shared<T>,
) -> T {
    block_reduce::<T, NT, IPT>(items, n, T::default(), |a, b| a + b, temp)
}

/// Adds the threads' partial sums `mine` into the global `*sum`, with one atomic per block (a
/// kernel whose blocks loop over many tiles adds once; one atomic per tile on the one word
/// would bound a narrow column's time).
///
/// # Safety
/// `sum` is one valid global word; called by the whole block.
#[inline(always)]
pub unsafe fn block_sum_into<const NT: usize>(mine: u64, temp: Shared<u64>, sum: *mut u64) {
    let s = block_sum::<u64, NT, 1>(&[mine], usize::MAX, temp);
    if thread_idx() == 0 && s != 0 {
        // SAFETY: the caller passes one word at `sum`.
        unsafe { <u64 as crate::arch::Atomic>::atomic_add(sum, s) };
    }
}

/// Minimum of the first `n` items (`identity` for an empty tile; NaN items are ignored).
#[inline(always)]
pub fn block_min<T: Copy + Shuffle + PartialOrd, const NT: usize, const IPT: usize>(
    items: &[T; IPT],
    n: usize,
    identity: T,
    temp: Shared<T>,
) -> T {
    block_reduce::<T, NT, IPT>(items, n, identity, |a, b| if b < a { b } else { a }, temp)
}

/// Maximum of the first `n` items (`identity` for an empty tile; NaN items are ignored).
#[inline(always)]
pub fn block_max<T: Copy + Shuffle + PartialOrd, const NT: usize, const IPT: usize>(
    items: &[T; IPT],
    n: usize,
    identity: T,
    temp: Shared<T>,
) -> T {
    block_reduce::<T, NT, IPT>(items, n, identity, |a, b| if b > a { b } else { a }, temp)
}

/// Number of set flags among the first `n` items.
#[inline(always)]
pub fn block_count<T, const NT: usize, const IPT: usize>(
    flags: &[bool; IPT],
    n: usize,
    temp: Shared<u32>,
) -> u32 {
    let full = n >= Tile::<T, NT, IPT>::ITEMS;
    let t = thread_idx();
    let mut c = [0u32; IPT];
    for k in 0..IPT {
        c[k] = (flags[k] && (full || Tile::<T, NT, IPT>::offset(t, k) < n)) as u32;
    }
    // The flags' arrangement is T's, but counting is order-free: reduce as a u32 tile.
    block_reduce::<u32, NT, IPT>(&c, usize::MAX, 0, |a, b| a + b, temp)
}
