//! Block-wide bitonic sort of one item per thread: the first `len` threads' items (a top-k's
//! result) in `log2(len) * (log2(len) + 1) / 2` compare-exchange steps. A step between lanes
//! of one warp is a shuffle, with no barrier and no shared memory; only the steps between
//! warps (15 of the 55 for 1,024 items, none up to 32) go through shared memory, one barrier
//! each.
use crate::arch::{Shared, Shuffle, shfl_xor, sync_threads, thread_idx};

/// Sorts the items of threads `0..len` best first: returns to thread `t < len` the item that
/// ranks `t`-th among them (no item returned to a later thread is `better` than it). `len` is a
/// power of two at most `NT`, the same in every thread; pad a shorter run with items worse than
/// all others. Threads from `len` on sort their own groups of `len` and return any item.
///
/// Called by all `NT` threads of the block (`NT` a power of two, at least 32); `buf` holds
/// `2 * NT` items, which the call may overwrite (callers pass a barrier before reusing it).
#[inline(always)]
pub fn block_bitonic_sort<T: Shuffle, const NT: usize>(
    mut item: T,
    len: usize,
    better: impl Fn(&T, &T) -> bool,
    buf: Shared<T>,
) -> T {
    const { assert!(NT.is_power_of_two() && NT >= 32) };
    let t = thread_idx();
    // Steps across warps alternate between the halves of `buf`, so one barrier per step
    // suffices: a half is written again only after the next step's barrier, which every read
    // of it precedes.
    let mut half = 0;
    let len = len.min(NT);
    let mut size = 2;
    while size <= len {
        let mut stride = size / 2;
        while stride > 0 {
            let other = if stride < 32 {
                shfl_xor(item, stride as u32)
            } else {
                // SAFETY: half * NT + t and half * NT + (t ^ stride) are below 2 * NT; the
                // barrier orders the writes before the reads.
                unsafe {
                    buf.write(half * NT + t, item);
                    sync_threads();
                    let o = buf.read(half * NT + (t ^ stride));
                    half ^= 1;
                    o
                }
            };
            // Runs of `size` alternate: best first where `t & size` is clear (threads `0..len`
            // at the last size), worst first where it is set. The lower thread of a pair
            // keeps the better item of a best-first run.
            let keep_better = (t & stride == 0) == (t & size == 0);
            let take = if keep_better {
                better(&other, &item)
            } else {
                better(&item, &other)
            };
            if take {
                item = other;
            }
            stride /= 2;
        }
        size *= 2;
    }
    item
}
