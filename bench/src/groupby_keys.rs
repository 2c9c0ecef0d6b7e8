//! `tessera bench groupby --composite`: seed 000's table, the GPU group-by against the CPU
//! implementation (all cores) over 10^3 .. 10^8 rows and 1 .. 4 key columns. Key column `c`
//! is drawn uniformly below 1000 and typed `u32`, `i32`, `i64`, `u32` in turn (one column
//! groups as it is; two to four are packed, into 32 bits up to three columns and into 64 bits
//! at four, which takes the sort-based group-by); the values are a `u32` and an `f64` column
//! with the seed's five reductions (count, sum, min, max, mean). The GPU times the whole call
//! with the input on the device, once with the result left there and once brought to the
//! host; the speedup is the CPU's time over the latter.
use std::time::Instant;

use super::{Bandwidth, Record, WARMUP, fixed, markdown_table, random_vec};
use tessera_host::ops::{Agg, DeviceKeyColumn, DeviceValueColumn, KeyColumn, ValueColumn};
use tessera_host::runtime::{DeviceColumn, Gpu};
use tessera_host::{Result, cpu, ops};

/// The experiment's name in the records.
pub const EXPERIMENT: &str = "groupby_composite";

/// The label of the GPU call with its result on the host.
const ON_HOST: &str = "tessera group_by, result on the host";

/// The label of the CPU implementation (before its thread count).
const CPU: &str = "cpu";

/// Distinct values of each key column.
const KEY_VALUES: u64 = 1000;

/// The seed's reductions over a `u32` (column 0) and an `f64` (column 1) value column.
const AGGS: [Agg; 5] = [
    Agg::Count,
    Agg::Sum(0),
    Agg::Min(1),
    Agg::Max(1),
    Agg::Mean(1),
];

/// One key column of the table's rows.
enum Keys {
    U32(Vec<u32>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// Key column `c` of `n` rows: uniform below [`KEY_VALUES`], typed by `c` (and shifted into
/// the negative for the signed ones).
fn key_column(c: usize, n: usize) -> Keys {
    let below: Vec<u32> = random_vec::<u32>(n, 3000 + c as u64)
        .into_iter()
        .map(|x| ((x as u64 * KEY_VALUES) >> 32) as u32)
        .collect();
    match c % 4 {
        1 => Keys::I32(below.into_iter().map(|x| x as i32 - 500).collect()),
        2 => Keys::I64(below.into_iter().map(|x| x as i64 - (1 << 40)).collect()),
        _ => Keys::U32(below),
    }
}

impl Keys {
    fn host(&self) -> KeyColumn<'_> {
        match self {
            Keys::U32(v) => KeyColumn::U32(v),
            Keys::I32(v) => KeyColumn::I32(v),
            Keys::I64(v) => KeyColumn::I64(v),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Keys::I64(_) => 8,
            _ => 4,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Keys::U32(_) => "u32",
            Keys::I32(_) => "i32",
            Keys::I64(_) => "i64",
        }
    }
}

/// A key column on the device, owned (the group-by borrows it as a [`DeviceKeyColumn`]); the
/// tests upload theirs with it too.
pub enum DeviceKeys {
    /// `u32` keys.
    U32(DeviceColumn<u32>),
    /// `i32` keys.
    I32(DeviceColumn<i32>),
    /// `i64` keys.
    I64(DeviceColumn<i64>),
}

impl DeviceKeys {
    /// The key column `k` uploaded.
    pub fn upload(gpu: &Gpu, k: KeyColumn) -> Result<Self> {
        Ok(match k {
            KeyColumn::U32(v) => DeviceKeys::U32(gpu.upload(v)?),
            KeyColumn::I32(v) => DeviceKeys::I32(gpu.upload(v)?),
            KeyColumn::I64(v) => DeviceKeys::I64(gpu.upload(v)?),
        })
    }

    /// The column as the group-by takes it.
    pub fn column(&self) -> DeviceKeyColumn<'_> {
        match self {
            DeviceKeys::U32(c) => DeviceKeyColumn::U32(c),
            DeviceKeys::I32(c) => DeviceKeyColumn::I32(c),
            DeviceKeys::I64(c) => DeviceKeyColumn::I64(c),
        }
    }
}

/// The table's rows: 10^3 up to `10^max_log10`.
pub fn sizes(max_log10: u32) -> Vec<usize> {
    (3..=max_log10).map(|e| 10usize.pow(e)).collect()
}

/// Runs the table: GPU records when `gpu` is given (its model from `bw`), CPU records always.
pub fn run(
    gpu: Option<&Gpu>,
    bw: Option<&Bandwidth>,
    max_log10: u32,
    reps: usize,
) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    let largest = *sizes(max_log10).last().unwrap_or(&0);
    let all_keys: Vec<Keys> = (0..4).map(|c| key_column(c, largest)).collect();
    let vu = random_vec::<u32>(largest, 3100);
    let vd: Vec<f64> = random_vec::<u32>(largest, 3101)
        .into_iter()
        .map(|x| x as f64 / 1e3 - 2e6)
        .collect();
    for n in sizes(max_log10) {
        for cols in 1..=4 {
            let keys = &all_keys[..cols];
            let types: Vec<&str> = keys.iter().map(Keys::name).collect();
            let param = format!("n=10^{} keys={cols} ({})", n.ilog10(), types.join(", "));
            let host_keys: Vec<KeyColumn> = keys
                .iter()
                .map(|k| match k.host() {
                    KeyColumn::U32(v) => KeyColumn::U32(&v[..n]),
                    KeyColumn::I32(v) => KeyColumn::I32(&v[..n]),
                    KeyColumn::I64(v) => KeyColumn::I64(&v[..n]),
                })
                .collect();
            let host_values = [ValueColumn::U32(&vu[..n]), ValueColumn::F64(&vd[..n])];
            let bytes = n * (12 + keys.iter().map(Keys::bytes).sum::<usize>());
            let model = bw.map_or(f64::NAN, |bw| bw.model_ms(bytes as f64, 0.0));
            if let Some(gpu) = gpu {
                let dk: Vec<DeviceKeys> = host_keys
                    .iter()
                    .map(|&k| DeviceKeys::upload(gpu, k))
                    .collect::<Result<_>>()?;
                let k: Vec<DeviceKeyColumn> = dk.iter().map(DeviceKeys::column).collect();
                let (du, dd) = (gpu.upload(&vu[..n])?, gpu.upload(&vd[..n])?);
                let v = [DeviceValueColumn::U32(&du), DeviceValueColumn::F64(&dd)];
                let mut chose = String::new();
                let t = gpu
                    .time(WARMUP, reps, || {
                        let (r, c) = ops::group_by_device(gpu, &k, &v, &AGGS)?;
                        chose = format!("{:?}", c.variant).to_lowercase();
                        std::hint::black_box(r.groups());
                        Ok(())
                    })?
                    .median_ms();
                let label = format!("tessera group_by ({chose})");
                records.push(Record::new(EXPERIMENT, &label, &param, n as u64, t, model));
                let gpu_host_ms = gpu
                    .time(WARMUP, reps, || {
                        std::hint::black_box(ops::group_by(gpu, &k, &v, &AGGS)?.groups());
                        Ok(())
                    })?
                    .median_ms();
                records.push(Record::new(
                    EXPERIMENT,
                    ON_HOST,
                    &param,
                    n as u64,
                    gpu_host_ms,
                    model,
                ));
            }
            // The CPU: the median of a few runs (one from 10^7 rows, where a run takes
            // seconds).
            let runs = if n >= 10_000_000 { 1 } else { reps.clamp(1, 5) };
            let mut times = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                std::hint::black_box(cpu::group_by(&host_keys, &host_values, &AGGS)?.groups());
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(f64::total_cmp);
            let cpu_ms = times[times.len() / 2];
            let label = format!("{CPU} ({} threads)", rayon::current_num_threads());
            records.push(Record::new(
                EXPERIMENT,
                &label,
                &param,
                n as u64,
                cpu_ms,
                f64::NAN,
            ));
        }
    }
    Ok(records)
}

/// The speedup table of `records` (from [`run`]): the CPU's time over the GPU call's with its
/// result on the host, by rows and key columns; `None` without GPU figures.
pub fn speedups(records: &[Record]) -> Option<comfy_table::Table> {
    let of = |label: &str, param: &str| {
        records
            .iter()
            .find(|r| {
                r.experiment == EXPERIMENT
                    && r.implementation.starts_with(label)
                    && r.param == param
            })
            .map(|r| r.median_ms)
    };
    let mut sizes: Vec<u64> = records
        .iter()
        .filter(|r| r.experiment == EXPERIMENT)
        .map(|r| r.n)
        .collect();
    sizes.dedup();
    let mut any = false;
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|&n| {
            let mut row = vec![format!("10^{}", n.ilog10())];
            for cols in 1..=4 {
                let param = records
                    .iter()
                    .find(|r| {
                        r.experiment == EXPERIMENT
                            && r.n == n
                            && r.param.contains(&format!("keys={cols} "))
                    })
                    .map(|r| r.param.clone())
                    .unwrap_or_default();
                row.push(match (of(CPU, &param), of(ON_HOST, &param)) {
                    (Some(c), Some(g)) => {
                        any = true;
                        format!("{}x", fixed(c / g, 1))
                    }
                    _ => "-".into(),
                });
            }
            row
        })
        .collect();
    let header = ["rows", "1 key", "2 keys", "3 keys", "4 keys"];
    any.then(|| markdown_table(&header, rows, 1))
}
