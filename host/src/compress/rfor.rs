//! RFOR: run-length encoding with the run values and the run lengths each in GPU-FOR.
use tessera_kernels::compress::format::{ForHeader, RunHeader};

use super::{Compressed, ForColumn, Scheme, arrays_of, header_from, rle, validate};
use crate::Result;

/// An RFOR column: header, the run values and the run lengths as GPU-FOR columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RforColumn {
    header: RunHeader,
    values: ForColumn,
    lengths: ForColumn,
}

impl RforColumn {
    /// `values` in RFOR.
    pub fn encode(values: &[u32]) -> Result<RforColumn> {
        let (vals, lens) = rle::runs(values)?;
        Ok(RforColumn {
            header: RunHeader {
                total_count: values.len() as u32,
                run_count: vals.len() as u32,
            },
            values: ForColumn::encode(&vals)?,
            lengths: ForColumn::encode(&lens)?,
        })
    }

    /// The header.
    pub fn header(&self) -> &RunHeader {
        &self.header
    }
    /// The run values, in GPU-FOR.
    pub fn values(&self) -> &ForColumn {
        &self.values
    }
    /// The run lengths, in GPU-FOR.
    pub fn lengths(&self) -> &ForColumn {
        &self.lengths
    }
}

impl Compressed for RforColumn {
    const SCHEME: Scheme = Scheme::Rfor;
    fn len(&self) -> usize {
        self.header.total_count as usize
    }
    /// The run header, then the values' and the lengths' GPU-FOR headers.
    fn header_words(&self) -> Vec<u32> {
        let mut w = bytemuck::cast_slice(&[self.header]).to_vec();
        w.extend(self.values.header_words());
        w.extend(self.lengths.header_words());
        w
    }
    /// The values' block starts and data, then the lengths'.
    fn arrays(&self) -> Vec<&[u32]> {
        let mut a = self.values.arrays();
        a.extend(self.lengths.arrays());
        a
    }
    fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Self> {
        const RUN: usize = size_of::<RunHeader>() / 4;
        const FOR: usize = size_of::<ForHeader>() / 4;
        let words: [u32; RUN + 2 * FOR] = header_from(Self::SCHEME, header)?;
        let (run, rest) = words.split_at(RUN);
        let run: RunHeader = header_from(Self::SCHEME, run)?;
        let (vh, lh) = rest.split_at(FOR);
        let [vs, vd, ls, ld] = arrays_of(Self::SCHEME, arrays)?;
        let values = ForColumn::from_parts(vh, vec![vs, vd])?;
        let lengths = ForColumn::from_parts(lh, vec![ls, ld])?;
        validate::validate_rfor(&run, &values, &lengths)?;
        Ok(RforColumn {
            header: run,
            values,
            lengths,
        })
    }
}
