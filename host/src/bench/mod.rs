//! Benchmark suites: every figure is a median time next to its bandwidth model, the model's
//! bandwidth measured in the same run, and their ratio; a table for people and JSON for
//! machines.
use serde::Serialize;

pub mod join;
pub mod ops;
pub mod pkjoin;
pub mod sort;
pub(crate) mod torch;

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

/// The device's bandwidth, measured by our read and copy kernels in the same run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bandwidth {
    /// Read bandwidth (bytes read / time of the read kernel), GB/s.
    pub read_gbps: f64,
    /// Copy bandwidth (bytes read + written / time of the copy kernel), GB/s.
    pub copy_gbps: f64,
    /// Write bandwidth derived from the two: written bytes over (copy time - read time).
    pub write_gbps: f64,
}

impl Bandwidth {
    /// Model time in ms for a kernel that reads `read` and writes `written` bytes once.
    pub fn model_ms(&self, read: f64, written: f64) -> f64 {
        (read / self.read_gbps + written / self.write_gbps) / 1e6
    }
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

/// Measures the read and copy bandwidth on `data` (uploaded here) with our probe kernels:
/// the bandwidth every model of the same run uses, and its two records.
pub fn measure_bandwidth(
    gpu: &crate::Gpu,
    data: &[u32],
    reps: usize,
) -> crate::Result<(Bandwidth, Vec<Record>)> {
    let n = data.len();
    let nf = n as f64;
    let du = gpu.upload(data)?;
    let mut sum = gpu.zeros::<u64>(1)?;
    let t_read = gpu
        .time(WARMUP, reps, || {
            crate::ops::read_sum_into_for_bench(gpu, &du, &mut sum)
        })?
        .median_ms();
    let mut dcopy = gpu.zeros::<u32>(n)?;
    let t_copy = gpu
        .time(WARMUP, reps, || crate::ops::copy_u32(gpu, &du, &mut dcopy))?
        .median_ms();
    let read_gbps = 4.0 * nf / t_read / 1e6;
    let copy_gbps = 8.0 * nf / t_copy / 1e6;
    let write_gbps = 4.0 * nf / ((t_copy - 4.0 * nf / read_gbps / 1e6).max(1e-9)) / 1e6;
    let bw = Bandwidth {
        read_gbps,
        copy_gbps,
        write_gbps,
    };
    let rec = vec![
        Record::new(
            "bandwidth",
            "read kernel (sum u32)",
            format!("{read_gbps:.0} GB/s"),
            n as u64,
            t_read,
            4.0 * nf / read_gbps / 1e6,
        ),
        Record::new(
            "bandwidth",
            "copy kernel (u32)",
            format!("{copy_gbps:.0} GB/s"),
            n as u64,
            t_copy,
            bw.model_ms(4.0 * nf, 4.0 * nf),
        ),
    ];
    Ok((bw, rec))
}

/// Prints records as an aligned table, one section per experiment.
pub fn print_table(records: &[Record]) {
    // One section per experiment, in order of first appearance, even when a suite measures
    // experiments interleaved (the partition sweep alternates histogram and shuffle).
    let mut order: Vec<&str> = Vec::new();
    for r in records {
        if !order.contains(&r.experiment.as_str()) {
            order.push(&r.experiment);
        }
    }
    let grouped = order
        .iter()
        .flat_map(|e| records.iter().filter(move |r| r.experiment == *e));
    let mut last = "";
    for r in grouped {
        if r.experiment != last {
            println!("\n## {}", r.experiment);
            println!(
                "{:<30} {:<16} {:>11} {:>11} {:>8}",
                "implementation", "param", "median ms", "model ms", "ratio"
            );
            last = &r.experiment;
        }
        let model = if r.model_ms.is_finite() {
            format!("{:.3}", r.model_ms)
        } else {
            "-".into()
        };
        let ratio = if r.ratio.is_finite() {
            format!("{:.2}", r.ratio)
        } else {
            "-".into()
        };
        println!(
            "{:<30} {:<16} {:>11.3} {:>11} {:>8}",
            r.implementation, r.param, r.median_ms, model, ratio
        );
    }
}
