//! The ordered aggregation on the CPU: count and sum over each run of equal adjacent keys.
use rayon::prelude::*;

use crate::error::Result;
use crate::ops::{OrderedAggregates, check_same_len};

/// Rows per parallel piece.
const PIECE: usize = 1 << 20;

/// Counts and sums `values` over each run of equal adjacent `keys`, as
/// [`crate::ops::aggregate_sorted`] does: pieces of the rows aggregated in parallel, then the
/// run that crosses from one piece into the next joined.
pub fn aggregate_runs(keys: &[u32], values: &[u32]) -> Result<OrderedAggregates> {
    check_same_len("aggregate_runs", "values", values.len(), keys.len())?;
    let pieces: Vec<OrderedAggregates> = keys
        .par_chunks(PIECE)
        .zip(values.par_chunks(PIECE))
        .map(|(k, v)| {
            let mut out = OrderedAggregates::default();
            for (&key, &value) in k.iter().zip(v) {
                if out.keys.last() != Some(&key) {
                    out.keys.push(key);
                    out.counts.push(0);
                    out.sums.push(0);
                }
                *out.counts.last_mut().unwrap() += 1;
                *out.sums.last_mut().unwrap() += u64::from(value);
            }
            out
        })
        .collect();
    let mut all = OrderedAggregates::default();
    for piece in pieces {
        let mut skip = 0;
        if let (Some(&last), Some(&first)) = (all.keys.last(), piece.keys.first())
            && last == first
        {
            *all.counts.last_mut().unwrap() += piece.counts[0];
            *all.sums.last_mut().unwrap() += piece.sums[0];
            skip = 1;
        }
        all.keys.extend_from_slice(&piece.keys[skip..]);
        all.counts.extend_from_slice(&piece.counts[skip..]);
        all.sums.extend_from_slice(&piece.sums[skip..]);
    }
    Ok(all)
}
