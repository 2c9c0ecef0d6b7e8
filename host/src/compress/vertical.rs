//! The vertical SIMD-BP128-style layout of thesis §5.3.3 (GPU-SIMDBP128): 4096-value blocks of
//! 128 lanes of 32 values, one width per block. A baseline: the thesis found it 2.7x slower to
//! decode on a GPU than GPU-FOR, and its large blocks let one outlier widen 4096 values.
use tessera_kernels::compress::format::{VERTICAL_BLOCK, VERTICAL_LANES, VerticalHeader};

use super::block::encode_chunks;
use super::{Scheme, column, validate};
use crate::Result;

column! {
    /// A vertical column: header, block starts (one per block, then the data length) and data
    /// (per block: reference, width, then 128 lanes of `width` words, interleaved).
    VerticalColumn, VerticalHeader, Scheme::Vertical, validate::validate_vertical, blocks
}

impl VerticalColumn {
    /// `values` in the vertical layout.
    pub fn encode(values: &[u32]) -> Result<VerticalColumn> {
        let (block_starts, data) =
            encode_chunks("GPU-SIMDBP128", values, 4 * VERTICAL_BLOCK, |c, b| {
                c.chunks(VERTICAL_BLOCK)
                    .for_each(|blk| b.push_vertical(blk))
            })?;
        Ok(VerticalColumn {
            header: VerticalHeader {
                block_size: VERTICAL_BLOCK as u32,
                lanes: VERTICAL_LANES as u32,
                total_count: values.len() as u32,
            },
            block_starts,
            data,
        })
    }
}
