//! Selection: `SELECT y FROM R WHERE p(y)` and `WHERE px(x) AND py(y)`, in one pass.
//!
//! Ordered kernels keep input order: tiles take dynamic ids and learn their output offset by
//! decoupled look-back. Unordered kernels reserve output with one atomic per tile (Crystal's
//! original design). Kernel state (`state`, zeroed before each launch, see [`state_words`]):
//! word 0 tile counter, word 1 number of selected items, then one status word per tile.

/// Words of kernel state needed for `tiles` tiles.
pub const fn state_words(tiles: u64) -> u64 {
    STATE_HEADER + tiles
}
/// Header words before the per-tile status words.
pub const STATE_HEADER: u64 = 2;

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{LOOKBACK_ROWS, STATE_HEADER};
    use crate::arch::{Atomic, Shared, lane_id, sync_threads, thread_idx, warp_id};
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

    /// The tile this block works on: a dynamic id when order matters, else the block index.
    ///
    /// # Safety
    /// `state` is the zeroed kernel state.
    #[inline(always)]
    pub unsafe fn select_tile_id<const ORDERED: bool>(
        state: *mut u64,
        sh: SelectShared<impl Copy>,
    ) -> usize {
        if ORDERED {
            // SAFETY: word 0 is the tile counter.
            unsafe { block_dynamic_tile_id(state.cast::<u32>(), sh.slots) }
        } else {
            crate::arch::block_idx()
        }
    }

    /// Writes the flagged items of this tile to `out` after those of all earlier tiles
    /// (ordered) or at a reserved position (unordered), and maintains the selected count.
    ///
    /// # Safety
    /// `state` is the zeroed kernel state for `tiles` tiles; `out` holds `n` items.
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
        sh: SelectShared<T>,
    ) {
        // Compact into shared memory first: the items need not stay in registers across the
        // look-back (fewer registers, more blocks per SM), and the look-back's barrier orders
        // the buffer's writes before the store reads them.
        let count = block_compact::<T, NT, IPT, PREDICATED>(items, flags, sh.buf, sh.scan);
        let total = state.wrapping_add(1).cast::<u32>();
        let offset = if ORDERED {
            // SAFETY: status words follow the header, one per tile.
            let offset = unsafe {
                block_tile_prefix(
                    state.add(STATE_HEADER as usize),
                    tile,
                    count,
                    sh.slots.offset(1),
                )
            };
            if tile == tiles - 1 && thread_idx() == 0 {
                // SAFETY: word 1 holds the count; only the last tile writes it.
                unsafe { total.write(offset + count) };
            }
            offset
        } else {
            // SAFETY: word 1 is the output cursor; its final value is the count.
            unsafe { block_atomic_offset(total, count, sh.slots.offset(1)) }
        };
        // SAFETY: the buffer holds `count` items; the output has room for them at `offset`.
        unsafe { block_store_compacted::<T, NT>(sh.buf, count as usize, out.add(offset as usize)) };
    }

    /// `SELECT y FROM R WHERE p(y)`.
    ///
    /// # Safety
    /// `input` and `out` hold `n > 0` items; `state` is zeroed for `ceil(n / (NT * IPT))` tiles;
    /// the grid has one block per tile.
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
        sh: SelectShared<T>,
    ) {
        let tiles = n.div_ceil(NT * IPT);
        // SAFETY: forwarded contracts.
        unsafe {
            let tile = select_tile_id::<ORDERED>(state, sh);
            let (start, valid) = tile_range::<NT, IPT>(tile, n);
            let mut items = [T::default(); IPT];
            block_load::<T, NT, IPT>(input.add(start), valid, &mut items);
            let mut flags = [false; IPT];
            block_pred::<T, NT, IPT>(&items, valid, &mut flags, Combine::Set, p);
            block_select_write::<T, NT, IPT, ORDERED, PREDICATED>(
                &items, &flags, tile, tiles, out, state, sh,
            );
        }
    }

    /// [`select`] (ordered) with persistent blocks: see [`pipeline`].
    ///
    /// # Safety
    /// As for [`select`], except that the grid may have any size.
    #[inline(always)]
    pub unsafe fn select_pipelined<
        T: Copy + Default,
        const NT: usize,
        const IPT: usize,
        const ROWS: usize,
        const PREDICATED: bool,
    >(
        input: *const T,
        n: usize,
        p: impl Fn(T) -> bool,
        out: *mut T,
        state: *mut u64,
        sh: SelectShared<T>,
    ) {
        let fill = #[inline(always)]
        |start: usize, valid: usize, items: &mut [T; IPT], flags: &mut [bool; IPT]| {
            // SAFETY: the tile lies in the input.
            unsafe { block_load::<T, NT, IPT>(input.add(start), valid, items) };
            block_pred::<T, NT, IPT>(items, valid, flags, Combine::Set, &p);
        };
        // SAFETY: forwarded contract.
        unsafe { pipeline::<T, NT, IPT, ROWS, PREDICATED>(n, fill, out, state, sh) }
    }

    /// The ordered selection of persistent blocks in a two-stage pipeline; `fill(start,
    /// valid, items, flags)` reads the tile of `valid` items at `start` and flags the selected
    /// ones. Each step a block takes a tile, fills and compacts it into one of two shared buffers and publishes its
    /// count; then it looks back for the tile of the previous step, which waits compacted in
    /// the other buffer, and writes that one out. A count is thus published one tile load
    /// after its id is taken, never behind a look-back (so no wait propagates from tile to
    /// tile), and by the time a block looks back its predecessors have had a whole step to
    /// publish. `sh.buf` holds the two buffers, `2 * (NT * IPT + NT)` items; `sh.slots` 2
    /// words. Look-backs read `ROWS * 32` predecessors per round trip: many tiles await their
    /// look-back at any time (one per block), so the nearest prefix is often more than 32
    /// tiles back. Launch any number of blocks: ids are taken in order and publishing never
    /// waits, so no block waits for one that cannot run.
    ///
    /// # Safety
    /// `out` holds `n > 0` items; `state` is zeroed for `ceil(n / (NT * IPT))` tiles; `fill`
    /// may read any tile below that count.
    #[inline(always)]
    unsafe fn pipeline<
        T: Copy + Default,
        const NT: usize,
        const IPT: usize,
        const ROWS: usize,
        const PREDICATED: bool,
    >(
        n: usize,
        fill: impl Fn(usize, usize, &mut [T; IPT], &mut [bool; IPT]),
        out: *mut T,
        state: *mut u64,
        sh: SelectShared<T>,
    ) {
        let tiles = n.div_ceil(NT * IPT);
        let counter = state.cast::<u32>();
        // SAFETY: status words follow the header, one per tile.
        let status = unsafe { state.add(STATE_HEADER as usize) };
        let buf = |b: usize| sh.buf.offset(b * (NT * IPT + NT));
        // Thread 0 takes each id a step ahead, so the atomic's round trip overlaps a step.
        let mut pending = 0u32;
        if thread_idx() == 0 {
            // SAFETY: word 0 is the tile counter.
            pending = unsafe { u32::atomic_add(counter, 1) };
        }
        // The previous step's tile (`tiles`: none), its count and buffer.
        let (mut prev, mut prev_count, mut b) = (tiles, 0u32, 0usize);
        loop {
            if thread_idx() == 0 {
                // SAFETY: slot 0 exists; everyone read the last id before the step's later
                // barriers.
                unsafe { sh.slots.write(0, pending) };
            }
            // Also orders the last step's reads of `buf(b)` before this step refills it.
            sync_threads();
            // SAFETY: written before the barrier.
            let tile = unsafe { sh.slots.read(0) } as usize;
            let count = if tile < tiles {
                if thread_idx() == 0 {
                    // SAFETY: word 0 is the tile counter.
                    pending = unsafe { u32::atomic_add(counter, 1) };
                }
                let (start, valid) = tile_range::<NT, IPT>(tile, n);
                let mut items = [T::default(); IPT];
                let mut flags = [false; IPT];
                fill(start, valid, &mut items, &mut flags);
                let count =
                    block_compact::<T, NT, IPT, PREDICATED>(&items, &flags, buf(b), sh.scan);
                // SAFETY: `tile` was taken in order and is below `tiles`.
                unsafe { block_publish_aggregate(status, tile, count) };
                count
            } else {
                0
            };
            if prev < tiles {
                // SAFETY: `prev` published its count; its items wait in the other buffer.
                unsafe {
                    finish_tile::<T, NT, ROWS>(prev, prev_count, tiles, buf(b ^ 1), out, state, sh)
                };
            }
            if tile >= tiles {
                break;
            }
            (prev, prev_count, b) = (tile, count, b ^ 1);
        }
    }

    /// Looks back for `tile`, whose count is published, and writes its compacted items from
    /// `buf` to `out`; the last tile records the selected count. Block-wide.
    ///
    /// # Safety
    /// `state` is the selection's kernel state; `buf` holds the tile's `count` items, written
    /// before a barrier; `out` has room for every selected item.
    #[inline(always)]
    unsafe fn finish_tile<T: Copy, const NT: usize, const ROWS: usize>(
        tile: usize,
        count: u32,
        tiles: usize,
        buf: Shared<T>,
        out: *mut T,
        state: *mut u64,
        sh: SelectShared<T>,
    ) {
        // SAFETY: forwarded contract; slot 1 exists.
        unsafe {
            let status = state.add(STATE_HEADER as usize);
            if warp_id() == 0 {
                let exclusive = warp_lookback::<ROWS>(status, tile);
                warp_publish_prefix(status, tile, exclusive, count);
                if lane_id() == 0 {
                    sh.slots.write(1, exclusive);
                    if tile == tiles - 1 {
                        // Word 1 holds the count; only the last tile writes it.
                        state.wrapping_add(1).cast::<u32>().write(exclusive + count);
                    }
                }
            }
            sync_threads();
            let offset = sh.slots.read(1);
            block_store_compacted::<T, NT>(buf, count as usize, out.add(offset as usize));
        }
    }

    /// `SELECT y FROM R WHERE px(x) AND py(y)`, ordered, on persistent blocks (see
    /// [`pipeline`]): `y` is only read where `px(x)` holds.
    ///
    /// # Safety
    /// As for [`select_pipelined`], with `x` and `y` both holding `n` items.
    #[inline(always)]
    pub unsafe fn select2<T: Copy + Default, const NT: usize, const IPT: usize>(
        x: *const T,
        px: impl Fn(T) -> bool,
        y: *const T,
        py: impl Fn(T) -> bool,
        n: usize,
        out: *mut T,
        state: *mut u64,
        sh: SelectShared<T>,
    ) {
        let fill = #[inline(always)]
        |start: usize, valid: usize, items: &mut [T; IPT], flags: &mut [bool; IPT]| {
            // SAFETY: the tile lies in both columns.
            unsafe {
                block_load::<T, NT, IPT>(x.add(start), valid, items);
                block_pred::<T, NT, IPT>(items, valid, flags, Combine::Set, &px);
                block_load_sel::<T, NT, IPT>(y.add(start), valid, flags, items);
            }
            block_pred::<T, NT, IPT>(items, valid, flags, Combine::And, &py);
        };
        // SAFETY: forwarded contract.
        unsafe { pipeline::<T, NT, IPT, LOOKBACK_ROWS, false>(n, fill, out, state, sh) }
    }
}

/// Declares a selection kernel's shared memory at the top of an entry point, with `$bufs`
/// compaction buffers.
#[cfg(target_arch = "nvptx64")]
macro_rules! select_shared {
    ($t:ty, $nt:expr, $ipt:expr, $bufs:literal) => {
        SelectShared {
            buf: $crate::shared_array!(select_buf: [$t; $bufs * ($nt * $ipt + $nt)]),
            scan: $crate::shared_array!(select_scan: [u32; $crate::layout::scan_temp_words($nt, $ipt, $crate::layout::vec_width(core::mem::size_of::<$t>(), $ipt))]),
            slots: $crate::shared_array!(select_slots: [u32; 2]),
        }
    };
}

/// Rows of the pipelined kernels' look-back, see `pipeline`. 2^29 `f32` at s = 0.5 on the
/// H100, interleaved in one run: 1 and 2 rows 1.385 ms each; 4 rows were 3% slower in another
/// run. Reading the nearest window early, under the next tile's load, and settling the
/// look-back from it when it can was 4-6% slower (1.44-1.46 ms), as was publishing a
/// closing window's implied prefixes.
pub const LOOKBACK_ROWS: usize = 1;

/// The body of a one-column selection kernel in one of three modes: `pipelined` (ordered,
/// persistent blocks, `select_pipelined`; any grid), `tile` (ordered, one block per tile)
/// and `unordered` (one block per tile).
#[cfg(target_arch = "nvptx64")]
macro_rules! select_body {
    (pipelined, $t:ty, $pred:literal, $($arg:expr),*) => {{
        let sh = select_shared!($t, NT, IPT, 2);
        // SAFETY: the host wrapper launches with zeroed state and buffers of n items.
        unsafe { select_pipelined::<$t, NT, IPT, LOOKBACK_ROWS, $pred>($($arg),*, sh) }
    }};
    (tile, $t:ty, $pred:literal, $($arg:expr),*) => {{
        let sh = select_shared!($t, NT, IPT, 1);
        // SAFETY: the host wrapper launches one block per tile with zeroed state and buffers
        // of n items.
        unsafe { select::<$t, NT, IPT, true, $pred>($($arg),*, sh) }
    }};
    (unordered, $t:ty, $pred:literal, $($arg:expr),*) => {{
        let sh = select_shared!($t, NT, IPT, 1);
        // SAFETY: as for `tile`.
        unsafe { select::<$t, NT, IPT, false, $pred>($($arg),*, sh) }
    }};
}

/// One-column selection kernels: `(input, n, negate, lo, hi, out, state)`, the comparison in
/// the closed-range form of [`crate::predicate::range`] (measured 7% faster than a `match` on
/// the operator per item at 2^29 `f32`, 1.59 against 1.72 ms on the H100). Modes as in
/// `select_body!`.
macro_rules! select_kernels {
    ($($spec:ident = $name:ident: $t:ty, $nt:literal x $ipt:literal, $mb:literal, $mode:ident, predicated = $pred:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = $nt, IPT = $ipt, MIN_BLOCKS = $mb](input: *const $t, n: u32, negate: u32, lo: $t, hi: $t, out: *mut $t, state: *mut u64) {
                select_body!($mode, $t, $pred, input, n as usize,
                    |y| $crate::predicate::in_range(negate, y, lo, hi), out, state)
            }
        }
    )*};
}

// Pipelined kernels keep two tiles per block in shared memory: 16 KB tiles (4,096 items of 4
// bytes, 2,048 of 8) fit both buffers in the 48 KB of static shared memory, 4 blocks per SM.
// `SELECT_TILE_F32` is the one-block-per-tile ordered kernel that the pipelined ones replaced,
// kept for the benchmark's comparison.
select_kernels! {
    SELECT_I32 = select_i32: i32, 256 x 16, 4, pipelined, predicated = false;
    SELECT_U32 = select_u32: u32, 256 x 16, 4, pipelined, predicated = false;
    SELECT_F32 = select_f32: f32, 256 x 16, 4, pipelined, predicated = false;
    SELECT_I64 = select_i64: i64, 256 x 8, 4, pipelined, predicated = false;
    SELECT_U64 = select_u64: u64, 256 x 8, 4, pipelined, predicated = false;
    SELECT_F64 = select_f64: f64, 256 x 8, 4, pipelined, predicated = false;
    SELECT_PRED_I32 = select_pred_i32: i32, 256 x 16, 4, pipelined, predicated = true;
    SELECT_PRED_U32 = select_pred_u32: u32, 256 x 16, 4, pipelined, predicated = true;
    SELECT_PRED_F32 = select_pred_f32: f32, 256 x 16, 4, pipelined, predicated = true;
    SELECT_PRED_I64 = select_pred_i64: i64, 256 x 8, 4, pipelined, predicated = true;
    SELECT_PRED_U64 = select_pred_u64: u64, 256 x 8, 4, pipelined, predicated = true;
    SELECT_PRED_F64 = select_pred_f64: f64, 256 x 8, 4, pipelined, predicated = true;
    SELECT_UNORDERED_I32 = select_unordered_i32: i32, 256 x 16, 4, unordered, predicated = false;
    SELECT_UNORDERED_U32 = select_unordered_u32: u32, 256 x 16, 4, unordered, predicated = false;
    SELECT_UNORDERED_F32 = select_unordered_f32: f32, 256 x 16, 4, unordered, predicated = false;
    SELECT_UNORDERED_I64 = select_unordered_i64: i64, 256 x 8, 4, unordered, predicated = false;
    SELECT_UNORDERED_U64 = select_unordered_u64: u64, 256 x 8, 4, unordered, predicated = false;
    SELECT_UNORDERED_F64 = select_unordered_f64: f64, 256 x 8, 4, unordered, predicated = false;
    SELECT_TILE_F32 = select_tile_f32: f32, 256 x 32, 4, tile, predicated = false;
}

/// The tile-configuration sweep of the thesis' Figure 3-8 (Q0, `i32`, ordered).
pub mod sweep {
    #[cfg(target_arch = "nvptx64")]
    use super::device::*;

    select_kernels! {
        Q0_32X1 = q0_32x1: i32, 32 x 1, 1, tile, predicated = false;
        Q0_32X2 = q0_32x2: i32, 32 x 2, 1, tile, predicated = false;
        Q0_32X4 = q0_32x4: i32, 32 x 4, 1, tile, predicated = false;
        Q0_32X8 = q0_32x8: i32, 32 x 8, 1, tile, predicated = false;
        Q0_32X16 = q0_32x16: i32, 32 x 16, 1, tile, predicated = false;
        Q0_64X1 = q0_64x1: i32, 64 x 1, 1, tile, predicated = false;
        Q0_64X2 = q0_64x2: i32, 64 x 2, 1, tile, predicated = false;
        Q0_64X4 = q0_64x4: i32, 64 x 4, 1, tile, predicated = false;
        Q0_64X8 = q0_64x8: i32, 64 x 8, 1, tile, predicated = false;
        Q0_64X16 = q0_64x16: i32, 64 x 16, 1, tile, predicated = false;
        Q0_128X1 = q0_128x1: i32, 128 x 1, 1, tile, predicated = false;
        Q0_128X2 = q0_128x2: i32, 128 x 2, 1, tile, predicated = false;
        Q0_128X4 = q0_128x4: i32, 128 x 4, 1, tile, predicated = false;
        Q0_128X8 = q0_128x8: i32, 128 x 8, 1, tile, predicated = false;
        Q0_128X16 = q0_128x16: i32, 128 x 16, 1, tile, predicated = false;
        Q0_256X1 = q0_256x1: i32, 256 x 1, 1, tile, predicated = false;
        Q0_256X2 = q0_256x2: i32, 256 x 2, 1, tile, predicated = false;
        Q0_256X4 = q0_256x4: i32, 256 x 4, 1, tile, predicated = false;
        Q0_256X8 = q0_256x8: i32, 256 x 8, 1, tile, predicated = false;
        Q0_256X16 = q0_256x16: i32, 256 x 16, 1, tile, predicated = false;
        Q0_512X1 = q0_512x1: i32, 512 x 1, 1, tile, predicated = false;
        Q0_512X2 = q0_512x2: i32, 512 x 2, 1, tile, predicated = false;
        Q0_512X4 = q0_512x4: i32, 512 x 4, 1, tile, predicated = false;
        Q0_512X8 = q0_512x8: i32, 512 x 8, 1, tile, predicated = false;
        Q0_512X16 = q0_512x16: i32, 512 x 16, 1, tile, predicated = false;
        Q0_1024X1 = q0_1024x1: i32, 1024 x 1, 1, tile, predicated = false;
        Q0_1024X2 = q0_1024x2: i32, 1024 x 2, 1, tile, predicated = false;
        Q0_1024X4 = q0_1024x4: i32, 1024 x 4, 1, tile, predicated = false;
        Q0_1024X8 = q0_1024x8: i32, 1024 x 8, 1, tile, predicated = false;
    }

    /// The sweep's kernels, in (NT, IPT) order.
    pub const ALL: [crate::spec::KernelSpec; 29] = [
        Q0_32X1, Q0_32X2, Q0_32X4, Q0_32X8, Q0_32X16, Q0_64X1, Q0_64X2, Q0_64X4, Q0_64X8, Q0_64X16,
        Q0_128X1, Q0_128X2, Q0_128X4, Q0_128X8, Q0_128X16, Q0_256X1, Q0_256X2, Q0_256X4, Q0_256X8,
        Q0_256X16, Q0_512X1, Q0_512X2, Q0_512X4, Q0_512X8, Q0_512X16, Q0_1024X1, Q0_1024X2,
        Q0_1024X4, Q0_1024X8,
    ];
}

/// Two-column selection kernels: `(x, opx, ax, bx, y, opy, ay, by, n, out, state)` with the
/// comparisons of [`crate::predicate::eval`]. (The closed-range form of the one-column kernels
/// keeps two more values live here: 68 registers instead of 48, and 2.81 instead of 2.49 ms at
/// 2^29 on the H100.)
macro_rules! select2_kernels {
    ($($spec:ident = $name:ident: $t:ty, $nt:literal x $ipt:literal, $mb:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = $nt, IPT = $ipt, MIN_BLOCKS = $mb](
                x: *const $t, opx: u32, ax: $t, bx: $t,
                y: *const $t, opy: u32, ay: $t, by: $t,
                n: u32, out: *mut $t, state: *mut u64
            ) {
                let sh = select_shared!($t, NT, IPT, 2);
                // SAFETY: as for the one-column pipelined kernels.
                unsafe {
                    select2::<$t, NT, IPT>(
                        x, |v| $crate::predicate::eval(opx, v, ax, bx),
                        y, |v| $crate::predicate::eval(opy, v, ay, by),
                        n as usize, out, state, sh)
                }
            }
        }
    )*};
}

select2_kernels! {
    SELECT2_I32 = select2_i32: i32, 256 x 16, 4;
    SELECT2_F32 = select2_f32: f32, 256 x 16, 4;
}
