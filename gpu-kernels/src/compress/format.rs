//! The compressed formats and the index arithmetic their decoders share.
//!
//! All buffers are arrays of little-endian `u32` words.
//!
//! **GPU-FOR** (thesis §5.3.1). Values are cut into blocks of [`BLOCK`] = 128, each block into
//! [`MINIBLOCKS`] = 4 miniblocks of [`MINIBLOCK`] = 32. A block is stored as
//!
//! ```text
//! word 0      reference r (the values are stored as v - r, wrapping)
//! word 1      bit widths b0 | b1 << 8 | b2 << 16 | b3 << 24, each 0..=32
//! b0 words    miniblock 0: value j at bits [j * b0, j * b0 + b0) of the miniblock, horizontal
//! b1 words    miniblock 1 ...
//! ```
//!
//! so a block takes `2 + b0 + b1 + b2 + b3` words (a miniblock of width b takes b words; width
//! 0 is a constant miniblock of no words). The data array is the blocks back to back; the
//! block-starts array holds each block's word offset and, last, the data length (blocks + 1
//! entries); [`ForHeader`] holds the block size, the miniblock count and the total count. The
//! last block is padded with values equal to its reference.
//!
//! **GPU-DFOR** (§5.4.1). The values are cut into groups of D blocks (D = [`DforHeader::
//! group_blocks`], 1..=[`MAX_GROUP_BLOCKS`]). For a group of m values x0..x(m-1) the deltas
//! `x(k+1) - x(k)` (wrapping `u32`) fill slots 0..m-2, slot m-1 and the padding up to whole
//! blocks (the thesis pads with 0) repeat the last delta, which no decoder reads and which
//! adds no bits to its block, and the deltas are stored as GPU-FOR blocks. The group's first value x0 is
//! stored in the data array right before the group's first block; the block starts still point
//! at the blocks. A decoder gets `x(i) = x0 + exclusive_prefix_sum(deltas)[i]`, wrapping, so
//! every input round-trips exactly, unsorted or descending too: a block's reference may be the
//! signed minimum of its deltas (read as `i32`), which keeps small negative deltas small.
//!
//! **RFOR**: run-length encoding (values, run lengths), both arrays stored as GPU-FOR.
//!
//! **NSF**: every value in 1, 2 or 4 bytes ([`NsfHeader::value_bytes`]), packed little-endian
//! in a byte stream padded to whole words, as `v - r` for one reference r of the whole column
//! ([`NsfHeader::reference`]: 0 in the thesis' NSF; the column's minimum where that takes fewer
//! bytes, a frame of reference as GPU-FOR's but one for the column). A reference leaves room
//! for every stored value: `r + (2^(8 * bytes) - 1)` fits 32 bits, so no value wraps.
//! **NSV**: value i in `code(i) + 1` bytes, the 2-bit codes 16 per word (value i at bits
//! `2 * (i % 16)` of word `i / 16`), the bytes back to back in a second stream padded to whole
//! words. **RLE**: run values and run lengths, two plain arrays.
//!
//! **Vertical (GPU-SIMDBP128, §5.3.3)**: blocks of [`VERTICAL_BLOCK`] = 4096 values, one lane
//! per thread of a 128-thread block: value i of a block goes to lane `i % 128`, slot `i / 128`
//! (0..32), as SIMD-BP128 stripes values over its 4 SSE lanes. Each lane packs its 32 slots with
//! the block's one width b into b words (a value that crosses a word boundary continues in
//! the lane's next word), and word k of lane l is stored at `k * 128 + l`, so a warp reading
//! its word k reads 32 consecutive words. A block is `[reference, width, 128 * b
//! words]`; the block starts are as GPU-FOR's.
//!
//! Signed columns are encoded as their bit patterns (an `i32` cast to `u32`): FOR and DFOR pick
//! the reference among the unsigned and the signed minimum, so small negative values cost no
//! more bits than small positive ones.

/// Values per GPU-FOR block.
pub const BLOCK: usize = 128;
/// Miniblocks per GPU-FOR block.
pub const MINIBLOCKS: usize = 4;
/// Values per miniblock.
pub const MINIBLOCK: usize = BLOCK / MINIBLOCKS;
/// Words before a block's miniblocks: the reference and the bit widths.
pub const BLOCK_HEADER_WORDS: usize = 2;
/// The largest bit width.
pub const MAX_WIDTH: u32 = 32;
/// The most words one GPU-FOR block takes.
pub const MAX_BLOCK_WORDS: usize = BLOCK_HEADER_WORDS + MINIBLOCKS * MAX_WIDTH as usize;
/// The thesis' blocks per GPU-DFOR group (D = 4, §5.3.2).
pub const DEFAULT_GROUP_BLOCKS: u32 = 4;
/// The largest D a GPU-DFOR header may hold (the thesis measured up to 32).
pub const MAX_GROUP_BLOCKS: u32 = 32;
/// Lanes of a vertical block (threads of the thread block that decodes it).
pub const VERTICAL_LANES: usize = 128;
/// Values per lane of a vertical block: 32, so a lane of width b ends on a word boundary.
pub const VERTICAL_SLOTS: usize = 32;
/// Values per vertical block.
pub const VERTICAL_BLOCK: usize = VERTICAL_LANES * VERTICAL_SLOTS;
/// NSV length codes per word.
pub const NSV_CODES_PER_WORD: usize = 16;

/// Defines a `#[repr(C)]` header of `u32` fields, Pod on the host (which uploads it).
macro_rules! header {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[cfg_attr(
            not(target_arch = "nvptx64"),
            derive(bytemuck::Pod, bytemuck::Zeroable)
        )]
        pub struct $name {
            $($(#[$fm])* pub $field: u32,)*
        }
    };
}

header! {
    /// The header of a GPU-FOR column.
    ForHeader {
        /// Values per block: [`BLOCK`].
        block_size,
        /// Miniblocks per block: [`MINIBLOCKS`].
        miniblock_count,
        /// Values in the column.
        total_count,
    }
}

header! {
    /// The header of a GPU-DFOR column.
    DforHeader {
        /// Values per block: [`BLOCK`].
        block_size,
        /// Miniblocks per block: [`MINIBLOCKS`].
        miniblock_count,
        /// Values in the column.
        total_count,
        /// D, the blocks per delta group, 1..=[`MAX_GROUP_BLOCKS`].
        group_blocks,
    }
}

header! {
    /// The header of a run-length column (RLE or RFOR).
    RunHeader {
        /// Values in the column (the sum of the run lengths).
        total_count,
        /// Runs.
        run_count,
    }
}

header! {
    /// The header of an NSF column.
    NsfHeader {
        /// Values in the column.
        total_count,
        /// Bytes per value: 1, 2 or 4.
        value_bytes,
        /// The reference added to every stored value (0 where there is none): at most
        /// [`nsf_max_reference`]`(value_bytes)`.
        reference,
    }
}

header! {
    /// The header of an NSV column.
    NsvHeader {
        /// Values in the column.
        total_count,
        /// Bytes of the value stream (the sum of the values' lengths).
        data_bytes,
    }
}

header! {
    /// The header of a vertical (GPU-SIMDBP128) column.
    VerticalHeader {
        /// Values per block: [`VERTICAL_BLOCK`].
        block_size,
        /// Lanes per block: [`VERTICAL_LANES`].
        lanes,
        /// Values in the column.
        total_count,
    }
}

/// Blocks of `block` values that hold `n` values.
#[inline(always)]
pub const fn blocks_for(n: usize, block: usize) -> usize {
    n.div_ceil(block)
}

/// Bits needed to store `x`: 0 for 0, 32 for values of 2^31 and more.
#[inline(always)]
pub const fn bits_needed(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// The width of miniblock `m` (0..4) in a bit-width word.
#[inline(always)]
pub const fn width(widths: u32, m: usize) -> u32 {
    (widths >> (8 * m)) & 0xff
}

/// A GPU-FOR block's header from its words (at least [`BLOCK_HEADER_WORDS`]): its reference
/// and its bit-width word.
#[inline(always)]
pub const fn block_header(block: &[u32]) -> (u32, u32) {
    (block[0], block[1])
}

/// The bit-width word of four miniblock widths.
#[inline(always)]
pub const fn pack_widths(w: [u32; MINIBLOCKS]) -> u32 {
    w[0] | w[1] << 8 | w[2] << 16 | w[3] << 24
}

/// Whether every width in a bit-width word is at most [`MAX_WIDTH`]: the condition under
/// which [`miniblock_offsets`] is exact and a block fits [`MAX_BLOCK_WORDS`].
#[inline(always)]
pub const fn widths_valid(widths: u32) -> bool {
    width(widths, 0) <= MAX_WIDTH
        && width(widths, 1) <= MAX_WIDTH
        && width(widths, 2) <= MAX_WIDTH
        && width(widths, 3) <= MAX_WIDTH
}

/// The miniblocks' word offsets (after the two header words), one byte each: the exclusive
/// prefix sum of the widths by shifts (thesis Algorithm 7). Exact for widths up to 32 (the sums
/// stay below 256, so no byte carries into the next).
#[inline(always)]
pub const fn miniblock_offsets(widths: u32) -> u32 {
    (widths << 8)
        .wrapping_add(widths << 16)
        .wrapping_add(widths << 24)
}

/// The word offset of miniblock `m` after the block's two header words.
#[inline(always)]
pub const fn miniblock_offset(widths: u32, m: usize) -> u32 {
    (miniblock_offsets(widths) >> (8 * m)) & 0xff
}

/// Words of a block whose bit-width word is `widths` (valid widths).
#[inline(always)]
pub const fn block_words(widths: u32) -> u32 {
    BLOCK_HEADER_WORDS as u32 + miniblock_offset(widths, 3) + width(widths, 3)
}

/// Where value `i` (0..32) of a miniblock of `width` starts: the word index in the block and
/// the bit in that word (thesis Algorithm 6, lines 12-16).
#[inline(always)]
pub const fn miniblock_position(widths: u32, m: usize, i: usize) -> (usize, u32) {
    let b = width(widths, m);
    let bit = b * i as u32;
    let word = BLOCK_HEADER_WORDS as u32 + miniblock_offset(widths, m) + bit / 32;
    (word as usize, bit % 32)
}

/// Where value `i` of a block is in the block's words: the word index and the bit.
#[inline(always)]
pub const fn block_position(widths: u32, i: usize) -> (usize, u32) {
    miniblock_position(widths, i / MINIBLOCK, i % MINIBLOCK)
}

/// Whether a value of `width` bits starting at `bit` runs into the next word: only then does a
/// decoder need to read it (the last value of a buffer never does, so no read goes past it).
#[inline(always)]
pub const fn spans_next(bit: u32, width: u32) -> bool {
    bit + width > 32
}

/// The `width`-bit value at `bit` of the 64-bit window `lo | hi << 32` (Algorithm 6, line 17);
/// `hi` matters only where [`spans_next`] says so.
#[inline(always)]
pub const fn extract(lo: u32, hi: u32, bit: u32, width: u32) -> u32 {
    let window = (lo as u64 | (hi as u64) << 32) >> bit;
    (window & ((1u64 << width) - 1)) as u32
}

/// A value from its reference and stored offset (wrapping, as the encoder subtracted).
#[inline(always)]
pub const fn unreference(reference: u32, stored: u32) -> u32 {
    reference.wrapping_add(stored)
}

/// Value `i` of a GPU-FOR column (its `data` and `starts` arrays) read alone: its block's
/// start, the block's header, then the one or two words that hold it (none in a miniblock of
/// width 0, whose values are the reference: its position may lie past the data).
///
/// # Safety
/// `data` and `starts` are a validated GPU-FOR column that holds value `i`.
#[inline(always)]
pub unsafe fn for_value_at(data: *const u32, starts: *const u32, i: usize) -> u32 {
    // SAFETY: the block holding value `i`, its header and the words its widths give.
    unsafe {
        let block = data.add(starts.add(i / BLOCK).read() as usize);
        let (reference, widths) = (block.read(), block.add(1).read());
        let (word, bit) = block_position(widths, i % BLOCK);
        let w = width(widths, i % BLOCK / MINIBLOCK);
        let lo = if w == 0 { 0 } else { block.add(word).read() };
        let hi = if spans_next(bit, w) {
            block.add(word + 1).read()
        } else {
            0
        };
        unreference(reference, extract(lo, hi, bit, w))
    }
}

/// Index in the data array of a DFOR group's first value, from the start of its first block.
#[inline(always)]
pub const fn dfor_first_value_index(group_first_block_start: u32) -> usize {
    (group_first_block_start as usize).saturating_sub(1)
}

/// Where slot `i` (0..4096) of a vertical block of `width` is: the word index among the
/// block's packed words (after its two header words) and the bit. A value that
/// [`spans_next`] continues in its lane's next word, [`VERTICAL_LANES`] words further.
#[inline(always)]
pub const fn vertical_position(width: u32, i: usize) -> (usize, u32) {
    let lane = i % VERTICAL_LANES;
    let bit = width * (i / VERTICAL_LANES) as u32;
    ((bit / 32) as usize * VERTICAL_LANES + lane, bit % 32)
}

/// Words of a vertical block of `width` (valid width).
#[inline(always)]
pub const fn vertical_block_words(width: u32) -> usize {
    BLOCK_HEADER_WORDS + VERTICAL_LANES * width as usize
}

/// The largest NSF reference for `value_bytes`-byte values: one that no stored value can
/// carry past 32 bits (0 for 4 bytes).
#[inline(always)]
pub const fn nsf_max_reference(value_bytes: u32) -> u32 {
    if value_bytes >= 4 {
        0
    } else {
        u32::MAX - ((1u32 << (8 * value_bytes)) - 1)
    }
}

/// Where value `i` of a byte stream of `bytes`-byte values (NSF) or value starting at byte
/// `byte` (NSV) is: the word index and the bit.
#[inline(always)]
pub const fn byte_position(byte: usize) -> (usize, u32) {
    (byte / 4, (byte % 4) as u32 * 8)
}

/// Bytes of NSV value `i` from its length word (the word `i / 16` of the length array).
#[inline(always)]
pub const fn nsv_len(codes: u32, i: usize) -> u32 {
    ((codes >> (2 * (i % NSV_CODES_PER_WORD))) & 3) + 1
}

/// Bytes NSV uses for `x`: 1 to 4.
#[inline(always)]
pub const fn nsv_bytes(x: u32) -> u32 {
    let b = bits_needed(x).div_ceil(8);
    if b == 0 { 1 } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_the_prefix_sums_of_the_widths() {
        for w in [[7, 8, 9, 10], [32, 32, 32, 32], [0, 0, 0, 0], [0, 32, 0, 1]] {
            let word = pack_widths(w);
            assert!(widths_valid(word));
            let mut acc = 0;
            for (m, &b) in w.iter().enumerate() {
                assert_eq!(width(word, m), b);
                assert_eq!(miniblock_offset(word, m), acc);
                acc += b;
            }
            assert_eq!(block_words(word), 2 + acc);
        }
        assert!(!widths_valid(pack_widths([0, 33, 0, 0])));
    }

    #[test]
    fn extraction_reads_across_words() {
        // Width 5 at bit 30: two low bits in the first word, three in the second.
        let (lo, hi) = (0b10 << 30, 0b101);
        assert!(spans_next(30, 5));
        assert_eq!(extract(lo, hi, 30, 5), 0b10110);
        assert_eq!(extract(u32::MAX, 0, 0, 32), u32::MAX);
        assert_eq!(extract(123, 456, 7, 0), 0);
    }

    #[test]
    fn positions_follow_the_layouts() {
        let word = pack_widths([3, 0, 32, 1]);
        assert_eq!(block_position(word, 31), (2 + 2, 29));
        assert_eq!(block_position(word, 64), (2 + 3, 0));
        assert_eq!(block_position(word, 127), (2 + 3 + 32, 31));
        assert_eq!(vertical_position(5, 129), (1, 5));
        assert_eq!(vertical_position(5, 128 * 7), (128, 3));
        assert_eq!(nsv_len(0b11_00_10_01 << 4, 3), 3);
        assert_eq!((nsv_bytes(0), nsv_bytes(255), nsv_bytes(256)), (1, 1, 2));
        assert_eq!(nsv_bytes(u32::MAX), 4);
    }
}
