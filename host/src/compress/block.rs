//! The block codec every bit-packed scheme shares: choosing a block's reference, packing a
//! GPU-FOR or vertical block, unpacking a GPU-FOR block, and encoding a column's blocks in
//! parallel with deterministic output.
use rayon::prelude::*;
use tessera_kernels::compress::format::{
    BLOCK, BLOCK_HEADER_WORDS, MAX_BLOCK_WORDS, MINIBLOCK, MINIBLOCKS, VERTICAL_LANES, bits_needed,
    block_position, block_words, extract, pack_widths, spans_next, unreference, vertical_position,
    widths_valid,
};

use crate::{Error, Result};

/// The reference of a block that makes it smallest under `words`: the unsigned or the signed
/// minimum (the signed one keeps negative deltas and bit-cast `i32` values narrow). Ties keep
/// the unsigned one, so the output does not depend on anything but the values.
fn best_reference(values: &[u32], words: impl Fn(u32) -> u32) -> u32 {
    let umin = values.iter().copied().min().unwrap_or(0);
    let smin = values.iter().map(|&v| v as i32).min().unwrap_or(0) as u32;
    if words(smin) < words(umin) {
        smin
    } else {
        umin
    }
}

/// The miniblock widths of `values` stored against `reference`.
fn miniblock_widths(values: &[u32], reference: u32) -> [u32; MINIBLOCKS] {
    let mut w = [0; MINIBLOCKS];
    for (m, mb) in values.chunks(MINIBLOCK).enumerate() {
        // The width of the largest offset is the width of their bitwise or.
        w[m] = bits_needed(mb.iter().fold(0, |acc, &v| acc | v.wrapping_sub(reference)));
    }
    w
}

/// ORs the `width`-bit `x` into `words` at (`word`, `bit`), and where it spans into the next
/// word, into the word `stride` further (1 horizontally, a lane's next word vertically).
fn put(words: &mut [u32], (word, bit): (usize, u32), stride: usize, width: u32, x: u32) {
    if width == 0 {
        return;
    }
    words[word] |= x << bit;
    if spans_next(bit, width) {
        words[word + stride] |= x >> (32 - bit);
    }
}

/// Appends one GPU-FOR block of up to [`BLOCK`] values to `out` (a short last block is padded
/// with its reference, which stores as 0).
pub(crate) fn encode_block(values: &[u32], out: &mut Vec<u32>) {
    encode_block_as(values, out, false)
}

/// [`encode_block`], with `one_width` every miniblock at the block's widest width: the
/// miniblock-free layout of thesis §5.3.3 (one width per block, value `i` at bit
/// `i * width`), still a GPU-FOR block that every decoder reads.
fn encode_block_as(values: &[u32], out: &mut Vec<u32>, one_width: bool) {
    let widths_of = |r: u32| {
        let w = miniblock_widths(values, r);
        if one_width {
            [w.into_iter().max().unwrap_or(0); MINIBLOCKS]
        } else {
            w
        }
    };
    let reference = best_reference(values, |r| widths_of(r).iter().sum());
    let widths = pack_widths(widths_of(reference));
    let start = out.len();
    out.resize(start + block_words(widths) as usize, 0);
    let block = &mut out[start..];
    block[0] = reference;
    block[1] = widths;
    for (i, &v) in values.iter().enumerate() {
        let width = tessera_kernels::compress::format::width(widths, i / MINIBLOCK);
        put(
            block,
            block_position(widths, i),
            1,
            width,
            v.wrapping_sub(reference),
        );
    }
}

/// Appends one vertical block of up to 4096 values to `out`.
pub(crate) fn encode_vertical_block(values: &[u32], out: &mut Vec<u32>) {
    let spread = |r: u32| bits_needed(values.iter().fold(0, |acc, &v| acc | v.wrapping_sub(r)));
    let reference = best_reference(values, spread);
    let width = spread(reference);
    let start = out.len();
    out.resize(
        start + tessera_kernels::compress::format::vertical_block_words(width),
        0,
    );
    let block = &mut out[start..];
    block[0] = reference;
    block[1] = width;
    let packed = &mut block[BLOCK_HEADER_WORDS..];
    for (i, &v) in values.iter().enumerate() {
        put(
            packed,
            vertical_position(width, i),
            VERTICAL_LANES,
            width,
            v.wrapping_sub(reference),
        );
    }
}

/// The GPU-FOR block at the start of `block` (its words, header included) unpacked into `out` (its first
/// `out.len()` values, at most [`BLOCK`]).
pub(crate) fn decode_block(block: &[u32], out: &mut [u32]) -> Result<()> {
    // A DFOR block's slice runs on to the next group's first value: read its own words only.
    let (reference, widths, block) = match block {
        [r, w, ..] if widths_valid(*w) && block_words(*w) as usize <= block.len() => {
            (*r, *w, &block[..block_words(*w) as usize])
        }
        _ => return Err(Error::Data("GPU-FOR block: malformed header".into())),
    };
    // One word of zeros past the largest block, so a value's second word can always be read,
    // as the GPU reads its 64-bit window from shared memory: every index below is at most
    // MAX_BLOCK_WORDS (valid widths), so none fails.
    let mut words = [0u32; MAX_BLOCK_WORDS + 1];
    words[..block.len()].copy_from_slice(block);
    for (i, o) in out.iter_mut().take(BLOCK).enumerate() {
        let width = tessera_kernels::compress::format::width(widths, i / MINIBLOCK);
        let (w, bit) = block_position(widths, i);
        *o = unreference(reference, extract(words[w], words[w + 1], bit, width));
    }
    Ok(())
}

/// The words and block starts (relative to its first word) one encoding task wrote.
#[derive(Default)]
pub(crate) struct Blocks {
    data: Vec<u32>,
    starts: Vec<usize>,
}

impl Blocks {
    /// Appends a GPU-FOR block.
    pub(crate) fn push_for(&mut self, values: &[u32]) {
        self.starts.push(self.data.len());
        encode_block(values, &mut self.data);
    }

    /// Appends a GPU-FOR block of one width ([`encode_block_as`]).
    pub(crate) fn push_for_one_width(&mut self, values: &[u32]) {
        self.starts.push(self.data.len());
        encode_block_as(values, &mut self.data, true);
    }

    /// Appends a vertical block.
    pub(crate) fn push_vertical(&mut self, values: &[u32]) {
        self.starts.push(self.data.len());
        encode_vertical_block(values, &mut self.data);
    }

    /// Appends a word outside any block (a DFOR group's first value).
    pub(crate) fn push_word(&mut self, word: u32) {
        self.data.push(word);
    }
}

/// Encodes `values` `chunk` values per task in parallel with `encode`, and joins the tasks'
/// blocks in order: the column's block starts (one per block, then the data length) and data.
/// The output is the same whatever the thread count.
pub(crate) fn encode_chunks(
    scheme: &str,
    values: &[u32],
    chunk: usize,
    encode: impl Fn(&[u32], &mut Blocks) + Sync,
) -> Result<(Vec<u32>, Vec<u32>)> {
    crate::runtime::check_len(values.len())?;
    let parts: Vec<Blocks> = values
        .par_chunks(chunk.max(1))
        .map(|c| {
            let mut b = Blocks::default();
            encode(c, &mut b);
            b
        })
        .collect();
    let words: usize = parts.iter().map(|p| p.data.len()).sum();
    if words > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "{scheme}: {} values compress to {words} words, over the 2^32 - 1 words the u32 \
             block starts can address; split the column",
            values.len()
        )));
    }
    let mut data = Vec::with_capacity(words);
    let mut starts = Vec::with_capacity(parts.iter().map(|p| p.starts.len()).sum::<usize>() + 1);
    for p in parts {
        let base = data.len();
        starts.extend(p.starts.iter().map(|&s| (base + s) as u32));
        data.extend_from_slice(&p.data);
    }
    starts.push(data.len() as u32);
    Ok((starts, data))
}

/// Block `k` of a column: its words, from its start to the next block's (or the end's).
pub(crate) fn block_slice<'a>(starts: &[u32], data: &'a [u32], k: usize) -> Result<&'a [u32]> {
    let (s, e) = match (starts.get(k), starts.get(k + 1)) {
        (Some(&s), Some(&e)) => (s as usize, e as usize),
        _ => return Err(Error::Data(format!("block {k}: no block start"))),
    };
    data.get(s..e)
        .ok_or_else(|| Error::Data(format!("block {k}: words {s}..{e} out of bounds")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_round_trips_at_every_width() {
        for w in 0..=32u32 {
            let vals: Vec<u32> = (0..BLOCK as u32)
                .map(|i| (i.wrapping_mul(2654435761)) & ((1u64 << w) - 1) as u32)
                .collect();
            let mut out = Vec::new();
            encode_block(&vals, &mut out);
            assert!(out.len() <= 2 + 4 * w as usize);
            let mut back = [0; BLOCK];
            decode_block(&out, &mut back).unwrap();
            assert_eq!(back.as_slice(), vals.as_slice(), "width {w}");
        }
    }

    #[test]
    fn negative_deltas_take_the_signed_reference() {
        let vals = [u32::MAX, 0, 1, u32::MAX - 1];
        let mut out = Vec::new();
        encode_block(&vals, &mut out);
        assert_eq!(out[0], u32::MAX - 1);
        assert_eq!(out.len(), 2 + 2);
    }
}
