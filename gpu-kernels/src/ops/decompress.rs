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
                let s = crate::block::block_sum::<u64, NT, 1>(&[mine], usize::MAX, temp);
                if crate::arch::thread_idx() == 0 && s != 0 {
                    // SAFETY: the host passes one word at `sum`.
                    unsafe { <u64 as crate::arch::Atomic>::atomic_add(sum, s) };
                }
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
