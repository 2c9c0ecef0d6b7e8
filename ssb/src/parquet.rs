//! The SSB tables as Parquet files: a loader that reads them in parallel row groups (as
//! DuckDB's `COPY ... TO ... (FORMAT parquet)` writes them, or as other SSB toolkits ship
//! them) and a writer of the same form.
//!
//! One file per table, `lineorder.parquet`, `part.parquet`, `supplier.parquet`,
//! `customer.parquet`, `date.parquet`, holding at least the columns the data set stores,
//! named as the specification names them (case is ignored; other columns, such as the
//! free-text names and addresses, are not read). Integer columns may be any integer type
//! whose values fit `i32`; dates `yyyymmdd` integers or Parquet `DATE`; string columns
//! (plain or dictionary-encoded) are mapped to the data set's fixed dictionaries, dbgen's
//! spellings accepted as the `.tbl` loader accepts them. A missing file or column, another
//! type, a null, a value outside its domain: an error naming the file, the column and what
//! it found. The writer writes the stored columns: integers and dates as `INT32`, strings as
//! dictionary-encoded `UTF8`, Snappy-compressed. A query's result can be written as a Parquet
//! file too ([`write_result`]).
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int8Type, Int16Type, Int32Type, Int64Type};
use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use super::calendar::{civil_from_days, datekey};
use super::data::{Meta, SsbData};
use super::generator::progress_bar;
use super::query::QueryResult;
use super::tbl::{Kind, fields};
use tessera_host::{Error, Result};

/// Rows per record batch the reader asks for and the writer writes.
const BATCH: usize = 1 << 16;

/// Rows per row group the writer writes.
const ROW_GROUP: usize = 1 << 20;

/// The Parquet file of `table` in `dir`.
pub fn parquet_path(dir: &Path, table: &str) -> PathBuf {
    dir.join(format!("{table}.parquet"))
}

/// Loads the five tables from `dir`'s Parquet files (see the [module](self) documentation)
/// and validates the data set ([`SsbData::validate_complete`]).
pub fn load_parquet_dir(dir: &Path, progress: bool) -> Result<SsbData> {
    let mut data = SsbData::empty(Meta {
        scale_factor: None,
        seed: None,
        source: format!("parquet:{}", dir.display()),
    });
    for (table, cols) in data.tables_mut() {
        let path = parquet_path(dir, table);
        let names: Vec<&str> = cols.iter().map(|(name, _)| *name).collect();
        let loaded = load_table(&path, table, &names, progress)?;
        for ((_, col), values) in cols.into_iter().zip(loaded) {
            *col = values;
        }
    }
    data.validate_complete()
        .map_err(|e| Error::Data(format!("{}: {e}", dir.display())))?;
    Ok(data)
}

/// An error about `path`.
fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Data(format!("{}: {what}", path.display()))
}

/// The columns `names` of `table` from `path`, each whole, read by row groups in parallel.
fn load_table(path: &Path, table: &str, names: &[&str], progress: bool) -> Result<Vec<Vec<i32>>> {
    let open = || File::open(path).map_err(Error::io(path, "cannot open"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(open()?)
        .map_err(|e| bad(path, format!("not a Parquet file: {e}")))?;
    let schema = builder.schema().clone();
    let kinds = fields(table);
    // Each stored column's place in the file and its kind.
    let wanted: Vec<(usize, Kind)> = names
        .iter()
        .map(|&name| {
            let at = schema
                .fields()
                .iter()
                .position(|f| f.name().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    let have: Vec<&str> =
                        schema.fields().iter().map(|f| f.name().as_str()).collect();
                    bad(
                        path,
                        format!("no column {name} (columns: {})", have.join(", ")),
                    )
                })?;
            let kind = kinds
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, k)| k)
                .ok_or_else(|| Error::invalid(format!("{table} stores no column {name}")))?;
            Ok((at, kind))
        })
        .collect::<Result<_>>()?;
    let meta = builder.metadata().clone();
    let groups = meta.num_row_groups();
    let rows: u64 = meta
        .row_groups()
        .iter()
        .map(|g| g.num_rows().max(0) as u64)
        .sum();
    if rows > i32::MAX as u64 {
        return Err(bad(
            path,
            format!("{rows} rows, more than a table holds (2^31 - 1)"),
        ));
    }
    let bar = progress_bar(rows, table, progress);
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.iter().map(|&(at, _)| at));
    // Projected columns come in file order: each wanted column's index among them.
    let mut order: Vec<usize> = wanted.iter().map(|&(at, _)| at).collect();
    order.sort_unstable();
    order.dedup();
    let projected: Vec<usize> = wanted
        .iter()
        .map(|(at, _)| order.partition_point(|&o| o < *at))
        .collect();
    let parts: Vec<Vec<Vec<i32>>> = (0..groups)
        .into_par_iter()
        .map(|g| {
            let reader = ParquetRecordBatchReaderBuilder::try_new(open()?)
                .and_then(|b| {
                    b.with_row_groups(vec![g])
                        .with_projection(mask.clone())
                        .with_batch_size(BATCH)
                        .build()
                })
                .map_err(|e| bad(path, format!("row group {g}: {e}")))?;
            let mut out = vec![Vec::new(); wanted.len()];
            for batch in reader {
                let batch = batch.map_err(|e| bad(path, format!("row group {g}: {e}")))?;
                for (c, &(at, kind)) in wanted.iter().enumerate() {
                    let name = schema.field(at).name();
                    convert(batch.column(projected[c]), kind, &mut out[c])
                        .map_err(|e| bad(path, format!("column {name}, row group {g}: {e}")))?;
                }
                bar.inc(batch.num_rows() as u64);
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    let mut cols: Vec<Vec<i32>> = vec![Vec::with_capacity(rows as usize); wanted.len()];
    for part in parts {
        for (col, p) in cols.iter_mut().zip(part) {
            col.extend(p);
        }
    }
    Ok(cols)
}

/// An integer value as `i32`, or what is wrong with it.
fn fit(v: i128) -> std::result::Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("value {v} does not fit a 32-bit integer"))
}

/// Appends `array`'s values as the data set stores a column of `kind`.
fn convert(array: &ArrayRef, kind: Kind, out: &mut Vec<i32>) -> std::result::Result<(), String> {
    if array.null_count() > 0 {
        return Err(format!(
            "{} nulls; the data set has no nulls",
            array.null_count()
        ));
    }
    macro_rules! ints {
        ($($t:ty),*) => {{
            $(if let Some(a) = array.as_primitive_opt::<$t>() {
                for v in a.values().iter() {
                    out.push(fit(*v as i128)?);
                }
                return Ok(());
            })*
        }};
    }
    match kind {
        Kind::Int | Kind::Date => {
            ints!(
                Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type,
                UInt64Type
            );
            if let (Kind::Date, Some(a)) = (kind, array.as_primitive_opt::<Date32Type>()) {
                for &days in a.values().iter() {
                    let (y, m, d) = civil_from_days(days as i64);
                    out.push(datekey(y, m, d));
                }
                return Ok(());
            }
            let want = if matches!(kind, Kind::Date) {
                "an integer yyyymmdd or a DATE"
            } else {
                "an integer"
            };
            Err(format!("type {}, expected {want}", array.data_type()))
        }
        Kind::Code(dict) => {
            let code = |s: &str| {
                dict.resolve(s).map(|(c, _)| c).ok_or_else(|| {
                    format!(
                        "{s:?} is not a value of {} (e.g. {:?})",
                        dict.name(),
                        dict.values()[0]
                    )
                })
            };
            if let Some(a) = array.as_string_opt::<i32>() {
                for s in a.iter().flatten() {
                    out.push(code(s)?);
                }
                return Ok(());
            }
            if let Some(a) = array.as_string_opt::<i64>() {
                for s in a.iter().flatten() {
                    out.push(code(s)?);
                }
                return Ok(());
            }
            if let DataType::Utf8View = array.data_type() {
                for s in array.as_string_view().iter().flatten() {
                    out.push(code(s)?);
                }
                return Ok(());
            }
            if let Some(d) = array.as_any_dictionary_opt() {
                // Each dictionary value mapped once, then the keys.
                let values = d.values();
                let mut codes = Vec::with_capacity(values.len());
                convert(values, kind, &mut codes)?;
                for k in d.normalized_keys() {
                    out.push(*codes.get(k).ok_or("a dictionary key past its values")?);
                }
                return Ok(());
            }
            Err(format!("type {}, expected a string", array.data_type()))
        }
        Kind::Skip => Ok(()),
    }
}

/// Writes the data set's five tables as Parquet files in `dir` (created if needed).
pub fn write_parquet_dir(data: &SsbData, dir: &Path, progress: bool) -> Result<()> {
    data.validate_complete()?;
    std::fs::create_dir_all(dir).map_err(Error::io(dir, "cannot create"))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .build();
    for (table, cols) in data.tables() {
        let path = parquet_path(dir, table);
        let kinds = fields(table);
        let kind_of = |name: &str| kinds.iter().find(|(n, _)| *n == name).map(|&(_, k)| k);
        let schema = Arc::new(Schema::new(
            cols.iter()
                .map(|&(name, _)| {
                    let ty = match kind_of(name) {
                        Some(Kind::Code(_)) => DataType::Utf8,
                        _ => DataType::Int32,
                    };
                    Field::new(name, ty, false)
                })
                .collect::<Vec<_>>(),
        ));
        let file = File::create(&path).map_err(Error::io(&path, "cannot create"))?;
        let failed = |e: parquet::errors::ParquetError| bad(&path, format!("write failed: {e}"));
        let mut w =
            ArrowWriter::try_new(file, schema.clone(), Some(props.clone())).map_err(failed)?;
        let rows = cols.first().map_or(0, |(_, c)| c.len());
        let bar = progress_bar(rows as u64, table, progress);
        for start in (0..rows).step_by(BATCH) {
            let end = rows.min(start + BATCH);
            let arrays: Vec<ArrayRef> = cols
                .iter()
                .map(|&(name, c)| -> ArrayRef {
                    let part = &c[start..end];
                    match kind_of(name) {
                        Some(Kind::Code(dict)) => Arc::new(StringArray::from_iter_values(
                            part.iter().map(|&v| dict.decode(v)),
                        )),
                        _ => Arc::new(Int32Array::from(part.to_vec())),
                    }
                })
                .collect();
            let batch = RecordBatch::try_new(schema.clone(), arrays)
                .map_err(|e| bad(&path, format!("write failed: {e}")))?;
            w.write(&batch).map_err(failed)?;
            bar.inc((end - start) as u64);
        }
        w.close().map_err(failed)?;
        bar.finish_and_clear();
    }
    Ok(())
}

/// A query's result as an Arrow batch: each group column as strings (dictionary columns) or
/// `Int32`, the aggregate as `Int64`, named as [`QueryResult::header`] names them.
pub fn result_batch(result: &QueryResult) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, g) in result.group_by.iter().enumerate() {
        let values = result.rows.iter().map(|r| r.groups[i]);
        let a: ArrayRef = match g.dict() {
            Some(_) => Arc::new(StringArray::from_iter_values(values.map(|v| g.decode(v)))),
            None => Arc::new(Int32Array::from_iter_values(values)),
        };
        fields.push(Field::new(g.name(), a.data_type().clone(), false));
        arrays.push(a);
    }
    fields.push(Field::new(result.agg.name(), DataType::Int64, false));
    arrays.push(Arc::new(Int64Array::from_iter_values(
        result.rows.iter().map(|r| r.value),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| Error::invalid(format!("{}: {e}", result.query.name())))
}

/// Writes a query's result ([`result_batch`]) as the Parquet file `path`.
pub fn write_result(result: &QueryResult, path: &Path) -> Result<()> {
    let bytes = result_parquet(result)?;
    std::fs::write(path, bytes).map_err(Error::io(path, "write failed"))
}

/// A query's result ([`result_batch`]) as the bytes of a Parquet file (what
/// `ssb run --output parquet` prints).
pub fn result_parquet(result: &QueryResult) -> Result<Vec<u8>> {
    let batch = result_batch(result)?;
    let failed = |e: parquet::errors::ParquetError| {
        Error::invalid(format!("{}: writing Parquet: {e}", result.query.name()))
    };
    let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), None).map_err(failed)?;
    w.write(&batch).map_err(failed)?;
    w.into_inner().map_err(failed)
}
