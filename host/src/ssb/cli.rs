//! `tessera ssb ...`: generate, load `.tbl` files, run the queries.
use std::path::PathBuf;
use std::time::Instant;

use super::engine::{Device, engine};
use super::generator::{DEFAULT_SEED, GenConfig, generate};
use super::query::Query;
use super::{format, tbl};

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
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Load dbgen's .tbl files (lineorder, part, supplier, customer, date) into a data directory.
    LoadTbl {
        /// Directory holding the .tbl files.
        dir: PathBuf,
        /// Data directory to write.
        #[arg(long)]
        out: PathBuf,
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
        #[arg(long, value_enum, default_value_t = Device::Cpu)]
        device: Device,
        /// Timed repetitions per query (after one untimed run).
        #[arg(long, default_value_t = 5)]
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
            quiet,
        } => gen_dir(sf, seed, &out, tbl, !quiet)?,
        SsbCmd::LoadTbl { dir, out, quiet } => {
            let t = Instant::now();
            let data = tbl::load_tbl_dir(&dir, !quiet)?;
            format::write_dir(&data, &out)?;
            println!(
                "loaded {} lineorder rows from {} into {} in {:.1} s",
                data.lineorder.len(),
                dir.display(),
                out.display(),
                t.elapsed().as_secs_f64()
            );
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
        } => {
            let queries = Query::parse_list(&query)?;
            if !format::exists(&data) {
                if !gen_if_missing {
                    return Err(format!(
                        "{}: no SSB data here; generate it with `tessera ssb gen --sf 1 --out {0}` \
                         or pass --gen-if-missing",
                        data.display()
                    )
                    .into());
                }
                gen_dir(sf, DEFAULT_SEED, &data, false, !quiet)?;
            }
            let t = Instant::now();
            let set = format::read_dir(&data)?;
            println!(
                "{}: {} lineorder rows (SF {}), read in {:.2} s",
                data.display(),
                set.lineorder.len(),
                set.meta
                    .scale_factor
                    .map_or_else(|| "unknown".into(), |s| s.to_string()),
                t.elapsed().as_secs_f64()
            );
            let eng = engine(device, &set)?;
            let mut timings = Vec::new();
            for q in queries {
                let (result, _) = eng.run_timed(q)?;
                let mut ms = Vec::with_capacity(repeat);
                for _ in 0..repeat {
                    let (again, t) = eng.run_timed(q)?;
                    if again != result {
                        return Err(format!("{q}: repetitions gave different results").into());
                    }
                    ms.push(t);
                }
                if !no_results {
                    println!("\n== {q} ({}) ==\n{result}", eng.name());
                }
                ms.sort_by(f64::total_cmp);
                timings.push((q, result.rows.len(), ms));
            }
            println!(
                "\n{:<6} {:<6} {:>6} {:>11} {:>11} {:>5}",
                "query", "device", "rows", "median ms", "min ms", "reps"
            );
            for (q, rows, ms) in &timings {
                let (median, min) = match ms.len() {
                    0 => (f64::NAN, f64::NAN),
                    n => (ms[n / 2], ms[0]),
                };
                println!(
                    "{:<6} {:<6} {rows:>6} {median:>11.3} {min:>11.3} {:>5}",
                    q.name(),
                    eng.name(),
                    ms.len()
                );
            }
        }
    }
    Ok(())
}

/// Generates scale factor `sf` into `out` (and `.tbl` files into `out/tbl`).
fn gen_dir(
    sf: f64,
    seed: u64,
    out: &std::path::Path,
    tbl_too: bool,
    progress: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let data = generate(&GenConfig { sf, seed, progress })?;
    let generated = t.elapsed().as_secs_f64();
    format::write_dir(&data, out)?;
    println!(
        "generated SF {sf} (seed {seed}): {} lineorder rows in {generated:.1} s, written to {} \
         in {:.1} s",
        data.lineorder.len(),
        out.display(),
        t.elapsed().as_secs_f64() - generated
    );
    if tbl_too {
        let dir = out.join("tbl");
        tbl::write_tbl_dir(&data, &dir, progress)?;
        println!(".tbl files in {}", dir.display());
    }
    Ok(())
}
