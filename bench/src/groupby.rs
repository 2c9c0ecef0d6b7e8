//! `tessera bench groupby`: the acceptance grouping of issue 22, 2^27 uniformly random `u32`
//! keys below G with `u32` values, count and 64-bit sum, for G from 2 to 10^8: the GPU
//! `group_by` call (the whole call: estimate, the variant its cost model picks, the groups in
//! key order, left on the device as PyTorch's are), each variant by name, and the call with
//! its result brought to the host, against one read of the input, the global-atomics anchor
//! (a global atomic on each row's count and sum, in tables indexed by the key; with the
//! `sweeps` feature, which holds its kernel), PyTorch's `index_add_` and `unique` and
//! DuckDB's `GROUP BY ... ORDER BY` (the CPU anchor, all cores) on the same rows in the same
//! run, and the CPU implementation. Without a GPU it times the CPU implementation and DuckDB.
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, random_vec};
use tessera_host::ops::{Agg, DeviceKeyColumn, DeviceValueColumn, KeyColumn, ValueColumn};
use tessera_host::runtime::{DeviceColumn, Gpu};
use tessera_host::{Result, cpu, gpu_or_skip, ops};

/// Options of `tessera bench groupby`.
#[derive(Clone, Debug, clap::Args)]
pub struct GroupByArgs {
    /// log2 of the number of rows (10..=30).
    #[arg(long, default_value_t = 27, value_parser = clap::value_parser!(u32).range(10..=30))]
    pub log2n: u32,
    /// Group counts G: keys are drawn uniformly below each.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2,100,10000,1000000,100000000"
    )]
    pub groups: Vec<u32>,
    /// How the keys below G are drawn: uniformly, with a heavy hitter (half the rows on key
    /// G / 2, the rest uniform), or Zipf-distributed (key k - 1 with weight 1 / k).
    #[arg(long, value_enum, default_value_t = KeyDist::Uniform)]
    pub dist: KeyDist,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Also time the CPU implementation (all cores; slow at 2^27 rows).
    #[arg(long)]
    pub cpu: bool,
    /// Instead of the G sweep, seed 000's table: the GPU call against the CPU implementation
    /// over 10^3 .. 10^(--max-log10n) rows and 1 .. 4 key columns, and their speedups.
    #[arg(long)]
    pub composite: bool,
    /// log10 of the largest row count of --composite (3..=9).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(3..=9))]
    pub max_log10n: u32,
    /// PyTorch script; "none" to skip.
    #[arg(long, default_value = "benches/torch_groupby.py")]
    pub torch: String,
    /// DuckDB script (the CPU anchor, where `duckdb` is importable); "none" to skip.
    #[arg(long, default_value = "benches/duckdb_groupby.py")]
    pub duckdb: String,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/groupby.json")]
    pub json: PathBuf,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct GroupByReport {
    /// Device name, or "cpu".
    pub device: String,
    /// Rows per grouping.
    pub n: u64,
    /// Bandwidth measured in this run (GPU runs only).
    pub bandwidth: Option<Bandwidth>,
    /// All figures.
    pub records: Vec<Record>,
    /// Why PyTorch figures are missing, if they are.
    pub torch_missing: Option<String>,
    /// Why DuckDB figures are missing, if they are.
    pub duckdb_missing: Option<String>,
}

/// The anchors' scripts, run on the same rows as tessera; each is dropped after its first
/// failure, whose reason the report keeps.
struct Anchors<'a> {
    args: &'a GroupByArgs,
    torch_missing: Option<String>,
    duckdb_missing: Option<String>,
}

impl<'a> Anchors<'a> {
    fn new(args: &'a GroupByArgs, gpu: bool) -> Self {
        let missing =
            |script: &str, option: &str| (script == "none").then(|| format!("{option} none"));
        Anchors {
            args,
            torch_missing: if gpu {
                missing(&args.torch, "--torch")
            } else {
                Some("no GPU".into())
            },
            duckdb_missing: missing(&args.duckdb, "--duckdb"),
        }
    }

    /// The anchors' records for G = `g` (`n` rows, `param` and `model` as tessera's).
    fn records(
        &mut self,
        keys: &[u32],
        values: &[u32],
        g: u32,
        param: &str,
        model: f64,
    ) -> Vec<Record> {
        if self.torch_missing.is_some() && self.duckdb_missing.is_some() {
            return Vec::new();
        }
        let dir = std::env::temp_dir();
        let id = std::process::id();
        let kf = dir.join(format!("tessera-groupby-keys-{id}.bin"));
        let vf = dir.join(format!("tessera-groupby-values-{id}.bin"));
        let write = |f: &PathBuf, d: &[u32]| std::fs::write(f, bytemuck::cast_slice::<u32, u8>(d));
        let mut out = Vec::new();
        if let Err(e) = write(&kf, keys).and_then(|()| write(&vf, values)) {
            let why = format!("writing the rows for the scripts: {e}");
            self.torch_missing.get_or_insert(why.clone());
            self.duckdb_missing.get_or_insert(why);
        }
        let (k, v) = (kf.to_string_lossy(), vf.to_string_lossy());
        let (g, reps) = (g.to_string(), self.args.reps.to_string());
        let script_args = [
            "--keys", &k, "--values", &v, "--groups", &g, "--reps", &reps,
        ];
        let scripts = [
            (&self.args.torch, &mut self.torch_missing, "pytorch"),
            (&self.args.duckdb, &mut self.duckdb_missing, "duckdb"),
        ];
        for (script, missing, prefix) in scripts {
            if missing.is_some() {
                continue;
            }
            match super::torch::run_args(&PathBuf::from(script), &script_args) {
                Ok(ts) => out.extend(ts.into_iter().map(|(name, t)| {
                    let label = format!("{prefix} {name}");
                    Record::new(
                        "groupby_count_sum",
                        &label,
                        param,
                        keys.len() as u64,
                        t,
                        model,
                    )
                })),
                Err(e) => *missing = Some(e),
            }
        }
        let _ = std::fs::remove_file(&kf);
        let _ = std::fs::remove_file(&vf);
        out
    }
}

/// How `tessera bench groupby` draws its keys (issue 22 asks for uniform, heavy-hitter and
/// Zipf keys within 1.5x of each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyDist {
    /// Uniform below G.
    Uniform,
    /// Half the rows on key G / 2, the others uniform below G.
    Heavy,
    /// Key `k - 1` with weight `1 / k`, for `k` in `1 ..= G` (Zipf, exponent 1).
    Zipf,
}

impl KeyDist {
    /// The parameter's prefix: none for uniform keys (the acceptance series).
    fn label(self) -> &'static str {
        match self {
            KeyDist::Uniform => "",
            KeyDist::Heavy => "heavy hitter, ",
            KeyDist::Zipf => "zipf, ",
        }
    }
}

/// `n` keys below `g` drawn as `dist` says (uniform ones by a multiply-high, without modulo
/// bias beyond 2^-32), on all cores.
fn keys_below(n: usize, g: u32, seed: u64, dist: KeyDist) -> Vec<u32> {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use rayon::prelude::*;
    let below = |x: u32| ((x as u64 * g as u64) >> 32) as u32;
    match dist {
        KeyDist::Uniform => random_vec::<u32>(n, seed).into_iter().map(below).collect(),
        KeyDist::Heavy => random_vec::<u32>(n, seed)
            .into_iter()
            .map(|x| if x & 1 == 0 { g / 2 } else { below(x) })
            .collect(),
        KeyDist::Zipf => {
            let zipf = rand_distr::Zipf::new(g as f64, 1.0).expect("g >= 1 and exponent 1");
            let mut v = vec![0u32; n];
            v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
                let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
                c.iter_mut()
                    .for_each(|k| *k = (rng.sample(zipf) as u32).clamp(1, g) - 1);
            });
            v
        }
    }
}

/// The aggregates of the acceptance grouping.
const AGGS: [Agg; 2] = [Agg::Count, Agg::Sum(0)];

fn run_gpu(gpu: &Gpu, args: &GroupByArgs) -> Result<GroupByReport> {
    let n = 1usize << args.log2n;
    let (bw, mut rec) = measure_bandwidth(gpu, args.reps)?;
    let model = bw.model_ms(8.0 * n as f64, 0.0);
    let values = random_vec::<u32>(n, 2);
    let dv = gpu.upload(&values)?;
    let mut anchors = Anchors::new(args, true);
    for &g in &args.groups {
        let keys = keys_below(n, g, 1 + g as u64, args.dist);
        let dk = gpu.upload(&keys)?;
        let (k, v) = ([DeviceKeyColumn::U32(&dk)], [DeviceValueColumn::U32(&dv)]);
        let mut groups = 0;
        let mut chosen = None;
        let t = gpu
            .time(WARMUP, args.reps, || {
                let (r, choice) = ops::group_by_device(gpu, &k, &v, &AGGS)?;
                (groups, chosen) = (r.groups(), Some(choice));
                Ok(())
            })?
            .median_ms();
        let (variant, est) = chosen.map_or(("none".into(), 0), |c| {
            (
                format!(
                    "{:?}{}{}",
                    c.variant,
                    if c.quick { ", quick" } else { "" },
                    if c.dense { ", dense" } else { "" }
                )
                .to_lowercase(),
                c.estimated_groups,
            )
        });
        // The choice goes into the parameter, so that the call is one series over G.
        let param = format!(
            "{}G={g} ({groups} present; chose {variant}, estimate {est})",
            args.dist.label()
        );
        let mut push = |label: &str, t: f64| {
            rec.push(Record::new(
                "groupby_count_sum",
                label,
                &param,
                n as u64,
                t,
                model,
            ));
        };
        push("tessera group_by", t);
        type Variant<'a> = (&'a str, ops::GroupByVariant);
        let variants: [Variant; 3] = [
            ("tessera hash", ops::GroupByVariant::Hash),
            ("tessera partitioned", ops::GroupByVariant::Partitioned),
            ("tessera sort", ops::GroupByVariant::Sort),
        ];
        for (label, variant) in variants {
            let t = gpu
                .time(WARMUP, args.reps, || {
                    let r = match variant {
                        ops::GroupByVariant::Hash => ops::group_by_hash_device(gpu, &k, &v, &AGGS),
                        ops::GroupByVariant::Partitioned => {
                            ops::group_by_partitioned_device(gpu, &k, &v, &AGGS)
                        }
                        ops::GroupByVariant::Sort => ops::group_by_sort_device(gpu, &k, &v, &AGGS),
                    }?;
                    std::hint::black_box(r.groups());
                    Ok(())
                })?
                .median_ms();
            push(label, t);
        }
        // The chosen call with its result brought to the host.
        let t = gpu
            .time(WARMUP, args.reps, || {
                std::hint::black_box(ops::group_by(gpu, &k, &v, &AGGS)?.groups());
                Ok(())
            })?
            .median_ms();
        push("tessera group_by, result on the host", t);
        if let Some(t) = global_atomics(gpu, &dk, &dv, g, args.reps)? {
            push("global atomics (anchor)", t);
        }
        rec.extend(anchors.records(&keys, &values, g, &param, model));
        if args.cpu {
            rec.push(cpu_record(&keys, &values, &param));
        }
    }
    Ok(GroupByReport {
        device: gpu.name().to_string(),
        n: n as u64,
        bandwidth: Some(bw),
        records: rec,
        torch_missing: anchors.torch_missing,
        duckdb_missing: anchors.duckdb_missing,
    })
}

/// The global-atomics anchor on this device: median ms of [`ATOMICS_GROUPBY`] over
/// `keys` (all below `g`) and `values`, into dense tables of `g` counts and sums (zeroed once:
/// the kernel alone is timed, and the tables then hold every run's adds, which the check
/// counts). `None` without the probe kernels (the `sweeps` feature).
///
/// [`ATOMICS_GROUPBY`]: tessera_kernels::ops::atomics::ATOMICS_GROUPBY
fn global_atomics(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    values: &DeviceColumn<u32>,
    g: u32,
    reps: usize,
) -> Result<Option<f64>> {
    #[cfg(not(feature = "sweeps"))]
    {
        let _ = (gpu, keys, values, g, reps);
        Ok(None)
    }
    #[cfg(feature = "sweeps")]
    {
        use tessera_host::runtime::grid_per_sm;
        use tessera_kernels::ops::atomics::ATOMICS_GROUPBY as SPEC;
        let (mut counts, mut sums) = (gpu.zeros::<u32>(g as usize)?, gpu.zeros::<u64>(g as usize)?);
        let n = keys.len() as u32;
        let cfg = grid_per_sm(gpu, &SPEC, keys.len(), 8)?;
        let mut runs = 0u64;
        let t = gpu
            .time(WARMUP, reps, || {
                runs += 1;
                // SAFETY: n keys and values; the keys lie below g (`keys_below`), which the
                // tables cover; any grid.
                unsafe { gpu.launch(&SPEC, cfg, (keys, values, &n, &mut counts, &mut sums)) }
            })?
            .median_ms();
        // Every run's rows landed: the counts add up to the rows, the sums to the values'
        // total.
        let rows: u64 = counts.to_vec(gpu)?.iter().map(|&c| u64::from(c)).sum();
        let total = sums
            .to_vec(gpu)?
            .iter()
            .fold(0u64, |a, &s| a.wrapping_add(s));
        let want: u64 = values.to_vec(gpu)?.iter().map(|&v| u64::from(v)).sum();
        if rows != runs * u64::from(n) || total != want.wrapping_mul(runs) {
            return Err(tessera_host::Error::invalid(format!(
                "the global-atomics anchor at G = {g} counted {rows} rows summing to {total} \
                 over {runs} runs of {n} rows summing to {want} (internal)"
            )));
        }
        Ok(Some(t))
    }
}

/// The CPU implementation (all cores), once.
fn cpu_record(keys: &[u32], values: &[u32], param: &str) -> Record {
    let t = Instant::now();
    let r = cpu::group_by(&[KeyColumn::U32(keys)], &[ValueColumn::U32(values)], &AGGS);
    std::hint::black_box(r.ok());
    let label = format!("cpu sort-based ({} threads)", rayon::current_num_threads());
    let ms = t.elapsed().as_secs_f64() * 1e3;
    Record::new(
        "groupby_count_sum",
        &label,
        param,
        keys.len() as u64,
        ms,
        f64::NAN,
    )
}

/// `--composite`: seed 000's table ([`super::groupby_keys`]).
fn run_composite(args: &GroupByArgs) -> Result<()> {
    let n = 10u64.pow(args.max_log10n);
    // Four key columns (20 bytes), two value columns (12), and the CPU's sort beside them.
    tessera_host::preflight::check_memory(
        48 * n,
        &format!("bench groupby --composite --max-log10n {}", args.max_log10n),
        "pass a smaller --max-log10n",
    )?;
    let gpu = gpu_or_skip("tessera bench groupby --composite");
    let bw = match &gpu {
        Some(gpu) => Some(measure_bandwidth(gpu, args.reps)?),
        None => {
            println!("notice: no GPU found; timing the CPU implementation only");
            None
        }
    };
    let mut records = bw.as_ref().map_or(Vec::new(), |b| b.1.clone());
    let bandwidth = bw.map(|b| b.0);
    records.extend(super::groupby_keys::run(
        gpu.as_ref(),
        bandwidth.as_ref(),
        args.max_log10n,
        args.reps,
    )?);
    let report = GroupByReport {
        device: gpu.as_ref().map_or("cpu".into(), |g| g.name().to_string()),
        n,
        bandwidth,
        records,
        torch_missing: Some("not part of --composite".into()),
        duckdb_missing: Some("not part of --composite".into()),
    };
    super::print_report(
        "groupby --composite",
        &report.device,
        report.n,
        report.bandwidth.as_ref(),
        &report.records,
        None,
    );
    if let Some(table) = super::groupby_keys::speedups(&report.records) {
        let title = "GPU / CPU speedup (the CPU's time over the GPU call's, result on the host)";
        println!("\n## {title}\n{table}");
    }
    super::write_json(&args.json, &report)
}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(args: &GroupByArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    if args.composite {
        return run_composite(args);
    }
    // Keys, values and the CPU's sort of row ids: about 4 columns of 4 bytes.
    tessera_host::preflight::check_memory(
        16u64 << args.log2n,
        &format!("bench groupby --log2n {}", args.log2n),
        "pass a smaller --log2n",
    )?;
    let n = 1usize << args.log2n;
    let report = match gpu_or_skip("tessera bench groupby") {
        Some(gpu) => run_gpu(&gpu, args)?,
        None => {
            println!("notice: no GPU found; timing the CPU implementation and DuckDB only");
            let values = random_vec::<u32>(n, 2);
            let mut anchors = Anchors::new(args, false);
            let mut records = Vec::new();
            for &g in &args.groups {
                let keys = keys_below(n, g, 1 + g as u64, args.dist);
                let param = format!("{}G={g}", args.dist.label());
                records.push(cpu_record(&keys, &values, &param));
                records.extend(anchors.records(&keys, &values, g, &param, f64::NAN));
            }
            GroupByReport {
                device: "cpu".into(),
                n: n as u64,
                bandwidth: None,
                records,
                torch_missing: anchors.torch_missing,
                duckdb_missing: anchors.duckdb_missing,
            }
        }
    };
    super::print_report(
        "groupby",
        &report.device,
        report.n,
        report.bandwidth.as_ref(),
        &report.records,
        report.torch_missing.as_deref(),
    );
    if let Some(why) = &report.duckdb_missing {
        println!("notice: no DuckDB figures: {why}");
    }
    super::write_json(&args.json, &report)
}
