//! `tessera bench ordered`: seeds 003 and 004 on this GPU (issue 22, deliverables 2 and 3).
//!
//! * `atomics` (seed 003 §2.2): adds into one word with an atomic or a plain load, add and
//!   store, the word in device or shared memory, by the number of threads.
//! * `sweep` (seed 003 §4.1): each aggregation variant over block widths and rows per thread,
//!   on sorted keys at three group counts; the best shape of each variant (the least mean time)
//!   is what the later studies run.
//! * `variants` (seed 003 §4.2.1): the six variants on 2^27 sorted keys for group counts 1 to
//!   10^8, with the CPU version (all cores).
//! * `pipelines` (seed 004): the five-, three- and two-kernel pipelines at 2^28 rows of unique
//!   and of repeating keys, by block width, with seed 004's variants (direct atomics, chunked
//!   atomics, private variable, private array), and the two-kernel pipeline by chunk.
//! * `unsorted` (seed 003 §4.2.2): uniform unsorted keys, the radix sort plus the best
//!   variants against the hash, partitioned and sort-based (reduce-by-key) group-bys and the
//!   `group_by` call.
//! * `distributions` (seed 003 §4.2.3): heavy hitter, random, exponential, Weibull and normal
//!   keys, sorted (the variants) and unsorted (sort plus the best variant against the
//!   group-bys).
//! * `lineitem` (seed 004 Fig. 13): TPC-H `lineitem` columns of as many rows as the pipelines'
//!   study ([`crate::lineitem`]), aggregated as TPC-H queries group them (`l_orderkey` as
//!   stored, already sorted; Q1's return flag and line status, `l_shipdate` and `l_partkey`
//!   sorted with their values by the radix sort first), by each pipeline and seed 004's
//!   variants.
//!
//! Every aggregation's model is one read of the keys and values and one write of the result
//! (key, count and sum per group, and the zeroing of the counts and sums: 28 bytes a group),
//! at the bandwidth measured in the same run; the atomics' is one read of their input.
use std::path::PathBuf;
use std::time::Instant;

use rand::{SeedableRng, rngs::StdRng};
use rand_distr::Distribution;
use rayon::prelude::*;
use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, random_vec};
use tessera_host::ops::{
    self, Agg, AtomicTarget, DeviceKeyColumn, DeviceValueColumn, OrderedLoads, OrderedPipeline,
    OrderedPlan, OrderedVariant,
};
use tessera_host::runtime::{DeviceColumn, Gpu};
use tessera_host::{Result, cpu, gpu_or_skip};

/// What `tessera bench ordered` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Study {
    /// Atomics against plain arithmetic, global against shared, by thread count.
    Atomics,
    /// Each variant by block width and rows per thread.
    Sweep,
    /// The six variants on sorted keys over the group counts.
    Variants,
    /// The five-, three- and two-kernel pipelines.
    Pipelines,
    /// Sort plus the variants against the group-bys on unsorted keys.
    Unsorted,
    /// The distributions of seed 003.
    Distributions,
    /// Seed 004's TPC-H lineitem columns.
    Lineitem,
}

/// Options of `tessera bench ordered`.
#[derive(Clone, Debug, clap::Args)]
pub struct OrderedArgs {
    /// log2 of the rows of every study but the pipelines' (10..=30).
    #[arg(long, default_value_t = 27, value_parser = clap::value_parser!(u32).range(10..=30))]
    pub log2n: u32,
    /// log2 of the rows of the pipelines' study (10..=30).
    #[arg(long, default_value_t = 28, value_parser = clap::value_parser!(u32).range(10..=30))]
    pub pipeline_log2n: u32,
    /// Group counts of the variants' and the unsorted studies.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,10,100,1000,10000,100000,1000000,10000000,100000000"
    )]
    pub groups: Vec<u32>,
    /// Studies to run.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "atomics,sweep,variants,pipelines,unsorted,distributions,lineitem"
    )]
    pub study: Vec<Study>,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 5, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Also time the CPU group-by on the unsorted keys (all cores; slow at 2^27 rows).
    #[arg(long)]
    pub cpu: bool,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/ordered.json")]
    pub json: PathBuf,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct OrderedReport {
    /// Device name.
    pub device: String,
    /// Rows of the studies but the pipelines'.
    pub n: u64,
    /// Bandwidth measured in this run.
    pub bandwidth: Bandwidth,
    /// The shape each variant ran with after the sweep: (variant, threads, chunk, loads).
    pub shapes: Vec<(String, u32, u32, String)>,
    /// All figures.
    pub records: Vec<Record>,
}

/// The six aggregation variants of seed 003.
const VARIANTS: [(OrderedVariant, AtomicTarget); 6] = [
    (OrderedVariant::Naive, AtomicTarget::Global),
    (OrderedVariant::Naive, AtomicTarget::Shared),
    (OrderedVariant::PrivateVariable, AtomicTarget::Global),
    (OrderedVariant::PrivateVariable, AtomicTarget::Shared),
    (OrderedVariant::PrivateArray, AtomicTarget::Global),
    (OrderedVariant::PrivateArray, AtomicTarget::Shared),
];

/// A variant's name in the tables.
fn variant_name(v: OrderedVariant, t: AtomicTarget) -> String {
    let v = match v {
        OrderedVariant::Naive => "naive",
        OrderedVariant::PrivateVariable => "private variable",
        OrderedVariant::PrivateArray => "private array",
    };
    let t = match t {
        AtomicTarget::Global => "global",
        AtomicTarget::Shared => "shared",
    };
    format!("{v}, {t}")
}

/// `n` uniform keys below `g`, sorted.
fn sorted_keys(n: usize, g: u32, seed: u64) -> Vec<u32> {
    let mut k: Vec<u32> = random_vec::<u32>(n, seed)
        .into_par_iter()
        .map(|x| ((x as u64 * g as u64) >> 32) as u32)
        .collect();
    k.par_sort_unstable();
    k
}

/// Groups of sorted keys.
fn runs(keys: &[u32]) -> usize {
    if keys.is_empty() {
        return 0;
    }
    1 + keys.par_windows(2).filter(|w| w[0] != w[1]).count()
}

/// The distributions of seed 003 §4.2.3, `n` keys each (unsorted): heavy hitter (90% one key,
/// the rest uniform), random (10001 groups), and exponential (rate 0.05), Weibull (scale 4,
/// shape 2) and normal (mean 2^20, deviation 2^16) samples quantized to 1/2^12.
fn distributions(n: usize) -> Vec<(&'static str, Vec<u32>)> {
    let sample = |seed: u64, f: &(dyn Fn(&mut StdRng) -> f64 + Sync)| -> Vec<u32> {
        let mut v = vec![0u32; n];
        v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
            let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
            c.iter_mut()
                .for_each(|k| *k = (f(&mut rng) * 4096.0).clamp(0.0, u32::MAX as f64) as u32);
        });
        v
    };
    let exp = rand_distr::Exp::new(0.05).expect("rate > 0");
    let weibull = rand_distr::Weibull::new(4.0, 2.0).expect("scale, shape > 0");
    let normal = rand_distr::Normal::new((1u64 << 20) as f64, (1u64 << 16) as f64).expect("sd > 0");
    let heavy = random_vec::<u32>(n, 31)
        .into_par_iter()
        .enumerate()
        .map(|(i, x)| {
            if (i as u64 * 0x9e37_79b9_7f4a_7c15) >> 60 < 14 {
                4242
            } else {
                x
            }
        })
        .collect();
    let random = random_vec::<u32>(n, 32)
        .into_par_iter()
        .map(|x| ((x as u64 * 10_001) >> 32) as u32)
        .collect();
    vec![
        ("heavy hitter", heavy),
        ("random", random),
        ("exponential", sample(33, &|r| exp.sample(r))),
        ("weibull", sample(34, &|r| weibull.sample(r))),
        ("normal", sample(35, &|r| normal.sample(r))),
    ]
}

/// Times, records.
struct Bench<'a> {
    gpu: &'a Gpu,
    reps: usize,
    bw: Bandwidth,
    rec: Vec<Record>,
    /// Each variant's shape (the sweep's best).
    shapes: Vec<Shape>,
    /// Whether to time the CPU group-by.
    cpu: bool,
}

impl Bench<'_> {
    /// The model of an aggregation of `n` rows into `g` groups.
    fn model(&self, n: usize, g: usize) -> f64 {
        self.bw.model_ms(8.0 * n as f64, 28.0 * g as f64)
    }

    /// Median of `reps` runs of `aggregate_sorted`.
    fn time_plan(
        &self,
        k: &DeviceColumn<u32>,
        v: &DeviceColumn<u32>,
        plan: &OrderedPlan,
        reps: usize,
    ) -> Result<f64> {
        Ok(self
            .gpu
            .time(1, reps, || {
                std::hint::black_box(ops::aggregate_sorted(self.gpu, k, v, plan)?.groups());
                Ok(())
            })?
            .median_ms())
    }

    fn push(&mut self, experiment: &str, label: &str, param: &str, n: usize, t: f64, model: f64) {
        self.rec
            .push(Record::new(experiment, label, param, n as u64, t, model));
    }
}

/// The atomics micro-benchmark.
#[cfg(feature = "sweeps")]
fn atomics(b: &mut Bench) -> Result<()> {
    use cudarc::driver::LaunchConfig;
    use tessera_kernels::ops::atomics::ATOMICS;
    let most = 1usize << 27;
    let input = b.gpu.upload(&random_vec::<u32>(most, 41))?;
    for log2t in (5..=21).step_by(2) {
        let threads = 1usize << log2t;
        let n = (threads << 10).clamp(1 << 20, most);
        let block = threads.min(256);
        let cfg = LaunchConfig {
            grid_dim: ((threads / block) as u32, 1, 1),
            block_dim: (block as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let model = b.bw.model_ms(4.0 * n as f64, 0.0);
        for (shared, mode) in [(false, "global"), (true, "shared")] {
            for (atomic, op) in [(true, "atomic"), (false, "plain")] {
                let spec = ATOMICS[shared as usize][atomic as usize];
                let mut out = b.gpu.zeros::<u32>(1)?;
                let n32 = n as u32;
                let t = b
                    .gpu
                    .time(1, b.reps, || {
                        // SAFETY: the input holds n >= 2^20 values; one output word; any grid.
                        unsafe { b.gpu.launch(&spec, cfg, (&input, &n32, &mut out)) }
                    })?
                    .median_ms();
                b.push(
                    "atomics",
                    &format!("{mode} {op}"),
                    &format!("threads={threads}"),
                    n,
                    t,
                    model,
                );
            }
        }
    }
    Ok(())
}

#[cfg(not(feature = "sweeps"))]
fn atomics(_: &mut Bench) -> Result<()> {
    println!("notice: the atomics study needs the `sweeps` feature (its probe kernels)");
    Ok(())
}

/// Block widths and chunks of the sweep.
const SWEEP_THREADS: [u32; 5] = [64, 128, 256, 512, 1024];
const SWEEP_CHUNKS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
const SWEEP_GROUPS: [u32; 3] = [100, 10_000, 1_000_000];

/// A variant's shape: threads, rows per thread, loads.
type Shape = (u32, u32, OrderedLoads);

/// The loads of the sweep and their names.
const LOADS: [(OrderedLoads, &str); 2] = [
    (OrderedLoads::Direct, "direct"),
    (OrderedLoads::Staged, "staged"),
];

/// Each variant's shape: the sweep's best (least mean time over its group counts), or 256
/// threads of 8 rows read directly without it.
fn sweep(b: &mut Bench, v: &DeviceColumn<u32>, run: bool) -> Result<Vec<Shape>> {
    if !run {
        return Ok(vec![(256, 8, OrderedLoads::Direct); VARIANTS.len()]);
    }
    let n = v.len();
    let mut shapes: Vec<Shape> = Vec::new();
    for (loads, _) in LOADS {
        for threads in SWEEP_THREADS {
            for chunk in SWEEP_CHUNKS {
                shapes.push((threads, chunk, loads));
            }
        }
    }
    let mut sums = vec![vec![0f64; shapes.len()]; VARIANTS.len()];
    for &g in &SWEEP_GROUPS {
        let keys = sorted_keys(n, g, 100 + g as u64);
        let groups = runs(&keys);
        let k = b.gpu.upload(&keys)?;
        let model = b.model(n, groups);
        for (vi, &(variant, target)) in VARIANTS.iter().enumerate() {
            for (si, &(threads, chunk, loads)) in shapes.iter().enumerate() {
                let pipeline = OrderedPipeline::Two;
                let plan = OrderedPlan {
                    pipeline,
                    variant,
                    target,
                    threads,
                    chunk,
                    loads,
                };
                let slot = &mut sums[vi][si];
                if plan.check().is_err() || !slot.is_finite() {
                    *slot = f64::INFINITY;
                    continue;
                }
                let t = b.time_plan(&k, v, &plan, b.reps.min(3))?;
                *slot += t;
                let name = LOADS.iter().find(|l| l.0 == loads).map_or("", |l| l.1);
                let param = format!("G={g} threads={threads} chunk={chunk} {name}");
                b.push(
                    "ordered_sweep",
                    &variant_name(variant, target),
                    &param,
                    n,
                    t,
                    model,
                );
            }
        }
    }
    Ok(sums
        .iter()
        .map(|s| {
            let i = (0..s.len())
                .min_by(|&x, &y| s[x].total_cmp(&s[y]))
                .unwrap_or(0);
            shapes[i]
        })
        .collect())
}

/// The plan of variant `vi` at its shape.
fn plan_of(vi: usize, shapes: &[Shape]) -> OrderedPlan {
    let (variant, target) = VARIANTS[vi];
    let (threads, chunk, loads) = shapes[vi];
    OrderedPlan {
        pipeline: OrderedPipeline::Two,
        variant,
        target,
        threads,
        chunk,
        loads,
    }
}

/// The six variants and the CPU version on sorted keys `keys` (`param` names them).
fn variants_on(
    b: &mut Bench,
    experiment: &str,
    keys: &[u32],
    v: &DeviceColumn<u32>,
    values: &[u32],
    param: &str,
) -> Result<()> {
    let n = keys.len();
    let groups = runs(keys);
    let k = b.gpu.upload(keys)?;
    let model = b.model(n, groups);
    let param = format!("{param} ({groups} groups)");
    for (vi, &(variant, target)) in VARIANTS.iter().enumerate() {
        let plan = plan_of(vi, &b.shapes);
        let t = b.time_plan(&k, v, &plan, b.reps)?;
        b.push(
            experiment,
            &variant_name(variant, target),
            &param,
            n,
            t,
            model,
        );
    }
    let mut ms = Vec::new();
    for _ in 0..b.reps.min(3) {
        let t = Instant::now();
        std::hint::black_box(cpu::aggregate_runs(keys, values)?.keys.len());
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let label = format!(
        "cpu aggregate_runs ({} threads)",
        rayon::current_num_threads()
    );
    b.push(experiment, &label, &param, n, ms[ms.len() / 2], f64::NAN);
    Ok(())
}

/// Seed 004's variants: (name, variant, chunk or None for the pipeline's chunk).
const SEED4: [(&str, OrderedVariant, Option<u32>); 4] = [
    ("direct atomics", OrderedVariant::Naive, Some(1)),
    ("chunked atomics", OrderedVariant::Naive, None),
    ("private variable", OrderedVariant::PrivateVariable, None),
    ("private array", OrderedVariant::PrivateArray, None),
];

/// Seed 004's TPC-H columns: `2^log2n` lineitem rows, each aggregation by each pipeline and
/// seed 004's variant (256 threads a block, the pipeline's chunk, atomics into device memory
/// as the seed's), and the two-kernel pipeline's private variants into shared memory.
fn lineitem(b: &mut Bench, log2n: u32) -> Result<()> {
    let n = 1usize << log2n;
    let start = Instant::now();
    let l = crate::lineitem::Lineitem::generate(n, 7);
    println!(
        "lineitem: {n} lines (SF {:.1}) generated in {:.1} s",
        crate::lineitem::Lineitem::scale_factor(n),
        start.elapsed().as_secs_f64()
    );
    let cases: [(&str, &[u32], &[u32], bool); 4] = [
        (
            "l_orderkey, sum(l_quantity)",
            &l.orderkey,
            &l.quantity,
            false,
        ),
        (
            "l_returnflag, l_linestatus, sum(l_quantity)",
            &l.flag_status,
            &l.quantity,
            true,
        ),
        (
            "l_shipdate, sum(l_extendedprice)",
            &l.shipdate,
            &l.extendedprice,
            true,
        ),
        ("l_partkey, sum(l_quantity)", &l.partkey, &l.quantity, true),
    ];
    for (name, keys, values, sort) in cases {
        let (mut k, mut v) = (b.gpu.upload(keys)?, b.gpu.upload(values)?);
        if sort {
            (k, v) = ops::sort_pairs(b.gpu, &k, &v, ops::Order::Ascending)?;
        }
        let default = OrderedPlan::default();
        let groups = ops::aggregate_sorted(b.gpu, &k, &v, &default)?.groups();
        let model = b.model(n, groups);
        let param = format!("{name} ({groups} groups)");
        for (pipeline, pname) in [
            (OrderedPipeline::Five, "five"),
            (OrderedPipeline::Three, "three"),
            (OrderedPipeline::Two, "two"),
        ] {
            for &(vname, variant, chunk) in &SEED4 {
                let plan = OrderedPlan {
                    pipeline,
                    variant,
                    target: AtomicTarget::Global,
                    threads: 256,
                    chunk: chunk.unwrap_or(default.chunk),
                    loads: OrderedLoads::Direct,
                };
                let t = b.time_plan(&k, &v, &plan, b.reps)?;
                let label = format!("{pname}-kernel, {vname}");
                b.push("ordered_lineitem", &label, &param, n, t, model);
            }
        }
        // Beyond the seed: the two-kernel pipeline's private variants merging in shared
        // memory first, which long runs (few groups) need.
        for &(vname, variant, _) in &SEED4[2..] {
            let plan = OrderedPlan {
                variant,
                target: AtomicTarget::Shared,
                ..default
            };
            let t = b.time_plan(&k, &v, &plan, b.reps)?;
            let label = format!("two-kernel, {vname}, shared");
            b.push("ordered_lineitem", &label, &param, n, t, model);
        }
    }
    Ok(())
}

/// The pipelines at `2^log2n` rows of unique and of repeating keys.
fn pipelines(b: &mut Bench, log2n: u32) -> Result<()> {
    let n = 1usize << log2n;
    let v = b.gpu.upload(&random_vec::<u32>(n, 5))?;
    let data = [
        ("unique", (0..n as u32).collect::<Vec<u32>>()),
        ("repeating", sorted_keys(n, 1 << 20, 6)),
    ];
    for (name, keys) in data {
        let groups = runs(&keys);
        let k = b.gpu.upload(&keys)?;
        drop(keys);
        let model = b.model(n, groups);
        for (pipeline, pname) in [
            (OrderedPipeline::Five, "five"),
            (OrderedPipeline::Three, "three"),
            (OrderedPipeline::Two, "two"),
        ] {
            for threads in [32, 64, 128, 256, 512, 1024] {
                for &(vname, variant, chunk) in &SEED4 {
                    for (loads, lname) in LOADS {
                        let target = AtomicTarget::Global;
                        let chunk = chunk.unwrap_or(8);
                        let plan = OrderedPlan {
                            pipeline,
                            variant,
                            target,
                            threads,
                            chunk,
                            loads,
                        };
                        let t = b.time_plan(&k, &v, &plan, b.reps)?;
                        let param = format!("{name} ({groups} groups), threads={threads}");
                        b.push(
                            "ordered_pipelines",
                            &format!("{pname}-kernel, {vname}, {lname}"),
                            &param,
                            n,
                            t,
                            model,
                        );
                    }
                }
            }
        }
        for log2c in 0..=12 {
            for &(vname, variant, chunk) in &SEED4[1..] {
                for (loads, lname) in LOADS {
                    debug_assert!(chunk.is_none());
                    let plan = OrderedPlan {
                        pipeline: OrderedPipeline::Two,
                        variant,
                        target: AtomicTarget::Global,
                        threads: 256,
                        chunk: 1 << log2c,
                        loads,
                    };
                    if plan.check().is_err() {
                        continue;
                    }
                    let t = b.time_plan(&k, &v, &plan, b.reps)?;
                    let param = format!("{name} ({groups} groups), chunk={}", 1 << log2c);
                    b.push(
                        "ordered_pipeline_chunk",
                        &format!("two-kernel, {vname}, {lname}"),
                        &param,
                        n,
                        t,
                        model,
                    );
                }
            }
        }
    }
    Ok(())
}

/// Unsorted keys: the radix sort (pairs) plus variants, against the group-bys.
fn unsorted_on(
    b: &mut Bench,
    experiment: &str,
    keys: &[u32],
    v: &DeviceColumn<u32>,
    values: &[u32],
    param: &str,
) -> Result<()> {
    let n = keys.len();
    let k = b.gpu.upload(keys)?;
    let mut sorted_k = b.gpu.zeros::<u32>(n)?;
    let mut sorted_v = b.gpu.zeros::<u32>(n)?;
    let mut sort = ops::RadixSort::<u32>::new(b.gpu, n, true)?;
    let gpu = b.gpu;
    let mut sort_rows = |sk: &mut DeviceColumn<u32>, sv: &mut DeviceColumn<u32>| {
        sort.sort_pairs(gpu, &k, v, sk, sv, ops::Order::Ascending)
    };
    let t_sort = gpu
        .time(WARMUP, b.reps, || sort_rows(&mut sorted_k, &mut sorted_v))?
        .median_ms();
    let groups =
        ops::aggregate_sorted(b.gpu, &sorted_k, &sorted_v, &OrderedPlan::default())?.groups();
    let model = b.model(n, groups);
    let param = format!("{param} ({groups} groups)");
    b.push(
        experiment,
        "radix sort (pairs) alone",
        &param,
        n,
        t_sort,
        model,
    );
    for vi in [1, 4, 5] {
        let plan = plan_of(vi, &b.shapes);
        let t = b
            .gpu
            .time(WARMUP, b.reps, || {
                sort_rows(&mut sorted_k, &mut sorted_v)?;
                std::hint::black_box(
                    ops::aggregate_sorted(b.gpu, &sorted_k, &sorted_v, &plan)?.groups(),
                );
                Ok(())
            })?
            .median_ms();
        let (variant, target) = VARIANTS[vi];
        b.push(
            experiment,
            &format!("sort + {}", variant_name(variant, target)),
            &param,
            n,
            t,
            model,
        );
    }
    drop((sort, sorted_k, sorted_v));
    let (kc, vc) = ([DeviceKeyColumn::U32(&k)], [DeviceValueColumn::U32(v)]);
    let aggs = [Agg::Count, Agg::Sum(0)];
    type Call<'a> = (
        &'a str,
        fn(&Gpu, &[DeviceKeyColumn], &[DeviceValueColumn], &[Agg]) -> Result<ops::DeviceGrouped>,
    );
    let calls: [Call; 4] = [
        (
            "group_by_sort (sort + reduce-by-key)",
            ops::group_by_sort_device,
        ),
        ("group_by_hash", ops::group_by_hash_device),
        ("group_by_partitioned", ops::group_by_partitioned_device),
        ("group_by", |g, k, v, a| {
            Ok(ops::group_by_device(g, k, v, a)?.0)
        }),
    ];
    for (label, f) in calls {
        let t = b
            .gpu
            .time(WARMUP, b.reps, || {
                std::hint::black_box(f(b.gpu, &kc, &vc, &aggs)?.groups());
                Ok(())
            })?
            .median_ms();
        b.push(experiment, label, &param, n, t, model);
    }
    if b.cpu {
        let t = Instant::now();
        let r = cpu::group_by(
            &[ops::KeyColumn::U32(keys)],
            &[ops::ValueColumn::U32(values)],
            &aggs,
        )?;
        std::hint::black_box(r.groups());
        let label = format!("cpu group_by ({} threads)", rayon::current_num_threads());
        b.push(
            experiment,
            &label,
            &param,
            n,
            t.elapsed().as_secs_f64() * 1e3,
            f64::NAN,
        );
    }
    Ok(())
}

fn run_gpu(gpu: &Gpu, args: &OrderedArgs) -> Result<OrderedReport> {
    let n = 1usize << args.log2n;
    let (bw, rec) = measure_bandwidth(gpu, args.reps)?;
    let mut b = Bench {
        gpu,
        reps: args.reps,
        bw,
        rec,
        shapes: Vec::new(),
        cpu: args.cpu,
    };
    let on = |s: Study| args.study.contains(&s);
    if on(Study::Atomics) {
        atomics(&mut b)?;
    }
    let values = random_vec::<u32>(n, 2);
    let v = gpu.upload(&values)?;
    b.shapes = sweep(&mut b, &v, on(Study::Sweep))?;
    if on(Study::Variants) {
        for &g in &args.groups {
            let keys = sorted_keys(n, g, 1 + g as u64);
            variants_on(
                &mut b,
                "ordered_variants",
                &keys,
                &v,
                &values,
                &format!("G={g}"),
            )?;
        }
    }
    if on(Study::Unsorted) {
        for &g in &args.groups {
            let keys: Vec<u32> = random_vec::<u32>(n, 1 + g as u64)
                .into_par_iter()
                .map(|x| ((x as u64 * g as u64) >> 32) as u32)
                .collect();
            unsorted_on(
                &mut b,
                "ordered_unsorted",
                &keys,
                &v,
                &values,
                &format!("G={g}"),
            )?;
        }
    }
    if on(Study::Distributions) {
        for (name, mut keys) in distributions(n) {
            unsorted_on(
                &mut b,
                "ordered_distributions_unsorted",
                &keys,
                &v,
                &values,
                name,
            )?;
            keys.par_sort_unstable();
            variants_on(
                &mut b,
                "ordered_distributions_sorted",
                &keys,
                &v,
                &values,
                name,
            )?;
        }
    }
    drop(v);
    if on(Study::Pipelines) {
        pipelines(&mut b, args.pipeline_log2n)?;
    }
    if on(Study::Lineitem) {
        lineitem(&mut b, args.pipeline_log2n)?;
    }
    let shapes = VARIANTS
        .iter()
        .zip(&b.shapes)
        .map(|(&(v, t), &(threads, chunk, loads))| {
            (
                variant_name(v, t),
                threads,
                chunk,
                format!("{loads:?}").to_lowercase(),
            )
        })
        .collect();
    Ok(OrderedReport {
        device: gpu.name().to_string(),
        n: n as u64,
        bandwidth: b.bw,
        shapes,
        records: b.rec,
    })
}

/// Runs the suite, prints its table and writes its JSON. Without a GPU there is nothing to
/// measure: it says so and writes nothing.
pub fn run(args: &OrderedArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    // Keys, values, sorted copies and the sort's buffers: about 8 columns of 4 bytes.
    tessera_host::preflight::check_memory(
        32u64 << args.log2n.max(args.pipeline_log2n),
        &format!("bench ordered --log2n {}", args.log2n),
        "pass a smaller --log2n and --pipeline-log2n",
    )?;
    let Some(gpu) = gpu_or_skip("tessera bench ordered") else {
        println!("notice: no GPU found; the ordered-aggregation studies measure GPU kernels only");
        return Ok(());
    };
    let report = run_gpu(&gpu, args)?;
    let (sweep, rest): (Vec<Record>, Vec<Record>) = report
        .records
        .iter()
        .cloned()
        .partition(|r| r.experiment == "ordered_sweep");
    super::print_report(
        "ordered",
        &report.device,
        report.n,
        Some(&report.bandwidth),
        &rest,
        None,
    );
    if !sweep.is_empty() {
        println!(
            "\nsweep ({} points in the JSON); the shapes the studies ran:",
            sweep.len()
        );
    }
    for (name, threads, chunk, loads) in &report.shapes {
        println!("  {name}: {threads} threads of {chunk} rows, {loads}");
    }
    super::write_json(&args.json, &report)
}
