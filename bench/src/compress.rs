//! `tessera bench compress`: the GPU-FOR micro-benchmark of thesis §5.6.2. For every bit width
//! from 1 to 31, uniformly random values of that width (500 million by default): the bits per
//! value, the encoder's throughput on the host, the decode-and-sum and the decompression times
//! on the GPU, each against its model (the compressed bytes read once; plus 4 bytes per value
//! written for decompression) at the bandwidth measured in the same run, for D = 4, 8 and 16
//! blocks per thread block, and the plain sum of the same values uncompressed. Every GPU sum
//! is checked against the host's, and the decompressed column against the input at three
//! widths.
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, print_report, random_vec, write_json};
use tessera_host::compress::{Compressed, ForColumn};
use tessera_host::ops::{
    DeviceForColumn, ForTile, decompress_for_into, read_sum_into_for_bench, sum_for, sum_for_into,
};
use tessera_host::{Error, Result, gpu_or_skip};

/// Options of `tessera bench compress`.
#[derive(Clone, Debug, clap::Args)]
pub struct CompressArgs {
    /// Values per width (the thesis' 500 million by default).
    #[arg(long, default_value_t = 500_000_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000_000))]
    pub values: usize,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Only the widths 1, 8, 16, 24 and 31.
    #[arg(long)]
    pub quick: bool,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/compress.json")]
    pub json: PathBuf,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct CompressReport {
    /// Device name.
    pub device: String,
    /// Values per width.
    pub values: u64,
    /// Bandwidth measured in this run.
    pub bandwidth: Bandwidth,
    /// All figures.
    pub records: Vec<Record>,
    /// Per width: bits per value and the encoder's host throughput.
    pub widths: Vec<WidthInfo>,
}

/// The footprint and encoding speed at one width.
#[derive(Debug, Serialize)]
pub struct WidthInfo {
    /// Bit width of the values.
    pub bits: u32,
    /// GPU-FOR bits per value (data and block starts).
    pub bits_per_value: f64,
    /// Encoder throughput on the host, MB/s of input, on all cores.
    pub encode_mbps: f64,
}

/// nvCOMP's published GPU figures for reference (thesis Table 5.2 reports them against
/// GPU-FOR); printed under the table, not measured here.
const NVCOMP_NOTE: &str = "nvCOMP (cascaded / bitcomp) is not run here: no Rust binding on \
    this machine; the thesis compares against its published decompression rates";

/// Runs the suite.
pub fn run(args: &CompressArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    let n = args.values;
    let Some(gpu) = gpu_or_skip("tessera bench compress") else {
        return Ok(());
    };
    // The random bits, a width's values and its encoding on the host.
    tessera_host::preflight::check_memory(
        12 * n as u64,
        &format!("bench compress --values {n}"),
        "pass a smaller --values",
    )?;
    let (bw, mut records) = measure_bandwidth(&gpu, args.reps)?;
    let widths: Vec<u32> = if args.quick {
        vec![1, 8, 16, 24, 31]
    } else {
        (1..=31).collect()
    };
    let raw: Vec<u32> = random_vec(n, 21);
    let mut out = gpu.zeros::<u32>(n)?;
    let mut sum = gpu.zeros::<u64>(1)?;
    let mut infos = Vec::new();
    let plain_bytes = 4.0 * n as f64;
    for &bits in &widths {
        let mask = ((1u64 << bits) - 1) as u32;
        let values: Vec<u32> = raw.par_iter().map(|&x| x & mask).collect();
        let want: u64 = values.par_iter().map(|&x| x as u64).sum();
        let t = Instant::now();
        let col = ForColumn::encode(&values)?;
        let encode_mbps = plain_bytes / t.elapsed().as_secs_f64() / 1e6;
        infos.push(WidthInfo {
            bits,
            bits_per_value: col.bits_per_value(),
            encode_mbps,
        });
        let dev = DeviceForColumn::upload(&gpu, &col)?;
        drop(col);
        let bytes = dev.compressed_bytes() as f64;
        let param = format!("{bits} bits");
        let time = |work: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
            Ok(gpu.time(WARMUP, args.reps, work)?.median_ms())
        };
        let got = sum_for(&gpu, &dev)?;
        if got != want {
            return Err(Error::Data(format!(
                "bench compress: the GPU-FOR sum at {bits} bits is {got}, expected {want}"
            )));
        }
        let n64 = n as u64;
        for tile in ForTile::ALL {
            let name = format!("GPU-FOR D={}", tile.blocks());
            // The timed runs add up in `sum`, unchecked: the check above ran on a zeroed word.
            let ms = time(&mut || sum_for_into(&gpu, &dev, &mut sum, tile))?;
            let model = bw.model_ms(bytes, 0.0);
            records.push(Record::new("decode_and_sum", &name, &param, n64, ms, model));
            let ms = time(&mut || decompress_for_into(&gpu, &dev, &mut out, tile))?;
            let model = bw.model_ms(bytes, plain_bytes);
            records.push(Record::new("decompress", &name, &param, n64, ms, model));
        }
        if matches!(bits, 1 | 16 | 31) && out.to_vec(&gpu)? != values {
            return Err(Error::Data(format!(
                "bench compress: GPU-FOR decompression at {bits} bits differs from the input"
            )));
        }
        // The same values uncompressed, summed by the read probe.
        let plain = gpu.upload(&values)?;
        let ms = time(&mut || read_sum_into_for_bench(&gpu, &plain, &mut sum))?;
        records.push(Record::new(
            "decode_and_sum",
            "uncompressed",
            &param,
            n64,
            ms,
            bw.model_ms(plain_bytes, 0.0),
        ));
    }
    print_report("compress", gpu.name(), n as u64, Some(&bw), &records, None);
    println!(
        "\nbits per value and host encoding (GPU-FOR, {} threads):",
        rayon::current_num_threads()
    );
    for w in &infos {
        println!(
            "  {:2} bits: {:6.2} bits/value, {:7.0} MB/s",
            w.bits, w.bits_per_value, w.encode_mbps
        );
    }
    println!("note: {NVCOMP_NOTE}");
    write_json(
        &args.json,
        &CompressReport {
            device: gpu.name().to_string(),
            values: n as u64,
            bandwidth: bw,
            records,
            widths: infos,
        },
    )
}
