//! LoadBitPack (thesis §5.3.2): the block-wide load of a tile of a GPU-FOR column. A query
//! kernel that reads a compressed column calls [`load_bitpack`] where it would call
//! `block_load`, and gets the same items in the same places of the tile. A kernel that walks
//! many tiles per block calls [`for_each_bitpack_tile`] instead, which copies the next tile
//! while the current one is decoded.
//!
//! The thread block copies the words of its tile's `NT * IPT / 128` GPU-FOR blocks into shared
//! memory with asynchronous 16-byte copies (one read of the compressed bytes, every copy of a
//! thread in flight at once), then every thread decodes its items there: the block's reference
//! and bit-width word, the miniblock's word offset from the widths' byte-wise prefix sum
//! (Algorithm 7, no loop over the miniblocks), and each value by one funnel shift of two
//! words and a mask (Algorithm 6). Index arithmetic inside the tile is 32-bit: `usize` is 64
//! bits on nvptx and would double the instructions of the decode, which bound it.
use super::format::{BLOCK, MAX_BLOCK_WORDS, MINIBLOCK, blocks_for, width};
use crate::arch::{
    Shared, block_idx, copy_async_4, copy_async_16, copy_async_commit, copy_async_wait_all,
    copy_async_wait_groups, copy_async_words, funnel_shr, grid_dim, load_shared_u32, low_mask,
    sync_threads, thread_idx,
};
use crate::block::{Tile, block_exclusive_sum};
use core::num::Wrapping;

/// GPU-FOR blocks in a tile of `NT * IPT` values.
pub const fn tile_blocks(nt: usize, ipt: usize) -> usize {
    nt * ipt / BLOCK
}

/// Shared words that hold a tile of `d` blocks: the blocks at their largest, with a GPU-DFOR
/// group's first value before each, up to 3 words before them (the copy starts at a 16-byte
/// boundary), up to 3 after (it ends at one) and a word a value in the last word reads as its
/// next; a multiple of 4, so what follows stays aligned.
const fn staged_words(d: usize) -> usize {
    (d * (MAX_BLOCK_WORDS + 1) + 7).next_multiple_of(4)
}

/// Shared words [`load_bitpack`] needs for a tile of `NT * IPT` values: the staged words, then
/// each block's start (a multiple of 4, so a second buffer after it stays aligned).
pub const fn bitpack_shared_words(nt: usize, ipt: usize) -> usize {
    staged_words(tile_blocks(nt, ipt)) + tile_blocks(nt, ipt).next_multiple_of(4)
}

/// Where a tile's blocks lie in the column: the tile's first block, its block count, the
/// first block's start and the end of the last one (words of the data array).
#[derive(Clone, Copy)]
struct Span {
    first: u32,
    blocks: u32,
    w0: u32,
    w1: u32,
}

impl Span {
    /// Tile `tile`'s span (two reads of the block starts), from `lead` words before its first
    /// block: 0 for GPU-FOR, 1 for GPU-DFOR (the first group's first value).
    ///
    /// # Safety
    /// A validated column of `n` values with `lead` words before each tile's first block;
    /// `tile` holds values.
    #[inline(always)]
    unsafe fn of<const NT: usize, const IPT: usize>(
        starts: *const u32,
        n: usize,
        tile: usize,
        lead: u32,
    ) -> Span {
        let d = tile_blocks(NT, IPT);
        let first = tile * d;
        let blocks = blocks_for(n, BLOCK).min(first + d) - first;
        // SAFETY: the column has `blocks_for(n) + 1` starts; first + blocks <= blocks_for(n).
        let (w0, w1) = unsafe { (starts.add(first).read(), starts.add(first + blocks).read()) };
        Span {
            first: first as u32,
            blocks: blocks as u32,
            w0: w0 - lead,
            w1,
        }
    }
}

/// A tile's blocks in shared memory (once its copies landed): shared-window addresses of the
/// words and of the blocks' starts, the column word at the words' index 0 and the values of
/// the tile (`NT * IPT` but in the column's last tile).
pub struct StagedTile<const NT: usize, const IPT: usize> {
    words: u32,
    starts: u32,
    a0: u32,
    left: u32,
}

impl<const NT: usize, const IPT: usize> StagedTile<NT, IPT> {
    /// Starts the asynchronous copies of `span`'s blocks into buffer `sh` (of
    /// [`bitpack_shared_words`]): the words from the 16-byte boundary at or before the first
    /// block, and the blocks' starts. The data becomes visible after the thread's wait for the
    /// copies and a barrier.
    ///
    /// # Safety
    /// A validated column of `n` values with `len` data words, `data` 16-byte aligned; `span`
    /// is tile `tile`'s; no thread reads or writes `sh` until that wait and barrier.
    #[inline(always)]
    unsafe fn copy(
        data: *const u32,
        starts: *const u32,
        len: u32,
        n: usize,
        tile: usize,
        span: Span,
        sh: Shared<u32>,
    ) -> Self {
        let d = tile_blocks(NT, IPT);
        let t = thread_idx();
        let staged = StagedTile {
            words: sh.addr(0),
            starts: sh.addr(staged_words(d)),
            a0: span.w0 & !3,
            left: (n - tile * NT * IPT).min(NT * IPT) as u32,
        };
        // The copy covers data[a0..ceil4(w1)): at most staged_words(d) - 1 words, in quads
        // 16 * NT bytes apart in both buffers, so the addresses are one base each and
        // immediate offsets.
        let (dst, left) = (staged.words + 16 * t as u32, span.w1 - staged.a0);
        // SAFETY: the column's data holds `len` >= w1 > a0 + 4 * t words when a quad of this
        // thread is copied, which is the only use of `src`.
        let src = unsafe { data.add(staged.a0 as usize + 4 * t) };
        let quads = staged_words(d).div_ceil(4).div_ceil(NT);
        if (span.w1 + 3) & !3 <= len {
            for j in 0..quads {
                if ((4 * (t + j * NT)) as u32) < left {
                    // SAFETY: data[a0 + 4 * (t + j * NT)..] is 16-byte aligned (the
                    // allocation is; a0 is a multiple of 4) and, below ceil4(w1) <= len, 4
                    // words long; the quad lies in `sh` (4 * (t + j * NT) < w1 - a0 <=
                    // staged_words(d) - 4) and only this thread writes it.
                    unsafe { copy_async_16(dst + 16 * (j * NT) as u32, src.add(4 * j * NT)) };
                }
            }
        } else {
            // The copy ends past the data (the column's last tile): its last quad is copied
            // word by word.
            for j in 0..quads {
                let first = (4 * (t + j * NT)) as u32;
                if first < left {
                    // SAFETY: as above, but the data holds `len - a0 - first` >= 1 words
                    // there, of which the copy reads at most 4.
                    unsafe {
                        let words = (len - staged.a0 - first).min(4);
                        copy_async_words(dst + 16 * (j * NT) as u32, src.add(4 * j * NT), words)
                    };
                }
            }
        }
        if (t as u32) < span.blocks {
            // SAFETY: t < blocks <= d, a start of the column and a start slot of `sh`.
            unsafe {
                copy_async_4(
                    staged.starts + 4 * t as u32,
                    starts.add((span.first + t as u32) as usize),
                )
            };
        }
        staged
    }

    /// Block `b`'s reference, bit-width word and the shared address of its first word.
    ///
    /// # Safety
    /// Block `b` of the tile holds values; the copies landed.
    #[inline(always)]
    unsafe fn header(&self, b: u32) -> (u32, u32, u32) {
        // SAFETY: a staged block's start, and its two header words.
        unsafe {
            let at = self.words + 4 * (load_shared_u32(self.starts + 4 * b) - self.a0);
            (load_shared_u32(at), load_shared_u32(at + 4), at)
        }
    }

    /// The value at bit `pos` of shared memory (the bit's shared-window address times 8),
    /// `mask` its width's [`low_mask`], not yet unreferenced. Counting bits from the window's
    /// start (a block's first word is 4-byte aligned, so its bit 0 is a multiple of 32) makes
    /// the word's address `pos / 8` rounded down to 4 bytes, with no base to add per value.
    ///
    /// # Safety
    /// The value lies in a staged block; its word's next word is staged (or the spare word).
    #[inline(always)]
    unsafe fn field(pos: u32, mask: u32) -> u32 {
        let a = (pos / 8) & !3;
        // SAFETY: the value's word and the next, which `staged_words` keeps in the buffer; the
        // next word's bits past the value are masked off.
        unsafe { funnel_shr(load_shared_u32(a), load_shared_u32(a + 4), pos) & mask }
    }

    /// Calls `f(k, value)` for each item `k` of this thread's (`block_load`'s places,
    /// `Tile::<u32, NT, IPT>::offset`) that holds a value of the column.
    ///
    /// A thread's items come in runs of V consecutive values (the tile's vector width), which
    /// lie in one miniblock (V divides 32): the block's header, the width and the miniblock's
    /// position are read once per run (and by a whole warp at once: its 32 runs are one
    /// block), and the run's values follow at `w` bits apart. A full tile, all but the
    /// column's last, checks no item against the column's end.
    #[inline(always)]
    fn decode(&self, mut f: impl FnMut(usize, u32)) {
        if self.left == (NT * IPT) as u32 {
            self.decode_runs::<true>(&mut f);
        } else {
            self.decode_runs::<false>(&mut f);
        }
    }

    #[inline(always)]
    fn decode_runs<const FULL: bool>(&self, f: &mut impl FnMut(usize, u32)) {
        let t = thread_idx();
        let v = Tile::<u32, NT, IPT>::V;
        const { assert!(MINIBLOCK % Tile::<u32, NT, IPT>::V == 0) };
        for g in 0..IPT / v {
            let o = Tile::<u32, NT, IPT>::offset(t, g * v) as u32;
            // Skipped, not a `break`: a loop that may end early is not unrolled, and its
            // items' indices are no longer constants (the arrays went to local memory).
            if !FULL && o >= self.left {
                continue;
            }
            let (b, first) = (o / BLOCK as u32, o % BLOCK as u32);
            // SAFETY: block b of the tile holds the run, so b < blocks; its values lie in its
            // staged words.
            unsafe {
                let (reference, widths, at) = self.header(b);
                let m = first / MINIBLOCK as u32;
                let w = width(widths, m as usize);
                let mask = low_mask(w);
                let mut pos = 8 * at + position(widths, m, first % MINIBLOCK as u32);
                for i in 0..v {
                    if FULL || o + (i as u32) < self.left {
                        f(g * v + i, reference.wrapping_add(Self::field(pos, mask)));
                    }
                    pos += w;
                }
            }
        }
    }

    /// The tile's values into `items`, in the places `block_load` gives them
    /// (`Tile::<u32, NT, IPT>::offset`); items past the column's end are left as they were.
    #[inline(always)]
    pub fn load(&self, items: &mut [u32; IPT]) {
        self.decode(|k, x| items[k] = x);
    }

    /// The sum of this thread's values of the tile, each widened to 64 bits: the block's
    /// partials add up to the tile's sum.
    #[inline(always)]
    pub fn sum(&self) -> u64 {
        let mut sum = 0u64;
        self.decode(|_, x| sum += x as u64);
        sum
    }

    /// LoadDBitPack (thesis §5.4.1): the tile of a GPU-DFOR column, whose groups are
    /// `1 << group_shift` blocks (the column's D, which divides the tile's blocks), into
    /// `items` in `block_load`'s places. The deltas decode as GPU-FOR values; one exclusive
    /// scan over the whole tile (wrapping) gives each item the sum of the deltas before it,
    /// and an item's group subtracts what the scan had reached at its first item and adds its
    /// first value: `x(i) = x0 + (P(i) - P(first))`. Items past the column's end hold
    /// garbage. Called by the whole block; `firsts` holds a word per block of the tile, `temp`
    /// the scan's `Tile::<u32, NT, IPT>::SCAN_WORDS`; both are free again after the caller's
    /// next barrier.
    #[inline(always)]
    pub fn load_deltas(
        &self,
        group_shift: u32,
        firsts: Shared<u32>,
        temp: Shared<Wrapping<u32>>,
        items: &mut [u32; IPT],
    ) {
        let mut deltas = [Wrapping(0u32); IPT];
        self.decode(|k, x| deltas[k] = Wrapping(x));
        let mut before = [Wrapping(0u32); IPT];
        block_exclusive_sum::<u32, Wrapping<u32>, NT, IPT>(&deltas, &mut before, temp);
        let t = thread_idx();
        // Groups of 128 << group_shift values: shifts and masks, no division.
        let shift = group_shift + BLOCK.trailing_zeros();
        for k in 0..IPT {
            let (o, p) = (Tile::<u32, NT, IPT>::offset(t, k) as u32, before[k]);
            if o & ((1 << shift) - 1) == 0 && o < self.left {
                let g = o >> shift;
                // SAFETY: the group holds values, so its first block is staged, and its first
                // value is the staged word before that block; slot g < tile blocks of
                // `firsts` is written by this thread alone.
                unsafe {
                    let first_block = g << group_shift;
                    let at =
                        self.words + 4 * (load_shared_u32(self.starts + 4 * first_block) - self.a0);
                    let x0 = load_shared_u32(at - 4);
                    firsts.write(g as usize, x0.wrapping_sub(p.0));
                }
            }
        }
        sync_threads();
        // Indexed, not a zip of the arrays: `array::IntoIter` kept the loop rolled and the
        // arrays in local memory.
        for k in 0..IPT {
            let o = Tile::<u32, NT, IPT>::offset(t, k) as u32;
            // SAFETY: written above for every group with values, before the barrier.
            items[k] = unsafe { firsts.read((o >> shift) as usize) }.wrapping_add(before[k].0);
        }
    }

    /// The values of the tile in `items` (as [`Self::load_deltas`] left them) that lie in the
    /// column, summed in 64 bits.
    #[inline(always)]
    pub fn sum_items(&self, items: &[u32; IPT]) -> u64 {
        let t = thread_idx();
        let mut sum = 0u64;
        for (k, &x) in items.iter().enumerate() {
            if self.left == (NT * IPT) as u32
                || (Tile::<u32, NT, IPT>::offset(t, k) as u32) < self.left
            {
                sum += x as u64;
            }
        }
        sum
    }
}

/// Bit position, from a block's first word, of value `i` (0..32) of miniblock `m`.
#[inline(always)]
fn position(widths: u32, m: u32, i: u32) -> u32 {
    // Algorithm 7: the byte-wise exclusive prefix sum of the widths, by shifts.
    let offsets = (widths << 8)
        .wrapping_add(widths << 16)
        .wrapping_add(widths << 24);
    let offset = (offsets >> (8 * m)) & 0xff;
    (2 + offset) * 32 + width(widths, m as usize) * i
}

/// The column's data length in words: its last block start.
///
/// # Safety
/// A validated column of `n` values.
#[inline(always)]
unsafe fn data_len(starts: *const u32, n: usize) -> u32 {
    // SAFETY: the column has `blocks_for(n) + 1` starts.
    unsafe { starts.add(blocks_for(n, BLOCK)).read() }
}

/// Loads tile `tile` of a GPU-FOR column of `n` values (its `data` and `starts` arrays) into
/// `items`, in the places `block_load` gives them (`Tile::<u32, NT, IPT>::offset`); items past
/// `n` are left as they were. Called by the whole block; `sh` is free again on return.
///
/// # Safety
/// `data` and `starts` are a validated GPU-FOR column of `n` values (block starts monotonic,
/// each block as long as its widths say, the last start the data's length), `data` 16-byte
/// aligned; `tile` holds values (`tile * NT * IPT < n`); `sh` holds
/// [`bitpack_shared_words`]`(NT, IPT)` words.
#[inline(always)]
pub unsafe fn load_bitpack<const NT: usize, const IPT: usize>(
    data: *const u32,
    starts: *const u32,
    n: usize,
    tile: usize,
    sh: Shared<u32>,
    items: &mut [u32; IPT],
) {
    const { assert!(NT * IPT % BLOCK == 0 && tile_blocks(NT, IPT) <= NT) };
    // SAFETY: as this function's contract.
    let staged = unsafe {
        let span = Span::of::<NT, IPT>(starts, n, tile, 0);
        StagedTile::<NT, IPT>::copy(data, starts, data_len(starts, n), n, tile, span, sh)
    };
    copy_async_wait_all();
    sync_threads();
    staged.load(items);
    sync_threads();
}

/// Calls `f(tile, staged)` for tiles `block_idx`, `block_idx + grid_dim`, ... of a GPU-FOR
/// column of `n` values, in turn, with the next tile's copies in flight while `f` decodes the
/// current one (two buffers: the copies' latency is hidden behind the decode, not paid per
/// tile). Called by the whole block; `f` is called by every thread with the same tile.
///
/// # Safety
/// As [`load_bitpack`], with `sh` of `2 * bitpack_shared_words(NT, IPT)` words.
#[inline(always)]
pub unsafe fn for_each_bitpack_tile<const NT: usize, const IPT: usize>(
    data: *const u32,
    starts: *const u32,
    n: usize,
    sh: Shared<u32>,
    f: impl FnMut(usize, &StagedTile<NT, IPT>),
) {
    // SAFETY: as this function's contract; GPU-FOR tiles need no word before their blocks.
    unsafe { for_each_tile(data, starts, n, 0, sh, f) }
}

/// [`for_each_bitpack_tile`] for a GPU-DFOR column, whose tiles are decoded with
/// [`StagedTile::load_deltas`].
///
/// # Safety
/// As [`for_each_bitpack_tile`], for a validated GPU-DFOR column whose groups of blocks divide
/// the tile (`NT * IPT / 128` a multiple of the column's D).
#[inline(always)]
pub unsafe fn for_each_dbitpack_tile<const NT: usize, const IPT: usize>(
    data: *const u32,
    starts: *const u32,
    n: usize,
    sh: Shared<u32>,
    f: impl FnMut(usize, &StagedTile<NT, IPT>),
) {
    // SAFETY: as this function's contract; a tile starts with a group, whose first value is
    // the word before its first block.
    unsafe { for_each_tile(data, starts, n, 1, sh, f) }
}

/// The driver of both: tiles with `lead` words before their first block.
#[inline(always)]
unsafe fn for_each_tile<const NT: usize, const IPT: usize>(
    data: *const u32,
    starts: *const u32,
    n: usize,
    lead: u32,
    sh: Shared<u32>,
    mut f: impl FnMut(usize, &StagedTile<NT, IPT>),
) {
    const { assert!(NT * IPT % BLOCK == 0 && tile_blocks(NT, IPT) <= NT) };
    let words = bitpack_shared_words(NT, IPT);
    let (stride, mut tile) = (grid_dim(), block_idx());
    if tile * NT * IPT >= n {
        return;
    }
    // SAFETY: a validated column; every tile below is checked to hold values before its span
    // is read or its copies start, and the copies into a buffer start only after the barrier
    // that ends the decode of what it held.
    unsafe {
        let len = data_len(starts, n);
        let mut current = StagedTile::<NT, IPT>::copy(
            data,
            starts,
            len,
            n,
            tile,
            Span::of::<NT, IPT>(starts, n, tile, lead),
            sh,
        );
        copy_async_commit();
        let mut next = tile + stride;
        let mut span = (next * NT * IPT < n).then(|| Span::of::<NT, IPT>(starts, n, next, lead));
        let mut buffer = 1;
        loop {
            let following = span.map(|s| {
                let staged = StagedTile::<NT, IPT>::copy(
                    data,
                    starts,
                    len,
                    n,
                    next,
                    s,
                    sh.offset(buffer * words),
                );
                copy_async_commit();
                staged
            });
            // The span after next is read now, so its latency passes during the decode.
            let after = next + stride;
            span = (following.is_some() && after * NT * IPT < n)
                .then(|| Span::of::<NT, IPT>(starts, n, after, lead));
            if following.is_some() {
                copy_async_wait_groups::<1>();
            } else {
                copy_async_wait_all();
            }
            sync_threads();
            f(tile, &current);
            sync_threads();
            match following {
                Some(staged) => current = staged,
                None => break,
            }
            (tile, next, buffer) = (next, after, 1 - buffer);
        }
    }
}
