//! LoadBitPack (thesis §5.3.2): the block-wide load of a tile of a GPU-FOR column. A query
//! kernel that reads a compressed column calls it where it would call `block_load`, and gets
//! the same items in the same places of the tile.
//!
//! The thread block copies the words of its tile's `NT * IPT / 128` GPU-FOR blocks into shared
//! memory with coalesced reads (one read of the compressed bytes), then every thread decodes
//! its items there: the block's reference and bit-width word, the miniblock's word offset
//! from the widths' byte-wise prefix sum (Algorithm 7, no loop over the miniblocks), and the
//! value from one or two words (Algorithm 6).
use super::format::{
    BLOCK, MAX_BLOCK_WORDS, MINIBLOCK, block_position, blocks_for, extract, spans_next,
    unreference, width,
};
use crate::arch::{Shared, sync_threads, thread_idx};
use crate::block::Tile;

/// GPU-FOR blocks in a tile of `NT * IPT` values.
pub const fn tile_blocks(nt: usize, ipt: usize) -> usize {
    nt * ipt / BLOCK
}

/// Shared words [`load_bitpack`] needs for a tile of `NT * IPT` values: each block's offset,
/// then the blocks at their largest.
pub const fn bitpack_shared_words(nt: usize, ipt: usize) -> usize {
    tile_blocks(nt, ipt) * (1 + MAX_BLOCK_WORDS)
}

/// Loads tile `tile` of a GPU-FOR column of `n` values (its `data` and `starts` arrays) into
/// `items`, in the places `block_load` gives them (`Tile::<u32, NT, IPT>::offset`); items past
/// `n` are left as they were. Called by the whole block; `sh` is free again on return.
///
/// # Safety
/// `data` and `starts` are a validated GPU-FOR column of `n` values (block starts monotonic,
/// each block as long as its widths say, the last start the data's length); `tile` holds
/// values (`tile * NT * IPT < n`); `sh` holds [`bitpack_shared_words`]`(NT, IPT)` words.
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
    let d = tile_blocks(NT, IPT);
    let t = thread_idx();
    let first = tile * d;
    let blocks = blocks_for(n, BLOCK).min(first + d) - first;
    // SAFETY: the column has `blocks_for(n)` + 1 starts; first + blocks is at most that.
    let (w0, w1) = unsafe {
        (
            starts.add(first).read() as usize,
            starts.add(first + blocks).read() as usize,
        )
    };
    let words = sh.offset(d);
    if t < blocks {
        // SAFETY: t < blocks <= d, a start of the column and a slot of `sh`.
        unsafe { sh.write(t, starts.add(first + t).read() - w0 as u32) };
    }
    let mut i = t;
    while i < w1 - w0 {
        // SAFETY: the tile's blocks are data[w0..w1], at most d blocks of MAX_BLOCK_WORDS.
        unsafe { words.write(i, data.add(w0 + i).read()) };
        i += NT;
    }
    sync_threads();
    let base = tile * NT * IPT;
    // A thread's items come in runs of V consecutive values (the tile's vector width), which
    // lie in one miniblock (V divides 32): the block's header, the width and the miniblock's
    // offset are read once per run, and the run's values follow at bits `w` apart.
    let v = Tile::<u32, NT, IPT>::V;
    const { assert!(MINIBLOCK % Tile::<u32, NT, IPT>::V == 0) };
    for g in 0..IPT / v {
        let o = Tile::<u32, NT, IPT>::offset(t, g * v);
        if base + o >= n {
            break;
        }
        let (b, first) = (o / BLOCK, o % BLOCK);
        // SAFETY: block b < blocks holds the run; its words lie in `words` from its offset,
        // and a value reads its word, and the next one only where it runs into it.
        unsafe {
            let at = sh.read(b) as usize;
            let (reference, widths) = (words.read(at), words.read(at + 1));
            let w = width(widths, first / MINIBLOCK);
            let (word, bit) = block_position(widths, first);
            let mut pos = (at + word) * 32 + bit as usize;
            for (i, item) in items[g * v..g * v + v].iter_mut().enumerate() {
                if base + o + i < n {
                    let (word, bit) = (pos / 32, (pos % 32) as u32);
                    let lo = words.read(word);
                    let hi = if spans_next(bit, w) {
                        words.read(word + 1)
                    } else {
                        0
                    };
                    *item = unreference(reference, extract(lo, hi, bit, w));
                }
                pos += w as usize;
            }
        }
    }
    sync_threads();
}
