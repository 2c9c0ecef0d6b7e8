//! `tessera bench join`: the thesis' join microbenchmark Q4 (Figure 3-12),
//! `SELECT SUM(A.v + B.v) FROM A, B WHERE A.k = B.k`, with a probe table of `2^28` tuples and
//! hash tables from 8 KB to 1 GB at 50% fill, next to the cache-aware model of §3.6.3; the build
//! times; the CPU join on a smaller probe table; and the primary-key join figures.
//!
//! The model is §3.6.3's, with its constant `C` = the cache line a probe touches, 128 bytes on
//! NVIDIA GPUs ("every random access to memory ends up reading an entire cache line"; "the
//! granularity of reads from global memory is 128B on GPU"). `P` probe tuples, `H` table bytes,
//! `B_r` the DRAM read bandwidth and `B_L2` the L2 read bandwidth, both measured in this run,
//! `B_L1 = SMs * 128 B * clock`, `S_L1` = 256 KB (an SM's L1), `S_L2` from the device:
//! * `H <= S_L1` (level K = L1): `max(8P / B_r, P * C / B_L1)`.
//! * `S_L1 < H <= S_L2` (K = L2): `max(8P / B_r, (1 - pi_1) * P * C / B_L2)`, `pi_1 = S_L1 / H`.
//! * `H > S_L2`: `8P / B_r + (1 - pi_2) * P * C / B_r`, `pi_2 = S_L2 / H`.
//!
//! On the H100 the L2 and DRAM regimes track this with `C = 128` (a scattered 32-byte sector
//! costs an L2 request slot like a full line), not with `C = 32`.
//!
//! Tables that [`ProbePath::Auto`] stages in shared memory (up to
//! [`ops::shared_table_limit`], 227 KB on an H100: 8-128 KB of the sweep) are labelled
//! "smem table" and their ratio is against the streaming read of the probe columns, `8P / B_r`
//! (each block's one copy of the table is negligible); `fig3_12_smem_vs_global` prints the same
//! time against the thesis model, and the global-memory probe of those tables for comparison.
use std::path::PathBuf;
use std::time::Instant;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use rayon::prelude::*;
use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, print_table, random_vec};
use tessera_host::Error;
use tessera_host::cpu::{self, CpuHashTable};
use tessera_host::ops::{self, HashTable, JoinAggregate, ProbePath, TableOptions};
use tessera_host::runtime::{Gpu, median};

/// Options of `tessera bench join`.
#[derive(Clone, Debug, clap::Args)]
pub struct JoinArgs {
    /// log2 of the probe-table tuples (the thesis: 28, 256M tuples; 10..=31).
    #[arg(long, default_value_t = 28, value_parser = clap::value_parser!(u32).range(10..=31))]
    pub log2_probe: u32,
    /// Smallest hash table, KB.
    #[arg(long, default_value_t = 8)]
    pub min_table_kb: u64,
    /// Largest hash table, MB.
    #[arg(long, default_value_t = 1024)]
    pub max_table_mb: u64,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// log2 of the probe tuples of the CPU join (10..=31).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(10..=31))]
    pub cpu_log2_probe: u32,
    /// Skip the CPU join.
    #[arg(long)]
    pub no_cpu: bool,
    /// Skip the primary-key join figures (sample-sort join against the hash join).
    #[arg(long)]
    pub no_pk: bool,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/join.json")]
    pub json: PathBuf,
}

/// The constants of the cache model, as used in this run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CacheModel {
    /// Bytes per probe at every level (`C`, one cache line).
    pub line_bytes: f64,
    /// L1 size per SM (bytes).
    pub l1_bytes: f64,
    /// L2 size (bytes), from the device.
    pub l2_bytes: f64,
    /// Aggregate L1 bandwidth, GB/s (SMs * 128 B * clock).
    pub l1_gbps: f64,
    /// L2 read bandwidth measured in this run, GB/s.
    pub l2_gbps: f64,
    /// DRAM read bandwidth measured in this run, GB/s.
    pub read_gbps: f64,
    /// Launch latency measured in this run, ms: every model time starts with one launch.
    pub launch_ms: f64,
}

impl CacheModel {
    /// Model time (ms) of probing a table of `h` bytes with `p` tuples.
    pub fn probe_ms(&self, p: f64, h: f64) -> f64 {
        let stream = 8.0 * p / self.read_gbps;
        let ns = if h <= self.l1_bytes {
            stream.max(p * self.line_bytes / self.l1_gbps)
        } else if h <= self.l2_bytes {
            let pi1 = self.l1_bytes / h;
            stream.max((1.0 - pi1) * p * self.line_bytes / self.l2_gbps)
        } else {
            let pi2 = self.l2_bytes / h;
            stream + (1.0 - pi2) * p * self.line_bytes / self.read_gbps
        };
        self.launch_ms + ns / 1e6
    }

    /// Model time (ms) of streaming `p` probe tuples (key and value) once: the probe of a
    /// table staged in shared memory, whose one copy per block is negligible.
    pub fn stream_ms(&self, p: f64) -> f64 {
        self.launch_ms + 8.0 * p / self.read_gbps / 1e6
    }

    /// Model time (ms) of building a table of `h` bytes from `rows` rows: clear the slots, read
    /// the build side, and one line per insert that misses L2.
    pub fn build_ms(&self, bw: &Bandwidth, rows: f64, h: f64) -> f64 {
        let miss = 1.0 - (self.l2_bytes / h).min(1.0);
        bw.model_ms(8.0 * rows, h) + miss * rows * self.line_bytes / self.read_gbps / 1e6
    }
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct JoinReport {
    /// Device name.
    pub device: String,
    /// Probe tuples.
    pub probe_tuples: u64,
    /// Bandwidth measured in this run.
    pub bandwidth: Bandwidth,
    /// The model's constants.
    pub model: CacheModel,
    /// All figures.
    pub records: Vec<Record>,
    /// Largest probe time / model over the tables that fit in L2 (the acceptance figure; the
    /// streaming model for tables staged in shared memory).
    pub worst_resident_ratio: f64,
    /// Why some figures are missing, if they are.
    pub notes: Vec<String>,
}

const EXPERIMENT: &str = "fig3_12_join_q4";
/// The tables the probe stages in shared memory, against the thesis' model, next to the probe
/// that reads them from global memory.
const PATHS: &str = "fig3_12_smem_vs_global";

fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("H={}MB", bytes >> 20)
    } else {
        format!("H={}KB", bytes >> 10)
    }
}

/// Probe keys `1 + (r & (rows - 1))` (all match dense build keys `1..=rows`), values, and the
/// exact Q4 result for build payloads `key ^ 0x5555`.
fn probe_side(r: &[u32], values: &[u32], rows: u32) -> (Vec<u32>, u64) {
    let keys: Vec<u32> = r.par_iter().map(|&x| 1 + (x & (rows - 1))).collect();
    let sum = keys
        .par_iter()
        .zip(values)
        .map(|(&k, &v)| v as u64 + (k ^ 0x5555) as u64)
        .reduce(|| 0, u64::wrapping_add);
    (keys, sum)
}

/// Table sizes of the sweep: powers of two from `min_kb` KB to `max_mb` MB.
fn table_sizes(args: &JoinArgs) -> Vec<u64> {
    let (lo, hi) = (
        args.min_table_kb.max(1) << 10,
        args.max_table_mb.max(1) << 20,
    );
    let mut v = Vec::new();
    let mut h = lo.next_power_of_two();
    while h <= hi {
        v.push(h);
        h *= 2;
    }
    v
}

fn attribute(gpu: &Gpu, a: Attr) -> tessera_host::Result<i32> {
    gpu.context()
        .attribute(a)
        .map_err(Error::driver("querying a device attribute", 0))
}

/// Runs the suite on `gpu`.
pub fn run_gpu(gpu: &Gpu, args: &JoinArgs) -> tessera_host::Result<JoinReport> {
    if !(10..=30).contains(&args.log2_probe) {
        return Err(Error::invalid(format!(
            "--log2-probe {} is outside 10..=30",
            args.log2_probe
        )));
    }
    let p = 1usize << args.log2_probe;
    let reps = args.reps.max(1);
    let mut notes = Vec::new();
    let r = random_vec::<u32>(p, 1);
    let values = random_vec::<u32>(p, 2);
    let (bw, mut rec) = measure_bandwidth(gpu, reps)?;
    let (l2_bytes_read, l2_ms) = ops::l2_read_bandwidth(gpu, 8 << 20, reps)?;
    let sms = gpu.sm_count() as f64;
    let clock_khz = attribute(gpu, Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as f64;
    let model = CacheModel {
        line_bytes: 128.0,
        l1_bytes: 256.0 * 1024.0,
        l2_bytes: attribute(gpu, Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as f64,
        l1_gbps: sms * 128.0 * clock_khz * 1e3 / 1e9,
        l2_gbps: l2_bytes_read / l2_ms / 1e6,
        read_gbps: bw.read_gbps,
        launch_ms: bw.launch_ms,
    };
    rec.push(Record::new(
        "bandwidth",
        "L2 read kernel (8 MB resident)",
        format!("{:.0} GB/s", model.l2_gbps),
        (l2_bytes_read / 4.0) as u64,
        l2_ms,
        l2_bytes_read / model.l2_gbps / 1e6,
    ));

    let dvalues = gpu.upload(&values)?;
    let mut q = JoinAggregate::new(gpu)?;
    let mut q_global = JoinAggregate::with_path(gpu, ProbePath::Global)?;
    let mut worst_resident_ratio = f64::NAN;
    for h in table_sizes(args) {
        let capacity = (h / 8) as usize;
        let rows = (capacity / 2) as u32;
        let build: Vec<u32> = (1..=rows).collect();
        let payloads: Vec<u32> = build.iter().map(|k| k ^ 0x5555).collect();
        let (dk, dp) = (gpu.upload(&build)?, gpu.upload(&payloads)?);
        let opts = TableOptions {
            capacity: Some(capacity),
            ..TableOptions::default()
        };
        let mut table = match HashTable::build(gpu, &dk, Some(&dp), opts) {
            Ok(t) => t,
            Err(Error::OutOfMemory { .. }) => {
                notes.push(format!("{}: out of device memory", size_label(h)));
                break;
            }
            Err(e) => return Err(e),
        };
        let t_build = gpu
            .time(WARMUP, reps, || {
                table.clear(gpu)?;
                table.insert(gpu, &dk, Some(&dp))
            })?
            .median_ms();
        let (keys, expected) = probe_side(&r, &values, rows);
        let dkeys = gpu.upload(&keys)?;
        drop(keys);
        let probe_ms = |q: &mut JoinAggregate| -> tessera_host::Result<f64> {
            let t = gpu
                .time(WARMUP, reps, || q.launch(gpu, &table, &dkeys, &dvalues))?
                .median_ms();
            let got = q.finish(gpu)?;
            if got.count != p as u64 || got.sum != expected {
                return Err(Error::invalid(format!(
                    "join bench {}: GPU result {got:?} differs from the expected sum {expected} \
                     over {p} matches",
                    size_label(h)
                )));
            }
            Ok(t)
        };
        let t = probe_ms(&mut q)?;
        let thesis_ms = model.probe_ms(p as f64, h as f64);
        let shared = q.path_for(gpu, &table, p)? == ProbePath::Shared;
        let probe = if shared {
            // The table is read once per block: what remains is streaming the probe columns.
            let stream_ms = model.stream_ms(p as f64);
            let t_global = probe_ms(&mut q_global)?;
            rec.push(Record::new(
                PATHS,
                "smem table vs thesis model",
                size_label(h),
                p as u64,
                t,
                thesis_ms,
            ));
            rec.push(Record::new(
                PATHS,
                "global table vs thesis model",
                size_label(h),
                p as u64,
                t_global,
                thesis_ms,
            ));
            Record::new(
                EXPERIMENT,
                "probe, smem table (stream)",
                size_label(h),
                p as u64,
                t,
                stream_ms,
            )
        } else {
            Record::new(
                EXPERIMENT,
                "probe, global table (cache)",
                size_label(h),
                p as u64,
                t,
                thesis_ms,
            )
        };
        if h as f64 <= model.l2_bytes {
            worst_resident_ratio = probe.ratio.max(worst_resident_ratio);
        }
        rec.push(probe);
        rec.push(Record::new(
            "join_build",
            "tessera build (clear + insert)",
            size_label(h),
            rows as u64,
            t_build,
            model.build_ms(&bw, rows as f64, h as f64),
        ));
    }
    drop((dvalues, q, q_global));

    if !args.no_cpu {
        rec.extend(cpu_records(args, reps)?);
    }
    if !args.no_pk {
        gpu.synchronize()?;
        rec.extend(super::pkjoin::measure(gpu, reps)?);
    }
    Ok(JoinReport {
        device: gpu.name().to_string(),
        probe_tuples: p as u64,
        bandwidth: bw,
        model,
        records: rec,
        worst_resident_ratio,
        notes,
    })
}

/// The CPU join (shared table, all threads) on `2^cpu_log2_probe` tuples, a few table sizes.
fn cpu_records(args: &JoinArgs, reps: usize) -> tessera_host::Result<Vec<Record>> {
    let p = 1usize << args.cpu_log2_probe.clamp(10, 30);
    let r = random_vec::<u32>(p, 3);
    let values = random_vec::<u32>(p, 4);
    let threads = rayon::current_num_threads();
    let mut out = Vec::new();
    for h in table_sizes(args)
        .into_iter()
        .filter(|h| [8 << 10, 256 << 10, 4 << 20, 64 << 20].contains(h))
    {
        let capacity = (h / 8) as usize;
        let rows = (capacity / 2) as u32;
        let build: Vec<u32> = (1..=rows).collect();
        let payloads: Vec<u32> = build.iter().map(|k| k ^ 0x5555).collect();
        let opts = TableOptions {
            capacity: Some(capacity),
            ..TableOptions::default()
        };
        let t0 = Instant::now();
        let table = CpuHashTable::build(&build, Some(&payloads), opts)?;
        let t_build = t0.elapsed().as_secs_f64() * 1e3;
        let (keys, expected) = probe_side(&r, &values, rows);
        let mut samples = Vec::new();
        for _ in 0..reps.clamp(1, 5) {
            let t0 = Instant::now();
            let got = cpu::join_sum(&table, &keys, &values)?;
            samples.push(t0.elapsed().as_secs_f64() * 1e3);
            if got.sum != expected || got.count != p as u64 {
                return Err(Error::invalid("CPU join bench: wrong result"));
            }
        }
        out.push(Record::new(
            "cpu_join_q4",
            &format!("cpu probe ({threads} threads)"),
            size_label(h),
            p as u64,
            median(&samples),
            f64::NAN,
        ));
        out.push(Record::new(
            "cpu_join_q4",
            &format!("cpu build ({threads} threads)"),
            size_label(h),
            rows as u64,
            t_build,
            f64::NAN,
        ));
    }
    Ok(out)
}

/// Prints the report: constants, the table, the headline.
pub fn print_report(r: &JoinReport) {
    let m = &r.model;
    println!(
        "# tessera bench join on {} ({} probe tuples)",
        r.device, r.probe_tuples
    );
    println!(
        "bandwidth measured in this run: {}; L2 read {:.0} GB/s",
        r.bandwidth, m.l2_gbps
    );
    println!(
        "model constants: C = {} B per probe (cache line), S_L1 = {} KB per SM, S_L2 = {:.1} MB, \
         B_L1 = {:.0} GB/s (SMs x 128 B x clock)",
        m.line_bytes,
        m.l1_bytes / 1024.0,
        m.l2_bytes / (1 << 20) as f64,
        m.l1_gbps
    );
    let mut records = r.records.clone();
    records.sort_by(|a, b| a.experiment.cmp(&b.experiment)); // stable: sweep order kept
    print_table(&records);
    let probe: Vec<&Record> = r
        .records
        .iter()
        .filter(|x| x.experiment == EXPERIMENT)
        .collect();
    println!("\n## headline");
    println!(
        "worst time/model with an L2-resident table: {:.2}",
        r.worst_resident_ratio
    );
    for w in probe.windows(2) {
        if w[1].median_ms > 1.5 * w[0].median_ms {
            println!(
                "step: {} -> {}: {:.3} ms -> {:.3} ms",
                w[0].param, w[1].param, w[0].median_ms, w[1].median_ms
            );
        }
    }
    for n in &r.notes {
        println!("note: {n}");
    }
}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(args: &JoinArgs) -> tessera_host::Result<()> {
    if args.min_table_kb == 0 || args.min_table_kb > args.max_table_mb.saturating_mul(1024) {
        return Err(Error::invalid(format!(
            "--min-table-kb {} and --max-table-mb {}: need 0 < min <= max",
            args.min_table_kb, args.max_table_mb
        )));
    }
    super::prepare_json(&args.json)?;
    if !args.no_cpu {
        // The CPU join's probe keys and values and its table: about 4 columns of 4 bytes.
        tessera_host::preflight::check_memory(
            16u64 << args.cpu_log2_probe,
            &format!("--cpu-log2-probe {}", args.cpu_log2_probe),
            "pass a smaller --cpu-log2-probe or --no-cpu",
        )?;
    }
    match tessera_host::gpu_or_skip("tessera bench join") {
        Some(gpu) => {
            let report = run_gpu(&gpu, args)?;
            print_report(&report);
            super::write_json(&args.json, &report)
        }
        None => {
            println!("notice: no GPU found; timing the CPU join only");
            let records = cpu_records(args, args.reps)?;
            super::print_table(&records);
            let report = serde_json::json!({ "device": "cpu", "records": records });
            super::write_json(&args.json, &report)
        }
    }
}
