//! The SSB tables as Parquet files (issue 23): the writer and the loader round trip a data set
//! exactly and its answers with it; files as other tools write them load (any integer width,
//! dates as `DATE`, dictionary-encoded strings, extra columns, other case); and a missing
//! file or column, another type, a null, a value outside its domain, a corrupt or truncated
//! file are errors naming the file and the column, never a panic.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, Date32Array, DictionaryArray, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use tessera::ssb::parquet::{load_parquet_dir, parquet_path, write_parquet_dir};
use tessera::ssb::{GenConfig, SsbData, calendar, generate};

/// A fresh temporary directory for one test, removed when the test ends (pass or fail).
fn temp(name: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("tessera-pq-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// See [`temp`].
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn data() -> SsbData {
    generate(&GenConfig::new(0.01)).unwrap()
}

/// The data set without where it came from.
fn same_tables(a: &SsbData, b: &SsbData) {
    for ((ta, ca), (tb, cb)) in a.tables().into_iter().zip(b.tables()) {
        assert_eq!(ta, tb);
        for ((na, va), (nb, vb)) in ca.iter().zip(&cb) {
            assert_eq!(na, nb);
            assert!(va == vb, "{ta}.{na} differs");
        }
    }
}

/// Writes `batch` as `path`.
fn write(path: &Path, batch: RecordBatch) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(f, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// `table`'s columns from `d` as a batch, each passed through `f` (name, values) -> column.
fn batch(
    d: &SsbData,
    table: &str,
    f: impl Fn(&str, &[i32]) -> Option<(Field, ArrayRef)>,
) -> RecordBatch {
    let (_, cols) = d.tables().into_iter().find(|(t, _)| *t == table).unwrap();
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) =
        cols.iter().filter_map(|&(name, v)| f(name, v)).unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// The error of loading `dir`, as text.
fn load_err(dir: &Path) -> String {
    match load_parquet_dir(dir, false) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn written_files_load_back_exactly() {
    let d = data();
    let dir = temp("round-trip");
    write_parquet_dir(&d, &dir, false).unwrap();
    let back = load_parquet_dir(&dir, false).unwrap();
    same_tables(&d, &back);
}

#[test]
fn files_as_other_tools_write_them_load() {
    let d = data();
    let dir = temp("foreign");
    write_parquet_dir(&d, &dir, false).unwrap();
    let dict = d.dicts();
    // lineorder: 64-bit integers, upper-case names, dictionary-encoded strings, a free-text
    // column the loader does not read.
    let lo = batch(&d, "lineorder", |name, v| {
        let field = |ty| Field::new(name.to_uppercase(), ty, false);
        let strings = dict.for_column(name).map(|dc| {
            let text: Vec<String> = v.iter().map(|&c| dc.decode(c)).collect();
            let s: DictionaryArray<Int32Type> = text.iter().map(String::as_str).collect();
            (field(s.data_type().clone()), Arc::new(s) as ArrayRef)
        });
        strings.or_else(|| {
            let a = Int64Array::from_iter_values(v.iter().map(|&x| x as i64));
            Some((field(DataType::Int64), Arc::new(a) as ArrayRef))
        })
    });
    let n = lo.num_rows();
    let mut cols = lo.columns().to_vec();
    let mut fields: Vec<Field> = lo
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    cols.push(Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| format!("comment {i}")),
    )));
    fields.push(Field::new("lo_comment", DataType::Utf8, false));
    write(
        &parquet_path(&dir, "lineorder"),
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap(),
    );
    // date: the key as a DATE.
    let date = batch(&d, "date", |name, v| {
        if name == "d_datekey" {
            let days = v.iter().map(|&k| {
                let (y, m, dd) = calendar::split_datekey(k).unwrap();
                calendar::days_from_civil(y, m, dd) as i32
            });
            let a = Date32Array::from_iter_values(days);
            return Some((Field::new(name, DataType::Date32, false), Arc::new(a)));
        }
        let a: ArrayRef = match d.dicts().for_column(name) {
            Some(dc) => Arc::new(StringArray::from_iter_values(
                v.iter().map(|&c| dc.decode(c)),
            )),
            None => Arc::new(Int32Array::from(v.to_vec())),
        };
        Some((Field::new(name, a.data_type().clone(), false), a))
    });
    write(&parquet_path(&dir, "date"), date);
    let back = load_parquet_dir(&dir, false).unwrap();
    same_tables(&d, &back);
}

/// `d`'s files in a new directory, with `table`'s replaced by `f`'s batch.
fn with_table(
    name: &str,
    table: &str,
    f: impl Fn(&str, &[i32]) -> Option<(Field, ArrayRef)>,
) -> TempDir {
    let d = data();
    let dir = temp(name);
    write_parquet_dir(&d, &dir, false).unwrap();
    write(&parquet_path(&dir, table), batch(&d, table, f));
    dir
}

/// A column as the writer writes it.
fn plain(d: &SsbData, name: &str, v: &[i32]) -> (Field, ArrayRef) {
    let a: ArrayRef = match d.dicts().for_column(name) {
        Some(dc) => Arc::new(StringArray::from_iter_values(
            v.iter().map(|&c| dc.decode(c)),
        )),
        None => Arc::new(Int32Array::from(v.to_vec())),
    };
    (Field::new(name, a.data_type().clone(), true), a)
}

#[test]
fn bad_files_are_errors_that_name_the_column() {
    let d = data();
    // A missing file.
    let dir = temp("missing-file");
    write_parquet_dir(&d, &dir, false).unwrap();
    std::fs::remove_file(parquet_path(&dir, "part")).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("part.parquet"), "{e}");
    // A missing column.
    let dir = with_table("missing-column", "supplier", |name, v| {
        (name != "s_region").then(|| plain(&d, name, v))
    });
    let e = load_err(&dir);
    assert!(e.contains("no column s_region"), "{e}");
    // Another type, a null, a string outside its dictionary, an integer past i32: each in
    // one column, the others as written.
    let float = |v: &[i32]| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(v.iter().map(|&x| x as f64)))
    };
    let null = |v: &[i32]| -> ArrayRef {
        Arc::new(Int32Array::from_iter(
            v.iter().enumerate().map(|(i, &x)| (i != 3).then_some(x)),
        ))
    };
    let alien = |v: &[i32]| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(v.iter().map(|_| "SPACESHIP")))
    };
    let wide = |v: &[i32]| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(
            v.iter().map(|&x| x as i64 + (1 << 40)),
        ))
    };
    type Bad<'a> = (
        &'a str,
        &'a str,
        &'a dyn Fn(&[i32]) -> ArrayRef,
        [&'a str; 2],
    );
    let cases: [Bad; 4] = [
        ("customer", "c_custkey", &float, ["c_custkey", "Float64"]),
        ("part", "p_size", &null, ["p_size", "1 nulls"]),
        (
            "customer",
            "c_mktsegment",
            &alien,
            ["c_mktsegment", "SPACESHIP"],
        ),
        ("part", "p_partkey", &wide, ["p_partkey", "does not fit"]),
    ];
    for (table, column, make, needles) in cases {
        let dir = with_table(column, table, |name, v| {
            if name != column {
                return Some(plain(&d, name, v));
            }
            let a = make(v);
            Some((Field::new(name, a.data_type().clone(), true), a))
        });
        let e = load_err(&dir);
        assert!(
            needles.iter().all(|n| e.contains(n)),
            "{needles:?} not all in {e}"
        );
    }
}

#[test]
fn corrupt_and_truncated_files_are_errors() {
    let d = data();
    let dir = temp("corrupt");
    write_parquet_dir(&d, &dir, false).unwrap();
    let path = parquet_path(&dir, "lineorder");
    let good = std::fs::read(&path).unwrap();
    let mut rng = 0x2301_u64;
    let mut next = |m: usize| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) as usize % m
    };
    for round in 0..24 {
        let mut bytes = good.clone();
        if round % 2 == 0 {
            bytes.truncate(next(good.len()));
        } else {
            for _ in 0..8 {
                let i = next(bytes.len());
                bytes[i] ^= 1 << next(8);
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        // A flip inside a value may still decode to a valid data set; anything else is an
        // error, and nothing panics.
        match load_parquet_dir(&dir, false) {
            Ok(back) => assert_eq!(back.lineorder.len(), d.lineorder.len()),
            Err(e) => assert!(e.to_string().contains("lineorder"), "round {round}: {e}"),
        }
    }
}

#[test]
fn query_results_write_as_parquet() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use tessera::ssb::parquet::write_result;
    use tessera::ssb::{Query, cpu};
    let d = data();
    let dir = temp("results");
    for q in Query::ALL {
        let r = cpu::run(&d, q);
        let path = dir.join(format!("{}.parquet", q.name()));
        write_result(&r, &path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap())
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let names: Vec<String> = batches
            .first()
            .map(|b| {
                b.schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect()
            })
            .unwrap_or_default();
        if !batches.is_empty() {
            assert_eq!(names, r.header(), "{q}");
        }
        // Every cell as text, as the result decodes it.
        let mut rows: Vec<Vec<String>> = Vec::new();
        for b in &batches {
            for i in 0..b.num_rows() {
                let row = b.columns().iter().map(|c| arrow_cast_text(c, i)).collect();
                rows.push(row);
            }
        }
        assert_eq!(rows, r.decoded(), "{q}");
    }
}

/// Cell `i` of a string, `Int32` or `Int64` column as text.
fn arrow_cast_text(c: &ArrayRef, i: usize) -> String {
    use arrow_array::cast::AsArray;
    match c.data_type() {
        DataType::Utf8 => c.as_string::<i32>().value(i).to_string(),
        DataType::Int32 => c.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => c
            .as_primitive::<arrow_array::types::Int64Type>()
            .value(i)
            .to_string(),
        t => panic!("unexpected column type {t}"),
    }
}
