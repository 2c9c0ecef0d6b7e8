//! `tessera bench topk`: the thesis' top-k figures (4-10 to 4-16) on this GPU: the k sweep on
//! 2^29 `U(0, 1)` floats, the bitonic ablation, the four distributions, `u32` and `f64` keys,
//! the size sweep, the KV / KKV / KKKV tuples, and the CPU, each algorithm (per-thread top-k and bucket select in the k sweep too)
//! against one read of its input (the bound every top-k meets), with PyTorch's `topk` on the
//! same keys in the same run. Each experiment's "(cost model)" table puts the same times
//! against the model `top_k` chooses by (`ops::model_ms`, `ops::bitonic_model_ms`), with this
//! run's bandwidth.
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::topk_data::Distribution;
use super::{Bandwidth, Record, WARMUP, measure_bandwidth, random_vec};
use tessera_host::ops::{
    BitonicConfig, BitonicKey, BitonicTopK, BucketKey, BucketSelectTopK, PerThreadKey,
    PerThreadTopK, PerThreadVariant, SelectTopK, SortTopK, TopKAlgorithm, TopKDevice, TopKOrder,
    TopKey, bitonic_model_ms, choose, model_ms,
};
use tessera_host::runtime::{DeviceColumn, Gpu, median};
use tessera_host::{Result, cpu, gpu_or_skip};

/// Options of `tessera bench topk`.
#[derive(Clone, Debug, clap::Args)]
pub struct TopKArgs {
    /// log2 of the number of 4-byte keys (16..=30); 8-byte keys are half as many.
    #[arg(long, default_value_t = 29, value_parser = clap::value_parser!(u32).range(16..=30))]
    pub log2n: u32,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Only the k sweep on uniform floats and PyTorch.
    #[arg(long)]
    pub quick: bool,
    /// Skip the CPU heap top-k.
    #[arg(long)]
    pub no_cpu: bool,
    /// Only the distributions experiment (Figure 4-13) on this distribution (uniform, huge,
    /// increasing, bucket-killer): a short run to profile one shape.
    #[arg(long, value_parser = Distribution::parse)]
    pub dist: Option<Distribution>,
    /// PyTorch script; "none" to skip.
    #[arg(long, default_value = "benches/torch_topk.py")]
    pub torch: String,
    /// DuckDB script (the CPU anchor, where `duckdb` is importable); "none" to skip.
    #[arg(long, default_value = "benches/duckdb_topk.py")]
    pub duckdb: String,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/topk.json")]
    pub json: PathBuf,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct TopKReport {
    /// Device name, or "cpu".
    pub device: String,
    /// 4-byte keys of the main experiments.
    pub n: u64,
    /// Bandwidth measured in this run (GPU runs only).
    pub bandwidth: Option<Bandwidth>,
    /// All figures; `model_ms` is one read of the input.
    pub records: Vec<Record>,
    /// Why PyTorch figures are missing, if they are.
    pub torch_missing: Option<String>,
    /// Why DuckDB figures are missing, if they are.
    pub duckdb_missing: Option<String>,
}

/// The k of the sweeps (Figure 4-10: 1 to 1024 by powers of two).
const KS: [usize; 11] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/// The k of the distribution and type experiments.
const FEW_KS: [usize; 3] = [32, 256, 1024];

/// What the suite times on one key column.
struct Bench<'a> {
    gpu: &'a Gpu,
    bw: &'a Bandwidth,
    reps: usize,
    sel: SelectTopK,
    records: Vec<Record>,
}

impl Bench<'_> {
    /// The cost model's device: this run's read and write bandwidth and launch latency, and
    /// the H100's shared-memory bandwidth (not measured).
    fn device(&self) -> TopKDevice {
        TopKDevice {
            read_gbps: self.bw.read_gbps,
            write_gbps: self.bw.write_gbps,
            launch_ms: self.bw.launch_ms,
            ..TopKDevice::H100
        }
    }

    /// Records `ms` for `k` of `n` keys of `key_bytes` against one read of them in
    /// `experiment`, and against the cost model's `model` (if any) in its cost-model table.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        experiment: &str,
        name: &str,
        param: String,
        n: usize,
        key_bytes: usize,
        ms: f64,
        model: Option<f64>,
    ) {
        let read = self.bw.model_ms((n * key_bytes) as f64, 0.0);
        self.records.push(Record::new(
            experiment,
            name,
            param.clone(),
            n as u64,
            ms,
            read,
        ));
        if let Some(model) = model {
            self.records.push(Record::new(
                &format!("{experiment} (cost model)"),
                name,
                param,
                n as u64,
                ms,
                model,
            ));
        }
    }

    /// Times `algorithm` (`None`: the `top_k` call's choice) for `k` of `keys`.
    fn time<K: TopKey>(
        &mut self,
        experiment: &str,
        keys: &DeviceColumn<K>,
        k: usize,
        algorithm: Option<TopKAlgorithm>,
        label: &str,
    ) -> Result<()> {
        let n = keys.len();
        let a = algorithm.unwrap_or_else(|| choose::<K>(n, k));
        let mut sort = SortTopK::new();
        let (gpu, sel) = (self.gpu, &mut self.sel);
        let t = gpu.time(WARMUP, self.reps, || {
            match a {
                TopKAlgorithm::Sort => sort.run(gpu, keys, k, TopKOrder::Largest),
                _ => sel.run(gpu, keys, k, TopKOrder::Largest, a),
            }
            .map(|_| ())
        })?;
        let name = match algorithm {
            None => format!("top_k ({})", a.name()),
            Some(a) => a.name().to_string(),
        };
        let fell = if a == TopKAlgorithm::Threshold && self.sel.fell_back() {
            " fell back"
        } else {
            ""
        };
        let model = model_ms(a, n, size_of::<K>(), k, &self.device());
        self.record(
            experiment,
            &format!("{name}{fell}"),
            format!("{label}k={k}"),
            n,
            size_of::<K>(),
            t.median_ms(),
            Some(model),
        );
        Ok(())
    }
}

impl Bench<'_> {
    /// Times Bitonic Top-K (`config`, the product's by default) for `k` of `keys`.
    fn time_bitonic<K: BitonicKey>(
        &mut self,
        experiment: &str,
        keys: &DeviceColumn<K>,
        k: usize,
        config: Option<BitonicConfig<K>>,
        label: &str,
    ) -> Result<()> {
        let n = keys.len();
        let mut b = BitonicTopK::<K>::new(self.gpu, n)?;
        let name = match config {
            Some(c) => {
                let name = format!("bitonic: {}", c.name);
                b.set_config(c);
                name
            }
            None => "bitonic".to_string(),
        };
        let product = name == "bitonic";
        let gpu = self.gpu;
        let t = gpu.time(WARMUP, self.reps, || {
            b.run(gpu, keys, k, TopKOrder::Largest).map(|_| ())
        })?;
        let model = product.then(|| bitonic_model_ms(n, size_of::<K>(), k, &self.device()));
        self.record(
            experiment,
            &name,
            format!("{label}k={k}"),
            n,
            size_of::<K>(),
            t.median_ms(),
            model,
        );
        Ok(())
    }
}

impl Bench<'_> {
    /// Times per-thread top-k (each variant whose limit takes `k`) and bucket select for `k`
    /// of `keys`, against one read of them (the cost model has no figure for either).
    fn time_alternatives<K: PerThreadKey + BucketKey>(
        &mut self,
        experiment: &str,
        keys: &DeviceColumn<K>,
        k: usize,
        label: &str,
    ) -> Result<()> {
        let (gpu, n) = (self.gpu, keys.len());
        for v in PerThreadVariant::ALL {
            if k > PerThreadTopK::max_k::<K>(gpu, v)? {
                continue;
            }
            let mut p = PerThreadTopK::new(gpu, v)?;
            let t = gpu.time(WARMUP, self.reps, || {
                p.run(gpu, keys, k, TopKOrder::Largest).map(|_| ())
            })?;
            let param = format!("{label}k={k}");
            self.record(
                experiment,
                v.name(),
                param,
                n,
                size_of::<K>(),
                t.median_ms(),
                None,
            );
        }
        let mut b = BucketSelectTopK::new(gpu)?;
        let t = gpu.time(WARMUP, self.reps, || {
            b.run(gpu, keys, k, TopKOrder::Largest).map(|_| ())
        })?;
        let param = format!("{label}k={k}");
        self.record(
            experiment,
            "bucket select",
            param,
            n,
            size_of::<K>(),
            t.median_ms(),
            None,
        );
        Ok(())
    }
}

/// A comparison script's timings of `keys` (written to a temporary file) for each k and
/// prefix length: PyTorch's `topk` or DuckDB's `ORDER BY .. LIMIT`.
fn script_topk<K: bytemuck::Pod>(
    script: &Path,
    keys: &[K],
    dtype: &str,
    ks: &[usize],
    ns: &[usize],
    reps: usize,
) -> std::result::Result<Vec<(usize, usize, f64)>, String> {
    let file = std::env::temp_dir().join(format!("tessera-topk-{}.bin", std::process::id()));
    std::fs::write(&file, bytemuck::cast_slice::<K, u8>(keys)).map_err(|e| e.to_string())?;
    let list = |v: &[usize]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let r = super::torch::run_args(
        script,
        &[
            "--keys",
            &file.to_string_lossy(),
            "--dtype",
            dtype,
            "--ks",
            &list(ks),
            "--ns",
            &list(ns),
            "--reps",
            &reps.to_string(),
        ],
    );
    let _ = std::fs::remove_file(&file);
    let mut out = Vec::new();
    for (name, ms) in r? {
        let mut n = 0;
        let mut k = 0;
        for part in name.split(' ') {
            if let Some(v) = part.strip_prefix("n=") {
                n = v.parse().unwrap_or(0);
            } else if let Some(v) = part.strip_prefix("k=") {
                k = v.parse().unwrap_or(0);
            }
        }
        out.push((n, k, ms));
    }
    Ok(out)
}

/// A comparison script: its path (or "none"), the option that names it, its rows' name.
struct Script<'a> {
    path: &'a str,
    option: &'a str,
    row: &'a str,
}

impl Script<'_> {
    /// PyTorch's `topk`, as `--torch` names it.
    fn torch(args: &TopKArgs) -> Script<'_> {
        Script {
            path: &args.torch,
            option: "--torch",
            row: "pytorch topk",
        }
    }
}

/// Adds a comparison script's figures as records of `experiment`; returns why they are
/// missing, if they are.
#[allow(clippy::too_many_arguments)]
fn script_records<K: bytemuck::Pod>(
    b: &mut Bench<'_>,
    script: &Script<'_>,
    experiment: &str,
    keys: &[K],
    dtype: &str,
    ks: &[usize],
    ns: &[usize],
    label: &str,
) -> Option<String> {
    if script.path == "none" {
        return Some(format!("{} none", script.option));
    }
    match script_topk(Path::new(script.path), keys, dtype, ks, ns, b.reps) {
        Ok(ts) => {
            for (n, k, ms) in ts {
                b.records.push(Record::new(
                    experiment,
                    script.row,
                    format!("{label}k={k}"),
                    n as u64,
                    ms,
                    b.bw.model_ms((n * size_of::<K>()) as f64, 0.0),
                ));
            }
            None
        }
        Err(e) => Some(e),
    }
}

fn run_gpu(gpu: &Gpu, args: &TopKArgs) -> Result<TopKReport> {
    let (bw, mut records) = measure_bandwidth(gpu, args.reps.max(5))?;
    let n = 1usize << args.log2n;
    let mut b = Bench {
        gpu,
        bw: &bw,
        reps: args.reps,
        sel: SelectTopK::new(gpu)?,
        records: Vec::new(),
    };
    let mut torch_missing = None;
    let mut duckdb_missing = Some("--quick or --no-cpu".to_string());
    if let Some(dist) = args.dist {
        let d = gpu.upload(&dist.f32s(n, 2))?;
        let label = format!("{} ", dist.name());
        for k in FEW_KS {
            b.time("distributions_f32", &d, k, None, &label)?;
        }
        records.append(&mut b.records);
        return Ok(TopKReport {
            device: gpu.name().to_string(),
            n: n as u64,
            bandwidth: Some(bw),
            records,
            torch_missing: Some("--dist".to_string()),
            duckdb_missing,
        });
    }

    // Figure 4-10: k from 1 to 1024 on U(0, 1) floats.
    let uniform = Distribution::Uniform.f32s(n, 1);
    let d = gpu.upload(&uniform)?;
    for k in KS {
        b.time("k_sweep_f32", &d, k, None, "")?;
        b.time("k_sweep_f32", &d, k, Some(TopKAlgorithm::Threshold), "")?;
        b.time("k_sweep_f32", &d, k, Some(TopKAlgorithm::RadixSelect), "")?;
        b.time_bitonic("k_sweep_f32", &d, k, None, "")?;
        b.time_alternatives("k_sweep_f32", &d, k, "")?;
    }
    // The ablation's configurations are sweep kernels.
    #[cfg(feature = "sweeps")]
    if !args.quick {
        // The ablation of §4.4.3 at k = 32 and 256, each row adding one optimization.
        for k in [32, 256] {
            for c in BitonicConfig::<f32>::ablation() {
                b.time_bitonic("bitonic_ablation_f32", &d, k, Some(c), "")?;
            }
        }
    }
    for k in [1, 1024] {
        b.time("k_sweep_f32", &d, k, Some(TopKAlgorithm::Sort), "")?;
    }
    let sizes: Vec<usize> = (21..=args.log2n as usize)
        .step_by(2)
        .map(|l| 1usize << l)
        .collect();
    torch_missing = torch_missing.or(script_records(
        &mut b,
        &Script::torch(args),
        "k_sweep_f32",
        &uniform,
        "float32",
        &KS,
        &[n],
        "",
    ));
    if !args.quick {
        // Figure 4-14: sizes 2^21.. at k = 64 (prefixes of the same keys).
        for &m in &sizes {
            let dm = gpu.upload(&uniform[..m])?;
            b.time("size_sweep_k64", &dm, 64, None, "")?;
            b.time(
                "size_sweep_k64",
                &dm,
                64,
                Some(TopKAlgorithm::RadixSelect),
                "",
            )?;
        }
        torch_missing = torch_missing.or(script_records(
            &mut b,
            &Script::torch(args),
            "size_sweep_k64",
            &uniform,
            "float32",
            &[64],
            &sizes,
            "",
        ));
        if !args.no_cpu {
            let mut cpu = cpu_records(b.reps, &uniform, "uniform ");
            b.records.append(&mut cpu);
            let duckdb = Script {
                path: &args.duckdb,
                option: "--duckdb",
                row: "duckdb order by limit",
            };
            duckdb_missing = script_records(
                &mut b,
                &duckdb,
                "cpu",
                &uniform,
                "float32",
                &FEW_KS,
                &[n],
                "uniform ",
            );
        }
    }
    drop(d);
    drop(uniform);
    if !args.quick {
        // Figure 4-13: the other distributions.
        for dist in &Distribution::ALL[1..] {
            let keys = dist.f32s(n, 2);
            let d = gpu.upload(&keys)?;
            let label = format!("{} ", dist.name());
            for k in FEW_KS {
                b.time("distributions_f32", &d, k, None, &label)?;
                b.time(
                    "distributions_f32",
                    &d,
                    k,
                    Some(TopKAlgorithm::RadixSelect),
                    &label,
                )?;
            }
            if *dist == Distribution::Increasing && !args.no_cpu {
                let mut cpu = cpu_records(b.reps, &keys, "increasing ");
                b.records.append(&mut cpu);
            }
        }
        // Figures 4-11 and 4-12: u32 keys below 2^31 and f64 keys (half as many).
        let u: Vec<u32> = random_vec::<u32>(n, 3).iter().map(|x| x >> 1).collect();
        torch_missing = torch_missing.or(key_type(&mut b, args, "k_sweep_u32", &u, "uint32")?);
        drop(u);
        let f: Vec<f64> = random_vec::<f64>(n / 2, 4);
        torch_missing = torch_missing.or(key_type(&mut b, args, "k_sweep_f64", &f, "float64")?);
        drop(f);
        // Figure 4-15: KV, KKV and KKKV tuples.
        let mut multi = super::topk_multi::run_multi(gpu, &bw, args.log2n, args.reps)?;
        b.records.append(&mut multi);
    }
    records.append(&mut b.records);
    Ok(TopKReport {
        device: gpu.name().to_string(),
        n: n as u64,
        bandwidth: Some(bw),
        records,
        torch_missing,
        duckdb_missing,
    })
}

/// The `top_k` call, radix select and PyTorch on `keys` (`dtype` for the script) at the few
/// k; returns why PyTorch's figures are missing, if they are.
fn key_type<K: TopKey + bytemuck::Pod>(
    b: &mut Bench<'_>,
    args: &TopKArgs,
    experiment: &str,
    keys: &[K],
    dtype: &str,
) -> Result<Option<String>> {
    let d = b.gpu.upload(keys)?;
    for k in FEW_KS {
        b.time(experiment, &d, k, None, "")?;
        b.time(experiment, &d, k, Some(TopKAlgorithm::RadixSelect), "")?;
    }
    drop(d);
    Ok(script_records(
        b,
        &Script::torch(args),
        experiment,
        keys,
        dtype,
        &FEW_KS,
        &[keys.len()],
        "",
    ))
}

/// The CPU heap and bitonic top-k (all cores) on `keys`, a few repetitions per k.
fn cpu_records(reps: usize, keys: &[f32], label: &str) -> Vec<Record> {
    type CpuTopK = fn(&[f32], usize, TopKOrder) -> Result<tessera_host::ops::TopKRows<f32>>;
    let threads = rayon::current_num_threads();
    let mut records = Vec::new();
    for k in FEW_KS {
        for (name, f) in [
            ("heap", cpu::top_k as CpuTopK),
            ("bitonic", cpu::top_k_bitonic as CpuTopK),
        ] {
            let samples: Vec<f64> = (0..reps.clamp(1, 3))
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(f(keys, k, TopKOrder::Largest).ok());
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            records.push(Record::new(
                "cpu",
                &format!("cpu {name} ({threads} threads)"),
                format!("{label}k={k}"),
                keys.len() as u64,
                median(&samples),
                f64::NAN,
            ));
        }
    }
    records
}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(args: &TopKArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    // The keys, the sort's copies (keys, two row columns, its temporaries) and the host's
    // copy: about 8 columns of 4 bytes.
    tessera_host::preflight::check_memory(
        32u64 << args.log2n,
        &format!("bench topk --log2n {}", args.log2n),
        "pass a smaller --log2n",
    )?;
    let report = match gpu_or_skip("tessera bench topk") {
        Some(gpu) => run_gpu(&gpu, args)?,
        None => {
            println!("notice: no GPU found; timing the CPU top-k only");
            let n = 1usize << args.log2n;
            let keys = Distribution::Uniform.f32s(n, 1);
            let records = cpu_records(1, &keys, "uniform ");
            TopKReport {
                device: "cpu".into(),
                n: n as u64,
                bandwidth: None,
                records,
                torch_missing: Some("no GPU".into()),
                duckdb_missing: Some("no GPU".into()),
            }
        }
    };
    super::print_report(
        "topk",
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
