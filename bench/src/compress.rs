//! `tessera bench compress`: the compression micro-benchmarks of thesis §5.6.2 and §5.6.3, on
//! 500 million values by default.
//!
//! * Bit widths (§5.6.2, sections `decode_and_sum` and `decompress`): for every width from 1
//!   to 31, uniformly random values of that width. GPU-FOR for D = 4, 8, 16 and 32 blocks per
//!   thread block; every other scheme with a GPU decoder ([`DeviceEncoded::SCHEMES`]) at its
//!   decoders' own configuration, but RLE, whose runs on random values all have length 1; and
//!   the plain sum of the same values uncompressed.
//! * Distributions (§5.6.3, sections `dist_sum` and `dist_decompress`): D1 sorted values with
//!   4 to 2^28 distinct values, D2 normal with standard deviation 20 and mean 2^6 to 2^30, D3
//!   Zipf with alpha 1 to 5 over 2^20 values ([`Dist`]). Every scheme with a GPU decoder, and
//!   the uncompressed sum.
//!
//! * The ablation of §5.3.2-5.3.3 (section `ablation`): GPU-FOR decompression at 16 bits from
//!   the thesis' base algorithm through its three optimizations, and the miniblock-free
//!   variant ([`tessera_host::ops::ForAblation`]).
//!
//! Each time is a median against its model: the compressed bytes read once, plus 4 bytes per
//! value written for decompression, at the bandwidth measured in the same run. Every scheme's
//! footprint (bits per value) and host encoding speed is reported at every point, at the
//! distributions' also that of the schemes without a GPU decoder and the one
//! [`Scheme::smallest`] picks. Every GPU sum is checked against the host's, and every
//! decoder's output against the input at widths 1, 16 and 31 and at each distribution's first
//! point.
use std::path::PathBuf;
use std::time::Instant;

use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution as _, Normal, Zipf};
use rayon::prelude::*;
use serde::Serialize;

use super::{Bandwidth, Record, WARMUP, measure_bandwidth, print_report, random_vec, write_json};
use tessera_host::compress::{Encoded, Scheme};
use tessera_host::ops::{
    DeviceDforColumn, DeviceEncoded, DeviceForColumn, ForTile, decompress_dfor_into,
    decompress_for_into, read_sum_into_for_bench, sum_dfor_into, sum_for_into,
};
use tessera_host::{DeviceColumn, Error, Gpu, Result, gpu_or_skip};

/// A column decoded with tiles of each D: its scheme's name, compressed bytes and decoders.
struct Tiled<'a> {
    scheme: &'static str,
    bytes: f64,
    sum: &'a dyn Fn(ForTile, &mut DeviceColumn<u64>) -> Result<()>,
    decompress: &'a dyn Fn(ForTile, &mut DeviceColumn<u32>) -> Result<()>,
}

/// Options of `tessera bench compress`.
#[derive(Clone, Debug, clap::Args)]
pub struct CompressArgs {
    /// Values per point, widths and distributions (the thesis' 500 million by default).
    #[arg(long, default_value_t = 500_000_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000_000))]
    pub values: usize,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// Only the widths 1, 16 and 31, and each distribution's first point.
    #[arg(long)]
    pub quick: bool,
    /// Only the bit-width sweep, none of the distributions.
    #[arg(long)]
    pub no_distributions: bool,
    /// None of the bit widths (nor the ablation): the distributions only.
    #[arg(long)]
    pub no_widths: bool,
    /// Only these distributions (D1, D2, D3; comma-separated; all by default).
    #[arg(long, value_delimiter = ',', value_parser = ["D1", "D2", "D3"])]
    pub dist: Vec<String>,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/compress.json")]
    pub json: PathBuf,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct CompressReport {
    /// Device name.
    pub device: String,
    /// Values per point.
    pub values: u64,
    /// Bandwidth measured in this run.
    pub bandwidth: Bandwidth,
    /// All figures.
    pub records: Vec<Record>,
    /// Per width: every measured scheme's footprint and encoding speed.
    pub widths: Vec<WidthInfo>,
    /// Per distribution point: every scheme's footprint and encoding speed, and the smallest.
    pub distributions: Vec<DistInfo>,
}

/// The footprints and encoding speeds at one width.
#[derive(Debug, Serialize)]
pub struct WidthInfo {
    /// Bit width of the values.
    pub bits: u32,
    /// Every scheme measured at this width, GPU-FOR first.
    pub schemes: Vec<SchemeInfo>,
}

/// The footprints and encoding speeds at one point of a distribution.
#[derive(Debug, Serialize)]
pub struct DistInfo {
    /// `D1`, `D2` or `D3`.
    pub distribution: &'static str,
    /// The point, e.g. `2^14 distinct`.
    pub param: String,
    /// Every scheme, in [`Scheme::ALL`]'s order.
    pub schemes: Vec<SchemeInfo>,
    /// The scheme [`Scheme::smallest`] picks.
    pub smallest: &'static str,
}

/// One scheme's column at one point.
#[derive(Debug, Serialize)]
pub struct SchemeInfo {
    /// The scheme's name ([`Scheme::name`]).
    pub scheme: &'static str,
    /// Bits per value of the footprint (header and every array).
    pub bits_per_value: f64,
    /// The footprint in bytes.
    pub compressed_bytes: u64,
    /// Encoder throughput on the host, MB/s of input, on all cores.
    pub encode_mbps: f64,
    /// Whether the scheme has GPU decoders, timed at this point.
    pub gpu_decoder: bool,
}

/// nvCOMP's published GPU figures for reference (thesis Table 5.2 reports them against
/// GPU-FOR); printed under the table, not measured here.
const NVCOMP_NOTE: &str = "nvCOMP (cascaded / bitcomp) is not run here: no Rust binding on \
    this machine; the thesis compares against its published decompression rates";

/// The widths at which every decoder's output is compared with the input.
const CHECKED_WIDTHS: [u32; 3] = [1, 16, 31];

/// Distinct values of D3's Zipf domain.
pub const ZIPF_DOMAIN: u64 = 1 << 20;

/// D2's standard deviation.
pub const NORMAL_SD: f64 = 20.0;

/// Runs the suite.
pub fn run(args: &CompressArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    let n = args.values;
    let Some(gpu) = gpu_or_skip("tessera bench compress") else {
        return Ok(());
    };
    // On the host at once: the random bits and a width's values (or a distribution's), one
    // encoding (up to 8 bytes per value: RLE without runs) and the encoder's temporaries, or
    // a decompressed column read back.
    tessera_host::preflight::check_memory(
        20 * n as u64,
        &format!("bench compress --values {n}"),
        "pass a smaller --values",
    )?;
    let (bw, records) = measure_bandwidth(&gpu, args.reps)?;
    let mut bench = Bench {
        gpu: &gpu,
        bw,
        reps: args.reps,
        n,
        out: gpu.zeros(n)?,
        sum: gpu.zeros(1)?,
        records,
    };
    let widths: Vec<u32> = if args.no_widths {
        Vec::new()
    } else if args.quick {
        vec![1, 16, 31]
    } else {
        (1..=31).collect()
    };
    let raw: Vec<u32> = if widths.is_empty() {
        Vec::new()
    } else {
        random_vec(n, 21)
    };
    #[cfg(feature = "sweeps")]
    if !widths.is_empty() {
        eprintln!("bench compress: the ablation of §5.3.2-5.3.3 at 16 bits");
        bench.ablation(&raw)?;
    }
    let mut width_infos = Vec::with_capacity(widths.len());
    for (i, &bits) in widths.iter().enumerate() {
        eprintln!("bench compress: {bits} bits ({}/{})", i + 1, widths.len());
        width_infos.push(bench.width(&raw, bits)?);
    }
    drop(raw);
    let groups: Vec<Vec<Dist>> = if args.no_distributions {
        Vec::new()
    } else {
        Dist::points(args.quick)
            .into_iter()
            .filter(|g| args.dist.is_empty() || args.dist.iter().any(|d| d == g[0].name()))
            .collect()
    };
    let total: usize = groups.iter().map(Vec::len).sum();
    let mut dist_infos = Vec::with_capacity(total);
    for group in &groups {
        for (i, &dist) in group.iter().enumerate() {
            let done = dist_infos.len();
            eprintln!("bench compress: {} ({}/{total})", dist.label(), done + 1);
            // The decoders' output is compared with the input at each one's first point.
            dist_infos.push(bench.distribution(dist, i == 0)?);
        }
    }
    let records = bench.records;
    print_report("compress", gpu.name(), n as u64, Some(&bw), &records, None);
    print_widths(&width_infos);
    print_distributions(&dist_infos);
    println!("note: {NVCOMP_NOTE}");
    write_json(
        &args.json,
        &CompressReport {
            device: gpu.name().to_string(),
            values: n as u64,
            bandwidth: bw,
            records,
            widths: width_infos,
            distributions: dist_infos,
        },
    )
}

/// What every measurement of a run shares: the device and the bandwidth of the run, the
/// buffers the decoders write, and the records so far.
struct Bench<'g> {
    gpu: &'g Gpu,
    bw: Bandwidth,
    reps: usize,
    /// Values per point.
    n: usize,
    /// The decompressed column, reused by every decoder.
    out: DeviceColumn<u32>,
    /// The word the timed sums add into, unchecked (each check sums into a zeroed word).
    sum: DeviceColumn<u64>,
    records: Vec<Record>,
}

/// One point's place in the report: its two sections, its parameter, and whether the decoders'
/// output is compared with the input there.
struct Point<'a> {
    sum: &'static str,
    decompress: &'static str,
    param: &'a str,
    check: bool,
}

impl Bench<'_> {
    /// The GPU-FOR tiles and every other scheme with a GPU decoder but the run-based ones on
    /// uniformly random values of `bits` bits (`raw` masked), and the uncompressed sum.
    fn width(&mut self, raw: &[u32], bits: u32) -> Result<WidthInfo> {
        let mask = ((1u64 << bits) - 1) as u32;
        let values: Vec<u32> = raw.par_iter().map(|&x| x & mask).collect();
        let want = host_sum(&values);
        let param = format!("{bits} bits");
        let at = Point {
            sum: "decode_and_sum",
            decompress: "decompress",
            param: &param,
            check: CHECKED_WIDTHS.contains(&bits),
        };
        let mut schemes = Vec::new();
        for scheme in DeviceEncoded::SCHEMES {
            if run_based(scheme) {
                continue;
            }
            let (enc, info) = encode(scheme, &values, true)?;
            match enc {
                Encoded::For(col) => {
                    let dev = DeviceForColumn::upload(self.gpu, &col)?;
                    drop(col);
                    let bytes = dev.compressed_bytes() as f64;
                    let tiles = Tiled {
                        scheme: "GPU-FOR",
                        bytes,
                        sum: &|t, s| sum_for_into(self.gpu, &dev, s, t),
                        decompress: &|t, o| decompress_for_into(self.gpu, &dev, o, t),
                    };
                    self.tiles(tiles, &values, want, &at)?;
                }
                Encoded::Dfor(col) => {
                    let dev = DeviceDforColumn::upload(self.gpu, &col)?;
                    drop(col);
                    let bytes = dev.compressed_bytes() as f64;
                    let tiles = Tiled {
                        scheme: "GPU-DFOR",
                        bytes,
                        sum: &|t, s| sum_dfor_into(self.gpu, &dev, s, t),
                        decompress: &|t, o| decompress_dfor_into(self.gpu, &dev, o, t),
                    };
                    self.tiles(tiles, &values, want, &at)?;
                }
                enc => self.measure(enc, &values, want, &at)?,
            }
            schemes.push(info);
        }
        self.uncompressed(at.sum, &values, &param)?;
        Ok(WidthInfo { bits, schemes })
    }

    /// Every scheme on one point of a distribution: its footprint, and for those with a GPU
    /// decoder its decoders' times; the uncompressed sum; the scheme `Scheme::smallest` picks.
    fn distribution(&mut self, dist: Dist, check: bool) -> Result<DistInfo> {
        let values = dist.generate(self.n, 56);
        let want = host_sum(&values);
        let label = dist.label();
        let at = Point {
            sum: "dist_sum",
            decompress: "dist_decompress",
            param: &label,
            check,
        };
        // Every scheme once, in the order `Scheme::smallest` tries them, rather than that
        // call's second encoding of each.
        let mut schemes = Vec::with_capacity(Scheme::ALL.len());
        let mut sizes = Vec::with_capacity(Scheme::ALL.len());
        for scheme in Scheme::ALL {
            let gpu_decoder = DeviceEncoded::SCHEMES.contains(&scheme);
            let (enc, info) = encode(scheme, &values, gpu_decoder)?;
            sizes.push((scheme, enc.compressed_bytes()));
            schemes.push(info);
            if gpu_decoder {
                self.measure(enc, &values, want, &at)?;
            }
        }
        self.uncompressed(at.sum, &values, &label)?;
        let smallest = smallest(&sizes)
            .ok_or_else(|| Error::invalid("bench compress: no scheme to encode with"))?;
        Ok(DistInfo {
            distribution: dist.name(),
            param: dist.param(),
            schemes,
            smallest: smallest.name(),
        })
    }

    /// Uploads `enc` (then frees its host copy), checks its GPU sum, times its decode-and-sum
    /// and its decompression against their models, and at a checked point compares the
    /// decompressed column with `values`. The device column is freed on return.
    fn measure(&mut self, enc: Encoded, values: &[u32], want: u64, at: &Point) -> Result<()> {
        let gpu = self.gpu;
        let name = enc.scheme().name();
        let dev = DeviceEncoded::upload(gpu, &enc)?;
        drop(enc);
        check_sum(name, at.param, dev.sum(gpu)?, want)?;
        let bytes = dev.compressed_bytes() as f64;
        let ms = time(gpu, self.reps, || dev.sum_into(gpu, &mut self.sum))?;
        self.record(at.sum, name, at.param, ms, self.bw.model_ms(bytes, 0.0));
        self.clear_out(at.check)?;
        let ms = time(gpu, self.reps, || dev.decompress_into(gpu, &mut self.out))?;
        let model = self.bw.model_ms(bytes, self.plain_bytes());
        self.record(at.decompress, name, at.param, ms, model);
        self.check_out(at.check, name, at.param, values)
    }

    /// [`Bench::measure`] for GPU-FOR or GPU-DFOR, for each D of [`ForTile::ALL`]
    /// (implementation `GPU-FOR D=..`, `GPU-DFOR D=..`).
    fn tiles(&mut self, t: Tiled<'_>, values: &[u32], want: u64, at: &Point) -> Result<()> {
        let gpu = self.gpu;
        let bytes = t.bytes;
        for tile in ForTile::ALL {
            let name = format!("{} D={}", t.scheme, tile.blocks());
            let mut sum = gpu.zeros::<u64>(1)?;
            (t.sum)(tile, &mut sum)?;
            check_sum(&name, at.param, sum.to_vec(gpu)?[0], want)?;
            let ms = time(gpu, self.reps, || (t.sum)(tile, &mut self.sum))?;
            self.record(at.sum, &name, at.param, ms, self.bw.model_ms(bytes, 0.0));
            self.clear_out(at.check)?;
            let ms = time(gpu, self.reps, || (t.decompress)(tile, &mut self.out))?;
            let model = self.bw.model_ms(bytes, self.plain_bytes());
            self.record(at.decompress, &name, at.param, ms, model);
            self.check_out(at.check, &name, at.param, values)?;
        }
        Ok(())
    }

    /// The GPU-FOR decompression ablation of thesis §5.3.2-5.3.3 (section `ablation`) on
    /// uniformly random values of 16 bits, the thesis' sample data set (`raw` masked): from
    /// Algorithm 6 to the precomputed miniblock offsets, and the miniblock-free variant on the
    /// same values encoded with one width per block; every output checked. The product
    /// decoders' rows are the `decompress` section's at 16 bits.
    #[cfg(feature = "sweeps")]
    fn ablation(&mut self, raw: &[u32]) -> Result<()> {
        use tessera_host::compress::ForColumn;
        use tessera_host::ops::ForAblation;
        let gpu = self.gpu;
        let values: Vec<u32> = raw.par_iter().map(|&x| x & 0xffff).collect();
        let param = "16 bits";
        let cols = [
            DeviceForColumn::upload(gpu, &ForColumn::encode(&values)?)?,
            DeviceForColumn::upload(gpu, &ForColumn::encode_one_width(&values)?)?,
        ];
        for row in ForAblation::all() {
            let col = &cols[row.one_width as usize];
            let name = format!("{} D={}", row.name, row.blocks);
            self.clear_out(true)?;
            let ms = time(gpu, self.reps, || {
                row.decompress_into(gpu, col, &mut self.out)
            })?;
            let model = self
                .bw
                .model_ms(col.compressed_bytes() as f64, self.plain_bytes());
            self.record("ablation", &name, param, ms, model);
            self.check_out(true, &name, param, &values)?;
        }
        Ok(())
    }

    /// The same values uncompressed, summed by the read probe.
    fn uncompressed(&mut self, section: &'static str, values: &[u32], param: &str) -> Result<()> {
        let gpu = self.gpu;
        let plain = gpu.upload(values)?;
        let ms = time(gpu, self.reps, || {
            read_sum_into_for_bench(gpu, &plain, &mut self.sum)
        })?;
        let model = self.bw.model_ms(self.plain_bytes(), 0.0);
        self.record(section, "uncompressed", param, ms, model);
        Ok(())
    }

    /// At a checked point, a fresh zeroed output column, so that a decoder that wrote
    /// nothing cannot pass on the previous decoder's output.
    fn clear_out(&mut self, check: bool) -> Result<()> {
        if check {
            // The old column goes first: two would need twice the memory.
            self.out = self.gpu.zeros(0)?;
            self.out = self.gpu.zeros(self.n)?;
        }
        Ok(())
    }

    /// At a checked point, `Err` naming `name` and `param` unless the output is `values`.
    fn check_out(&self, check: bool, name: &str, param: &str, values: &[u32]) -> Result<()> {
        if check && self.out.to_vec(self.gpu)? != values {
            return Err(Error::Data(format!(
                "bench compress: {name} decompression at {param} differs from the input"
            )));
        }
        Ok(())
    }

    /// The bytes of the values uncompressed.
    fn plain_bytes(&self) -> f64 {
        4.0 * self.n as f64
    }

    fn record(&mut self, section: &str, name: &str, param: &str, ms: f64, model: f64) {
        let r = Record::new(section, name, param, self.n as u64, ms, model);
        self.records.push(r);
    }
}

/// The median of `reps` timed runs of `work` after the warm-up, ms.
fn time(gpu: &Gpu, reps: usize, work: impl FnMut() -> Result<()>) -> Result<f64> {
    Ok(gpu.time(WARMUP, reps, work)?.median_ms())
}

/// The sum of `values` on the host.
fn host_sum(values: &[u32]) -> u64 {
    values.par_iter().map(|&x| x as u64).sum()
}

/// `Err` naming the decoder and the point unless the GPU's sum is the host's.
fn check_sum(name: &str, param: &str, got: u64, want: u64) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::Data(format!(
            "bench compress: the {name} sum at {param} is {got}, expected {want}"
        )))
    }
}

/// Whether `scheme` encodes runs, which uniformly random values do not have.
fn run_based(scheme: Scheme) -> bool {
    matches!(scheme, Scheme::Rle | Scheme::Rfor)
}

/// `values` in `scheme`, with its footprint and the encoder's throughput.
fn encode(scheme: Scheme, values: &[u32], gpu_decoder: bool) -> Result<(Encoded, SchemeInfo)> {
    let t = Instant::now();
    let enc = scheme.encode(values)?;
    let secs = t.elapsed().as_secs_f64();
    let info = SchemeInfo {
        scheme: scheme.name(),
        bits_per_value: enc.bits_per_value(),
        compressed_bytes: enc.compressed_bytes() as u64,
        encode_mbps: 4.0 * values.len() as f64 / secs.max(1e-9) / 1e6,
        gpu_decoder,
    };
    Ok((enc, info))
}

/// The scheme [`Scheme::smallest`] keeps among `sizes` (each scheme's footprint in bytes, in
/// the order that call tries them): the first of the smallest.
fn smallest(sizes: &[(Scheme, usize)]) -> Option<Scheme> {
    let min = sizes.iter().map(|s| s.1).min()?;
    sizes.iter().find(|s| s.1 == min).map(|s| s.0)
}

/// A distribution of §5.6.3 at one point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// D1: sorted, `distinct` values: `i * distinct / n` at position `i` of `n` (every value
    /// below `distinct` where `n >= distinct`).
    Sorted {
        /// Distinct values.
        distinct: u64,
    },
    /// D2: normal with standard deviation [`NORMAL_SD`] and this mean, rounded and clamped
    /// to `u32`.
    Normal {
        /// The mean.
        mean: u64,
    },
    /// D3: Zipf with exponent `alpha` over the [`ZIPF_DOMAIN`] values from 0, 0 the most
    /// frequent.
    Zipf {
        /// The exponent.
        alpha: u32,
    },
}

impl Dist {
    /// The points of D1, D2 and D3, one list each; with `quick` each one's first (the host's
    /// encoding of every scheme at 500M values bounds the run's time, not the GPU).
    pub fn points(quick: bool) -> Vec<Vec<Dist>> {
        let d1 = [2, 6, 10, 14, 18, 22, 26, 28].map(|k| Dist::Sorted { distinct: 1 << k });
        let d2 = [6, 10, 14, 18, 22, 26, 30].map(|k| Dist::Normal { mean: 1 << k });
        let d3 = [1, 2, 3, 4, 5].map(|alpha| Dist::Zipf { alpha });
        let firsts = |d: &[Dist]| -> Vec<Dist> { if quick { vec![d[0]] } else { d.to_vec() } };
        vec![firsts(&d1), firsts(&d2), firsts(&d3)]
    }

    /// `D1`, `D2` or `D3`.
    pub fn name(self) -> &'static str {
        match self {
            Dist::Sorted { .. } => "D1",
            Dist::Normal { .. } => "D2",
            Dist::Zipf { .. } => "D3",
        }
    }

    /// The point within its distribution, e.g. `2^14 distinct`.
    pub fn param(self) -> String {
        match self {
            Dist::Sorted { distinct } => format!("{} distinct", pow2(distinct)),
            Dist::Normal { mean } => format!("mean {}", pow2(mean)),
            Dist::Zipf { alpha } => format!("alpha {alpha}"),
        }
    }

    /// The distribution and the point, e.g. `D1 2^14 distinct`: the records' parameter.
    pub fn label(self) -> String {
        format!("{} {}", self.name(), self.param())
    }

    /// `n` values of the distribution, generated in parallel: the same for `seed` whatever
    /// the thread count.
    pub fn generate(self, n: usize, seed: u64) -> Vec<u32> {
        match self {
            Dist::Sorted { distinct } => (0..n as u64)
                .into_par_iter()
                .map(|i| (i * distinct / n as u64) as u32)
                .collect(),
            Dist::Normal { mean } => {
                let d = Normal::new(mean as f64, NORMAL_SD).expect("a positive deviation");
                par_fill(n, seed, |rng| {
                    d.sample(rng).round().clamp(0.0, u32::MAX as f64) as u32
                })
            }
            Dist::Zipf { alpha } => {
                let d = Zipf::new(ZIPF_DOMAIN as f64, alpha as f64).expect("a valid domain");
                // Zipf draws 1..=domain.
                par_fill(n, seed, |rng| d.sample(rng) as u32 - 1)
            }
        }
    }
}

/// `x` as `2^k` where it is a power of two.
fn pow2(x: u64) -> String {
    if x.is_power_of_two() {
        format!("2^{}", x.trailing_zeros())
    } else {
        x.to_string()
    }
}

/// `n` draws of `draw`, in parallel chunks of 2^20 with one seeded generator each (as
/// [`random_vec`]): the same for `seed` whatever the thread count.
fn par_fill(n: usize, seed: u64, draw: impl Fn(&mut StdRng) -> u32 + Sync) -> Vec<u32> {
    let mut v = vec![0u32; n];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
        let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        c.iter_mut().for_each(|x| *x = draw(&mut rng));
    });
    v
}

/// Prints each width's footprints and host encoding speeds.
fn print_widths(infos: &[WidthInfo]) {
    let Some(first) = infos.first() else {
        return;
    };
    println!(
        "\nbits per value and host encoding MB/s ({} threads):",
        rayon::current_num_threads()
    );
    let mut header = vec!["width"];
    header.extend(first.schemes.iter().map(|s| s.scheme));
    let rows = infos.iter().map(|w| {
        let mut row = vec![format!("{} bits", w.bits)];
        row.extend(
            w.schemes
                .iter()
                .map(|s| format!("{:.2} {:.0}", s.bits_per_value, s.encode_mbps)),
        );
        row
    });
    println!("{}", super::markdown_table(&header, rows, 1));
}

/// Prints each distribution point's footprints and the scheme `Scheme::smallest` picks.
fn print_distributions(infos: &[DistInfo]) {
    let Some(first) = infos.first() else {
        return;
    };
    println!("\nbits per value of every scheme on the distributions (* = GPU decoder):");
    let names: Vec<String> = first
        .schemes
        .iter()
        .map(|s| format!("{}{}", s.scheme, if s.gpu_decoder { "*" } else { "" }))
        .collect();
    let mut header = vec!["point"];
    header.extend(names.iter().map(String::as_str));
    header.push("smallest");
    let rows = infos.iter().map(|d| {
        let mut row = vec![format!("{} {}", d.distribution, d.param)];
        row.extend(d.schemes.iter().map(|s| format!("{:.2}", s.bits_per_value)));
        row.push(d.smallest.to_string());
        row
    });
    println!("{}", super::markdown_table(&header, rows, 1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn d1_has_exactly_the_distinct_values_asked_in_order() {
        for distinct in [4, 64, 1 << 10] {
            let v = Dist::Sorted { distinct }.generate(5000, 1);
            assert!(v.is_sorted());
            let set: HashSet<u32> = v.iter().copied().collect();
            assert_eq!(set.len() as u64, distinct);
            assert_eq!(v[v.len() - 1] as u64, distinct - 1);
        }
    }

    #[test]
    fn d2_has_the_mean_and_deviation_asked() {
        for mean in [1u64 << 6, 1 << 30] {
            let v = Dist::Normal { mean }.generate(100_000, 2);
            let m = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / v.len() as f64;
            assert!((m - mean as f64).abs() < 0.5, "mean {m}");
            assert!((var.sqrt() - NORMAL_SD).abs() < 0.5, "sd {}", var.sqrt());
        }
    }

    #[test]
    fn d3_is_most_often_zero_and_skews_with_alpha() {
        let mut zeros = Vec::new();
        for alpha in [1, 3] {
            let v = Dist::Zipf { alpha }.generate(100_000, 3);
            assert!(v.iter().all(|&x| (x as u64) < ZIPF_DOMAIN));
            let mut counts = std::collections::HashMap::new();
            v.iter()
                .for_each(|&x| *counts.entry(x).or_insert(0usize) += 1);
            let top = counts.iter().max_by_key(|c| *c.1).unwrap();
            assert_eq!(*top.0, 0);
            zeros.push(*top.1);
        }
        assert!(zeros[0] < zeros[1], "{zeros:?}");
    }

    #[test]
    fn generators_are_deterministic_across_chunks() {
        let d = Dist::Normal { mean: 1 << 20 };
        let n = (1 << 20) + 77;
        assert_eq!(d.generate(n, 9), d.generate(n, 9));
        assert_ne!(d.generate(n, 9), d.generate(n, 10));
    }

    #[test]
    fn quick_keeps_each_distributions_first_point() {
        let all = Dist::points(false);
        let quick = Dist::points(true);
        assert_eq!(all.iter().map(Vec::len).collect::<Vec<_>>(), [8, 7, 5]);
        for (a, q) in all.iter().zip(&quick) {
            assert_eq!(q, &[a[0]]);
        }
        assert_eq!(quick[0][0].label(), "D1 2^2 distinct");
        assert_eq!(quick[2][0].label(), "D3 alpha 1");
    }

    #[test]
    fn smallest_agrees_with_the_library() {
        for d in [
            Dist::Sorted { distinct: 64 },
            Dist::Normal { mean: 1 << 20 },
            Dist::Zipf { alpha: 2 },
        ] {
            let values = d.generate(20_000, 4);
            let best = Scheme::smallest(&values).unwrap();
            let sizes: Vec<_> = Scheme::ALL
                .iter()
                .map(|&s| (s, s.encode(&values).unwrap().compressed_bytes()))
                .collect();
            assert_eq!(
                smallest(&sizes),
                Some(best.encoded.scheme()),
                "{}",
                d.label()
            );
        }
        // Ties go to the first.
        let tie = [(Scheme::Nsf, 8), (Scheme::For, 4), (Scheme::Rle, 4)];
        assert_eq!(smallest(&tie), Some(Scheme::For));
        assert_eq!(smallest(&[]), None);
    }
}
