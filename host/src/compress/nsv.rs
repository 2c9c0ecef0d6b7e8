//! NSV, null suppression with variable length: each value in 1 to 4 bytes, with a 2-bit
//! length code per value.
use rayon::prelude::*;
use tessera_kernels::compress::format::{NSV_CODES_PER_WORD, NsvHeader, nsv_bytes};

use super::{Scheme, column, validate};
use crate::{Error, Result};

/// Values per encoding task.
const TASK_VALUES: usize = 1 << 14;

column! {
    /// An NSV column: header, the length codes (16 per word) and the value bytes, back to back,
    /// padded to whole words.
    NsvColumn, NsvHeader, Scheme::Nsv, validate::validate_nsv,
    [
        /// The 2-bit length codes (bytes - 1), 16 per word.
        lengths,
        /// The value bytes, as words.
        data,
    ]
}

impl NsvColumn {
    /// `values` in NSV.
    pub fn encode(values: &[u32]) -> Result<NsvColumn> {
        crate::runtime::check_len(values.len())?;
        let lengths = values
            .par_chunks(NSV_CODES_PER_WORD)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u32, |w, (j, &v)| w | (nsv_bytes(v) - 1) << (2 * j))
            })
            .collect();
        let bytes: Vec<u8> = values
            .par_chunks(TASK_VALUES)
            .flat_map_iter(|c| {
                c.iter()
                    .flat_map(|&v| v.to_le_bytes().into_iter().take(nsv_bytes(v) as usize))
            })
            .collect();
        let data_bytes = u32::try_from(bytes.len()).map_err(|_| {
            Error::invalid(format!(
                "NSV: {} values take {} bytes, over the 2^32 - 1 its header counts",
                values.len(),
                bytes.len()
            ))
        })?;
        Ok(NsvColumn {
            header: NsvHeader {
                total_count: values.len() as u32,
                data_bytes,
            },
            lengths,
            data: words_of(&bytes),
        })
    }
}

/// `bytes` as little-endian words, the last padded with zeros.
fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .par_chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}
