//! NSF, null suppression with fixed length: every value in 1, 2 or 4 bytes, chosen by the
//! column's largest value.
use rayon::prelude::*;
use tessera_kernels::compress::format::NsfHeader;

use super::{Scheme, column, validate};
use crate::Result;

column! {
    /// An NSF column: header and the values' bytes, little-endian, padded to whole words.
    NsfColumn, NsfHeader, Scheme::Nsf, validate::validate_nsf,
    [
        /// The byte stream, as words.
        data,
    ]
}

impl NsfColumn {
    /// `values` in NSF.
    pub fn encode(values: &[u32]) -> Result<NsfColumn> {
        crate::runtime::check_len(values.len())?;
        let max = values.par_iter().copied().max().unwrap_or(0);
        let value_bytes: u32 = match max {
            0..=0xff => 1,
            0x100..=0xffff => 2,
            _ => 4,
        };
        // 1, 2 or 4 bytes divide a word: each word holds whole values.
        let per_word = 4 / value_bytes as usize;
        let data = values
            .par_chunks(per_word)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u32, |w, (j, &v)| w | v << (8 * value_bytes as usize * j))
            })
            .collect();
        Ok(NsfColumn {
            header: NsfHeader {
                total_count: values.len() as u32,
                value_bytes,
            },
            data,
        })
    }
}
