//! The lineorder columns a probe reads, behind one trait: a plain `i32` column, or a
//! [`Packed`] one (None, NSF or GPU-FOR, thesis §5.6.5), so that a probe kernel is written
//! once and instantiated for both. A probe walks its tiles with [`FactColumn::for_each_tile`],
//! which hands it each tile of its first column, and reads every later column at its
//! survivors' rows only ([`FactColumn::gather`]).
//!
//! A GPU-FOR value is one or two words at a position its block's header gives (start,
//! reference, bit widths), so reading it alone is a chain of three dependent loads: block start,
//! header, words. The compressed walk takes the first two out of the chain: a table in shared
//! memory holds an entry per column and miniblock of the current tile (the miniblock's address,
//! the block's reference, the miniblock's width: the thesis's precomputed miniblock offsets,
//! §5.3.2), in the tile's order, so that a row's entry is its offset shifted. Each warp's
//! lanes fill the entries of the warp's blocks from registers at the start of the tile; the
//! headers of the next tile and the block starts of the one after are loaded into those
//! registers while the warp works on the current tile. A value, in the first
//! column's tile or at a survivor's row, is then one 16-byte shared load and its words, as in
//! a plain column. No barrier: every warp walks its own part of the tiles. A walk without a
//! GPU-FOR column has no table: it loads its first column as a plain probe does.
//!
//! Reading each column's kind at run time costs a branch per read and, in every kernel, the
//! code and registers of all kinds: the probes also come specialized for the kinds columns
//! take (`Packed<FIRST, REST>`), in which every test of a kind folds away.
use crate::arch::{
    Shared, block_idx, funnel_shr, grid_dim, lane_id, load_global_nc_if_u32, load_if,
    load_invariant_u32, load_invariant_u64, load_shared_v4_u32, low_mask, store_shared_v4_u32,
    sync_warp, thread_idx,
};
use crate::block::{Tile, block_load_as};
use crate::compress::format::{
    BLOCK, BLOCK_HEADER_WORDS, MINIBLOCK, MINIBLOCKS, miniblock_offset, width,
};
use crate::ssb::plan::{FLIGHT_COLS, HEAD_ENTRY_WORDS, PackedCol, WARP_BLOCKS, column};
#[cfg(doc)]
use crate::ssb::plan::{MAX_PROBE_ROWS, head_table_bytes};

/// Rows of a thread's run in a tile (`Tile::<i32, NT, IPT>::V`): 32 lanes x 4 rows is one
/// GPU-FOR block, so a warp's part of a tile is `IPT / 4` whole blocks.
const RUN: usize = 4;

/// A lineorder column a probe reads.
pub trait FactColumn: Copy {
    /// Whether the probe queues its survivors across tiles
    /// ([`crate::block::for_each_queued_survivor`]): its rounds then get absolute rows
    /// (`start` 0 in [`FactColumn::gather`]), which the column reads by row alone.
    const QUEUED: bool = false;

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
    /// are: every offset, live or not, is one of the warp's (a compressed column reads the
    /// warp's part of its header table at each, as `for_each_survivor`'s dead slots allow).
    ///
    /// # Safety
    /// The column is one of the walk's and holds the live rows.
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S];

    /// Rows `rows[s]` where `live[s]` (0 elsewhere), from anywhere in the column: no tile's
    /// header table.
    ///
    /// # Safety
    /// The column holds the live rows.
    unsafe fn gather_rows<const S: usize>(self, rows: &[u32; S], live: &[bool; S]) -> [i32; S];
}

impl FactColumn for *const i32 {
    #[inline(always)]
    unsafe fn for_each_tile<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        crate::ssb::for_each_loaded_tile::<NT, IPT>(
            n,
            // SAFETY: the walk loads tiles of the `n` rows the column holds.
            |start, valid| unsafe { crate::ssb::load::<NT, IPT>(cols[0], start, valid) },
            f,
        )
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

    #[inline(always)]
    unsafe fn gather_rows<const S: usize>(self, rows: &[u32; S], live: &[bool; S]) -> [i32; S] {
        // SAFETY: forwarded.
        unsafe { crate::ssb::gather(self, 0, rows, live) }
    }
}

/// A probe's column whose survivors are queued across tiles ([`FactColumn::QUEUED`]): the
/// walk keeps only the first column's tile (and, for GPU-FOR, only its header-table
/// entries), and every later column is read by row.
#[derive(Clone, Copy)]
pub struct Queued<C>(pub C);

impl<C: FactColumn> FactColumn for Queued<C> {
    const QUEUED: bool = true;

    #[inline(always)]
    unsafe fn for_each_tile<const NT: usize, const IPT: usize, const K: usize>(
        cols: &[Self; K],
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        // SAFETY: forwarded.
        unsafe { C::for_each_tile::<NT, IPT, 1>(&[cols[0].0], n, f) }
    }

    #[inline(always)]
    unsafe fn gather<const NT: usize, const IPT: usize, const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        // SAFETY: forwarded; the queued rounds pass rows with `start` 0.
        unsafe { self.0.gather_rows(&offsets.map(|o| start as u32 + o), live) }
    }

    #[inline(always)]
    unsafe fn gather_rows<const S: usize>(self, rows: &[u32; S], live: &[bool; S]) -> [i32; S] {
        // SAFETY: forwarded.
        unsafe { self.0.gather_rows(rows, live) }
    }
}

/// A lineorder column in one of the [`mod@column`] kinds: column `slot` of a flight's
/// [`PackedCol`]s in global memory, whose fields are read where they are used (held in
/// registers, a flight's six descriptors took 30 of them across the tile loop and the kernels
/// spilled), and the probe's header table.
///
/// `FIRST` and `REST` are the kinds of slot 0 and of the later slots when a kernel is
/// specialized for them ([`column::DYNAMIC`]: read from the descriptor at run time). Fixed,
/// every test of the kind folds away, with the code of the kinds the column is not.
#[derive(Clone, Copy)]
pub struct Packed<const FIRST: u32 = { column::DYNAMIC }, const REST: u32 = { column::DYNAMIC }> {
    cols: *const PackedCol,
    slot: usize,
    heads: Shared<u32>,
}

impl<const FIRST: u32, const REST: u32> Packed<FIRST, REST> {
    /// Column `slot` of `cols`, with `heads` (of [`head_table_bytes`]`(NT)` bytes) its
    /// probe's header table.
    ///
    /// # Safety
    /// `cols` holds at least `slot + 1` valid [`PackedCol`]s in global memory, unchanged
    /// during the kernel, whose arrays hold the columns, of kinds `FIRST` and `REST` where
    /// those are fixed.
    #[inline(always)]
    pub unsafe fn new(cols: *const PackedCol, slot: usize, heads: Shared<u32>) -> Self {
        Packed { cols, slot, heads }
    }

    /// Column `slot + c` of the same descriptors (a walk's columns are consecutive slots).
    #[inline(always)]
    fn at(self, c: usize) -> Self {
        Packed {
            slot: self.slot + c,
            ..self
        }
    }

    #[inline(always)]
    fn desc(self) -> *const PackedCol {
        self.cols.wrapping_add(self.slot)
    }

    #[inline(always)]
    fn kind(self) -> u32 {
        let fixed = if self.slot == 0 { FIRST } else { REST };
        if fixed != column::DYNAMIC {
            return fixed;
        }
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

    /// Shared-window address of this column's entry in the header table for the miniblock
    /// holding tile offset `offset`. A warp's part of a tile is whole miniblocks
    /// (`Tile::offset`: run `g` of thread `t` starts at `g * NT * RUN + t * RUN`), so a
    /// column's entries in offset order, one per 32 offsets, keep each warp's apart, and a
    /// survivor's is its offset shifted. Run `g` flips the entry's bit 2, so that a warp's
    /// entries of both runs, 16 bytes each, fall in different banks. The column's part of the
    /// table is added to the table's address, not to the entry's, so that it stays a constant
    /// in the shared load (one address per offset for all the columns a probe reads there).
    #[inline(always)]
    fn entry_addr<const NT: usize>(self, offset: u32) -> u32 {
        const ENTRY_BYTES: u32 = (HEAD_ENTRY_WORDS * 4) as u32;
        let column_bytes = NT / 32 * WARP_BLOCKS * MINIBLOCKS * ENTRY_BYTES as usize;
        let run = offset / (NT * RUN) as u32;
        let entry = (offset / MINIBLOCK as u32) ^ (run << 2);
        let column = self
            .heads
            .addr(0)
            .wrapping_add((self.slot * column_bytes) as u32);
        column.wrapping_add(entry * ENTRY_BYTES)
    }

    /// The GPU-FOR values at tile offsets `offset + j` (`j < V`, within one miniblock; for
    /// `V = RUN`, `offset` a multiple of `RUN`), the first `live` of them read (the others
    /// unspecified), from the header table.
    ///
    /// # Safety
    /// The walk's table holds the tile's entry of this column's miniblock of the rows, which
    /// the column holds where live.
    #[inline(always)]
    unsafe fn for_values<const NT: usize, const V: usize>(
        self,
        offset: u32,
        live: u32,
    ) -> [u32; V] {
        // SAFETY: the warp's own entry, written before the tile's work; a value's two words
        // start at its place in its miniblock: at most two words past the column's data (a
        // width-0 miniblock has no words), which the host allocates in device memory that the
        // kernel does not write.
        unsafe {
            let [lo, hi, reference, w] = load_shared_v4_u32(self.entry_addr::<NT>(offset));
            let words = ((hi as u64) << 32 | lo as u64) as *const u32;
            // The first value's bit in its miniblock's words; `funnel_shr` takes it modulo 32.
            let pos = offset % MINIBLOCK as u32 * w;
            let read = |j: usize| (j as u32) < live;
            if V == RUN && w == 16 {
                // A run of 16-bit values is two whole words, two values each: no shifts across
                // words (lo_orderdate's blocks, 16 bits wide, in every tile of flight 1).
                let word = words.wrapping_add((pos / 32) as usize);
                let (a, b) = (
                    load_global_nc_if_u32(read(0), word),
                    load_global_nc_if_u32(read(2), word.wrapping_add(1)),
                );
                let v = [a & 0xffff, a >> 16, b & 0xffff, b >> 16];
                return core::array::from_fn(|j| reference.wrapping_add(v[j % RUN]));
            }
            let mask = low_mask(w);
            core::array::from_fn(|j| {
                let pos = pos + j as u32 * w;
                let word = words.wrapping_add((pos / 32) as usize);
                // Neither load is predicated on the width or the bit position (predicates
                // measured slower, see the perf log): a value reads two words and masks away
                // what is not its own.
                let lo = load_global_nc_if_u32(read(j), word);
                let hi = load_global_nc_if_u32(read(j), word.wrapping_add(1));
                reference.wrapping_add(funnel_shr(lo, hi, pos) & mask)
            })
        }
    }

    /// The GPU-FOR value of row `row`, read where `live` (unspecified elsewhere) from its
    /// block's start and header: three dependent loads.
    ///
    /// # Safety
    /// The column holds the row where live.
    #[inline(always)]
    unsafe fn for_value_at(self, row: u32, live: bool) -> u32 {
        // SAFETY: the row's block start, header and words; a value's two words lie at most
        // two words past the column's data, which the host pads.
        unsafe {
            let s = load_global_nc_if_u32(live, self.starts().add((row / BLOCK as u32) as usize));
            let block = self.data().wrapping_add(s as usize);
            let reference = load_global_nc_if_u32(live, block);
            let widths = load_global_nc_if_u32(live, block.wrapping_add(1));
            let m = row as usize % BLOCK / MINIBLOCK;
            let w = width(widths, m);
            let at = BLOCK_HEADER_WORDS + miniblock_offset(widths, m) as usize;
            let pos = row % MINIBLOCK as u32 * w;
            let word = block.wrapping_add(at + (pos / 32) as usize);
            let lo = load_global_nc_if_u32(live, word);
            let hi = load_global_nc_if_u32(live, word.wrapping_add(1));
            reference.wrapping_add(funnel_shr(lo, hi, pos) & low_mask(w))
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
                        // A full tile's runs are whole: said outright, the loads are not
                        // predicated (the compiler does not know that `t < NT`).
                        let live = if valid == NT * IPT {
                            RUN
                        } else {
                            valid.saturating_sub(o).min(RUN)
                        } as u32;
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

/// A block's header as a lane holds it in registers: its start, reference and widths.
type Head = (u32, u32, u32);

impl<const FIRST: u32, const REST: u32> FactColumn for Packed<FIRST, REST> {
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
        // Without a GPU-FOR column the walk needs no header table. A plain first column keeps
        // its next tile in flight, as the plain probes do; a narrower one is loaded when its
        // tile begins (the perf log, 2026-12-04, has the dispatch's cost otherwise).
        let first = cols[0];
        if !(0..K).any(|c| first.at(c).kind() == column::GPU_FOR) {
            if first.kind() == column::PLAIN {
                let data = first.data().cast::<i32>();
                crate::ssb::for_each_loaded_tile::<NT, IPT>(
                    n,
                    // SAFETY: the walk loads tiles of the `n` rows the column holds.
                    |start, valid| unsafe { crate::ssb::load::<NT, IPT>(data, start, valid) },
                    #[inline(always)]
                    |start, valid, rows| f(start, valid, rows),
                );
                return;
            }
            let tile_rows = NT * IPT;
            let mut start = block_idx() * tile_rows;
            while start < n {
                let valid = tile_rows.min(n - start);
                // SAFETY: the tile holds rows of the column.
                unsafe {
                    if valid == tile_rows {
                        // A constant `valid`, as below.
                        f(start, tile_rows, &first.load::<NT, IPT>(start, tile_rows));
                    } else {
                        f(start, valid, &first.load::<NT, IPT>(start, valid));
                    }
                }
                start += grid_dim() * tile_rows;
            }
            return;
        }
        // Tile indices and rows in 32 bits (`n` is at most [`MAX_PROBE_ROWS`], which leaves room
        // for the tiles a grid past the last): as `usize` they take two registers each.
        let tile_rows = (NT * IPT) as u32;
        let n32 = n as u32;
        let (grid, mut tile) = (grid_dim() as u32, block_idx() as u32);
        // Lanes (c, g, part) keep the header of block g of this warp's part of each tile for
        // column c (the flights' columns are consecutive slots from `cols[0]`'s) and fill the
        // entries of its miniblocks `part * per_lane ..`: as many parts as the warp's lanes
        // allow, so that each lane writes few entries.
        let groups = IPT / RUN;
        let parts = match 32 / (K * groups) {
            0 => unreachable!(),
            1 => 1,
            2 | 3 => 2,
            _ => MINIBLOCKS,
        };
        let per_lane = MINIBLOCKS / parts;
        let lane = lane_id() as usize;
        let (c, g, part) = (lane / (groups * parts), lane / parts % groups, lane % parts);
        let col = cols[0].at(c.min(K - 1));
        let mine = c < K && col.kind() == column::GPU_FOR;
        let block_row = (g * NT * RUN + thread_idx() / 32 * 32 * RUN) as u32;
        // The block start of this lane's block of `tile`, and its header from that start.
        // SAFETY (both): read only where the block holds rows of the column, whose arrays are
        // device memory the kernel does not write.
        let start_of = |tile: u32| {
            let row = tile * tile_rows + block_row;
            unsafe {
                load_global_nc_if_u32(
                    mine && row < n32,
                    col.starts().add((row / BLOCK as u32) as usize),
                )
            }
        };
        let head_of = |tile: u32, s: u32| -> Head {
            let live = mine && tile * tile_rows + block_row < n32;
            let block = col.data().wrapping_add(s as usize);
            unsafe {
                (
                    s,
                    load_global_nc_if_u32(live, block),
                    load_global_nc_if_u32(live, block.wrapping_add(1)),
                )
            }
        };
        let mut head = head_of(tile, start_of(tile));
        let mut next_start = start_of(tile + grid);
        while tile * tile_rows < n32 {
            let next = tile + grid;
            // In flight during this tile: the next tile's headers (their starts came during
            // the last one) and the block starts of the tile after it.
            let next_head = head_of(next, next_start);
            next_start = start_of(next + grid);
            sync_warp(); // every lane is done with the last tile's entries
            if mine {
                let (s, reference, widths) = head;
                let block = col.data().wrapping_add(s as usize + BLOCK_HEADER_WORDS);
                for k in 0..per_lane {
                    let m = part * per_lane + k;
                    let words = block.wrapping_add(miniblock_offset(widths, m) as usize) as u64;
                    let entry = [
                        words as u32,
                        (words >> 32) as u32,
                        reference,
                        width(widths, m),
                    ];
                    let at = col.entry_addr::<NT>(block_row + (m * MINIBLOCK) as u32);
                    // SAFETY: the entry lies in this warp's part of the table, 16-byte aligned.
                    unsafe { store_shared_v4_u32(at, entry) };
                }
            }
            sync_warp();
            let start = (tile * tile_rows) as usize;
            let tile_rows = tile_rows as usize;
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

    #[inline(always)]
    unsafe fn gather_rows<const S: usize>(self, rows: &[u32; S], live: &[bool; S]) -> [i32; S] {
        // SAFETY (each arm): loads only where live, of rows the caller vouches for.
        unsafe {
            match self.kind() {
                column::GPU_FOR => {
                    core::array::from_fn(|s| self.for_value_at(rows[s], live[s]) as i32)
                }
                column::NSF2 => core::array::from_fn(|s| {
                    load_if(
                        live[s],
                        self.data().cast::<u16>().wrapping_add(rows[s] as usize),
                    ) as i32
                }),
                column::NSF1 => core::array::from_fn(|s| {
                    load_if(
                        live[s],
                        self.data().cast::<u8>().wrapping_add(rows[s] as usize),
                    ) as i32
                }),
                _ => crate::ssb::gather(self.data().cast(), 0, rows, live),
            }
        }
    }
}
