//! tessera's columnar files: a data directory holds one file per column
//! (`<table>/<column>.col`), the dictionaries (`dict/<name>.json`) and `meta.json`.
//!
//! A column file is a 32-byte header then the values, 4-byte little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `TESSCOL\0` |
//! | 8 | 4 | format version (1), u32 LE |
//! | 12 | 4 | element type: 1 = i32, 2 = u32, u32 LE |
//! | 16 | 8 | rows, u64 LE |
//! | 24 | 8 | checksum of the payload, u64 LE (see [`checksum`]) |
//!
//! Reading checks all of it and names the file and the problem when something is off.
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::data::{Meta, SsbData};
use super::dict::dicts;
use crate::{Error, Result};

/// First 8 bytes of every column file.
pub const MAGIC: [u8; 8] = *b"TESSCOL\0";
/// Current format version.
pub const VERSION: u32 = 1;
/// Header bytes.
pub const HEADER_LEN: usize = 32;
/// Element type code of `i32` columns (every SSB column).
pub const TYPE_I32: u32 = 1;
/// Element type code of `u32` columns.
pub const TYPE_U32: u32 = 2;
/// Bytes per checksum block.
const BLOCK: usize = 1 << 20;

/// The payload checksum: XXH3-64 of each 1 MiB block (hashed in parallel), then XXH3-64 of
/// the concatenated block hashes (little-endian).
pub fn checksum(payload: &[u8]) -> u64 {
    let blocks: Vec<u8> = payload
        .par_chunks(BLOCK)
        .map(xxhash_rust::xxh3::xxh3_64)
        .collect::<Vec<u64>>()
        .iter()
        .flat_map(|h| h.to_le_bytes())
        .collect();
    xxhash_rust::xxh3::xxh3_64(&blocks)
}

fn io_err(path: &Path, action: &'static str, e: std::io::Error) -> Error {
    Error::io(path, action)(e)
}

fn bad(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Data(format!("{}: {msg}", path.display()))
}

/// The values as little-endian bytes (borrowed on little-endian hosts).
fn le_bytes(col: &[i32]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(col))
    } else {
        std::borrow::Cow::Owned(col.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
}

/// Writes one column file.
pub fn write_column(path: &Path, col: &[i32]) -> Result<()> {
    let payload = le_bytes(col);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&TYPE_I32.to_le_bytes());
    header.extend_from_slice(&(col.len() as u64).to_le_bytes());
    header.extend_from_slice(&checksum(&payload).to_le_bytes());
    let file = File::create(path).map_err(|e| io_err(path, "cannot create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(&header)
        .and_then(|()| w.write_all(&payload))
        .and_then(|()| w.flush())
        .map_err(|e| io_err(path, "write failed", e))
}

/// Reads one column file, checking magic, version, element type, length and checksum.
pub fn read_column(path: &Path) -> Result<Vec<i32>> {
    let mut file = File::open(path).map_err(|e| io_err(path, "cannot open", e))?;
    let file_len = file
        .metadata()
        .map_err(|e| io_err(path, "cannot stat", e))?
        .len();
    let mut header = [0u8; HEADER_LEN];
    if file_len < HEADER_LEN as u64 {
        return Err(bad(
            path,
            format!("{file_len} bytes is shorter than the {HEADER_LEN}-byte header"),
        ));
    }
    file.read_exact(&mut header)
        .map_err(|e| io_err(path, "cannot read the header", e))?;
    let u32_at = |o: usize| u32::from_le_bytes(header[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(header[o..o + 8].try_into().expect("8 bytes"));
    if header[..8] != MAGIC {
        return Err(bad(path, "not a tessera column file (bad magic)"));
    }
    let version = u32_at(8);
    if version != VERSION {
        return Err(bad(
            path,
            format!("format version {version}, this build reads version {VERSION}"),
        ));
    }
    let ty = u32_at(12);
    if ty != TYPE_I32 {
        return Err(bad(
            path,
            format!("element type {ty}, expected {TYPE_I32} (i32)"),
        ));
    }
    let rows = u64_at(16);
    let expected = rows
        .checked_mul(4)
        .and_then(|b| b.checked_add(HEADER_LEN as u64));
    if expected != Some(file_len) {
        return Err(bad(
            path,
            format!(
                "header says {rows} rows ({} bytes with the header) but the file has {file_len} \
                 bytes (truncated or padded)",
                expected.map_or_else(|| "too many".into(), |b| b.to_string())
            ),
        ));
    }
    let rows = usize::try_from(rows).map_err(|_| bad(path, "too many rows for this host"))?;
    if rows > crate::MAX_COLUMN_LEN {
        return Err(bad(
            path,
            format!(
                "{rows} rows exceed the column limit of {}",
                crate::MAX_COLUMN_LEN
            ),
        ));
    }
    let mut col = vec![0i32; rows];
    file.read_exact(bytemuck::cast_slice_mut(&mut col))
        .map_err(|e| io_err(path, "cannot read the values", e))?;
    let stored = u64_at(24);
    let actual = checksum(bytemuck::cast_slice(&col));
    if stored != actual {
        return Err(bad(
            path,
            format!(
                "checksum mismatch (header {stored:016x}, data {actual:016x}): the file is corrupt"
            ),
        ));
    }
    if cfg!(target_endian = "big") {
        col.iter_mut().for_each(|v| *v = i32::from_le(*v));
    }
    Ok(col)
}

/// The file of `table.column` in a data directory.
pub fn column_path(dir: &Path, table: &str, column: &str) -> PathBuf {
    dir.join(table).join(format!("{column}.col"))
}

/// Whether `dir` holds a data set (its `meta.json`).
pub fn exists(dir: &Path) -> bool {
    dir.join("meta.json").is_file()
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| bad(path, e))?;
    std::fs::write(path, text + "\n").map_err(|e| io_err(path, "write failed", e))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| io_err(path, "cannot read", e))?;
    serde_json::from_str(&text).map_err(|e| bad(path, format!("malformed: {e}")))
}

/// Writes a data set into `dir` (created if needed): every column, the dictionaries and
/// `meta.json` (written last, so a directory with `meta.json` is complete).
pub fn write_dir(data: &SsbData, dir: &Path) -> Result<()> {
    data.validate()?;
    let meta_path = dir.join("meta.json");
    if meta_path.exists() {
        std::fs::remove_file(&meta_path).map_err(|e| io_err(&meta_path, "cannot replace", e))?;
    }
    for (table, _) in data.tables() {
        let t = dir.join(table);
        std::fs::create_dir_all(&t).map_err(|e| io_err(&t, "cannot create", e))?;
    }
    let dict_dir = dir.join("dict");
    std::fs::create_dir_all(&dict_dir).map_err(|e| io_err(&dict_dir, "cannot create", e))?;
    let jobs: Vec<(PathBuf, &[i32])> = data
        .tables()
        .into_iter()
        .flat_map(|(table, cols)| {
            cols.into_iter()
                .map(move |(name, col)| (column_path(dir, table, name), col))
        })
        .collect();
    jobs.par_iter()
        .try_for_each(|(path, col)| write_column(path, col))?;
    for d in dicts().all() {
        write_json(&dict_dir.join(format!("{}.json", d.name())), &d.values())?;
    }
    write_json(&meta_path, &data.meta)
}

/// Reads a data set written by [`write_dir`], checking every file, that the tables' columns
/// agree in length, and that the stored dictionaries are tessera's (so codes mean the same
/// strings).
pub fn read_dir(dir: &Path) -> Result<SsbData> {
    let meta_path = dir.join("meta.json");
    if !meta_path.is_file() {
        return Err(bad(
            &meta_path,
            "missing: not a tessera SSB data directory (generate one with `tessera ssb gen`)",
        ));
    }
    let meta: Meta = read_json(&meta_path)?;
    for d in dicts().all() {
        let path = dir.join("dict").join(format!("{}.json", d.name()));
        let stored: Vec<String> = read_json(&path)?;
        if stored != d.values() {
            return Err(bad(
                &path,
                "differs from tessera's built-in dictionary: its codes would mean other strings",
            ));
        }
    }
    let mut data = SsbData::empty(meta);
    let mut jobs: Vec<(PathBuf, &mut Vec<i32>)> = data
        .tables_mut()
        .into_iter()
        .flat_map(|(table, cols)| {
            cols.into_iter()
                .map(move |(name, col)| (column_path(dir, table, name), col))
        })
        .collect();
    jobs.par_iter_mut().try_for_each(|(path, col)| {
        **col = read_column(path)?;
        Ok::<_, Error>(())
    })?;
    data.validate()
        .map_err(|e| Error::Data(format!("{}: {e}", dir.display())))?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tessera-format-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn column_round_trip_and_corruption_is_named() {
        let dir = temp("col");
        let path = dir.join("x.col");
        let col: Vec<i32> = (0..3_000_000).map(|i| i * 7 - 5).collect();
        write_column(&path, &col).unwrap();
        assert_eq!(read_column(&path).unwrap(), col);
        write_column(&path, &[]).unwrap();
        assert_eq!(read_column(&path).unwrap(), Vec::<i32>::new());

        write_column(&path, &col).unwrap();
        let good = std::fs::read(&path).unwrap();
        let check = |bytes: &[u8], needle: &str| {
            std::fs::write(&path, bytes).unwrap();
            let e = read_column(&path).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("x.col"), "{e}");
        };
        let mut b = good.clone();
        b[HEADER_LEN + 5_000_000] ^= 1;
        check(&b, "checksum mismatch");
        check(&good[..good.len() - 4], "truncated");
        check(&good[..10], "shorter than the 32-byte header");
        let mut b = good.clone();
        b[0] = b'X';
        check(&b, "bad magic");
        let mut b = good.clone();
        b[8] = 9;
        check(&b, "format version 9");
        let mut b = good.clone();
        b[12] = 7;
        check(&b, "element type 7");
        let mut b = good.clone();
        b[16] ^= 1;
        check(&b, "header says");
        let e = read_column(&dir.join("missing.col"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing.col") && e.contains("cannot open"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn checksum_depends_on_every_block() {
        let a = vec![0u8; 3 * BLOCK + 17];
        let mut b = a.clone();
        b[3 * BLOCK + 16] = 1;
        assert_ne!(checksum(&a), checksum(&b));
        assert_ne!(checksum(&a[..BLOCK]), checksum(&a[..BLOCK + 1]));
    }
}
