//! CPU decoders of every compressed scheme: decompression to a `Vec<u32>` and decode-and-sum,
//! multi-threaded (rayon) over independent chunks (blocks, delta groups, runs). They read the
//! buffers with the index arithmetic of [`tessera_kernels::compress::format`], as the GPU
//! decoders do, and are the oracle those are tested against. The columns they take were
//! validated when built, and every read is checked besides: a decoder returns `Err`, never
//! panics.
use std::borrow::Cow;

use rayon::prelude::*;
use tessera_kernels::compress::format::{
    BLOCK, BLOCK_HEADER_WORDS, VERTICAL_BLOCK, VERTICAL_LANES, byte_position,
    dfor_first_value_index, extract, nsv_len, spans_next, vertical_position,
};

use crate::compress::block::{block_slice, decode_block};
use crate::compress::{
    Compressed, DforColumn, Encoded, ForColumn, NsfColumn, NsvColumn, RforColumn, RleColumn,
    VerticalColumn, each_column,
};
use crate::{Error, Result};

/// Values per decoding task where the format does not impose a unit.
const TASK_VALUES: usize = 32 * BLOCK;

/// A column cut into independently decodable chunks.
trait Chunks: Sync {
    /// Values in the column.
    fn count(&self) -> usize;
    /// Values per chunk (the last may hold fewer).
    fn chunk(&self) -> usize;
    /// Decodes chunk `c` into `out` (its length: the chunk's values).
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()>;
}

/// Decompresses a column whatever its scheme.
pub fn decompress(col: &Encoded) -> Result<Vec<u32>> {
    each_column!(col, c => decompress_chunks(&c.chunks()?))
}

/// The sum of a column's values, decoded chunk by chunk without materializing the column (the
/// thesis' aggregation benchmark, §5.6).
pub fn decompress_sum(col: &Encoded) -> Result<u64> {
    each_column!(col, c => sum_chunks(&c.chunks()?))
}

fn decompress_chunks(d: &impl Chunks) -> Result<Vec<u32>> {
    let mut out = vec![0u32; d.count()];
    out.par_chunks_mut(d.chunk())
        .enumerate()
        .try_for_each(|(c, o)| d.decode(c, o))?;
    Ok(out)
}

fn sum_chunks(d: &impl Chunks) -> Result<u64> {
    let (n, chunk) = (d.count(), d.chunk());
    (0..n.div_ceil(chunk))
        .into_par_iter()
        .map_init(
            || vec![0u32; chunk],
            |buf, c| {
                let out = &mut buf[..(n - c * chunk).min(chunk)];
                d.decode(c, out)?;
                Ok(out.iter().map(|&v| v as u64).sum::<u64>())
            },
        )
        .try_reduce(|| 0, |a, b| Ok(a + b))
}

/// A column's chunked decoder.
trait Decodable {
    /// The decoder (it may precompute chunk offsets).
    fn chunks(&self) -> Result<impl Chunks + '_>;
}

/// Word `i` of `data`, `Err` past its end.
fn word(data: &[u32], i: usize) -> Result<u32> {
    data.get(i).copied().ok_or_else(|| {
        Error::Data(format!(
            "compressed data: word {i} past the end ({} words)",
            data.len()
        ))
    })
}

/// The `width`-bit value at (`w`, `bit`) of `data`, reading the word `stride` further (1, or
/// a vertical lane's next word) only where the value spans into it, and no word for width 0.
fn value_at(data: &[u32], (w, bit): (usize, u32), stride: usize, width: u32) -> Result<u32> {
    if width == 0 {
        // A constant block stores no words: there is nothing to read.
        return Ok(0);
    }
    let hi = if spans_next(bit, width) {
        word(data, w + stride)?
    } else {
        0
    };
    Ok(extract(word(data, w)?, hi, bit, width))
}

/// Runs `f` on the blocks of `block` values that make up chunk `c` of `chunk` values.
fn per_block(
    c: usize,
    chunk: usize,
    block: usize,
    out: &mut [u32],
    mut f: impl FnMut(usize, &mut [u32]) -> Result<()>,
) -> Result<()> {
    let first = c * chunk / block;
    out.chunks_mut(block)
        .enumerate()
        .try_for_each(|(j, o)| f(first + j, o))
}

impl Chunks for &ForColumn {
    fn count(&self) -> usize {
        self.len()
    }
    fn chunk(&self) -> usize {
        TASK_VALUES
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        per_block(c, TASK_VALUES, BLOCK, out, |k, o| {
            decode_block(block_slice(self.block_starts(), self.data(), k)?, o)
        })
    }
}

/// A GPU-DFOR column cut into whole delta groups.
struct DforChunks<'a> {
    col: &'a DforColumn,
    group: usize,
    chunk: usize,
}

impl Chunks for DforChunks<'_> {
    fn count(&self) -> usize {
        self.col.len()
    }
    fn chunk(&self) -> usize {
        self.chunk
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        let (starts, data) = (self.col.block_starts(), self.col.data());
        let mut deltas = vec![0u32; self.group];
        per_block(c, self.chunk, self.group, out, |g, o| {
            let d = self.group / BLOCK;
            let first = word(starts, g * d)?;
            let mut x = word(data, dfor_first_value_index(first))?;
            let deltas = &mut deltas[..o.len()];
            for (j, part) in deltas.chunks_mut(BLOCK).enumerate() {
                decode_block(block_slice(starts, data, g * d + j)?, part)?;
            }
            // x(i) = first + the exclusive prefix sum of the deltas, wrapping as encoded.
            for (v, &delta) in o.iter_mut().zip(deltas.iter()) {
                *v = x;
                x = x.wrapping_add(delta);
            }
            Ok(())
        })
    }
}

impl Chunks for &VerticalColumn {
    fn count(&self) -> usize {
        self.len()
    }
    fn chunk(&self) -> usize {
        VERTICAL_BLOCK
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        let block = block_slice(self.block_starts(), self.data(), c)?;
        let (reference, width) = (word(block, 0)?, word(block, 1)?);
        let packed = block.get(BLOCK_HEADER_WORDS..).unwrap_or(&[]);
        for (i, o) in out.iter_mut().enumerate() {
            *o = reference.wrapping_add(value_at(
                packed,
                vertical_position(width, i),
                VERTICAL_LANES,
                width,
            )?);
        }
        Ok(())
    }
}

impl Chunks for &NsfColumn {
    fn count(&self) -> usize {
        self.len()
    }
    fn chunk(&self) -> usize {
        TASK_VALUES
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        let b = self.header().value_bytes as usize;
        for (i, o) in out.iter_mut().enumerate() {
            let byte = (c * TASK_VALUES + i) * b;
            *o = value_at(self.data(), byte_position(byte), 1, 8 * b as u32)?;
        }
        Ok(())
    }
}

/// An NSV column with each chunk's first byte, from a parallel sum of the length codes.
struct NsvChunks<'a> {
    col: &'a NsvColumn,
    first_byte: Vec<usize>,
}

impl Chunks for NsvChunks<'_> {
    fn count(&self) -> usize {
        self.col.len()
    }
    fn chunk(&self) -> usize {
        TASK_VALUES
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        let mut byte = self.first_byte.get(c).copied().unwrap_or(0);
        for (i, o) in out.iter_mut().enumerate() {
            let v = c * TASK_VALUES + i;
            let len = nsv_len(word(self.col.lengths(), v / 16)?, v);
            *o = value_at(self.col.data(), byte_position(byte), 1, 8 * len)?;
            byte += len as usize;
        }
        Ok(())
    }
}

/// Runs (values and lengths) with each run's first row, from a prefix sum of the lengths.
struct RunChunks<'a> {
    values: Cow<'a, [u32]>,
    run_starts: Vec<u64>,
    total: usize,
}

impl<'a> RunChunks<'a> {
    fn new(values: Cow<'a, [u32]>, lengths: &[u32], total: usize) -> RunChunks<'a> {
        let run_starts = lengths
            .iter()
            .scan(0u64, |s, &l| {
                let start = *s;
                *s += l as u64;
                Some(start)
            })
            .collect();
        RunChunks {
            values,
            run_starts,
            total,
        }
    }
}

impl Chunks for RunChunks<'_> {
    fn count(&self) -> usize {
        self.total
    }
    fn chunk(&self) -> usize {
        TASK_VALUES
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        let first = (c * TASK_VALUES) as u64;
        // The run holding the chunk's first row: the last that starts at or before it.
        let mut r = self
            .run_starts
            .partition_point(|&s| s <= first)
            .saturating_sub(1);
        for (i, o) in out.iter_mut().enumerate() {
            let row = first + i as u64;
            while self.run_starts.get(r + 1).is_some_and(|&s| s <= row) {
                r += 1;
            }
            *o = word(&self.values, r)?;
        }
        Ok(())
    }
}

/// Every value of a GPU-FOR column (the runs of an RFOR column).
fn for_values(col: &ForColumn) -> Result<Vec<u32>> {
    decompress_chunks(&col)
}

impl Decodable for ForColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        Ok(self)
    }
}

impl Decodable for DforColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        let group = self.header().group_blocks as usize * BLOCK;
        Ok(DforChunks {
            col: self,
            group,
            chunk: TASK_VALUES.div_ceil(group) * group,
        })
    }
}

impl Decodable for VerticalColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        Ok(self)
    }
}

impl Decodable for NsfColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        Ok(self)
    }
}

impl Decodable for NsvColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        let n = self.len();
        let bytes: Vec<usize> = (0..n.div_ceil(TASK_VALUES))
            .into_par_iter()
            .map(|c| {
                (c * TASK_VALUES..((c + 1) * TASK_VALUES).min(n))
                    .map(|v| {
                        self.lengths()
                            .get(v / 16)
                            .map_or(0, |&w| nsv_len(w, v) as usize)
                    })
                    .sum()
            })
            .collect();
        let first_byte = bytes
            .iter()
            .scan(0, |s, &b| {
                let start = *s;
                *s += b;
                Some(start)
            })
            .collect();
        Ok(NsvChunks {
            col: self,
            first_byte,
        })
    }
}

impl Decodable for RleColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        Ok(RunChunks::new(
            Cow::Borrowed(self.values()),
            self.lengths(),
            self.len(),
        ))
    }
}

impl Decodable for RforColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        let lengths = for_values(self.lengths())?;
        Ok(RunChunks::new(
            Cow::Owned(for_values(self.values())?),
            &lengths,
            self.len(),
        ))
    }
}

impl Decodable for crate::compress::PlainColumn {
    fn chunks(&self) -> Result<impl Chunks + '_> {
        Ok(self)
    }
}

impl Chunks for &crate::compress::PlainColumn {
    fn count(&self) -> usize {
        self.len()
    }
    fn chunk(&self) -> usize {
        TASK_VALUES
    }
    fn decode(&self, c: usize, out: &mut [u32]) -> Result<()> {
        let src = self
            .values()
            .get(c * TASK_VALUES..c * TASK_VALUES + out.len())
            .ok_or_else(|| Error::Data(format!("plain column: chunk {c} past the end")))?;
        out.copy_from_slice(src);
        Ok(())
    }
}
