//! NSV, null suppression with variable length: each value in 1 to 4 bytes, with a 2-bit
//! length code per value.
use rayon::prelude::*;
use tessera_kernels::compress::format::{NSV_CODES_PER_WORD, NsvHeader, nsv_bytes};

use super::{Compressed, Scheme, arrays_of, header_from, validate};
use crate::{Error, Result};

/// Values per encoding task.
const TASK_VALUES: usize = 1 << 14;

/// An NSV column: header, the length codes (16 per word) and the value bytes, back to back,
/// padded to whole words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NsvColumn {
    header: NsvHeader,
    lengths: Vec<u32>,
    data: Vec<u32>,
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

    /// The header.
    pub fn header(&self) -> &NsvHeader {
        &self.header
    }
    /// The 2-bit length codes (bytes - 1), 16 per word.
    pub fn lengths(&self) -> &[u32] {
        &self.lengths
    }
    /// The value bytes, as words.
    pub fn data(&self) -> &[u32] {
        &self.data
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

impl Compressed for NsvColumn {
    const SCHEME: Scheme = Scheme::Nsv;
    fn len(&self) -> usize {
        self.header.total_count as usize
    }
    fn header_words(&self) -> Vec<u32> {
        bytemuck::cast_slice(&[self.header]).to_vec()
    }
    fn arrays(&self) -> Vec<&[u32]> {
        vec![&self.lengths, &self.data]
    }
    fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Self> {
        let header: NsvHeader = header_from(Self::SCHEME, header)?;
        let [lengths, data] = arrays_of(Self::SCHEME, arrays)?;
        validate::validate_nsv(&header, &lengths, &data)?;
        Ok(NsvColumn {
            header,
            lengths,
            data,
        })
    }
}
