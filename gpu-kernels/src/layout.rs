//! The tile arrangement shared by every block-wide function ("vector-striped").
//!
//! A tile of `NT * IPT` items is split into `IPT / V` groups of `NT * V` items; in group `g`,
//! thread `t` owns the `V` adjacent items at `g * NT * V + t * V ..`, so that each group is one
//! fully coalesced vector load (`V * size_of::<T>()` bytes per thread, 16 bytes when possible).
//! Item `k` of a thread's `[T; IPT]` lives at [`tile_offset`]. Crystal's striped layout is the
//! special case `V = 1`. Everything that walks a tile (loads, predicates with their tail guard,
//! scans, stores) uses this one mapping, so order-preserving operators see tile order.

/// Items per vector access for items of `size` bytes and `ipt` items per thread: the largest
/// power of two that divides `ipt` and keeps the access within 16 bytes.
pub const fn vec_width(size: usize, ipt: usize) -> usize {
    if size == 0 || size > 16 {
        return 1;
    }
    let mut v = 16 / size;
    while v > 1 && !ipt.is_multiple_of(v) {
        v /= 2;
    }
    v
}

/// Offset within the tile of item `k` (`0 <= k < IPT`) of thread `t`, for vector width `v`.
#[inline(always)]
pub const fn tile_offset(nt: usize, v: usize, t: usize, k: usize) -> usize {
    (k / v) * nt * v + t * v + k % v
}

/// Shared `u32` words that `crate::block`'s scan needs: one partial per (group, warp) plus
/// one for broadcasting a value to the block.
pub const fn scan_temp_words(nt: usize, ipt: usize, v: usize) -> usize {
    (ipt / v) * nt.div_ceil(32) + 2
}

/// `u64` words from one tile's look-back status word to the next: one 128-byte line per tile.
/// Densely packed, 16 tiles share a line that every later tile's look-back polls while those
/// tiles publish into it, and the L2 serializes the polls and stores on those few hot lines.
/// A whole line per tile also ran faster than a 32-byte slot per tile.
pub const STATUS_STRIDE: usize = 16;

/// The largest look-back epoch a status word's tag holds (30 bits, see
/// `block::block_tile_prefix`); status words must be zeroed again before the epoch wraps.
pub const MAX_EPOCH: u32 = (1 << 30) - 1;

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    #[test]
    fn vec_width_prefers_16_bytes() {
        assert_eq!(vec_width(4, 16), 4);
        assert_eq!(vec_width(4, 8), 4);
        assert_eq!(vec_width(4, 2), 2);
        assert_eq!(vec_width(4, 1), 1);
        assert_eq!(vec_width(4, 6), 2);
        assert_eq!(vec_width(8, 16), 2);
        assert_eq!(vec_width(8, 3), 1);
        assert_eq!(vec_width(1, 16), 16);
    }

    #[test]
    fn tile_offset_is_a_bijection() {
        for &(nt, ipt) in &[(32, 1), (32, 2), (64, 4), (128, 8), (256, 16), (96, 6)] {
            let v = vec_width(4, ipt);
            let mut seen = vec![false; nt * ipt];
            for t in 0..nt {
                for k in 0..ipt {
                    let o = tile_offset(nt, v, t, k);
                    assert!(!seen[o], "offset {o} twice for nt={nt} ipt={ipt}");
                    seen[o] = true;
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn vector_items_are_adjacent() {
        let (nt, ipt) = (128, 8);
        let v = vec_width(4, ipt);
        for t in 0..nt {
            for k in 1..ipt {
                if k % v != 0 {
                    assert_eq!(tile_offset(nt, v, t, k), tile_offset(nt, v, t, k - 1) + 1);
                }
            }
        }
    }
}
