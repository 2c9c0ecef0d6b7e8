//! BlockLoad and BlockLoadSel.
use super::Tile;
use crate::arch::{block_idx, grid_dim, load_vector, thread_idx};

#[inline(always)]
unsafe fn load_full<T: Copy, const NT: usize, const IPT: usize, const V: usize>(
    tile: *const T,
    items: &mut [T; IPT],
    sel: Option<&[bool; IPT]>,
) {
    let t = thread_idx();
    for g in 0..IPT / V {
        if let Some(flags) = sel
            && !(0..V).any(|j| flags[g * V + j])
        {
            continue; // no flagged item in this vector: skip its sector
        }
        // SAFETY: a full tile holds NT * IPT items; offsets are multiples of V items from a
        // tile base aligned to the tile size, so the vector access is aligned.
        let v: [T; V] = unsafe { load_vector::<T, V>(tile.add(g * NT * V + t * V)) };
        items[g * V..g * V + V].copy_from_slice(&v);
    }
}

/// Loads in the layout of a tile of `L` (its vector width), which a caller loading several
/// columns of different item sizes for one tile of rows uses to keep item `k` of every column
/// on the same row.
#[inline(always)]
unsafe fn load_dispatch<T: Copy, L, const NT: usize, const IPT: usize>(
    tile: *const T,
    n: usize,
    items: &mut [T; IPT],
    sel: Option<&[bool; IPT]>,
) {
    // The vector access must stay within one 16-byte load.
    const { assert!(Tile::<L, NT, IPT>::V * core::mem::size_of::<T>() <= 16) };
    if n >= Tile::<L, NT, IPT>::ITEMS {
        // SAFETY: forwarded; the match picks the instance whose V equals Tile::V (folded at
        // compile time).
        unsafe {
            match Tile::<L, NT, IPT>::V {
                16 => load_full::<T, NT, IPT, 16>(tile, items, sel),
                8 => load_full::<T, NT, IPT, 8>(tile, items, sel),
                4 => load_full::<T, NT, IPT, 4>(tile, items, sel),
                2 => load_full::<T, NT, IPT, 2>(tile, items, sel),
                _ => load_full::<T, NT, IPT, 1>(tile, items, sel),
            }
        }
    } else {
        let t = thread_idx();
        for k in 0..IPT {
            let o = Tile::<L, NT, IPT>::offset(t, k);
            if o < n && sel.is_none_or(|f| f[k]) {
                // SAFETY: o < n, the number of valid items at `tile`.
                items[k] = unsafe { tile.add(o).read() };
            }
        }
    }
}

/// Loads the `n` valid items at `tile` (all `NT * IPT` of them when `n` is at least that) into
/// `items`: vector loads for a full tile, item by item for the tail. Items past `n` keep their
/// previous value.
///
/// # Safety
/// `tile` is valid for `min(n, NT * IPT)` reads and aligned to 16 bytes.
#[inline(always)]
pub unsafe fn block_load<T: Copy, const NT: usize, const IPT: usize>(
    tile: *const T,
    n: usize,
    items: &mut [T; IPT],
) {
    // SAFETY: forwarded.
    unsafe { load_dispatch::<T, T, NT, IPT>(tile, n, items, None) }
}

/// Calls `f` on each of the `n` items at `items`, the block taking tiles of `NT * IPT` items
/// `block_idx() + k * grid_dim()` ([`block_load`] each), a thread its items of a tile.
///
/// # Safety
/// `items` is valid for `n` reads and aligned to 16 bytes.
#[inline(always)]
pub unsafe fn grid_for_each<T: Copy + Default, const NT: usize, const IPT: usize>(
    items: *const T,
    n: usize,
    mut f: impl FnMut(T),
) {
    let mut tile = block_idx();
    while tile * NT * IPT < n {
        let start = tile * NT * IPT;
        let valid = (n - start).min(NT * IPT);
        let mut v = [T::default(); IPT];
        // SAFETY: the tile lies within the items; its start keeps their alignment.
        unsafe { block_load::<T, NT, IPT>(items.add(start), valid, &mut v) };
        for (j, &x) in v.iter().enumerate() {
            if Tile::<T, NT, IPT>::offset(thread_idx(), j) < valid {
                f(x);
            }
        }
        tile += grid_dim();
    }
}

/// Like [`block_load`], but only items whose flag is set are read (a vector is read when any
/// of its items is flagged), so a selective predicate skips memory sectors.
///
/// # Safety
/// As for [`block_load`].
#[inline(always)]
pub unsafe fn block_load_sel<T: Copy, const NT: usize, const IPT: usize>(
    tile: *const T,
    n: usize,
    flags: &[bool; IPT],
    items: &mut [T; IPT],
) {
    // SAFETY: forwarded.
    unsafe { load_dispatch::<T, T, NT, IPT>(tile, n, items, Some(flags)) }
}

/// [`block_load`] (or [`block_load_sel`] with `flags`) of items `T` placed as a tile of `L`
/// places its items: item `k` of a thread lies on the same row as item `k` of a tile of `L`
/// loaded with [`block_load`], so a kernel reading several columns of different widths for
/// one tile of rows (a filter column next to `f64` keys) pairs them item by item.
///
/// # Safety
/// As for [`block_load`].
#[inline(always)]
pub unsafe fn block_load_as<T: Copy, L, const NT: usize, const IPT: usize>(
    tile: *const T,
    n: usize,
    flags: Option<&[bool; IPT]>,
    items: &mut [T; IPT],
) {
    // SAFETY: forwarded.
    unsafe { load_dispatch::<T, L, NT, IPT>(tile, n, items, flags) }
}
