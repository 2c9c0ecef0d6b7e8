//! BlockStage: a full tile copied into shared memory by `cp.async` while the block works on the
//! one before it. Each thread copies exactly the 16-byte vectors that `block_load` would give it
//! and reads them back itself, so no barrier is needed and the tile in flight holds no
//! registers: a loop over tiles keeps more bytes in flight than its registers allow.
use super::Tile;
use crate::arch::{copy_async_16, load_shared_v4_u32, thread_idx};

/// Shared-memory bytes one staged tile of `T` takes.
pub const fn stage_bytes<T, const NT: usize, const IPT: usize>() -> usize {
    NT * IPT * core::mem::size_of::<T>()
}

/// Starts the copies of the full tile at `tile` to the shared-window address `dst` (see
/// [`crate::arch::Shared::addr`]); they land at the thread's next `cp.async` wait that covers
/// them. Only for tiles whose vectors are 16 bytes (4-byte items with `IPT % 4 == 0`, 8-byte
/// items with `IPT % 2 == 0`).
///
/// # Safety
/// `tile` is valid for `NT * IPT` reads and 16-byte aligned; `dst` is 16-byte aligned, holds
/// [`stage_bytes`], and no thread reads this thread's vectors of it but this thread, after the
/// wait.
#[inline(always)]
pub unsafe fn block_stage<T: Copy, const NT: usize, const IPT: usize>(tile: *const T, dst: u32) {
    const { assert!(Tile::<T, NT, IPT>::V * core::mem::size_of::<T>() == 16) };
    let v = Tile::<T, NT, IPT>::V;
    let t = thread_idx();
    for g in 0..IPT / v {
        let o = g * NT * v + t * v;
        // SAFETY: item `o` starts a 16-byte vector within the tile and within `dst`.
        unsafe {
            copy_async_16(
                dst + (o * core::mem::size_of::<T>()) as u32,
                tile.add(o).cast::<u32>(),
            )
        };
    }
}

/// This thread's items of the tile [`block_stage`] copied to `src`, in `block_load`'s layout.
///
/// # Safety
/// This thread's copies to `src` have landed (a `cp.async` wait that covers them).
#[inline(always)]
pub unsafe fn block_load_staged<T: Copy, const NT: usize, const IPT: usize>(
    src: u32,
    items: &mut [T; IPT],
) {
    let v = Tile::<T, NT, IPT>::V;
    let t = thread_idx();
    for g in 0..IPT / v {
        let o = g * NT * v + t * v;
        // SAFETY: the vector this thread copied there, landed.
        let w = unsafe { load_shared_v4_u32(src + (o * core::mem::size_of::<T>()) as u32) };
        for j in 0..v {
            // SAFETY: the 16 bytes of `w` hold `v` items of `T`.
            items[g * v + j] = unsafe { w.as_ptr().cast::<T>().add(j).read_unaligned() };
        }
    }
}
