//! GPU-DFOR (thesis §5.4.1): GPU-FOR of the deltas within groups of D blocks, each group's
//! first value stored before its first block.
use tessera_kernels::compress::format::{BLOCK, DforHeader, MAX_GROUP_BLOCKS, MINIBLOCKS};

use super::block::encode_chunks;
use super::{Scheme, column, validate};
use crate::{Error, Result};

/// Values per encoding task, at least: whole groups of about this many.
const TASK_VALUES: usize = 64 * BLOCK;

column! {
    /// A GPU-DFOR column: header, block starts (one per delta block, then the data length) and
    /// data (each group's first value, the word before the group's first block, then its blocks).
    DforColumn, DforHeader, Scheme::Dfor, validate::validate_dfor, blocks
}

impl DforColumn {
    /// `values` in GPU-DFOR with `group_blocks` (D, 1..=32) blocks per delta group. Deltas
    /// wrap, so any input round-trips; sorted or nearly sorted input compresses best.
    pub fn encode(values: &[u32], group_blocks: u32) -> Result<DforColumn> {
        if !(1..=MAX_GROUP_BLOCKS).contains(&group_blocks) {
            return Err(Error::invalid(format!(
                "GPU-DFOR: D = {group_blocks} blocks per group, expected 1..={MAX_GROUP_BLOCKS}"
            )));
        }
        let group = group_blocks as usize * BLOCK;
        let task = TASK_VALUES.div_ceil(group) * group;
        let (block_starts, data) = encode_chunks("GPU-DFOR", values, task, |c, b| {
            let mut deltas = vec![0u32; group];
            for g in c.chunks(group) {
                b.push_word(g[0]);
                // Slot k holds x(k+1) - x(k). No decoder reads the group's last slot or the
                // padding (an exclusive prefix sum), so they repeat the last delta, which adds
                // no bits to its block where 0 would (sorted input: 0.81 bits, not 1.06).
                let used = &mut deltas[..g.len().div_ceil(BLOCK) * BLOCK];
                for (d, w) in used.iter_mut().zip(g.windows(2)) {
                    *d = w[1].wrapping_sub(w[0]);
                }
                let fill = g.len().checked_sub(2).map_or(0, |k| used[k]);
                used[g.len() - 1..].fill(fill);
                used.chunks(BLOCK).for_each(|blk| b.push_for(blk));
            }
        })?;
        Ok(DforColumn {
            header: DforHeader {
                block_size: BLOCK as u32,
                miniblock_count: MINIBLOCKS as u32,
                total_count: values.len() as u32,
                group_blocks,
            },
            block_starts,
            data,
        })
    }
}
