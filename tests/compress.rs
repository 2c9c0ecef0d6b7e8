//! Compression (issue 21): the GPU-FOR and GPU-DFOR decoders on the GPU against the input (and
//! every row of the GPU-FOR ablation, the miniblock-free variant with its encoder), and
//! on the CPU: exact round trips of every scheme on awkward lengths and
//! on the thesis' distributions, decode-and-sum, the smallest-footprint choice, the bits per
//! value of known inputs, the on-disk form, output independent of the thread count, and a
//! seeded fuzz of corrupted buffers and files (validation and decoding give `Err` or the
//! values, never a panic).
mod common;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal, Zipf};
use tessera::compress::{
    Compressed, DforColumn, Encoded, ForColumn, NsfColumn, Scheme,
    file::{from_bytes, to_bytes},
    read_column, write_column,
};
use tessera::cpu::{decompress, decompress_sum};
use tessera::ops::{
    DeviceDforColumn, DeviceForColumn, ForAblation, ForTile, decompress_dfor, decompress_dfor_into,
    decompress_for, decompress_for_into, sum_dfor, sum_dfor_into, sum_for, sum_for_into,
};
use tessera::{Error, Gpu};

/// The thesis' group size and the others the sizes below cross.
const DS: [u32; 3] = [1, 4, 8];

/// 0, 1, a block - 1, a block, a block + 1, 512 * D +- 1 for D = 1, 4, 8 (a tile of D blocks
/// per thread of a 128-thread block, where the GPU decoders' grids turn) and 2048 +- 1 (a
/// tile of 16 blocks; 4096 is one of 32), several tiles of 32 blocks plus one value, and a
/// few million; capped by `TESSERA_TEST_MAX_N`.
fn sizes() -> Vec<usize> {
    let mut s = vec![0, 1, 127, 128, 129, 2047, 2048, 2049, 3 * 4096 + 1];
    for d in DS {
        let t = 512 * d as usize;
        s.extend([t - 1, t, t + 1]);
    }
    s.push(3_000_017);
    common::capped(&s)
}

/// The distributions, by name: `(name, values of length n)`.
type Gen = fn(usize, &mut StdRng) -> Vec<u32>;

fn uniform_bits(n: usize, bits: u32, rng: &mut StdRng) -> Vec<u32> {
    let mask = ((1u64 << bits) - 1) as u32;
    (0..n).map(|_| rng.random::<u32>() & mask).collect()
}

fn distributions() -> Vec<(&'static str, Gen)> {
    vec![
        ("zeros", |n, _| vec![0; n]),
        ("constant", |n, _| vec![123_456_789; n]),
        ("max", |n, _| vec![u32::MAX; n]),
        ("sorted", |n, _| (0..n as u32).collect()),
        ("descending", |n, _| (0..n as u32).rev().collect()),
        ("sorted few distinct", |n, _| {
            (0..n).map(|i| (i * 16 / n.max(1)) as u32 * 1000).collect()
        }),
        ("normal around 2^30", |n, rng| {
            let d = Normal::new((1u64 << 30) as f64, 20.0).unwrap();
            (0..n).map(|_| d.sample(rng) as u32).collect()
        }),
        ("zipf", |n, rng| {
            let z = Zipf::new(1e6, 1.5).unwrap();
            (0..n).map(|_| z.sample(rng) as u32).collect()
        }),
        ("outliers", |n, rng| {
            (0..n)
                .map(|_| {
                    if rng.random_ratio(1, 100) {
                        u32::MAX - rng.random_range(0..1000)
                    } else {
                        rng.random_range(0..64)
                    }
                })
                .collect()
        }),
        ("uniform 16 bits", |n, rng| uniform_bits(n, 16, rng)),
        ("uniform 32 bits", |n, rng| uniform_bits(n, 32, rng)),
    ]
}

/// Every scheme's columns of `values`: each scheme, and GPU-DFOR for every D.
fn columns(values: &[u32]) -> Vec<Encoded> {
    let mut cols: Vec<Encoded> = Scheme::ALL
        .iter()
        .map(|s| s.encode(values).unwrap())
        .collect();
    cols.extend(
        DS.iter()
            .map(|&d| Encoded::Dfor(DforColumn::encode(values, d).unwrap())),
    );
    cols
}

/// `got == want`, reporting the first difference rather than both vectors.
fn same(got: &[u32], want: &[u32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: value {i} is {}, expected {}", got[i], want[i]);
    }
}

/// Decompression and decode-and-sum of every scheme equal the input and its sum.
fn check_round_trips(values: &[u32], what: &str) {
    let sum: u64 = values.iter().map(|&v| v as u64).sum();
    for col in columns(values) {
        let what = format!("{what}, {} ({} values)", col.scheme().name(), values.len());
        same(&decompress(&col).unwrap(), values, &what);
        assert_eq!(decompress_sum(&col).unwrap(), sum, "{what}: sum");
    }
}

fn round_trips_on_awkward_lengths() {
    let mut rng = StdRng::seed_from_u64(21);
    for n in sizes() {
        for (name, gen_values) in distributions() {
            // The few-million size on a subset: it crosses the chunk boundaries, the small
            // sizes cross the blocks and groups.
            if n > 100_000 && !matches!(name, "sorted" | "outliers" | "uniform 16 bits") {
                continue;
            }
            check_round_trips(&gen_values(n, &mut rng), name);
        }
    }
}

/// The GPU-FOR decoders on the GPU, at every D, equal the input and its sum.
fn check_gpu_for(gpu: &Gpu, values: &[u32], what: &str) {
    let col = ForColumn::encode(values).unwrap();
    let dev = DeviceForColumn::upload(gpu, &col).unwrap();
    let sum: u64 = values.iter().map(|&v| v as u64).sum();
    let what = format!("{what}, GPU-FOR on the GPU ({} values)", values.len());
    same(
        &decompress_for(gpu, &dev).unwrap().to_vec(gpu).unwrap(),
        values,
        &what,
    );
    assert_eq!(sum_for(gpu, &dev).unwrap(), sum, "{what}: sum");
    for tile in ForTile::ALL {
        let what = format!("{what}, D = {}", tile.blocks());
        let mut out = gpu.zeros::<u32>(values.len()).unwrap();
        decompress_for_into(gpu, &dev, &mut out, tile).unwrap();
        same(&out.to_vec(gpu).unwrap(), values, &what);
        let mut s = gpu.zeros::<u64>(1).unwrap();
        sum_for_into(gpu, &dev, &mut s, tile).unwrap();
        assert_eq!(s.to_vec(gpu).unwrap()[0], sum, "{what}: sum");
    }
}

/// The GPU-DFOR decoders on the GPU, for groups of every D they take and at every tile, equal
/// the input and its sum.
fn check_gpu_dfor(gpu: &Gpu, values: &[u32], what: &str) {
    let sum: u64 = values.iter().map(|&v| v as u64).sum();
    for group in [1, 2, 4, 8, 16, 32] {
        let col = DforColumn::encode(values, group).unwrap();
        let dev = DeviceDforColumn::upload(gpu, &col).unwrap();
        let what = format!(
            "{what}, GPU-DFOR D = {group} on the GPU ({} values)",
            values.len()
        );
        same(
            &decompress_dfor(gpu, &dev).unwrap().to_vec(gpu).unwrap(),
            values,
            &what,
        );
        assert_eq!(sum_dfor(gpu, &dev).unwrap(), sum, "{what}: sum");
        for tile in ForTile::ALL {
            let what = format!("{what}, tile of {} blocks", tile.blocks());
            let mut out = gpu.zeros::<u32>(values.len()).unwrap();
            decompress_dfor_into(gpu, &dev, &mut out, tile).unwrap();
            same(&out.to_vec(gpu).unwrap(), values, &what);
            let mut s = gpu.zeros::<u64>(1).unwrap();
            sum_dfor_into(gpu, &dev, &mut s, tile).unwrap();
            assert_eq!(s.to_vec(gpu).unwrap()[0], sum, "{what}: sum");
        }
    }
}

fn gpu_dfor_decoders_on_awkward_lengths(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2103);
    for n in sizes() {
        for (name, gen_values) in distributions() {
            check_gpu_dfor(gpu, &gen_values(n, &mut rng), name);
        }
    }
}

/// A group size the GPU decoders cannot take is refused at upload, naming D and the fix.
fn gpu_dfor_refuses_groups_that_do_not_tile(gpu: &Gpu) {
    let values: Vec<u32> = (0..10_000).collect();
    for group in [3, 5, 12] {
        let col = DforColumn::encode(&values, group).unwrap();
        let err = DeviceDforColumn::upload(gpu, &col).err().expect("refused");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("D = {group}")) && msg.contains("encode"),
            "{msg}"
        );
    }
}

fn gpu_for_decoders_on_awkward_lengths(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2101);
    for n in sizes() {
        for (name, gen_values) in distributions() {
            check_gpu_for(gpu, &gen_values(n, &mut rng), name);
        }
    }
}

fn gpu_for_decoders_at_every_bit_width(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2102);
    for bits in 1..=32 {
        for n in common::capped(&[129, 512 * 3 + 17, 100_003]) {
            check_gpu_for(
                gpu,
                &uniform_bits(n, bits, &mut rng),
                &format!("{bits} bits"),
            );
        }
    }
}

/// Every row of the §5.3.2-5.3.3 ablation decodes `values` (the miniblock-free rows their
/// one-width encoding, which every product decoder also reads), over a buffer of garbage.
fn check_ablation(gpu: &Gpu, values: &[u32], what: &str) {
    let cols = [
        DeviceForColumn::upload(gpu, &ForColumn::encode(values).unwrap()).unwrap(),
        DeviceForColumn::upload(gpu, &ForColumn::encode_one_width(values).unwrap()).unwrap(),
    ];
    assert!(cols[1].is_one_width(), "{what}");
    same(
        &decompress_for(gpu, &cols[1]).unwrap().to_vec(gpu).unwrap(),
        values,
        &format!("{what}, one width, product decoder"),
    );
    for row in ForAblation::all() {
        let what = format!(
            "{what}, ablation {:?} D = {} ({} values)",
            row.name,
            row.blocks,
            values.len()
        );
        let mut out = gpu.upload(&vec![0xdead_beef; values.len()]).unwrap();
        row.decompress_into(gpu, &cols[row.one_width as usize], &mut out)
            .unwrap();
        same(&out.to_vec(gpu).unwrap(), values, &what);
    }
}

fn gpu_for_ablation_rows_on_awkward_lengths_and_widths(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2104);
    for n in sizes() {
        for (name, gen_values) in distributions() {
            check_ablation(gpu, &gen_values(n, &mut rng), name);
        }
    }
    for bits in 1..=32 {
        for n in common::capped(&[129, 32 * 128 * 3 + 17]) {
            check_ablation(
                gpu,
                &uniform_bits(n, bits, &mut rng),
                &format!("{bits} bits"),
            );
        }
    }
    // A miniblock-free row refuses a column of several widths per block, naming the fix.
    let mixed: Vec<u32> = (0..1000)
        .map(|i| if i % 128 < 32 { 1 } else { i })
        .collect();
    let col = DeviceForColumn::upload(gpu, &ForColumn::encode(&mixed).unwrap()).unwrap();
    assert!(!col.is_one_width());
    let mut out = gpu.zeros::<u32>(mixed.len()).unwrap();
    for row in ForAblation::all().iter().filter(|r| r.one_width) {
        let err = row.decompress_into(gpu, &col, &mut out).unwrap_err();
        assert!(err.to_string().contains("encode_one_width"), "{err}");
    }
}

/// The one-width encoding round-trips on the CPU, is one width per block, and is never
/// smaller than GPU-FOR's (same headers, miniblocks only widened).
fn one_width_encoding_round_trips() {
    let mut rng = StdRng::seed_from_u64(33);
    for n in sizes() {
        for (name, gen_values) in distributions() {
            let values = gen_values(n, &mut rng);
            let one = ForColumn::encode_one_width(&values).unwrap();
            let four = ForColumn::encode(&values).unwrap();
            assert!(one.is_one_width(), "{name}, {n}");
            assert!(
                one.compressed_bytes() >= four.compressed_bytes(),
                "{name}, {n}"
            );
            same(&decompress(&Encoded::For(one)).unwrap(), &values, name);
        }
    }
    let mixed: Vec<u32> = (0..256).map(|i| if i < 32 { 0 } else { i }).collect();
    assert!(!ForColumn::encode(&mixed).unwrap().is_one_width());
}

fn round_trips_at_every_bit_width() {
    let mut rng = StdRng::seed_from_u64(32);
    for bits in 1..=32 {
        for n in [129, 4096 + 1000] {
            check_round_trips(&uniform_bits(n, bits, &mut rng), &format!("{bits} bits"));
        }
    }
}

fn signed_values_round_trip_through_their_bits() {
    let v: Vec<i32> = (-5000..5000).map(|i| i * 3 % 17).collect();
    let col = ForColumn::encode(bytemuck::cast_slice(&v)).unwrap();
    // Values in -16..=16 take 6 bits (5 + the sign's range) with the signed reference.
    assert!(col.bits_per_value() < 6.0 + 1.0, "{}", col.bits_per_value());
    let back = decompress(&Encoded::For(col)).unwrap();
    assert_eq!(bytemuck::cast_slice::<u32, i32>(&back), v.as_slice());
}

fn encoding_does_not_depend_on_the_thread_count() {
    let mut rng = StdRng::seed_from_u64(3);
    let mut values = uniform_bits(700_001, 12, &mut rng);
    // Runs that cross the encoders' task boundaries.
    values[60_000..200_000].fill(7);
    let with = |threads| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| columns(&values))
    };
    assert_eq!(with(1), with(3));
}

fn the_smallest_footprint_is_chosen() {
    let mut rng = StdRng::seed_from_u64(5);
    for (name, gen_values) in distributions() {
        let values = gen_values(20_000, &mut rng);
        let best = Scheme::smallest(&values).unwrap();
        assert_eq!(best.sizes.len(), Scheme::ALL.len());
        for &(s, size) in &best.sizes {
            // NSF is tried over the column's minimum where that saves bytes.
            let encoded = match s {
                Scheme::Nsf => Encoded::Nsf(NsfColumn::encode_framed(&values).unwrap()),
                s => s.encode(&values).unwrap(),
            };
            assert_eq!(encoded.compressed_bytes(), size, "{name}: {s:?}");
            assert!(
                best.encoded.compressed_bytes() <= size,
                "{name}: {s:?} is smaller"
            );
        }
        same(&decompress(&best.encoded).unwrap(), &values, name);
    }
}

fn bits_per_value_of_known_inputs() {
    let n = 1 << 20;
    let mut rng = StdRng::seed_from_u64(16);
    // 16-bit uniform values: 16 bits, plus a reference, a width word and a block start per
    // 128 values (0.75 bits, §5.6.2), plus the header.
    let b = ForColumn::encode(&uniform_bits(n, 16, &mut rng))
        .unwrap()
        .bits_per_value();
    assert!((16.74..16.76).contains(&b), "GPU-FOR, 16-bit uniform: {b}");
    // Sorted 1..=n: a block holds its reference + 0..127, so GPU-FOR's miniblocks take 5, 6, 7
    // and 7 bits, 6.25 + 0.75 = 7.0 bits (§5.4.2 reports 7.8, as if each miniblock took 7
    // bits, or the block one width). GPU-DFOR's deltas are
    // all 1 and its FOR reference takes them whole, so its blocks are constant: 2 words and a
    // block start per 128 values and a first value per group of 4 blocks, 0.81 bits, where
    // the thesis, storing the deltas against 0, reports 1.8.
    let sorted: Vec<u32> = (1..=n as u32).collect();
    let f = ForColumn::encode(&sorted).unwrap().bits_per_value();
    assert!((6.99..7.01).contains(&f), "GPU-FOR, sorted: {f}");
    let d = DforColumn::encode(&sorted, 4).unwrap().bits_per_value();
    assert!((0.81..0.82).contains(&d), "GPU-DFOR, sorted: {d}");
    // GPU-DFOR on unsorted uniform values pays about one bit for the deltas' sign (§5.6.2).
    let u = uniform_bits(n, 16, &mut rng);
    let d = DforColumn::encode(&u, 4).unwrap().bits_per_value();
    assert!((17.0..17.9).contains(&d), "GPU-DFOR, 16-bit uniform: {d}");
}

fn files_round_trip_and_name_their_problems() {
    let dir = std::env::temp_dir().join(format!("tessera-compress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let values: Vec<u32> = (0..10_000u32).map(|i| i % 300 + (i / 1000) * 7).collect();
    for col in columns(&values) {
        let path = dir.join(format!("{}.col", col.scheme().name()));
        write_column(&path, &col).unwrap();
        let back = read_column(&path).unwrap();
        assert_eq!(back, col);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
        let e = read_column(&path).unwrap_err().to_string();
        assert!(
            e.contains(&*path.display().to_string()) && e.contains("checksum"),
            "{e}"
        );
    }
    let e = read_column(dir.join("missing.col")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Decoding a column that passed validation gives its count of values, or `Err`: never a
/// panic, whatever the values.
fn decodes_safely(col: &Encoded) {
    if let Ok(v) = decompress(col) {
        assert_eq!(v.len(), col.len());
    }
    let _ = decompress_sum(col);
}

fn corrupted_buffers_and_files_are_refused_or_exact() {
    let mut rng = StdRng::seed_from_u64(0xc0ffee);
    let mut inputs: Vec<Vec<u32>> = vec![(0..700).collect()];
    let mut r = StdRng::seed_from_u64(1);
    inputs.push(
        (0..1500)
            .map(|_| {
                let bits = r.random_range(0..32);
                r.random_range(0..1u32 << bits)
            })
            .collect(),
    );
    inputs.push((0..5000).map(|i| i / 37).collect());
    let mut cases = 0;
    for values in &inputs {
        for col in columns(values) {
            let (header, arrays) = (col.header_words(), col.arrays());
            let bytes = to_bytes(&col);
            for _ in 0..100 {
                cases += 1;
                // Buffers: a flipped byte in the header or an array, or an array cut short.
                let mut h = header.clone();
                let mut a: Vec<Vec<u32>> = arrays.iter().map(|x| x.to_vec()).collect();
                let target = rng.random_range(0..=a.len());
                let words = if target == a.len() {
                    &mut h
                } else {
                    &mut a[target]
                };
                if !words.is_empty() {
                    let i = rng.random_range(0..words.len());
                    if rng.random_bool(0.5) {
                        words[i] ^= 0xff << (8 * rng.random_range(0..4));
                    } else {
                        words.truncate(i);
                    }
                }
                if let Ok(c) = Encoded::from_parts(col.scheme(), &h, a) {
                    decodes_safely(&c);
                }
                // Files: a flipped byte or a cut is caught by the checksum or the structure.
                let mut f = bytes.clone();
                let i = rng.random_range(0..f.len());
                if rng.random_bool(0.5) {
                    f[i] ^= 1 << rng.random_range(0..8);
                } else {
                    f.truncate(i);
                }
                match from_bytes(&f, "fuzz") {
                    Ok(c) => same(&decompress(&c).unwrap(), values, "a corrupt file that read"),
                    Err(e) => assert!(e.to_string().starts_with("fuzz: "), "{e}"),
                }
                // The same corruption behind a valid checksum reaches the parser and the
                // validation: `Err`, or a column that decodes safely.
                if f.len() >= 8 {
                    f.truncate(f.len() - 8);
                    let sum = xxhash_rust::xxh3::xxh3_64(&f);
                    f.extend_from_slice(&sum.to_le_bytes());
                    match from_bytes(&f, "fuzz") {
                        Ok(c) => decodes_safely(&c),
                        Err(e) => assert!(e.to_string().starts_with("fuzz: "), "{e}"),
                    }
                }
            }
        }
    }
    assert!(cases >= 3000, "{cases} cases");
}

fn validation_names_what_is_wrong() {
    let values: Vec<u32> = (0..1000).map(|i| i * 7).collect();
    let col = ForColumn::encode(&values).unwrap();
    let (h, starts, data) = (col.header_words(), col.block_starts(), col.data());
    let err = |h: &[u32], s: &[u32], d: &[u32]| {
        ForColumn::from_parts(h, vec![s.to_vec(), d.to_vec()])
            .unwrap_err()
            .to_string()
    };
    let mut bad_h = h.clone();
    bad_h[0] = 64;
    assert!(err(&bad_h, starts, data).contains("block size is 64, expected 128"));
    let mut bad_s = starts.to_vec();
    bad_s[3] += 1;
    assert!(err(&h, &bad_s, data).contains("block 3 starts at word"));
    let mut bad_d = data.to_vec();
    bad_d[1] = 33;
    assert!(err(&h, starts, &bad_d).contains("block 0 at word 0: bit widths [33, 0, 0, 0]"));
    let e = err(&h, starts, &data[..data.len() - 1]);
    assert!(e.contains("past the data's end"), "{e}");
}

fn encoder_throughput() {
    // A measurement, run on request in release: `cargo test --release --test compress --
    // --ignored encoder_throughput`.
    let n = 1 << 26;
    let mut rng = StdRng::seed_from_u64(7);
    let inputs = [
        ("16-bit uniform", uniform_bits(n, 16, &mut rng)),
        ("sorted", (0..n as u32).collect()),
    ];
    for (name, values) in &inputs {
        for s in Scheme::ALL {
            let t = std::time::Instant::now();
            let col = s.encode(values).unwrap();
            let secs = t.elapsed().as_secs_f64();
            eprintln!(
                "{name:15} {:14} {:7.0} MB/s  {:6.2} bits/value  ({} threads)",
                s.name(),
                4.0 * n as f64 / secs / 1e6,
                col.bits_per_value(),
                rayon::current_num_threads()
            );
        }
    }
}

harness! {
    gpu: [
        gpu_for_decoders_on_awkward_lengths,
        gpu_for_decoders_at_every_bit_width,
        gpu_dfor_decoders_on_awkward_lengths,
        gpu_dfor_refuses_groups_that_do_not_tile,
        gpu_for_ablation_rows_on_awkward_lengths_and_widths,
    ],
    cpu: [
        round_trips_on_awkward_lengths,
        round_trips_at_every_bit_width,
        one_width_encoding_round_trips,
        signed_values_round_trip_through_their_bits,
        encoding_does_not_depend_on_the_thread_count,
        the_smallest_footprint_is_chosen,
        bits_per_value_of_known_inputs,
        files_round_trip_and_name_their_problems,
        corrupted_buffers_and_files_are_refused_or_exact,
        validation_names_what_is_wrong,
    ],
    extra: [
        Test::cpu("encoder_throughput", encoder_throughput)
            .ignored("a measurement: run with --ignored, in release"),
    ],
}
