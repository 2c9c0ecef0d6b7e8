//! GPU-FOR decoders (thesis §5.3.2): decompression to a plain column and decode-and-sum, the
//! two micro-benchmarks of §5.6.2. Both are one call of [`load_bitpack`] per tile, where the
//! plain kernels of `ops::bandwidth` call `block_load`, so they show what a query kernel pays
//! for reading a compressed column. Each comes with D = 4, 8 or 16 GPU-FOR blocks per thread
//! block of 128 threads (IPT = D: a tile of 128 * D values), the thesis' parameter D.
//!
//! [`load_bitpack`]: crate::compress::load::load_bitpack

/// Both decoders for each D.
macro_rules! for_kernels {
    ($($decompress:ident = $dname:ident, $sum:ident = $sname:ident, $d:literal;)*) => {$(
        crate::kernel! {
            /// Decodes every value of a GPU-FOR column of `n` values into `out`; any grid
            /// (blocks loop over the tiles).
            $decompress = $dname[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, out: *mut u32) {
                use crate::compress::load::{bitpack_shared_words, load_bitpack};
                let sh = crate::shared_array!(for_words: [u32; bitpack_shared_words(NT, IPT)]);
                let n = n as usize;
                let mut tile = crate::arch::block_idx();
                while tile * NT * IPT < n {
                    let start = tile * NT * IPT;
                    let mut items = [0u32; IPT];
                    // SAFETY: the host passes a validated column of `n` values and room for
                    // `n` in `out`; `tile` holds values.
                    unsafe {
                        load_bitpack::<NT, IPT>(data, starts, n, tile, sh, &mut items);
                        crate::block::block_store::<u32, NT, IPT>(out.add(start), n - start, &items);
                    }
                    tile += crate::arch::grid_dim();
                }
            }
        }
        crate::kernel! {
            /// Adds every value of a GPU-FOR column of `n` values into `*sum` (which the host
            /// zeroes); any grid (blocks loop over the tiles and add once: atomics on one word
            /// serialize, one per tile would bound a narrow column's time).
            $sum = $sname[NT = 128, IPT = $d](data: *const u32, starts: *const u32, n: u32, sum: *mut u64) {
                use crate::compress::load::{bitpack_shared_words, sum_bitpack};
                let sh = crate::shared_array!(for_words: [u32; bitpack_shared_words(NT, IPT)]);
                let temp = crate::shared_array!(for_temp: [u64; NT / 32 + 1]);
                let n = n as usize;
                let mut mine = 0u64;
                let mut tile = crate::arch::block_idx();
                while tile * NT * IPT < n {
                    // SAFETY: the host passes a validated column of `n` values; `tile` holds
                    // values.
                    mine += unsafe { sum_bitpack::<NT, IPT>(data, starts, n, tile, sh) };
                    tile += crate::arch::grid_dim();
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
}
