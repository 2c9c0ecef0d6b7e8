//! Thread, block and grid indices (x dimension: tessera launches 1-D grids).
use core::arch::asm;
use core::arch::nvptx;

/// Thread index within the block.
#[inline(always)]
pub fn thread_idx() -> usize {
    // SAFETY: reads a special register.
    unsafe { nvptx::_thread_idx_x() as usize }
}

/// Block index within the grid.
#[inline(always)]
pub fn block_idx() -> usize {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_x() as usize }
}

/// Threads per block.
#[inline(always)]
pub fn block_dim() -> usize {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_x() as usize }
}

/// Blocks in the grid.
#[inline(always)]
pub fn grid_dim() -> usize {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_x() as usize }
}

/// Global thread index.
#[inline(always)]
pub fn global_idx() -> usize {
    block_idx() * block_dim() + thread_idx()
}

/// Lane within the warp (`%laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {r}, %laneid;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// Warp index within the block.
#[inline(always)]
pub fn warp_id() -> usize {
    thread_idx() / super::WARP
}

/// Mask of the lanes below this one (`%lanemask_lt`).
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {r}, %lanemask_lt;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}
