//! GPU-FOR (thesis §5.3.1): frame of reference and horizontal bit packing per 128-value block.
use tessera_kernels::compress::format::{BLOCK, ForHeader, MINIBLOCKS, block_header};

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
        ForColumn::encode_as(values, false)
    }

    /// `values` in GPU-FOR with every miniblock of a block at the block's widest width: the
    /// miniblock-free variant of thesis §5.3.3, as large or larger (the same headers, a
    /// narrow miniblock widened) but decodable without miniblock offsets (value `i` of a
    /// block at bit `i * width`). It is a GPU-FOR column: every decoder reads it.
    pub fn encode_one_width(values: &[u32]) -> Result<ForColumn> {
        ForColumn::encode_as(values, true)
    }

    /// Whether every block's miniblocks have one width.
    pub fn is_one_width(&self) -> bool {
        self.block_starts[..self.block_starts.len().saturating_sub(1)]
            .iter()
            .all(|&s| {
                let (_, w) = block_header(&self.data[s as usize..]);
                w == w.rotate_left(8)
            })
    }

    fn encode_as(values: &[u32], one_width: bool) -> Result<ForColumn> {
        let (block_starts, data) =
            encode_chunks("GPU-FOR", values, TASK_BLOCKS * BLOCK, |c, b| {
                if one_width {
                    c.chunks(BLOCK).for_each(|blk| b.push_for_one_width(blk))
                } else {
                    c.chunks(BLOCK).for_each(|blk| b.push_for(blk))
                }
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
