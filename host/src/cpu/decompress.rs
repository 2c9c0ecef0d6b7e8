//! CPU decoders of every compressed scheme: decompression to a `Vec<u32>` and decode-and-sum,
//! multi-threaded (rayon) over independent chunks (blocks, delta groups, runs). They read the
//! buffers with the index arithmetic of [`tessera_kernels::compress::format`], as the GPU
//! decoders do, and are the oracle those are tested against. The columns they take were
//! validated when built, and every read is checked besides: a decoder returns `Err`, never
//! panics.
use rayon::prelude::*;
use tessera_kernels::compress::format::{
    BLOCK, BLOCK_HEADER_WORDS, VERTICAL_BLOCK, VERTICAL_LANES, byte_position,
    dfor_first_value_index, extract, nsv_len, spans_next, unreference, vertical_position,
};

use crate::compress::block::{block_slice, decode_block};
use crate::compress::{
    Compressed, DforColumn, Encoded, ForColumn, NsfColumn, NsvColumn, PlainColumn, VerticalColumn,
};
use crate::{Error, Result};

/// Values per decoding task where the format does not impose a unit.
const TASK_VALUES: usize = 32 * BLOCK;

/// A column cut into independently decodable chunks: `decode(c, out)` writes chunk `c` into
/// `out`, whose length is the chunk's count of values.
struct Chunks<F> {
    /// Values in the column.
    count: usize,
    /// Values per chunk (the last may hold fewer).
    chunk: usize,
    decode: F,
}

impl<F: Fn(usize, &mut [u32]) -> Result<()> + Sync> Chunks<F> {
    fn decompress(&self) -> Result<Vec<u32>> {
        let mut out = vec![0u32; self.count];
        out.par_chunks_mut(self.chunk)
            .enumerate()
            .try_for_each(|(c, o)| (self.decode)(c, o))?;
        Ok(out)
    }

    fn sum(&self) -> Result<u64> {
        let (n, chunk) = (self.count, self.chunk);
        (0..n.div_ceil(chunk))
            .into_par_iter()
            .map_init(
                || vec![0u32; chunk],
                |buf, c| {
                    let out = &mut buf[..(n - c * chunk).min(chunk)];
                    (self.decode)(c, out)?;
                    Ok(out.iter().map(|&v| v as u64).sum::<u64>())
                },
            )
            .try_reduce(|| 0, |a, b| Ok(a + b))
    }
}

/// `$col`'s chunked decoder, whatever its scheme.
macro_rules! chunks_of {
    ($col:expr, $c:ident => $body:expr) => {
        match $col {
            Encoded::Plain($c) => $body(plain($c)),
            Encoded::Nsf($c) => $body(nsf($c)),
            Encoded::Nsv($c) => $body(nsv($c)),
            Encoded::Rle($c) => $body(runs($c.values().to_vec(), $c.lengths(), $c.len())),
            Encoded::For($c) => $body(gpu_for($c)),
            Encoded::Dfor($c) => $body(dfor($c)),
            Encoded::Rfor($c) => $body(runs(
                gpu_for($c.values()).decompress()?,
                &gpu_for($c.lengths()).decompress()?,
                $c.len(),
            )),
            Encoded::Vertical($c) => $body(vertical($c)),
        }
    };
}

/// Decompresses a column whatever its scheme.
pub fn decompress(col: &Encoded) -> Result<Vec<u32>> {
    chunks_of!(col, c => |d: Chunks<_>| d.decompress())
}

/// The sum of a column's values, decoded chunk by chunk without materializing the column (the
/// thesis' aggregation benchmark, §5.6).
pub fn decompress_sum(col: &Encoded) -> Result<u64> {
    chunks_of!(col, c => |d: Chunks<_>| d.sum())
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

fn plain(col: &PlainColumn) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync + '_> {
    Chunks {
        count: col.len(),
        chunk: TASK_VALUES,
        decode: |c, out: &mut [u32]| {
            let start = c * TASK_VALUES;
            let src = col
                .values()
                .get(start..start + out.len())
                .ok_or_else(|| Error::Data(format!("plain column: chunk {c} past the end")))?;
            out.copy_from_slice(src);
            Ok(())
        },
    }
}

fn gpu_for(col: &ForColumn) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync + '_> {
    Chunks {
        count: col.len(),
        chunk: TASK_VALUES,
        decode: |c, out: &mut [u32]| {
            let first = c * TASK_VALUES / BLOCK;
            out.chunks_mut(BLOCK).enumerate().try_for_each(|(j, o)| {
                decode_block(block_slice(col.block_starts(), col.data(), first + j)?, o)
            })
        },
    }
}

/// Whole delta groups per chunk: each group decodes alone.
fn dfor(col: &DforColumn) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync + '_> {
    let d = col.header().group_blocks as usize;
    let group = d * BLOCK;
    let chunk = TASK_VALUES.div_ceil(group) * group;
    let (starts, data) = (col.block_starts(), col.data());
    Chunks {
        count: col.len(),
        chunk,
        decode: move |c, out: &mut [u32]| {
            let mut deltas = vec![0u32; group];
            for (j, o) in out.chunks_mut(group).enumerate() {
                let g = c * chunk / group + j;
                let mut x = word(data, dfor_first_value_index(word(starts, g * d)?))?;
                let deltas = &mut deltas[..o.len()];
                for (k, part) in deltas.chunks_mut(BLOCK).enumerate() {
                    decode_block(block_slice(starts, data, g * d + k)?, part)?;
                }
                // x(i) = first + the exclusive prefix sum of the deltas, wrapping as encoded.
                for (v, &delta) in o.iter_mut().zip(deltas.iter()) {
                    *v = x;
                    x = x.wrapping_add(delta);
                }
            }
            Ok(())
        },
    }
}

fn vertical(col: &VerticalColumn) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync + '_> {
    Chunks {
        count: col.len(),
        chunk: VERTICAL_BLOCK,
        decode: |c, out: &mut [u32]| {
            let block = block_slice(col.block_starts(), col.data(), c)?;
            let (reference, width) = (word(block, 0)?, word(block, 1)?);
            let packed = block.get(BLOCK_HEADER_WORDS..).unwrap_or(&[]);
            for (i, o) in out.iter_mut().enumerate() {
                let at = vertical_position(width, i);
                *o = unreference(reference, value_at(packed, at, VERTICAL_LANES, width)?);
            }
            Ok(())
        },
    }
}

fn nsf(col: &NsfColumn) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync + '_> {
    let b = col.header().value_bytes as usize;
    let reference = col.header().reference;
    Chunks {
        count: col.len(),
        chunk: TASK_VALUES,
        decode: move |c, out: &mut [u32]| {
            for (i, o) in out.iter_mut().enumerate() {
                let byte = (c * TASK_VALUES + i) * b;
                let stored = value_at(col.data(), byte_position(byte), 1, 8 * b as u32)?;
                *o = unreference(reference, stored);
            }
            Ok(())
        },
    }
}

/// Each chunk's first byte comes from a parallel sum of the length codes, then a scan.
fn nsv(col: &NsvColumn) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync + '_> {
    let n = col.len();
    let code = |v: usize| {
        col.lengths()
            .get(v / 16)
            .map_or(0, |&w| nsv_len(w, v) as usize)
    };
    let bytes: Vec<usize> = (0..n.div_ceil(TASK_VALUES))
        .into_par_iter()
        .map(|c| {
            (c * TASK_VALUES..((c + 1) * TASK_VALUES).min(n))
                .map(code)
                .sum()
        })
        .collect();
    let first_byte = exclusive_scan(bytes.into_iter().map(|b| b as u64));
    Chunks {
        count: n,
        chunk: TASK_VALUES,
        decode: move |c, out: &mut [u32]| {
            let mut byte = first_byte.get(c).copied().unwrap_or(0) as usize;
            for (i, o) in out.iter_mut().enumerate() {
                let v = c * TASK_VALUES + i;
                let len = nsv_len(word(col.lengths(), v / 16)?, v);
                *o = value_at(col.data(), byte_position(byte), 1, 8 * len)?;
                byte += len as usize;
            }
            Ok(())
        },
    }
}

/// The exclusive prefix sums of `xs`.
fn exclusive_scan(xs: impl Iterator<Item = u64>) -> Vec<u64> {
    xs.scan(0u64, |s, x| {
        let start = *s;
        *s += x;
        Some(start)
    })
    .collect()
}

/// Runs (values and lengths, of RLE or decoded from RFOR): a chunk finds the run holding its
/// first row in the runs' first rows (a prefix sum of the lengths), then walks on.
fn runs(
    values: Vec<u32>,
    lengths: &[u32],
    count: usize,
) -> Chunks<impl Fn(usize, &mut [u32]) -> Result<()> + Sync> {
    let run_starts = exclusive_scan(lengths.iter().map(|&l| l as u64));
    Chunks {
        count,
        chunk: TASK_VALUES,
        decode: move |c, out: &mut [u32]| {
            let first = (c * TASK_VALUES) as u64;
            let mut r = run_starts
                .partition_point(|&s| s <= first)
                .saturating_sub(1);
            for (i, o) in out.iter_mut().enumerate() {
                let row = first + i as u64;
                while run_starts.get(r + 1).is_some_and(|&s| s <= row) {
                    r += 1;
                }
                *o = word(&values, r)?;
            }
            Ok(())
        },
    }
}
