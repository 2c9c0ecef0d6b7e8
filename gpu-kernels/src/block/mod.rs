//! Crystal's block-wide functions. A thread block processes one tile of `NT * IPT` items; each
//! thread holds its `IPT` items in registers (`[T; IPT]`), arranged as [`crate::layout`] says;
//! shared memory is passed in as [`crate::arch::Shared`] handles declared by the kernel.
//!
//! Every function must be called by all threads of the block (they contain barriers or warp
//! collectives). `NT` must be a multiple of 32.

mod aggregate;
mod block_sort;
mod compact;
mod digit_prefix;
mod hash;
mod load;
mod pred;
mod queue;
mod radix_rank;
mod scan;
mod shuffle;
mod stage;
mod store;
mod tile_prefix;

pub use aggregate::*;
pub use block_sort::*;
pub use compact::*;
pub use digit_prefix::*;
pub use hash::*;
pub use load::*;
pub use pred::*;
pub use queue::*;
pub use radix_rank::*;
pub use scan::*;
pub use shuffle::*;
pub use stage::*;
pub use store::*;
pub use tile_prefix::*;

use crate::layout;
use core::marker::PhantomData;

/// Compile-time facts about a tile of `T` with `NT` threads and `IPT` items per thread.
pub struct Tile<T, const NT: usize, const IPT: usize>(PhantomData<T>);

impl<T, const NT: usize, const IPT: usize> Tile<T, NT, IPT> {
    /// Items per vector access.
    pub const V: usize = layout::vec_width(core::mem::size_of::<T>(), IPT);
    /// Items per tile.
    pub const ITEMS: usize = NT * IPT;
    /// Warps per block.
    pub const WARPS: usize = NT / 32;
    /// Shared words the block scan needs.
    pub const SCAN_WORDS: usize = layout::scan_temp_words(NT, IPT, Self::V);

    /// Tile offset of item `k` of thread `t`.
    #[inline(always)]
    pub fn offset(t: usize, k: usize) -> usize {
        layout::tile_offset(NT, Self::V, t, k)
    }
}
