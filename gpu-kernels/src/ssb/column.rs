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
//! GPU-FOR column has no table: it loads its first column as a plain probe does. A row read
//! outside the table, by a round of queued rows, pays the whole chain; a deferred tail loads
//! its columns' block starts and headers ahead of its joins ([`FactColumn::place_rows`]), so
//! that only the words wait for the joins' flags.
//!
//! A first column's next tile is in flight while the warp works on the current one, raw: an
//! NSF2 tile as two words a run ([`crate::ssb::for_each_fetched_tile`]); a GPU-FOR first
//! column walked alone (the queued probes, whose later columns are read by row) as the words
//! its runs span, with the table refilled for the next tile once the current one is decoded.
//! A value extracted where its load is issued waits there for DRAM (the perf log of
//! 2026-12-05 has the profiles).
//!
//! Reading each column's kind at run time costs a branch per read and, in every kernel, the
//! code and registers of all kinds: the probes also come specialized for the kinds columns
//! take (`Packed<KINDS>`, a kind per slot), in which every test of a kind folds away.
use crate::arch::{
    Shared, block_idx, funnel_shr, grid_dim, lane_id, load_global_nc_if_u32,
    load_global_nc_if_v4_u32, load_global_nc_v2_u32, load_if, load_shared_v4_u32, low_mask,
    prefetch_l2_if, select_u32, store_shared_v4_u32, sync_warp, thread_idx,
};
use crate::block::{Tile, block_load_as};
use crate::compress::format::{
    BLOCK, BLOCK_HEADER_WORDS, MINIBLOCK, MINIBLOCKS, miniblock_offset, width,
};
use crate::ssb::plan::{
    FLIGHT_COLS, HEAD_ENTRY_WORDS, INDEX_WORDS, PackedCol, PackedCols, WARP_BLOCKS, column,
};
#[cfg(doc)]
use crate::ssb::plan::{FOR_PAD_WORDS, MAX_PROBE_ROWS, head_table_bytes};

/// Rows of a thread's run in a tile (`Tile::<i32, NT, IPT>::V`): 32 lanes x 4 rows is one
/// GPU-FOR block, so a warp's part of a tile is `IPT / 4` whole blocks.
const RUN: usize = 4;

/// Most words a run of four GPU-FOR values spans (four 32-bit values from a bit past a word's
/// first).
const WINDOW: usize = 5;

/// A thread's runs of a GPU-FOR tile as loaded, undecoded: [`WINDOW`] words per run.
type Window = [[u32; WINDOW]; WARP_BLOCKS];

/// A lineorder column a probe reads.
pub trait FactColumn: Copy {
    /// Whether the probe queues its survivors across tiles
    /// ([`crate::block::for_each_queued_survivor`]): its rounds then get absolute rows
    /// (`start` 0 in [`FactColumn::gather`]), which the column reads by row alone.
    const QUEUED: bool = false;

    /// Whether a probe reads its value column at every live row of a round before its last
    /// join has flagged them: where a value is a chain of dependent loads (GPU-FOR), the
    /// join's chain then hides it; where it is one load (a plain column), the bytes of the
    /// rows the join drops cost the plain probes more than the wait (the perf log,
    /// 2026-12-06, sixth session).
    const READ_AHEAD: bool = false;

    /// Calls `f(start, valid, rows)` for every tile of `NT * IPT` rows of the `n` this block
    /// owns (tiles `block, block + grid, ...`), `rows` the tile of `cols[0]` in `block_load`'s
    /// places (`Tile::<i32, NT, IPT>::offset`; 0 past `valid`); `cols` are the probe's
    /// columns, which [`FactColumn::gather`] then reads at the tile's rows. A compressed walk
    /// brings the next tile's GPU-FOR blocks of `cols[1..=AHEAD]` into L2 while `f` works on
    /// the current tile: for the columns `f` reads at most rows of, whose values' words it
    /// then finds there.
    ///
    /// # Safety
    /// The columns hold `n` rows (plain ones 16-byte aligned).
    unsafe fn for_each_tile<const NT: usize, const IPT: usize, const K: usize, const AHEAD: usize>(
        cols: &[Self; K],
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    );

    /// [`FactColumn::for_each_tile`] of this column alone, for a walk whose `f` reads its other
    /// columns by row ([`FactColumn::gather_rows`], as [`Queued`] columns do): the walk keeps
    /// no header-table entries for them, so a compressed column may keep its own next tile in
    /// flight.
    ///
    /// # Safety
    /// As for [`FactColumn::for_each_tile`].
    #[inline(always)]
    unsafe fn for_each_tile_alone<const NT: usize, const IPT: usize>(
        self,
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        // SAFETY: forwarded.
        unsafe { Self::for_each_tile::<NT, IPT, 1, 0>(&[self], n, f) }
    }

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

    /// Where rows `rows[s]` lie, found ahead of reading them ([`FactColumn::gather_placed`]).
    type Place: Copy;

    /// The places of rows `rows[s]` where `live[s]`.
    ///
    /// # Safety
    /// The column holds the live rows.
    unsafe fn place_rows<const S: usize>(
        self,
        rows: &[u32; S],
        live: &[bool; S],
    ) -> [Self::Place; S];

    /// [`FactColumn::gather_rows`] at places found by [`FactColumn::place_rows`].
    ///
    /// # Safety
    /// As for [`FactColumn::gather_rows`]; `places` are the rows', live where `live` is.
    unsafe fn gather_placed<const S: usize>(
        self,
        places: &[Self::Place; S],
        rows: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S];
}

impl FactColumn for *const i32 {
    #[inline(always)]
    unsafe fn for_each_tile<
        const NT: usize,
        const IPT: usize,
        const K: usize,
        const AHEAD: usize,
    >(
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

    type Place = ();

    #[inline(always)]
    unsafe fn place_rows<const S: usize>(self, _: &[u32; S], _: &[bool; S]) -> [(); S] {
        [(); S]
    }

    #[inline(always)]
    unsafe fn gather_placed<const S: usize>(
        self,
        _: &[(); S],
        rows: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        // SAFETY: forwarded.
        unsafe { self.gather_rows(rows, live) }
    }
}

/// A probe's column whose survivors are queued across tiles ([`FactColumn::QUEUED`]): the
/// walk keeps only the first column's tile (and, for GPU-FOR, only its header-table
/// entries), and every later column is read by row.
#[derive(Clone, Copy)]
pub struct Queued<C>(pub C);

impl<C: FactColumn> FactColumn for Queued<C> {
    const QUEUED: bool = true;
    const READ_AHEAD: bool = C::READ_AHEAD;

    #[inline(always)]
    unsafe fn for_each_tile<
        const NT: usize,
        const IPT: usize,
        const K: usize,
        const AHEAD: usize,
    >(
        cols: &[Self; K],
        n: usize,
        f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        // SAFETY: forwarded.
        unsafe { cols[0].0.for_each_tile_alone::<NT, IPT>(n, f) }
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

    /// Nothing placed: a queued probe runs its round's chain at once over full rounds, where
    /// placing would load for every row of the round, most of which the joins drop, and its
    /// time is its scan's, not the chain's.
    type Place = ();

    #[inline(always)]
    unsafe fn place_rows<const S: usize>(self, _: &[u32; S], _: &[bool; S]) -> [(); S] {
        [(); S]
    }

    #[inline(always)]
    unsafe fn gather_placed<const S: usize>(
        self,
        _: &[(); S],
        rows: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        // SAFETY: forwarded.
        unsafe { self.0.gather_rows(rows, live) }
    }
}

/// A lineorder column in one of the [`mod@column`] kinds: column `slot` of a flight's
/// [`PackedCols`], a kernel parameter, whose fields instructions read as constant operands
/// where they are used (held in registers, a flight's six descriptors took 30 of them across
/// the tile loop and the kernels spilled; read from global memory, each tile waited on a
/// load before its first address), and the probe's header table.
///
/// `KINDS` holds the slots' kinds where a kernel is specialized for them ([`column::kinds`];
/// [`column::DYNAMIC`]: read from the descriptor at run time, as every slot is in the default,
/// `u32::MAX`). Fixed, every test of the kind folds away, with the code of the kinds the
/// column is not.
#[derive(Clone, Copy)]
pub struct Packed<const KINDS: u32 = { u32::MAX }> {
    col: PackedCol,
    slot: usize,
    heads: Shared<u32>,
}

impl<const KINDS: u32> Packed<KINDS> {
    /// The first slot's kind where fixed.
    const FIRST: u32 = column::kind_of(KINDS, 0);

    /// Column `slot` (a constant where inlined) of `cols`, with `heads` (of
    /// [`head_table_bytes`]`(NT)` bytes) its probe's header table.
    ///
    /// # Safety
    /// `cols.cols[slot]` is a valid [`PackedCol`] whose arrays hold the column, of the kind
    /// `KINDS` fixes for the slot, in device memory the kernel does not write.
    #[inline(always)]
    pub unsafe fn new(cols: &PackedCols, slot: usize, heads: Shared<u32>) -> Self {
        Packed {
            col: cols.cols[slot],
            slot,
            heads,
        }
    }

    #[inline(always)]
    fn kind(self) -> u32 {
        let fixed = column::kind_of(KINDS, self.slot);
        if fixed != column::DYNAMIC {
            return fixed;
        }
        self.col.kind
    }

    /// NSF's reference ([`PackedCol::reference`]).
    #[inline(always)]
    fn reference(self) -> u32 {
        self.col.reference
    }

    #[inline(always)]
    fn data(self) -> *const u32 {
        self.col.data as *const u32
    }

    #[inline(always)]
    fn index(self) -> *const u32 {
        self.col.index as *const u32
    }

    #[inline(always)]
    fn starts(self) -> *const u32 {
        self.col.starts as *const u32
    }

    /// The address of GPU-FOR block `b`'s entry in the column's index.
    #[inline(always)]
    fn entry(self, b: u32) -> *const u32 {
        self.index().wrapping_add(b as usize * INDEX_WORDS)
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
                let v = halves(a, b);
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
    /// block's index entry: two dependent loads.
    ///
    /// # Safety
    /// The column holds the row where live.
    #[inline(always)]
    unsafe fn for_value_at(self, row: u32, live: bool) -> u32 {
        // SAFETY: forwarded.
        unsafe { self.for_value_in(self.for_place_at(row, live), row, live) }
    }

    /// The index entry of row `row`'s GPU-FOR block, its start, widths and reference, read
    /// where `live`.
    ///
    /// # Safety
    /// The column holds the row where live.
    #[inline(always)]
    unsafe fn for_place_at(self, row: u32, live: bool) -> RowPlace {
        // SAFETY: the entry of a block of the column, 16-byte aligned (the host's allocation).
        let [s, widths, reference, _] =
            unsafe { load_global_nc_if_v4_u32(live, self.entry(row / BLOCK as u32)) };
        (s, widths, reference)
    }

    /// The GPU-FOR value of row `row` in its block `place` ([`Packed::for_place_at`]), read
    /// where `live`: its block's reference and its words, side by side.
    ///
    /// # Safety
    /// The column holds the row where live, and `place` is its block's there.
    #[inline(always)]
    unsafe fn for_value_in(self, (s, widths, reference): RowPlace, row: u32, live: bool) -> u32 {
        let m = row as usize % BLOCK / MINIBLOCK;
        let w = width(widths, m);
        let at = BLOCK_HEADER_WORDS + miniblock_offset(widths, m) as usize;
        let pos = row % MINIBLOCK as u32 * w;
        let block = self.data().wrapping_add(s as usize);
        let word = block.wrapping_add(at + (pos / 32) as usize);
        // SAFETY: a value's two words, which lie at most two words past the column's data,
        // which the host pads.
        let (lo, hi) = unsafe {
            (
                load_global_nc_if_u32(live, word),
                load_global_nc_if_u32(live, word.wrapping_add(1)),
            )
        };
        reference.wrapping_add(funnel_shr(lo, hi, pos) & low_mask(w))
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
                    let r = self.reference();
                    v = w.map(|x| r.wrapping_add(x as u32) as i32);
                }
                column::NSF1 => {
                    let mut w = [0u8; IPT];
                    let tile = self.data().cast::<u8>().add(start);
                    block_load_as::<u8, i32, NT, IPT>(tile, valid, None, &mut w);
                    let r = self.reference();
                    v = w.map(|x| r.wrapping_add(x as u32) as i32);
                }
                _ => v = crate::ssb::load::<NT, IPT>(self.data().cast(), start, valid),
            }
        }
        v
    }

    /// The words of a thread's runs of the full NSF2 tile at `start`, two per run, undecoded
    /// ([`decode_nsf2`]), in the first `IPT / 2` places.
    ///
    /// # Safety
    /// The column is NSF2 and holds the tile's rows.
    #[inline(always)]
    unsafe fn fetch_nsf2<const NT: usize, const IPT: usize>(self, start: usize) -> [u32; IPT] {
        let t = thread_idx();
        let mut raw = [0u32; IPT];
        for g in 0..IPT / RUN {
            let row = start + Tile::<i32, NT, IPT>::offset(t, g * RUN);
            let at = self.data().cast::<u16>().wrapping_add(row).cast::<u32>();
            // SAFETY: a run's four values, 8-byte aligned (runs start at multiples of four rows
            // of the aligned column).
            [raw[2 * g], raw[2 * g + 1]] = unsafe { load_global_nc_v2_u32(at) };
        }
        raw
    }

    /// The walk of a GPU-FOR column alone ([`FactColumn::for_each_tile_alone`]). Its entries
    /// are the table's only ones, and a tile's values are in registers once decoded, so the
    /// table can take the next tile's entries while `f` works on the current tile: the next
    /// tile's words are loaded then, raw ([`Packed::fetch_for`]), as a plain walk loads its
    /// next tile, and decoded when their turn comes. Headers come a tile ahead of the words,
    /// block starts a tile ahead of the headers.
    ///
    /// # Safety
    /// The column is GPU-FOR, holds `n` rows, and its table holds the walk's entries only.
    #[inline(always)]
    unsafe fn for_each_for_tile_ahead<const NT: usize, const IPT: usize>(
        self,
        n: usize,
        mut f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        let tile_rows = (NT * IPT) as u32;
        let n32 = n as u32;
        let full_tiles = n32 / tile_rows;
        let valid = |tile: u32| match tile.cmp(&full_tiles) {
            core::cmp::Ordering::Less => tile_rows,
            core::cmp::Ordering::Equal => n32 % tile_rows,
            core::cmp::Ordering::Greater => 0,
        };
        let (grid, mut tile) = (grid_dim() as u32, block_idx() as u32);
        let fill = HeadFill::new::<NT, IPT, 1, 0>(&[self], n32);
        // SAFETY (each fill and fetch): the heads of the tile whose entries are filled, and its
        // words read from those entries.
        unsafe {
            fill.fill::<NT>(fill.head(tile, fill.start(tile)));
            let mut raw = self.fetch_for::<NT, IPT>(valid(tile));
            // This walk looks three grids ahead: tiles past the last as the one after it.
            let ahead = |tile: u32| tile.min(fill.tiles);
            let mut next_head = fill.head(ahead(tile + grid), fill.start(ahead(tile + grid)));
            let mut next_start = fill.start(ahead(tile + 2 * grid));
            while tile < fill.tiles {
                let rows = self.decode_for::<NT, IPT>(raw);
                let next = tile + grid;
                fill.fill::<NT>(next_head);
                next_head = fill.head(ahead(next + grid), next_start);
                next_start = fill.start(ahead(next + 2 * grid));
                raw = self.fetch_for::<NT, IPT>(valid(next));
                let start = (tile * tile_rows) as usize;
                if tile < full_tiles {
                    // A constant `valid`: the bounds tests of the inlined body fold away.
                    f(start, NT * IPT, &rows);
                } else {
                    f(start, valid(tile) as usize, &rows);
                }
                tile = next;
            }
        }
    }

    /// The words holding a thread's runs of the tile whose entries the table holds, `valid`
    /// of its rows: per run, the words its four values span from the one of its first bit
    /// (at most [`WINDOW`]); a word no live value needs is not read (0).
    ///
    /// # Safety
    /// The table holds the tile's entries of this column, which holds the live rows.
    #[inline(always)]
    unsafe fn fetch_for<const NT: usize, const IPT: usize>(self, valid: u32) -> Window {
        let t = thread_idx();
        let mut raw = [[0u32; WINDOW]; WARP_BLOCKS];
        for (g, raw) in raw.iter_mut().enumerate().take(IPT / RUN) {
            let o = Tile::<i32, NT, IPT>::offset(t, g * RUN) as u32;
            let live = valid.saturating_sub(o).min(RUN as u32);
            // SAFETY: the warp's own entry, written before; the words read hold live values'
            // bits, within their miniblock's data.
            unsafe {
                let [lo, hi, _, w] = load_shared_v4_u32(self.entry_addr::<NT>(o));
                let pos = o % MINIBLOCK as u32 * w;
                let words = ((hi as u64) << 32 | lo as u64) as *const u32;
                let first = words.wrapping_add((pos / 32) as usize);
                let bits = pos % 32 + live * w;
                for (k, word) in raw.iter_mut().enumerate() {
                    *word = load_global_nc_if_u32((k as u32) * 32 < bits, first.wrapping_add(k));
                }
            }
        }
        raw
    }

    /// The rows of a thread's runs from [`Packed::fetch_for`]'s words, with the references and
    /// widths of the entries the table still holds (the table is refilled after).
    ///
    /// # Safety
    /// The table holds the entries `raw` was fetched with.
    #[inline(always)]
    unsafe fn decode_for<const NT: usize, const IPT: usize>(self, raw: Window) -> [i32; IPT] {
        let t = thread_idx();
        let mut v = [0i32; IPT];
        for (g, raw) in raw.iter().enumerate().take(IPT / RUN) {
            let o = Tile::<i32, NT, IPT>::offset(t, g * RUN) as u32;
            // SAFETY: the warp's own entry.
            let [_, _, reference, w] = unsafe { load_shared_v4_u32(self.entry_addr::<NT>(o)) };
            let run: [u32; RUN] = if w == 16 {
                // Two whole words, two values each (lo_orderdate's blocks, as in `for_values`):
                // a run of 16-bit values starts at a word.
                halves(raw[0], raw[1])
            } else {
                let (bit, mask) = (o % MINIBLOCK as u32 * w % 32, low_mask(w));
                let mut run = [0u32; RUN];
                for (j, value) in run.iter_mut().enumerate() {
                    // Value `j` starts in word `b / 32 <= j` (widths are at most 32).
                    let b = bit + j as u32 * w;
                    let (mut lo, mut hi) = (raw[0], raw[1]);
                    for k in 1..RUN {
                        if k <= j {
                            let here = b / 32 == k as u32;
                            (lo, hi) = (
                                select_u32(here, raw[k], lo),
                                select_u32(here, raw[k + 1], hi),
                            );
                        }
                    }
                    *value = funnel_shr(lo, hi, b) & mask;
                }
                run
            };
            for j in 0..RUN {
                v[g * RUN + j] = reference.wrapping_add(run[j]) as i32;
            }
        }
        v
    }
}

/// A block's header as a lane holds it in registers: its start, widths and reference, in its
/// index entry's order, though a walk reads the last two from the block ([`HeadFill::head`]).
type Head = (u32, u32, u32);

/// A GPU-FOR block as a value read by row finds it: its start, widths word and reference,
/// its index entry ([`PackedCol::index`]).
type RowPlace = (u32, u32, u32);

/// A lane's share of a compressed walk's header table. Lanes `(c, g, part)` keep the header
/// of block `g` of their warp's part of each tile for column `c` of the walk (a flight's
/// columns are consecutive slots from the first's) and fill the entries of its miniblocks
/// `part * per_lane ..`: as many parts as the warp's lanes allow, so that each lane writes few
/// entries. A walk loads a tile's block starts two tiles ahead ([`PackedCol::starts`]) and
/// its headers one tile ahead, from the blocks, whose words it reads next ([`HeadFill::start`],
/// [`HeadFill::head`]), so that neither is in the chain of a value.
#[derive(Clone, Copy)]
struct HeadFill<const KINDS: u32> {
    col: Packed<KINDS>,
    /// Whether the lane fills entries: its column is one of the walk's and GPU-FOR.
    mine: bool,
    /// Whether the lane also brings its line of its block into L2 a tile ahead.
    ahead: bool,
    /// The tile offset of the lane's block.
    block_row: u32,
    /// The lane's first miniblock and how many it fills.
    first: usize,
    per_lane: usize,
    /// Tiles holding rows, rows per tile, and rows.
    tiles: u32,
    tile_rows: u32,
    n: u32,
}

impl<const KINDS: u32> HeadFill<KINDS> {
    /// The lane's share for a walk of `K` columns from `first`, in tiles of `NT * IPT` of `n`
    /// rows, which brings the blocks of columns `1..=AHEAD` into L2 a tile ahead.
    #[inline(always)]
    fn new<const NT: usize, const IPT: usize, const K: usize, const AHEAD: usize>(
        cols: &[Packed<KINDS>; K],
        n: u32,
    ) -> Self {
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
        // The lane's column among the GPU-FOR ones (the others' lanes fill nothing), by a
        // select per such column: where the kinds are fixed, a walk with one GPU-FOR column
        // keeps its fields as constants of the launch, not in registers.
        let (mut col, mut mine, mut pf) = (cols[K - 1], false, false);
        for (i, &other) in cols.iter().enumerate() {
            if other.kind() == column::GPU_FOR && c == i {
                // `pf` a constant per column: equal to `mine` where every GPU-FOR column of
                // the walk is brought ahead, it takes no register of its own.
                (col, mine, pf) = (other, true, (1..=AHEAD).contains(&i));
            }
        }
        let tile_rows = (NT * IPT) as u32;
        HeadFill {
            col,
            mine,
            // A line a lane: four lines cover a block of up to 384 bytes wherever it starts.
            ahead: pf && per_lane == 1,
            block_row: (g * NT * RUN + thread_idx() / 32 * 32 * RUN) as u32,
            first: part * per_lane,
            per_lane,
            tiles: n.div_ceil(tile_rows),
            tile_rows,
            n,
        }
    }

    /// Whether the lane's block of `tile` holds rows (`tile` at most a grid past the last
    /// tile: [`MAX_PROBE_ROWS`] leaves room for its rows in 32 bits).
    #[inline(always)]
    fn live(self, tile: u32) -> bool {
        self.mine && tile * self.tile_rows + self.block_row < self.n
    }

    /// The block start of the lane's block of `tile`.
    #[inline(always)]
    fn start(self, tile: u32) -> u32 {
        let row = tile * self.tile_rows + self.block_row;
        let at = self.col.starts().wrapping_add(row as usize / BLOCK);
        // SAFETY: read only where the block holds rows of the column, whose arrays are device
        // memory the kernel does not write.
        unsafe { load_global_nc_if_u32(self.live(tile), at) }
    }

    /// The header of the lane's block of `tile`, which starts at word `s`: read from the
    /// block, whose words the walk reads next.
    #[inline(always)]
    fn head(self, tile: u32, s: u32) -> Head {
        let live = self.live(tile);
        let block = self.col.data().wrapping_add(s as usize);
        // SAFETY: as for `start`.
        unsafe {
            (
                s,
                load_global_nc_if_u32(live, block.wrapping_add(1)),
                load_global_nc_if_u32(live, block),
            )
        }
    }

    /// Brings the lane's line of its block of `tile`, which starts at word `s`, into L2: line
    /// `part` from the one holding the start. The blocks of a tile lie side by side, so a line
    /// past a block's end holds the next one's words, and [`FOR_PAD_WORDS`] past the column's
    /// last block keep every line within its allocation.
    #[inline(always)]
    fn prefetch(self, tile: u32, s: u32) {
        let block = self.col.data().wrapping_add(s as usize) as usize;
        let line = (block & !127) + self.first * 128;
        prefetch_l2_if(self.ahead && self.live(tile), line as *const u32);
    }

    /// Writes the lane's entries of the tile whose headers the warp's lanes hold, between two
    /// warp barriers: every lane is done with the last tile's entries before, and every entry
    /// is there after.
    ///
    /// # Safety
    /// Called by every lane of the warp, with the `head` of the same tile; the table is the
    /// walk's, of [`head_table_bytes`]`(NT)` bytes.
    #[inline(always)]
    unsafe fn fill<const NT: usize>(self, head: Head) {
        sync_warp();
        if self.mine {
            let (s, widths, reference) = head;
            let block = self
                .col
                .data()
                .wrapping_add(s as usize + BLOCK_HEADER_WORDS);
            for k in 0..self.per_lane {
                let m = self.first + k;
                let words = block.wrapping_add(miniblock_offset(widths, m) as usize) as u64;
                let entry = [
                    words as u32,
                    (words >> 32) as u32,
                    reference,
                    width(widths, m),
                ];
                let at = self
                    .col
                    .entry_addr::<NT>(self.block_row + (m * MINIBLOCK) as u32);
                // SAFETY: the entry lies in this warp's part of the table, 16-byte aligned.
                unsafe { store_shared_v4_u32(at, entry) };
            }
        }
        sync_warp();
    }
}

/// The rows of a thread's runs from [`Packed::fetch_nsf2`]'s words (the first `IPT / 2`),
/// over the column's `reference`.
#[inline(always)]
fn decode_nsf2<const IPT: usize>(raw: [u32; IPT], reference: u32) -> [i32; IPT] {
    core::array::from_fn(|k| {
        let v = halves(raw[k / RUN * 2], raw[k / RUN * 2 + 1])[k % RUN];
        reference.wrapping_add(v) as i32
    })
}

/// The four 16-bit values of a run held in two words, low halves first: an NSF2 run, or a
/// GPU-FOR run of width 16 (before its reference is added).
#[inline(always)]
fn halves(lo: u32, hi: u32) -> [u32; RUN] {
    [lo & 0xffff, lo >> 16, hi & 0xffff, hi >> 16]
}

impl<const KINDS: u32> FactColumn for Packed<KINDS> {
    const READ_AHEAD: bool = true;

    #[inline(always)]
    unsafe fn for_each_tile<
        const NT: usize,
        const IPT: usize,
        const K: usize,
        const AHEAD: usize,
    >(
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
        if !cols.iter().any(|c| c.kind() == column::GPU_FOR) {
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
        let fill = HeadFill::new::<NT, IPT, K, AHEAD>(cols, n32);
        let mut head = fill.head(tile, fill.start(tile));
        let mut next_start = fill.start(tile + grid);
        // An NSF2 first column's next full tile is in flight, raw, as a plain one's is.
        let ahead = Self::FIRST == column::NSF2;
        let full_tiles = n32 / tile_rows;
        let full = |tile: u32| tile < full_tiles;
        let mut raw = [0u32; IPT];
        if ahead && full(tile) {
            // SAFETY: a full tile of the column's rows.
            raw = unsafe { cols[0].fetch_nsf2::<NT, IPT>((tile * tile_rows) as usize) };
        }
        while tile * tile_rows < n32 {
            let next = tile + grid;
            // In flight during this tile: the next tile's headers (their starts came during
            // the last one) and the block starts of the tile after it.
            let next_head = fill.head(next, next_start);
            // Said outright: an asm statement stays, with its address's registers, even where
            // its predicate is known false.
            if AHEAD > 0 {
                fill.prefetch(next, next_start);
            }
            next_start = fill.start(next + grid);
            // SAFETY: this tile's headers, read by the lanes that fill its entries.
            unsafe { fill.fill::<NT>(head) };
            let start = (tile * tile_rows) as usize;
            let tile_rows = tile_rows as usize;
            // SAFETY: the tile holds rows; the table holds its entries.
            unsafe {
                if n - start >= tile_rows {
                    // A constant `valid`: the bounds tests of the inlined body fold away.
                    let rows = if ahead {
                        let rows = decode_nsf2::<IPT>(raw, cols[0].reference());
                        if full(next) {
                            raw = cols[0].fetch_nsf2::<NT, IPT>(start + grid as usize * tile_rows);
                        }
                        rows
                    } else {
                        cols[0].load::<NT, IPT>(start, tile_rows)
                    };
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
    unsafe fn for_each_tile_alone<const NT: usize, const IPT: usize>(
        self,
        n: usize,
        mut f: impl FnMut(usize, usize, &[i32; IPT]),
    ) {
        match Self::FIRST {
            column::NSF2 => crate::ssb::for_each_fetched_tile::<NT, IPT, [u32; IPT]>(
                n,
                // SAFETY (both): the walk reads tiles of the `n` rows the column holds.
                |start| unsafe { self.fetch_nsf2::<NT, IPT>(start) },
                |raw| decode_nsf2::<IPT>(raw, self.reference()),
                |start, valid| unsafe { self.load::<NT, IPT>(start, valid) },
                #[inline(always)]
                |start, valid, rows| f(start, valid, rows),
            ),
            // SAFETY: forwarded.
            column::GPU_FOR => unsafe { self.for_each_for_tile_ahead::<NT, IPT>(n, f) },
            // SAFETY: forwarded.
            _ => unsafe { Self::for_each_tile::<NT, IPT, 1, 0>(&[self], n, f) },
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
                    let v = load_if(live[s], self.data().cast::<u16>().wrapping_add(row(s)));
                    self.reference().wrapping_add(v as u32) as i32
                }),
                column::NSF1 => core::array::from_fn(|s| {
                    let v = load_if(live[s], self.data().cast::<u8>().wrapping_add(row(s)));
                    self.reference().wrapping_add(v as u32) as i32
                }),
                _ => crate::ssb::gather(self.data().cast(), start, offsets, live),
            }
        }
    }

    #[inline(always)]
    unsafe fn gather_rows<const S: usize>(self, rows: &[u32; S], live: &[bool; S]) -> [i32; S] {
        // Loops, not `core::array::from_fn`: in the probes that read every kind at run time,
        // with a tail queue's copies of the chain, LLVM stopped inlining that.
        let mut v = [0i32; S];
        // SAFETY (each arm): loads only where live, of rows the caller vouches for.
        unsafe {
            match self.kind() {
                column::GPU_FOR => {
                    for s in 0..S {
                        v[s] = self.for_value_at(rows[s], live[s]) as i32;
                    }
                }
                column::NSF2 => {
                    for s in 0..S {
                        let at = self.data().cast::<u16>().wrapping_add(rows[s] as usize);
                        v[s] = self.reference().wrapping_add(load_if(live[s], at) as u32) as i32;
                    }
                }
                column::NSF1 => {
                    for s in 0..S {
                        let at = self.data().cast::<u8>().wrapping_add(rows[s] as usize);
                        v[s] = self.reference().wrapping_add(load_if(live[s], at) as u32) as i32;
                    }
                }
                _ => v = crate::ssb::gather(self.data().cast(), 0, rows, live),
            }
        }
        v
    }

    type Place = RowPlace;

    #[inline(always)]
    unsafe fn place_rows<const S: usize>(self, rows: &[u32; S], live: &[bool; S]) -> [RowPlace; S] {
        let mut p = [(0, 0, 0); S];
        if self.kind() == column::GPU_FOR {
            for s in 0..S {
                // SAFETY: forwarded.
                p[s] = unsafe { self.for_place_at(rows[s], live[s]) };
            }
        }
        p
    }

    #[inline(always)]
    unsafe fn gather_placed<const S: usize>(
        self,
        places: &[RowPlace; S],
        rows: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        if self.kind() != column::GPU_FOR {
            // SAFETY: forwarded.
            return unsafe { self.gather_rows(rows, live) };
        }
        let mut v = [0i32; S];
        for s in 0..S {
            // SAFETY: forwarded; `places` are the rows' blocks where live.
            v[s] = unsafe { self.for_value_in(places[s], rows[s], live[s]) } as i32;
        }
        v
    }
}
