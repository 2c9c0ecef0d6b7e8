//! The lineorder columns a probe reads, behind one trait: a plain `i32` column, or a
//! [`Packed`] one (None, NSF or GPU-FOR, thesis §5.6.5), so that a probe kernel is written
//! once and instantiated for both. A probe walks its tiles with [`FactColumn::for_each_tile`],
//! which hands it each tile of its first column, and reads every later column at its
//! survivors' rows only ([`FactColumn::gather`]).
//!
//! A GPU-FOR value is one or two words at a position its block's header gives (start,
//! reference, bit widths), so reading it alone is a chain of three dependent loads: block start,
//! header, words. The compressed walk takes the first two out of the chain: each warp keeps a
//! table in shared memory of the headers of its blocks of the current tile, one entry per
//! column and block, which its lanes fill from registers at the start of the tile; the headers
//! of the next tile and the block starts of the one after are loaded into those registers
//! while the warp works on the current tile. A value, in the first column's tile or at a
//! survivor's row, is then one load, as in a plain column. No barrier: every warp walks its own
//! part of the tiles.
use crate::arch::{
    Shared, block_idx, funnel_shr, grid_dim, lane_id, load_if, load_invariant_u32,
    load_invariant_u64, low_mask, sync_warp, thread_idx,
};
use crate::block::{Tile, block_load_as};
use crate::compress::format::{BLOCK, BLOCK_HEADER_WORDS, MINIBLOCK, miniblock_offset, width};
use crate::ssb::plan::{FLIGHT_COLS, PackedCol, column};

/// Rows of a thread's run in a tile (`Tile::<i32, NT, IPT>::V`): 32 lanes x 4 rows is one
/// GPU-FOR block, so a warp's part of a tile is `IPT / 4` whole blocks.
const RUN: usize = 4;
/// Most GPU-FOR blocks a warp's part of a tile holds (`IPT / RUN`).
pub const WARP_BLOCKS: usize = 3;
/// Words of a block's entry in the header table: start, reference, bit widths.
const HEAD_WORDS: usize = 3;
/// Shared words of the header table of a compressed probe of `nt` threads.
pub const fn head_table_words(nt: usize) -> usize {
    nt / 32 * FLIGHT_COLS * WARP_BLOCKS * HEAD_WORDS
}

/// A lineorder column a probe reads.
pub trait FactColumn: Copy {
    /// Calls `f(start, valid, rows)` for every tile of `NT * IPT` rows of the `n` this block
    /// owns (tiles `block, block + grid, ...`), `rows` the tile of `cols[0]` in `block_load`'s
    /// places (`Tile::<i32, NT, IPT>::offset`; 0 past `valid`); `cols` are the probe's
    /// columns, which [`FactColumn::gather`] then reads at the tile's rows.
    ///
    /// # Safety
    /// The columns hold `n` rows (plain ones 16-byte aligned).
    unsafe fn for_each_tile<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    );

    /// Rows `start + offsets[s]` where `live[s]` (0 elsewhere) of the tile at `start`, from
    /// within [`FactColumn::for_each_tile`]'s `f` for that tile, by the warp whose rows they
    /// are.
    ///
    /// # Safety
    /// The column is one of the walk's and holds the live rows.
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S];
}

impl FactColumn for *const i32 {
    #[inline(always)]
    unsafe fn for_each_tile<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        // SAFETY: forwarded.
        unsafe { crate::ssb::for_each_loaded_tile::<NT, IPT>(cols[0], n, f) }
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

/// A lineorder column in one of the [`mod@column`] kinds: column `slot` of a flight's
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

    /// Index in the header table of block `g` of this warp's part of a tile, for `slot`.
    #[inline(always)]
    fn head(slot: usize, g: usize) -> usize {
        ((thread_idx() / 32 * FLIGHT_COLS + slot) * WARP_BLOCKS + g) * HEAD_WORDS
    }

    /// The GPU-FOR values at tile offsets `offset + j` (`j < V`, one miniblock), the first
    /// `live` of them read (the others 0), from the header table.
    ///
    /// # Safety
    /// The walk's table holds the tile's entry of this column's block of the rows, which the
    /// column holds where live.
    #[inline(always)]
    unsafe fn for_values<const NT: usize, const V: usize>(
        self,
        offset: u32,
        live: u32,
    ) -> [u32; V] {
        let at = Packed::head(self.slot, offset as usize / (NT * RUN));
        // SAFETY: the warp's own entry, written before the tile's work; a value's two words
        // start at its place in its block: at most two words past the column's data (a
        // width-0 miniblock has no words), which the host allocates.
        unsafe {
            let (s, reference, widths) = (
                self.heads.read(at),
                self.heads.read(at + 1),
                self.heads.read(at + 2),
            );
            let i = offset % BLOCK as u32;
            let m = (i / MINIBLOCK as u32) as usize;
            let w = width(widths, m);
            let mask = low_mask(w);
            let first = (BLOCK_HEADER_WORDS as u32 + miniblock_offset(widths, m)) * 32
                + (i % MINIBLOCK as u32) * w;
            let block = self.data().wrapping_add(s as usize);
            core::array::from_fn(|j| {
                let pos = first + j as u32 * w;
                let word = block.wrapping_add((pos / 32) as usize);
                let live = (j as u32) < live;
                // Neither load is predicated on the width or the bit position (predicates
                // measured slower, see the perf log): a value reads two words and masks away
                // what is not its own.
                let lo = load_if(live, word);
                let hi = load_if(live, word.wrapping_add(1));
                reference.wrapping_add(funnel_shr(lo, hi, pos) & mask)
            })
        }
    }

    /// The tile of rows `start..start + valid` in `block_load`'s places.
    ///
    /// # Safety
    /// The column holds the rows; for GPU-FOR, the table holds the tile's entries.
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
                column::GPU_FOR => {
                    let t = thread_idx();
                    for g in 0..IPT / RUN {
                        let o = Tile::<i32, NT, IPT>::offset(t, g * RUN);
                        let live = valid.saturating_sub(o).min(RUN) as u32;
                        let run = self.for_values::<NT, RUN>(o as u32, live);
                        for j in 0..RUN {
                            v[g * RUN + j] = run[j] as i32;
                        }
                    }
                }
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
}

/// One lane's entry of the header table in registers: a block's start, reference and widths.
type Head = (u32, u32, u32);

impl FactColumn for Packed {
    #[inline(always)]
    unsafe fn for_each_tile<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        n: usize,
        mut f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        const {
            assert!(Tile::<i32, NT, IPT>::V == RUN && 32 * RUN == BLOCK);
            assert!(IPT / RUN <= WARP_BLOCKS && K <= FLIGHT_COLS && K * (IPT / RUN) <= 32);
        };
        let tile_rows = NT * IPT;
        let (grid, mut tile) = (grid_dim(), block_idx());
        // Lane (c, g) keeps the entry of block g of this warp's part of each tile for column
        // c, the flights' columns being consecutive slots from `cols[0]`'s.
        let groups = IPT / RUN;
        let lane = lane_id() as usize;
        let (c, g) = (lane / groups, lane % groups);
        let col = Packed {
            slot: cols[0].slot + c.min(K - 1),
            ..cols[0]
        };
        let mine = c < K && col.kind() == column::GPU_FOR;
        let block_row = g * NT * RUN + thread_idx() / 32 * 32 * RUN;
        // The block start of this lane's block of `tile`, and its header from that start.
        // SAFETY (both): read only where the block holds rows of the column.
        let start_of = |tile: usize| {
            let row = tile * tile_rows + block_row;
            unsafe { load_if(mine && row < n, col.starts().add(row / BLOCK)) }
        };
        let head_of = |tile: usize, s: u32| -> Head {
            let live = mine && tile * tile_rows + block_row < n;
            let block = col.data().wrapping_add(s as usize);
            unsafe {
                (
                    s,
                    load_if(live, block),
                    load_if(live, block.wrapping_add(1)),
                )
            }
        };
        let mut head = head_of(tile, start_of(tile));
        let mut next_start = start_of(tile + grid);
        while tile * tile_rows < n {
            let next = tile + grid;
            // In flight during this tile: the next tile's headers (their starts came during
            // the last one) and the block starts of the tile after it.
            let next_head = head_of(next, next_start);
            next_start = start_of(next + grid);
            sync_warp(); // every lane is done with the last tile's entries
            if mine {
                let at = Packed::head(col.slot, g);
                // SAFETY: the entry lies in this warp's part of the table.
                unsafe {
                    col.heads.write(at, head.0);
                    col.heads.write(at + 1, head.1);
                    col.heads.write(at + 2, head.2);
                }
            }
            sync_warp();
            let start = tile * tile_rows;
            // SAFETY: the tile holds rows; the table holds its entries.
            unsafe {
                if n - start >= tile_rows {
                    // A constant `valid`: the bounds tests of the inlined body fold away.
                    let rows = cols[0].load::<NT, IPT>(start, tile_rows);
                    f(start, tile_rows, &rows);
                } else {
                    let rows = cols[0].load::<NT, IPT>(start, n - start);
                    f(start, n - start, &rows);
                }
            }
            head = next_head;
            tile = next;
        }
    }

    #[inline(always)]
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        let row = |s: usize| start + offsets[s] as usize;
        // SAFETY (each arm): loads only where live, of rows the caller vouches for; the
        // table holds the tile's entries.
        unsafe {
            match self.kind() {
                column::GPU_FOR => core::array::from_fn(|s| {
                    self.for_values::<NT, 1>(offsets[s], live[s] as u32)[0] as i32
                }),
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
