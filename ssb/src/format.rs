//! tessera's columnar files: a data directory holds one file per column
//! (`<table>/<column>.col`), the dictionaries (`dict/<name>.json`) and `meta.json` (provenance,
//! the format version and every table's row count; written last).
//!
//! A column file is a 96-byte header then the values, 4-byte little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `TESSCOL\0` |
//! | 8 | 4 | format version (2), u32 LE |
//! | 12 | 4 | element type: 1 = i32, 2 = u32, u32 LE |
//! | 16 | 8 | rows, u64 LE |
//! | 24 | 8 | checksum of the payload, u64 LE (see [`checksum`]) |
//! | 32 | 32 | table name, UTF-8, NUL-padded |
//! | 64 | 32 | column name, UTF-8, NUL-padded |
//!
//! The names are those of the file's place in the directory (`<table>/<column>.col`), so a
//! column file renamed or copied over another is refused. Version 1 (a 32-byte header without
//! the names) is refused with the command that remakes the directory.
//!
//! Reading checks all of it, and that every table's columns have the row count `meta.json`
//! records, then [`SsbData::validate_complete`]; it names the file and the problem when
//! something is off. [`write_dir_with`] never leaves a half-written directory: it writes a
//! sibling directory and renames it into place.
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::data::{Customer, Date, Meta, Part, SsbData, Supplier};
use super::dict::dicts;
use super::generator::Cardinalities;
use tessera_host::{Error, Result};

/// First 8 bytes of every column file.
pub const MAGIC: [u8; 8] = *b"TESSCOL\0";
/// Current format version (of the column files and of `meta.json`).
pub const VERSION: u32 = 2;
/// Header bytes.
pub const HEADER_LEN: usize = 96;
/// Bytes of each of the two name fields of the header.
pub const NAME_LEN: usize = 32;
/// Element type code of `i32` columns (every SSB column).
pub const TYPE_I32: u32 = 1;
/// Element type code of `u32` columns.
pub const TYPE_U32: u32 = 2;
/// Bytes per checksum block.
const BLOCK: usize = 1 << 20;
/// How to remake a data directory.
const REMAKE: &str = "regenerate the data directory with `tessera ssb gen` or reload it with \
                      `tessera ssb load-tbl`";

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

/// The table and column a column file's place names: its directory's name and its file
/// name without the extension (`lineorder/lo_revenue.col`: `lineorder`, `lo_revenue`).
pub fn column_names(path: &Path) -> Result<(String, String)> {
    let name = |p: Option<&std::ffi::OsStr>| {
        p.and_then(|s| s.to_str())
            .filter(|s| !s.is_empty() && s.len() <= NAME_LEN && !s.contains('\0'))
            .map(str::to_string)
    };
    let table = name(path.parent().and_then(Path::file_name));
    let column = name(path.file_stem());
    table.zip(column).ok_or_else(|| {
        bad(
            path,
            format!(
                "a column file lies at <table>/<column>.col, each name UTF-8 of at most \
                 {NAME_LEN} bytes"
            ),
        )
    })
}

/// The header field of a name: its bytes, NUL-padded.
fn name_field(name: &str) -> [u8; NAME_LEN] {
    let mut f = [0u8; NAME_LEN];
    f[..name.len()].copy_from_slice(name.as_bytes());
    f
}

/// The name in a header field (up to the first NUL), or a printable form of the bytes.
fn field_name(f: &[u8]) -> String {
    let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    String::from_utf8_lossy(&f[..end]).into_owned()
}

/// Writes one column file; the header names the table and column of its place (see
/// [`column_names`]). The file is synced to disk.
pub fn write_column(path: &Path, col: &[i32]) -> Result<()> {
    let (table, column) = column_names(path)?;
    let payload = le_bytes(col);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&TYPE_I32.to_le_bytes());
    header.extend_from_slice(&(col.len() as u64).to_le_bytes());
    header.extend_from_slice(&checksum(&payload).to_le_bytes());
    header.extend_from_slice(&name_field(&table));
    header.extend_from_slice(&name_field(&column));
    debug_assert_eq!(header.len(), HEADER_LEN);
    let file = File::create(path).map_err(|e| io_err(path, "cannot create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(&header)
        .and_then(|()| w.write_all(&payload))
        .and_then(|()| w.flush())
        .map_err(|e| io_err(path, "write failed", e))?;
    let file = w
        .into_inner()
        .map_err(|e| io_err(path, "write failed", e.into_error()))?;
    file.sync_all().map_err(|e| io_err(path, "cannot sync", e))
}

/// Reads one column file, checking magic, version, that the header names the table and
/// column of the file's place, element type, length and checksum.
pub fn read_column(path: &Path) -> Result<Vec<i32>> {
    let (table, column) = column_names(path)?;
    let mut file = File::open(path).map_err(|e| io_err(path, "cannot open", e))?;
    let file_len = file
        .metadata()
        .map_err(|e| io_err(path, "cannot stat", e))?
        .len();
    let mut header = [0u8; HEADER_LEN];
    // Magic and version first: a version-1 file may be shorter than this version's header.
    if file_len < 12 {
        return Err(bad(
            path,
            format!("{file_len} bytes is shorter than the {HEADER_LEN}-byte header"),
        ));
    }
    file.read_exact(&mut header[..12])
        .map_err(|e| io_err(path, "cannot read the header", e))?;
    let u32_at = |h: &[u8], o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
    if header[..8] != MAGIC {
        return Err(bad(path, "not a tessera column file (bad magic)"));
    }
    let version = u32_at(&header, 8);
    if version < VERSION {
        return Err(bad(
            path,
            format!(
                "format version {version}, written by an older tessera (its header does not \
                 name the column, so swapped files would go unnoticed); this build reads \
                 version {VERSION}: {REMAKE}"
            ),
        ));
    }
    if version != VERSION {
        return Err(bad(
            path,
            format!("format version {version}, this build reads version {VERSION}"),
        ));
    }
    if file_len < HEADER_LEN as u64 {
        return Err(bad(
            path,
            format!("{file_len} bytes is shorter than the {HEADER_LEN}-byte header"),
        ));
    }
    file.read_exact(&mut header[12..])
        .map_err(|e| io_err(path, "cannot read the header", e))?;
    let u64_at = |o: usize| u64::from_le_bytes(header[o..o + 8].try_into().expect("8 bytes"));
    let (held_table, held_column) = (
        field_name(&header[32..32 + NAME_LEN]),
        field_name(&header[64..64 + NAME_LEN]),
    );
    if (held_table.as_str(), held_column.as_str()) != (table.as_str(), column.as_str()) {
        return Err(bad(
            path,
            format!(
                "holds column {held_table}.{held_column}, not {table}.{column} (a file renamed \
                 or copied over another?): {REMAKE}"
            ),
        ));
    }
    let ty = u32_at(&header, 12);
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
    if rows > tessera_host::MAX_COLUMN_LEN {
        return Err(bad(
            path,
            format!(
                "{rows} rows exceed the column limit of {}",
                tessera_host::MAX_COLUMN_LEN
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

/// `meta.json`: the data set's [`Meta`], the format version and the tables' row counts.
#[derive(serde::Serialize, serde::Deserialize)]
struct MetaFile {
    /// Absent (0) in version-1 directories.
    #[serde(default)]
    format_version: u32,
    #[serde(flatten)]
    meta: Meta,
    /// Rows per table.
    #[serde(default)]
    rows: BTreeMap<String, u64>,
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| bad(path, e))?;
    let mut file = File::create(path).map_err(|e| io_err(path, "cannot create", e))?;
    file.write_all((text + "\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| io_err(path, "write failed", e))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| io_err(path, "cannot read", e))?;
    serde_json::from_str(&text).map_err(|e| Error::Parse {
        at: path.display().to_string(),
        what: "malformed JSON".into(),
        source: Box::new(e),
    })
}

/// What [`write_dir_with`] does when the output directory already holds something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Refuse (an empty directory is not refused).
    Refuse,
    /// Replace a data set that is there (a directory with `meta.json`, e.g. one written
    /// before); other non-empty directories are still refused, so that a mistyped path never
    /// deletes unrelated files.
    Replace,
}

/// Writes a data set to `out`, as [`write_dir_with`] with [`Existing::Replace`] (the old
/// behaviour of overwriting, now never leaving a half-written directory). Callers move to
/// [`write_dir_with`].
pub fn write_dir(data: &SsbData, out: &Path) -> Result<()> {
    write_dir_with(data, out, Existing::Replace)
}

/// Writes a data set to the directory `out`: every column, the dictionaries and `meta.json`,
/// after [`SsbData::validate_complete`].
///
/// When `out` exists and is not empty: [`Existing::Refuse`] refuses, [`Existing::Replace`]
/// replaces it when it holds a data set (else refuses). The data set is written to the
/// sibling directory `<out>.tmp-<pid>`, each file synced, then renamed to `out` (swapped with
/// the old one in one atomic rename on Linux, else the old one is moved aside to
/// `<out>.old-<pid>` first), and only then is the old one removed: an interrupted or failed
/// write leaves `out` as it was (and removes the temporary directory, unless killed).
pub fn write_dir_with(data: &SsbData, out: &Path, existing: Existing) -> Result<()> {
    write_dir_using(data, out, existing, &write_column)
}

type ColumnWriter<'a> = dyn Fn(&Path, &[i32]) -> Result<()> + Sync + 'a;

/// [`write_dir_with`] with the column writer as a parameter (tests make it fail).
fn write_dir_using(
    data: &SsbData,
    out: &Path,
    existing: Existing,
    write: &ColumnWriter<'_>,
) -> Result<()> {
    data.validate_complete()?;
    let (out, occupied) = check_out_dir(out, existing)?;
    let out = &out;
    let tmp = sibling(out, "tmp")?;
    if let Some(parent) = tmp.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_err(parent, "cannot create", e))?;
    }
    if tmp.exists() {
        // Left by a killed write of a process with our id: ours to remove.
        std::fs::remove_dir_all(&tmp).map_err(|e| io_err(&tmp, "cannot remove", e))?;
    }
    if let Err(e) = write_tree(data, &tmp, write) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    commit(&tmp, out, occupied, exchange)
}

/// Whether [`write_dir_with`] may write a data set to `out` under `existing`: an error saying
/// why not, before any work (a generator or loader calls it first). Returns the resolved
/// directory (a link to a directory resolves to the directory it names, replaced beside it)
/// and whether it holds anything now.
pub fn check_out_dir(out: &Path, existing: Existing) -> Result<(PathBuf, bool)> {
    let abs = std::path::absolute(out).map_err(|e| io_err(out, "cannot resolve", e))?;
    let out = abs.canonicalize().unwrap_or(abs);
    let occupied = occupied(&out)?;
    if occupied {
        let what = if exists(&out) {
            "a data set"
        } else {
            "files but no data set (no meta.json)"
        };
        if existing == Existing::Refuse {
            return Err(bad(
                &out,
                format!(
                    "already holds {what}: refusing to overwrite it; pass --force to replace \
                     it, or choose another directory"
                ),
            ));
        }
        if !exists(&out) {
            return Err(bad(
                &out,
                format!(
                    "holds {what}: refusing to replace it even with --force, as it is not a \
                     tessera data directory; remove it yourself or choose another directory"
                ),
            ));
        }
    }
    Ok((out, occupied))
}

/// Whether `out` exists and holds anything (a file there is an error).
fn occupied(out: &Path) -> Result<bool> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) if out.exists() && !out.is_dir() => Err(bad(out, "exists and is not a directory")),
        Err(e) => Err(io_err(out, "cannot list", e)),
    }
}

/// `<out>.<what>-<pid>`, beside `out` (an absolute path).
fn sibling(out: &Path, what: &str) -> Result<PathBuf> {
    let mut name = out
        .file_name()
        .ok_or_else(|| bad(out, "cannot write a data set here: name a directory"))?
        .to_os_string();
    name.push(format!(".{what}-{}", std::process::id()));
    Ok(out.with_file_name(name))
}

/// Writes the data set's files into the new directory `dir`, `meta.json` last.
fn write_tree(data: &SsbData, dir: &Path, write: &ColumnWriter<'_>) -> Result<()> {
    std::fs::create_dir(dir).map_err(|e| io_err(dir, "cannot create", e))?;
    for (table, _) in data.tables() {
        let t = dir.join(table);
        std::fs::create_dir(&t).map_err(|e| io_err(&t, "cannot create", e))?;
    }
    let dict_dir = dir.join("dict");
    std::fs::create_dir(&dict_dir).map_err(|e| io_err(&dict_dir, "cannot create", e))?;
    let jobs: Vec<(PathBuf, &[i32])> = data
        .tables()
        .into_iter()
        .flat_map(|(table, cols)| {
            cols.into_iter()
                .map(move |(name, col)| (column_path(dir, table, name), col))
        })
        .collect();
    jobs.par_iter()
        .try_for_each(|(path, col)| write(path, col))?;
    for d in dicts().all() {
        write_json(&dict_dir.join(format!("{}.json", d.name())), &d.values())?;
    }
    let meta = MetaFile {
        format_version: VERSION,
        meta: data.meta.clone(),
        rows: data
            .tables()
            .iter()
            .map(|(t, cols)| (t.to_string(), cols[0].1.len() as u64))
            .collect(),
    };
    write_json(&dir.join("meta.json"), &meta)?;
    sync_dir(dir)
}

/// Syncs a directory's entries to disk (where the platform can).
fn sync_dir(dir: &Path) -> Result<()> {
    if cfg!(unix) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err(dir, "cannot sync", e))?;
    }
    Ok(())
}

/// Moves the complete directory `tmp` to `out`; an `occupied` `out` is replaced (with
/// `exchange` when it can) and removed.
fn commit(
    tmp: &Path,
    out: &Path,
    occupied: bool,
    exchange: fn(&Path, &Path) -> bool,
) -> Result<()> {
    let fail = |e: Error| {
        let _ = std::fs::remove_dir_all(tmp);
        e
    };
    if !occupied {
        // Onto nothing or an empty directory: one rename.
        std::fs::rename(tmp, out)
            .map_err(|e| fail(io_err(out, "cannot move the new data set into place", e)))?;
    } else if exchange(tmp, out) {
        // `tmp` now holds the old data set.
        std::fs::remove_dir_all(tmp)
            .map_err(|e| io_err(tmp, "cannot remove the replaced data set", e))?;
    } else {
        let old = sibling(out, "old")?;
        std::fs::rename(out, &old)
            .map_err(|e| fail(io_err(out, "cannot move the old data set aside", e)))?;
        if let Err(e) = std::fs::rename(tmp, out) {
            let _ = std::fs::rename(&old, out);
            return Err(fail(io_err(
                out,
                "cannot move the new data set into place",
                e,
            )));
        }
        std::fs::remove_dir_all(&old)
            .map_err(|e| io_err(&old, "cannot remove the replaced data set", e))?;
    }
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => sync_dir(p),
        _ => Ok(()),
    }
}

/// Swaps two directories in one atomic rename (Linux `renameat2(RENAME_EXCHANGE)`); false
/// when the platform or file system cannot.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (Ok(a), Ok(b)) = (
        std::ffi::CString::new(a.as_os_str().as_bytes()),
        std::ffi::CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: both are NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> bool {
    false
}

/// Reads a data set written by [`write_dir_with`], checking every file, that the columns
/// have the row counts `meta.json` records, that the stored dictionaries are tessera's (so
/// codes mean the same strings), and [`SsbData::validate_complete`].
pub fn read_dir(dir: &Path) -> Result<SsbData> {
    let meta_path = dir.join("meta.json");
    if !meta_path.is_file() {
        return Err(bad(
            &meta_path,
            "missing: not a tessera SSB data directory (generate one with `tessera ssb gen`)",
        ));
    }
    let file: MetaFile = read_json(&meta_path)?;
    match file.format_version {
        VERSION => {}
        v if v < VERSION => {
            return Err(bad(
                dir,
                format!(
                    "a data directory of format version {}, written by an older tessera; this \
                     build reads version {VERSION}: {REMAKE}",
                    v.max(1)
                ),
            ));
        }
        v => {
            return Err(bad(
                &meta_path,
                format!("format version {v}, this build reads version {VERSION}"),
            ));
        }
    }
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
    let mut data = SsbData::empty(file.meta);
    let mut expected = Vec::new();
    for (table, _) in data.tables() {
        let rows = file.rows.get(table).copied().ok_or_else(|| {
            bad(
                &meta_path,
                format!("records no row count for table {table}: {REMAKE}"),
            )
        })?;
        expected.push(rows);
    }
    let mut jobs: Vec<(PathBuf, &mut Vec<i32>)> = data
        .tables_mut()
        .into_iter()
        .flat_map(|(table, cols)| {
            cols.into_iter()
                .map(move |(name, col)| (column_path(dir, table, name), col))
        })
        .collect();
    // Every column is read; the error reported is the first in column order, whatever the
    // thread count.
    let read: Vec<Result<()>> = jobs
        .par_iter_mut()
        .map(|(path, col)| {
            **col = read_column(path)?;
            Ok(())
        })
        .collect();
    read.into_iter().collect::<Result<()>>()?;
    let sf = data
        .meta
        .scale_factor
        .map_or_else(String::new, |s| format!(" (SF {s})"));
    for ((table, cols), rows) in data.tables().into_iter().zip(expected) {
        if let Some((name, col)) = cols.iter().find(|(_, c)| c.len() as u64 != rows) {
            return Err(bad(
                dir,
                format!(
                    "table {table}: column {name} has {} rows, meta.json records {rows} for \
                     {table}{sf}: the directory mixes files of different data sets (another \
                     scale factor?) or a file was replaced; {REMAKE}",
                    col.len()
                ),
            ));
        }
    }
    data.validate_complete()
        .map_err(|e| Error::Data(format!("{}: {e}", dir.display())))?;
    if let Some(card) = data
        .meta
        .scale_factor
        .and_then(|s| Cardinalities::at(s).ok())
    {
        let dims = [
            (Part::NAME, data.part.len(), card.parts),
            (Supplier::NAME, data.supplier.len(), card.suppliers),
            (Customer::NAME, data.customer.len(), card.customers),
            (Date::NAME, data.date.len(), card.dates),
        ];
        if let Some((table, rows, want)) = dims.into_iter().find(|d| d.1 != d.2) {
            return Err(bad(
                dir,
                format!(
                    "table {table} has {rows} rows, but SF {} has {want} (meta.json): the \
                     directory mixes data sets of different scale factors; {REMAKE}",
                    data.meta.scale_factor.unwrap_or_default()
                ),
            ));
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GenConfig, generate};

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tessera-format-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// SF 0.001 (about 6,000 lineorder rows), generated once.
    fn small() -> &'static SsbData {
        static DATA: std::sync::OnceLock<SsbData> = std::sync::OnceLock::new();
        DATA.get_or_init(|| generate(&GenConfig::new(0.001)).unwrap())
    }

    fn has(e: &str, needles: &[&str]) {
        for n in needles {
            assert!(e.contains(n), "{n:?} missing from: {e}");
        }
    }

    /// The names of `dir`'s entries.
    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn column_round_trip_and_corruption_is_named() {
        let dir = temp("col");
        std::fs::create_dir_all(dir.join("t")).unwrap();
        let path = dir.join("t").join("x.col");
        let col: Vec<i32> = (0..3_000_000).map(|i| i * 7 - 5).collect();
        write_column(&path, &col).unwrap();
        assert_eq!(read_column(&path).unwrap(), col);
        write_column(&path, &[]).unwrap();
        assert_eq!(read_column(&path).unwrap(), Vec::<i32>::new());

        write_column(&path, &col).unwrap();
        let good = std::fs::read(&path).unwrap();
        assert_eq!(&good[32..34], b"t\0");
        assert_eq!(&good[64..67], b"x\0\0");
        let check = |bytes: &[u8], needle: &str| {
            std::fs::write(&path, bytes).unwrap();
            let e = read_column(&path).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("x.col"), "{e}");
        };
        let mut b = good.clone();
        b[HEADER_LEN + 5_000_000] ^= 1;
        check(&b, "checksum mismatch");
        check(&good[..good.len() - 4], "truncated");
        check(&good[..10], "shorter than the 96-byte header");
        check(&good[..40], "shorter than the 96-byte header");
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
        let e = read_column(&dir.join("t").join("missing.col"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing.col") && e.contains("cannot open"),
            "{e}"
        );
        let long = dir
            .join("t")
            .join(format!("{}.col", "c".repeat(NAME_LEN + 1)));
        has(
            &write_column(&long, &col).unwrap_err().to_string(),
            &["at most 32 bytes"],
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_renamed_column_file_is_refused_naming_both_columns() {
        let dir = temp("swap");
        std::fs::create_dir_all(dir.join("lineorder")).unwrap();
        let (revenue, discount) = (
            column_path(&dir, "lineorder", "lo_revenue"),
            column_path(&dir, "lineorder", "lo_discount"),
        );
        write_column(&revenue, &[1, 2, 3]).unwrap();
        std::fs::rename(&revenue, &discount).unwrap();
        has(
            &read_column(&discount).unwrap_err().to_string(),
            &[
                "lo_discount.col",
                "holds column lineorder.lo_revenue, not lineorder.lo_discount",
                "tessera ssb gen",
            ],
        );
        // The same column of another table.
        std::fs::create_dir_all(dir.join("part")).unwrap();
        let p = column_path(&dir, "part", "lo_discount");
        std::fs::rename(&discount, &p).unwrap();
        has(
            &read_column(&p).unwrap_err().to_string(),
            &["holds column lineorder.lo_revenue, not part.lo_discount"],
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn version_1_files_and_directories_are_refused_with_the_fix() {
        let dir = temp("v1");
        let data = small();
        write_dir_with(data, &dir, Existing::Refuse).unwrap();
        // A version-1 column file: the 32-byte header, without names.
        let path = column_path(&dir, "part", "p_size");
        let col = &data.part.p_size;
        let mut v1 = Vec::new();
        v1.extend_from_slice(&MAGIC);
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&TYPE_I32.to_le_bytes());
        v1.extend_from_slice(&(col.len() as u64).to_le_bytes());
        v1.extend_from_slice(&checksum(bytemuck::cast_slice(col)).to_le_bytes());
        v1.extend_from_slice(bytemuck::cast_slice(col));
        std::fs::write(&path, &v1).unwrap();
        has(
            &read_dir(&dir).unwrap_err().to_string(),
            &[
                "p_size.col",
                "format version 1, written by an older tessera",
                "tessera ssb gen",
                "tessera ssb load-tbl",
            ],
        );
        std::fs::write(&path, &v1[..32]).unwrap();
        has(
            &read_column(&path).unwrap_err().to_string(),
            &["format version 1"],
        );
        // A version-1 meta.json: no format version, no row counts.
        let meta = dir.join("meta.json");
        std::fs::write(
            &meta,
            r#"{"scale_factor": 0.001, "seed": 1, "source": "generated"}"#,
        )
        .unwrap();
        has(
            &read_dir(&dir).unwrap_err().to_string(),
            &[
                "format version 1, written by an older tessera",
                "tessera ssb gen",
            ],
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn row_counts_must_match_meta_json() {
        let dir = temp("rows");
        let data = small();
        write_dir_with(data, &dir, Existing::Refuse).unwrap();
        let text = std::fs::read_to_string(dir.join("meta.json")).unwrap();
        assert!(text.contains(r#""format_version": 2"#), "{text}");
        assert!(text.contains(r#""supplier": 2"#), "{text}");
        assert_eq!(&read_dir(&dir).unwrap(), data);

        // One column cut short.
        let p = column_path(&dir, "part", "p_size");
        write_column(&p, &[1, 2, 3]).unwrap();
        has(
            &read_dir(&dir).unwrap_err().to_string(),
            &["table part: column p_size has 3 rows, meta.json records 200 for part (SF 0.001)"],
        );
        write_column(&p, &data.part.p_size).unwrap();
        read_dir(&dir).unwrap();

        // A whole table of another scale factor copied in.
        let other = temp("rows-other");
        let sf2 = generate(&GenConfig::new(0.002)).unwrap();
        write_dir_with(&sf2, &other, Existing::Replace).unwrap();
        std::fs::remove_dir_all(dir.join("supplier")).unwrap();
        std::fs::rename(other.join("supplier"), dir.join("supplier")).unwrap();
        has(
            &read_dir(&dir).unwrap_err().to_string(),
            &[
                "column s_suppkey has 4 rows, meta.json records 2 for supplier",
                "another scale factor",
            ],
        );
        // ... with meta.json edited to match: the foreign keys name it.
        let text = std::fs::read_to_string(dir.join("meta.json")).unwrap();
        std::fs::write(
            dir.join("meta.json"),
            text.replace(r#""supplier": 2"#, r#""supplier": 4"#),
        )
        .unwrap();
        has(
            &read_dir(&dir).unwrap_err().to_string(),
            &[
                "table supplier has 4 rows, but SF 0.001 has 2 (meta.json)",
                "scale factor",
            ],
        );
        // ... and its lineorder too, with meta.json's scale factor: the foreign keys of the
        // other dimensions name it.
        std::fs::remove_dir_all(dir.join("lineorder")).unwrap();
        std::fs::rename(other.join("lineorder"), dir.join("lineorder")).unwrap();
        let text = std::fs::read_to_string(dir.join("meta.json")).unwrap();
        let lo = sf2.lineorder.len();
        let text = text
            .replace(
                &format!(r#""lineorder": {}"#, data.lineorder.len()),
                &format!(r#""lineorder": {lo}"#),
            )
            .replace(r#""scale_factor": 0.001"#, r#""scale_factor": 0.002"#);
        std::fs::write(dir.join("meta.json"), text).unwrap();
        has(
            &read_dir(&dir).unwrap_err().to_string(),
            &[
                "lo_custkey",
                "no customer row (c_custkey is 1..=30)",
                "another scale factor",
            ],
        );
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::remove_dir_all(other).unwrap();
    }

    #[test]
    fn empty_tables_are_refused_when_written_and_read() {
        let dir = temp("empty");
        let mut data = small().clone();
        data.customer = Default::default();
        has(
            &write_dir_with(&data, &dir.join("out"), Existing::Refuse)
                .unwrap_err()
                .to_string(),
            &["table customer has no rows"],
        );
        assert!(!dir.join("out").exists());
        // A directory of 0-row customer columns (and meta.json recording 0 rows).
        let out = dir.join("written");
        write_tree(&data, &out, &write_column).unwrap();
        has(
            &read_dir(&out).unwrap_err().to_string(),
            &["table customer has no rows"],
        );
        let mut data = small().clone();
        for (_, col) in data.lineorder.columns_mut() {
            col.clear();
        }
        std::fs::remove_dir_all(&out).unwrap();
        write_tree(&data, &out, &write_column).unwrap();
        has(
            &read_dir(&out).unwrap_err().to_string(),
            &["table lineorder has no rows"],
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn writing_refuses_or_replaces_and_never_leaves_half_a_directory() {
        let dir = temp("write");
        let (a, b) = (small(), generate(&GenConfig::new(0.002)).unwrap());
        let out = dir.join("data");
        // Nothing there, or an empty directory: written.
        write_dir_with(a, &out, Existing::Refuse).unwrap();
        assert_eq!(&read_dir(&out).unwrap(), a);
        let empty = dir.join("empty");
        std::fs::create_dir(&empty).unwrap();
        write_dir_with(a, &empty, Existing::Refuse).unwrap();
        assert!(exists(&empty));

        // A data set there: refused, or replaced.
        has(
            &write_dir_with(&b, &out, Existing::Refuse)
                .unwrap_err()
                .to_string(),
            &["data", "already holds a data set", "--force"],
        );
        assert_eq!(&read_dir(&out).unwrap(), a);
        write_dir_with(&b, &out, Existing::Replace).unwrap();
        assert_eq!(read_dir(&out).unwrap(), b);

        // A failed write leaves the old data set and no temporary directory.
        let n = std::sync::atomic::AtomicUsize::new(0);
        let failing = |p: &Path, c: &[i32]| {
            if n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 20 {
                return Err(Error::Data("disk full (test)".into()));
            }
            write_column(p, c)
        };
        has(
            &write_dir_using(a, &out, Existing::Replace, &failing)
                .unwrap_err()
                .to_string(),
            &["disk full (test)"],
        );
        assert!(n.load(std::sync::atomic::Ordering::SeqCst) > 20);
        assert_eq!(read_dir(&out).unwrap(), b);
        assert_eq!(entries(&dir), ["data", "empty"]);

        // Other files: refused even with Replace; a file is no directory.
        let other = dir.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        for existing in [Existing::Refuse, Existing::Replace] {
            has(
                &write_dir_with(a, &other, existing).unwrap_err().to_string(),
                &["other", "files but no data set"],
            );
        }
        assert_eq!(entries(&other), ["notes.txt"]);
        has(
            &write_dir_with(a, &other.join("notes.txt"), Existing::Replace)
                .unwrap_err()
                .to_string(),
            &["notes.txt", "not a directory"],
        );
        // The fallback of two renames, where the exchange is not available.
        let tmp = sibling(&out, "tmp").unwrap();
        write_tree(a, &tmp, &write_column).unwrap();
        commit(&tmp, &out, true, |_, _| false).unwrap();
        assert_eq!(&read_dir(&out).unwrap(), a);
        assert_eq!(entries(&dir), ["data", "empty", "other"]);
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
