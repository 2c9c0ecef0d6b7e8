//! LoadBitPack (thesis §5.3.2): the block-wide load of a tile of a GPU-FOR column. A query
//! kernel that reads a compressed column calls [`load_bitpack`] where it would call
//! `block_load`, and gets the same items in the same places of the tile; [`sum_bitpack`] is
//! the same load for a kernel that only adds the values, in the order that suits decoding.
//!
//! The thread block copies the words of its tile's `NT * IPT / 128` GPU-FOR blocks into shared
//! memory with asynchronous 16-byte copies (one read of the compressed bytes, every copy of a
//! thread in flight at once), then every thread decodes its items there: the block's reference
//! and bit-width word, the miniblock's word offset from the widths' byte-wise prefix sum
//! (Algorithm 7, no loop over the miniblocks), and each value by one funnel shift of two
//! words and a mask (Algorithm 6). Index arithmetic inside the tile is 32-bit: `usize` is 64
//! bits on nvptx and would double the instructions of the decode, which bound it.
use super::format::{BLOCK, MAX_BLOCK_WORDS, MINIBLOCK, MINIBLOCKS, blocks_for, width};
use crate::arch::{
    Shared, WARP, copy_async_16, copy_async_wait_all, funnel_shr, load_shared_u32, low_mask,
    sync_threads, thread_idx,
};
use crate::block::Tile;

/// GPU-FOR blocks in a tile of `NT * IPT` values.
pub const fn tile_blocks(nt: usize, ipt: usize) -> usize {
    nt * ipt / BLOCK
}

/// Shared words that hold a tile of `d` blocks: the blocks at their largest, up to 3 words
/// before them (the copy starts at a 16-byte boundary), up to 3 after (it ends at one) and a
/// word a value in the last word reads as its next; a multiple of 4, so the block offsets that
/// follow stay aligned.
const fn staged_words(d: usize) -> usize {
    (d * MAX_BLOCK_WORDS + 7).next_multiple_of(4)
}

/// Shared words [`load_bitpack`] and [`sum_bitpack`] need for a tile of `NT * IPT` values: the
/// staged words, then each block's offset among them.
pub const fn bitpack_shared_words(nt: usize, ipt: usize) -> usize {
    staged_words(tile_blocks(nt, ipt)) + tile_blocks(nt, ipt)
}

/// A tile's blocks in shared memory: shared-window addresses of the staged words and of the
/// blocks' word offsets among them, and the number of blocks.
struct Staged {
    words: u32,
    offsets: u32,
    blocks: u32,
}

impl Staged {
    /// Block `b`'s reference, bit-width word and the shared address of its first word.
    ///
    /// # Safety
    /// `b < self.blocks`, after [`stage`]'s barrier.
    #[inline(always)]
    unsafe fn header(&self, b: u32) -> (u32, u32, u32) {
        // SAFETY: the offset of a staged block, and its two header words.
        unsafe {
            let at = self.words + 4 * load_shared_u32(self.offsets + 4 * b);
            (load_shared_u32(at), load_shared_u32(at + 4), at)
        }
    }

    /// The value at bit `pos` from the block word at `at` (an address [`Staged::header`] gave),
    /// `mask` its width's [`low_mask`], not yet unreferenced.
    ///
    /// # Safety
    /// The value lies in a staged block; its word's next word is staged (or the spare word).
    #[inline(always)]
    unsafe fn field(at: u32, pos: u32, mask: u32) -> u32 {
        let a = at + 4 * (pos / 32);
        // SAFETY: the value's word and the next, which `staged_words` keeps in the buffer; the
        // next word's bits past the value are masked off.
        unsafe { funnel_shr(load_shared_u32(a), load_shared_u32(a + 4), pos) & mask }
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

/// Copies tile `tile`'s GPU-FOR blocks and their offsets into `sh`; called by the whole block,
/// returns after a barrier.
///
/// # Safety
/// As [`load_bitpack`].
#[inline(always)]
unsafe fn stage<const NT: usize, const IPT: usize>(
    data: *const u32,
    starts: *const u32,
    n: usize,
    tile: usize,
    sh: Shared<u32>,
) -> Staged {
    let d = tile_blocks(NT, IPT);
    let t = thread_idx();
    let total = blocks_for(n, BLOCK);
    let first = tile * d;
    let blocks = total.min(first + d) - first;
    // SAFETY: the column has `total + 1` starts, the last the data's length; first + blocks
    // <= total.
    let (w0, w1, len) = unsafe {
        (
            starts.add(first).read(),
            starts.add(first + blocks).read(),
            starts.add(total).read(),
        )
    };
    let staged = Staged {
        words: sh.addr(0),
        offsets: sh.addr(staged_words(d)),
        blocks: blocks as u32,
    };
    // The copy covers data[a0..ceil4(w1)): at most staged_words(d) - 1 words.
    let a0 = w0 & !3;
    let quads = staged_words(d).div_ceil(4).div_ceil(NT);
    for j in 0..quads {
        let q = (t + j * NT) as u32;
        let word = a0 + 4 * q;
        if word < w1 {
            // SAFETY: data[word..] is 16-byte aligned (the allocation is) and `len - word`
            // words long, of which the copy reads at most 4; quad q of the staged words is in
            // `sh` (word - a0 < w1 - a0 + 3 <= staged_words(d) - 4) and only this thread
            // writes it.
            unsafe { copy_async_16(staged.words + 16 * q, data.add(word as usize), 4 * (len - word).min(4)) };
        }
    }
    if t < blocks {
        // SAFETY: t < blocks <= d, a start of the column and an offset slot of `sh`.
        unsafe { sh.write(staged_words(d) + t, starts.add(first + t).read() - a0) };
    }
    copy_async_wait_all();
    sync_threads();
    staged
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
    let staged = unsafe { stage::<NT, IPT>(data, starts, n, tile, sh) };
    let t = thread_idx();
    // Values of the tile (more than it holds for all but the last tile), as u32.
    let left = (n - tile * NT * IPT).min(NT * IPT) as u32;
    let full = left == (NT * IPT) as u32;
    // A thread's items come in runs of V consecutive values (the tile's vector width), which
    // lie in one miniblock (V divides 32): the block's header, the width and the miniblock's
    // position are read once per run, and the run's values follow at `w` bits apart.
    let v = Tile::<u32, NT, IPT>::V;
    const { assert!(MINIBLOCK % Tile::<u32, NT, IPT>::V == 0) };
    for g in 0..IPT / v {
        let o = Tile::<u32, NT, IPT>::offset(t, g * v) as u32;
        if !full && o >= left {
            break;
        }
        let (b, first) = (o / BLOCK as u32, o % BLOCK as u32);
        // SAFETY: block b of the tile holds the run, so b < staged.blocks; its values lie in
        // its staged words.
        unsafe {
            let (reference, widths, at) = staged.header(b);
            let m = first / MINIBLOCK as u32;
            let w = width(widths, m as usize);
            let mask = low_mask(w);
            let mut pos = position(widths, m, first % MINIBLOCK as u32);
            for (i, item) in items[g * v..g * v + v].iter_mut().enumerate() {
                if full || o + (i as u32) < left {
                    *item = reference.wrapping_add(Staged::field(at, pos, mask));
                }
                pos += w;
            }
        }
    }
    sync_threads();
}

/// The sum of this thread's share of tile `tile`'s values, each widened to 64 bits: the block's
/// partials add up to the tile's sum. Called by the whole block; `sh` is free again on return.
///
/// The values are not in `block_load`'s places: each warp decodes whole GPU-FOR blocks, lane
/// `l` value `l` of each miniblock, so a warp reads the block's header once and the words of a
/// miniblock without bank conflicts (runs of V values per lane, as [`load_bitpack`] must
/// take them, have lanes `V * w / 32` words apart).
///
/// # Safety
/// As [`load_bitpack`].
#[inline(always)]
pub unsafe fn sum_bitpack<const NT: usize, const IPT: usize>(
    data: *const u32,
    starts: *const u32,
    n: usize,
    tile: usize,
    sh: Shared<u32>,
) -> u64 {
    const { assert!(NT * IPT % BLOCK == 0 && tile_blocks(NT, IPT) <= NT && NT % WARP == 0) };
    // SAFETY: as this function's contract.
    let staged = unsafe { stage::<NT, IPT>(data, starts, n, tile, sh) };
    let t = thread_idx();
    let (warp, lane) = ((t / WARP) as u32, (t % WARP) as u32);
    let left = (n - tile * NT * IPT).min(NT * IPT) as u32;
    let warps = (NT / WARP) as u32;
    let mut sum = 0u64;
    for j in 0..tile_blocks(NT, IPT).div_ceil(NT / WARP) as u32 {
        let b = warp + j * warps;
        if b >= staged.blocks {
            break;
        }
        // SAFETY: b < staged.blocks; each value read lies in block b's staged words.
        unsafe {
            let (reference, widths, at) = staged.header(b);
            for m in 0..MINIBLOCKS as u32 {
                if b * BLOCK as u32 + m * MINIBLOCK as u32 + lane < left {
                    let mask = low_mask(width(widths, m as usize));
                    let field = Staged::field(at, position(widths, m, lane), mask);
                    // Unreferenced in 32 bits: a signed reference wraps.
                    sum += reference.wrapping_add(field) as u64;
                }
            }
        }
    }
    sync_threads();
    sum
}
