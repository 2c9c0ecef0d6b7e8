//! Compression (issue 21), the baselines' GPU decoders (NSF, NSV, RLE, the vertical
//! GPU-SIMDBP128 layout) and RFOR's: decompression and decode-and-sum on the GPU equal the CPU decoders
//! on awkward lengths (every tile of every kernel crossed) and on small, wide, mixed-width,
//! equal, sorted and run-length inputs; the `_into` forms write every value and add into the
//! caller's word; bad output buffers and schemes without GPU decoders are refused.
mod common;
use std::collections::BTreeSet;
use std::ops::RangeInclusive;

use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::compress::format::VERTICAL_BLOCK;
use tessera::compress::{
    Compressed, Encoded, NsfColumn, NsvColumn, RforColumn, RleColumn, Scheme, VerticalColumn,
};
use tessera::cpu::{decompress, decompress_sum};
use tessera::ops::{
    BASELINE_TILE, DeviceEncoded, DeviceNsfColumn, DeviceNsvColumn, DeviceRforColumn,
    DeviceRleColumn, DeviceVerticalColumn, check_gpu_decodable, decompress_nsf,
    decompress_nsf_into, decompress_nsv, decompress_nsv_into, decompress_rfor,
    decompress_rfor_into, decompress_rle, decompress_rle_into, decompress_vertical,
    decompress_vertical_into, sum_nsf, sum_nsf_into, sum_nsv, sum_nsv_into, sum_rfor,
    sum_rfor_into, sum_rle, sum_rle_into, sum_vertical, sum_vertical_into,
};
use tessera::{DeviceColumn, Error, Gpu, Result};

/// A size past every tile: the large inputs run on a few distributions only.
const LARGE: usize = 3_000_017;

/// 0, a few values, a block of 128 +- 1, a tile +- 1 of the NSF / NSV / RLE decoders and of
/// the vertical ones, several tiles, and sizes past every tile; capped by
/// `TESSERA_TEST_MAX_N`.
fn sizes() -> Vec<usize> {
    let mut s = vec![0, 1, 2, 3, 5, 15, 16, 17, 127, 128, 129];
    for tile in [BASELINE_TILE, VERTICAL_BLOCK] {
        s.extend([tile - 1, tile, tile + 1, 3 * tile + 5]);
    }
    s.extend([100_003, (1 << 20) + 3, LARGE]);
    common::capped(&s)
}

type Gen = fn(usize, &mut StdRng) -> Vec<u32>;

fn uniform_bits(n: usize, bits: u32, rng: &mut StdRng) -> Vec<u32> {
    let mask = ((1u64 << bits) - 1) as u32;
    (0..n).map(|_| rng.random::<u32>() & mask).collect()
}

/// `n` values in runs of random lengths from `lens`, each of a random value.
fn runs(n: usize, lens: RangeInclusive<usize>, rng: &mut StdRng) -> Vec<u32> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let len = rng.random_range(lens.clone()).min(n - v.len());
        let x = rng.random::<u32>() >> rng.random_range(0..32);
        v.extend(std::iter::repeat_n(x, len));
    }
    v
}

/// The distributions, by name: NSF's three widths, NSV's four lengths mixed, runs shorter and
/// longer than every tile.
fn distributions() -> Vec<(&'static str, Gen)> {
    vec![
        ("zeros", |n, _| vec![0; n]),
        ("all equal", |n, _| vec![0x1234_5678; n]),
        ("max", |n, _| vec![u32::MAX; n]),
        ("small", |n, rng| uniform_bits(n, 8, rng)),
        ("16 bits", |n, rng| uniform_bits(n, 16, rng)),
        ("wide", |n, rng| uniform_bits(n, 32, rng)),
        ("mixed widths", |n, rng| {
            (0..n)
                .map(|_| rng.random::<u32>() >> rng.random_range(0..32))
                .collect()
        }),
        ("sorted", |n, _| (0..n as u32).collect()),
        // A narrow range far from 0 (SSB's order dates), and one at the top of u32, where
        // NSF's reference is held back so that no value carries past 32 bits.
        ("dates", |n, rng| {
            (0..n)
                .map(|_| rng.random_range(19_920_101..=19_980_802))
                .collect()
        }),
        ("near max", |n, rng| {
            (0..n)
                .map(|_| u32::MAX - rng.random_range(0..300))
                .collect()
        }),
        ("short runs", |n, rng| runs(n, 1..=8, rng)),
        ("long runs", |n, rng| runs(n, 3000..=9000, rng)),
    ]
}

/// Calls `f(values, name)` on every distribution at every size (the large size on a subset).
fn for_each_input(seed: u64, max_n: usize, mut f: impl FnMut(&[u32], &str)) {
    let mut rng = StdRng::seed_from_u64(seed);
    for n in sizes().into_iter().filter(|&n| n <= max_n) {
        for (name, gen_values) in distributions() {
            if n >= LARGE && !matches!(name, "all equal" | "mixed widths" | "short runs") {
                continue;
            }
            f(&gen_values(n, &mut rng), name);
        }
    }
}

/// `got == want`, reporting the first difference rather than both vectors.
fn same(got: &[u32], want: &[u32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: value {i} is {}, expected {}", got[i], want[i]);
    }
}

/// One scheme's typed decoders over one device column.
struct Decoders<'a> {
    decompress: &'a dyn Fn() -> Result<DeviceColumn<u32>>,
    decompress_into: &'a dyn Fn(&mut DeviceColumn<u32>) -> Result<()>,
    sum: &'a dyn Fn() -> Result<u64>,
    sum_into: &'a dyn Fn(&mut DeviceColumn<u64>) -> Result<()>,
}

/// The decoders equal the CPU's on `col`: both decompressions (the `_into` one over a buffer
/// of garbage, so a value not written shows), both sums (the `_into` one adding to 7).
fn check(gpu: &Gpu, col: &Encoded, d: Decoders, what: &str) {
    let what = format!(
        "{what}, {} on the GPU ({} values)",
        col.scheme().name(),
        col.len()
    );
    let want = decompress(col).unwrap();
    let want_sum = decompress_sum(col).unwrap();
    same(
        &(d.decompress)().unwrap().to_vec(gpu).unwrap(),
        &want,
        &what,
    );
    let mut out = gpu.upload(&vec![0xdead_beef; want.len()]).unwrap();
    (d.decompress_into)(&mut out).unwrap();
    same(&out.to_vec(gpu).unwrap(), &want, &format!("{what}, into"));
    assert_eq!((d.sum)().unwrap(), want_sum, "{what}: sum");
    let mut s = gpu.upload(&[7u64]).unwrap();
    (d.sum_into)(&mut s).unwrap();
    assert_eq!(s.to_vec(gpu).unwrap()[0], 7 + want_sum, "{what}: sum into");
}

/// Checks `values` in NSF, the thesis' form or `framed` over a reference; returns the bytes
/// per value and the reference.
fn check_nsf(gpu: &Gpu, values: &[u32], framed: bool, what: &str) -> (u32, u32) {
    let col = if framed {
        NsfColumn::encode_framed(values).unwrap()
    } else {
        NsfColumn::encode(values).unwrap()
    };
    if !framed {
        assert_eq!(
            col.header().reference,
            0,
            "{what}: the thesis' NSF has no reference"
        );
    }
    let dev = DeviceNsfColumn::upload(gpu, &col).unwrap();
    assert_eq!((dev.len(), dev.is_empty()), (col.len(), col.is_empty()));
    let d = Decoders {
        decompress: &|| decompress_nsf(gpu, &dev),
        decompress_into: &|out| decompress_nsf_into(gpu, &dev, out),
        sum: &|| sum_nsf(gpu, &dev),
        sum_into: &|s| sum_nsf_into(gpu, &dev, s),
    };
    assert_eq!(dev.reference(), col.header().reference);
    let what = format!("{what}, framed {framed}");
    check(gpu, &Encoded::Nsf(col), d, &what);
    (dev.value_bytes(), dev.reference())
}

fn nsf_decoders_match_the_cpu(gpu: &Gpu) {
    let (mut widths, mut framed_widths) = (BTreeSet::new(), BTreeSet::new());
    for_each_input(5301, usize::MAX, |values, what| {
        widths.insert(check_nsf(gpu, values, false, what).0);
        let (b, reference) = check_nsf(gpu, values, true, what);
        if reference != 0 {
            framed_widths.insert(b);
        }
    });
    assert_eq!(widths.into_iter().collect::<Vec<_>>(), [1, 2, 4]);
    // A reference at both widths that can take one ("max": held back to 2^32 - 256).
    assert_eq!(framed_widths.into_iter().collect::<Vec<_>>(), [1, 2]);
}

fn nsv_decoders_match_the_cpu(gpu: &Gpu) {
    for_each_input(5302, usize::MAX, |values, what| {
        let col = NsvColumn::encode(values).unwrap();
        let dev = DeviceNsvColumn::upload(gpu, &col).unwrap();
        assert_eq!((dev.len(), dev.is_empty()), (col.len(), col.is_empty()));
        let d = Decoders {
            decompress: &|| decompress_nsv(gpu, &dev),
            decompress_into: &|out| decompress_nsv_into(gpu, &dev, out),
            sum: &|| sum_nsv(gpu, &dev),
            sum_into: &|s| sum_nsv_into(gpu, &dev, s),
        };
        check(gpu, &Encoded::Nsv(col), d, what);
    });
}

fn check_rle(gpu: &Gpu, values: &[u32], what: &str) {
    let col = RleColumn::encode(values).unwrap();
    let dev = DeviceRleColumn::upload(gpu, &col).unwrap();
    assert_eq!((dev.len(), dev.runs()), (col.len(), col.values().len()));
    let d = Decoders {
        decompress: &|| decompress_rle(gpu, &dev),
        decompress_into: &|out| decompress_rle_into(gpu, &dev, out),
        sum: &|| sum_rle(gpu, &dev),
        sum_into: &|s| sum_rle_into(gpu, &dev, s),
    };
    check(gpu, &Encoded::Rle(col), d, what);
}

fn rle_decoders_match_the_cpu(gpu: &Gpu) {
    for_each_input(5303, usize::MAX, |values, what| {
        check_rle(gpu, values, what)
    });
}

fn check_rfor(gpu: &Gpu, values: &[u32], what: &str) {
    let col = RforColumn::encode(values).unwrap();
    let dev = DeviceRforColumn::upload(gpu, &col).unwrap();
    assert_eq!((dev.len(), dev.runs()), (col.len(), col.values().len()));
    assert_eq!(dev.is_empty(), values.is_empty());
    let d = Decoders {
        decompress: &|| decompress_rfor(gpu, &dev),
        decompress_into: &|out| decompress_rfor_into(gpu, &dev, out),
        sum: &|| sum_rfor(gpu, &dev),
        sum_into: &|s| sum_rfor_into(gpu, &dev, s),
    };
    check(gpu, &Encoded::Rfor(col), d, what);
}

fn rfor_decoders_match_the_cpu(gpu: &Gpu) {
    for_each_input(5308, usize::MAX, |values, what| {
        check_rfor(gpu, values, what)
    });
}

/// Runs that end exactly at tile boundaries, one before and one after, a single run over many
/// tiles after short ones, and run counts of a tile +- 1 (the sums' tiles count runs: RLE's
/// of the baselines' tile, RFOR's of 1024), for RLE and RFOR.
fn runs_at_tile_boundaries(gpu: &Gpu) {
    let t = BASELINE_TILE;
    let mut inputs: Vec<(String, Vec<u32>)> = Vec::new();
    for len in [t - 1, t, t + 1, 1, 2 * t] {
        let v: Vec<u32> = (0..5 * t + 3).map(|i| (i / len) as u32 * 3 + 1).collect();
        inputs.push((format!("runs of {len}"), v));
    }
    let mut v: Vec<u32> = (0..t as u32 + 7).collect();
    v.extend(std::iter::repeat_n(9, 10 * t + 11));
    v.extend(0..3);
    inputs.push(("distinct then one long run".into(), v));
    for runs in [t - 1, t, t + 1, 1023, 1024, 1025, 3 * 1024 + 1] {
        let v: Vec<u32> = (0..runs).flat_map(|r| [r as u32; 3]).collect();
        inputs.push((format!("{runs} runs of 3"), v));
    }
    for (what, values) in inputs {
        check_rle(gpu, &values, &what);
        check_rfor(gpu, &values, &what);
    }
}

fn check_vertical(gpu: &Gpu, values: &[u32], what: &str) {
    let col = VerticalColumn::encode(values).unwrap();
    let dev = DeviceVerticalColumn::upload(gpu, &col).unwrap();
    assert_eq!((dev.len(), dev.is_empty()), (col.len(), col.is_empty()));
    let d = Decoders {
        decompress: &|| decompress_vertical(gpu, &dev),
        decompress_into: &|out| decompress_vertical_into(gpu, &dev, out),
        sum: &|| sum_vertical(gpu, &dev),
        sum_into: &|s| sum_vertical_into(gpu, &dev, s),
    };
    check(gpu, &Encoded::Vertical(col), d, what);
}

fn vertical_decoders_match_the_cpu(gpu: &Gpu) {
    for_each_input(5304, usize::MAX, |values, what| {
        check_vertical(gpu, values, what)
    });
}

fn vertical_decoders_at_every_bit_width(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(5305);
    for bits in 0..=32 {
        for n in common::capped(&[129, 2 * VERTICAL_BLOCK + 1000, 100_003]) {
            // Values of 0 .. 2^bits: blocks of `bits` bits (but by chance).
            let values = uniform_bits(n, bits, &mut rng);
            check_vertical(gpu, &values, &format!("{bits} bits"));
        }
    }
}

/// [`DeviceEncoded`] decodes every scheme it takes (GPU-FOR too), as the CPU does, and
/// refuses the others by name.
fn device_encoded_dispatches_every_scheme(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(5306);
    for n in common::capped(&[0, 1, BASELINE_TILE + 1, 50_001]) {
        let values = runs(n, 1..=40, &mut rng);
        for scheme in Scheme::ALL {
            let col = scheme.encode(&values).unwrap();
            let what = format!("{} ({n} values)", scheme.name());
            if !DeviceEncoded::SCHEMES.contains(&scheme) {
                let e = DeviceEncoded::upload(gpu, &col).err().expect(&what);
                assert!(matches!(e, Error::InvalidArgument(_)), "{what}: {e}");
                assert!(e.to_string().contains(scheme.name()), "{what}: {e}");
                continue;
            }
            let dev = DeviceEncoded::upload(gpu, &col).unwrap();
            assert_eq!((dev.scheme(), dev.len()), (scheme, n), "{what}");
            assert_eq!(dev.is_empty(), n == 0, "{what}");
            assert!(
                dev.compressed_bytes() <= col.compressed_bytes() + 4 * n.div_ceil(BASELINE_TILE)
            );
            same(
                &dev.decompress(gpu).unwrap().to_vec(gpu).unwrap(),
                &values,
                &what,
            );
            let sum: u64 = values.iter().map(|&v| v as u64).sum();
            assert_eq!(dev.sum(gpu).unwrap(), sum, "{what}: sum");
        }
    }
}

/// Output buffers of the wrong length are refused before any launch, naming the operator,
/// also for an empty column.
fn wrong_output_lengths_are_refused(gpu: &Gpu) {
    let values: Vec<u32> = (0..1000).map(|i| i / 7).collect();
    let nsf = DeviceNsfColumn::upload(gpu, &NsfColumn::encode(&values).unwrap()).unwrap();
    let nsv = DeviceNsvColumn::upload(gpu, &NsvColumn::encode(&values).unwrap()).unwrap();
    let rle = DeviceRleColumn::upload(gpu, &RleColumn::encode(&values).unwrap()).unwrap();
    let rfor = DeviceRforColumn::upload(gpu, &RforColumn::encode(&values).unwrap()).unwrap();
    let vertical =
        DeviceVerticalColumn::upload(gpu, &VerticalColumn::encode(&values).unwrap()).unwrap();
    let empty = DeviceRleColumn::upload(gpu, &RleColumn::encode(&[]).unwrap()).unwrap();
    let mut short = gpu.zeros::<u32>(999).unwrap();
    let mut two = gpu.zeros::<u64>(2).unwrap();
    let refused = |r: Result<()>, op: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{op}: {e}");
        assert!(e.to_string().contains(op), "{op}: {e}");
    };
    refused(decompress_nsf_into(gpu, &nsf, &mut short), "decompress_nsf");
    refused(decompress_nsv_into(gpu, &nsv, &mut short), "decompress_nsv");
    refused(decompress_rle_into(gpu, &rle, &mut short), "decompress_rle");
    refused(
        decompress_rfor_into(gpu, &rfor, &mut short),
        "decompress_rfor",
    );
    refused(
        decompress_vertical_into(gpu, &vertical, &mut short),
        "decompress_vertical",
    );
    refused(
        decompress_rle_into(gpu, &empty, &mut short),
        "decompress_rle",
    );
    refused(sum_nsf_into(gpu, &nsf, &mut two), "sum_nsf");
    refused(sum_nsv_into(gpu, &nsv, &mut two), "sum_nsv");
    refused(sum_rle_into(gpu, &rle, &mut two), "sum_rle");
    refused(sum_rfor_into(gpu, &rfor, &mut two), "sum_rfor");
    refused(sum_vertical_into(gpu, &vertical, &mut two), "sum_vertical");
    refused(sum_rle_into(gpu, &empty, &mut two), "sum_rle");
    // An empty column with a right-sized output launches nothing and succeeds.
    assert_eq!(decompress_rle(gpu, &empty).unwrap().len(), 0);
    assert_eq!(sum_rle(gpu, &empty).unwrap(), 0);
}

/// The test inputs have the properties the GPU tests count on: they round-trip through the
/// CPU decoders, NSF meets all three widths, NSV all four lengths, RLE runs longer than every
/// tile and tiles of single-value runs.
fn inputs_round_trip_on_the_cpu() {
    let (mut widths, mut lengths, mut longest, mut most_runs) = (0u32, 0u32, 0usize, 0usize);
    for_each_input(5307, 100_003, |values, what| {
        let sum: u64 = values.iter().map(|&v| v as u64).sum();
        for scheme in [
            Scheme::Nsf,
            Scheme::Nsv,
            Scheme::Rle,
            Scheme::Rfor,
            Scheme::Vertical,
        ] {
            let col = scheme.encode(values).unwrap();
            let what = format!("{what}, {} ({} values)", scheme.name(), values.len());
            same(&decompress(&col).unwrap(), values, &what);
            assert_eq!(decompress_sum(&col).unwrap(), sum, "{what}: sum");
            if scheme == Scheme::Nsf {
                let framed = Encoded::Nsf(NsfColumn::encode_framed(values).unwrap());
                let what = format!("{what}, framed");
                same(&decompress(&framed).unwrap(), values, &what);
                assert_eq!(decompress_sum(&framed).unwrap(), sum, "{what}: sum");
                assert!(
                    framed.compressed_bytes() <= col.compressed_bytes(),
                    "{what}"
                );
            }
            match col {
                Encoded::Nsf(c) => widths |= c.header().value_bytes,
                Encoded::Nsv(c) => {
                    for &v in values {
                        lengths |= 1 << (32 - v.leading_zeros()).div_ceil(8).max(1);
                    }
                    assert!(c.header().data_bytes as usize >= values.len(), "{what}");
                }
                Encoded::Rle(c) => {
                    longest = longest.max(c.lengths().iter().copied().max().unwrap_or(0) as usize);
                    most_runs = most_runs.max(c.values().len());
                }
                _ => {}
            }
        }
    });
    assert_eq!(widths, 1 | 2 | 4);
    assert_eq!(lengths, 0b11110);
    // Runs this long need the sizes that `TESSERA_TEST_MAX_N` (the sanitizer runs) may cap.
    if common::capped(&[100_003]).is_empty() {
        return;
    }
    assert!(longest > VERTICAL_BLOCK.max(BASELINE_TILE), "{longest}");
    assert!(most_runs > 3 * BASELINE_TILE, "{most_runs}");
}

/// The sizes cross every tile of the decoders: each tile - 1, itself and + 1, and sizes past
/// several tiles (where `TESSERA_TEST_MAX_N` allows).
fn sizes_cross_every_tile() {
    let s = sizes();
    let max = s.iter().copied().max().unwrap_or(0);
    for tile in [BASELINE_TILE, VERTICAL_BLOCK] {
        for n in [tile - 1, tile, tile + 1, 3 * tile + 5] {
            assert!(n > max || s.contains(&n), "size {n} missing");
        }
    }
    assert!(s.contains(&0) && s.contains(&1));
    assert_eq!(VERTICAL_BLOCK % BASELINE_TILE, 0);
}

/// Only the schemes with GPU decoders pass; the others' error names them and the fix.
fn schemes_without_gpu_decoders_are_named() {
    for s in Scheme::ALL {
        let r = check_gpu_decodable(s);
        assert_eq!(
            r.is_ok(),
            DeviceEncoded::SCHEMES.contains(&s),
            "{}",
            s.name()
        );
        if let Err(e) = r {
            let msg = e.to_string();
            assert!(matches!(e, Error::InvalidArgument(_)), "{msg}");
            assert!(msg.contains(s.name()) && msg.contains("NSV"), "{msg}");
        }
    }
    assert!(check_gpu_decodable(Scheme::Dfor).is_ok());
    assert!(check_gpu_decodable(Scheme::Rfor).is_ok());
    assert!(check_gpu_decodable(Scheme::Plain).is_err());
}

harness! {
    gpu: [
        nsf_decoders_match_the_cpu,
        nsv_decoders_match_the_cpu,
        rle_decoders_match_the_cpu,
        rfor_decoders_match_the_cpu,
        runs_at_tile_boundaries,
        vertical_decoders_match_the_cpu,
        vertical_decoders_at_every_bit_width,
        device_encoded_dispatches_every_scheme,
        wrong_output_lengths_are_refused,
    ],
    cpu: [
        inputs_round_trip_on_the_cpu,
        sizes_cross_every_tile,
        schemes_without_gpu_decoders_are_named,
    ],
}
