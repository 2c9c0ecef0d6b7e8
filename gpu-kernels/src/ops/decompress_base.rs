//! GPU decoders of the baseline schemes of thesis §5.6 (NSF, NSV, RLE and the vertical
//! GPU-SIMDBP128 layout of §5.3.3) and of RFOR (RLE whose run values and lengths are GPU-FOR
//! columns): for each, decompression to a plain column and
//! decode-and-sum, the two micro-benchmarks GPU-FOR's decoders (`ops::decompress`) are
//! measured by. The formats and their index arithmetic are [`crate::compress::format`]'s.
//!
//! Every kernel but [`NSV_TILE_BYTES`] works with any grid: blocks loop over their tiles, and
//! the sums add once per block (one atomic per tile on the one word would bound a narrow
//! column's time). The host passes columns that were validated when built
//! (`tessera_host::compress::validate`), and each kernel's reads rely on that.
//!
//! Index arithmetic inside a tile is 32-bit: `usize` is 64 bits on nvptx and doubles the
//! instructions of a decode.

use crate::compress::format::{NSV_CODES_PER_WORD, VERTICAL_BLOCK, VERTICAL_LANES};

/// Values per tile of the NSV kernels: the per-tile byte offsets that the host keeps with a
/// device NSV column ([`NSV_TILE_BYTES`], then an exclusive scan) count bytes of tiles of this
/// many values, so every NSV kernel has this tile.
pub const NSV_TILE: usize = 2048;

/// Tiles `[first, last)` of `tiles` that block `block` of a grid of `grid` takes when each
/// block takes a contiguous range ([`RLE_DECOMPRESS`] carries its run cursor from one tile to
/// the next): ranges of `tiles / grid` or one more, in order, covering every tile once.
#[inline(always)]
pub fn block_tiles(block: usize, grid: usize, tiles: usize) -> (usize, usize) {
    let share = |b: usize| (b as u64 * tiles as u64 / grid as u64) as usize;
    (share(block), share(block + 1))
}

/// The bytes of the first `count` (0..=16) values of an NSV length word.
#[inline(always)]
pub const fn nsv_word_bytes(codes: u32, count: u32) -> u32 {
    let mut bytes = 0;
    let mut i = 0;
    while i < NSV_CODES_PER_WORD {
        if (i as u32) < count {
            bytes += crate::compress::format::nsv_len(codes, i);
        }
        i += 1;
    }
    bytes
}

const _: () = assert!(VERTICAL_LANES == 128 && VERTICAL_BLOCK == 128 * 32);

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{
        Shared, ballot, copy_async_wait_all, copy_async_words, funnel_shr, lane_id,
        load_shared_u32, load_vector, low_mask, popc, sync_threads, thread_idx,
    };
    use crate::block::{Tile, block_exclusive_sum};
    use crate::compress::format::{
        BLOCK_HEADER_WORDS, VERTICAL_BLOCK, VERTICAL_LANES, byte_position, extract, nsv_len,
        spans_next, unreference, vertical_position,
    };

    /// The values of the NSF tile of `B`-byte values that starts at value `start` (a multiple
    /// of the tile) into `items`, in `block_load`'s places, 0 past the `left` values the tile
    /// holds. A thread's run of 4 consecutive values (the tile's vector width) is `B` whole
    /// words (B divides 4), read with one `B`-word vector load, so a warp's loads coalesce.
    ///
    /// # Safety
    /// `data` is a valid, 16-byte aligned NSF column of `B`-byte values holding `start +
    /// left` values; `left` > 0.
    #[inline(always)]
    pub unsafe fn nsf_load<const B: usize, const NT: usize, const IPT: usize>(
        data: *const u32,
        start: usize,
        left: u32,
        items: &mut [u32; IPT],
    ) {
        const { assert!(Tile::<u32, NT, IPT>::V == 4 && 4 % B == 0) };
        let t = thread_idx() as u32;
        let full = left as usize >= NT * IPT;
        // SAFETY: `start` is a multiple of 4 values, so of `B` words' worth.
        let base = unsafe { data.add(start * B / 4) };
        for g in 0..IPT / 4 {
            let o = (g * NT * 4) as u32 + 4 * t;
            let at = (o * B as u32 / 4) as usize;
            let words: [u32; B] = if full {
                // SAFETY: a full tile's words exist; `at` is a multiple of B words from a
                // 16-byte aligned base that is one too, so the access is aligned.
                unsafe { load_vector::<u32, B>(base.add(at)) }
            } else {
                core::array::from_fn(|j| {
                    // Word j holds values from o + j * 4 / B on: it exists where that one does.
                    if o + ((j * 4 / B) as u32) < left {
                        // SAFETY: the word of a value of the column.
                        unsafe { base.add(at + j).read() }
                    } else {
                        0
                    }
                })
            };
            for j in 0..4 {
                let (w, bit) = byte_position(j * B);
                let v = extract(words[w], 0, bit, 8 * B as u32);
                // Padding bytes past the column are not validated: never let them through.
                items[g * 4 + j] = if full || o + (j as u32) < left { v } else { 0 };
            }
        }
    }

    /// The sum of a thread's decoded NSF values: in 32 bits where its values of at most 16
    /// bits cannot carry out of them.
    #[inline(always)]
    pub fn nsf_items_sum<const B: usize, const IPT: usize>(items: &[u32; IPT]) -> u64 {
        if B < 4 && IPT <= 1 << 16 {
            items.iter().fold(0u32, |s, &v| s + v) as u64
        } else {
            items.iter().map(|&v| v as u64).sum()
        }
    }

    /// Shared words that stage an NSV tile's bytes: its values at 4 bytes each, the word a
    /// tile that starts inside a word adds, and a spare word that a value of the last word
    /// reads as its next.
    pub const fn nsv_staged_words(tile: usize) -> usize {
        tile + 2
    }

    /// The values of NSV tile `tile` into `items` (in `block_load`'s places, 0 past the
    /// column's end); returns the values the tile holds. Each item's byte offset in the tile is
    /// a block-wide exclusive scan of the lengths, the tile's first byte comes from `offsets`,
    /// and the tile's bytes are staged in shared memory with coalesced loads before each
    /// thread extracts its values. Called by the whole block; `sh` and `temp` are free again
    /// on return.
    ///
    /// # Safety
    /// `lengths` and `data` are a valid NSV column of `n` values, `offsets` its tiles' first
    /// bytes (tiles of `NT * IPT` values); `tile` holds values; `sh` holds
    /// [`nsv_staged_words`]`(NT * IPT)` words, `temp` the block scan's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn nsv_load<const NT: usize, const IPT: usize>(
        lengths: *const u32,
        data: *const u32,
        offsets: *const u32,
        n: usize,
        tile: usize,
        sh: Shared<u32>,
        temp: Shared<u32>,
        items: &mut [u32; IPT],
    ) -> u32 {
        const { assert!(NT * IPT == super::NSV_TILE && Tile::<u32, NT, IPT>::V == 4) };
        let t = thread_idx() as u32;
        let start = tile * NT * IPT;
        let left = (n - start).min(NT * IPT) as u32;
        let full = left as usize == NT * IPT;
        // SAFETY: the tile holds values, so it has an offset.
        let first_byte = unsafe { offsets.add(tile).read() };
        // A thread's run of 4 values has its 4 codes in one byte of one length word.
        let mut lens = [0u32; IPT];
        for g in 0..IPT / 4 {
            let o = (g * NT * 4) as u32 + 4 * t;
            if full || o < left {
                // SAFETY: value start + o exists, so its length word does.
                let codes = unsafe { lengths.add((start + o as usize) / 16).read() };
                for j in 0..4 {
                    if full || o + (j as u32) < left {
                        lens[g * 4 + j] = nsv_len(codes, (o as usize) + j);
                    }
                }
            }
        }
        let mut at = [0u32; IPT];
        let bytes = block_exclusive_sum::<u32, u32, NT, IPT>(&lens, &mut at, temp);
        // The tile's bytes [first_byte, first_byte + bytes) lie in data words [w0, w1): at
        // most NT * IPT + 1 words, as each value takes at most 4 bytes.
        let w0 = first_byte / 4;
        let words = (first_byte + bytes).div_ceil(4) - w0;
        for i in 0..nsv_staged_words(NT * IPT).div_ceil(NT) {
            let w = (i * NT) as u32 + t;
            if w < words {
                // SAFETY: a word of the tile's bytes, within the data (the lengths sum to the
                // data bytes); shared word w < words <= nsv_staged_words - 1, this thread's.
                unsafe { sh.write(w as usize, data.add((w0 + w) as usize).read()) };
            }
        }
        sync_threads();
        let base = sh.addr(0);
        let skip = first_byte % 4;
        for k in 0..IPT {
            if full || lens[k] != 0 {
                let (w, bit) = byte_position((skip + at[k]) as usize);
                let a = base + 4 * w as u32;
                // SAFETY: the value's word and the next lie in the staged words (w + 1 <=
                // nsv_staged_words - 1); the next word's bits past the value are masked off.
                let (lo, hi) = unsafe { (load_shared_u32(a), load_shared_u32(a + 4)) };
                items[k] = funnel_shr(lo, hi, bit) & low_mask(8 * lens[k]);
            }
        }
        sync_threads();
        left
    }

    /// The first index `i` in `[lo, hi)` with `starts[i] > key`, or `hi`, found by the warp:
    /// each round its 32 lanes probe 32 evenly spaced starts and a ballot narrows the range
    /// 32-fold, so a search of 2^32 runs takes 7 rounds of one load each. Every lane gets the
    /// result (uniform, from the ballots).
    ///
    /// # Safety
    /// `starts[lo..hi]` are valid reads, ascending; the warp is converged.
    #[inline(always)]
    pub unsafe fn warp_upper_bound(starts: *const u32, mut lo: u32, mut hi: u32, key: u32) -> u32 {
        let lane = lane_id();
        while lo < hi {
            let step = (hi - lo).div_ceil(32);
            // At most 31 * 2^27 < 2^32: no overflow.
            let d = lane * step;
            // SAFETY: lo + d < hi.
            let below = d < hi - lo && unsafe { starts.add((lo + d) as usize).read() } <= key;
            // The probes at or below the key are the first lanes', as the starts ascend.
            let c = popc(ballot(below));
            if c == 0 {
                return lo;
            }
            // The answer is past probe c - 1 and at most probe c (when there is one).
            hi = lo + (c.saturating_mul(step)).min(hi - lo);
            lo += (c - 1) * step + 1;
        }
        lo
    }

    /// Shared buffers of [`rle_expand`] for a tile of `NT * IPT` values.
    pub struct RleShared {
        /// One flag per position of the tile: 1 where a run starts (after the tile's first).
        pub flags: Shared<u32>,
        /// The values of the runs that cover the tile, in order.
        pub values: Shared<u32>,
        /// The block scan's.
        pub temp: Shared<u32>,
    }

    /// Expands tiles `[first, last)` (of `NT * IPT` output positions) of an RLE column of
    /// `runs` runs and `n` values into `out`. The run that holds a tile's first position comes
    /// from a warp search of the run starts (the whole column for the block's first tile, two
    /// starts after the previous tile's last run for the others), the one that holds its last
    /// position from a search among at most `NT * IPT` starts. The tile's runs flag their
    /// first positions in shared memory and stage their values; a block-wide scan of the flags
    /// gives every position its run. The work per tile is the same whatever the run lengths:
    /// long runs cost no thread more than short ones.
    ///
    /// The run values come from `value(r)`, so that RLE reads them from a plain array and
    /// RFOR decodes each from its GPU-FOR column.
    ///
    /// # Safety
    /// `value(r)` reads run `r`'s value for every run below `runs`, and `starts` holds the
    /// runs' first positions (an exclusive scan of lengths of at least 1 that sum to `n`);
    /// `out` holds `n` values, 16-byte aligned; `first < last <= ` the tiles of `n`; the
    /// buffers of `sh` hold `NT * IPT`, `NT * IPT` and the block scan's words. Called by the
    /// whole block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rle_expand<const NT: usize, const IPT: usize>(
        value: impl Fn(usize) -> u32,
        starts: *const u32,
        runs: u32,
        n: u32,
        first: usize,
        last: usize,
        sh: &RleShared,
        out: *mut u32,
    ) {
        let t = thread_idx() as u32;
        let tile_values = (NT * IPT) as u32;
        // The search range of the first start past the tile's first position: run 0 starts at
        // 0, so it is run 1 on, in the block's first tile.
        let (mut lo, mut hi) = (1, runs);
        for tile in first..last {
            let p0 = (tile * NT * IPT) as u32;
            let left = (n - p0).min(tile_values);
            // SAFETY: the starts ascend (lengths of at least 1); lo <= hi <= runs.
            let ra = unsafe { warp_upper_bound(starts, lo, hi, p0) } - 1;
            // Runs start at least one position apart, so the run past the tile's last
            // position is at most `left` runs after `ra` (and ra + left <= p0 + left <= n).
            // SAFETY: as above, within the starts.
            let end =
                unsafe { warp_upper_bound(starts, ra + 1, runs.min(ra + left), p0 + left - 1) };
            let cnt = end - ra;
            for k in 0..IPT {
                // SAFETY: tile positions, each written by one thread.
                unsafe { sh.flags.write(k * NT + t as usize, 0) };
            }
            sync_threads();
            for k in 0..IPT {
                let i = (k * NT) as u32 + t;
                if i < cnt {
                    // SAFETY: run ra + i < end <= runs exists; run i of the tile has its
                    // value slot (cnt <= left), and the runs after the first start inside the
                    // tile, at distinct positions.
                    unsafe {
                        let r = (ra + i) as usize;
                        sh.values.write(i as usize, value(r));
                        if i > 0 {
                            sh.flags.write((starts.add(r).read() - p0) as usize, 1);
                        }
                    }
                }
            }
            sync_threads();
            // SAFETY: tile positions, written before the barrier.
            let f: [u32; IPT] = core::array::from_fn(|k| unsafe {
                sh.flags.read(Tile::<u32, NT, IPT>::offset(t as usize, k))
            });
            let mut run = [0u32; IPT];
            block_exclusive_sum::<u32, u32, NT, IPT>(&f, &mut run, sh.temp);
            // Position o is in the tile's run (flags at or before o) - 1, the first run being
            // run 0: its exclusive count plus its own flag. No run starts past the tile's
            // last position, so every item of the tile's tail reads a staged value.
            // SAFETY: run[k] + f[k] < cnt, staged before the scan's barriers.
            let items: [u32; IPT] =
                core::array::from_fn(|k| unsafe { sh.values.read((run[k] + f[k]) as usize) });
            // SAFETY: the tile's `left` positions of `out`; the tile starts 16-byte aligned.
            unsafe {
                crate::block::block_store::<u32, NT, IPT>(
                    out.add(p0 as usize),
                    left as usize,
                    &items,
                )
            };
            // The next tile's first position is past this tile's last run's first, and at
            // most in the run after it. The flags are zeroed and the values restaged only
            // after the next tile's first barrier, when every thread has read this tile's.
            lo = end;
            hi = runs.min(end.saturating_add(1));
        }
    }

    /// Shared words that stage a vertical block: its words at their most, up to 3 before it
    /// (the copy starts at a 16-byte boundary) and up to 3 after (it ends at one).
    pub const VERTICAL_STAGED_WORDS: usize =
        (BLOCK_HEADER_WORDS + VERTICAL_BLOCK + 6).next_multiple_of(4);

    /// Decodes vertical block `k` into `items`: item `s` of thread `l` is slot `s` of lane `l`,
    /// value `s * 128 + l` of the block (all 32 slots, also past the column's end). The block's
    /// words are staged by asynchronous 16-byte copies, then each thread unpacks its lane; a
    /// warp reads word k of 32 consecutive lanes, 32 consecutive words, so neither the copies
    /// nor the shared reads conflict. Called by the whole block; `sh` is free again on return.
    ///
    /// # Safety
    /// `data` and `starts` are a valid vertical column, `data` 16-byte aligned; block `k`
    /// exists; `sh` holds [`VERTICAL_STAGED_WORDS`] words.
    #[inline(always)]
    pub unsafe fn vertical_load<const NT: usize, const IPT: usize>(
        data: *const u32,
        starts: *const u32,
        k: usize,
        sh: Shared<u32>,
        items: &mut [u32; IPT],
    ) {
        const { assert!(NT == VERTICAL_LANES && NT * IPT == VERTICAL_BLOCK) };
        let t = thread_idx() as u32;
        // SAFETY: block k exists, so starts k and k + 1 do.
        let (s0, s1) = unsafe { (starts.add(k).read(), starts.add(k + 1).read()) };
        let a0 = s0 & !3;
        for j in 0..VERTICAL_STAGED_WORDS.div_ceil(4).div_ceil(NT) {
            let q = (j * NT) as u32 + t;
            let word = a0 + 4 * q;
            if word < s1 {
                // SAFETY: data[word..] is 16-byte aligned and holds s1 - word words (s1 is at
                // most the data's length), of which the copy reads at most 4; quad q lies in
                // `sh` (word - a0 < s1 - a0 <= VERTICAL_STAGED_WORDS - 3) and is this thread's.
                unsafe {
                    copy_async_words(
                        sh.addr(0) + 16 * q,
                        data.add(word as usize),
                        (s1 - word).min(4),
                    )
                };
            }
        }
        copy_async_wait_all();
        sync_threads();
        let at = sh.addr(0) + 4 * (s0 - a0);
        // SAFETY: the block's two header words, staged.
        let (reference, width) = unsafe { (load_shared_u32(at), load_shared_u32(at + 4)) };
        let packed = at + 4 * BLOCK_HEADER_WORDS as u32;
        let mask = low_mask(width);
        for (s, item) in items.iter_mut().enumerate() {
            let (w, bit) = vertical_position(width, s * NT + t as usize);
            let a = packed + 4 * w as u32;
            // SAFETY: word w of the lane lies in the staged buffer (below 128 * 32 packed
            // words; for width 0 it is a stale word, masked off); the lane's next word is read
            // only where the value continues in it, inside the block.
            let (lo, hi) = unsafe {
                let hi = if spans_next(bit, width) {
                    load_shared_u32(a + 4 * VERTICAL_LANES as u32)
                } else {
                    0
                };
                (load_shared_u32(a), hi)
            };
            *item = unreference(reference, funnel_shr(lo, hi, bit) & mask);
        }
        sync_threads();
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

/// Both NSF decoders for each value width.
macro_rules! nsf_kernels {
    ($($decompress:ident = $dname:ident, $sum:ident = $sname:ident, $b:literal;)*) => {$(
        crate::kernel! {
            /// Decodes every value of an NSF column of `n` values of this width, over its
            /// `reference`, into `out`; any grid (blocks loop over the tiles).
            $decompress = $dname[NT = 128, IPT = 16](data: *const u32, n: u32, reference: u32, out: *mut u32) {
                let n = n as usize;
                let mut tile = crate::arch::block_idx();
                while tile * NT * IPT < n {
                    let start = tile * NT * IPT;
                    let left = (n - start).min(NT * IPT);
                    let mut items = [0u32; IPT];
                    // SAFETY: the host passes a valid NSF column of `n` values of this width,
                    // 16-byte aligned, and room for `n` in `out`; the tile holds values.
                    unsafe {
                        nsf_load::<$b, NT, IPT>(data, start, left as u32, &mut items);
                        let items = items.map(|v| crate::compress::format::unreference(reference, v));
                        crate::block::block_store::<u32, NT, IPT>(out.add(start), left, &items);
                    }
                    tile += crate::arch::grid_dim();
                }
            }
        }
        crate::kernel! {
            /// Adds every value of an NSF column of `n` values of this width, over its
            /// `reference`, into `*sum` (which the host zeroes); any grid. The stored values
            /// are summed, and the first thread adds `n` references (no value carries past
            /// 32 bits, so the sums agree).
            $sum = $sname[NT = 128, IPT = 16](data: *const u32, n: u32, reference: u32, sum: *mut u64) {
                let temp = crate::shared_array!(nsf_temp: [u64; NT / 32 + 1]);
                let first = crate::arch::block_idx() == 0 && crate::arch::thread_idx() == 0;
                let mut mine = if first { n as u64 * reference as u64 } else { 0 };
                let n = n as usize;
                let mut tile = crate::arch::block_idx();
                while tile * NT * IPT < n {
                    let start = tile * NT * IPT;
                    let mut items = [0u32; IPT];
                    // SAFETY: as in the decompression; values past `n` load as 0.
                    unsafe {
                        nsf_load::<$b, NT, IPT>(data, start, (n - start).min(NT * IPT) as u32, &mut items)
                    };
                    mine += nsf_items_sum::<$b, IPT>(&items);
                    tile += crate::arch::grid_dim();
                }
                // SAFETY: the host passes one word at `sum`.
                unsafe { crate::block::block_sum_into::<NT>(mine, temp, sum) };
            }
        }
    )*};
}

nsf_kernels! {
    NSF_DECOMPRESS_B1 = nsf_decompress_b1, NSF_SUM_B1 = nsf_sum_b1, 1;
    NSF_DECOMPRESS_B2 = nsf_decompress_b2, NSF_SUM_B2 = nsf_sum_b2, 2;
    NSF_DECOMPRESS_B4 = nsf_decompress_b4, NSF_SUM_B4 = nsf_sum_b4, 4;
}

crate::kernel! {
    /// `out[tile]` = the bytes of NSV tile `tile` ([`NSV_TILE`] values) of a column of `n`
    /// values: one block per tile, one length word per thread.
    NSV_TILE_BYTES = nsv_tile_bytes[NT = 128, IPT = 16](lengths: *const u32, n: u32, out: *mut u32) {
        const { assert!(NT * IPT == NSV_TILE && IPT == NSV_CODES_PER_WORD) };
        let temp = crate::shared_array!(nsv_bytes_temp: [u32; NT / 32 + 1]);
        let tile = crate::arch::block_idx();
        let t = crate::arch::thread_idx();
        let first = tile * NT * IPT + t * IPT;
        let n = n as usize;
        let mine = if first < n {
            // SAFETY: the host launches one block per tile of a valid NSV column of `n`
            // values; value `first` exists, so its length word does.
            let codes = unsafe { lengths.add(first / IPT).read() };
            nsv_word_bytes(codes, (n - first).min(IPT) as u32)
        } else {
            0
        };
        // At most 4 * NSV_TILE bytes: no carry out of 32 bits.
        let bytes = crate::block::block_sum::<u32, NT, 1>(&[mine], usize::MAX, temp);
        if t == 0 {
            // SAFETY: one word per tile at `out`.
            unsafe { out.add(tile).write(bytes) };
        }
    }
}

crate::kernel! {
    /// Decodes every value of an NSV column of `n` values into `out`, given each tile's first
    /// byte in `offsets`; any grid.
    NSV_DECOMPRESS = nsv_decompress[NT = 128, IPT = 16](
        lengths: *const u32, data: *const u32, offsets: *const u32, n: u32, out: *mut u32
    ) {
        let sh = crate::shared_array!(nsv_words: [u32; nsv_staged_words(NT * IPT)]);
        let temp = crate::shared_array!(nsv_scan: [u32; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]);
        let n = n as usize;
        let mut tile = crate::arch::block_idx();
        while tile * NT * IPT < n {
            let mut items = [0u32; IPT];
            // SAFETY: the host passes a valid NSV column of `n` values with its tiles' first
            // bytes, and room for `n` in `out` (16-byte aligned); the tile holds values.
            unsafe {
                let left = nsv_load::<NT, IPT>(lengths, data, offsets, n, tile, sh, temp, &mut items);
                let start = tile * NT * IPT;
                crate::block::block_store::<u32, NT, IPT>(out.add(start), left as usize, &items);
            }
            tile += crate::arch::grid_dim();
        }
    }
}

crate::kernel! {
    /// Adds every value of an NSV column of `n` values into `*sum` (which the host zeroes),
    /// given each tile's first byte in `offsets`; any grid.
    ///
    /// The offsets come with the device column: a value's bytes are found only from the
    /// lengths before it, and without per-tile offsets a single pass would need a decoupled
    /// look-back across tiles, which the decode-and-sum then waits on tile by tile.
    NSV_SUM = nsv_sum[NT = 128, IPT = 16](
        lengths: *const u32, data: *const u32, offsets: *const u32, n: u32, sum: *mut u64
    ) {
        let sh = crate::shared_array!(nsv_words: [u32; nsv_staged_words(NT * IPT)]);
        let temp = crate::shared_array!(nsv_scan: [u32; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]);
        let sum_temp = crate::shared_array!(nsv_sum_temp: [u64; NT / 32 + 1]);
        let n = n as usize;
        let mut mine = 0u64;
        let mut tile = crate::arch::block_idx();
        while tile * NT * IPT < n {
            let mut items = [0u32; IPT];
            // SAFETY: as in the decompression; items past `n` stay 0.
            unsafe { nsv_load::<NT, IPT>(lengths, data, offsets, n, tile, sh, temp, &mut items) };
            mine += items.iter().map(|&v| v as u64).sum::<u64>();
            tile += crate::arch::grid_dim();
        }
        // SAFETY: the host passes one word at `sum`.
        unsafe { crate::block::block_sum_into::<NT>(mine, sum_temp, sum) };
    }
}

crate::kernel! {
    /// Expands an RLE column of `runs` runs (`values`, and `starts`, the exclusive scan of the
    /// lengths) and `n` values into `out`; any grid. Each block takes a contiguous range of
    /// output tiles ([`block_tiles`]) so that it finds its first run once and then walks on.
    RLE_DECOMPRESS = rle_decompress[NT = 128, IPT = 16](
        values: *const u32, starts: *const u32, runs: u32, n: u32, out: *mut u32
    ) {
        let sh = RleShared {
            flags: crate::shared_array!(rle_flags: [u32; NT * IPT]),
            values: crate::shared_array!(rle_values: [u32; NT * IPT]),
            temp: crate::shared_array!(rle_scan: [u32; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]),
        };
        let tiles = (n as usize).div_ceil(NT * IPT);
        let (first, last) = block_tiles(crate::arch::block_idx(), crate::arch::grid_dim(), tiles);
        if first < last {
            // SAFETY: the host passes a valid RLE column with its run starts and room for `n`
            // in `out`; this block's tiles hold values; `rle_expand` reads runs below `runs`.
            unsafe {
                let value = |r: usize| values.add(r).read();
                rle_expand::<NT, IPT>(value, starts, runs, n, first, last, &sh, out)
            };
        }
    }
}

crate::kernel! {
    /// Adds `value * length` of every run of an RLE column of `runs` runs into `*sum` (which
    /// the host zeroes), never expanding a run; any grid.
    RLE_SUM = rle_sum[NT = 128, IPT = 16](values: *const u32, lengths: *const u32, runs: u32, sum: *mut u64) {
        let temp = crate::shared_array!(rle_sum_temp: [u64; NT / 32 + 1]);
        let runs = runs as usize;
        let mut mine = 0u64;
        let mut tile = crate::arch::block_idx();
        while tile * NT * IPT < runs {
            let start = tile * NT * IPT;
            let left = (runs - start).min(NT * IPT);
            let (mut v, mut l) = ([0u32; IPT], [0u32; IPT]);
            // SAFETY: the host passes `runs` values and lengths, 16-byte aligned; runs past
            // the column keep length 0.
            unsafe {
                crate::block::block_load::<u32, NT, IPT>(values.add(start), left, &mut v);
                crate::block::block_load::<u32, NT, IPT>(lengths.add(start), left, &mut l);
            }
            for k in 0..IPT {
                // The lengths sum to fewer than 2^32 values, so the total is below 2^64.
                mine = mine.wrapping_add(v[k] as u64 * l[k] as u64);
            }
            tile += crate::arch::grid_dim();
        }
        // SAFETY: the host passes one word at `sum`.
        unsafe { crate::block::block_sum_into::<NT>(mine, temp, sum) };
    }
}

crate::kernel! {
    /// Expands an RFOR column of `runs` runs (run values in GPU-FOR, `values` and
    /// `value_starts`; `starts`, the exclusive scan of the run lengths) and `n` values into
    /// `out`: [`RLE_DECOMPRESS`]'s expansion, each run value decoded where the tile stages it.
    RFOR_DECOMPRESS = rfor_decompress[NT = 128, IPT = 16](
        values: *const u32, value_starts: *const u32, starts: *const u32, runs: u32, n: u32,
        out: *mut u32
    ) {
        let sh = RleShared {
            flags: crate::shared_array!(rfor_flags: [u32; NT * IPT]),
            values: crate::shared_array!(rfor_values: [u32; NT * IPT]),
            temp: crate::shared_array!(rfor_scan: [u32; crate::block::Tile::<u32, NT, IPT>::SCAN_WORDS]),
        };
        let tiles = (n as usize).div_ceil(NT * IPT);
        let (first, last) = block_tiles(crate::arch::block_idx(), crate::arch::grid_dim(), tiles);
        if first < last {
            // SAFETY: the host passes a valid RFOR column (its values a validated GPU-FOR
            // column of `runs` values) with its run starts and room for `n` in `out`; this
            // block's tiles hold values; `rle_expand` reads runs below `runs`.
            unsafe {
                let value = |r: usize| crate::compress::format::for_value_at(values, value_starts, r);
                rle_expand::<NT, IPT>(value, starts, runs, n, first, last, &sh, out)
            };
        }
    }
}

crate::kernel! {
    /// Adds `value * length` of every run of an RFOR column of `runs` runs into `*sum` (which
    /// the host zeroes), never expanding a run: the run values and lengths, both GPU-FOR, are
    /// decoded tile by tile (LoadBitPack, the values' next tile in flight); any grid.
    RFOR_SUM = rfor_sum[NT = 128, IPT = 8](
        values: *const u32, value_starts: *const u32, lengths: *const u32,
        length_starts: *const u32, runs: u32, sum: *mut u64
    ) {
        use crate::compress::load::{bitpack_shared_words, for_each_bitpack_tile, load_bitpack};
        let sh = crate::shared_array!(rfor_value_words: [u32; 2 * bitpack_shared_words(NT, IPT)]);
        let lsh = crate::shared_array!(rfor_length_words: [u32; bitpack_shared_words(NT, IPT)]);
        let temp = crate::shared_array!(rfor_sum_temp: [u64; NT / 32 + 1]);
        let runs = runs as usize;
        let mut mine = 0u64;
        // SAFETY: the host passes a valid RFOR column: two validated GPU-FOR columns of
        // `runs` values each, 16-byte aligned; every thread gets to each tile, which holds
        // runs of both.
        unsafe {
            for_each_bitpack_tile::<NT, IPT>(values, value_starts, runs, sh, |tile, staged| {
                // Items past the runs stay 0 in both: they add nothing.
                let (mut v, mut l) = ([0u32; IPT], [0u32; IPT]);
                staged.load(&mut v);
                load_bitpack::<NT, IPT>(lengths, length_starts, runs, tile, lsh, &mut l);
                for k in 0..IPT {
                    // The lengths sum to fewer than 2^32 values: the total is below 2^64.
                    mine = mine.wrapping_add(v[k] as u64 * l[k] as u64);
                }
            });
        }
        // SAFETY: the host passes one word at `sum`.
        unsafe { crate::block::block_sum_into::<NT>(mine, temp, sum) };
    }
}

crate::kernel! {
    /// Decodes every value of a vertical column of `n` values into `out`; any grid (one
    /// 4096-value block per tile, blocks loop over them). A warp writes 32 consecutive values
    /// per slot.
    VERTICAL_DECOMPRESS = vertical_decompress[NT = 128, IPT = 32](
        data: *const u32, starts: *const u32, n: u32, out: *mut u32
    ) {
        let sh = crate::shared_array!(vertical_words: [u32; VERTICAL_STAGED_WORDS]);
        let t = crate::arch::thread_idx() as u32;
        let mut k = crate::arch::block_idx();
        while k * VERTICAL_BLOCK < n as usize {
            let base = (k * VERTICAL_BLOCK) as u32;
            let left = n - base;
            let mut items = [0u32; IPT];
            // SAFETY: the host passes a valid vertical column of `n` values, 16-byte aligned,
            // and room for `n` in `out`; block k holds values. Values past `n` are not
            // written.
            unsafe {
                vertical_load::<NT, IPT>(data, starts, k, sh, &mut items);
                for (s, &v) in items.iter().enumerate() {
                    let o = (s * NT) as u32 + t;
                    if o < left {
                        out.add((base + o) as usize).write(v);
                    }
                }
            }
            k += crate::arch::grid_dim();
        }
    }
}

crate::kernel! {
    /// Adds every value of a vertical column of `n` values into `*sum` (which the host
    /// zeroes); any grid.
    VERTICAL_SUM = vertical_sum[NT = 128, IPT = 32](data: *const u32, starts: *const u32, n: u32, sum: *mut u64) {
        let sh = crate::shared_array!(vertical_words: [u32; VERTICAL_STAGED_WORDS]);
        let temp = crate::shared_array!(vertical_temp: [u64; NT / 32 + 1]);
        let t = crate::arch::thread_idx() as u32;
        let mut mine = 0u64;
        let mut k = crate::arch::block_idx();
        while k * VERTICAL_BLOCK < n as usize {
            let left = n - (k * VERTICAL_BLOCK) as u32;
            let mut items = [0u32; IPT];
            // SAFETY: the host passes a valid vertical column of `n` values, 16-byte aligned;
            // block k holds values.
            unsafe { vertical_load::<NT, IPT>(data, starts, k, sh, &mut items) };
            for (s, &v) in items.iter().enumerate() {
                // The last block's slots past `n` are padding: not summed.
                if (s * NT) as u32 + t < left {
                    mine += v as u64;
                }
            }
            k += crate::arch::grid_dim();
        }
        // SAFETY: the host passes one word at `sum`.
        unsafe { crate::block::block_sum_into::<NT>(mine, temp, sum) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_tiles_cover_every_tile_once() {
        for tiles in [1, 2, 7, 128, 1000, 2_097_152] {
            for grid in [1, 2, 3, 132, 1000] {
                let grid = grid.min(tiles);
                let mut next = 0;
                for b in 0..grid {
                    let (first, last) = block_tiles(b, grid, tiles);
                    assert_eq!(first, next, "tiles {tiles} grid {grid} block {b}");
                    assert!(last > first, "tiles {tiles} grid {grid} block {b} is empty");
                    next = last;
                }
                assert_eq!(next, tiles);
            }
        }
    }

    #[test]
    fn word_bytes_count_the_first_values() {
        // Codes 0, 1, 2, 3 (lengths 1..4), then zeros.
        let codes = 0b11_10_01_00;
        assert_eq!(nsv_word_bytes(codes, 0), 0);
        assert_eq!(nsv_word_bytes(codes, 3), 1 + 2 + 3);
        assert_eq!(nsv_word_bytes(codes, 4), 10);
        assert_eq!(nsv_word_bytes(codes, 16), 10 + 12);
        assert_eq!(nsv_word_bytes(u32::MAX, 16), 64);
    }
}
