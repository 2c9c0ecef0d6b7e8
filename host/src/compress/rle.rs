//! RLE: runs of equal values as (value, run length), in two arrays.
use rayon::prelude::*;
use tessera_kernels::compress::format::RunHeader;

use super::{Scheme, column, validate};
use crate::Result;

/// Values per encoding task.
const TASK_VALUES: usize = 1 << 16;

column! {
    /// An RLE column: header, run values and run lengths (each at least 1).
    RleColumn, RunHeader, Scheme::Rle, validate::validate_rle,
    [
        /// The run values.
        values,
        /// The run lengths.
        lengths,
    ]
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
}
