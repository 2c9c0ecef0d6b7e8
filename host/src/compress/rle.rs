//! RLE: runs of equal values as (value, run length), in two arrays.
use rayon::prelude::*;
use tessera_kernels::compress::format::RunHeader;

use super::{Compressed, Scheme, arrays_of, header_from, validate};
use crate::Result;

/// Values per encoding task.
const TASK_VALUES: usize = 1 << 16;

/// An RLE column: header, run values and run lengths (each at least 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RleColumn {
    header: RunHeader,
    values: Vec<u32>,
    lengths: Vec<u32>,
}

/// The runs of `values`: their values and lengths. Tasks find the runs of their chunks in
/// parallel; a run that crosses a chunk's end is joined when the chunks are, so the runs are
/// maximal and the same whatever the thread count.
pub(crate) fn runs(values: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    crate::runtime::check_len(values.len())?;
    let parts: Vec<(Vec<u32>, Vec<u32>)> = values
        .par_chunks(TASK_VALUES)
        .map(|c| {
            let (mut vals, mut lens) = (Vec::new(), Vec::<u32>::new());
            for run in c.chunk_by(|a, b| a == b) {
                vals.push(run[0]);
                lens.push(run.len() as u32);
            }
            (vals, lens)
        })
        .collect();
    let (mut vals, mut lens) = (Vec::new(), Vec::new());
    for (v, l) in parts {
        let mut start = 0;
        if let (Some(&last), Some(&first), Some(len)) = (vals.last(), v.first(), lens.last_mut())
            && last == first
        {
            // The column holds at most 2^32 - 1 values, so no run length overflows.
            *len += l[0];
            start = 1;
        }
        vals.extend_from_slice(&v[start..]);
        lens.extend_from_slice(&l[start..]);
    }
    Ok((vals, lens))
}

impl RleColumn {
    /// `values` in RLE.
    pub fn encode(values: &[u32]) -> Result<RleColumn> {
        let (vals, lengths) = runs(values)?;
        Ok(RleColumn {
            header: RunHeader {
                total_count: values.len() as u32,
                run_count: vals.len() as u32,
            },
            values: vals,
            lengths,
        })
    }

    /// The header.
    pub fn header(&self) -> &RunHeader {
        &self.header
    }
    /// The run values.
    pub fn values(&self) -> &[u32] {
        &self.values
    }
    /// The run lengths.
    pub fn lengths(&self) -> &[u32] {
        &self.lengths
    }
}

impl Compressed for RleColumn {
    const SCHEME: Scheme = Scheme::Rle;
    fn len(&self) -> usize {
        self.header.total_count as usize
    }
    fn header_words(&self) -> Vec<u32> {
        bytemuck::cast_slice(&[self.header]).to_vec()
    }
    fn arrays(&self) -> Vec<&[u32]> {
        vec![&self.values, &self.lengths]
    }
    fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Self> {
        let header: RunHeader = header_from(Self::SCHEME, header)?;
        let [values, lengths] = arrays_of(Self::SCHEME, arrays)?;
        validate::validate_rle(&header, &values, &lengths)?;
        Ok(RleColumn {
            header,
            values,
            lengths,
        })
    }
}
