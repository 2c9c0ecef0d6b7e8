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
