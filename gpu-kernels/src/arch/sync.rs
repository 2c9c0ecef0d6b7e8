//! Barriers and memory fences.
use core::arch::asm;

/// Block-wide barrier (`__syncthreads`).
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: every thread of the block reaches the callers' barriers (block functions are
    // called uniformly); the barrier orders shared-memory accesses.
    unsafe { core::arch::nvptx::_syncthreads() }
}

/// Warp-wide barrier over all 32 lanes (`__syncwarp`).
#[inline(always)]
pub fn sync_warp() {
    // SAFETY: callers use it with the whole warp converged.
    unsafe { asm!("bar.warp.sync -1;", options(nostack)) }
}

/// Orders this thread's memory accesses as seen by the block (`__threadfence_block`).
#[inline(always)]
pub fn fence_block() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.acq_rel.cta;", options(nostack)) }
}

/// Orders this thread's memory accesses as seen by the whole device (`__threadfence`).
#[inline(always)]
pub fn fence_device() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) }
}

/// Orders this thread's memory accesses as seen by the host and peers (`__threadfence_system`).
#[inline(always)]
pub fn fence_system() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.sc.sys;", options(nostack)) }
}
