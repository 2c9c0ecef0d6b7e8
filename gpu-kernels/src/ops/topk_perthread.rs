//! Per-thread top-k (thesis §4.3.1, §4.4.1 and appendix A): every thread keeps the best `k`
//! items it has seen, in a grid-stride walk over the keys, and writes them out; the host then
//! selects the exact top-k among the `threads * k` candidates.
//!
//! **Items.** A key and its row are one item of [`topk_bitonic`](super::topk_bitonic): for
//! 32-bit keys the `u64` `(rank << 32) | !row`, for `f64` a [`Wide`], where `rank` is the key's
//! order-preserving bits complemented for the smallest keys. Items are unique and a larger
//! item is always the better one (equal keys: the smaller row), so a thread's best `k` items
//! are one exact set, and every item of the global top-k is among its thread's best `k` (fewer
//! than `k` items of any thread beat it). The empty slot is [`Item::WORST`], worse than every
//! real item, so the first `k` items a thread sees always enter.
//!
//! **Two variants.**
//! * *Shared heaps* (`heap_top_k`): a min-heap of `k` items per thread in dynamic shared
//!   memory, striped (`slot i` of thread `t` at `i * NT + t`, so the lanes of a warp touch
//!   consecutive words); an item better than the root (the worst kept, cached in a register)
//!   replaces it and sifts down. The heaps' `NT * k` items limit `k` by the shared memory of a
//!   block; the host picks how many blocks (threads) run per SM by that size.
//! * *Registers* (`register_top_k`): `R` items sorted best first in a register array, `R` a
//!   const generic (8, 16, 32); an item better than the last is inserted by one unrolled pass
//!   of compare-and-select ([`insert`]), so every index is static and the array stays in
//!   registers (the appendix's point: a heap's dynamic indices would put it in local memory).
//!
//! Either way a thread writes its `k` items (empty slots included) to `cands`, slot `j` of
//! global thread `g` at `j * threads + g`, as [`Candidate`]s, for the host's exact select.
use super::topk::Candidate;
use super::topk_bitonic::{Item, Wide};

/// Threads per block of the shared-heap kernels: one warp, so that the largest `k` fits one
/// block's shared memory; the number of resident blocks sets the threads per SM.
pub const HEAP_NT: usize = 32;
/// Sizes of the register arrays the register kernels are instantiated for, ascending.
pub const REG_SIZES: [usize; 3] = [8, 16, 32];
/// The largest `k` of the register kernels.
pub const MAX_REG_K: usize = REG_SIZES[REG_SIZES.len() - 1];

/// An item as one number: built from and split into a rank and a complemented row, and the
/// distance between two items in units of `2^shift` (the bucket of bucket select).
pub trait Composite: Item {
    /// The item of rank `rank` and complemented row `nrow`.
    fn from_parts(rank: u64, nrow: u32) -> Self;
    /// The item's candidate (rank and row).
    fn candidate(self) -> Candidate;
    /// `(self - lo) >> shift` as the number `(rank << 32) | nrow`, for `lo <= self` and a
    /// quotient below `2^32`.
    fn bucket(self, lo: Self, shift: u32) -> u32;
}

impl Composite for u64 {
    #[inline(always)]
    fn from_parts(rank: u64, nrow: u32) -> u64 {
        (rank << 32) | u64::from(nrow)
    }
    #[inline(always)]
    fn candidate(self) -> Candidate {
        Candidate {
            rank: self >> 32,
            row: !(self as u32),
            pad: 0,
        }
    }
    #[inline(always)]
    fn bucket(self, lo: u64, shift: u32) -> u32 {
        (self.wrapping_sub(lo) >> shift) as u32
    }
}

impl Composite for Wide {
    #[inline(always)]
    fn from_parts(rank: u64, nrow: u32) -> Wide {
        Wide { rank, nrow, pad: 0 }
    }
    #[inline(always)]
    fn candidate(self) -> Candidate {
        Candidate {
            rank: self.rank,
            row: !self.nrow,
            pad: 0,
        }
    }
    #[inline(always)]
    fn bucket(self, lo: Wide, shift: u32) -> u32 {
        let wide = |w: Wide| (u128::from(w.rank) << 32) | u128::from(w.nrow);
        (wide(self).wrapping_sub(wide(lo)) >> shift) as u32
    }
}

/// Slots a heap lives in: the shared stripes of one thread on the device, a slice in tests.
pub trait Slots<T> {
    /// Slot `i`.
    fn get(&self, i: usize) -> T;
    /// Overwrites slot `i`.
    fn set(&mut self, i: usize, v: T);
}

impl<T: Copy> Slots<T> for [T] {
    fn get(&self, i: usize) -> T {
        self[i]
    }
    fn set(&mut self, i: usize, v: T) {
        self[i] = v;
    }
}

/// Replaces the root of the min-heap of `k` items in `heap` (the worst kept) with `x`, which
/// is better than it, and restores the heap; returns the new root.
#[inline(always)]
pub fn replace_root<T: Item, S: Slots<T> + ?Sized>(heap: &mut S, k: usize, x: T) -> T {
    let mut i = 0;
    loop {
        let l = 2 * i + 1;
        if l >= k {
            break;
        }
        // The worse child moves up if `x` beats it.
        let (mut c, mut cv) = (l, heap.get(l));
        if l + 1 < k {
            let r = heap.get(l + 1);
            if cv.better(r) {
                (c, cv) = (l + 1, r);
            }
        }
        if !x.better(cv) {
            break;
        }
        heap.set(i, cv);
        i = c;
    }
    heap.set(i, x);
    heap.get(0)
}

/// Inserts `x` into `buf`, sorted best first, dropping the last item: `x` must beat the
/// last. One pass of compare-and-select over static indices (registers, appendix A).
#[inline(always)]
pub fn insert<T: Item, const R: usize>(buf: &mut [T; R], x: T) {
    for j in (1..R).rev() {
        let prev = buf[j - 1];
        buf[j] = if x.better(prev) {
            prev
        } else if x.better(buf[j]) {
            x
        } else {
            buf[j]
        };
    }
    if x.better(buf[0]) {
        buf[0] = x;
    }
}

/// Parameters of the per-thread kernels over keys `K`: `(keys, n, k, smallest, cands)`.
pub type PerThreadArgs<K> = (*const K, u32, u32, u32, *mut Candidate);

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{Shared, block_idx, dynamic_shared, global_idx, grid_dim, thread_idx};
    use crate::block::{Tile, block_load};
    use crate::ops::topk_bitonic::TopItemKey;

    /// Calls `visit(item, live)` for the `IPT` keys this thread loads of every tile of
    /// `NT * IPT` keys that its block visits (tiles `block, block + grid, ...`, vector loads);
    /// `live` is false past the last key. Every thread of a block makes the same calls, so
    /// `visit` may use warp collectives.
    ///
    /// # Safety
    /// `keys` holds `n` keys; `NT` is the block size.
    #[inline(always)]
    pub unsafe fn for_each_key<K: TopItemKey + Default, const NT: usize, const IPT: usize>(
        keys: *const K,
        n: usize,
        smallest: bool,
        mut visit: impl FnMut(K::It, bool),
    ) {
        let t = thread_idx();
        let mut tile = block_idx();
        while tile * NT * IPT < n {
            let start = tile * NT * IPT;
            let valid = (n - start).min(NT * IPT);
            let mut items = [K::default(); IPT];
            // SAFETY: the tile's `valid` keys are in bounds.
            unsafe { block_load::<K, NT, IPT>(keys.add(start), valid, &mut items) };
            for (j, &key) in items.iter().enumerate() {
                let o = Tile::<K, NT, IPT>::offset(t, j);
                visit(key.item((start + o) as u32, smallest), o < valid);
            }
            tile += grid_dim();
        }
    }

    /// A thread's heap: its stripe of the block's shared heaps.
    struct Stripe<T> {
        heaps: Shared<T>,
        t: usize,
        nt: usize,
    }

    impl<T: Copy> Slots<T> for Stripe<T> {
        #[inline(always)]
        fn get(&self, i: usize) -> T {
            // SAFETY: `i < k` and the heaps hold `nt * k` slots; only this thread touches
            // its stripe.
            unsafe { self.heaps.read(i * self.nt + self.t) }
        }
        #[inline(always)]
        fn set(&mut self, i: usize, v: T) {
            // SAFETY: as for `get`.
            unsafe { self.heaps.write(i * self.nt + self.t, v) }
        }
    }

    /// Writes this thread's `k` items as candidates (slot `j` at `j * threads + g`).
    ///
    /// # Safety
    /// `cands` holds `k * grid * NT` candidates.
    #[inline(always)]
    unsafe fn write_out<T: Composite, const NT: usize>(
        cands: *mut Candidate,
        k: usize,
        item: impl Fn(usize) -> T,
    ) {
        let (g, threads) = (global_idx(), grid_dim() * NT);
        for j in 0..k {
            // SAFETY: j * threads + g < k * threads.
            unsafe { cands.add(j * threads + g).write(item(j).candidate()) };
        }
    }

    /// The shared-heap variant: each thread's best `k` of the keys it visits, to `cands`.
    ///
    /// # Safety
    /// `keys` holds `n` keys; the launch has `NT` threads per block and `NT * k` items of
    /// dynamic shared memory; `cands` holds `k * grid * NT`.
    #[inline(always)]
    pub unsafe fn heap_top_k<K: TopItemKey + Default, const NT: usize, const IPT: usize>(
        keys: *const K,
        n: usize,
        k: usize,
        smallest: bool,
        cands: *mut Candidate,
    ) where
        K::It: Composite,
    {
        let mut heap = Stripe {
            // SAFETY: the launch provides `NT * k` items.
            heaps: unsafe { dynamic_shared::<K::It>(NT * k) },
            t: thread_idx(),
            nt: NT,
        };
        for i in 0..k {
            heap.set(i, K::It::WORST);
        }
        let mut root = K::It::WORST;
        // SAFETY: forwarded.
        unsafe {
            for_each_key::<K, NT, IPT>(keys, n, smallest, |x, live| {
                if live && x.better(root) {
                    root = replace_root(&mut heap, k, x);
                }
            })
        };
        // SAFETY: forwarded.
        unsafe { write_out::<K::It, NT>(cands, k, |j| heap.get(j)) };
    }

    /// The register variant with `R >= k` items per thread: each thread's best `k`, to
    /// `cands`.
    ///
    /// # Safety
    /// `keys` holds `n` keys; the launch has `NT` threads per block; `k <= R`; `cands` holds
    /// `k * grid * NT`.
    #[inline(always)]
    pub unsafe fn register_top_k<
        K: TopItemKey + Default,
        const NT: usize,
        const IPT: usize,
        const R: usize,
    >(
        keys: *const K,
        n: usize,
        k: usize,
        smallest: bool,
        cands: *mut Candidate,
    ) where
        K::It: Composite,
    {
        let mut buf = [K::It::WORST; R];
        // SAFETY: forwarded.
        unsafe {
            for_each_key::<K, NT, IPT>(keys, n, smallest, |x, live| {
                if live && x.better(buf[R - 1]) {
                    insert(&mut buf, x);
                }
            })
        };
        let (g, threads) = (global_idx(), grid_dim() * NT);
        // Static indices (predicated on `j < k`) keep `buf` in registers.
        for (j, &it) in buf.iter().enumerate() {
            if j < k {
                // SAFETY: j < k, so j * threads + g < k * threads.
                unsafe { cands.add(j * threads + g).write(it.candidate()) };
            }
        }
    }
}

macro_rules! heap_kernels {
    ($($t:ty: $spec:ident = $name:ident;)*) => {$(
        $crate::kernel! {
            /// Per-thread top-k with shared heaps (one warp per block, `NT * k` heap items of
            /// dynamic shared memory).
            $spec = $name[NT = 32, IPT = 8](
                keys: *const $t, n: u32, k: u32, smallest: u32, cands: *mut Candidate
            ) {
                // SAFETY: the host launches `HEAP_NT` threads per block with the heaps'
                // dynamic shared memory and room for `k` candidates per thread.
                unsafe { heap_top_k::<$t, NT, IPT>(keys, n as usize, k as usize, smallest != 0, cands) }
            }
        }
    )*};
}

macro_rules! register_kernels {
    ($($t:ty, $r:literal: $spec:ident = $name:ident;)*) => {$(
        $crate::kernel! {
            /// Per-thread top-k in registers (a sorted array of this kernel's size, at least
            /// `k`).
            $spec = $name[NT = 128, IPT = 8](
                keys: *const $t, n: u32, k: u32, smallest: u32, cands: *mut Candidate
            ) {
                // SAFETY: the host passes `k` up to the array's size and room for `k`
                // candidates per thread.
                unsafe {
                    register_top_k::<$t, NT, IPT, $r>(keys, n as usize, k as usize, smallest != 0, cands)
                }
            }
        }
    )*};
}

heap_kernels! {
    f32: TOPK_PT_HEAP_F32 = topk_pt_heap_f32;
    f64: TOPK_PT_HEAP_F64 = topk_pt_heap_f64;
    i32: TOPK_PT_HEAP_I32 = topk_pt_heap_i32;
    u32: TOPK_PT_HEAP_U32 = topk_pt_heap_u32;
}

register_kernels! {
    f32, 8: TOPK_PT_REG8_F32 = topk_pt_reg8_f32;
    f32, 16: TOPK_PT_REG16_F32 = topk_pt_reg16_f32;
    f32, 32: TOPK_PT_REG32_F32 = topk_pt_reg32_f32;
    f64, 8: TOPK_PT_REG8_F64 = topk_pt_reg8_f64;
    f64, 16: TOPK_PT_REG16_F64 = topk_pt_reg16_f64;
    f64, 32: TOPK_PT_REG32_F64 = topk_pt_reg32_f64;
    i32, 8: TOPK_PT_REG8_I32 = topk_pt_reg8_i32;
    i32, 16: TOPK_PT_REG16_I32 = topk_pt_reg16_i32;
    i32, 32: TOPK_PT_REG32_I32 = topk_pt_reg32_i32;
    u32, 8: TOPK_PT_REG8_U32 = topk_pt_reg8_u32;
    u32, 16: TOPK_PT_REG16_U32 = topk_pt_reg16_u32;
    u32, 32: TOPK_PT_REG32_U32 = topk_pt_reg32_u32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn lcg(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x >> 20
            })
            .collect()
    }

    /// The best `k`, best first, by sorting.
    fn best(items: &[u64], k: usize) -> Vec<u64> {
        let mut v = items.to_vec();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v.truncate(k);
        v
    }

    #[test]
    fn heaps_keep_the_best_k() {
        for (n, seed) in [(1, 1), (7, 2), (1000, 3), (4096, 4)] {
            let items = lcg(n, seed);
            for k in [1usize, 2, 3, 31, 32, 33, 256] {
                let mut heap = std::vec![u64::WORST; k];
                let mut root = u64::WORST;
                for &x in &items {
                    if x.better(root) {
                        root = replace_root(heap.as_mut_slice(), k, x);
                    }
                }
                let mut kept = heap.clone();
                kept.sort_unstable_by(|a, b| b.cmp(a));
                let mut want = best(&items, k);
                want.resize(k, u64::WORST);
                assert_eq!(kept, want, "n {n} k {k}");
            }
        }
    }

    #[test]
    fn register_arrays_stay_sorted_best_first() {
        fn run<const R: usize>(items: &[u64]) {
            let mut buf = [u64::WORST; R];
            for &x in items {
                if x.better(buf[R - 1]) {
                    insert(&mut buf, x);
                }
            }
            let mut want = best(items, R);
            want.resize(R, u64::WORST);
            assert_eq!(buf.to_vec(), want);
        }
        for n in [1, 5, 100, 3000] {
            let up: Vec<u64> = (1..=n as u64).collect();
            for items in [lcg(n, n as u64), up.clone(), up.into_iter().rev().collect()] {
                run::<8>(&items);
                run::<16>(&items);
                run::<32>(&items);
            }
        }
    }

    #[test]
    fn composites_split_and_measure() {
        let x = u64::from_parts(0x1234, !7);
        assert_eq!(
            x.candidate(),
            Candidate {
                rank: 0x1234,
                row: 7,
                pad: 0
            }
        );
        assert_eq!(x.bucket(u64::from_parts(0x1230, !7), 32), 4);
        let w = Wide::from_parts(u64::MAX, !3);
        assert_eq!(
            w.candidate(),
            Candidate {
                rank: u64::MAX,
                row: 3,
                pad: 0
            }
        );
        let lo = Wide::from_parts(u64::MAX - 2, 0);
        assert_eq!(w.bucket(lo, 32), 2);
        assert_eq!(w.bucket(lo, 96), 0);
        assert_eq!(
            Wide::from_parts(1, 0).bucket(Wide::from_parts(0, u32::MAX), 0),
            1
        );
        assert!(Wide::from_parts(0, 1).better(Wide::WORST));
    }
}
