//! `tessera bench transfer`: moving columns between Arrow arrays (or `Vec`s) and the device,
//! against the link's bandwidth measured in the same run with a page-locked buffer (the
//! model: bytes over that bandwidth). Uploads by the driver's (pageable) copy, by
//! `Gpu::upload` and `upload_arrow` (staged from 1 MiB on) and from an Arrow buffer
//! page-locked in place, with the cost of locking it; downloads by every `DownloadPath`,
//! `to_vec` (the staged one) and `to_arrow`.
use std::path::PathBuf;
use std::time::Instant;

use arrow_array::UInt32Array;
use serde::Serialize;

use super::{Record, WARMUP, random_vec};
use tessera_host::runtime::{DownloadPath, Gpu};
use tessera_host::{Error, Result, gpu_or_skip};

/// Options of `tessera bench transfer`.
#[derive(Clone, Debug, clap::Args)]
pub struct TransferArgs {
    /// log2 of the column lengths (`u32` items) to move (16..=30 each).
    #[arg(long, value_delimiter = ',', default_value = "20,24,28",
          value_parser = clap::value_parser!(u32).range(16..=30))]
    pub log2n: Vec<u32>,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 5, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/transfer.json")]
    pub json: PathBuf,
}

/// The link's bandwidth in this run, from and to one page-locked buffer.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LinkBandwidth {
    /// Host to device, GB/s.
    pub h2d_gbps: f64,
    /// Device to host, GB/s.
    pub d2h_gbps: f64,
    /// Bytes of the probe copies.
    pub probe_bytes: u64,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct TransferReport {
    /// Device name.
    pub device: String,
    /// The link's bandwidth measured in this run.
    pub link: LinkBandwidth,
    /// All figures.
    pub records: Vec<Record>,
}

/// Median wall time in ms of `reps` calls of `f` after the warm-up ones; `f` returns once its
/// transfer is complete.
fn median_ms<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<f64> {
    for _ in 0..WARMUP {
        f()?;
    }
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        std::hint::black_box(f()?);
        t.push(start.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// The link's bandwidth both ways with a page-locked buffer of `n` items.
fn measure_link(gpu: &Gpu, n: usize, reps: usize) -> Result<LinkBandwidth> {
    let bytes = 4 * n;
    let err = |what| Error::driver(what, bytes);
    // SAFETY: uninitialized page-locked memory, only copied to and from (any bits are a u32).
    let mut host = unsafe { gpu.context().alloc_pinned_with_flags::<u32>(n, 0) }
        .map_err(err("allocating the page-locked probe"))?;
    let mut dev = gpu.zeros::<u32>(n)?;
    let h2d = median_ms(reps, || {
        gpu.stream()
            .memcpy_htod(&host, &mut dev.view_mut())
            .map_err(err("probing host to device"))?;
        gpu.synchronize()
    })?;
    let d2h = median_ms(reps, || {
        gpu.stream()
            .memcpy_dtoh(&dev.view(), &mut host)
            .map_err(err("probing device to host"))?;
        gpu.synchronize()
    })?;
    Ok(LinkBandwidth {
        h2d_gbps: bytes as f64 / h2d / 1e6,
        d2h_gbps: bytes as f64 / d2h / 1e6,
        probe_bytes: bytes as u64,
    })
}

/// Runs the suite.
pub fn run(args: &TransferArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    let Some(gpu) = gpu_or_skip("bench transfer") else {
        return Err(Error::invalid(
            "bench transfer measures host-device copies: it needs a GPU",
        ));
    };
    let largest = args.log2n.iter().copied().max().unwrap_or(24);
    let link = measure_link(&gpu, 1 << largest, args.reps)?;
    let mut records = Vec::new();
    for &log2n in &args.log2n {
        let n = 1usize << log2n;
        let bytes = 4.0 * n as f64;
        let param = format!("MiB={}", (4 * n) >> 20);
        let up_model = bytes / link.h2d_gbps / 1e6;
        let down_model = bytes / link.d2h_gbps / 1e6;
        let values: Vec<u32> = random_vec(n, u64::from(log2n));
        let array = UInt32Array::from(values.clone());
        let mut rec = |exp: &str, name: &str, t: f64, model: f64| {
            records.push(Record::new(exp, name, param.clone(), n as u64, t, model));
        };
        let t = median_ms(args.reps, || {
            gpu.upload_direct(&values).and_then(|c| sync(&gpu, c))
        })?;
        rec("upload", "driver's copy (pageable)", t, up_model);
        let t = median_ms(args.reps, || {
            gpu.upload(&values).and_then(|c| sync(&gpu, c))
        })?;
        rec("upload", "Gpu::upload (staged from 1 MiB)", t, up_model);
        let t = median_ms(args.reps, || {
            gpu.upload_arrow(&array).and_then(|c| sync(&gpu, c))
        })?;
        rec("upload", "upload_arrow (staged from 1 MiB)", t, up_model);
        let t = median_ms(args.reps, || gpu.pin_arrow(&array)?.upload(&gpu))?;
        rec("upload", "pin_arrow + upload (lock each time)", t, up_model);
        let pinned = gpu.pin_arrow(&array)?;
        if pinned.is_locked() {
            let t = median_ms(args.reps, || pinned.upload(&gpu))?;
            rec("upload", "PinnedArrow::upload (locked once)", t, up_model);
        }
        drop(pinned);
        let t = median_ms(args.reps, || gpu.pin_arrow(&array).map(|p| p.is_locked()))?;
        rec("lock", "pin_arrow + unlock", t, f64::NAN);

        let col = gpu.upload(&values)?;
        let t = median_ms(args.reps, || col.to_vec(&gpu))?;
        rec("download", "to_vec", t, down_model);
        let paths = [
            (DownloadPath::Pageable, "new Vec, driver's copy (pageable)"),
            (
                DownloadPath::Prefault,
                "pages faulted in by all cores, driver's copy",
            ),
            (DownloadPath::PrefaultLocked, "faulted in, page-locked, DMA"),
            (DownloadPath::Staged, "staged: DMA + copy out on all cores"),
        ];
        for (path, name) in paths {
            let t = median_ms(args.reps, || col.to_vec_with(&gpu, path))?;
            rec("download", name, t, down_model);
            if col.to_vec_with(&gpu, path)? != values {
                return Err(Error::Data(format!(
                    "download {path:?} returned other values"
                )));
            }
        }
        let t = median_ms(args.reps, || col.to_arrow(&gpu))?;
        rec("download", "to_arrow", t, down_model);
    }
    println!(
        "tessera bench transfer on {}: link measured in this run with a page-locked buffer of \
         {} MiB: host to device {:.1} GB/s, device to host {:.1} GB/s; model = bytes / that",
        gpu.name(),
        link.probe_bytes >> 20,
        link.h2d_gbps,
        link.d2h_gbps
    );
    super::print_table(&records);
    let report = TransferReport {
        device: gpu.name().to_string(),
        link,
        records,
    };
    super::write_json(&args.json, &report)
}

/// Waits for a column's upload to complete.
fn sync<T: tessera_host::DeviceItem>(
    gpu: &Gpu,
    col: tessera_host::DeviceColumn<T>,
) -> Result<tessera_host::DeviceColumn<T>> {
    gpu.synchronize()?;
    Ok(col)
}
