//! The storage table of thesis §5.6.4: each column's footprint uncompressed ("None"), in NSF,
//! GPU-FOR and GPU-DFOR, and the smallest of them, the scheme a compressed engine stores the
//! column in; per column and in total. NSF is taken over the column's minimum where that saves
//! bytes ([`tessera_host::compress::NsfColumn::encode_framed`]: lo_orderdate and
//! lo_commitdate in 2 bytes, where the thesis' NSF takes 4). A column is encoded as its 4-byte
//! bit patterns (the encoders take `u32`; FOR and DFOR pick signed references where those are
//! smaller).
//!
//! A data directory may also hold lineorder's query columns compressed for the GPU engine
//! ([`write_compressed`], `tessera ssb gen --compressed`): `compressed/lineorder/<column>.tcol`,
//! each in the on-disk form of [`tessera_host::compress::file`] and in the smallest of
//! [`PACKED_SCHEMES`]; `tessera ssb run --compressed` reads them ([`read_compressed`]) instead of
//! encoding the columns again.
use std::path::{Path, PathBuf};

use serde::Serialize;
use tessera_host::compress::{Encoded, Scheme, read_column, write_column};
use tessera_host::{Error, Result};

use super::SsbData;
use super::gpu::{FactCol, PACKED_SCHEMES, encode_fact};

/// The schemes of the thesis' storage table, in the order tried (the first wins a tie).
pub const STORAGE_SCHEMES: [Scheme; 4] = [Scheme::Plain, Scheme::Nsf, Scheme::For, Scheme::Dfor];

/// One column's footprints.
#[derive(Clone, Debug, Serialize)]
pub struct ColumnStorage {
    /// Table name.
    pub table: &'static str,
    /// Column name.
    pub column: &'static str,
    /// Values.
    pub rows: usize,
    /// Bytes in each of [`STORAGE_SCHEMES`], in that order.
    pub bytes: Vec<usize>,
    /// The smallest scheme's name.
    pub chosen: &'static str,
    /// Its bytes.
    pub chosen_bytes: usize,
}

/// The storage table of a data set.
#[derive(Clone, Debug, Serialize)]
pub struct Storage {
    /// Names of [`STORAGE_SCHEMES`], the columns of `bytes`.
    pub schemes: Vec<&'static str>,
    /// Every column of every table, in the data set's order.
    pub columns: Vec<ColumnStorage>,
}

impl Storage {
    /// Bytes of all columns in each scheme, and with each column in its chosen one.
    pub fn totals(&self) -> (Vec<usize>, usize) {
        let mut t = vec![0; self.schemes.len()];
        for c in &self.columns {
            for (t, b) in t.iter_mut().zip(&c.bytes) {
                *t += b;
            }
        }
        (t, self.columns.iter().map(|c| c.chosen_bytes).sum())
    }

    /// The table as text: one line per column, then the totals and the chosen footprint as a
    /// fraction of the uncompressed one.
    pub fn render(&self) -> String {
        let mb = |b: usize| format!("{:.2}", b as f64 / 1e6);
        let mut header = vec![
            "table".to_string(),
            "column".into(),
            "chosen".into(),
            "rows".into(),
        ];
        header.extend(self.schemes.iter().map(|s| format!("{s} MB")));
        header.push("chosen MB".into());
        let rows = self.columns.iter().map(|c| {
            let mut row = vec![
                c.table.to_string(),
                c.column.to_string(),
                c.chosen.to_string(),
            ];
            row.push(c.rows.to_string());
            row.extend(c.bytes.iter().map(|&b| mb(b)));
            row.push(mb(c.chosen_bytes));
            row
        });
        let (totals, chosen) = self.totals();
        let mut total = vec![
            "total".to_string(),
            String::new(),
            String::new(),
            String::new(),
        ];
        total.extend(totals.iter().map(|&b| mb(b)));
        total.push(mb(chosen));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let table = tessera_bench::markdown_table(&header, rows.chain([total]), 3);
        let mut out = format!("{table}\n");
        let plain = totals[0].max(1) as f64;
        out += &format!(
            "chosen / uncompressed: {:.3} ({}: {:.3})\n",
            chosen as f64 / plain,
            self.schemes[2],
            totals[2] as f64 / plain
        );
        out
    }
}

/// Encodes every column of `data` in every scheme of [`STORAGE_SCHEMES`] (the encoders run
/// on all cores) and keeps the footprints.
pub fn storage(data: &SsbData) -> Result<Storage> {
    let mut columns = Vec::new();
    for (table, cols) in data.tables() {
        for (column, values) in cols {
            let smallest = Scheme::smallest_of(bytemuck::cast_slice(values), &STORAGE_SCHEMES)?;
            columns.push(ColumnStorage {
                table,
                column,
                rows: values.len(),
                bytes: smallest.sizes.iter().map(|&(_, b)| b).collect(),
                chosen: smallest.encoded.scheme().name(),
                chosen_bytes: smallest.encoded.compressed_bytes(),
            });
        }
    }
    Ok(Storage {
        schemes: STORAGE_SCHEMES.map(Scheme::name).to_vec(),
        columns,
    })
}

/// The directory of the compressed query columns in data directory `dir`.
pub fn compressed_dir(dir: &Path) -> PathBuf {
    dir.join("compressed").join("lineorder")
}

/// Encodes lineorder's query columns of `data` (the data set in `dir`) in the smallest of
/// [`PACKED_SCHEMES`] and writes them to [`compressed_dir`]`(dir)`, replacing what is there.
/// Returns the columns' compressed bytes.
pub fn write_compressed(data: &SsbData, dir: &Path) -> Result<usize> {
    let encoded = encode_fact(data, &PACKED_SCHEMES)?;
    let out = compressed_dir(dir);
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(Error::io(&out, "cannot remove"))?;
    }
    std::fs::create_dir_all(&out).map_err(Error::io(&out, "cannot create"))?;
    for (c, e) in FactCol::ALL.iter().zip(&encoded) {
        write_column(out.join(format!("{}.tcol", c.name())), e)?;
    }
    Ok(encoded.iter().map(Encoded::compressed_bytes).sum())
}

/// The compressed query columns of the data directory `dir` (whose data set is `data`), in
/// [`FactCol::ALL`] order, or `None` when it has none. Each file is validated completely and
/// decoded on the CPU against `data`'s column: a corrupt file, a scheme the probes do not
/// read, or columns that are not `data`'s (written before the data set was replaced) are an
/// `Err` naming the file and the fix.
pub fn read_compressed(dir: &Path, data: &SsbData) -> Result<Option<Vec<Encoded>>> {
    let at = compressed_dir(dir);
    if !at.is_dir() {
        return Ok(None);
    }
    let fix = format!(
        "remove {} or write it again with `tessera ssb gen --compressed`",
        at.display()
    );
    FactCol::ALL
        .iter()
        .map(|c| {
            let path = at.join(format!("{}.tcol", c.name()));
            let e = read_column(&path)?;
            if !PACKED_SCHEMES.contains(&e.scheme()) {
                return Err(Error::invalid(format!(
                    "{}: {}, which the GPU probes do not read; {fix}",
                    path.display(),
                    e.scheme().name()
                )));
            }
            let values = tessera_host::cpu::decompress(&e)?;
            if values.as_slice() != bytemuck::cast_slice::<i32, u32>(c.of(data)) {
                return Err(Error::invalid(format!(
                    "{}: not the values of {} in this data set; {fix}",
                    path.display(),
                    c.name()
                )));
            }
            Ok(e)
        })
        .collect::<Result<_>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GenConfig, generate};

    #[test]
    fn every_column_is_in_its_smallest_scheme() {
        let data = generate(&GenConfig::new(0.01)).unwrap();
        let s = storage(&data).unwrap();
        let count: usize = data.tables().iter().map(|(_, c)| c.len()).sum();
        assert_eq!(s.columns.len(), count);
        for c in &s.columns {
            assert_eq!(c.bytes.len(), STORAGE_SCHEMES.len());
            assert_eq!(c.bytes[0], 4 * c.rows, "{}", c.column);
            assert_eq!(
                c.chosen_bytes,
                *c.bytes.iter().min().unwrap(),
                "{}",
                c.column
            );
            let i = s.schemes.iter().position(|&n| n == c.chosen).unwrap();
            assert_eq!(c.bytes[i], c.chosen_bytes, "{}", c.column);
        }
        let (totals, chosen) = s.totals();
        assert_eq!(totals[0], 4 * count_values(&data));
        assert!(chosen < totals[0] / 2, "{chosen} of {}", totals[0]);
        let text = s.render();
        assert!(text.contains("lo_orderdate") && text.contains("chosen / uncompressed"));
    }

    #[test]
    fn compressed_columns_round_trip_and_stale_ones_are_refused() {
        let data = generate(&GenConfig::new(0.01)).unwrap();
        let dir = std::env::temp_dir().join(format!("tessera-packed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(read_compressed(&dir, &data).unwrap().is_none());
        let bytes = write_compressed(&data, &dir).unwrap();
        let cols = read_compressed(&dir, &data).unwrap().unwrap();
        assert_eq!(cols.len(), FactCol::ALL.len());
        assert_eq!(
            bytes,
            cols.iter().map(Encoded::compressed_bytes).sum::<usize>()
        );
        assert!(bytes < 9 * 4 * data.lineorder.len() / 2, "{bytes}");
        // Another data set's columns are refused, naming the file.
        let other = generate(&GenConfig {
            seed: 7,
            ..GenConfig::new(0.01)
        })
        .unwrap();
        let err = read_compressed(&dir, &other).unwrap_err().to_string();
        assert!(
            err.contains("lo_orderdate.tcol") && err.contains("not the values"),
            "{err}"
        );
        // A truncated file is refused.
        let f = compressed_dir(&dir).join("lo_revenue.tcol");
        let b = std::fs::read(&f).unwrap();
        std::fs::write(&f, &b[..b.len() / 2]).unwrap();
        let err = read_compressed(&dir, &data).unwrap_err().to_string();
        assert!(err.contains("lo_revenue.tcol"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn count_values(data: &SsbData) -> usize {
        data.tables()
            .iter()
            .flat_map(|(_, c)| c.iter().map(|(_, v)| v.len()))
            .sum()
    }
}
