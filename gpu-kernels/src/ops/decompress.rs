//! GPU-FOR decoders (thesis §5.3.2): decompression to a plain column and decode-and-sum, the
//! two micro-benchmarks of §5.6.2. Both are one call of [`load_bitpack`] per tile, where the
//! plain kernels of `ops::bandwidth` call `block_load`, so they show what a query kernel pays
//! for reading a compressed column.
//!
//! [`load_bitpack`]: crate::compress::load::load_bitpack

crate::kernel! {
    /// Decodes every value of a GPU-FOR column of `n` values into `out`, one block per tile.
    FOR_DECOMPRESS = for_decompress[NT = 128, IPT = 4](data: *const u32, starts: *const u32, n: u32, out: *mut u32) {
        use crate::compress::load::{bitpack_shared_words, load_bitpack};
        let sh = crate::shared_array!(for_words: [u32; bitpack_shared_words(NT, IPT)]);
        let tile = crate::arch::block_idx();
        let start = tile * NT * IPT;
        let valid = (n as usize - start).min(NT * IPT);
        let mut items = [0u32; IPT];
        // SAFETY: the host passes a validated column of `n` values and room for `n` in `out`;
        // one block per tile.
        unsafe {
            load_bitpack::<NT, IPT>(data, starts, n as usize, tile, sh, &mut items);
            crate::block::block_store::<u32, NT, IPT>(out.add(start), valid, &items);
        }
    }
}

crate::kernel! {
    /// Adds every value of a GPU-FOR column of `n` values into `*sum` (which the host zeroes),
    /// one block per tile.
    FOR_SUM = for_sum[NT = 128, IPT = 4](data: *const u32, starts: *const u32, n: u32, sum: *mut u64) {
        use crate::compress::load::{bitpack_shared_words, load_bitpack};
        let sh = crate::shared_array!(for_words: [u32; bitpack_shared_words(NT, IPT)]);
        let temp = crate::shared_array!(for_temp: [u64; NT / 32 + 1]);
        let tile = crate::arch::block_idx();
        let mut items = [0u32; IPT];
        // SAFETY: the host passes a validated column of `n` values and one word at `sum`; one
        // block per tile.
        unsafe {
            load_bitpack::<NT, IPT>(data, starts, n as usize, tile, sh, &mut items);
            // Items past `n` stay 0, so the thread's u64 partial is exact.
            let mine = [items.iter().map(|&x| x as u64).sum::<u64>()];
            let s = crate::block::block_sum::<u64, NT, 1>(&mine, usize::MAX, temp);
            if crate::arch::thread_idx() == 0 {
                <u64 as crate::arch::Atomic>::atomic_add(sum, s);
            }
        }
    }
}
