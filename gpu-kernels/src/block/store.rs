//! BlockStore, and the write-out of a compacted tile.
use super::Tile;
use crate::arch::{Shared, store_vector, thread_idx};

#[inline(always)]
unsafe fn store_full<T: Copy, const NT: usize, const IPT: usize, const V: usize>(
    tile: *mut T,
    items: &[T; IPT],
) {
    let t = thread_idx();
    for g in 0..IPT / V {
        let v: [T; V] = core::array::from_fn(|j| items[g * V + j]);
        // SAFETY: as in block_load: in bounds and aligned for a full tile.
        unsafe { store_vector::<T, V>(tile.add(g * NT * V + t * V), v) };
    }
}

/// Stores `items` to the first `min(n, NT * IPT)` positions at `tile`, in tile order.
///
/// # Safety
/// `tile` is valid for `min(n, NT * IPT)` writes and aligned to 16 bytes.
#[inline(always)]
pub unsafe fn block_store<T: Copy, const NT: usize, const IPT: usize>(
    tile: *mut T,
    n: usize,
    items: &[T; IPT],
) {
    if n >= Tile::<T, NT, IPT>::ITEMS {
        // SAFETY: forwarded; see block_load for the dispatch on V.
        unsafe {
            match Tile::<T, NT, IPT>::V {
                16 => store_full::<T, NT, IPT, 16>(tile, items),
                8 => store_full::<T, NT, IPT, 8>(tile, items),
                4 => store_full::<T, NT, IPT, 4>(tile, items),
                2 => store_full::<T, NT, IPT, 2>(tile, items),
                _ => store_full::<T, NT, IPT, 1>(tile, items),
            }
        }
    } else {
        let t = thread_idx();
        for (k, &item) in items.iter().enumerate() {
            let o = Tile::<T, NT, IPT>::offset(t, k);
            if o < n {
                // SAFETY: o < n.
                unsafe { tile.add(o).write(item) };
            }
        }
    }
}

/// Copies `count` items from the shared buffer to `out`, striped across the block so that
/// consecutive threads write consecutive addresses (coalesced at any alignment of `out`).
///
/// # Safety
/// `count <= buf.len()`; `out` is valid for `count` writes; `buf` was filled before a barrier.
#[inline(always)]
pub unsafe fn block_store_compacted<T: Copy, const NT: usize>(
    buf: Shared<T>,
    count: usize,
    out: *mut T,
) {
    let mut i = thread_idx();
    while i < count {
        // SAFETY: i < count, within both buffers.
        unsafe { out.add(i).write(buf.read(i)) };
        i += NT;
    }
}
