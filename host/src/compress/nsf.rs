//! NSF, null suppression with fixed length: every value in 1, 2 or 4 bytes, chosen by the
//! column's largest value, or by its range over a reference ([`NsfColumn::encode_framed`]).
use rayon::prelude::*;
use tessera_kernels::compress::format::{NsfHeader, nsf_max_reference};

use super::{Scheme, column, validate};
use crate::Result;

column! {
    /// An NSF column: header and the values' bytes (each value less the header's reference),
    /// little-endian, padded to whole words.
    NsfColumn, NsfHeader, Scheme::Nsf, validate::validate_nsf,
    [
        /// The byte stream, as words.
        data,
    ]
}

/// Bytes per value for stored values up to `max`.
fn value_bytes(max: u32) -> u32 {
    match max {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        _ => 4,
    }
}

impl NsfColumn {
    /// `values` in the thesis' NSF: as they are, in the bytes the largest needs.
    pub fn encode(values: &[u32]) -> Result<NsfColumn> {
        crate::runtime::check_len(values.len())?;
        let max = values.par_iter().copied().max().unwrap_or(0);
        Ok(NsfColumn::with_reference(values, value_bytes(max), 0))
    }

    /// `values` in NSF over a reference, the column's minimum, where that takes fewer bytes
    /// per value than [`NsfColumn::encode`] (SSB's order dates, 19920101..=19980802, take 2
    /// bytes instead of 4); otherwise exactly [`NsfColumn::encode`]'s column.
    pub fn encode_framed(values: &[u32]) -> Result<NsfColumn> {
        crate::runtime::check_len(values.len())?;
        let (min, max) = values
            .par_iter()
            .fold(|| (u32::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)))
            .reduce(|| (u32::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let plain = value_bytes(max);
        let framed = value_bytes(max.saturating_sub(min));
        if framed >= plain {
            return Ok(NsfColumn::with_reference(values, plain, 0));
        }
        // The reference may not carry a stored value past 32 bits; lowered to the largest
        // that cannot, the range over it still fits `framed` bytes (`max` itself fits 32 bits).
        let reference = min.min(nsf_max_reference(framed));
        Ok(NsfColumn::with_reference(values, framed, reference))
    }

    /// `values` less `reference`, each in `value_bytes` bytes (every difference fits).
    fn with_reference(values: &[u32], value_bytes: u32, reference: u32) -> NsfColumn {
        // 1, 2 or 4 bytes divide a word: each word holds whole values.
        let per_word = 4 / value_bytes as usize;
        let data = values
            .par_chunks(per_word)
            .map(|c| {
                c.iter().enumerate().fold(0u32, |w, (j, &v)| {
                    w | (v - reference) << (8 * value_bytes as usize * j)
                })
            })
            .collect();
        NsfColumn {
            header: NsfHeader {
                total_count: values.len() as u32,
                value_bytes,
                reference,
            },
            data,
        }
    }
}
