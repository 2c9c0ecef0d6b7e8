//! Bitonic top-k on the GPU against the CPU top-k: the exact list, keys bit for bit and rows.
mod common;
use common::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::bench::topk_data::Distribution;
use tessera::cpu;
use tessera::ops::{BitonicConfig, BitonicKey, BitonicTopK, TopKOrder, TopKRows};

const ORDERS: [TopKOrder; 2] = [TopKOrder::Largest, TopKOrder::Smallest];
const KS: [usize; 6] = [1, 2, 31, 32, 33, 1024];

/// Items per tile of the 32-bit and the 64-bit kernels.
fn tile<K: BitonicKey>() -> usize {
    BitonicConfig::<K>::product().sort.tile() as usize
}

/// Sizes for `k`: around `k`, around both tiles, several tiles, 2^21 + 17 (capped by
/// `TESSERA_TEST_MAX_N`).
fn sizes_for(k: usize) -> Vec<usize> {
    let (t, w) = (tile::<f32>(), tile::<f64>());
    let mut v = vec![
        1,
        k.saturating_sub(1),
        k,
        k + 1,
        t - 1,
        t,
        t + 1,
        w - 1,
        w + 1,
    ];
    v.extend([5 * t + 3, 3 * t * 16 + 1, (1 << 21) + 17]);
    v.retain(|&n| n >= 1);
    v.sort_unstable();
    v.dedup();
    capped(&v)
}

fn same<K: BitonicKey>(got: &TopKRows<K>, want: &TopKRows<K>, what: &str) {
    assert_eq!(got.rows, want.rows, "{what}: rows");
    let bits =
        |v: &[K]| -> Vec<Vec<u8>> { v.iter().map(|x| bytemuck::bytes_of(x).to_vec()).collect() };
    assert_eq!(bits(&got.keys), bits(&want.keys), "{what}: keys");
}

/// Every `k` of `ks` that fits `data` (and `n` itself when `n <= 1024`), both orders.
fn check<K: BitonicKey>(
    gpu: &tessera::Gpu,
    top: &mut BitonicTopK<K>,
    data: &[K],
    ks: &[usize],
    what: &str,
) {
    let d = gpu.upload(data).unwrap();
    let n = data.len();
    let mut ks = ks.to_vec();
    if n <= 1024 {
        ks.push(n);
    }
    for &k in &ks {
        if k == 0 || k > n || k > 1024 {
            continue;
        }
        for order in ORDERS {
            let want = cpu::top_k(data, k, order).unwrap();
            let got = top.run(gpu, &d, k, order).unwrap();
            same(&got, &want, &format!("{what} n {n} k {k} {order:?}"));
        }
    }
}

fn f32_distributions_all_sizes(gpu: &tessera::Gpu) {
    let mut top = BitonicTopK::<f32>::new(gpu, (1 << 21) + 17).unwrap();
    for dist in Distribution::ALL {
        let mut done = Vec::new();
        for k in KS {
            for n in sizes_for(k) {
                if done.contains(&n) {
                    continue;
                }
                done.push(n);
                let data = dist.f32s(n, n as u64);
                check(gpu, &mut top, &data, &KS, dist.name());
            }
        }
    }
}

/// Keys of each type: uniform bits (so both signs, NaNs and infinities for floats) and keys in
/// `0..4` (ties at the k-th place).
fn every_key_type_and_ties(gpu: &tessera::Gpu) {
    fn run<K: BitonicKey>(gpu: &tessera::Gpu, from_bits: impl Fn(u64) -> K, name: &str) {
        let mut top = BitonicTopK::<K>::new(gpu, (1 << 21) + 17).unwrap();
        let mut rng = StdRng::seed_from_u64(11);
        for n in capped(&[1, 33, 2047, 2049, 4097, 3 * 4096 * 16 + 5, (1 << 21) + 17]) {
            let wide: Vec<K> = (0..n).map(|_| from_bits(rng.random())).collect();
            check(gpu, &mut top, &wide, &KS, &format!("{name} bits"));
            let few: Vec<K> = (0..n).map(|_| from_bits(rng.random_range(0..4))).collect();
            check(gpu, &mut top, &few, &KS, &format!("{name} 0..4"));
        }
    }
    run::<f32>(gpu, |b| f32::from_bits(b as u32), "f32");
    run::<f64>(gpu, f64::from_bits, "f64");
    run::<i32>(gpu, |b| b as i32, "i32");
    run::<u32>(gpu, |b| b as u32, "u32");
    // Small integers as floats: ties of equal keys, not only of equal bits.
    run::<f32>(gpu, |b| (b % 4) as f32, "f32 small");
    run::<f64>(gpu, |b| (b % 4) as f64 - 1.0, "f64 small");
    run::<i32>(gpu, |b| (b % 4) as i32 - 2, "i32 small");
}

fn nan_and_signed_zero(gpu: &tessera::Gpu) {
    let mut top = BitonicTopK::<f32>::new(gpu, 10_000).unwrap();
    let special = [
        f32::NAN,
        -f32::NAN,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        -1.0,
    ];
    let data: Vec<f32> = (0..10_000).map(|i| special[(i * 7 + i / 3) % 8]).collect();
    check(gpu, &mut top, &data, &KS, "f32 specials");
    let mut top = BitonicTopK::<f64>::new(gpu, 5000).unwrap();
    let data: Vec<f64> = (0..5000)
        .map(|i| f64::from(special[(i * 5 + i / 7) % 8]))
        .collect();
    check(gpu, &mut top, &data, &KS, "f64 specials");
}

fn one_buffer_many_sizes_and_errors(gpu: &tessera::Gpu) {
    let mut top = BitonicTopK::<u32>::new(gpu, 100_000).unwrap();
    for n in [100_000, 5, 70_000, 1] {
        let data: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        check(gpu, &mut top, &data, &[1, 16, 17, 500], "reuse");
    }
    let d = gpu.upload(&[3u32, 1, 2]).unwrap();
    let mut err = |k| {
        top.run(gpu, &d, k, TopKOrder::Largest)
            .unwrap_err()
            .to_string()
    };
    let (e0, e4) = (err(0), err(4));
    assert!(e0.contains("k is 0"), "{e0}");
    assert!(e4.contains("exceeds"), "{e4}");
    let big = gpu.upload(&vec![1u32; 2000]).unwrap();
    let e = top
        .run(gpu, &big, 1025, TopKOrder::Largest)
        .unwrap_err()
        .to_string();
    assert!(e.contains("1024"), "{e}");
    let mut small = BitonicTopK::<u32>::new(gpu, 10).unwrap();
    let e = small
        .run(gpu, &big, 5, TopKOrder::Largest)
        .unwrap_err()
        .to_string();
    assert!(e.contains("buffers hold 10"), "{e}");
}

/// Inputs large enough for levels (`FIRST_LEVEL`: two levels, and four at the largest size),
/// where most tiles skip the network, on every distribution and on ties.
fn sampled_thresholds(gpu: &tessera::Gpu) {
    let big = (4usize << 24) + 5;
    let mut top = BitonicTopK::<f32>::new(gpu, big).unwrap();
    for n in capped(&[(4 << 20) + 3, big]) {
        for dist in Distribution::ALL {
            let data = dist.f32s(n, 5);
            check(gpu, &mut top, &data, &[1, 32, 256, 1024], dist.name());
        }
    }
    for n in capped(&[(5 << 20) + 1]) {
        let mut rng = StdRng::seed_from_u64(9);
        let few: Vec<i32> = (0..n).map(|_| rng.random_range(0..4)).collect();
        let mut top = BitonicTopK::<i32>::new(gpu, n).unwrap();
        check(gpu, &mut top, &few, &[33, 1000], "i32 0..4");
        let wide: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
        let mut top = BitonicTopK::<f64>::new(gpu, n).unwrap();
        check(gpu, &mut top, &wide, &[2, 512], "f64 U(0, 1)");
    }
}

/// One top-k with both levels of thresholds off (for compute-sanitizer, which the larger tests
/// keep too long).
fn sampled_threshold_once(gpu: &tessera::Gpu) {
    let n = (4 << 20) + 3;
    let data = Distribution::Uniform.f32s(n, 8);
    let mut top = BitonicTopK::<f32>::new(gpu, n).unwrap();
    let d = gpu.upload(&data).unwrap();
    let got = top.run(gpu, &d, 32, TopKOrder::Largest).unwrap();
    same(
        &got,
        &cpu::top_k(&data, 32, TopKOrder::Largest).unwrap(),
        "once",
    );
}

/// Every configuration of the ablation finds the same list.
fn ablation_configurations_agree(gpu: &tessera::Gpu) {
    let mut top = BitonicTopK::<f32>::new(gpu, 1 << 20).unwrap();
    for cfg in BitonicConfig::<f32>::ablation() {
        top.set_config(cfg);
        for n in capped(&[1, 4095, 4097, 100_003, 1 << 20]) {
            let data = Distribution::Uniform.f32s(n, 3);
            let few: Vec<f32> = data.iter().map(|x| (x * 4.0).floor()).collect();
            check(gpu, &mut top, &data, &[1, 32, 256, 1024], cfg.name);
            check(gpu, &mut top, &few, &[33, 1000], cfg.name);
        }
    }
}

/// Times at 2^29 `f32` U(0, 1) (`--ignored topk_bitonic_benchmark --nocapture`): every
/// configuration of the ablation at several `k`, against one read of the input.
/// `TESSERA_BENCH_N` sets the size, `TESSERA_BENCH_ONLY` keeps the configurations whose name
/// contains it, `TESSERA_BENCH_K` (a comma-separated list) sets the `k`s.
fn topk_bitonic_benchmark(gpu: &tessera::Gpu) {
    let n = std::env::var("TESSERA_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize << 29);
    let data = Distribution::Uniform.f32s(n, 1);
    let d = gpu.upload(&data).unwrap();
    let words: &[u32] = bytemuck::cast_slice(&data);
    let du = gpu.upload(words).unwrap();
    let mut sum = gpu.zeros::<u64>(1).unwrap();
    let read = gpu
        .time(3, 20, || {
            tessera::ops::read_sum_into_for_bench(gpu, &du, &mut sum)
        })
        .unwrap()
        .median_ms();
    println!("device {}: n {n}: one read {read:.3} ms", gpu.name());
    drop(du);
    let only = std::env::var("TESSERA_BENCH_ONLY").unwrap_or_default();
    let ks: Vec<usize> = std::env::var("TESSERA_BENCH_K")
        .ok()
        .and_then(|v| v.split(',').map(|k| k.parse().ok()).collect())
        .unwrap_or(vec![32, 256, 1, 1024]);
    let mut top = BitonicTopK::<f32>::new(gpu, n).unwrap();
    for cfg in BitonicConfig::<f32>::ablation() {
        if !cfg.name.contains(only.as_str()) {
            continue;
        }
        top.set_config(cfg);
        for k in ks.iter().copied() {
            let ms = gpu
                .time(2, 10, || {
                    top.launch(gpu, &d, k, TopKOrder::Largest).map(|_| ())
                })
                .unwrap()
                .median_ms();
            println!(
                "  {:<28} k {k:>4}: {ms:.3} ms ({:.2} x read)",
                cfg.name,
                ms / read
            );
        }
    }
    top.set_config(BitonicConfig::product());
    let got = top.run(gpu, &d, 256, TopKOrder::Largest).unwrap();
    let want = cpu::top_k(&data, 256, TopKOrder::Largest).unwrap();
    same(&got, &want, "benchmark input k 256");
}

harness! {
    gpu: [
        f32_distributions_all_sizes,
        every_key_type_and_ties,
        nan_and_signed_zero,
        one_buffer_many_sizes_and_errors,
        ablation_configurations_agree,
        sampled_thresholds,
        sampled_threshold_once,
    ],
    extra: [
        Test::gpu("topk_bitonic_benchmark", topk_bitonic_benchmark).ignored("a benchmark: run it with --ignored"),
    ],
}
