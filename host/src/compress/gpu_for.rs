//! GPU-FOR (thesis §5.3.1): frame of reference and horizontal bit packing per 128-value block.
use tessera_kernels::compress::format::{BLOCK, ForHeader, MINIBLOCKS};

use super::block::encode_chunks;
use super::{Scheme, column, validate};
use crate::Result;

/// Blocks per encoding task: large enough to amortize a task, small enough to balance.
const TASK_BLOCKS: usize = 64;

column! {
    /// A GPU-FOR column: header, block starts (one per block, then the data length) and data.
    ForColumn, ForHeader, Scheme::For, validate::validate_for, blocks
}

impl ForColumn {
    /// `values` in GPU-FOR; `Err` only past the format's limits (2^32 - 1 values or words).
    pub fn encode(values: &[u32]) -> Result<ForColumn> {
        let (block_starts, data) =
            encode_chunks("GPU-FOR", values, TASK_BLOCKS * BLOCK, |c, b| {
                c.chunks(BLOCK).for_each(|blk| b.push_for(blk))
            })?;
        Ok(ForColumn {
            header: ForHeader {
                block_size: BLOCK as u32,
                miniblock_count: MINIBLOCKS as u32,
                total_count: values.len() as u32,
            },
            block_starts,
            data,
        })
    }
}
