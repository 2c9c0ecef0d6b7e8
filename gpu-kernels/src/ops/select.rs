//! Selection: `SELECT y FROM R WHERE p(y)` and `WHERE px(x) AND py(y)`, in one pass.
//!
//! Ordered kernels keep input order: tile `b` is block `b` (blocks are dispatched in index
//! order, so a tile's predecessors are running or done, as CUB's single-pass scan assumes), and
//! learns its output offset by decoupled look-back. The block index is the tile id because a
//! dynamic id from a global counter costs an atomic round trip and a barrier per tile.
//! Unordered kernels reserve output with one atomic per tile (Crystal's original design).
//! Ordered kernels run one block per tile rather than persistent blocks: a persistent block
//! publishes its next tile's count only after finishing the current one, so its successors
//! wait on it, and pipelining the two (publish, then look back for the previous tile, on the
//! block or on a warp of its own) did not beat one block per tile once status words were
//! padded (`docs/perf-log.md` has the figures).
//!
//! Kernel state (see [`state_words`]): word 0 unused (the tile counter of kernels with dynamic
//! tile ids, such as the scan, that share this layout), word 1 the number of selected items,
//! then the status words (one 128-byte line per tile). Ordered kernels take the launch's
//! look-back epoch (see [`crate::layout::MAX_EPOCH`]): their state is zeroed once, not before
//! each launch, and the last tile writes the count. Unordered kernels count with an atomic
//! cursor in word 1, which must be zero at launch.

/// Words of kernel state needed for `tiles` tiles (status words padded to
/// [`crate::layout::STATUS_STRIDE`]).
pub const fn state_words(tiles: u64) -> u64 {
    STATE_HEADER + tiles * crate::layout::STATUS_STRIDE as u64
}
/// Header words before the per-tile status words.
pub const STATE_HEADER: u64 = 2;

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::STATE_HEADER;
    use crate::arch::{Shared, thread_idx};
    use crate::block::*;

    /// Shared memory of a selection kernel.
    #[derive(Clone, Copy)]
    pub struct SelectShared<T> {
        /// Compaction buffer, `NT * IPT + NT` items.
        pub buf: Shared<T>,
        /// Scan partials.
        pub scan: Shared<u32>,
        /// Broadcast slots for the tile id and the tile's offset.
        pub slots: Shared<u32>,
    }

    /// Where tile `tile` starts and how many of its items are valid.
    #[inline(always)]
    pub fn tile_range<const NT: usize, const IPT: usize>(tile: usize, n: usize) -> (usize, usize) {
        let start = tile * NT * IPT;
        (start, (n - start).min(NT * IPT))
    }

    /// Writes the flagged items of this tile to `out` after those of all earlier tiles
    /// (ordered, in look-back `epoch`) or at a reserved position (unordered), and maintains
    /// the selected count.
    ///
    /// # Safety
    /// `state` is the kernel state for `tiles` tiles as the module describes; tile ids are
    /// block indices; `out` holds `n` items.
    #[inline(always)]
    pub unsafe fn block_select_write<
        T: Copy,
        const NT: usize,
        const IPT: usize,
        const ORDERED: bool,
        const PREDICATED: bool,
    >(
        items: &[T; IPT],
        flags: &[bool; IPT],
        tile: usize,
        tiles: usize,
        out: *mut T,
        state: *mut u64,
        epoch: u32,
        sh: SelectShared<T>,
    ) {
        // Compact into shared memory first: the items need not stay in registers across the
        // look-back (fewer registers, more blocks per SM), and the look-back's barrier orders
        // the buffer's writes before the store reads them.
        let ranks = block_compact_ranks::<T, NT, IPT>(flags, sh.scan);
        let count = ranks.count;
        let shuffle =
            #[inline(always)]
            || block_shuffle::<T, NT, IPT, PREDICATED>(items, ranks.mask, &ranks.starts, sh.buf);
        let total = state.wrapping_add(1).cast::<u32>();
        let offset = if ORDERED {
            // SAFETY: status words follow the header. The shuffle runs while the look-back's
            // first round trip is in flight.
            let offset = unsafe {
                block_tile_prefix_with(
                    state.add(STATE_HEADER as usize),
                    tile,
                    count,
                    epoch,
                    sh.slots.offset(1),
                    shuffle,
                )
            };
            if tile == tiles - 1 && thread_idx() == 0 {
                // SAFETY: word 1 holds the count; only the last tile writes it.
                unsafe { total.write(offset + count) };
            }
            offset
        } else {
            shuffle();
            // SAFETY: word 1 is the output cursor; its final value is the count.
            unsafe { block_atomic_offset(total, count, sh.slots.offset(1)) }
        };
        // SAFETY: the buffer holds `count` items; the output has room for them at `offset`.
        unsafe { block_store_compacted::<T, NT>(sh.buf, count as usize, out.add(offset as usize)) };
    }

    /// `SELECT y FROM R WHERE p(y)`.
    ///
    /// # Safety
    /// `input` and `out` hold `n > 0` items; `state` is as the module describes for
    /// `ceil(n / (NT * IPT))` tiles and `epoch`; the grid has one block per tile.
    #[inline(always)]
    pub unsafe fn select<
        T: Copy + Default,
        const NT: usize,
        const IPT: usize,
        const ORDERED: bool,
        const PREDICATED: bool,
    >(
        input: *const T,
        n: usize,
        p: impl Fn(T) -> bool,
        out: *mut T,
        state: *mut u64,
        epoch: u32,
        sh: SelectShared<T>,
    ) {
        let tiles = n.div_ceil(NT * IPT);
        let tile = crate::arch::block_idx();
        // SAFETY: forwarded contracts.
        unsafe {
            let (start, valid) = tile_range::<NT, IPT>(tile, n);
            let mut items = [T::default(); IPT];
            block_load::<T, NT, IPT>(input.add(start), valid, &mut items);
            let mut flags = [false; IPT];
            block_pred::<T, NT, IPT>(&items, valid, &mut flags, Combine::Set, p);
            block_select_write::<T, NT, IPT, ORDERED, PREDICATED>(
                &items, &flags, tile, tiles, out, state, epoch, sh,
            );
        }
    }

    /// `SELECT y FROM R WHERE px(x) AND py(y)`: `y` is only read where `px(x)` holds.
    ///
    /// # Safety
    /// As for [`select`], with `x` and `y` both holding `n` items.
    #[inline(always)]
    pub unsafe fn select2<T: Copy + Default, const NT: usize, const IPT: usize>(
        x: *const T,
        px: impl Fn(T) -> bool,
        y: *const T,
        py: impl Fn(T) -> bool,
        n: usize,
        out: *mut T,
        state: *mut u64,
        epoch: u32,
        sh: SelectShared<T>,
    ) {
        let tiles = n.div_ceil(NT * IPT);
        let tile = crate::arch::block_idx();
        // SAFETY: forwarded contracts.
        unsafe {
            let (start, valid) = tile_range::<NT, IPT>(tile, n);
            let mut items = [T::default(); IPT];
            block_load::<T, NT, IPT>(x.add(start), valid, &mut items);
            let mut flags = [false; IPT];
            block_pred::<T, NT, IPT>(&items, valid, &mut flags, Combine::Set, px);
            block_load_sel::<T, NT, IPT>(y.add(start), valid, &flags, &mut items);
            block_pred::<T, NT, IPT>(&items, valid, &mut flags, Combine::And, py);
            block_select_write::<T, NT, IPT, true, false>(
                &items, &flags, tile, tiles, out, state, epoch, sh,
            );
        }
    }
}

/// Declares a selection kernel's shared memory at the top of an entry point.
#[cfg(target_arch = "nvptx64")]
macro_rules! select_shared {
    ($t:ty, $nt:expr, $ipt:expr) => {
        SelectShared {
            buf: $crate::shared_array!(select_buf: [$t; $nt * $ipt + $nt]),
            scan: $crate::shared_array!(select_scan: [u32; $crate::layout::scan_temp_words($nt, $ipt, $crate::layout::vec_width(core::mem::size_of::<$t>(), $ipt))]),
            slots: $crate::shared_array!(select_slots: [u32; 2]),
        }
    };
}

/// Parameters of the one-column selection kernels over items `T`.
pub type SelectArgs<T> = (*const T, u32, u32, T, T, *mut T, *mut u64, u32);

/// One-column selection kernels: `(input, n, negate, lo, hi, out, state, epoch)`, the
/// comparison in the closed-range form of [`crate::predicate::range`]: two comparisons and no
/// per-item `match` on the operator, which the item loop would otherwise branch on.
macro_rules! select_kernels {
    ($($spec:ident = $name:ident: $t:ty, $nt:literal x $ipt:literal, $mb:literal, ordered = $ord:literal, predicated = $pred:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = $nt, IPT = $ipt, MIN_BLOCKS = $mb](input: *const $t, n: u32, negate: u32, lo: $t, hi: $t, out: *mut $t, state: *mut u64, epoch: u32) {
                let sh = select_shared!($t, NT, IPT);
                // SAFETY: the host wrapper launches one block per tile with state as the
                // module describes and buffers of n items.
                unsafe {
                    select::<$t, NT, IPT, $ord, $pred>(input, n as usize,
                        |y| $crate::predicate::in_range(negate, y, lo, hi), out, state, epoch, sh)
                }
            }
        }
    )*};
}

// Ordered 4-byte tiles, four blocks per SM: the largest tiles that keep four blocks resident,
// 256 x 36 for Pred and 256 x 32 for If (which spills at 256 x 36). Fewer, larger blocks and
// more, smaller ones both ran slower; so did streaming (`.cs`) input loads and 16-byte aligned
// output stores (the sweep is in `docs/perf-log.md`).
select_kernels! {
    SELECT_I32 = select_i32: i32, 256 x 32, 4, ordered = true, predicated = false;
    SELECT_U32 = select_u32: u32, 256 x 32, 4, ordered = true, predicated = false;
    SELECT_F32 = select_f32: f32, 256 x 32, 4, ordered = true, predicated = false;
    SELECT_I64 = select_i64: i64, 256 x 16, 4, ordered = true, predicated = false;
    SELECT_U64 = select_u64: u64, 256 x 16, 4, ordered = true, predicated = false;
    SELECT_F64 = select_f64: f64, 256 x 16, 4, ordered = true, predicated = false;
    SELECT_PRED_I32 = select_pred_i32: i32, 256 x 36, 4, ordered = true, predicated = true;
    SELECT_PRED_U32 = select_pred_u32: u32, 256 x 36, 4, ordered = true, predicated = true;
    SELECT_PRED_F32 = select_pred_f32: f32, 256 x 36, 4, ordered = true, predicated = true;
    SELECT_PRED_I64 = select_pred_i64: i64, 256 x 16, 4, ordered = true, predicated = true;
    SELECT_PRED_U64 = select_pred_u64: u64, 256 x 16, 4, ordered = true, predicated = true;
    SELECT_PRED_F64 = select_pred_f64: f64, 256 x 16, 4, ordered = true, predicated = true;
    SELECT_UNORDERED_I32 = select_unordered_i32: i32, 256 x 16, 4, ordered = false, predicated = false;
    SELECT_UNORDERED_U32 = select_unordered_u32: u32, 256 x 16, 4, ordered = false, predicated = false;
    SELECT_UNORDERED_F32 = select_unordered_f32: f32, 256 x 16, 4, ordered = false, predicated = false;
    SELECT_UNORDERED_I64 = select_unordered_i64: i64, 256 x 8, 4, ordered = false, predicated = false;
    SELECT_UNORDERED_U64 = select_unordered_u64: u64, 256 x 8, 4, ordered = false, predicated = false;
    SELECT_UNORDERED_F64 = select_unordered_f64: f64, 256 x 8, 4, ordered = false, predicated = false;
}

/// The tile-configuration sweep of the thesis' Figure 3-8 (Q0, `i32`, ordered).
#[cfg(feature = "sweeps")]
pub mod sweep {
    #[cfg(target_arch = "nvptx64")]
    use super::device::*;

    select_kernels! {
        Q0_32X1 = q0_32x1: i32, 32 x 1, 1, ordered = true, predicated = false;
        Q0_32X2 = q0_32x2: i32, 32 x 2, 1, ordered = true, predicated = false;
        Q0_32X4 = q0_32x4: i32, 32 x 4, 1, ordered = true, predicated = false;
        Q0_32X8 = q0_32x8: i32, 32 x 8, 1, ordered = true, predicated = false;
        Q0_32X16 = q0_32x16: i32, 32 x 16, 1, ordered = true, predicated = false;
        Q0_64X1 = q0_64x1: i32, 64 x 1, 1, ordered = true, predicated = false;
        Q0_64X2 = q0_64x2: i32, 64 x 2, 1, ordered = true, predicated = false;
        Q0_64X4 = q0_64x4: i32, 64 x 4, 1, ordered = true, predicated = false;
        Q0_64X8 = q0_64x8: i32, 64 x 8, 1, ordered = true, predicated = false;
        Q0_64X16 = q0_64x16: i32, 64 x 16, 1, ordered = true, predicated = false;
        Q0_128X1 = q0_128x1: i32, 128 x 1, 1, ordered = true, predicated = false;
        Q0_128X2 = q0_128x2: i32, 128 x 2, 1, ordered = true, predicated = false;
        Q0_128X4 = q0_128x4: i32, 128 x 4, 1, ordered = true, predicated = false;
        Q0_128X8 = q0_128x8: i32, 128 x 8, 1, ordered = true, predicated = false;
        Q0_128X16 = q0_128x16: i32, 128 x 16, 1, ordered = true, predicated = false;
        Q0_256X1 = q0_256x1: i32, 256 x 1, 1, ordered = true, predicated = false;
        Q0_256X2 = q0_256x2: i32, 256 x 2, 1, ordered = true, predicated = false;
        Q0_256X4 = q0_256x4: i32, 256 x 4, 1, ordered = true, predicated = false;
        Q0_256X8 = q0_256x8: i32, 256 x 8, 1, ordered = true, predicated = false;
        Q0_256X16 = q0_256x16: i32, 256 x 16, 1, ordered = true, predicated = false;
        Q0_512X1 = q0_512x1: i32, 512 x 1, 1, ordered = true, predicated = false;
        Q0_512X2 = q0_512x2: i32, 512 x 2, 1, ordered = true, predicated = false;
        Q0_512X4 = q0_512x4: i32, 512 x 4, 1, ordered = true, predicated = false;
        Q0_512X8 = q0_512x8: i32, 512 x 8, 1, ordered = true, predicated = false;
        Q0_512X16 = q0_512x16: i32, 512 x 16, 1, ordered = true, predicated = false;
        Q0_1024X1 = q0_1024x1: i32, 1024 x 1, 1, ordered = true, predicated = false;
        Q0_1024X2 = q0_1024x2: i32, 1024 x 2, 1, ordered = true, predicated = false;
        Q0_1024X4 = q0_1024x4: i32, 1024 x 4, 1, ordered = true, predicated = false;
        Q0_1024X8 = q0_1024x8: i32, 1024 x 8, 1, ordered = true, predicated = false;
    }

    /// The sweep's kernels, in (NT, IPT) order.
    pub const ALL: [crate::spec::KernelSpec<super::SelectArgs<i32>>; 29] = [
        Q0_32X1, Q0_32X2, Q0_32X4, Q0_32X8, Q0_32X16, Q0_64X1, Q0_64X2, Q0_64X4, Q0_64X8, Q0_64X16,
        Q0_128X1, Q0_128X2, Q0_128X4, Q0_128X8, Q0_128X16, Q0_256X1, Q0_256X2, Q0_256X4, Q0_256X8,
        Q0_256X16, Q0_512X1, Q0_512X2, Q0_512X4, Q0_512X8, Q0_512X16, Q0_1024X1, Q0_1024X2,
        Q0_1024X4, Q0_1024X8,
    ];
}

/// Parameters of the two-column selection kernels over items `T`.
pub type Select2Args<T> = (
    *const T,
    u32,
    T,
    T,
    *const T,
    u32,
    T,
    T,
    u32,
    *mut T,
    *mut u64,
    u32,
);

/// Two-column selection kernels: `(x, opx, ax, bx, y, opy, ay, by, n, out, state, epoch)` with
/// the comparisons of [`crate::predicate::eval`]. (The closed-range form of the one-column
/// kernels would keep two more values live here, and the registers they take cost more than
/// the per-item `match` does.)
macro_rules! select2_kernels {
    ($($spec:ident = $name:ident: $t:ty, $nt:literal x $ipt:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = $nt, IPT = $ipt](
                x: *const $t, opx: u32, ax: $t, bx: $t,
                y: *const $t, opy: u32, ay: $t, by: $t,
                n: u32, out: *mut $t, state: *mut u64, epoch: u32
            ) {
                let sh = select_shared!($t, NT, IPT);
                // SAFETY: as for the one-column kernels.
                unsafe {
                    select2::<$t, NT, IPT>(
                        x, |v| $crate::predicate::eval(opx, v, ax, bx),
                        y, |v| $crate::predicate::eval(opy, v, ay, by),
                        n as usize, out, state, epoch, sh)
                }
            }
        }
    )*};
}

select2_kernels! {
    SELECT2_I32 = select2_i32: i32, 256 x 16;
    SELECT2_F32 = select2_f32: f32, 256 x 16;
}
