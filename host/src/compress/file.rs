//! The on-disk form of one compressed column: a little-endian file that [`read_column`]
//! validates completely (checksum, structure, then the scheme's own checks) before it returns a
//! column, so a truncated or corrupt file is an `Err` naming the problem.
//!
//! ```text
//! offset     bytes  field
//! 0          8      magic "TSRCOL\0\0"
//! 8          4      version, 2 (1 is read too: its NSF header has no reference word)
//! 12         4      scheme id (Scheme::id: 0 None, 1 NSF, 2 NSV, 3 RLE, 4 GPU-FOR,
//!                   5 GPU-DFOR, 6 RFOR, 7 GPU-SIMDBP128)
//! 16         4      h, the header's word count
//! 20         4      a, the array count
//! 24         4h     the header's words (the scheme's #[repr(C)] header fields in order)
//! then a times:
//!            8      the array's length in words, L
//!            4L     its words
//! end - 8    8      XXH3-64 (seed 0) of every byte before it
//! ```
//!
//! Every integer is little-endian. The headers and arrays per scheme are those of
//! [`Compressed::header_words`] and [`Compressed::arrays`]: GPU-FOR, GPU-DFOR and the vertical
//! layout store (header; block starts, data), NSF (header; data), NSV (header; lengths, data),
//! RLE (header; values, lengths), RFOR (run header, values' and lengths' GPU-FOR headers;
//! values' block starts and data, lengths' block starts and data), None (no header; values).
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

#[allow(unused_imports)] // Linked from the module docs.
use super::Compressed;
use super::{Encoded, Scheme};
use crate::{Error, Result};

/// The file's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"TSRCOL\0\0";
/// The format version this library writes. Version 2 added NSF's reference
/// ([`NsfHeader::reference`]); this library reads version 1 as well, whose NSF headers lack
/// that word (a reference of 0).
///
/// [`NsfHeader::reference`]: tessera_kernels::compress::format::NsfHeader::reference
pub const VERSION: u32 = 2;
/// Bytes before the header words.
const PREAMBLE: usize = 24;
/// Bytes of the checksum.
const CHECKSUM: usize = 8;
/// The most header words and arrays a scheme has, with margin: larger counts are corruption.
const MAX_PARTS: u32 = 64;

/// The file's bytes for `col`.
pub fn to_bytes(col: &Encoded) -> Vec<u8> {
    let header = col.header_words();
    let arrays = col.arrays();
    let mut b = Vec::with_capacity(PREAMBLE + CHECKSUM + col.compressed_bytes() + 8 * arrays.len());
    b.extend_from_slice(&MAGIC);
    for w in [
        VERSION,
        col.scheme().id(),
        header.len() as u32,
        arrays.len() as u32,
    ] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    header
        .iter()
        .for_each(|w| b.extend_from_slice(&w.to_le_bytes()));
    for a in arrays {
        b.extend_from_slice(&(a.len() as u64).to_le_bytes());
        a.iter().for_each(|w| b.extend_from_slice(&w.to_le_bytes()));
    }
    let sum = xxh3_64(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// The column in the file bytes `bytes`, validated completely; `at` names them in errors.
pub fn from_bytes(bytes: &[u8], at: &str) -> Result<Encoded> {
    let bad = |msg: String| Error::Data(format!("{at}: {msg}"));
    if bytes.len() < PREAMBLE + CHECKSUM {
        return Err(bad(format!(
            "{} bytes, shorter than the smallest column file ({} bytes): truncated?",
            bytes.len(),
            PREAMBLE + CHECKSUM
        )));
    }
    if bytes[..8] != MAGIC {
        return Err(bad("not a tessera compressed column (bad magic)".into()));
    }
    let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM);
    let stored = u64::from_le_bytes(sum.try_into().unwrap_or_default());
    let actual = xxh3_64(body);
    if stored != actual {
        return Err(bad(format!(
            "checksum {stored:#018x} does not match the contents' {actual:#018x}: the file is \
             truncated or corrupt"
        )));
    }
    parse(body).map_err(|e| bad(e.to_string()))
}

/// The column in `body`, the file's bytes before its checksum (which matched).
fn parse(body: &[u8]) -> Result<Encoded> {
    let bad = |msg: String| Error::Data(msg);
    let mut r = Reader { bytes: body, at: 8 };
    let version = r.u32()?;
    if !(1..=VERSION).contains(&version) {
        return Err(bad(format!(
            "format version {version}, this library reads 1 to {VERSION}"
        )));
    }
    let id = r.u32()?;
    let scheme = Scheme::from_id(id).ok_or_else(|| bad(format!("unknown scheme id {id}")))?;
    let (h, a) = (r.u32()?, r.u32()?);
    if h > MAX_PARTS || a > MAX_PARTS {
        return Err(bad(format!(
            "{h} header words and {a} arrays: corrupt counts"
        )));
    }
    let mut header = r.words(h as u64)?;
    if version == 1 && scheme == Scheme::Nsf && header.len() == 2 {
        header.push(0); // Version 1's NSF: no reference.
    }
    let mut arrays = Vec::with_capacity(a as usize);
    for _ in 0..a {
        let len = r.u64()?;
        arrays.push(r.words(len)?);
    }
    if r.at != body.len() {
        return Err(bad(format!(
            "{} bytes after the last array",
            body.len() - r.at
        )));
    }
    Encoded::from_parts(scheme, &header, arrays)
}

/// A bounds-checked little-endian reader.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: u64) -> Result<&[u8]> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                Error::Data(format!(
                    "{n} bytes wanted at byte {}, past the end of the contents ({} bytes)",
                    self.at,
                    self.bytes.len()
                ))
            })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
    fn words(&mut self, n: u64) -> Result<Vec<u32>> {
        let b = self.take(n.saturating_mul(4))?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// Writes `col` to `path` in the on-disk form.
pub fn write_column(path: impl AsRef<Path>, col: &Encoded) -> Result<()> {
    std::fs::write(&path, to_bytes(col)).map_err(Error::io(&path, "write failed"))
}

/// Reads the column in `path`, validated completely: `Err` naming the file and the problem
/// when it is truncated, corrupt or inconsistent.
pub fn read_column(path: impl AsRef<Path>) -> Result<Encoded> {
    let bytes = std::fs::read(&path).map_err(Error::io(&path, "cannot read"))?;
    from_bytes(&bytes, &path.as_ref().display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        from_bytes(bytes, "t").unwrap_err().to_string()
    }

    #[test]
    fn the_preamble_is_checked() {
        let col = Scheme::For.encode(&[1, 2, 3]).unwrap();
        let b = to_bytes(&col);
        assert_eq!(from_bytes(&b, "t").unwrap(), col);
        assert!(err(&b[..10]).contains("t: 10 bytes, shorter than"));
        let mut m = b.clone();
        m[0] = b'X';
        assert!(err(&m).contains("bad magic"));
        // A wrong version or scheme behind a valid checksum.
        let reseal = |mut v: Vec<u8>| {
            v.truncate(v.len() - CHECKSUM);
            let sum = xxh3_64(&v);
            v.extend_from_slice(&sum.to_le_bytes());
            v
        };
        let mut v = b.clone();
        v[8] = 3;
        assert!(err(&reseal(v)).contains("format version 3, this library reads 1 to 2"));
        let mut v = b.clone();
        v[12] = 99;
        assert!(err(&reseal(v)).contains("unknown scheme id 99"));
        let mut v = b.clone();
        v[16] = 2;
        let e = err(&reseal(v));
        assert!(
            e.starts_with("t: ") && e.contains("wanted at byte 40"),
            "{e}"
        );
    }

    #[test]
    fn version_1_nsf_files_read_with_no_reference() {
        let values = [7, 300, 65_535, 0, 12];
        let col = Scheme::Nsf.encode(&values).unwrap();
        let mut v = to_bytes(&col);
        assert_eq!(v[24 + 8..24 + 12], [0; 4], "the reference word, 0");
        v.truncate(v.len() - CHECKSUM);
        v.drain(24 + 8..24 + 12);
        v[8] = 1;
        v[16] = 2;
        let sum = xxh3_64(&v);
        v.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(from_bytes(&v, "t").unwrap(), col);
        // Version 2 wants the word.
        v[8] = 2;
        v.truncate(v.len() - CHECKSUM);
        let sum = xxh3_64(&v);
        v.extend_from_slice(&sum.to_le_bytes());
        assert!(
            err(&v).contains("header of 2 words, expected 3"),
            "{}",
            err(&v)
        );
    }
}
