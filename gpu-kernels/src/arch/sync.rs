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

/// Block-wide barrier that also tells whether `p` holds on any thread of the block
/// (`__syncthreads_or`): one barrier where a flag in shared memory takes two.
#[inline(always)]
pub fn sync_threads_or(p: bool) -> bool {
    let r: u32;
    // SAFETY: as for `sync_threads`: every thread of the block reaches the callers' barriers.
    unsafe {
        asm!(
            "{{ .reg .pred %pi, %po; setp.ne.u32 %pi, {c}, 0; bar.red.or.pred %po, 0, %pi; \
             selp.u32 {r}, 1, 0, %po; }}",
            c = in(reg32) p as u32,
            r = out(reg32) r,
            options(nostack)
        )
    };
    r != 0
}
