//! Lightweight integer compression (thesis chapter 5, issue 21): the encoders of GPU-FOR,
//! GPU-DFOR and RFOR and of the baselines (plain, NSF, NSV, RLE, the vertical SIMD-BP128-style
//! layout), their validation and their on-disk form. The layouts are documented, word by word,
//! in [`tessera_kernels::compress::format`]; the CPU decoders are
//! [`crate::cpu::decompress`] and [`crate::cpu::decompress_sum`].
//!
//! Every column type keeps its invariant: an encoder builds it, or `from_parts` builds it from
//! raw arrays after [`validate`] checked them completely, so no decoder (CPU, or later GPU)
//! ever reads a buffer that could send it out of bounds. Encoders are multi-threaded (rayon)
//! and produce the same output whatever the thread count.
//!
//! Signed columns: encode an `i32` column as its bit pattern (`bytemuck::cast_slice::<i32,
//! u32>`) and cast the decoded values back; GPU-FOR and GPU-DFOR choose signed references where
//! that is smaller, so small negative values stay narrow.
//!
//! ```
//! use tessera_host::compress::{Scheme, ForColumn, Compressed};
//! let values: Vec<u32> = (0..1000).map(|i| 5000 + i % 16).collect();
//! let col = ForColumn::encode(&values)?;
//! assert!(col.bits_per_value() < 5.0);
//! let best = Scheme::smallest(&values)?;
//! assert_eq!(tessera_host::cpu::decompress(&best.encoded)?, values);
//! # Ok::<(), tessera_host::Error>(())
//! ```

pub(crate) mod block;
mod dfor;
pub mod file;
mod gpu_for;
mod nsf;
mod nsv;
mod rfor;
mod rle;
pub mod validate;
mod vertical;

pub use dfor::DforColumn;
pub use file::{read_column, write_column};
pub use gpu_for::ForColumn;
pub use nsf::NsfColumn;
pub use nsv::NsvColumn;
pub use rfor::RforColumn;
pub use rle::RleColumn;
pub use tessera_kernels::compress::format;
pub use vertical::VerticalColumn;

use crate::{Error, Result};

/// What every compressed column offers: its size, and its parts for the on-disk form.
pub trait Compressed: Sized {
    /// The column's scheme.
    const SCHEME: Scheme;
    /// Values in the column.
    fn len(&self) -> usize;
    /// Whether the column holds no values.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The header as words (its `#[repr(C)]` struct's fields in order; none for plain).
    fn header_words(&self) -> Vec<u32>;
    /// The column's arrays, in the order [`Compressed::from_parts`] takes them.
    fn arrays(&self) -> Vec<&[u32]>;
    /// The column from its header words and arrays, validated completely ([`validate`]).
    fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Self>;
    /// The footprint: header and every array, in bytes (what a GPU holds).
    fn compressed_bytes(&self) -> usize {
        4 * (self.header_words().len() + self.arrays().iter().map(|a| a.len()).sum::<usize>())
    }
    /// Bits per value of the footprint (0 for an empty column).
    fn bits_per_value(&self) -> f64 {
        8.0 * self.compressed_bytes() as f64 / self.len().max(1) as f64
    }
}

/// A header struct from its words: `Err` naming the scheme when the count is wrong.
pub(crate) fn header_from<H: bytemuck::Pod>(scheme: Scheme, words: &[u32]) -> Result<H> {
    let want = size_of::<H>() / 4;
    if words.len() != want {
        return Err(Error::Data(format!(
            "{}: header of {} words, expected {want}",
            scheme.name(),
            words.len()
        )));
    }
    Ok(bytemuck::pod_read_unaligned(bytemuck::cast_slice(words)))
}

/// `arrays` as exactly `N` arrays: `Err` naming the scheme otherwise.
pub(crate) fn arrays_of<const N: usize>(
    scheme: Scheme,
    arrays: Vec<Vec<u32>>,
) -> Result<[Vec<u32>; N]> {
    let n = arrays.len();
    arrays
        .try_into()
        .map_err(|_| Error::Data(format!("{}: {n} arrays, expected {N}", scheme.name())))
}

/// An uncompressed column (the thesis' "None"): 4 bytes per value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainColumn {
    values: Vec<u32>,
}

impl PlainColumn {
    /// The column of `values`.
    pub fn encode(values: &[u32]) -> Result<PlainColumn> {
        crate::runtime::check_len(values.len())?;
        Ok(PlainColumn {
            values: values.to_vec(),
        })
    }

    /// The values.
    pub fn values(&self) -> &[u32] {
        &self.values
    }
}

impl Compressed for PlainColumn {
    const SCHEME: Scheme = Scheme::Plain;
    fn len(&self) -> usize {
        self.values.len()
    }
    fn header_words(&self) -> Vec<u32> {
        Vec::new()
    }
    fn arrays(&self) -> Vec<&[u32]> {
        vec![&self.values]
    }
    fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Self> {
        header_from::<[u32; 0]>(Scheme::Plain, header)?;
        let [values] = arrays_of(Scheme::Plain, arrays)?;
        crate::runtime::check_len(values.len())?;
        Ok(PlainColumn { values })
    }
}

/// The compression schemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Uncompressed, 4 bytes per value (the thesis' "None").
    Plain,
    /// Null suppression, fixed length: 1, 2 or 4 bytes per value for the whole column.
    Nsf,
    /// Null suppression, variable length: 1 to 4 bytes per value and a 2-bit length each.
    Nsv,
    /// Run-length encoding: run values and run lengths.
    Rle,
    /// GPU-FOR: frame of reference and bit packing per 128-value block (§5.3.1).
    For,
    /// GPU-DFOR: GPU-FOR of the deltas within groups of D blocks (§5.4.1), D = 4 here.
    Dfor,
    /// RFOR: run-length encoding with both arrays in GPU-FOR.
    Rfor,
    /// The vertical SIMD-BP128-style layout of §5.3.3 (4096-value blocks).
    Vertical,
}

/// The column of one scheme, whichever it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Encoded {
    /// A [`PlainColumn`].
    Plain(PlainColumn),
    /// An [`NsfColumn`].
    Nsf(NsfColumn),
    /// An [`NsvColumn`].
    Nsv(NsvColumn),
    /// An [`RleColumn`].
    Rle(RleColumn),
    /// A [`ForColumn`].
    For(ForColumn),
    /// A [`DforColumn`].
    Dfor(DforColumn),
    /// An [`RforColumn`].
    Rfor(RforColumn),
    /// A [`VerticalColumn`].
    Vertical(VerticalColumn),
}

/// `$body` with `$c` bound to the column inside `$e`, whatever its variant.
macro_rules! each_column {
    ($e:expr, $c:ident => $body:expr) => {
        match $e {
            Encoded::Plain($c) => $body,
            Encoded::Nsf($c) => $body,
            Encoded::Nsv($c) => $body,
            Encoded::Rle($c) => $body,
            Encoded::For($c) => $body,
            Encoded::Dfor($c) => $body,
            Encoded::Rfor($c) => $body,
            Encoded::Vertical($c) => $body,
        }
    };
}

impl Encoded {
    /// The column's scheme.
    pub fn scheme(&self) -> Scheme {
        fn of<C: Compressed>(_: &C) -> Scheme {
            C::SCHEME
        }
        each_column!(self, c => of(c))
    }
    /// Values in the column.
    pub fn len(&self) -> usize {
        each_column!(self, c => c.len())
    }
    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The footprint in bytes ([`Compressed::compressed_bytes`]).
    pub fn compressed_bytes(&self) -> usize {
        each_column!(self, c => c.compressed_bytes())
    }
    /// Bits per value of the footprint.
    pub fn bits_per_value(&self) -> f64 {
        each_column!(self, c => c.bits_per_value())
    }
    /// The header as words ([`Compressed::header_words`]).
    pub fn header_words(&self) -> Vec<u32> {
        each_column!(self, c => c.header_words())
    }
    /// The arrays ([`Compressed::arrays`]).
    pub fn arrays(&self) -> Vec<&[u32]> {
        each_column!(self, c => c.arrays())
    }
    /// The column of `scheme` from its header words and arrays, validated completely.
    pub fn from_parts(scheme: Scheme, header: &[u32], arrays: Vec<Vec<u32>>) -> Result<Encoded> {
        Ok(match scheme {
            Scheme::Plain => Encoded::Plain(PlainColumn::from_parts(header, arrays)?),
            Scheme::Nsf => Encoded::Nsf(NsfColumn::from_parts(header, arrays)?),
            Scheme::Nsv => Encoded::Nsv(NsvColumn::from_parts(header, arrays)?),
            Scheme::Rle => Encoded::Rle(RleColumn::from_parts(header, arrays)?),
            Scheme::For => Encoded::For(ForColumn::from_parts(header, arrays)?),
            Scheme::Dfor => Encoded::Dfor(DforColumn::from_parts(header, arrays)?),
            Scheme::Rfor => Encoded::Rfor(RforColumn::from_parts(header, arrays)?),
            Scheme::Vertical => Encoded::Vertical(VerticalColumn::from_parts(header, arrays)?),
        })
    }
}

/// The result of [`Scheme::smallest`]: the smallest column and every candidate's footprint.
#[derive(Clone, Debug)]
pub struct Smallest {
    /// The column with the smallest footprint (the first candidate on a tie).
    pub encoded: Encoded,
    /// Each candidate scheme with its footprint in bytes, in the order tried.
    pub sizes: Vec<(Scheme, usize)>,
}

impl Scheme {
    /// Every scheme, in the order [`Scheme::smallest`] tries them (and prefers on a tie).
    pub const ALL: [Scheme; 8] = [
        Scheme::Plain,
        Scheme::Nsf,
        Scheme::For,
        Scheme::Dfor,
        Scheme::Rfor,
        Scheme::Rle,
        Scheme::Nsv,
        Scheme::Vertical,
    ];

    /// The scheme's name, as the thesis writes it.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Plain => "None",
            Scheme::Nsf => "NSF",
            Scheme::Nsv => "NSV",
            Scheme::Rle => "RLE",
            Scheme::For => "GPU-FOR",
            Scheme::Dfor => "GPU-DFOR",
            Scheme::Rfor => "RFOR",
            Scheme::Vertical => "GPU-SIMDBP128",
        }
    }

    /// The scheme's id in the on-disk form ([`mod@file`]).
    pub fn id(self) -> u32 {
        match self {
            Scheme::Plain => 0,
            Scheme::Nsf => 1,
            Scheme::Nsv => 2,
            Scheme::Rle => 3,
            Scheme::For => 4,
            Scheme::Dfor => 5,
            Scheme::Rfor => 6,
            Scheme::Vertical => 7,
        }
    }

    /// The scheme of an on-disk id, if any.
    pub fn from_id(id: u32) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.id() == id)
    }

    /// `values` encoded with this scheme as the thesis has it (GPU-DFOR with D = 4, NSF with
    /// no reference).
    pub fn encode(self, values: &[u32]) -> Result<Encoded> {
        Ok(match self {
            Scheme::Plain => Encoded::Plain(PlainColumn::encode(values)?),
            Scheme::Nsf => Encoded::Nsf(NsfColumn::encode(values)?),
            Scheme::Nsv => Encoded::Nsv(NsvColumn::encode(values)?),
            Scheme::Rle => Encoded::Rle(RleColumn::encode(values)?),
            Scheme::For => Encoded::For(ForColumn::encode(values)?),
            Scheme::Dfor => {
                Encoded::Dfor(DforColumn::encode(values, format::DEFAULT_GROUP_BLOCKS)?)
            }
            Scheme::Rfor => Encoded::Rfor(RforColumn::encode(values)?),
            Scheme::Vertical => Encoded::Vertical(VerticalColumn::encode(values)?),
        })
    }

    /// `values` encoded with every scheme, keeping the smallest footprint: the thesis' rule
    /// (§5.6.6), which its decoders' speed makes the only rule needed. NSF is tried over the
    /// column's minimum ([`NsfColumn::encode_framed`]), where [`Scheme::encode`] gives the
    /// thesis' NSF, with no reference.
    pub fn smallest(values: &[u32]) -> Result<Smallest> {
        Scheme::smallest_of(values, &Scheme::ALL)
    }

    /// As [`Scheme::smallest`], among `schemes` only (`Err` when the list is empty).
    pub fn smallest_of(values: &[u32], schemes: &[Scheme]) -> Result<Smallest> {
        let mut best: Option<Encoded> = None;
        let mut sizes = Vec::with_capacity(schemes.len());
        for &s in schemes {
            // NSF over a reference where that takes fewer bytes: as GPU-FOR's frame of
            // reference does per block, NSF's does for the column.
            let e = match s {
                Scheme::Nsf => Encoded::Nsf(NsfColumn::encode_framed(values)?),
                s => s.encode(values)?,
            };
            sizes.push((s, e.compressed_bytes()));
            if best
                .as_ref()
                .is_none_or(|b| e.compressed_bytes() < b.compressed_bytes())
            {
                best = Some(e);
            }
        }
        let encoded = best.ok_or_else(|| Error::invalid("smallest_of: no scheme to try"))?;
        Ok(Smallest { encoded, sizes })
    }
}

/// Defines a column type: its struct of a `#[repr(C)]` header and word arrays, their
/// accessors, and its [`Compressed`] impl, whose `from_parts` checks the parts with
/// `$validate(&header, &array, ...)` before it builds the column.
macro_rules! column {
    // A column of bit-packed blocks (GPU-FOR, GPU-DFOR, vertical): block starts and data.
    ($(#[$m:meta])* $name:ident, $header:ty, $scheme:expr, $validate:path, blocks) => {
        $crate::compress::column! {
            $(#[$m])* $name, $header, $scheme, $validate,
            [
                /// The block starts: each block's word offset in the data, then the data's
                /// length.
                block_starts,
                /// The data array.
                data,
            ]
        }
    };
    (
        $(#[$m:meta])* $name:ident, $header:ty, $scheme:expr, $validate:path,
        [$($(#[$fm:meta])* $field:ident),+ $(,)?]
    ) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            header: $header,
            $($field: Vec<u32>,)+
        }

        impl $name {
            /// The header.
            pub fn header(&self) -> &$header {
                &self.header
            }
            $(
                $(#[$fm])*
                pub fn $field(&self) -> &[u32] {
                    &self.$field
                }
            )+
        }

        impl $crate::compress::Compressed for $name {
            const SCHEME: $crate::compress::Scheme = $scheme;
            fn len(&self) -> usize {
                self.header.total_count as usize
            }
            fn header_words(&self) -> Vec<u32> {
                bytemuck::cast_slice(&[self.header]).to_vec()
            }
            fn arrays(&self) -> Vec<&[u32]> {
                vec![$(&self.$field),+]
            }
            fn from_parts(header: &[u32], arrays: Vec<Vec<u32>>) -> $crate::Result<Self> {
                let header: $header = $crate::compress::header_from(Self::SCHEME, header)?;
                let [$($field),+] = $crate::compress::arrays_of(Self::SCHEME, arrays)?;
                $validate(&header, $(&$field),+)?;
                Ok($name { header, $($field),+ })
            }
        }
    };
}
pub(crate) use column;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{decompress, decompress_sum};

    fn inputs() -> Vec<Vec<u32>> {
        let mut v = vec![
            vec![],
            vec![7],
            vec![u32::MAX; 300],
            (0..1000).rev().collect(),
        ];
        v.push(
            (0..5000u32)
                .map(|i| i.wrapping_mul(2654435761) >> (i % 32))
                .collect(),
        );
        v.push((0..9000u32).map(|i| i / 100).collect());
        v
    }

    #[test]
    fn every_scheme_round_trips() {
        for values in inputs() {
            let sum: u64 = values.iter().map(|&v| v as u64).sum();
            for s in Scheme::ALL {
                let e = s.encode(&values).unwrap();
                assert_eq!(e.scheme(), s);
                assert_eq!(e.len(), values.len());
                assert_eq!(
                    decompress(&e).unwrap(),
                    values,
                    "{} n={}",
                    s.name(),
                    values.len()
                );
                assert_eq!(decompress_sum(&e).unwrap(), sum, "{}", s.name());
                let back = Encoded::from_parts(
                    s,
                    &e.header_words(),
                    e.arrays().iter().map(|a| a.to_vec()).collect(),
                )
                .unwrap();
                assert_eq!(back, e);
            }
        }
    }

    #[test]
    fn dfor_accepts_every_d_and_refuses_others() {
        let values: Vec<u32> = (0..3000).collect();
        for d in [1, 2, 4, 8, 32] {
            let c = DforColumn::encode(&values, d).unwrap();
            assert_eq!(decompress(&Encoded::Dfor(c)).unwrap(), values);
        }
        for d in [0, 33] {
            let e = DforColumn::encode(&values, d).unwrap_err().to_string();
            assert!(e.contains(&format!("D = {d}")), "{e}");
        }
    }

    #[test]
    fn the_smallest_is_the_smallest() {
        let values: Vec<u32> = (0..20_000).collect();
        let best = Scheme::smallest(&values).unwrap();
        assert_eq!(best.encoded.scheme(), Scheme::Dfor);
        let min = best.sizes.iter().map(|s| s.1).min().unwrap();
        assert_eq!(best.encoded.compressed_bytes(), min);
        assert!(Scheme::smallest_of(&values, &[]).is_err());
    }
}
