//! The lineorder columns a probe reads, behind one trait: a plain `i32` column, or a
//! [`Packed`] one (NSF or GPU-FOR, thesis §5.6.5), so that a probe kernel is written once and
//! instantiated for both. A probe reads its first column a tile at a time ([`FactColumn::load`],
//! in `block_load`'s places) and every later column at its survivors' rows only
//! ([`FactColumn::gather`]).
//!
//! A GPU-FOR column is decoded where it is read. As a probe's first column, its tiles are
//! staged in shared memory by LoadBitPack with the next tile's copies in flight
//! ([`FactColumn::for_each_tile`], where the kernel has the shared memory for it), else decoded
//! from global memory run by run (a warp's items of a tile are runs of `V` consecutive rows in
//! one miniblock: the block's start, reference and bit widths once per run, then the words of
//! its values). At the survivors' rows, a value is one or two words at a position its block
//! header gives: before a warp's survivor rounds, [`FactColumn::stage`] puts the headers of the
//! warp's blocks of the tile, every column's at once, in a table in shared memory, so that the
//! chain of dependent loads a survivor's value costs (block start, header, words) is paid once
//! per warp and tile, for all columns together, and each gather is one load, as in a plain
//! column.
use crate::arch::{
    Shared, funnel_shr, lane_id, load_if, load_invariant_u32, load_invariant_u64, low_mask,
    sync_warp, thread_idx,
};
use crate::block::{Tile, block_load_as};
use crate::compress::format::{BLOCK, BLOCK_HEADER_WORDS, MINIBLOCK, miniblock_offset, width};
use crate::compress::load::{bitpack_shared_words, for_each_bitpack_tile};
use crate::ssb::plan::{FLIGHT_COLS, PackedCol, column};

/// Most GPU-FOR blocks a warp's items of a tile lie in (`IPT / V`, with runs of `V = 4` rows:
/// 32 lanes x 4 rows is one block).
pub const WARP_BLOCKS: usize = 3;
/// Words of a block's entry in the header table: start, reference, bit widths.
const HEAD_WORDS: usize = 3;
/// Shared words of the header table of a probe of `nt` threads ([`FactColumn::stage`]).
pub const fn head_table_words(nt: usize) -> usize {
    nt / 32 * FLIGHT_COLS * WARP_BLOCKS * HEAD_WORDS
}

/// A lineorder column a probe reads.
pub trait FactColumn: Copy {
    /// Whether a probe loads its next tile of this column while it works on the current one
    /// ([`crate::ssb::for_each_loaded_tile`]): worth its registers where a tile is one load
    /// per run, not where it is a chain of dependent loads.
    const AHEAD: bool;

    /// Calls `f(start, valid, rows)` for every tile of `NT * IPT` rows of the `n` this block
    /// owns, as [`crate::ssb::for_each_loaded_tile`] does; `stage` is shared memory a GPU-FOR
    /// column may stage its tiles in (empty where the kernel has none to spare). Called by the
    /// whole block.
    ///
    /// # Safety
    /// The column holds `n` rows; `stage` is free for the call.
    #[inline(always)]
    unsafe fn for_each_tile<const NT: usize, const IPT: usize>(
        self,
        n: usize,
        stage: Shared<u32>,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        let _ = stage;
        // SAFETY: forwarded.
        unsafe { crate::ssb::for_each_loaded_tile::<Self, NT, IPT>(self, n, f) }
    }

    /// Before a warp's rounds over its survivors of the tile at `start` (`valid` rows): makes
    /// ready what [`FactColumn::gather`] of `cols` needs (a compressed column's block headers).
    /// Called by the whole warp, with survivors, after their compaction.
    ///
    /// # Safety
    /// `cols` hold the tile's rows.
    #[inline(always)]
    unsafe fn stage<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        start: usize,
        valid: usize,
    ) {
        let _ = (cols, start, valid);
    }

    /// The tile of rows `start..start + valid` (at most `NT * IPT`) in `block_load`'s places
    /// (`Tile::<i32, NT, IPT>::offset`); items past `valid` are 0.
    ///
    /// # Safety
    /// The column holds the rows; `start` is a multiple of `NT * IPT`.
    unsafe fn load<const NT: usize, const IPT: usize>(
        self,
        start: usize,
        valid: usize,
    ) -> [i32; IPT];

    /// Rows `start + offsets[s]` where `live[s]` (0 elsewhere) of the tile at `start`.
    ///
    /// # Safety
    /// The column holds the live rows; [`FactColumn::stage`] ran for the tile.
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S];
}

impl FactColumn for *const i32 {
    const AHEAD: bool = true;

    #[inline(always)]
    unsafe fn load<const NT: usize, const IPT: usize>(
        self,
        start: usize,
        valid: usize,
    ) -> [i32; IPT] {
        // SAFETY: forwarded.
        unsafe { crate::ssb::load::<NT, IPT>(self, start, valid) }
    }

    #[inline(always)]
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        // SAFETY: forwarded.
        unsafe { crate::ssb::gather(self, start, offsets, live) }
    }
}

/// A lineorder column in one of the [`column`] kinds: column `slot` of a flight's
/// [`PackedCol`]s in global memory, whose fields are read where they are used (held in
/// registers, a flight's six descriptors took 30 of them across the tile loop and the kernels
/// spilled), and the probe's header table.
#[derive(Clone, Copy)]
pub struct Packed {
    cols: *const PackedCol,
    slot: usize,
    heads: Shared<u32>,
}

impl Packed {
    /// Column `slot` of `cols`, with `heads` (of [`head_table_words`]`(NT)` words) its
    /// probe's header table.
    ///
    /// # Safety
    /// `cols` holds at least `slot + 1` valid [`PackedCol`]s in global memory, unchanged
    /// during the kernel, whose arrays hold the columns.
    #[inline(always)]
    pub unsafe fn new(cols: *const PackedCol, slot: usize, heads: Shared<u32>) -> Packed {
        Packed { cols, slot, heads }
    }

    #[inline(always)]
    fn desc(self) -> *const PackedCol {
        self.cols.wrapping_add(self.slot)
    }

    #[inline(always)]
    fn kind(self) -> u32 {
        // SAFETY: a field of the valid descriptor.
        unsafe { load_invariant_u32(&raw const (*self.desc()).kind) }
    }

    #[inline(always)]
    fn data(self) -> *const u32 {
        // SAFETY: as above.
        unsafe { load_invariant_u64(&raw const (*self.desc()).data) as *const u32 }
    }

    #[inline(always)]
    fn starts(self) -> *const u32 {
        // SAFETY: as above.
        unsafe { load_invariant_u64(&raw const (*self.desc()).starts) as *const u32 }
    }

    /// Index in the header table of block `g` of this warp's part of a tile, for column `slot`.
    #[inline(always)]
    fn head(slot: usize, g: usize) -> usize {
        ((thread_idx() / 32 * FLIGHT_COLS + slot) * WARP_BLOCKS + g) * HEAD_WORDS
    }

    /// The `V` values of GPU-FOR rows `row..row + V` (`V` divides a miniblock, `row` is a
    /// multiple of `V`), of which the first `live` are read (the others are 0).
    ///
    /// # Safety
    /// `data` and `starts` hold a GPU-FOR column with the live rows.
    #[inline(always)]
    unsafe fn for_run<const V: usize>(self, row: u32, live: u32) -> [u32; V] {
        let any = live != 0;
        // SAFETY: the run's block exists when a row of it is live; every load is predicated on
        // a live row, and a value's next word only where the value runs into it.
        unsafe {
            let start = load_if(any, self.starts().add((row / BLOCK as u32) as usize));
            let block = self.data().wrapping_add(start as usize);
            let reference = load_if(any, block);
            let widths = load_if(any, block.wrapping_add(1));
            let i = row % BLOCK as u32;
            let m = (i / MINIBLOCK as u32) as usize;
            let w = width(widths, m);
            let mask = low_mask(w);
            let first = (BLOCK_HEADER_WORDS as u32 + miniblock_offset(widths, m)) * 32
                + (i % MINIBLOCK as u32) * w;
            core::array::from_fn(|j| {
                let pos = first + j as u32 * w;
                let word = block.wrapping_add((pos / 32) as usize);
                let live = (j as u32) < live;
                let lo = load_if(live, word);
                let hi = load_if(live && pos % 32 + w > 32, word.wrapping_add(1));
                reference.wrapping_add(funnel_shr(lo, hi, pos) & mask)
            })
        }
    }
}

impl Packed {
    /// The GPU-FOR value at tile offset `offset` of a tile whose headers are staged (0 where
    /// not `live`).
    ///
    /// # Safety
    /// [`FactColumn::stage`] ran for the tile, which holds the row when `live`.
    #[inline(always)]
    unsafe fn for_value<const NT: usize>(self, offset: u32, live: bool) -> u32 {
        let at = Packed::head(self.slot, offset as usize / (NT * 4));
        // SAFETY: the warp's own entries, written before its rounds; the value's words lie in
        // its block, the next one only where the value runs into it.
        unsafe {
            let (s, reference, widths) = (
                self.heads.read(at),
                self.heads.read(at + 1),
                self.heads.read(at + 2),
            );
            let i = offset % BLOCK as u32;
            let m = (i / MINIBLOCK as u32) as usize;
            let w = width(widths, m);
            let pos = (BLOCK_HEADER_WORDS as u32 + miniblock_offset(widths, m)) * 32
                + (i % MINIBLOCK as u32) * w;
            let word = self.data().wrapping_add(s as usize + (pos / 32) as usize);
            let lo = load_if(live, word);
            let hi = load_if(live && pos % 32 + w > 32, word.wrapping_add(1));
            reference.wrapping_add(funnel_shr(lo, hi, pos) & low_mask(w))
        }
    }
}

impl FactColumn for Packed {
    const AHEAD: bool = false;

    #[inline(always)]
    unsafe fn for_each_tile<const NT: usize, const IPT: usize>(
        self,
        n: usize,
        stage: Shared<u32>,
        mut f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        let tile_rows = NT * IPT;
        // SAFETY (both): forwarded; a GPU-FOR column is validated at upload, its data 16-byte
        // aligned, and `stage` holds two buffers of LoadBitPack's words.
        unsafe {
            if self.kind() == column::GPU_FOR && stage.len() >= 2 * bitpack_shared_words(NT, IPT) {
                for_each_bitpack_tile::<NT, IPT>(
                    self.data(),
                    self.starts(),
                    n,
                    stage,
                    #[inline(always)]
                    |tile, staged| {
                        let mut v = [0u32; IPT];
                        staged.load(&mut v);
                        let start = tile * tile_rows;
                        f(start, (n - start).min(tile_rows), &v.map(|x| x as i32));
                    },
                );
            } else {
                crate::ssb::for_each_loaded_tile::<Self, NT, IPT>(self, n, f);
            }
        }
    }

    #[inline(always)]
    unsafe fn stage<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        start: usize,
        valid: usize,
    ) {
        const V: usize = 4;
        const {
            assert!(Tile::<i32, NT, IPT>::V == V && 32 * V == BLOCK);
            assert!(IPT / V <= WARP_BLOCKS && K <= FLIGHT_COLS);
        };
        let groups = IPT / V;
        let lane = lane_id() as usize;
        let (c, g) = (lane / groups, lane % groups);
        sync_warp(); // every lane is done with the last tile's entries
        if c < K {
            // Lane (c, g): block g of this warp's part of the tile, for the flight's column
            // `cols[0].slot + c` (the flights' columns are consecutive slots).
            let col = Packed {
                slot: cols[0].slot + c,
                ..cols[0]
            };
            if col.kind() == column::GPU_FOR {
                let first = g * NT * V + thread_idx() / 32 * 32 * V;
                let live = first < valid;
                // SAFETY: the block holds rows of the tile when `live`; its header follows its
                // start.
                let (s, reference, widths) = unsafe {
                    let s = load_if(live, col.starts().add((start + first) / BLOCK));
                    let block = col.data().wrapping_add(s as usize);
                    (
                        s,
                        load_if(live, block),
                        load_if(live, block.wrapping_add(1)),
                    )
                };
                let at = Packed::head(col.slot, g);
                // SAFETY: the entry lies in this warp's part of the table.
                unsafe {
                    col.heads.write(at, s);
                    col.heads.write(at + 1, reference);
                    col.heads.write(at + 2, widths);
                }
            }
        }
        sync_warp();
    }

    #[inline(always)]
    unsafe fn load<const NT: usize, const IPT: usize>(
        self,
        start: usize,
        valid: usize,
    ) -> [i32; IPT] {
        let mut v = [0i32; IPT];
        // SAFETY (each arm): forwarded; the arrays are those of the kind.
        unsafe {
            match self.kind() {
                column::GPU_FOR => for_tile::<NT, IPT>(self, start, valid, &mut v),
                column::NSF2 => {
                    let mut w = [0u16; IPT];
                    let tile = self.data().cast::<u16>().add(start);
                    block_load_as::<u16, i32, NT, IPT>(tile, valid, None, &mut w);
                    v = w.map(|x| x as i32);
                }
                column::NSF1 => {
                    let mut w = [0u8; IPT];
                    let tile = self.data().cast::<u8>().add(start);
                    block_load_as::<u8, i32, NT, IPT>(tile, valid, None, &mut w);
                    v = w.map(|x| x as i32);
                }
                _ => v = crate::ssb::load::<NT, IPT>(self.data().cast(), start, valid),
            }
        }
        v
    }

    #[inline(always)]
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        let row = |s: usize| start + offsets[s] as usize;
        // SAFETY (each arm): loads only where live, of rows the caller vouches for.
        unsafe {
            match self.kind() {
                column::GPU_FOR => {
                    core::array::from_fn(|s| self.for_value::<NT>(offsets[s], live[s]) as i32)
                }
                column::NSF2 => core::array::from_fn(|s| {
                    load_if(live[s], self.data().cast::<u16>().wrapping_add(row(s))) as i32
                }),
                column::NSF1 => core::array::from_fn(|s| {
                    load_if(live[s], self.data().cast::<u8>().wrapping_add(row(s))) as i32
                }),
                _ => crate::ssb::gather(self.data().cast(), start, offsets, live),
            }
        }
    }
}

/// [`FactColumn::load`] of a GPU-FOR column: each of a thread's runs of `V` rows decoded by
/// [`Packed::for_run`].
///
/// # Safety
/// As for [`FactColumn::load`].
#[inline(always)]
unsafe fn for_tile<const NT: usize, const IPT: usize>(
    col: Packed,
    start: usize,
    valid: usize,
    v: &mut [i32; IPT],
) {
    const { assert!(MINIBLOCK % Tile::<i32, NT, IPT>::V == 0) };
    let t = crate::arch::thread_idx();
    for g in 0..IPT / Tile::<i32, NT, IPT>::V {
        match Tile::<i32, NT, IPT>::V {
            4 => for_tile_run::<NT, IPT, 4>(col, start, valid, t, g, v),
            2 => for_tile_run::<NT, IPT, 2>(col, start, valid, t, g, v),
            _ => for_tile_run::<NT, IPT, 1>(col, start, valid, t, g, v),
        }
    }
}

/// Run `g` of thread `t` of a GPU-FOR tile (the run's `V` equal to the tile's).
#[inline(always)]
fn for_tile_run<const NT: usize, const IPT: usize, const V: usize>(
    col: Packed,
    start: usize,
    valid: usize,
    t: usize,
    g: usize,
    v: &mut [i32; IPT],
) {
    let o = Tile::<i32, NT, IPT>::offset(t, g * V);
    let live = valid.saturating_sub(o).min(V) as u32;
    // SAFETY: the caller's column holds rows `start..start + valid`; `for_run` reads the
    // `live` of them.
    let run = unsafe { col.for_run::<V>((start + o) as u32, live) };
    for j in 0..V {
        v[g * V + j] = run[j] as i32;
    }
}
