//! Benchmark suites: every figure is a median time next to its bandwidth model, the model's
//! bandwidth measured in the same run, and their ratio; a table for people and JSON for
//! machines.
use serde::Serialize;

pub mod compress;
pub mod groupby;
pub mod groupby_keys;
pub mod join;
pub mod lineitem;
pub mod ops;
pub mod ordered;
pub mod pkjoin;
#[cfg(feature = "plot")]
pub mod plot;
pub mod sort;
pub mod topk;
pub mod topk_data;
pub mod topk_multi;
pub mod topk_tweets;
pub(crate) mod torch;
#[cfg(feature = "arrow")]
pub mod transfer;
pub mod tweets;

/// One measured figure.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// Experiment (e.g. `q3_selectivity`).
    pub experiment: String,
    /// Implementation (e.g. `tessera ordered`, `three-kernel`, `pytorch masked_select`).
    pub implementation: String,
    /// Parameter of this point (e.g. `s=0.5`, `NT=128 IPT=4`).
    pub param: String,
    /// Items.
    pub n: u64,
    /// Median time in milliseconds.
    pub median_ms: f64,
    /// Model time in milliseconds (NaN where there is none).
    pub model_ms: f64,
    /// `median_ms / model_ms`.
    pub ratio: f64,
}

impl Record {
    /// A record with its ratio computed.
    pub fn new(
        experiment: &str,
        implementation: &str,
        param: impl Into<String>,
        n: u64,
        median_ms: f64,
        model_ms: f64,
    ) -> Record {
        Record {
            experiment: experiment.into(),
            implementation: implementation.into(),
            param: param.into(),
            n,
            median_ms,
            model_ms,
            ratio: median_ms / model_ms,
        }
    }
}

/// The device's bandwidth and launch latency, measured by our read and copy kernels in the
/// same run; every model of that run is `launch latency + bytes / bandwidth`, so a ratio at
/// 2^16 items means what it means at 2^29.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bandwidth {
    /// Read bandwidth: bytes read over the read kernel's time less the launch latency, GB/s.
    pub read_gbps: f64,
    /// Copy bandwidth: bytes read + written over the copy kernel's time less the launch
    /// latency, GB/s.
    pub copy_gbps: f64,
    /// Write bandwidth derived from the two: written bytes over (copy time - read time).
    pub write_gbps: f64,
    /// Time of the read kernel on one tile: a launch and an almost empty kernel, ms.
    pub launch_ms: f64,
    /// Bytes the read probe read ([`PROBE_ITEMS`] 4-byte items unless the device had less
    /// memory).
    pub probe_bytes: u64,
}

impl Bandwidth {
    /// Model time in ms for one kernel launch that reads `read` and writes `written` bytes once.
    pub fn model_ms(&self, read: f64, written: f64) -> f64 {
        self.launch_ms + (read / self.read_gbps + written / self.write_gbps) / 1e6
    }
}

/// Items of the bandwidth probes: 2^28 4-byte items (1 GiB read, 2 GiB copied), large enough
/// that launch and tail effects are below a percent, as the operator suites' own sizes.
pub const PROBE_ITEMS: usize = 1 << 28;

/// The parser of every suite's `--reps`: 1..=10000 timed repetitions.
pub fn reps_parser() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000)
}

/// Creates the directory of a suite's JSON report and checks that the report can be written
/// there, before the suite runs.
pub fn prepare_json(path: &std::path::Path) -> tessera_host::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(tessera_host::Error::io(dir, "cannot create"))?;
    }
    tessera_host::preflight::check_output_file(path, "--json")
}

/// Writes a suite's report as pretty JSON and says where.
pub fn write_json(path: &std::path::Path, report: &impl Serialize) -> tessera_host::Result<()> {
    save_json(path, report)?;
    println!("\nJSON: {}", path.display());
    Ok(())
}

/// Reports [`save_json`] has written in this process.
static REPORTS_WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many reports this process has written so far: a caller compares the count before and
/// after a suite to tell whether the suite wrote one (one that skipped, without a GPU, writes
/// none). A file's modification time cannot tell: file systems stamp it from a coarser clock
/// than `SystemTime::now()`, so a quick suite's report can carry a time before the suite began.
pub fn reports_written() -> usize {
    REPORTS_WRITTEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes a report as pretty JSON, silently.
pub fn save_json(path: &std::path::Path, report: &impl Serialize) -> tessera_host::Result<()> {
    let text = serde_json::to_string_pretty(report)
        .map_err(|e| tessera_host::Error::Data(format!("serializing the report: {e}")))?;
    std::fs::write(path, text).map_err(tessera_host::Error::io(path, "write failed"))?;
    REPORTS_WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// `n` values drawn uniformly (rand's standard distribution for `T`), generated in parallel
/// in chunks of 2^20 with one seeded generator each: deterministic for `seed` whatever the
/// thread count.
pub fn random_vec<T: Send + Copy + Default>(n: usize, seed: u64) -> Vec<T>
where
    rand::distr::StandardUniform: rand::distr::Distribution<T>,
{
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use rayon::prelude::*;
    let mut v = vec![T::default(); n];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
        let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        c.iter_mut().for_each(|x| *x = rng.random());
    });
    v
}

/// Warm-up runs before every timed series.
pub const WARMUP: usize = 3;

/// Measures the launch latency and the read and copy bandwidth with our probe kernels on
/// [`PROBE_ITEMS`] items (halved while the device lacks the memory): the bandwidth every model
/// of the same run uses, and its three records.
pub fn measure_bandwidth(
    gpu: &tessera_host::Gpu,
    reps: usize,
) -> tessera_host::Result<(Bandwidth, Vec<Record>)> {
    let mut n = PROBE_ITEMS;
    let (src, mut dst) = loop {
        match gpu
            .zeros::<u32>(n)
            .and_then(|a| Ok((a, gpu.zeros::<u32>(n)?)))
        {
            Ok(bufs) => break bufs,
            Err(tessera_host::Error::OutOfMemory { .. }) if n > 1 << 24 => n /= 2,
            Err(e) => return Err(e),
        }
    };
    let mut sum = gpu.zeros::<u64>(1)?;
    let tiny = gpu.zeros::<u32>(1)?;
    let launch_ms = gpu
        .time(WARMUP, reps, || {
            tessera_host::ops::read_sum_into_for_bench(gpu, &tiny, &mut sum)
        })?
        .median_ms();
    let t_read = gpu
        .time(WARMUP, reps, || {
            tessera_host::ops::read_sum_into_for_bench(gpu, &src, &mut sum)
        })?
        .median_ms();
    let t_copy = gpu
        .time(WARMUP, reps, || {
            tessera_host::ops::copy_u32(gpu, &src, &mut dst)
        })?
        .median_ms();
    let bytes = 4.0 * n as f64;
    let read_gbps = bytes / (t_read - launch_ms).max(1e-6) / 1e6;
    let bw = Bandwidth {
        read_gbps,
        copy_gbps: 2.0 * bytes / (t_copy - launch_ms).max(1e-6) / 1e6,
        write_gbps: bytes / (t_copy - t_read).max(1e-6) / 1e6,
        launch_ms,
        probe_bytes: bytes as u64,
    };
    let rec = vec![
        Record::new(
            "bandwidth",
            "launch (read 1 item)",
            "",
            1,
            launch_ms,
            launch_ms,
        ),
        Record::new(
            "bandwidth",
            "read kernel (sum u32)",
            format!("{read_gbps:.0} GB/s"),
            n as u64,
            t_read,
            bw.model_ms(bytes, 0.0),
        ),
        Record::new(
            "bandwidth",
            "copy kernel (u32)",
            format!("{:.0} GB/s", bw.copy_gbps),
            n as u64,
            t_copy,
            bw.model_ms(bytes, bytes),
        ),
    ];
    Ok((bw, rec))
}

impl std::fmt::Display for Bandwidth {
    /// One line for reports: what every model of the run divides by.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "read {:.0} GB/s, copy {:.0} GB/s, write {:.0} GB/s (probes of {} MiB), launch \
             {:.1} us; model = launch + bytes / bandwidth",
            self.read_gbps,
            self.copy_gbps,
            self.write_gbps,
            self.probe_bytes >> 20,
            self.launch_ms * 1e3
        )
    }
}

/// Prints a suite's report: the device and size, the bandwidth of the run, the table, and
/// why PyTorch's figures are missing if they are.
pub fn print_report(
    suite: &str,
    device: &str,
    n: u64,
    bandwidth: Option<&Bandwidth>,
    records: &[Record],
    torch_missing: Option<&str>,
) {
    println!("tessera bench {suite} on {device} ({n} keys)");
    if let Some(bw) = bandwidth {
        println!("bandwidth measured in this run: {bw}");
    }
    print_table(records);
    if let Some(why) = torch_missing {
        println!("\nPyTorch: not measured ({why})");
    }
}

/// Prints records as tables (Markdown, ready for `docs/perf-log.md`), one per experiment.
pub fn print_table(records: &[Record]) {
    // One section per experiment, in order of first appearance, even when a suite measures
    // experiments interleaved (the partition sweep alternates histogram and shuffle).
    let mut order: Vec<&str> = Vec::new();
    for r in records {
        if !order.contains(&r.experiment.as_str()) {
            order.push(&r.experiment);
        }
    }
    for e in order {
        let rows = records.iter().filter(|r| r.experiment == e).map(|r| {
            vec![
                r.implementation.clone(),
                r.param.clone(),
                fixed(r.median_ms, 3),
                fixed(r.model_ms, 3),
                fixed(r.ratio, 2),
            ]
        });
        let header = ["implementation", "param", "median ms", "model ms", "ratio"];
        println!("\n## {e}\n{}", markdown_table(&header, rows, 2));
    }
}

/// `v` with `digits` decimals, or `-` where it is not finite (no model, no ratio).
pub fn fixed(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// A Markdown table (the form `docs/perf-log.md` keeps) of `header` and `rows`, the columns
/// from `right_from` on aligned right (the figures).
pub fn markdown_table(
    header: &[&str],
    rows: impl IntoIterator<Item = Vec<String>>,
    right_from: usize,
) -> comfy_table::Table {
    use comfy_table::{CellAlignment, Table, presets::ASCII_MARKDOWN};
    let mut table = Table::new();
    table.load_style(ASCII_MARKDOWN).set_header(header);
    for row in rows {
        table.add_row(row);
    }
    for c in right_from..header.len() {
        if let Some(col) = table.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}
