//! `tessera bench sort`: radix sort of 2^28 `u32` keys with `u32` values against its model (one
//! histogram read plus four 16-byte shuffle passes), other key types, the radix-partition sweep
//! of thesis Figure 3-13 (histogram and shuffle, stable and unstable, 1..10 bits), PyTorch's
//! `sort` on the same keys in the same run, and the CPU implementation.
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, random_vec};
use tessera_host::ops::{Order, RadixPartition, RadixSort, SortKey, SortStrategy};
use tessera_host::runtime::{DeviceColumn, Gpu, median};
use tessera_host::{Error, Result, cpu, gpu_or_skip};
use tessera_kernels::ops::sort::PassArgs;
use tessera_kernels::ops::sort_msd::LocalSortArgs;
use tessera_kernels::spec::KernelSpec;

/// Options of `tessera bench sort`.
#[derive(Clone, Debug, clap::Args)]
pub struct SortArgs {
    /// log2 of the number of keys (10..=31).
    #[arg(long, default_value_t = 28, value_parser = clap::value_parser!(u32).range(10..=31))]
    pub log2n: u32,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Only the u32 key + value sort and PyTorch (skip other types and the partition sweep).
    #[arg(long)]
    pub quick: bool,
    /// Skip the CPU implementation.
    #[arg(long)]
    pub no_cpu: bool,
    /// PyTorch script; "none" to skip.
    #[arg(long, default_value = "benches/torch_sort.py")]
    pub torch: String,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/sort.json")]
    pub json: PathBuf,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct SortReport {
    /// Device name, or "cpu".
    pub device: String,
    /// Keys per sort.
    pub n: u64,
    /// Bandwidth measured in this run (GPU runs only).
    pub bandwidth: Option<Bandwidth>,
    /// All figures.
    pub records: Vec<Record>,
    /// Why PyTorch figures are missing, if they are.
    pub torch_missing: Option<String>,
}

/// Model of a sort of `n` keys (`key_bytes` each, with `val_bytes` of value): one histogram
/// read of the keys, then per pass one read and one write of keys and values.
fn sort_model(bw: &Bandwidth, n: f64, key_bytes: f64, val_bytes: f64, passes: usize) -> f64 {
    let per_pass = (key_bytes + val_bytes) * n;
    bw.model_ms(key_bytes * n, 0.0) + passes as f64 * bw.model_ms(per_pass, per_pass)
}

/// Times a GPU sort of `keys` (with values `0..n` when `values`) with `strategy` and returns
/// its record. The model is the LSB sort's (a histogram read, then one pass per 8-bit digit
/// that is not the same for every key) whichever sort ran: the MSD sort is measured against
/// the four passes it saves one of.
#[allow(clippy::too_many_arguments)]
fn time_sort<K: SortKey>(
    gpu: &Gpu,
    bw: &Bandwidth,
    reps: usize,
    keys: &[K],
    values: bool,
    order: Order,
    strategy: SortStrategy,
    label: &str,
) -> Result<Record> {
    let n = keys.len();
    let dk = gpu.upload(keys)?;
    let mut ko: DeviceColumn<K> = gpu.zeros(n)?;
    let mut sorter = RadixSort::<K>::new(gpu, n, values)?;
    sorter.set_strategy(strategy);
    let t = if values {
        let idx: Vec<u32> = (0..n as u32).collect();
        let dv = gpu.upload(&idx)?;
        let mut vo = gpu.zeros(n)?;
        gpu.time(WARMUP, reps, || {
            sorter.sort_pairs(gpu, &dk, &dv, &mut ko, &mut vo, order)
        })?
    } else {
        gpu.time(WARMUP, reps, || sorter.sort_keys(gpu, &dk, &mut ko, order))?
    }
    .median_ms();
    let kb = std::mem::size_of::<K>() as f64;
    let vb = if values { 4.0 } else { 0.0 };
    let (config, lsb_passes) = match sorter.strategy_run() {
        Some(SortStrategy::Msd) => {
            // The digits the LSB sort would not skip.
            let mut lsb = RadixSort::<K>::new(gpu, n, false)?;
            lsb.set_strategy(SortStrategy::Lsb);
            lsb.sort_keys(gpu, &dk, &mut ko, order)?;
            ("MSD: 2 passes + local sorts".to_string(), lsb.passes_run())
        }
        _ => (
            format!("LSB: {} passes", sorter.passes_run()),
            sorter.passes_run(),
        ),
    };
    Ok(Record::new(
        "radix_sort",
        label,
        config,
        n as u64,
        t,
        sort_model(bw, n as f64, kb, vb, lsb_passes),
    ))
}

/// Which kernel a sweep varies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// The LSB sort's pass kernel.
    Pass,
    /// The MSD sort's local sort kernel (kernels whose tile cannot hold the largest bucket are
    /// left out).
    Local,
}

/// The kernels a sweep can vary, by their parameter types.
trait Swept: Sized {
    /// The role of the kernels.
    const ROLE: Sweep;
    /// Makes `sorter` use `spec`.
    fn install(sorter: &mut RadixSort<u32>, spec: KernelSpec<Self>, values: bool);
    /// Whether the last sort ran `spec`.
    fn ran(sorter: &RadixSort<u32>, spec: KernelSpec<Self>) -> bool;
}

impl Swept for PassArgs<u32> {
    const ROLE: Sweep = Sweep::Pass;
    fn install(sorter: &mut RadixSort<u32>, spec: KernelSpec<Self>, values: bool) {
        sorter.set_pass_kernel(spec, values);
    }
    fn ran(_: &RadixSort<u32>, _: KernelSpec<Self>) -> bool {
        true
    }
}

impl Swept for LocalSortArgs {
    const ROLE: Sweep = Sweep::Local;
    fn install(sorter: &mut RadixSort<u32>, spec: KernelSpec<Self>, _: bool) {
        sorter.set_strategy(SortStrategy::Msd);
        sorter.set_local_kernel(spec);
    }
    fn ran(sorter: &RadixSort<u32>, spec: KernelSpec<Self>) -> bool {
        sorter.local_run() == Some(spec)
    }
}

/// Times the u32 sort of `keys` (with values `0..n` when `values`) with each kernel of `specs`,
/// checking that every kernel sorts exactly as the first one timed does.
fn sweep<A: Swept>(
    gpu: &Gpu,
    bw: &Bandwidth,
    reps: usize,
    keys: &[u32],
    specs: &[KernelSpec<A>],
    values: bool,
) -> Result<Vec<Record>> {
    let what = A::ROLE;
    let n = keys.len();
    let dk = gpu.upload(keys)?;
    let mut ko = gpu.zeros::<u32>(n)?;
    // Values (input 0..n and output) only for key + value sorts.
    let vals_len = if values { n } else { 0 };
    let dv = gpu.upload(&(0..vals_len as u32).collect::<Vec<_>>())?;
    let mut vo = gpu.zeros::<u32>(vals_len)?;
    let mut sorter = RadixSort::<u32>::new(gpu, n, values)?;
    let mut reference: Option<(&str, _)> = None;
    let mut rec = Vec::new();
    for &spec in specs {
        A::install(&mut sorter, spec, values);
        let mut sort = |sorter: &mut RadixSort<u32>| {
            if values {
                sorter.sort_pairs(gpu, &dk, &dv, &mut ko, &mut vo, Order::Ascending)
            } else {
                sorter.sort_keys(gpu, &dk, &mut ko, Order::Ascending)
            }
        };
        sort(&mut sorter)?;
        if !A::ran(&sorter, spec) {
            continue;
        }
        let t = gpu.time(WARMUP, reps, || sort(&mut sorter))?.median_ms();
        let got = (ko.to_vec(gpu)?, vo.to_vec(gpu)?);
        match &reference {
            None => reference = Some((spec.name(), got)),
            Some((first, want)) if *want != got => {
                return Err(Error::invalid(format!(
                    "kernel sweep: {} sorts differently from {first}",
                    spec.name()
                )));
            }
            Some(_) => {}
        }
        // The model is the LSB sort's, for the MSD sort too (see time_sort).
        let (group, passes) = match (what, values) {
            (Sweep::Pass, true) => ("radix_sort_tiles", sorter.passes_run()),
            (Sweep::Pass, false) => ("radix_sort_tiles_keys", sorter.passes_run()),
            (Sweep::Local, true) => ("radix_sort_local", 4),
            (Sweep::Local, false) => ("radix_sort_local_keys", 4),
        };
        rec.push(Record::new(
            group,
            spec.name(),
            format!("{}x{}", spec.threads(), spec.items_per_thread()),
            n as u64,
            t,
            sort_model(bw, n as f64, 4.0, if values { 4.0 } else { 0.0 }, passes),
        ));
    }
    Ok(rec)
}

/// Runs the suite on `gpu`.
pub fn run_gpu(gpu: &Gpu, args: &SortArgs) -> Result<SortReport> {
    let n = 1usize << args.log2n;
    let nf = n as f64;
    let reps = args.reps.max(1);
    let keys = random_vec::<u32>(n, 1);
    let (bw, mut rec) = measure_bandwidth(gpu, reps)?;

    // The u32 sorts: the default (MSD at this size), then the LSB sort.
    for (strategy, suffix) in [(SortStrategy::Auto, ""), (SortStrategy::Lsb, ", LSB")] {
        for (values, what) in [(true, "key + u32 value"), (false, "keys")] {
            let label = format!("tessera u32 {what}{suffix}");
            let order = Order::Ascending;
            rec.push(time_sort(
                gpu, &bw, reps, &keys, values, order, strategy, &label,
            )?);
        }
    }
    // Tile sweeps of the u32 passes.
    #[cfg(feature = "sweeps")]
    {
        use tessera_kernels::ops::sort::sweep::{KEYS, PAIRS};
        rec.extend(sweep(gpu, &bw, reps, &keys, &PAIRS, true)?);
        rec.extend(sweep(gpu, &bw, reps, &keys, &KEYS, false)?);
    }
    let local = tessera_kernels::ops::sort_msd::LOCAL_U32;
    rec.extend(sweep(gpu, &bw, reps, &keys, local.pairs, true)?);
    rec.extend(sweep(gpu, &bw, reps, &keys, local.keys, false)?);
    if !args.quick {
        rec.push(time_sort(
            gpu,
            &bw,
            reps,
            &keys,
            true,
            Order::Descending,
            SortStrategy::Auto,
            "tessera u32 kv descending",
        )?);
        let i: Vec<i32> = keys.par_iter().map(|&x| x as i32).collect();
        rec.push(time_sort(
            gpu,
            &bw,
            reps,
            &i,
            true,
            Order::Ascending,
            SortStrategy::Auto,
            "tessera i32 key + u32 value",
        )?);
        drop(i);
        let f: Vec<f32> = keys.par_iter().map(|&x| f32::from_bits(x)).collect();
        rec.push(time_sort(
            gpu,
            &bw,
            reps,
            &f,
            true,
            Order::Ascending,
            SortStrategy::Auto,
            "tessera f32 key + u32 value",
        )?);
        drop(f);
        let w: Vec<u64> = keys[..n / 2]
            .par_iter()
            .zip(&keys[n / 2..])
            .map(|(&a, &b)| ((a as u64) << 32) | b as u64)
            .collect();
        rec.push(time_sort(
            gpu,
            &bw,
            reps,
            &w,
            true,
            Order::Ascending,
            SortStrategy::Auto,
            "tessera u64 key + u32 value (n/2)",
        )?);
        drop(w);
        let narrow: Vec<u32> = keys.par_iter().map(|&x| x >> 8).collect();
        rec.push(time_sort(
            gpu,
            &bw,
            reps,
            &narrow,
            true,
            Order::Ascending,
            SortStrategy::Auto,
            "tessera u32 kv, 24-bit keys",
        )?);
        drop(narrow);

        // Figure 3-13: one partition pass, histogram and shuffle phases apart.
        let dk = gpu.upload(&keys)?;
        let dv = gpu.upload(&(0..n as u32).collect::<Vec<_>>())?;
        let (mut ko, mut vo) = (gpu.zeros::<u32>(n)?, gpu.zeros::<u32>(n)?);
        for bits in 1..=10 {
            for stable in [true, false] {
                let mut p = RadixPartition::new(0, bits, stable)?;
                let name = if stable {
                    "tessera stable (LSB)"
                } else {
                    "tessera unstable (MSB)"
                };
                if stable {
                    let t = gpu
                        .time(WARMUP, reps, || p.histogram(gpu, &dk).map(|_| ()))?
                        .median_ms();
                    rec.push(Record::new(
                        "partition_histogram",
                        "tessera",
                        format!("{bits} bits"),
                        n as u64,
                        t,
                        bw.model_ms(4.0 * nf, 0.0),
                    ));
                }
                p.histogram(gpu, &dk)?;
                let t = gpu
                    .time(WARMUP, reps, || p.shuffle(gpu, &dk, &dv, &mut ko, &mut vo))?
                    .median_ms();
                rec.push(Record::new(
                    "partition_shuffle",
                    name,
                    format!("{bits} bits"),
                    n as u64,
                    t,
                    bw.model_ms(8.0 * nf, 8.0 * nf),
                ));
            }
        }
    }

    let mut torch_missing = None;
    if args.torch != "none" {
        match torch_sort(&PathBuf::from(&args.torch), &keys, reps) {
            Ok(t) => {
                let model = sort_model(&bw, nf, 4.0, 4.0, 4);
                rec.push(Record::new(
                    "radix_sort",
                    "pytorch sort (i32, indices)",
                    "",
                    n as u64,
                    t,
                    model,
                ));
            }
            Err(e) => torch_missing = Some(e),
        }
    }
    if !args.no_cpu {
        rec.extend(cpu_records(&keys, reps));
    }
    Ok(SortReport {
        device: gpu.name().to_string(),
        n: n as u64,
        bandwidth: Some(bw),
        records: rec,
        torch_missing,
    })
}

/// PyTorch's `sort` (stable, with indices) of the same keys as `i32`, median ms.
fn torch_sort(
    script: &std::path::Path,
    keys: &[u32],
    reps: usize,
) -> std::result::Result<f64, String> {
    let file = std::env::temp_dir().join(format!("tessera-sort-keys-{}.bin", std::process::id()));
    std::fs::write(&file, bytemuck::cast_slice::<u32, u8>(keys)).map_err(|e| e.to_string())?;
    let r = super::torch::run_args(
        script,
        &[
            "--keys",
            &file.to_string_lossy(),
            "--reps",
            &reps.to_string(),
        ],
    );
    let _ = std::fs::remove_file(&file);
    let t = r?;
    t.iter()
        .find(|(k, _)| k == "sort_i32_indices")
        .map(|&(_, v)| v)
        .ok_or_else(|| "the script did not report sort_i32_indices".into())
}

/// The CPU implementation (all cores), a few repetitions.
fn cpu_records(keys: &[u32], reps: usize) -> Vec<Record> {
    let n = keys.len();
    let vals: Vec<u32> = (0..n as u32).collect();
    let samples: Vec<f64> = (0..reps.clamp(1, 3))
        .map(|_| {
            let t = Instant::now();
            let r = cpu::sort_pairs(keys, Some(&vals), Order::Ascending);
            std::hint::black_box(r.ok());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let mut rec = vec![Record::new(
        "radix_sort",
        &format!("cpu LSB radix ({} threads)", rayon::current_num_threads()),
        "u32 key + u32 value",
        n as u64,
        median(&samples),
        f64::NAN,
    )];
    for bits in [4, 8, 10] {
        let t = Instant::now();
        std::hint::black_box(cpu::radix_partition(keys, &vals, 0, bits).ok());
        rec.push(Record::new(
            "partition_shuffle",
            "cpu stable (histogram + shuffle)",
            format!("{bits} bits"),
            n as u64,
            t.elapsed().as_secs_f64() * 1e3,
            f64::NAN,
        ));
    }
    rec
}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(args: &SortArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    // Keys, values, their sorted copies and the CPU's: about 6 columns of 4 bytes (u64 keys).
    tessera_host::preflight::check_memory(
        24u64 << args.log2n,
        &format!("bench sort --log2n {}", args.log2n),
        "pass a smaller --log2n",
    )?;
    let report = match gpu_or_skip("tessera bench sort") {
        Some(gpu) => run_gpu(&gpu, args)?,
        None => {
            println!("notice: no GPU found; timing the CPU implementation only");
            let n = 1usize << args.log2n;
            SortReport {
                device: "cpu".into(),
                n: n as u64,
                bandwidth: None,
                records: cpu_records(&random_vec::<u32>(n, 1), args.reps),
                torch_missing: Some("no GPU".into()),
            }
        }
    };
    super::print_report(
        "sort",
        &report.device,
        report.n,
        report.bandwidth.as_ref(),
        &report.records,
        report.torch_missing.as_deref(),
    );
    super::write_json(&args.json, &report)
}
