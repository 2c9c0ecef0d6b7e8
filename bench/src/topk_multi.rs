//! The multi-key top-k figures (thesis Figure 4-15): KV, KKV and KKKV tuples of `U(0, 1)`
//! float keys and a 4-byte integer value, the k sweep from 1 to 1024, each against one read of
//! all the tuple's columns (keys and value), the bound of a top-k that reads every column.
use super::{Bandwidth, Record, WARMUP, random_vec};
use tessera_host::Result;
use tessera_host::ops::{MultiPath, TopKMulti, TopKOrder};
use tessera_host::runtime::{DeviceColumn, Gpu};

/// The k of the sweep (1 to 1024 by powers of two).
const KS: [usize; 11] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// The tuple shapes: name and key columns.
const SHAPES: [(&str, usize); 3] = [("KV", 1), ("KKV", 2), ("KKKV", 3)];

/// Times [`TopKMulti`] on `2^log2n` tuples of each shape for every k of the sweep: records of
/// experiment `multi_key_f32`, each against one read of the tuple's columns at `bw`.
pub fn run_multi(gpu: &Gpu, bw: &Bandwidth, log2n: u32, reps: usize) -> Result<Vec<Record>> {
    let n = 1usize << log2n;
    let values = gpu.upload(&random_vec::<i32>(n, 40))?;
    let mut keys: Vec<DeviceColumn<f32>> = Vec::new();
    let mut tm = TopKMulti::new(gpu)?;
    let mut records = Vec::new();
    for (shape, nkeys) in SHAPES {
        while keys.len() < nkeys {
            keys.push(gpu.upload(&random_vec::<f32>(n, 41 + keys.len() as u64))?);
        }
        let cols: Vec<&DeviceColumn<f32>> = keys.iter().collect();
        let read = bw.model_ms((n * 4 * (nkeys + 1)) as f64, 0.0);
        for k in KS {
            let t = gpu.time(WARMUP, reps, || {
                tm.run(gpu, &cols, &values, k, TopKOrder::Largest)
                    .map(|_| ())
            })?;
            let path = match tm.path() {
                Some(MultiPath::SingleKey) => "single key",
                Some(MultiPath::Threshold) => "threshold",
                Some(MultiPath::ExactThreshold) => "exact threshold",
                Some(MultiPath::AllRows) => "all rows",
                None => "-",
            };
            records.push(Record::new(
                "multi_key_f32",
                &format!("top_k_multi ({path})"),
                format!("{shape} k={k}"),
                n as u64,
                t.median_ms(),
                read,
            ));
        }
    }
    Ok(records)
}
