//! Device-wide exclusive prefix sum of `u32` in one pass (block scan + decoupled look-back).
//! State as for selection: word 0 tile counter, word 1 total, then one status word per tile.

#[cfg(target_arch = "nvptx64")]
use crate::block::{
    block_dynamic_tile_id, block_exclusive_sum, block_load, block_store, block_tile_prefix,
};

crate::kernel! {
    /// `out[i] = input[0] + .. + input[i - 1]` (wrapping), and the total in state word 1.
    SCAN_EXCLUSIVE_U32 = scan_exclusive_u32[NT = 128, IPT = 16](input: *const u32, n: u32, out: *mut u32, state: *mut u64) {
        let scan = crate::shared_array!(scan_temp: [u32; crate::layout::scan_temp_words(NT, IPT, 4)]);
        let slots = crate::shared_array!(scan_slots: [u32; 2]);
        let n = n as usize;
        let tiles = n.div_ceil(NT * IPT);
        // SAFETY: one block per tile over buffers of n items, zeroed state.
        unsafe {
            let tile = block_dynamic_tile_id(state.cast::<u32>(), slots);
            let start = tile * NT * IPT;
            let valid = (n - start).min(NT * IPT);
            let mut items = [0u32; IPT];
            block_load::<u32, NT, IPT>(input.add(start), valid, &mut items);
            let mut prefix = [0u32; IPT];
            let total = block_exclusive_sum::<u32, u32, NT, IPT>(&items, &mut prefix, scan);
            let offset = block_tile_prefix(state.add(super::select::STATE_HEADER as usize), tile, total, 0, slots.offset(1));
            let shifted: [u32; IPT] = core::array::from_fn(|k| prefix[k].wrapping_add(offset));
            block_store::<u32, NT, IPT>(out.add(start), valid, &shifted);
            if tile == tiles - 1 && crate::arch::thread_idx() == 0 {
                state.add(1).cast::<u32>().write(offset.wrapping_add(total));
            }
        }
    }
}
