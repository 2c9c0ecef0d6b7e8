//! The storage table of thesis §5.6.4: each column's footprint uncompressed ("None"), in NSF,
//! GPU-FOR and GPU-DFOR, and the smallest of them, the scheme a compressed engine stores the
//! column in; per column and in total. A column is encoded as its 4-byte bit patterns (the
//! encoders take `u32`; FOR and DFOR pick signed references where those are smaller).
use serde::Serialize;
use tessera_host::Result;
use tessera_host::compress::Scheme;

use super::SsbData;

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
        let mut out = format!("{:<11} {:<18} {:>11}", "table", "column", "rows");
        for s in &self.schemes {
            out += &format!(" {:>10}", format!("{s} MB"));
        }
        out += &format!(" {:>10}  chosen\n", "chosen MB");
        for c in &self.columns {
            out += &format!("{:<11} {:<18} {:>11}", c.table, c.column, c.rows);
            for &b in &c.bytes {
                out += &format!(" {:>10}", mb(b));
            }
            out += &format!(" {:>10}  {}\n", mb(c.chosen_bytes), c.chosen);
        }
        let (totals, chosen) = self.totals();
        out += &format!("{:<11} {:<18} {:>11}", "total", "", "");
        for &b in &totals {
            out += &format!(" {:>10}", mb(b));
        }
        out += &format!(" {:>10}\n", mb(chosen));
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

    fn count_values(data: &SsbData) -> usize {
        data.tables()
            .iter()
            .flat_map(|(_, c)| c.iter().map(|(_, v)| v.len()))
            .sum()
    }
}
