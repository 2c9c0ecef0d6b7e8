//! The MSD sort of 32-bit keys: three passes over the data instead of the LSB sort's four.
//!
//! 1. One histogram kernel counts every key's top 16 bits (65,536 buckets) and its two low
//!    digits (for the LSB sort, which the host falls back to when a bucket is too large).
//! 2. A one-sweep pass orders the keys by bits 24..32 (the LSB sort's pass, on its top digit).
//! 3. A segmented one-sweep pass orders each of those 256 segments by bits 16..24: after it,
//!    each 16-bit bucket is contiguous, where the histogram said it would be.
//! 4. One block per bucket sorts it by its low 16 bits in shared memory (two 8-bit rankings)
//!    and writes it out coalesced: the last pass reads and writes each item once, like a
//!    one-sweep pass, but with no look-back and no scattered stores.
//!
//! Every step is stable, so the sort is. It needs every bucket to fit one block's tile, which
//! holds for well-spread keys (2^28 uniform keys: buckets of 4,096 ± 64); the host checks the
//! histogram and otherwise runs the LSB sort, whose histograms the same kernel counted.

/// Buckets of the top 16 bits.
pub const MSD_BUCKETS: usize = 1 << 16;
/// Segments of the second pass (digits of the first).
pub const MSD_SEGMENTS: usize = 256;
/// Words of the histogram kernel's output: the buckets' counts, then the counts of bits
/// 8..16 and of bits 0..8 (256 words each). The two extra shared-memory atomics per key cost
/// nothing measurable against counting the top 16 bits alone, and they spare the LSB fallback
/// another read of the keys.
pub const MSD_HIST_WORDS: usize = MSD_BUCKETS + 512;
/// Dynamic shared memory of the histogram kernel: the buckets' counts as 16-bit halves.
pub const MSD_HIST_SMEM: usize = MSD_BUCKETS * 2;
/// A block's 16-bit bucket count is flushed to global memory each time it reaches this.
pub const MSD_FLUSH: u32 = 1 << 15;

/// Where each part of an MSD sort's kernel state lives, in `u32` words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsdState {
    /// Tiles of the larger of the two one-sweep passes (the segmented one).
    pub tiles: usize,
}

impl MsdState {
    /// Digit offsets of the first pass (256 words).
    pub const fn offsets(&self) -> usize {
        0
    }
    /// Bucket starts (`MSD_BUCKETS + 1` words, the last one the number of items): the
    /// second pass's digit offsets, segment by segment, and the local sort's bounds.
    pub const fn bounds(&self) -> usize {
        MSD_SEGMENTS
    }
    /// The second pass's segment table (`MSD_SEGMENTS + 1` words).
    pub const fn segs(&self) -> usize {
        self.bounds() + MSD_BUCKETS + 1
    }
    /// Tile counter of pass `p` (0 or 1).
    pub const fn counter(&self, p: usize) -> usize {
        self.segs() + MSD_SEGMENTS + 1 + p
    }
    /// Status words of pass `p` (32-bit status words).
    pub const fn status(&self, p: usize) -> usize {
        self.counter(2) + p * self.tiles * MSD_SEGMENTS
    }
    /// Total words.
    pub const fn words(&self) -> usize {
        self.status(2)
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{Atomic, Shared, block_idx, grid_dim, sync_threads, thread_idx};
    use crate::block::*;
    use crate::ops::sort::{MODE_DESC, MODE_LAST};
    use crate::radix::{RadixBits, RadixKey};

    /// Counts every key's top 16 bits into `hist[0 .. MSD_BUCKETS]` and its digits 8..16 and
    /// 0..8 into the next 512 words (zeroed). Grid-stride over tiles. A block counts buckets in
    /// 16-bit halves of `pairs` (`MSD_BUCKETS / 2` words, 128 KB of dynamic shared memory):
    /// the thread whose increment takes a half to [`MSD_FLUSH`] moves that much to global
    /// memory, so a half never overflows; `low` holds the 512 low-digit counters.
    ///
    /// # Safety
    /// `keys` holds `n` items; `hist` holds [`MSD_HIST_WORDS`] words.
    #[inline(always)]
    pub unsafe fn radix_histogram_msd<
        K: RadixKey<Bits = u32>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const u32,
        n: usize,
        descending: bool,
        hist: *mut u32,
        pairs: Shared<u32>,
        low: Shared<u32>,
    ) {
        let t = thread_idx();
        let mut i = t;
        while i < MSD_BUCKETS / 2 {
            // SAFETY: within `pairs`; `low` is 512 words.
            unsafe {
                pairs.write(i, 0);
                if i < 512 {
                    low.write(i, 0);
                }
            }
            i += NT;
        }
        sync_threads();
        let mut tile = block_idx();
        while tile * NT * IPT < n {
            let start = tile * NT * IPT;
            let valid = (n - start).min(NT * IPT);
            let mut raw = [0u32; IPT];
            // SAFETY: the tile lies within `keys`.
            unsafe { block_load::<u32, NT, IPT>(keys.add(start), valid, &mut raw) };
            for (k, &r) in raw.iter().enumerate() {
                if Tile::<u32, NT, IPT>::offset(t, k) < valid {
                    let b = K::ordered(r, descending);
                    let bucket = (b >> 16) as usize;
                    let half = (bucket as u32 & 1) * 16;
                    // SAFETY: bucket / 2 < MSD_BUCKETS / 2; digits < 256.
                    unsafe {
                        let old = pairs.atomic_add(bucket / 2, 1 << half);
                        if (old >> half) & 0xffff == MSD_FLUSH - 1 {
                            pairs.atomic_add(bucket / 2, (MSD_FLUSH << half).wrapping_neg());
                            u32::atomic_add(hist.add(bucket), MSD_FLUSH);
                        }
                        low.atomic_add(b.digit(8, 8) as usize, 1);
                        low.atomic_add(256 + b.digit(0, 8) as usize, 1);
                    }
                }
            }
            tile += grid_dim();
        }
        sync_threads();
        let mut i = t;
        while i < MSD_BUCKETS {
            // SAFETY: in bounds of both buffers.
            unsafe {
                let c = (pairs.read(i / 2) >> ((i as u32 & 1) * 16)) & 0xffff;
                if c != 0 {
                    u32::atomic_add(hist.add(i), c);
                }
                if i < 512 {
                    let c = low.read(i);
                    if c != 0 {
                        u32::atomic_add(hist.add(MSD_BUCKETS + i), c);
                    }
                }
            }
            i += NT;
        }
    }

    /// Shared memory of [`radix_local_sort`].
    #[derive(Clone, Copy)]
    pub struct LocalSortShared {
        /// Ranking counters and scan partials.
        pub rank: RadixRankShared,
        /// Keys in the order of the last ranking, `NT * IPT` words.
        pub keys: Shared<u32>,
        /// With values: the bucket's values in input order (`NT * IPT` words) and, per
        /// position of the order after the first and the second ranking, the input position of
        /// the item there (`NT * IPT` halves each).
        pub vals: Shared<u32>,
        /// See `vals`.
        pub src: [Shared<u16>; 2],
    }

    /// One ranking of [`radix_local_sort`] (`PASS` 0: bits 0..8, 1: bits 8..16) over the
    /// whole tile (the padding included): moves the keys to their ranks in `sh.keys` and
    /// records where each came from, then waits at a barrier. Early counts (one atomic per
    /// item, then the match) keep the ranks out of registers through the scan: matching while
    /// counting spills at 256 x 18.
    #[inline(always)]
    fn local_rank_scatter<
        const NT: usize,
        const IPT: usize,
        const DPT: usize,
        const VALUES: bool,
        const PASS: usize,
    >(
        bits: &[u32; IPT],
        sh: LocalSortShared,
    ) {
        let t = thread_idx();
        let digit = |k: usize| bits[k].digit(PASS as u32 * 8, 8);
        let mut ranks = [0u32; IPT];
        let totals = block_radix_count::<NT, IPT, 256, DPT>(digit, &mut ranks, sh.rank, true, true);
        block_radix_rank_finish::<NT, IPT, 256, DPT>(
            digit, &mut ranks, &totals, sh.rank, true, true,
        );
        for k in 0..IPT {
            let (r, at) = (ranks[k] as usize, warp_striped_offset::<IPT>(t, k));
            // SAFETY: ranks are a permutation of the tile; the last reads of `keys` were before
            // the ranking's barriers; `src[0]` was written before the barrier that ended the
            // first pass.
            unsafe {
                sh.keys.write(r, bits[k]);
                if VALUES {
                    let from = if PASS == 0 {
                        at as u16
                    } else {
                        sh.src[0].read(at)
                    };
                    sh.src[PASS].write(r, from);
                }
            }
        }
        sync_threads();
    }

    /// Sorts bucket `block_idx()` (items `bounds[b] .. bounds[b + 1]` of the second pass's
    /// output, at most `NT * IPT`) by its low 16 bits, stably, and writes keys (mapped back
    /// from ordered bits as `mode` says) and values to the same places of the outputs.
    ///
    /// The keys are ranked twice by 8-bit digits in registers, as a pass ranks its tile, and
    /// exchanged through shared memory between the rankings. The tile past the bucket is padded
    /// with keys whose low 16 bits are all ones: they rank after every key of the bucket (they
    /// come last in tile order, and rankings are stable), so every slot is ranked alike, with
    /// no per-item tests (those tests cost more instructions than the padding's ranking). Values do not take registers:
    /// they wait in shared memory in input order while each ranking records where its items
    /// came from, and are gathered through those records once, on the way out. The block then
    /// holds its bucket in order and stores it with coalesced writes.
    ///
    /// # Safety
    /// `bounds` holds `grid_dim() + 1` ascending words; every bucket holds at most
    /// `NT * IPT <= 65536` items; inputs and outputs hold `bounds[grid_dim()]` items; `sh`'s
    /// arrays are as long as [`LocalSortShared`] says (`vals` and `src` unused without
    /// `VALUES`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn radix_local_sort<
        K: RadixKey<Bits = u32>,
        const NT: usize,
        const IPT: usize,
        const DPT: usize,
        const VALUES: bool,
    >(
        keys_in: *const u32,
        keys_out: *mut u32,
        vals_in: *const u32,
        vals_out: *mut u32,
        bounds: *const u32,
        mode: u32,
        sh: LocalSortShared,
    ) {
        const { assert!(NT * IPT <= 1 << 16) };
        let b = block_idx();
        // SAFETY: b + 1 <= grid_dim().
        let (lo, hi) = unsafe {
            (
                bounds.add(b).read() as usize,
                bounds.add(b + 1).read() as usize,
            )
        };
        let len = hi - lo;
        if len == 0 {
            return; // the whole block leaves: no barrier is missed
        }
        let t = thread_idx();
        // SAFETY: the bucket lies within the inputs.
        let mut bits =
            unsafe { block_load_warp_striped::<u32, NT, IPT>(keys_in.add(lo), len, u32::MAX) };
        if VALUES {
            let mine = warp_striped_count::<IPT>(t, len) as u32;
            for k in 0..IPT {
                if (k as u32) < mine {
                    let at = warp_striped_offset::<IPT>(t, k);
                    // SAFETY: at < len; the value buffer is read only after the barriers below.
                    unsafe { sh.vals.write(at, vals_in.add(lo + at).read()) };
                }
            }
        }
        local_rank_scatter::<NT, IPT, DPT, VALUES, 0>(&bits, sh);
        // Back to registers, warp-striped, so that the next ranking is stable in the order
        // this one left.
        for (k, b) in bits.iter_mut().enumerate() {
            // SAFETY: written before the barrier.
            *b = unsafe { sh.keys.read(warp_striped_offset::<IPT>(t, k)) };
        }
        local_rank_scatter::<NT, IPT, DPT, VALUES, 1>(&bits, sh);
        let (last, desc) = (mode & MODE_LAST != 0, mode & MODE_DESC != 0);
        let mut i = t;
        while i < len {
            // SAFETY: written before the barrier; lo + i < hi.
            unsafe {
                let b = sh.keys.read(i);
                keys_out
                    .add(lo + i)
                    .write(if last { K::unordered(b, desc) } else { b });
                if VALUES {
                    let v = sh.vals.read(sh.src[1].read(i) as usize);
                    vals_out.add(lo + i).write(v);
                }
            }
            i += NT;
        }
    }
}

/// Parameters of the MSD histogram kernels over keys `K` (read as their radix bits): `(keys,
/// n, descending, hist)`.
pub type MsdHistArgs<K> = (*const K, u32, u32, *mut u32);

/// Parameters of the local sort kernels: `(keys_in, keys_out, vals_in, vals_out, bounds,
/// mode)`.
pub type LocalSortArgs = (*const u32, *mut u32, *const u32, *mut u32, *const u32, u32);

/// Defines the MSD histogram kernel for key type `$k`.
macro_rules! msd_histogram_kernel {
    ($($spec:ident = $name:ident($k:ty);)*) => {$(
        crate::kernel! {
            /// Top-16-bit bucket counts and low digit counts (see `radix_histogram_msd`);
            /// launched with [`MSD_HIST_SMEM`] bytes of dynamic shared memory.
            $spec = $name[NT = 1024, IPT = 8, MIN_BLOCKS = 1](keys: *const $k, n: u32, descending: u32, hist: *mut u32) {
                // SAFETY: the host launches with MSD_HIST_SMEM bytes of dynamic shared memory.
                let pairs = unsafe { crate::arch::dynamic_shared::<u32>(MSD_BUCKETS / 2) };
                let low = crate::shared_array!(msd_low: [u32; 512]);
                // SAFETY: the host sizes `hist` to MSD_HIST_WORDS words, zeroed.
                unsafe { radix_histogram_msd::<$k, NT, IPT>(keys.cast(), n as usize, descending != 0, hist, pairs, low) }
            }
        }
    )*};
}

msd_histogram_kernel! {
    MSD_HIST_U32 = msd_hist_u32(u32);
    MSD_HIST_I32 = msd_hist_i32(i32);
    MSD_HIST_F32 = msd_hist_f32(f32);
}

/// Dynamic shared memory of a local sort kernel of `items` per block: the keys, and with
/// values the values and two 16-bit position records.
pub const fn local_sort_smem(items: usize, values: bool) -> usize {
    items * if values { 12 } else { 4 }
}

/// Defines local sort kernels: key type, threads, items per thread, values or not. Launched
/// with one block per bucket and [`local_sort_smem`] bytes of dynamic shared memory.
macro_rules! local_sort_kernel {
    ($($spec:ident = $name:ident($k:ty, NT = $nt:literal, IPT = $ipt:literal, VALUES = $v:literal, MIN_BLOCKS = $mb:literal);)*) => {$(
        crate::kernel! {
            /// Sorts one 16-bit bucket by its low 16 bits (see `radix_local_sort`).
            $spec = $name[NT = $nt, IPT = $ipt, MIN_BLOCKS = $mb](keys_in: *const u32, keys_out: *mut u32, vals_in: *const u32, vals_out: *mut u32, bounds: *const u32, mode: u32) {
                const DPT: usize = 256usize.div_ceil(NT);
                const ITEMS: usize = NT * IPT;
                // SAFETY: the host launches with local_sort_smem(ITEMS, VALUES) bytes.
                let keys = unsafe { crate::arch::dynamic_shared::<u32>(local_sort_smem(ITEMS, $v) / 4) };
                let src = keys.offset(2 * ITEMS).cast::<u16>();
                let sh = LocalSortShared {
                    rank: crate::block::RadixRankShared {
                        counters: crate::shared_array!(local_counters: [u32; NT / 32 * 256]),
                        scan: crate::shared_array!(local_scan: [u32; crate::block::Tile::<u32, NT, DPT>::SCAN_WORDS]),
                    },
                    keys,
                    vals: keys.offset(ITEMS),
                    src: [src, src.offset(ITEMS)],
                };
                // SAFETY: the host checks every bucket against ITEMS and sizes the buffers.
                unsafe { radix_local_sort::<$k, NT, IPT, DPT, $v>(keys_in, keys_out, vals_in, vals_out, bounds, mode, sh) }
            }
        }
    )*};
}

local_sort_kernel! {
    LOCAL_U32_K_256X5 = local_sort_u32_k_256x5(u32, NT = 256, IPT = 5, VALUES = false, MIN_BLOCKS = 4);
    LOCAL_U32_KV_256X5 = local_sort_u32_kv_256x5(u32, NT = 256, IPT = 5, VALUES = true, MIN_BLOCKS = 4);
    LOCAL_U32_K_256X9 = local_sort_u32_k_256x9(u32, NT = 256, IPT = 9, VALUES = false, MIN_BLOCKS = 4);
    LOCAL_U32_KV_256X9 = local_sort_u32_kv_256x9(u32, NT = 256, IPT = 9, VALUES = true, MIN_BLOCKS = 4);
    LOCAL_U32_K_256X18 = local_sort_u32_k_256x18(u32, NT = 256, IPT = 18, VALUES = false, MIN_BLOCKS = 3);
    LOCAL_U32_KV_256X18 = local_sort_u32_kv_256x18(u32, NT = 256, IPT = 18, VALUES = true, MIN_BLOCKS = 3);
    LOCAL_U32_K_512X18 = local_sort_u32_k_512x18(u32, NT = 512, IPT = 18, VALUES = false, MIN_BLOCKS = 1);
    LOCAL_U32_KV_512X18 = local_sort_u32_kv_512x18(u32, NT = 512, IPT = 18, VALUES = true, MIN_BLOCKS = 1);
    LOCAL_I32_K_256X5 = local_sort_i32_k_256x5(i32, NT = 256, IPT = 5, VALUES = false, MIN_BLOCKS = 4);
    LOCAL_I32_KV_256X5 = local_sort_i32_kv_256x5(i32, NT = 256, IPT = 5, VALUES = true, MIN_BLOCKS = 4);
    LOCAL_I32_K_256X9 = local_sort_i32_k_256x9(i32, NT = 256, IPT = 9, VALUES = false, MIN_BLOCKS = 4);
    LOCAL_I32_KV_256X9 = local_sort_i32_kv_256x9(i32, NT = 256, IPT = 9, VALUES = true, MIN_BLOCKS = 4);
    LOCAL_I32_K_256X18 = local_sort_i32_k_256x18(i32, NT = 256, IPT = 18, VALUES = false, MIN_BLOCKS = 3);
    LOCAL_I32_KV_256X18 = local_sort_i32_kv_256x18(i32, NT = 256, IPT = 18, VALUES = true, MIN_BLOCKS = 3);
    LOCAL_I32_K_512X18 = local_sort_i32_k_512x18(i32, NT = 512, IPT = 18, VALUES = false, MIN_BLOCKS = 1);
    LOCAL_I32_KV_512X18 = local_sort_i32_kv_512x18(i32, NT = 512, IPT = 18, VALUES = true, MIN_BLOCKS = 1);
    LOCAL_F32_K_256X5 = local_sort_f32_k_256x5(f32, NT = 256, IPT = 5, VALUES = false, MIN_BLOCKS = 4);
    LOCAL_F32_KV_256X5 = local_sort_f32_kv_256x5(f32, NT = 256, IPT = 5, VALUES = true, MIN_BLOCKS = 4);
    LOCAL_F32_K_256X9 = local_sort_f32_k_256x9(f32, NT = 256, IPT = 9, VALUES = false, MIN_BLOCKS = 4);
    LOCAL_F32_KV_256X9 = local_sort_f32_kv_256x9(f32, NT = 256, IPT = 9, VALUES = true, MIN_BLOCKS = 4);
    LOCAL_F32_K_256X18 = local_sort_f32_k_256x18(f32, NT = 256, IPT = 18, VALUES = false, MIN_BLOCKS = 3);
    LOCAL_F32_KV_256X18 = local_sort_f32_kv_256x18(f32, NT = 256, IPT = 18, VALUES = true, MIN_BLOCKS = 3);
    LOCAL_F32_K_512X18 = local_sort_f32_k_512x18(f32, NT = 512, IPT = 18, VALUES = false, MIN_BLOCKS = 1);
    LOCAL_F32_KV_512X18 = local_sort_f32_kv_512x18(f32, NT = 512, IPT = 18, VALUES = true, MIN_BLOCKS = 1);
}

/// A key type's local sort kernels by tile size, smallest first: the host picks the first
/// whose tile holds the largest bucket. Every bucket takes a whole tile's work, so the tiles
/// step finely: a tile much larger than the buckets pays for its empty slots in every bucket.
#[derive(Clone, Copy, Debug)]
pub struct LocalSorts {
    /// Keys alone.
    pub keys: &'static [crate::spec::KernelSpec<LocalSortArgs>],
    /// Keys with values.
    pub pairs: &'static [crate::spec::KernelSpec<LocalSortArgs>],
}

/// Local sort kernels for `u32` keys.
pub const LOCAL_U32: LocalSorts = LocalSorts {
    keys: &[
        LOCAL_U32_K_256X5,
        LOCAL_U32_K_256X9,
        LOCAL_U32_K_256X18,
        LOCAL_U32_K_512X18,
    ],
    pairs: &[
        LOCAL_U32_KV_256X5,
        LOCAL_U32_KV_256X9,
        LOCAL_U32_KV_256X18,
        LOCAL_U32_KV_512X18,
    ],
};

/// Local sort kernels for `i32` keys.
pub const LOCAL_I32: LocalSorts = LocalSorts {
    keys: &[
        LOCAL_I32_K_256X5,
        LOCAL_I32_K_256X9,
        LOCAL_I32_K_256X18,
        LOCAL_I32_K_512X18,
    ],
    pairs: &[
        LOCAL_I32_KV_256X5,
        LOCAL_I32_KV_256X9,
        LOCAL_I32_KV_256X18,
        LOCAL_I32_KV_512X18,
    ],
};

/// Local sort kernels for `f32` keys.
pub const LOCAL_F32: LocalSorts = LocalSorts {
    keys: &[
        LOCAL_F32_K_256X5,
        LOCAL_F32_K_256X9,
        LOCAL_F32_K_256X18,
        LOCAL_F32_K_512X18,
    ],
    pairs: &[
        LOCAL_F32_KV_256X5,
        LOCAL_F32_KV_256X9,
        LOCAL_F32_KV_256X18,
        LOCAL_F32_KV_512X18,
    ],
};
