//! GPU-FOR decoders (thesis §5.3.2): decompression to a plain column and decode-and-sum, the
//! two micro-benchmarks of §5.6.2. Both walk their tiles with `for_each_bitpack_tile`
//! (LoadBitPack with the next tile's copy in flight) where the plain kernels of
//! `ops::bandwidth` call `block_load`, so they show what a kernel pays for reading a
//! compressed column. Each comes with D = 4, 8, 16 or 32 GPU-FOR blocks per thread
//! block of 128 threads (IPT = D: a tile of 128 * D values), the thesis' parameter D.

/// Both decoders for each D.
macro_rules! for_kernels {
    ($($decompress:ident = $dname:ident, $sum:ident = $sname:ident, $d:literal;)*) => {$(
        crate::kernel! {
            /// Decodes every value of a GPU-FOR column of `n` values into `out`; any grid
            /// (blocks loop over the tiles).
            $decompress = $dname[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, out: *mut u32) {
                use crate::compress::load::{bitpack_shared_words, for_each_bitpack_tile};
                let sh = crate::shared_array!(for_words: [u32; 2 * bitpack_shared_words(NT, IPT)]);
                let n = n as usize;
                // SAFETY: the host passes a validated column of `n` values, 16-byte aligned,
                // and room for `n` in `out`; each tile holds values.
                unsafe {
                    for_each_bitpack_tile::<NT, IPT>(data, starts, n, sh, |tile, staged| {
                        let start = tile * NT * IPT;
                        let mut items = [0u32; IPT];
                        staged.load(&mut items);
                        crate::block::block_store::<u32, NT, IPT>(out.add(start), n - start, &items);
                    });
                }
            }
        }
        crate::kernel! {
            /// Adds every value of a GPU-FOR column of `n` values into `*sum` (which the host
            /// zeroes); any grid (blocks loop over the tiles and add once: atomics on one word
            /// serialize, one per tile would bound a narrow column's time).
            $sum = $sname[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, sum: *mut u64) {
                use crate::compress::load::{bitpack_shared_words, for_each_bitpack_tile};
                let sh = crate::shared_array!(for_words: [u32; 2 * bitpack_shared_words(NT, IPT)]);
                let temp = crate::shared_array!(for_temp: [u64; NT / 32 + 1]);
                let mut mine = 0u64;
                // SAFETY: the host passes a validated column of `n` values, 16-byte aligned.
                unsafe {
                    for_each_bitpack_tile::<NT, IPT>(data, starts, n as usize, sh, |_, staged| {
                        mine += staged.sum();
                    });
                }
                // SAFETY: the host passes one word at `sum`.
                unsafe { crate::block::block_sum_into::<NT>(mine, temp, sum) };
            }
        }
    )*};
}

for_kernels! {
    FOR_DECOMPRESS_D4 = for_decompress_d4, FOR_SUM_D4 = for_sum_d4, 4;
    FOR_DECOMPRESS_D8 = for_decompress_d8, FOR_SUM_D8 = for_sum_d8, 8;
    FOR_DECOMPRESS_D16 = for_decompress_d16, FOR_SUM_D16 = for_sum_d16, 16;
    FOR_DECOMPRESS_D32 = for_decompress_d32, FOR_SUM_D32 = for_sum_d32, 32;
}

/// GPU-DFOR's decoders for each D of the tile (the column's groups must divide it).
macro_rules! dfor_kernels {
    ($($decompress:ident = $dname:ident, $sum:ident = $sname:ident, $d:literal;)*) => {$(
        crate::kernel! {
            /// Decodes every value of a GPU-DFOR column of `n` values, whose groups are
            /// `1 << group_shift` blocks, into `out`; any grid (blocks loop over the tiles).
            $decompress = $dname[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, group_shift: u32, out: *mut u32) {
                use crate::compress::load::{bitpack_shared_words, for_each_dbitpack_tile, tile_blocks};
                let sh = crate::shared_array!(dfor_words: [u32; 2 * bitpack_shared_words(NT, IPT)]);
                let firsts = crate::shared_array!(dfor_firsts: [u32; tile_blocks(NT, IPT)]);
                let temp = crate::shared_array!(dfor_scan: [core::num::Wrapping<u32>; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]);
                let n = n as usize;
                // SAFETY: the host passes a validated column of `n` values, 16-byte aligned,
                // whose groups divide the tile, and room for `n` in `out`; each tile holds
                // values.
                unsafe {
                    for_each_dbitpack_tile::<NT, IPT>(data, starts, n, sh, |tile, staged| {
                        let start = tile * NT * IPT;
                        let mut items = [0u32; IPT];
                        staged.load_deltas(group_shift, firsts, temp, &mut items);
                        crate::block::block_store::<u32, NT, IPT>(out.add(start), n - start, &items);
                    });
                }
            }
        }
        crate::kernel! {
            /// Adds every value of a GPU-DFOR column of `n` values, whose groups are
            /// `1 << group_shift` blocks, into `*sum` (which the host zeroes); any grid.
            $sum = $sname[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, group_shift: u32, sum: *mut u64) {
                use crate::compress::load::{bitpack_shared_words, for_each_dbitpack_tile, tile_blocks};
                let sh = crate::shared_array!(dfor_words: [u32; 2 * bitpack_shared_words(NT, IPT)]);
                let firsts = crate::shared_array!(dfor_firsts: [u32; tile_blocks(NT, IPT)]);
                let scan = crate::shared_array!(dfor_scan: [core::num::Wrapping<u32>; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]);
                let temp = crate::shared_array!(dfor_temp: [u64; NT / 32 + 1]);
                let mut mine = 0u64;
                // SAFETY: the host passes a validated column of `n` values, 16-byte aligned,
                // whose groups divide the tile.
                unsafe {
                    for_each_dbitpack_tile::<NT, IPT>(data, starts, n as usize, sh, |_, staged| {
                        let mut items = [0u32; IPT];
                        staged.load_deltas(group_shift, firsts, scan, &mut items);
                        mine += staged.sum_items(&items);
                    });
                }
                // SAFETY: the host passes one word at `sum`.
                unsafe { crate::block::block_sum_into::<NT>(mine, temp, sum) };
            }
        }
    )*};
}

dfor_kernels! {
    DFOR_DECOMPRESS_D4 = dfor_decompress_d4, DFOR_SUM_D4 = dfor_sum_d4, 4;
    DFOR_DECOMPRESS_D8 = dfor_decompress_d8, DFOR_SUM_D8 = dfor_sum_d8, 8;
    DFOR_DECOMPRESS_D16 = dfor_decompress_d16, DFOR_SUM_D16 = dfor_sum_d16, 16;
    DFOR_DECOMPRESS_D32 = dfor_decompress_d32, DFOR_SUM_D32 = dfor_sum_d32, 32;
}

/// The ablation of thesis §5.3.2-5.3.3: GPU-FOR decompression from the thesis' base algorithm
/// (Algorithm 6: a thread per value, every read from global memory, the miniblock offset by a
/// loop over the widths) to its optimizations, one switched on per kernel: the tile's blocks
/// staged in shared memory (1), D blocks per thread block (2), the miniblock offsets and widths
/// computed once per tile (3, Algorithm 7); and the miniblock-free variant, a column of one
/// width per block, decoded without miniblock offsets. Thread `t` decodes value `t` of each of
/// its tile's D blocks, as in the thesis; one tile per thread block. The product decoders
/// above (LoadBitPack) go further: `cp.async` copies with the next tile in flight, a thread's
/// run of 4 values per miniblock.
#[cfg(feature = "sweeps")]
pub mod ablation {
    /// Stage the tile's blocks in shared memory (optimization 1).
    pub const SHARED: u32 = 1;
    /// Compute each miniblock's offset and width once per tile (optimization 3).
    pub const PRECOMPUTE: u32 = 2;
    /// The column has one width per block (§5.3.3): value `i` of a block at bit `i * width`.
    pub const ONE_WIDTH: u32 = 4;

    #[cfg(target_arch = "nvptx64")]
    mod device {
        use super::{ONE_WIDTH, PRECOMPUTE, SHARED};
        use crate::arch::{Shared, block_idx, sync_threads, thread_idx};
        use crate::compress::format::{
            BLOCK, BLOCK_HEADER_WORDS, MINIBLOCK, MINIBLOCKS, extract, miniblock_offset,
            spans_next, unreference, width,
        };

        /// Words of the shared staging of a tile of `d` blocks: their words at their most.
        pub const fn staged_words(d: usize) -> usize {
            d * (BLOCK + BLOCK_HEADER_WORDS)
        }

        /// Words of the tile's block starts and precomputed miniblock entries.
        pub const fn head_words(d: usize) -> usize {
            d + 1 + MINIBLOCKS * d
        }

        /// Decodes the values of tile `block_idx` (of `D` blocks) of a GPU-FOR column of `n`
        /// values into `out`, with the optimizations `OPT` ([`SHARED`], [`PRECOMPUTE`],
        /// [`ONE_WIDTH`]). Called by the whole thread block of 128 threads.
        ///
        /// # Safety
        /// A validated GPU-FOR column of `n` values (with `ONE_WIDTH`, of one width per block)
        /// and room for `n` in `out`; `words` and `heads` hold [`staged_words`]`(D)` and
        /// [`head_words`]`(D)` words.
        #[inline(always)]
        pub unsafe fn decompress<const D: usize, const OPT: u32>(
            data: *const u32,
            starts: *const u32,
            n: u32,
            out: *mut u32,
            words: Shared<u32>,
            heads: Shared<u32>,
        ) {
            let (shared, pre, one) = (
                OPT & SHARED != 0,
                OPT & PRECOMPUTE != 0,
                OPT & ONE_WIDTH != 0,
            );
            let t = thread_idx() as u32;
            let blocks = (n as usize).div_ceil(BLOCK);
            let first = block_idx() * D;
            if first >= blocks {
                return; // the whole thread block: no barrier is skipped by a part of it
            }
            let count = (blocks - first).min(D) as u32;
            // SAFETY (the whole body): the tile's blocks lie in the validated column, whose
            // starts end with the data length; the shared indices stay within `words` (the
            // tile's words) and `heads` (count + 1 <= 128 starts, 4 * count entries).
            unsafe {
                let s0 = starts.add(first).read();
                if shared {
                    if t <= count {
                        heads.write(t as usize, starts.add(first + t as usize).read());
                    }
                    let len = starts.add(first + count as usize).read() - s0;
                    let mut i = t;
                    while i < len {
                        words.write(i as usize, data.add((s0 + i) as usize).read());
                        i += 128;
                    }
                    sync_threads();
                }
                let start_of = |k: u32| {
                    if shared {
                        heads.read(k as usize)
                    } else {
                        starts.add(first + k as usize).read()
                    }
                };
                let word_at = |s: u32, w: u32| {
                    if shared {
                        words.read((s - s0 + w) as usize)
                    } else {
                        data.add((s + w) as usize).read()
                    }
                };
                if pre && !one {
                    if t < MINIBLOCKS as u32 * count {
                        let (k, m) = (t / MINIBLOCKS as u32, (t % MINIBLOCKS as u32) as usize);
                        let widths = word_at(start_of(k), 1);
                        let entry = miniblock_offset(widths, m) | width(widths, m) << 8;
                        heads.write(D + 1 + t as usize, entry);
                    }
                    sync_threads();
                }
                for k in 0..count {
                    let i = (first as u32 + k) * BLOCK as u32 + t;
                    if i >= n {
                        break;
                    }
                    let s = start_of(k);
                    let reference = word_at(s, 0);
                    let m = t / MINIBLOCK as u32;
                    let (offset, w, bit) = if one {
                        let w = width(word_at(s, 1), 0);
                        (0, w, t * w)
                    } else if pre {
                        let e = heads.read(D + 1 + (MINIBLOCKS as u32 * k + m) as usize);
                        let w = e >> 8;
                        (e & 0xff, w, t % MINIBLOCK as u32 * w)
                    } else {
                        // Algorithm 6, lines 8-11: the widths of the miniblocks before.
                        let widths = word_at(s, 1);
                        let mut offset = 0;
                        for j in 0..m {
                            offset += width(widths, j as usize);
                        }
                        let w = width(widths, m as usize);
                        (offset, w, t % MINIBLOCK as u32 * w)
                    };
                    let word = BLOCK_HEADER_WORDS as u32 + offset + bit / 32;
                    let b = bit % 32;
                    // A miniblock of width 0 has no words.
                    let lo = if w == 0 { 0 } else { word_at(s, word) };
                    let hi = if spans_next(b, w) {
                        word_at(s, word + 1)
                    } else {
                        0
                    };
                    out.add(i as usize)
                        .write(unreference(reference, extract(lo, hi, b, w)));
                }
            }
        }
    }

    /// One kernel per row of the ablation.
    macro_rules! ablation_kernels {
        ($($spec:ident = $name:ident, $d:literal, $opt:expr;)*) => {$(
            crate::kernel! {
                /// A row of the GPU-FOR decompression ablation: one tile of `IPT` blocks per
                /// thread block (grid: the tiles of `n`), the optimizations in its name.
                $spec = $name[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, out: *mut u32) {
                    let words = crate::shared_array!(ablation_words: [u32; device::staged_words(IPT)]);
                    let heads = crate::shared_array!(ablation_heads: [u32; device::head_words(IPT)]);
                    // SAFETY: the host passes a validated column of `n` values (of one width
                    // per block for the one-width rows) and room for `n` in `out`.
                    unsafe { device::decompress::<IPT, { $opt }>(data, starts, n, out, words, heads) }
                }
            }
        )*};
    }

    ablation_kernels! {
        FOR_ABLATE_BASE = for_ablate_base, 1, 0;
        FOR_ABLATE_SHARED_D1 = for_ablate_shared_d1, 1, SHARED;
        FOR_ABLATE_SHARED_D2 = for_ablate_shared_d2, 2, SHARED;
        FOR_ABLATE_SHARED_D4 = for_ablate_shared_d4, 4, SHARED;
        FOR_ABLATE_SHARED_D8 = for_ablate_shared_d8, 8, SHARED;
        FOR_ABLATE_SHARED_D16 = for_ablate_shared_d16, 16, SHARED;
        FOR_ABLATE_SHARED_D32 = for_ablate_shared_d32, 32, SHARED;
        FOR_ABLATE_PRE_D4 = for_ablate_pre_d4, 4, SHARED | PRECOMPUTE;
        FOR_ABLATE_PRE_D16 = for_ablate_pre_d16, 16, SHARED | PRECOMPUTE;
        FOR_ABLATE_ONE_D4 = for_ablate_one_d4, 4, SHARED | ONE_WIDTH;
        FOR_ABLATE_ONE_D16 = for_ablate_one_d16, 16, SHARED | ONE_WIDTH;
    }
}
