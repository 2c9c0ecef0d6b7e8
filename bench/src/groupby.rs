//! `tessera bench groupby`: the acceptance grouping of issue 22, 2^27 uniformly random `u32`
//! keys below G with `u32` values, count and 64-bit sum, for G from 2 to 10^8: the GPU
//! `group_by` call (the whole call: estimate, the variant its cost model picks, the groups in
//! key order, left on the device as PyTorch's are), each variant by name, and the call with
//! its result brought to the host, against one read of the input, PyTorch's `index_add_` and
//! `unique` on the same rows in the same run, and the CPU implementation.
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, random_vec};
use tessera_host::ops::{Agg, DeviceKeyColumn, DeviceValueColumn, KeyColumn, ValueColumn};
use tessera_host::runtime::Gpu;
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
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Also time the CPU implementation (all cores; slow at 2^27 rows).
    #[arg(long)]
    pub cpu: bool,
    /// PyTorch script; "none" to skip.
    #[arg(long, default_value = "benches/torch_groupby.py")]
    pub torch: String,
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
}

/// Keys drawn uniformly below `g` (by a multiply-high, without modulo bias beyond 2^-32).
fn keys_below(n: usize, g: u32, seed: u64) -> Vec<u32> {
    random_vec::<u32>(n, seed)
        .into_iter()
        .map(|x| ((x as u64 * g as u64) >> 32) as u32)
        .collect()
}

/// The aggregates of the acceptance grouping.
const AGGS: [Agg; 2] = [Agg::Count, Agg::Sum(0)];

fn run_gpu(gpu: &Gpu, args: &GroupByArgs) -> Result<GroupByReport> {
    let n = 1usize << args.log2n;
    let (bw, mut rec) = measure_bandwidth(gpu, args.reps)?;
    let model = bw.model_ms(8.0 * n as f64, 0.0);
    let values = random_vec::<u32>(n, 2);
    let dv = gpu.upload(&values)?;
    let mut torch_missing = None;
    for &g in &args.groups {
        let keys = keys_below(n, g, 1 + g as u64);
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
        let param = format!("G={g} ({groups} present)");
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
        let (variant, est) = chosen.map_or(("none".into(), 0), |c| {
            (
                format!("{:?}", c.variant).to_lowercase(),
                c.estimated_groups,
            )
        });
        let label = format!("tessera group_by ({variant}, estimate {est})");
        push(&label, t);
        type Variant<'a> = (&'a str, ops::GroupByVariant);
        let variants: [Variant; 2] = [
            ("tessera hash", ops::GroupByVariant::Hash),
            ("tessera sort", ops::GroupByVariant::Sort),
        ];
        for (label, variant) in variants {
            let t = gpu
                .time(WARMUP, args.reps, || {
                    let r = match variant {
                        ops::GroupByVariant::Hash => ops::group_by_hash_device(gpu, &k, &v, &AGGS),
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
        if args.torch != "none" && torch_missing.is_none() {
            match torch_groupby(&PathBuf::from(&args.torch), &keys, &values, g, args.reps) {
                Ok(ts) => {
                    for (name, t) in ts {
                        let label = format!("pytorch {name}");
                        rec.push(Record::new(
                            "groupby_count_sum",
                            &label,
                            &param,
                            n as u64,
                            t,
                            model,
                        ));
                    }
                }
                Err(e) => torch_missing = Some(e),
            }
        }
        if args.cpu {
            rec.push(cpu_record(&keys, &values, &param));
        }
    }
    Ok(GroupByReport {
        device: gpu.name().to_string(),
        n: n as u64,
        bandwidth: Some(bw),
        records: rec,
        torch_missing,
    })
}

/// PyTorch's timings of the same rows.
fn torch_groupby(
    script: &std::path::Path,
    keys: &[u32],
    values: &[u32],
    g: u32,
    reps: usize,
) -> std::result::Result<Vec<(String, f64)>, String> {
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let kf = dir.join(format!("tessera-groupby-keys-{id}.bin"));
    let vf = dir.join(format!("tessera-groupby-values-{id}.bin"));
    let write = |f: &PathBuf, d: &[u32]| std::fs::write(f, bytemuck::cast_slice::<u32, u8>(d));
    let r = write(&kf, keys)
        .and_then(|()| write(&vf, values))
        .map_err(|e| e.to_string())
        .and_then(|()| {
            super::torch::run_args(
                script,
                &[
                    "--keys",
                    &kf.to_string_lossy(),
                    "--values",
                    &vf.to_string_lossy(),
                    "--groups",
                    &g.to_string(),
                    "--reps",
                    &reps.to_string(),
                ],
            )
        });
    let _ = std::fs::remove_file(&kf);
    let _ = std::fs::remove_file(&vf);
    r
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

/// Runs the suite, prints its table and writes its JSON.
pub fn run(args: &GroupByArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
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
            println!("notice: no GPU found; timing the CPU implementation only");
            let values = random_vec::<u32>(n, 2);
            let records = args
                .groups
                .iter()
                .map(|&g| cpu_record(&keys_below(n, g, 1 + g as u64), &values, &format!("G={g}")))
                .collect();
            GroupByReport {
                device: "cpu".into(),
                n: n as u64,
                bandwidth: None,
                records,
                torch_missing: Some("no GPU".into()),
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
    super::write_json(&args.json, &report)
}
