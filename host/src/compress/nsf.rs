//! NSF, null suppression with fixed length: every value in 1, 2 or 4 bytes, chosen by the
//! column's largest value.
use rayon::prelude::*;
use tessera_kernels::compress::format::NsfHeader;

use super::{Compressed, Scheme, arrays_of, header_from, validate};
use crate::Result;

/// An NSF column: header and the values' bytes, little-endian, padded to whole words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NsfColumn {
    header: NsfHeader,
    data: Vec<u32>,
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

    /// The header.
    pub fn header(&self) -> &NsfHeader {
        &self.header
    }
    /// The byte stream, as words.
    pub fn data(&self) -> &[u32] {
        &self.data
    }
}

impl Compressed for NsfColumn {
    const SCHEME: Scheme = Scheme::Nsf;
    fn len(&self) -> usize {
        self.header.total_count as usize
    }
    fn header_words(&self) -> Vec<u32> {
        bytemuck::cast_slice(&[self.header]).to_vec()
    }
    fn arrays(&self) -> Vec<&[u32]> {
        vec![&self.data]
    }
    fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Self> {
        let header: NsfHeader = header_from(Self::SCHEME, header)?;
        let [data] = arrays_of(Self::SCHEME, arrays)?;
        validate::validate_nsf(&header, &data)?;
        Ok(NsfColumn { header, data })
    }
}
