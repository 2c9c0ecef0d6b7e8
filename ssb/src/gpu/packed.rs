//! Lineorder's query columns compressed on the device (thesis §5.6.5): each in the smallest of
//! None, NSF and GPU-FOR, which the `SSB_FLIGHT*_PACKED` probes decode where they read them.
//!
//! GPU-DFOR is not among them: a probe reads most columns at its survivors' rows only, and a
//! GPU-DFOR value is the sum of its group's deltas up to it, so one row costs its group's
//! decode. The query columns are not sorted, and none of them is smaller in GPU-DFOR than in
//! GPU-FOR (the storage table, `tessera ssb storage`, shows all four).
use cudarc::driver::DevicePtr;
use tessera_host::compress::{Encoded, Scheme};
use tessera_host::runtime::{DeviceColumn, Gpu};
use tessera_host::{Error, Result};
use tessera_kernels::compress::format::block_header;
use tessera_kernels::ssb::plan::{FOR_PAD_WORDS, PackedCol, column};

use super::PackedFlight;
use super::plan::{FactCol, Flight};
use crate::data::SsbData;

/// The schemes a compressed engine stores a query column in, in the order tried (the first
/// wins a tie).
pub const PACKED_SCHEMES: [Scheme; 3] = [Scheme::Plain, Scheme::Nsf, Scheme::For];

/// One query column as stored: its scheme and footprint.
#[derive(Clone, Debug)]
pub struct PackedColumn {
    /// The column.
    pub column: FactCol,
    /// Its scheme.
    pub scheme: Scheme,
    /// Its compressed bytes (headers, block starts and data).
    pub bytes: usize,
    /// The bytes the device holds of it: for GPU-FOR the block index besides the block
    /// starts ([`PackedCol::index`], four times their bytes) and the padding words past the
    /// data.
    pub device_bytes: usize,
}

/// The nine query columns on the device, compressed, and each flight's column descriptors.
pub(crate) struct PackedFact {
    /// The arrays the descriptors point into: held here, never moved.
    _arrays: Vec<DeviceColumn<u32>>,
    /// Per [`Flight`] (in `One..Four` order), its columns' descriptors in kernel order.
    flights: Vec<PackedFlight>,
    /// What each column became, in [`FactCol::ALL`] order.
    pub(crate) columns: Vec<PackedColumn>,
}

/// Each query column of `data` in the smallest of `schemes` (a non-empty subset of
/// [`PACKED_SCHEMES`], else `Err`), in [`FactCol::ALL`] order; the encoders run on all cores.
pub fn encode_fact(data: &SsbData, schemes: &[Scheme]) -> Result<Vec<Encoded>> {
    if schemes.is_empty() || schemes.iter().any(|s| !PACKED_SCHEMES.contains(s)) {
        return Err(Error::invalid(format!(
            "compressed SSB columns: schemes {:?}; the probes read {:?}",
            schemes.iter().map(|s| s.name()).collect::<Vec<_>>(),
            PACKED_SCHEMES.map(Scheme::name)
        )));
    }
    FactCol::ALL
        .iter()
        .map(|c| Ok(Scheme::smallest_of(bytemuck::cast_slice(c.of(data)), schemes)?.encoded))
        .collect()
}

impl PackedFact {
    /// Uploads the query columns `encoded` (in [`FactCol::ALL`] order, each of `rows` values
    /// in one of [`PACKED_SCHEMES`], else `Err`).
    pub(crate) fn new(gpu: &Gpu, encoded: &[Encoded], rows: usize) -> Result<PackedFact> {
        check_columns(encoded, rows)?;
        let mut arrays = Vec::new();
        let mut descs = Vec::new();
        let mut columns = Vec::new();
        for (&c, encoded) in FactCol::ALL.iter().zip(encoded) {
            let (desc, device_bytes) = upload(gpu, encoded, &mut arrays)?;
            columns.push(PackedColumn {
                column: c,
                scheme: encoded.scheme(),
                bytes: encoded.compressed_bytes(),
                device_bytes,
            });
            descs.push(desc);
        }
        let flights = [Flight::One, Flight::Two, Flight::Three, Flight::Four]
            .iter()
            .map(|f| {
                let cols: Vec<PackedCol> = f.columns().iter().map(|&c| descs[c as usize]).collect();
                PackedFlight::new(*f, &cols)
            })
            .collect::<Result<_>>()?;
        Ok(PackedFact {
            _arrays: arrays,
            flights,
            columns,
        })
    }

    /// The descriptors of `flight`'s columns.
    pub(crate) fn flight(&self, flight: Flight) -> &PackedFlight {
        &self.flights[flight as usize]
    }
}

/// `Err` unless `encoded` holds the nine query columns in [`FactCol::ALL`] order, each of
/// `rows` values in one of [`PACKED_SCHEMES`].
pub(crate) fn check_columns(encoded: &[Encoded], rows: usize) -> Result<()> {
    if encoded.len() != FactCol::ALL.len() {
        return Err(Error::invalid(format!(
            "compressed SSB columns: {} columns, expected {}",
            encoded.len(),
            FactCol::ALL.len()
        )));
    }
    for (&c, e) in FactCol::ALL.iter().zip(encoded) {
        if e.len() != rows {
            return Err(Error::invalid(format!(
                "compressed {}: {} values, lineorder has {rows} rows",
                c.name(),
                e.len()
            )));
        }
        parts(e)?;
    }
    Ok(())
}

/// A query column's arrays as a probe reads them.
pub(crate) struct Parts<'a> {
    /// Its [`column`] kind.
    pub(crate) kind: u32,
    /// Its data words: the values (None), their bytes (NSF) or the blocks (GPU-FOR).
    pub(crate) data: &'a [u32],
    /// GPU-FOR's block starts (word offsets into `data`, then its length); empty for the
    /// other kinds.
    pub(crate) starts: &'a [u32],
    /// NSF's reference; 0 for the other kinds.
    pub(crate) reference: u32,
}

impl Parts<'_> {
    /// GPU-FOR's block starts as the walks read them ([`PackedCol::starts`]): one per block,
    /// without the data's length that ends the format's; empty for the other kinds.
    pub(crate) fn block_starts(&self) -> &[u32] {
        &self.starts[..self.starts.len().saturating_sub(1)]
    }

    /// GPU-FOR's block index as the probes read it ([`PackedCol::index`]): per block, its
    /// start, its header's widths word and reference, and a zero; empty for the other kinds.
    pub(crate) fn index(&self) -> Vec<u32> {
        // Every block holds its header (the encoded column was validated).
        self.block_starts()
            .iter()
            .flat_map(|&s| {
                let (reference, widths) = block_header(&self.data[s as usize..]);
                [s, widths, reference, 0]
            })
            .collect()
    }
}

/// `e`'s arrays and kind, `Err` for a scheme no probe reads.
pub(crate) fn parts(e: &Encoded) -> Result<Parts<'_>> {
    Ok(match e {
        Encoded::Plain(c) => Parts {
            kind: column::PLAIN,
            data: c.values(),
            starts: &[],
            reference: 0,
        },
        Encoded::Nsf(c) => Parts {
            kind: match c.header().value_bytes {
                1 => column::NSF1,
                2 => column::NSF2,
                _ => column::PLAIN,
            },
            data: c.data(),
            starts: &[],
            // 0 at 4 bytes (validated), where the kind is PLAIN.
            reference: c.header().reference,
        },
        Encoded::For(c) => Parts {
            kind: column::GPU_FOR,
            data: c.data(),
            starts: c.block_starts(),
            reference: 0,
        },
        other => {
            return Err(Error::invalid(format!(
                "compressed SSB columns: no probe reads {}",
                other.scheme().name()
            )));
        }
    })
}

/// Uploads `e`'s arrays (kept in `arrays`) and returns the column's descriptor and the bytes
/// uploaded.
fn upload(
    gpu: &Gpu,
    e: &Encoded,
    arrays: &mut Vec<DeviceColumn<u32>>,
) -> Result<(PackedCol, usize)> {
    let p = parts(e)?;
    let mut bytes = 0;
    let mut put = |words: &[u32]| -> Result<u64> {
        bytes += 4 * words.len();
        let col = gpu.upload(words)?;
        let ptr = col.view().device_ptr(gpu.stream()).0;
        arrays.push(col);
        Ok(ptr)
    };
    let data = if p.kind == column::GPU_FOR {
        // Words past the blocks, which the last block's values read and a walk brings into
        // L2 (`PackedCol`).
        let mut padded = Vec::with_capacity(p.data.len() + FOR_PAD_WORDS);
        padded.extend_from_slice(p.data);
        padded.extend([0; FOR_PAD_WORDS]);
        put(&padded)?
    } else {
        put(p.data)?
    };
    let (index, starts) = if p.starts.is_empty() {
        (0, 0)
    } else {
        (put(&p.index())?, put(p.block_starts())?)
    };
    let desc = PackedCol {
        data,
        index,
        starts,
        kind: p.kind,
        reference: p.reference,
    };
    Ok((desc, bytes))
}

#[cfg(test)]
mod tests {
    use super::parts;
    use tessera_host::compress::Scheme;
    use tessera_kernels::compress::format::BLOCK;
    use tessera_kernels::ssb::plan::INDEX_WORDS;

    #[test]
    fn block_index_has_an_entry_per_block() {
        for n in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 5 * BLOCK + 3] {
            // Widths that differ by miniblock and by block.
            let values: Vec<u32> = (0..n as u32)
                .map(|i| i * i % (1 << (i / 32 % 20)))
                .collect();
            let e = Scheme::For.encode(&values).unwrap();
            let p = parts(&e).unwrap();
            let index = p.index();
            let blocks = n.div_ceil(BLOCK);
            assert_eq!(index.len(), blocks * INDEX_WORDS, "n = {n}");
            for (b, entry) in index.chunks(INDEX_WORDS).enumerate() {
                assert_eq!(entry[0], p.starts[b], "n = {n}, block {b}");
                let s = p.starts[b] as usize;
                assert_eq!(
                    entry[1..],
                    [p.data[s + 1], p.data[s], 0],
                    "n = {n}, block {b}"
                );
            }
        }
    }
}
