//! `tessera bench ops`: the thesis' chapter-3 microbenchmarks (Figures 3-8, 3-9, 3-11) at 2^29
//! items by default, with the bandwidth probes, the three-kernel baseline and PyTorch.
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;
use tessera_kernels::ops::select::SelectArgs;
#[cfg(feature = "sweeps")]
use tessera_kernels::ops::select::sweep;
use tessera_kernels::spec::KernelSpec;

use super::{Bandwidth, Record, print_table, torch};
use tessera_host::ops::{self, Predicate, SelectVariant, Selection, ThreeKernelSelect};
use tessera_host::runtime::{Gpu, median};
use tessera_host::{Result, cpu};

/// Options of `tessera bench ops`.
#[derive(Clone, Debug, clap::Args)]
pub struct OpsArgs {
    /// log2 of the items per column (10..=31).
    #[arg(long, default_value_t = 29, value_parser = clap::value_parser!(u32).range(10..=31))]
    pub log2n: u32,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Only s = 0.5 and the default tile (skip the sweeps).
    #[arg(long)]
    pub quick: bool,
    /// Skip the CPU implementations.
    #[arg(long)]
    pub no_cpu: bool,
    /// PyTorch script; "none" to skip.
    #[arg(long, default_value = "benches/torch_ops.py")]
    pub torch: String,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/ops.json")]
    pub json: PathBuf,
}

/// Runs the suite (the CPU implementations alone where there is no GPU), prints its table and
/// writes its JSON.
pub fn run(args: &OpsArgs) -> Result<()> {
    let cfg = OpsConfig {
        log2n: args.log2n,
        reps: args.reps,
        sweeps: !args.quick,
        cpu: !args.no_cpu,
        torch_script: (args.torch != "none").then(|| PathBuf::from(&args.torch)),
    };
    super::prepare_json(&args.json)?;
    // Two input columns, the output and the CPU's copies: about 5 columns of 4-byte items.
    let n = 1u64 << args.log2n;
    tessera_host::preflight::check_memory(
        5 * 4 * n,
        &format!("bench ops --log2n {}", args.log2n),
        "pass a smaller --log2n",
    )?;
    let report = match tessera_host::gpu_or_skip("tessera bench ops") {
        Some(gpu) => run_gpu(&gpu, &cfg)?,
        None => {
            println!("notice: no GPU found; timing the CPU implementations only");
            run_cpu(&cfg)
        }
    };
    print_report(&report);
    super::write_json(&args.json, &report)
}

/// What to run.
#[derive(Clone, Debug)]
pub struct OpsConfig {
    /// log2 of the number of items.
    pub log2n: u32,
    /// Timed repetitions per point (after 3 warm-up runs).
    pub reps: usize,
    /// Run the selectivity and tile sweeps (otherwise only s = 0.5 and the default tile).
    pub sweeps: bool,
    /// Time the CPU implementations too.
    pub cpu: bool,
    /// PyTorch script; `None` skips PyTorch.
    pub torch_script: Option<PathBuf>,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct OpsReport {
    /// Device name, or "cpu".
    pub device: String,
    /// Items per column.
    pub n: u64,
    /// Bandwidth measured in this run (GPU runs only).
    pub bandwidth: Option<Bandwidth>,
    /// All figures.
    pub records: Vec<Record>,
    /// Why PyTorch figures are missing, if they are.
    pub torch_missing: Option<String>,
}

/// `n` floats uniform in [0, 1), generated in parallel, deterministic for `seed`.
pub fn uniform_f32(n: usize, seed: u64) -> Vec<f32> {
    super::random_vec(n, seed)
}

use super::WARMUP;

/// Times `cpu_work` (a few runs: the CPU side is slow at these sizes).
fn cpu_ms(reps: usize, mut work: impl FnMut()) -> f64 {
    let samples: Vec<f64> = (0..reps.clamp(1, 5))
        .map(|_| {
            let t = Instant::now();
            work();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median(&samples)
}

/// The kernels of the select tile sweep (Figure 3-8), in the PTX with the `sweeps` feature.
fn select_sweep() -> Vec<KernelSpec<SelectArgs<i32>>> {
    #[cfg(feature = "sweeps")]
    let all = sweep::ALL.to_vec();
    #[cfg(not(feature = "sweeps"))]
    let all = Vec::new();
    all
}

/// Runs the suite on `gpu`.
pub fn run_gpu(gpu: &Gpu, cfg: &OpsConfig) -> Result<OpsReport> {
    let n = 1usize << cfg.log2n;
    let nf = n as f64;
    let reps = cfg.reps;
    let mut rec = Vec::new();
    let x1 = uniform_f32(n, 1);
    let x2 = uniform_f32(n, 2);
    let d1 = gpu.upload(&x1)?;
    let d2 = gpu.upload(&x2)?;

    let (bw, probes) = super::measure_bandwidth(gpu, reps)?;
    rec.extend(probes);

    // Q3: SELECT y WHERE y < v (f32), selectivity sweep, three variants and the baseline.
    let mut sel = Selection::<f32>::new(gpu, n)?;
    let mut three = ThreeKernelSelect::new(gpu, n)?;
    let points: Vec<f32> = if cfg.sweeps {
        (0..=10).map(|i| i as f32 / 10.0).collect()
    } else {
        vec![0.5]
    };
    for &s in &points {
        let p = Predicate::lt(s);
        for (name, variant) in [
            ("tessera ordered (If)", SelectVariant::Ordered),
            ("tessera ordered (Pred)", SelectVariant::Predicated),
            ("tessera unordered", SelectVariant::Unordered),
        ] {
            let t = gpu
                .time(WARMUP, reps, || sel.launch(gpu, &d1, p, variant))?
                .median_ms();
            let k = sel.finish(gpu)? as f64;
            rec.push(Record::new(
                "q3_select_f32",
                name,
                format!("s={s:.1}"),
                n as u64,
                t,
                bw.model_ms(4.0 * nf, 4.0 * k),
            ));
        }
        let t = gpu
            .time(WARMUP, reps, || three.launch(gpu, &d1, p))?
            .median_ms();
        let k = (x1.len() as f64) * s as f64;
        rec.push(Record::new(
            "q3_select_f32",
            "three-kernel baseline",
            format!("s={s:.1}"),
            n as u64,
            t,
            bw.model_ms(4.0 * nf, 4.0 * k),
        ));
    }
    drop(three);
    drop(sel);

    // Q0: SELECT y WHERE y > v (i32) at s = 0.5; tile configuration sweep (Figure 3-8).
    let yi: Vec<i32> = x1.par_iter().map(|&f| (f * 1_000_000.0) as i32).collect();
    let dy = gpu.upload(&yi)?;
    let p0 = Predicate::gt(499_999);
    let mut sel = Selection::<i32>::new(gpu, n)?;
    let specs = if cfg.sweeps { select_sweep() } else { vec![] };
    for (name, spec) in std::iter::once((
        "tessera default",
        <i32 as ops::SelectItem>::spec(SelectVariant::Ordered),
    ))
    .chain(specs.into_iter().map(|s| ("tessera sweep", s)))
    {
        let t = gpu
            .time(WARMUP, reps, || sel.launch_spec(gpu, &dy, p0, spec, false))?
            .median_ms();
        let k = sel.finish(gpu)? as f64;
        rec.push(Record::new(
            "q0_select_i32_tiles",
            name,
            format!("NT={} IPT={}", spec.threads(), spec.items_per_thread()),
            n as u64,
            t,
            bw.model_ms(4.0 * nf, 4.0 * k),
        ));
    }
    // Q0 with two predicates: x > w AND y > v, each 0.5.
    let xi: Vec<i32> = x2.par_iter().map(|&f| (f * 1_000_000.0) as i32).collect();
    let dx = gpu.upload(&xi)?;
    let t = gpu
        .time(WARMUP, reps, || sel.launch2(gpu, &dx, p0, &dy, p0))?
        .median_ms();
    let k = sel.finish(gpu)? as f64;
    rec.push(Record::new(
        "q0_select2_i32",
        "tessera",
        "s=0.5*0.5",
        n as u64,
        t,
        bw.model_ms(8.0 * nf, 4.0 * k),
    ));
    drop((sel, dx, dy, xi, yi));

    // Q1 and Q2 (Figure 3-9).
    let mut out = gpu.zeros::<f32>(n)?;
    let t = gpu
        .time(WARMUP, reps, || {
            ops::project_linear_into(gpu, &d1, &d2, 2.0, 3.0, &mut out)
        })?
        .median_ms();
    rec.push(Record::new(
        "project",
        "tessera Q1 a*x1+b*x2",
        "",
        n as u64,
        t,
        bw.model_ms(8.0 * nf, 4.0 * nf),
    ));
    let t = gpu
        .time(WARMUP, reps, || {
            ops::project_sigmoid_into(gpu, &d1, &d2, 2.0, 3.0, &mut out)
        })?
        .median_ms();
    rec.push(Record::new(
        "project",
        "tessera Q2 sigmoid",
        "",
        n as u64,
        t,
        bw.model_ms(8.0 * nf, 4.0 * nf),
    ));
    drop(out);
    drop((d1, d2));

    // PyTorch on the same sizes, in this run.
    let mut torch_missing = None;
    if let Some(script) = &cfg.torch_script {
        gpu.synchronize()?;
        match torch::run(script, n as u64, reps) {
            Ok(ts) => {
                for (name, ms) in ts {
                    let (exp, model) = match name.as_str() {
                        "sum" => ("bandwidth", bw.model_ms(4.0 * nf, 0.0)),
                        "masked_select_lt_0.5" => {
                            ("q3_select_f32", bw.model_ms(4.0 * nf, 2.0 * nf))
                        }
                        _ => ("project", bw.model_ms(8.0 * nf, 4.0 * nf)),
                    };
                    rec.push(Record::new(
                        exp,
                        &format!("pytorch {name}"),
                        "",
                        n as u64,
                        ms,
                        model,
                    ));
                }
            }
            Err(e) => torch_missing = Some(e),
        }
    } else {
        torch_missing = Some("disabled".into());
    }
    if cfg.cpu {
        rec.extend(cpu_records(&x1, &x2, reps));
    }
    rec.sort_by(|a, b| a.experiment.cmp(&b.experiment));
    Ok(OpsReport {
        device: gpu.name().to_string(),
        n: n as u64,
        bandwidth: Some(bw),
        records: rec,
        torch_missing,
    })
}

fn cpu_records(x1: &[f32], x2: &[f32], reps: usize) -> Vec<Record> {
    let n = x1.len() as u64;
    let threads = rayon::current_num_threads();
    let label = |s: &str| format!("cpu {s} ({threads} threads)");
    vec![
        Record::new(
            "q3_select_f32",
            &label("select"),
            "s=0.5",
            n,
            cpu_ms(reps, || drop(cpu::select(x1, Predicate::lt(0.5f32)))),
            f64::NAN,
        ),
        Record::new(
            "project",
            &label("Q1"),
            "",
            n,
            cpu_ms(reps, || drop(cpu::project_linear(x1, x2, 2.0, 3.0))),
            f64::NAN,
        ),
        Record::new(
            "project",
            &label("Q2"),
            "",
            n,
            cpu_ms(reps, || drop(cpu::project_sigmoid(x1, x2, 2.0, 3.0))),
            f64::NAN,
        ),
    ]
}

/// Runs the CPU implementations only (no GPU present).
pub fn run_cpu(cfg: &OpsConfig) -> OpsReport {
    let n = 1usize << cfg.log2n;
    let x1 = uniform_f32(n, 1);
    let x2 = uniform_f32(n, 2);
    OpsReport {
        device: "cpu".into(),
        n: n as u64,
        bandwidth: None,
        records: cpu_records(&x1, &x2, cfg.reps),
        torch_missing: Some("no GPU".into()),
    }
}

/// Prints the report: the table, then the headline comparisons.
pub fn print_report(r: &OpsReport) {
    println!("# tessera bench ops on {} (n = {})", r.device, r.n);
    if let Some(bw) = r.bandwidth {
        println!("bandwidth measured in this run: {bw}");
    }
    print_table(&r.records);
    let find = |exp: &str, imp: &str, param: &str| {
        r.records
            .iter()
            .find(|x| x.experiment == exp && x.implementation == imp && x.param == param)
            .map(|x| x.median_ms)
    };
    println!("\n## headline");
    for variant in ["If", "Pred"] {
        let Some(q3) = find(
            "q3_select_f32",
            &format!("tessera ordered ({variant})"),
            "s=0.5",
        ) else {
            continue;
        };
        for (other, what) in [
            ("three-kernel baseline", "s=0.5"),
            ("pytorch masked_select_lt_0.5", ""),
        ] {
            if let Some(b) = find("q3_select_f32", other, what) {
                println!("Q3 {variant} s=0.5: {:.2}x faster than {other}", b / q3);
            }
        }
    }
    if let (Some(a), Some(b)) = (
        find("project", "tessera Q2 sigmoid", ""),
        find("project", "pytorch sigmoid_unfused", ""),
    ) {
        println!(
            "Q2: {:.2}x faster than PyTorch's unfused sigmoid(a*x1+b*x2)",
            b / a
        );
    }
    if let Some(m) = &r.torch_missing {
        println!("PyTorch figures missing: {m}");
    }
}
