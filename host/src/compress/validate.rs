//! Complete checks of encoded buffers, made before any decoder (CPU or GPU) reads one: a
//! buffer that passes cannot send a decoder out of bounds, and one that fails gives an
//! [`Error::Data`] naming the scheme, what is wrong and where (block, word offset, the value
//! found and the one expected). Every check is total: no input makes one panic.
//!
//! The checks cover the structure, not the values: a flipped bit inside a reference or a packed
//! value still decodes, to other values of the right count. The on-disk form
//! ([`super::file`]) adds a checksum that catches those.
use tessera_kernels::compress::format::{
    BLOCK, DforHeader, ForHeader, MAX_GROUP_BLOCKS, MAX_WIDTH, MINIBLOCKS, NSV_CODES_PER_WORD,
    NsfHeader, NsvHeader, RunHeader, VERTICAL_BLOCK, VERTICAL_LANES, VerticalHeader, block_words,
    blocks_for, nsf_max_reference, nsv_len, vertical_block_words, widths_valid,
};

use super::block::{block_slice, decode_block};
use super::{Compressed, ForColumn};
use crate::{Error, Result};

/// An [`Error::Data`] for `scheme`.
fn bad(scheme: &str, msg: impl std::fmt::Display) -> Error {
    Error::Data(format!("{scheme}: {msg}"))
}

/// `Err` unless header field `what` is `want`.
fn expect_field(scheme: &str, what: &str, found: u32, want: usize) -> Result<()> {
    if found as usize != want {
        return Err(bad(
            scheme,
            format!("header {what} is {found}, expected {want}"),
        ));
    }
    Ok(())
}

/// Checks the blocks of a column: `blocks` blocks, block k starting `lead(k)` words after the
/// previous block's end (the first after word 0), its length given by `words` from its second
/// word (or the reason it is invalid), the block starts ending with the data's length.
fn check_blocks(
    scheme: &str,
    starts: &[u32],
    data: &[u32],
    blocks: usize,
    lead: impl Fn(usize) -> usize,
    words: impl Fn(u32) -> std::result::Result<usize, String>,
) -> Result<()> {
    if starts.len() != blocks + 1 {
        return Err(bad(
            scheme,
            format!(
                "{} block starts, expected {} (blocks + 1)",
                starts.len(),
                blocks + 1
            ),
        ));
    }
    let mut end = 0usize;
    for (k, &s) in starts.iter().take(blocks).enumerate() {
        let want = end + lead(k);
        if s as usize != want {
            return Err(bad(
                scheme,
                format!("block {k} starts at word {s}, expected {want}"),
            ));
        }
        let second = data.get(want + 1).ok_or_else(|| {
            bad(
                scheme,
                format!(
                    "block {k} at word {want}: past the data's end ({} words)",
                    data.len()
                ),
            )
        })?;
        let len = words(*second)
            .map_err(|why| bad(scheme, format!("block {k} at word {want}: {why}")))?;
        end = want + len;
        if end > data.len() {
            return Err(bad(
                scheme,
                format!(
                    "block {k} at word {want}: {len} words run past the data's end ({} words)",
                    data.len()
                ),
            ));
        }
    }
    let last = starts.last().copied().unwrap_or(0) as usize;
    if last != end || data.len() != end {
        return Err(bad(
            scheme,
            format!(
                "the blocks end at word {end}; the last block start is {last}, the data holds {} words",
                data.len()
            ),
        ));
    }
    Ok(())
}

/// A GPU-FOR block's length from its bit-width word.
fn for_block_words(widths: u32) -> std::result::Result<usize, String> {
    if !widths_valid(widths) {
        return Err(format!(
            "bit widths {:?} (word {widths:#010x}), each must be at most {MAX_WIDTH}",
            widths.to_le_bytes()
        ));
    }
    Ok(block_words(widths) as usize)
}

/// Checks a GPU-FOR column: header, block starts (from 0, each block `2 + sum of its widths`
/// words long, in bounds), bit widths at most 32, no words past the last block.
pub fn validate_for(header: &ForHeader, block_starts: &[u32], data: &[u32]) -> Result<()> {
    const S: &str = "GPU-FOR";
    expect_field(S, "block size", header.block_size, BLOCK)?;
    expect_field(S, "miniblock count", header.miniblock_count, MINIBLOCKS)?;
    let blocks = blocks_for(header.total_count as usize, BLOCK);
    check_blocks(S, block_starts, data, blocks, |_| 0, for_block_words)
}

/// Checks a GPU-DFOR column: as [`validate_for`], with D in 1..=32 and one first-value word
/// before every D-th block.
pub fn validate_dfor(header: &DforHeader, block_starts: &[u32], data: &[u32]) -> Result<()> {
    const S: &str = "GPU-DFOR";
    expect_field(S, "block size", header.block_size, BLOCK)?;
    expect_field(S, "miniblock count", header.miniblock_count, MINIBLOCKS)?;
    let d = header.group_blocks as usize;
    if !(1..=MAX_GROUP_BLOCKS as usize).contains(&d) {
        return Err(bad(
            S,
            format!("header D (blocks per group) is {d}, expected 1..={MAX_GROUP_BLOCKS}"),
        ));
    }
    let blocks = blocks_for(header.total_count as usize, BLOCK);
    check_blocks(
        S,
        block_starts,
        data,
        blocks,
        |k| usize::from(k % d == 0),
        for_block_words,
    )
}

/// Checks a vertical column: header, block starts, each block `2 + 128 * width` words with a
/// width of at most 32 (its word holding nothing else).
pub fn validate_vertical(
    header: &VerticalHeader,
    block_starts: &[u32],
    data: &[u32],
) -> Result<()> {
    const S: &str = "GPU-SIMDBP128";
    expect_field(S, "block size", header.block_size, VERTICAL_BLOCK)?;
    expect_field(S, "lanes", header.lanes, VERTICAL_LANES)?;
    let blocks = blocks_for(header.total_count as usize, VERTICAL_BLOCK);
    check_blocks(
        S,
        block_starts,
        data,
        blocks,
        |_| 0,
        |w| {
            if w > MAX_WIDTH {
                return Err(format!("bit width word {w}, expected at most {MAX_WIDTH}"));
            }
            Ok(vertical_block_words(w))
        },
    )
}

/// Checks an NSF column: 1, 2 or 4 bytes per value, a reference that no value carries past
/// 32 bits, and exactly the words the values fill.
pub fn validate_nsf(header: &NsfHeader, data: &[u32]) -> Result<()> {
    const S: &str = "NSF";
    let b = header.value_bytes;
    if !matches!(b, 1 | 2 | 4) {
        return Err(bad(
            S,
            format!("header value bytes is {b}, expected 1, 2 or 4"),
        ));
    }
    let (r, max) = (header.reference, nsf_max_reference(b));
    if r > max {
        return Err(bad(
            S,
            format!(
                "header reference is {r}, more than {max}, past which {b}-byte values would \
                 not fit 32 bits"
            ),
        ));
    }
    let want = (header.total_count as usize * b as usize).div_ceil(4);
    if data.len() != want {
        return Err(bad(
            S,
            format!(
                "{} data words, expected {want} for {} values of {b} bytes",
                data.len(),
                header.total_count
            ),
        ));
    }
    Ok(())
}

/// Checks an NSV column: one length code per value (16 a word, the unused ones 0), their
/// bytes summing to the header's byte count, and exactly the words those bytes fill.
pub fn validate_nsv(header: &NsvHeader, lengths: &[u32], data: &[u32]) -> Result<()> {
    const S: &str = "NSV";
    let n = header.total_count as usize;
    let want = n.div_ceil(NSV_CODES_PER_WORD);
    if lengths.len() != want {
        return Err(bad(
            S,
            format!(
                "{} length words, expected {want} for {n} values",
                lengths.len()
            ),
        ));
    }
    let tail = n % NSV_CODES_PER_WORD;
    if let (Some(&last), true) = (lengths.last(), tail != 0)
        && last >> (2 * tail) != 0
    {
        return Err(bad(
            S,
            format!("length word {}: codes past value {n} are not 0", want - 1),
        ));
    }
    let bytes: u64 = lengths
        .iter()
        .enumerate()
        .map(|(k, &w)| {
            let used = (n - k * NSV_CODES_PER_WORD).min(NSV_CODES_PER_WORD);
            (0..used).map(|i| nsv_len(w, i) as u64).sum::<u64>()
        })
        .sum();
    if bytes != header.data_bytes as u64 {
        return Err(bad(
            S,
            format!(
                "the lengths sum to {bytes} bytes, the header says {}",
                header.data_bytes
            ),
        ));
    }
    let words = (header.data_bytes as usize).div_ceil(4);
    if data.len() != words {
        return Err(bad(
            S,
            format!(
                "{} data words, expected {words} for {bytes} bytes",
                data.len()
            ),
        ));
    }
    Ok(())
}

/// Checks that `lengths` (from `source`) are each at least 1 and sum to `total`, in `u64`.
fn check_runs(scheme: &str, total: u32, lengths: impl Iterator<Item = u32>) -> Result<()> {
    let mut sum = 0u64;
    for (r, len) in lengths.enumerate() {
        if len == 0 {
            return Err(bad(scheme, format!("run {r} has length 0")));
        }
        sum += len as u64;
        if sum > total as u64 {
            return Err(bad(
                scheme,
                format!(
                    "the run lengths reach {sum} by run {r}, past the header's total of {total}"
                ),
            ));
        }
    }
    if sum != total as u64 {
        return Err(bad(
            scheme,
            format!("the run lengths sum to {sum}, the header's total is {total}"),
        ));
    }
    Ok(())
}

/// Checks an RLE column: as many values as lengths as the header's runs, each length at least
/// 1, the lengths summing to the total.
pub fn validate_rle(header: &RunHeader, values: &[u32], lengths: &[u32]) -> Result<()> {
    const S: &str = "RLE";
    check_run_counts(S, header, values.len(), lengths.len())?;
    check_runs(S, header.total_count, lengths.iter().copied())
}

/// `Err` unless there are as many run values and run lengths as the header's runs.
fn check_run_counts(scheme: &str, header: &RunHeader, values: usize, lengths: usize) -> Result<()> {
    let runs = header.run_count as usize;
    if values != runs || lengths != runs {
        let msg = format!("{values} values and {lengths} lengths, expected {runs} runs of each");
        return Err(bad(scheme, msg));
    }
    Ok(())
}

/// Checks an RFOR column whose two GPU-FOR columns are valid: both hold the header's run
/// count, and the run lengths (decoded) are each at least 1 and sum to the total.
pub fn validate_rfor(header: &RunHeader, values: &ForColumn, lengths: &ForColumn) -> Result<()> {
    const S: &str = "RFOR";
    check_run_counts(S, header, values.len(), lengths.len())?;
    let runs = header.run_count as usize;
    let mut decoded = Vec::with_capacity(runs);
    let mut block = [0u32; BLOCK];
    for k in 0..blocks_for(runs, BLOCK) {
        let out = &mut block[..(runs - k * BLOCK).min(BLOCK)];
        decode_block(block_slice(lengths.block_starts(), lengths.data(), k)?, out)?;
        decoded.extend_from_slice(out);
    }
    check_runs(S, header.total_count, decoded.into_iter())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::{Compressed, DforColumn, NsvColumn};

    fn msg(r: Result<()>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn dfor_wants_a_first_value_before_each_group() {
        let col = DforColumn::encode(&(0..1000).collect::<Vec<_>>(), 2).unwrap();
        let (h, s, d) = (*col.header(), col.block_starts().to_vec(), col.data());
        assert!(validate_dfor(&h, &s, d).is_ok());
        assert_eq!(s[0], 1);
        let mut no_gap = s.clone();
        no_gap[2] -= 1;
        assert!(msg(validate_dfor(&h, &no_gap, d)).contains("block 2 starts at word"));
        let bad_d = DforHeader {
            group_blocks: 0,
            ..h
        };
        assert!(msg(validate_dfor(&bad_d, &s, d)).contains("header D (blocks per group) is 0"));
    }

    #[test]
    fn nsv_lengths_must_match_the_bytes() {
        let col = NsvColumn::encode(&[1, 300, 70_000, u32::MAX, 5]).unwrap();
        let (h, l, d) = (*col.header(), col.lengths().to_vec(), col.data());
        assert_eq!(h.data_bytes, 1 + 2 + 3 + 4 + 1);
        assert!(validate_nsv(&h, &l, d).is_ok());
        let mut longer = l.clone();
        longer[0] ^= 1;
        assert!(msg(validate_nsv(&h, &longer, d)).contains("the lengths sum to"));
        let mut tail = l.clone();
        tail[0] |= 1 << 20;
        assert!(msg(validate_nsv(&h, &tail, d)).contains("codes past value 5"));
        assert!(msg(validate_nsv(&h, &l, &d[..2])).contains("2 data words, expected 3"));
    }

    #[test]
    fn run_lengths_are_positive_and_sum_to_the_total() {
        let h = RunHeader {
            total_count: 10,
            run_count: 2,
        };
        assert!(validate_rle(&h, &[1, 2], &[4, 6]).is_ok());
        assert!(msg(validate_rle(&h, &[1, 2], &[0, 10])).contains("run 0 has length 0"));
        let e = msg(validate_rle(&h, &[1, 2], &[u32::MAX, u32::MAX]));
        assert!(e.contains("past the header's total of 10"), "{e}");
        assert!(msg(validate_rle(&h, &[1], &[4, 6])).contains("1 values and 2 lengths"));
    }

    #[test]
    fn nsf_and_vertical_headers_are_checked() {
        let h = NsfHeader {
            total_count: 5,
            value_bytes: 3,
            reference: 0,
        };
        assert!(msg(validate_nsf(&h, &[0; 4])).contains("value bytes is 3"));
        let h = NsfHeader {
            value_bytes: 2,
            ..h
        };
        assert!(validate_nsf(&h, &[0; 3]).is_ok());
        // The largest reference 2-byte values allow, and one past it.
        let h = NsfHeader {
            reference: u32::MAX - 0xffff,
            ..h
        };
        assert!(validate_nsf(&h, &[0; 3]).is_ok());
        let h = NsfHeader {
            reference: u32::MAX - 0xfffe,
            ..h
        };
        let e = msg(validate_nsf(&h, &[0; 3]));
        assert!(
            e.contains("reference is 4294901761, more than 4294901760"),
            "{e}"
        );
        let h = NsfHeader {
            value_bytes: 4,
            reference: 1,
            ..h
        };
        assert!(msg(validate_nsf(&h, &[0; 5])).contains("more than 0"));
        let h = VerticalHeader {
            block_size: VERTICAL_BLOCK as u32,
            lanes: VERTICAL_LANES as u32,
            total_count: 1,
        };
        assert!(validate_vertical(&h, &[0, 2], &[9, 0]).is_ok());
        let e = msg(validate_vertical(&h, &[0, 2], &[9, 40]));
        assert!(e.contains("bit width word 40"), "{e}");
        let col = crate::compress::VerticalColumn::encode(&[1, 2, 3]).unwrap();
        assert_eq!(col.len(), 3);
    }
}
