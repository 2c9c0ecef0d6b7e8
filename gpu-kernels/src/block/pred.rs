//! BlockPred: a predicate over the tile into a flag array, alone or combined with existing
//! flags. One generic function replaces Crystal's per-comparison copies; invalid items of a
//! partial tile are never flagged.
use super::Tile;
use crate::arch::thread_idx;

/// How a predicate's result combines with the flags already there.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// `flag = p(x)`
    Set,
    /// `flag = flag && p(x)`
    And,
    /// `flag = flag || p(x)`
    Or,
}

/// Applies `p` to the first `n` items of the tile and combines the result into `flags`.
#[inline(always)]
pub fn block_pred<T: Copy, const NT: usize, const IPT: usize>(
    items: &[T; IPT],
    n: usize,
    flags: &mut [bool; IPT],
    combine: Combine,
    p: impl Fn(T) -> bool,
) {
    let combine = |f: bool, r: bool| match combine {
        Combine::Set => r,
        Combine::And => f & r,
        Combine::Or => f | r,
    };
    // Two loops, not a `full ||` test per item: the compiler does not split the loop itself,
    // and the per-item test cost a 64-bit compare and a branch in every probe kernel.
    if n >= Tile::<T, NT, IPT>::ITEMS {
        for k in 0..IPT {
            flags[k] = combine(flags[k], p(items[k]));
        }
    } else {
        let t = thread_idx();
        for k in 0..IPT {
            let valid = Tile::<T, NT, IPT>::offset(t, k) < n;
            flags[k] = combine(flags[k], valid && p(items[k]));
        }
    }
}
