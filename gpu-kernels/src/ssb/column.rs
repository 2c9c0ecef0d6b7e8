//! The lineorder columns a probe reads, behind one trait: a plain `i32` column, or a
//! [`Packed`] one (NSF or GPU-FOR, thesis §5.6.5), so that a probe kernel is written once and
//! instantiated for both. A probe reads its first column a tile at a time ([`FactColumn::load`],
//! in `block_load`'s places) and every later column at its survivors' rows only
//! ([`FactColumn::gather`]).
//!
//! A GPU-FOR column is decoded where it is read, from global memory: a warp's items of a tile
//! are runs of `V` consecutive rows, and `V` divides a miniblock, so each run reads its block's
//! start, reference and bit widths once (the same words for the whole warp) and its values from
//! the words that hold them. A survivor's row is decoded alone: block start, block header, then
//! the one or two words of its value, each a predicated load, so the rounds over several
//! survivors issue their loads together.
use crate::arch::{funnel_shr, load_if, load_invariant_u32, load_invariant_u64, low_mask};
use crate::block::{Tile, block_load_as};
use crate::compress::format::{BLOCK, BLOCK_HEADER_WORDS, MINIBLOCK, miniblock_offset, width};
use crate::ssb::plan::{PackedCol, column};

/// A lineorder column a probe reads.
pub trait FactColumn: Copy {
    /// Whether a probe loads its next tile of this column while it works on the current one
    /// ([`crate::ssb::for_each_loaded_tile`]): worth its registers where a tile is one load
    /// per run, not where it is a chain of dependent loads.
    const AHEAD: bool;

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

    /// Rows `start + offsets[s]` where `live[s]` (0 elsewhere).
    ///
    /// # Safety
    /// The column holds the live rows.
    unsafe fn gather<const S: usize>(
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
    unsafe fn gather<const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        // SAFETY: forwarded.
        unsafe { crate::ssb::gather(self, start, offsets, live) }
    }
}

/// A lineorder column in one of the [`column`] kinds: its [`PackedCol`] in global memory,
/// whose fields are read where they are used. Held in registers, a flight's six descriptors
/// took 30 of them across the tile loop and the kernels spilled.
#[derive(Clone, Copy)]
pub struct Packed {
    col: *const PackedCol,
}

impl Packed {
    /// The column `*col` describes.
    ///
    /// # Safety
    /// `col` is a valid [`PackedCol`] in global memory, unchanged during the kernel, whose
    /// arrays hold the column.
    #[inline(always)]
    pub unsafe fn read(col: *const PackedCol) -> Packed {
        Packed { col }
    }

    #[inline(always)]
    fn kind(self) -> u32 {
        // SAFETY: a field of the valid descriptor.
        unsafe { load_invariant_u32(&raw const (*self.col).kind) }
    }

    #[inline(always)]
    fn data(self) -> *const u32 {
        // SAFETY: as above.
        unsafe { load_invariant_u64(&raw const (*self.col).data) as *const u32 }
    }

    #[inline(always)]
    fn starts(self) -> *const u32 {
        // SAFETY: as above.
        unsafe { load_invariant_u64(&raw const (*self.col).starts) as *const u32 }
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

impl FactColumn for Packed {
    const AHEAD: bool = false;

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
    unsafe fn gather<const S: usize>(
        self,
        start: usize,
        offsets: &[u32; S],
        live: &[bool; S],
    ) -> [i32; S] {
        let row = |s: usize| start + offsets[s] as usize;
        // SAFETY (each arm): loads only where live, of rows the caller vouches for.
        unsafe {
            match self.kind() {
                column::GPU_FOR => core::array::from_fn(|s| {
                    self.for_run::<1>(row(s) as u32, live[s] as u32)[0] as i32
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
