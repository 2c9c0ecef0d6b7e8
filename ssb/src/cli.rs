//! `tessera ssb ...`: generate, load `.tbl` files, run the queries.
use std::path::PathBuf;
use std::time::Instant;

use super::engine::{Device, Engine, engine};
use super::format::{self, Existing};
use super::generator::{Cardinalities, DEFAULT_SEED, GenConfig, generate};
use super::gpu::{
    CoprocessorEngine, GpuEngine, PACKED_SCHEMES, encode_fact, h2d_bandwidth, model, packed_model,
};
use super::query::Query;
use super::query::QueryResult;
use super::storage;
use super::tbl;
use tessera_bench::{Bandwidth, Record, fixed, markdown_table, measure_bandwidth};
use tessera_host::compress::{Encoded, Scheme};
use tessera_host::preflight::{check_disk, check_memory, check_output_file};
use tessera_host::runtime::{Gpu, median};

/// Where `ssb run` runs the queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// The GPU when one is present, otherwise the CPU (with a notice).
    Auto,
    /// The fused GPU kernels; an error at once when there is no GPU.
    Gpu,
    /// The multi-threaded CPU engine.
    Cpu,
}

/// A scheme `ssb run --compressed --schemes` may store a query column in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PackedScheme {
    /// Uncompressed, 4 bytes per value.
    None,
    /// Null suppression: 1, 2 or 4 bytes per value for the whole column.
    Nsf,
    /// GPU-FOR bit packing.
    GpuFor,
}

impl PackedScheme {
    fn scheme(self) -> Scheme {
        match self {
            PackedScheme::None => Scheme::Plain,
            PackedScheme::Nsf => Scheme::Nsf,
            PackedScheme::GpuFor => Scheme::For,
        }
    }
}

/// How `ssb run` writes the query results (`--output`), on the standard output or into the
/// `--results` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ResultsFormat {
    /// Each query's result as an aligned table under `== q1.1 (engine) ==`, with its row
    /// count: for people, and printed with the report.
    Table,
    /// A line `== q1.1` per query, then one line per row, values separated by `|` (what
    /// `tests/ssb_duckdb.py` prints, to compare with DuckDB).
    Pipe,
    /// A JSON array with one object per query: its name, its columns' names and types, and
    /// its rows.
    Json,
    /// One query's result as CSV with a header of column names.
    Csv,
    /// One query's result as a Parquet file (group columns as strings or `INT32`, the
    /// aggregate as `INT64`, named as the header).
    #[cfg(feature = "parquet")]
    Parquet,
}

/// Arguments of `ssb load-tbl` and `ssb load-parquet`.
#[derive(Clone, Debug, clap::Args)]
pub struct LoadArgs {
    /// Directory holding the five tables' files.
    pub dir: PathBuf,
    /// Data directory to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write lineorder's query columns compressed into OUT/compressed (as `ssb gen
    /// --compressed`).
    #[arg(long)]
    pub compressed: bool,
    /// Replace the data set OUT holds (refused without it).
    #[arg(long)]
    pub force: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The files `ssb export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// dbgen's `.tbl` files (free-text fields synthesized from the data set's seed).
    Tbl,
    /// One Parquet file per table.
    #[cfg(feature = "parquet")]
    Parquet,
}

/// `tessera ssb` subcommands.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum SsbCmd {
    /// Generate every SSB table at a scale factor into a data directory.
    Gen {
        /// Scale factor (0.01 .. 300; lineorder has about 6M x SF rows).
        #[arg(long)]
        sf: f64,
        /// Data directory to write (one file per column, dictionaries, meta.json).
        #[arg(long)]
        out: PathBuf,
        /// Seed; the same seed gives the same data on any machine.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        /// Also write dbgen-format .tbl files into OUT/tbl.
        #[arg(long)]
        tbl: bool,
        /// Also write lineorder's query columns compressed for the GPU engine into
        /// OUT/compressed (each in the smallest of None, NSF, GPU-FOR), which `ssb run
        /// --compressed` reads.
        #[arg(long)]
        compressed: bool,
        /// Replace the data set OUT holds (refused without it).
        #[arg(long)]
        force: bool,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Load dbgen's .tbl files (lineorder, part, supplier, customer, date) into a data directory.
    LoadTbl(LoadArgs),
    /// Load the SSB tables from Parquet files (lineorder.parquet, part.parquet,
    /// supplier.parquet, customer.parquet, date.parquet; columns named as the specification
    /// names them) into a data directory.
    #[cfg(feature = "parquet")]
    LoadParquet(LoadArgs),
    /// Write a data directory's tables as dbgen's .tbl files or as Parquet files.
    Export {
        /// Data directory to read.
        #[arg(long)]
        data: PathBuf,
        /// Directory to write the files into (created if needed).
        #[arg(long)]
        out: PathBuf,
        /// The files' form.
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// Replace files OUT already holds (refused without it).
        #[arg(long)]
        force: bool,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Run queries, print their results and a timing table.
    Run {
        /// Data directory.
        #[arg(long, default_value = "data/ssb-sf1")]
        data: PathBuf,
        /// `all` or a comma-separated list (q1.1, ..., q4.3).
        #[arg(long, default_value = "all")]
        query: String,
        /// Engine.
        #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
        device: DeviceArg,
        /// Timed repetitions per query, after one untimed run (1..=100000).
        #[arg(
            long,
            default_value_t = 5,
            value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000)
        )]
        repeat: usize,
        /// Generate the data directory first when it does not exist.
        #[arg(long)]
        gen_if_missing: bool,
        /// Scale factor for --gen-if-missing.
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Print only the timing table.
        #[arg(long)]
        no_results: bool,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// With `--device gpu`: also run coprocessor mode (columns shipped from pinned host
        /// memory per query) and report it next to its PCIe transfer bound.
        #[arg(long)]
        coprocessor: bool,
        /// With `--device gpu`: also run the queries with lineorder's columns compressed on
        /// the device (each in the smallest of None, NSF and GPU-FOR, decoded in the probes),
        /// check their answers against the uncompressed engine's and report both times.
        #[arg(long)]
        compressed: bool,
        /// With `--compressed`: the schemes each column may take, the smallest winning
        /// (comma-separated; all three by default). Any other set encodes the columns in
        /// this run instead of reading the data directory's, so that the probes' cost can
        /// be split between their decoding and the bytes they read: `none` alone runs the
        /// compressed probes over uncompressed columns.
        #[arg(long, value_enum, value_delimiter = ',', requires = "compressed")]
        schemes: Vec<PackedScheme>,
        /// Write the timing records as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write the queries' results to this file (in `--output`'s form, `pipe` by default)
        /// instead of the standard output.
        #[arg(long)]
        results: Option<PathBuf>,
        /// The results' form: `table` (the default on the standard output), `pipe` (lines of
        /// `|`-separated values under `== q1.1`; the default into `--results`), `json` (the
        /// queries' columns, with names and types, and rows), `csv` or `parquet` (one query).
        /// In any form but `table` on the standard output, the results are all it gets: the
        /// report (timings, models, notices) goes to the standard error.
        #[arg(long, value_enum, visible_alias = "results-format")]
        output: Option<ResultsFormat>,
    },
    /// The storage table (thesis §5.6.4): each column's footprint uncompressed, in NSF,
    /// GPU-FOR and GPU-DFOR, and the smallest of them; per column and in total.
    Storage {
        /// Data directory.
        #[arg(long, default_value = "data/ssb-sf1")]
        data: PathBuf,
        /// Also write the table as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// Runs one `tessera ssb` subcommand.
pub fn run(cmd: SsbCmd) -> Result<(), Box<dyn std::error::Error>> {
    match cmd {
        SsbCmd::Gen {
            sf,
            out,
            seed,
            tbl,
            compressed,
            force,
            quiet,
        } => {
            let existing = existing(force);
            check_gen(sf, &out, tbl, existing)?;
            let also = Also { tbl, compressed };
            gen_dir(sf, seed, &out, also, existing, !quiet, Report::default())?;
        }
        SsbCmd::LoadTbl(args) => load_into(&args, |dir, progress| {
            let (data, report) = tbl::load_tbl_dir_with_report(dir, progress)?;
            if !report.is_empty() {
                println!("{report}");
            }
            Ok(data)
        })?,
        #[cfg(feature = "parquet")]
        SsbCmd::LoadParquet(args) => load_into(&args, super::parquet::load_parquet_dir)?,
        SsbCmd::Export {
            data,
            out,
            format: form,
            force,
            quiet,
        } => {
            let t = Instant::now();
            let ext = match form {
                ExportFormat::Tbl => "tbl",
                #[cfg(feature = "parquet")]
                ExportFormat::Parquet => "parquet",
            };
            use super::data::{Customer, Date, Lineorder, Part, Supplier};
            for table in [
                Lineorder::NAME,
                Part::NAME,
                Supplier::NAME,
                Customer::NAME,
                Date::NAME,
            ] {
                let file = out.join(format!("{table}.{ext}"));
                if file.exists() && !force {
                    return Err(format!(
                        "{} already exists; pass --force to replace it",
                        file.display()
                    )
                    .into());
                }
            }
            let d = format::read_dir(&data)?;
            match form {
                ExportFormat::Tbl => tbl::write_tbl_dir(&d, &out, !quiet)?,
                #[cfg(feature = "parquet")]
                ExportFormat::Parquet => super::parquet::write_parquet_dir(&d, &out, !quiet)?,
            }
            println!(
                "wrote {} lineorder rows of {} as {ext} files into {} in {:.1} s",
                d.lineorder.len(),
                data.display(),
                out.display(),
                t.elapsed().as_secs_f64()
            );
        }
        SsbCmd::Storage { data, json } => {
            if let Some(path) = &json {
                check_output_file(path, "--json")?;
            }
            check_memory(
                2 * dir_bytes(&data),
                &format!("the data in {} and one column's encodings", data.display()),
                "use a smaller scale factor",
            )?;
            let set = format::read_dir(&data)?;
            let t = Instant::now();
            let table = storage::storage(&set)?;
            print!("{}", table.render());
            println!("encoded in {:.2} s", t.elapsed().as_secs_f64());
            if let Some(path) = json {
                std::fs::write(&path, serde_json::to_string_pretty(&table)?)?;
            }
        }
        SsbCmd::Run {
            data,
            query,
            device,
            repeat,
            gen_if_missing,
            sf,
            no_results,
            quiet,
            coprocessor,
            compressed,
            schemes,
            json,
            results,
            output,
        } => {
            if coprocessor && device == DeviceArg::Cpu {
                return Err("--coprocessor runs on the GPU: drop --device cpu".into());
            }
            if compressed && device == DeviceArg::Cpu {
                return Err("--compressed runs on the GPU: drop --device cpu".into());
            }
            let queries = Query::parse_list(&query)?;
            if let Some(path) = &json {
                check_output_file(path, "--json")?;
            }
            let form = output.unwrap_or(if results.is_some() {
                ResultsFormat::Pipe
            } else {
                ResultsFormat::Table
            });
            check_results(form, results.as_deref(), queries.len())?;
            // Results a program reads on the standard output get it to themselves.
            let results_on_stdout = results.is_none() && form != ResultsFormat::Table;
            let rep = Report {
                stderr: results_on_stdout,
            };
            let print_tables = !no_results && !results_on_stdout;
            let generate_first = !format::exists(&data);
            if generate_first {
                if !gen_if_missing {
                    return Err(format!(
                        "{}: no SSB data here; generate it with `tessera ssb gen --sf 1 --out {0}` \
                         or pass --gen-if-missing",
                        data.display()
                    )
                    .into());
                }
                check_gen(sf, &data, false, Existing::Refuse)?;
            }
            // The GPU is opened before any data is generated or read, so that a missing one is
            // said at once.
            let gpu = open_device(device, rep)?;
            if coprocessor && gpu.is_none() {
                return Err("--coprocessor needs a GPU, and none was found".into());
            }
            if compressed && gpu.is_none() {
                return Err("--compressed needs a GPU, and none was found".into());
            }
            if generate_first {
                let also = Also {
                    tbl: false,
                    compressed,
                };
                gen_dir(sf, DEFAULT_SEED, &data, also, Existing::Refuse, !quiet, rep)?;
            }
            check_memory(
                dir_bytes(&data),
                &format!("the data in {}", data.display()),
                "use a smaller scale factor",
            )?;
            let t = Instant::now();
            let set = format::read_dir(&data)?;
            rep.say(format_args!(
                "{}: {} lineorder rows (SF {}), read in {:.2} s",
                data.display(),
                set.lineorder.len(),
                set.meta
                    .scale_factor
                    .map_or_else(|| "unknown".into(), |s| s.to_string()),
                t.elapsed().as_secs_f64()
            ));
            let (timed, records) = match gpu {
                None => {
                    let eng = engine(Device::Cpu, &set)?;
                    let timed = time_queries(eng.as_ref(), &queries, repeat, print_tables, rep)?;
                    let records = timing_table(eng.name(), &timed, None, rep);
                    (timed, records)
                }
                Some(gpu) => {
                    let modes = GpuModes {
                        coprocessor,
                        compressed: compressed.then_some((data.as_path(), schemes.as_slice())),
                    };
                    gpu_run(&gpu, &set, &queries, repeat, print_tables, modes, rep)?
                }
            };
            if results.is_some() || (results_on_stdout && !no_results) {
                let bytes = render_results(form, &timed)?;
                match &results {
                    Some(path) => {
                        std::fs::write(path, bytes)
                            .map_err(tessera_host::Error::io(path, "write failed"))?;
                        rep.say(format_args!("results written to {}", path.display()));
                    }
                    None => {
                        use std::io::Write;
                        let mut out = std::io::stdout().lock();
                        out.write_all(&bytes).and_then(|()| out.flush())?;
                    }
                }
            }
            if let Some(path) = json {
                tessera_bench::save_json(&path, &records)?;
                rep.say(format_args!("\nJSON: {}", path.display()));
            }
        }
    }
    Ok(())
}

/// The GPU `device` asks for: `None` for the CPU engine; an error at once, with the
/// alternative, when `--device gpu` finds none.
fn open_device(device: DeviceArg, rep: Report) -> Result<Option<Gpu>, Box<dyn std::error::Error>> {
    match device {
        DeviceArg::Cpu => Ok(None),
        DeviceArg::Gpu => match Gpu::new_with_notice(jit_notice) {
            Ok(gpu) => Ok(Some(gpu)),
            Err(e) => Err(format!(
                "--device gpu: {e}; run the CPU engine with --device cpu (or --device auto)"
            )
            .into()),
        },
        DeviceArg::Auto => match Gpu::new_with_notice(jit_notice) {
            Ok(gpu) => Ok(Some(gpu)),
            Err(e) => {
                rep.say(format_args!("notice: no GPU ({e}); running the CPU engine"));
                Ok(None)
            }
        },
    }
}

/// Said on stderr while the driver compiles the kernels (see `Gpu::new_with_notice`).
pub fn jit_notice() {
    eprintln!("{}", Gpu::JIT_NOTICE);
}

/// Bytes of the files under `dir` (recursively): what reading it into memory takes.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// Memory the generator and a query run hold per scale factor: the 17 lineorder columns of
/// 6M rows at 4 bytes, with a margin for the dimensions and the generator's buffers.
const BYTES_PER_SF: f64 = 17.0 * 4.0 * 6.0e6 * 1.25;
/// Bytes of dbgen-format text per scale factor (lineorder lines are about 100 bytes).
const TBL_BYTES_PER_SF: f64 = 6.5e8;

/// `--force` as what the writer does with a data set already there.
/// Loads a data set with `load` and writes it to `args.out` (checked first).
fn load_into(
    args: &LoadArgs,
    load: impl FnOnce(&std::path::Path, bool) -> tessera_host::Result<super::data::SsbData>,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    format::check_out_dir(&args.out, existing(args.force))?;
    let data = load(&args.dir, !args.quiet)?;
    format::write_dir_with(&data, &args.out, existing(args.force))?;
    println!(
        "loaded {} lineorder rows from {} into {} in {:.1} s",
        data.lineorder.len(),
        args.dir.display(),
        args.out.display(),
        t.elapsed().as_secs_f64()
    );
    if args.compressed {
        write_compressed(&data, &args.out, Report::default())?;
    }
    Ok(())
}

fn existing(force: bool) -> Existing {
    if force {
        Existing::Replace
    } else {
        Existing::Refuse
    }
}

/// Refuses, before any work, a scale factor outside the generator's range or larger than this
/// machine's memory or the disk under `out`, and an `out` that may not be written.
fn check_gen(
    sf: f64,
    out: &std::path::Path,
    tbl: bool,
    existing: Existing,
) -> tessera_host::Result<()> {
    Cardinalities::at(sf)?;
    format::check_out_dir(out, existing)?;
    let what = format!("SF {sf}");
    let fix = "pass a smaller --sf";
    check_memory((BYTES_PER_SF * sf) as u64, &what, fix)?;
    let disk = BYTES_PER_SF / 1.25 * sf + if tbl { TBL_BYTES_PER_SF * sf } else { 0.0 };
    check_disk(out, disk as u64, &what, fix)
}

/// Generates scale factor `sf` into `out` (and `.tbl` files into `out/tbl`).
/// What `ssb gen` writes besides the data set.
#[derive(Clone, Copy)]
struct Also {
    tbl: bool,
    compressed: bool,
}

/// Writes the compressed query columns of `data` into its directory `out`, and says so.
fn write_compressed(
    data: &super::data::SsbData,
    out: &std::path::Path,
    rep: Report,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let bytes = storage::write_compressed(data, out)?;
    rep.say(format_args!(
        "compressed query columns ({:.1} MB, {:.3} of uncompressed) in {} in {:.1} s",
        bytes as f64 / 1e6,
        bytes as f64 / (36 * data.lineorder.len()).max(1) as f64,
        storage::compressed_dir(out).display(),
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}

fn gen_dir(
    sf: f64,
    seed: u64,
    out: &std::path::Path,
    also: Also,
    existing: Existing,
    progress: bool,
    rep: Report,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let data = generate(&GenConfig { sf, seed, progress })?;
    let generated = t.elapsed().as_secs_f64();
    format::write_dir_with(&data, out, existing)?;
    rep.say(format_args!(
        "generated SF {sf} (seed {seed}): {} lineorder rows in {generated:.1} s, written to {} \
         in {:.1} s",
        data.lineorder.len(),
        out.display(),
        t.elapsed().as_secs_f64() - generated
    ));
    if also.tbl {
        let dir = out.join("tbl");
        tbl::write_tbl_dir(&data, &dir, progress)?;
        rep.say(format_args!(".tbl files in {}", dir.display()));
    }
    if also.compressed {
        write_compressed(&data, out, rep)?;
    }
    Ok(())
}

/// `--compressed`: the engine over compressed lineorder columns, its answers checked against
/// the uncompressed engine's (`plain`), its times next to them.
fn compressed_run(
    gpu: &Gpu,
    set: &super::data::SsbData,
    (dir, schemes): (&std::path::Path, &[PackedScheme]),
    queries: &[Query],
    (repeat, bw): (usize, Bandwidth),
    plain: &[Timed],
    rep: Report,
) -> Result<(Vec<Record>, Vec<Encoded>), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let chosen: Vec<Scheme> = PACKED_SCHEMES
        .into_iter()
        .filter(|s| schemes.is_empty() || schemes.iter().any(|p| p.scheme() == *s))
        .collect();
    let stored = if chosen.len() == PACKED_SCHEMES.len() {
        storage::read_compressed(dir, set)?
    } else {
        None
    };
    let (encoded, how) = match stored {
        Some(cols) => (
            cols,
            format!("read from {}", storage::compressed_dir(dir).display()),
        ),
        None => (encode_fact(set, &chosen)?, "encoded".to_string()),
    };
    let names: Vec<&str> = chosen.iter().map(|s| s.name()).collect();
    let eng = GpuEngine::compressed_from(gpu, set, &encoded)?;
    let secs = t.elapsed().as_secs_f64();
    let cols = eng.packed_columns().unwrap_or_default();
    let rows = set.lineorder.len();
    rep.say(format_args!(
        "\ncompressed lineorder columns (each in the smallest of {}; {how} and uploaded in \
         {secs:.2} s)",
        names.join(", ")
    ));
    let table_rows = cols.iter().map(|c| {
        vec![
            format!("{:?}", c.column),
            c.scheme.name().to_string(),
            format!("{:.2}", c.bytes as f64 / 1e6),
            format!("{:.2}", 8.0 * c.bytes as f64 / rows.max(1) as f64),
            format!("{:.2}", c.device_bytes as f64 / 1e6),
        ]
    });
    // On the device a GPU-FOR column's block index stands in for its block starts.
    let header = ["column", "scheme", "MB", "bits/row", "on the device, MB"];
    rep.say(format_args!("{}", markdown_table(&header, table_rows, 2)));
    let packed: usize = cols.iter().map(|c| c.bytes).sum();
    let resident: usize = cols.iter().map(|c| c.device_bytes).sum();
    let whole = 4 * rows * cols.len();
    rep.say(format_args!(
        "total {:.2} MB of {:.2} MB uncompressed: {:.3}; on the device {:.2} MB: {:.3}",
        packed as f64 / 1e6,
        whole as f64 / 1e6,
        packed as f64 / whole.max(1) as f64,
        resident as f64 / 1e6,
        resident as f64 / whole.max(1) as f64
    ));
    let timed = time_queries(&eng, queries, repeat, false, rep)?;
    let mut records = Vec::new();
    let mut table_rows = Vec::new();
    for (c, p) in timed.iter().zip(plain) {
        if c.result != p.result {
            return Err(format!("{}: compressed and uncompressed results differ", c.query).into());
        }
        let (mc, mp) = (median(&c.ms), median(&p.ms));
        let m = packed_model(set, c.query, &encoded)?;
        let model_ms = bw.model_ms(m.read_bytes, m.written_bytes);
        table_rows.push(vec![
            c.query.name().to_string(),
            fixed(mp, 3),
            fixed(mc, 3),
            fixed(mc / mp, 2),
            fixed(model_ms, 3),
            fixed(mc / model_ms, 2),
        ]);
        // The model column holds the uncompressed engine's median: the ratio is the speedup
        // the compression buys (below 1) or costs.
        records.push(Record::new(
            "ssb compressed vs uncompressed",
            eng.name(),
            c.query.name(),
            rows as u64,
            mc,
            mp,
        ));
    }
    let header = [
        "query",
        "uncompressed ms",
        "compressed ms",
        "ratio",
        "model ms",
        "x model",
    ];
    rep.say(format_args!(
        "\nmodel = the compressed bytes the probes touch (32-byte sectors of the first column's \
         arrays, of the later ones' only where rows still qualify) at the bandwidth above\n{}",
        markdown_table(&header, table_rows, 1)
    ));
    rep.say(format_args!(
        "geometric mean: {:.3} ms compressed, {:.3} ms uncompressed, ratio {:.3}",
        geomean(timed.iter().map(|t| median(&t.ms))),
        geomean(plain.iter().map(|t| median(&t.ms))),
        geomean(records.iter().map(|r| r.ratio))
    ));
    Ok((records, encoded))
}

/// Where `ssb run` prints its report (what it read, timings, models, notices): the standard
/// output, or the standard error where the results take the standard output.
#[derive(Clone, Copy, Default)]
struct Report {
    stderr: bool,
}

impl Report {
    fn say(self, text: std::fmt::Arguments<'_>) {
        if self.stderr {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
}

/// Refuses, before any work, results in `form` that one file cannot hold for `queries`
/// queries, and results that may not be written where they go (`path`, else the standard
/// output).
fn check_results(
    form: ResultsFormat,
    path: Option<&std::path::Path>,
    queries: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = path {
        check_output_file(path, "--results")?;
    }
    let one = match form {
        ResultsFormat::Csv => Some("csv"),
        #[cfg(feature = "parquet")]
        ResultsFormat::Parquet => Some("parquet"),
        _ => None,
    };
    if let Some(name) = one
        && queries != 1
    {
        return Err(format!(
            "--output {name} holds one query's result, and {queries} queries run: choose one \
             with --query, or write them all with --output json"
        )
        .into());
    }
    #[cfg(feature = "parquet")]
    if form == ResultsFormat::Parquet && path.is_none() {
        use std::io::IsTerminal;
        if std::io::stdout().is_terminal() {
            return Err(
                "--output parquet writes a binary file: give --results FILE, or \
                        redirect the standard output to a file"
                    .into(),
            );
        }
    }
    Ok(())
}

/// The queries' results in `form`, as the bytes of a file.
fn render_results(
    form: ResultsFormat,
    timed: &[Timed],
) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    Ok(match form {
        ResultsFormat::Table => timed
            .iter()
            .map(|t| format!("== {} ==\n{}\n", t.query.name(), t.result))
            .collect::<String>()
            .into_bytes(),
        ResultsFormat::Pipe => timed
            .iter()
            .flat_map(|t| {
                std::iter::once(format!("== {}", t.query.name())).chain(t.result.to_lines())
            })
            .map(|l| l + "\n")
            .collect::<String>()
            .into_bytes(),
        ResultsFormat::Json => {
            let all: Vec<_> = timed.iter().map(|t| t.result.to_json()).collect();
            (serde_json::to_string_pretty(&all)? + "\n").into_bytes()
        }
        ResultsFormat::Csv => timed
            .iter()
            .map(|t| t.result.to_csv())
            .collect::<String>()
            .into_bytes(),
        // One query (checked first).
        #[cfg(feature = "parquet")]
        ResultsFormat::Parquet => match timed {
            [t] => super::parquet::result_parquet(&t.result)?,
            _ => return Err("--output parquet holds one query's result".into()),
        },
    })
}

/// One query's result and its timed repetitions (ms).
struct Timed {
    query: Query,
    result: QueryResult,
    ms: Vec<f64>,
}

/// Runs every query once untimed, then `repeat` timed times, checking the results repeat.
fn time_queries(
    eng: &dyn Engine,
    queries: &[Query],
    repeat: usize,
    print: bool,
    rep: Report,
) -> Result<Vec<Timed>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for &q in queries {
        let (result, _) = eng.run_timed(q)?;
        let mut ms = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let (again, t) = eng.run_timed(q)?;
            if again != result {
                return Err(format!("{q}: repetitions gave different results").into());
            }
            ms.push(t);
        }
        if print {
            rep.say(format_args!("\n== {q} ({}) ==\n{result}", eng.name()));
        }
        out.push(Timed {
            query: q,
            result,
            ms,
        });
    }
    Ok(out)
}

fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    (s / n.max(1) as f64).exp()
}

/// Prints the timing table (with model columns when `models` gives, per query, the model
/// time in ms and the thesis' 128-byte-line model time) and returns its records.
fn timing_table(
    device: &str,
    timed: &[Timed],
    models: Option<&[(f64, f64)]>,
    rep: Report,
) -> Vec<Record> {
    let mut records = Vec::new();
    let mut rows = Vec::new();
    for (i, t) in timed.iter().enumerate() {
        let med = median(&t.ms);
        let min = t.ms.iter().copied().fold(f64::NAN, f64::min);
        let (model, lines) = models.map_or((f64::NAN, f64::NAN), |m| m[i]);
        rows.push(vec![
            t.query.name().to_string(),
            device.to_string(),
            t.result.rows.len().to_string(),
            fixed(med, 3),
            fixed(min, 3),
            fixed(model, 3),
            fixed(med / model, 2),
            fixed(lines, 3),
            t.ms.len().to_string(),
        ]);
        records.push(Record::new(
            "ssb",
            device,
            t.query.name(),
            t.result.rows.len() as u64,
            med,
            model,
        ));
    }
    let header = [
        "query",
        "device",
        "rows",
        "median ms",
        "min ms",
        "model ms",
        "ratio",
        "lines ms",
        "reps",
    ];
    rep.say(format_args!("\n{}", markdown_table(&header, rows, 2)));
    let gm = geomean(timed.iter().map(|t| median(&t.ms)));
    if let Some(m) = models {
        let gr = geomean(records.iter().map(|r| r.ratio));
        rep.say(format_args!(
            "geometric mean: {gm:.3} ms, ratio to model {gr:.2}"
        ));
        // The acceptance's mix: the thesis' 128-byte-line models where it gives one (q1.x and
        // q2.1), bytes touched (sectors) for the rest.
        let thesis = |q: Query| matches!(q, Query::Q1_1 | Query::Q1_2 | Query::Q1_3 | Query::Q2_1);
        let mixed = geomean(timed.iter().zip(m).map(|(t, &(sectors, lines))| {
            median(&t.ms) / if thesis(t.query) { lines } else { sectors }
        }));
        rep.say(format_args!(
            "ratio to the thesis' line models for q1.x and q2.1 and sectors for the rest: \
             {mixed:.3}"
        ));
    } else {
        rep.say(format_args!("geometric mean: {gm:.3} ms"));
    }
    records
}

/// The GPU runs `ssb run` adds to the resident engine's.
#[derive(Clone, Copy)]
struct GpuModes<'a> {
    coprocessor: bool,
    /// `--compressed`, with the data directory (its compressed columns, if it has them) and
    /// `--schemes`.
    compressed: Option<(&'a std::path::Path, &'a [PackedScheme])>,
}

/// `--device gpu`: the resident engine against its bytes-touched model (bandwidth measured
/// in this run), then optionally the engine over compressed columns against it and
/// coprocessor mode against its PCIe bound.
fn gpu_run(
    gpu: &Gpu,
    set: &super::data::SsbData,
    queries: &[Query],
    repeat: usize,
    print: bool,
    modes: GpuModes<'_>,
    rep: Report,
) -> Result<(Vec<Timed>, Vec<Record>), Box<dyn std::error::Error>> {
    let GpuModes {
        coprocessor,
        compressed,
    } = modes;
    rep.say(format_args!("device: {} ({})", gpu.name(), gpu.arch()));
    let eng = GpuEngine::new(gpu, set)?;
    let timed = time_queries(&eng, queries, repeat, print, rep)?;
    let (bw, mut records) = measure_bandwidth(gpu, 10)?;
    rep.say(format_args!(
        "\nbandwidth (same run): {bw}; bytes = 32-byte sectors touched (model ms), or the \
         thesis' 128-byte lines (lines ms)"
    ));
    let models: Vec<(f64, f64)> = queries
        .iter()
        .map(|&q| {
            let m = model(set, q);
            (
                bw.model_ms(m.read_bytes, m.written_bytes),
                bw.model_ms(m.line_read_bytes, m.written_bytes),
            )
        })
        .collect();
    records.extend(timing_table(eng.name(), &timed, Some(&models), rep));
    drop(eng);
    let mut encoded = None;
    if let Some((dir, schemes)) = compressed {
        let (recs, cols) =
            compressed_run(gpu, set, (dir, schemes), queries, (repeat, bw), &timed, rep)?;
        records.extend(recs);
        encoded = Some(cols);
    }
    if coprocessor {
        let h2d = h2d_bandwidth(gpu, 5)?;
        rep.say(format_args!(
            "\ncoprocessor mode: columns shipped per query from pinned memory (H2D {h2d:.1} \
             GB/s, same run); bound = shipped bytes / H2D bandwidth"
        ));
        let co = CoprocessorEngine::new(gpu, set)?;
        let (co_timed, recs) =
            coprocessor_table(&co, "ssb coprocessor", (h2d, repeat), &timed, None, rep)?;
        records.extend(recs);
        drop(co);
        if let Some(encoded) = &encoded {
            rep.say(format_args!(
                "\ncoprocessor mode over the compressed columns (each chunk ships its rows' words)"
            ));
            let co = CoprocessorEngine::compressed(gpu, set, encoded)?;
            let label = "ssb coprocessor compressed";
            let (_, recs) =
                coprocessor_table(&co, label, (h2d, repeat), &timed, Some(&co_timed), rep)?;
            records.extend(recs);
        }
    }
    Ok((timed, records))
}

/// Times `co` on the resident run's queries (`resident`, whose answers it must give) and
/// prints each against its PCIe bound; with `plain`, the uncompressed coprocessor's run, also
/// the time the compressed transfers save.
fn coprocessor_table(
    co: &CoprocessorEngine<'_>,
    label: &str,
    (h2d, repeat): (f64, usize),
    resident: &[Timed],
    plain: Option<&[Timed]>,
    rep: Report,
) -> Result<(Vec<Timed>, Vec<Record>), Box<dyn std::error::Error>> {
    let queries: Vec<Query> = resident.iter().map(|t| t.query).collect();
    let timed = time_queries(co, &queries, repeat, false, rep)?;
    let mut header = vec!["query", "median ms", "bound ms", "ratio", "shipped MB"];
    if plain.is_some() {
        header.extend(["uncompressed ms", "speedup"]);
    }
    let mut records = Vec::new();
    let mut rows = Vec::new();
    for (i, (c, r)) in timed.iter().zip(resident).enumerate() {
        if c.result != r.result {
            return Err(format!("{}: {label} and resident results differ", c.query).into());
        }
        let bytes = co.shipped_bytes(c.query) as f64;
        let bound = bytes / h2d / 1e6;
        let med = median(&c.ms);
        let mut row = vec![
            c.query.name().to_string(),
            fixed(med, 3),
            fixed(bound, 3),
            fixed(med / bound, 2),
            fixed(bytes / 1e6, 1),
        ];
        if let Some(p) = plain {
            let pm = median(&p[i].ms);
            row.extend([fixed(pm, 3), fixed(pm / med, 2)]);
        }
        rows.push(row);
        records.push(Record::new(
            label,
            co.name(),
            c.query.name(),
            bytes as u64,
            med,
            bound,
        ));
    }
    rep.say(format_args!("{}", markdown_table(&header, rows, 1)));
    rep.say(format_args!(
        "geometric mean: {:.3} ms",
        geomean(timed.iter().map(|t| median(&t.ms)))
    ));
    Ok((timed, records))
}
