//! The bandwidth probes every benchmark measures its model against, in the same run: a read
//! kernel (a vectorized sum, one atomic per tile) and a copy kernel.

#[cfg(target_arch = "nvptx64")]
use crate::block::{block_load, block_store, block_sum};

crate::kernel! {
    /// Adds all `n` items into `*sum` (which the host zeroes): reads every byte once.
    BW_READ_U32 = bw_read_u32[NT = 256, IPT = 16](input: *const u32, n: u32, sum: *mut u64) {
        let temp = crate::shared_array!(bw_temp: [u64; NT / 32 + 1]);
        let start = crate::arch::block_idx() * NT * IPT;
        let valid = (n as usize - start).min(NT * IPT);
        let mut items = [0u32; IPT];
        // SAFETY: the tile lies within the input; `sum` is a valid global address.
        unsafe {
            block_load::<u32, NT, IPT>(input.add(start), valid, &mut items);
            // Items past `valid` stay 0, so the thread's u64 partial is exact.
            let mine = [items.iter().map(|&x| x as u64).sum::<u64>()];
            let s = block_sum::<u64, NT, 1>(&mine, usize::MAX, temp);
            if crate::arch::thread_idx() == 0 {
                <u64 as crate::arch::Atomic>::atomic_add(sum, s);
            }
        }
    }
}

crate::kernel! {
    /// `out = input`: reads and writes every byte once.
    BW_COPY_U32 = bw_copy_u32[NT = 256, IPT = 16](input: *const u32, n: u32, out: *mut u32) {
        let start = crate::arch::block_idx() * NT * IPT;
        let valid = (n as usize - start).min(NT * IPT);
        let mut items = [0u32; IPT];
        // SAFETY: the tile lies within both buffers.
        unsafe {
            block_load::<u32, NT, IPT>(input.add(start), valid, &mut items);
            block_store::<u32, NT, IPT>(out.add(start), valid, &items);
        }
    }
}
