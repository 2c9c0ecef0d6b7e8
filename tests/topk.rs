//! Top-k on the GPU (threshold filter, radix select, sort and choose, and the `top_k` call)
//! against the CPU heap top-k: the exact list, keys bit for bit and rows.
mod common;
use common::*;
use tessera::bench::topk_data::Distribution;
use tessera::cpu;
use tessera::ops::{self, SelectTopK, SortTopK, TopKAlgorithm, TopKOrder, TopKey, top_k};
use tessera::{DeviceColumn, Gpu};

const ORDERS: [TopKOrder; 2] = [TopKOrder::Largest, TopKOrder::Smallest];

/// Tile of the 4-byte filter kernel.
const FILTER_TILE: usize = ops::TOPK_TILE;

/// Every algorithm that takes `K`, and the `top_k` call, against the CPU.
fn check_all<K: TopKey + bytemuck::Pod + std::fmt::Debug>(
    gpu: &Gpu,
    sel: &mut SelectTopK,
    keys: &[K],
    d: &DeviceColumn<K>,
    k: usize,
    what: &str,
) {
    for order in ORDERS {
        let want = cpu::top_k(keys, k, order).unwrap();
        let what = format!("{what} n={} k={k} {order:?}", keys.len());
        for a in [TopKAlgorithm::Threshold, TopKAlgorithm::RadixSelect] {
            let got = sel.run(gpu, d, k, order, a).unwrap();
            same(&got, &want, &format!("{what} {}", a.name()));
        }
        if SortTopK::supports::<K>() {
            let got = SortTopK::new().run(gpu, d, k, order).unwrap();
            same(&got, &want, &format!("{what} sort"));
        }
        same(
            &top_k(gpu, d, k, order).unwrap(),
            &want,
            &format!("{what} top_k"),
        );
    }
}

fn ks(n: usize) -> Vec<usize> {
    // 100 and 200: the order kernel places 256 and 512 chosen over several blocks.
    let mut v: Vec<usize> = [1, 2, 31, 32, 33, 100, 200, 1024, n.saturating_sub(1), n]
        .into_iter()
        .filter(|&k| k >= 1 && k <= n && (k <= 4096 || k == n && n <= 1 << 16))
        .collect();
    v.dedup();
    v
}

fn awkward_sizes() -> Vec<usize> {
    capped(&[
        1,
        31,
        32,
        33,
        1024,
        FILTER_TILE - 1,
        FILTER_TILE,
        FILTER_TILE + 1,
        5 * FILTER_TILE + 3,
        (1 << 18) + 5,
        (1 << 21) + 17,
        // Several tiles for every block of the resident filter: its staged buffers wrap.
        (1 << 23) + 3,
    ])
}

fn four_distributions_f32(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in awkward_sizes() {
        for dist in Distribution::ALL {
            let keys = dist.f32s(n, n as u64 + 1);
            let d = gpu.upload(&keys).unwrap();
            for k in ks(n) {
                check_all(gpu, &mut sel, &keys, &d, k, dist.name());
            }
        }
    }
}

/// Keys with few distinct values, so equal keys straddle the `k`-th place.
fn ties_and_every_key_type(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in capped(&[1, 33, FILTER_TILE + 1, (1 << 18) + 5, (1 << 21) + 17]) {
        let small = uniform_i32(n, 4, n as u64);
        let u: Vec<u32> = small.iter().map(|&x| x as u32).collect();
        let i: Vec<i32> = small.iter().map(|&x| x - 2).collect();
        let f: Vec<f32> = small.iter().map(|&x| x as f32 * 0.5).collect();
        let g: Vec<f64> = small.iter().map(|&x| -(x as f64)).collect();
        let wide: Vec<f64> = uniform_f32(n, 9)
            .iter()
            .map(|&x| x as f64 * 1e300)
            .collect();
        let iw: Vec<i32> = uniform_i32(n, i32::MAX, 3)
            .iter()
            .map(|&x| x - (1 << 30))
            .collect();
        for k in ks(n) {
            check_all(
                gpu,
                &mut sel,
                &u,
                &gpu.upload(&u).unwrap(),
                k,
                "u32 in 0..4",
            );
            check_all(
                gpu,
                &mut sel,
                &i,
                &gpu.upload(&i).unwrap(),
                k,
                "i32 in -2..2",
            );
            check_all(gpu, &mut sel, &f, &gpu.upload(&f).unwrap(), k, "f32 halves");
            check_all(
                gpu,
                &mut sel,
                &g,
                &gpu.upload(&g).unwrap(),
                k,
                "f64 in -3..=0",
            );
            check_all(
                gpu,
                &mut sel,
                &wide,
                &gpu.upload(&wide).unwrap(),
                k,
                "f64 wide",
            );
            check_all(gpu, &mut sel, &iw, &gpu.upload(&iw).unwrap(), k, "i32 wide");
        }
    }
}

/// NaNs of both signs, infinities, signed zeros: the total order of `f32::total_cmp`.
fn nan_and_signed_zero(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
    ];
    for n in capped(&[8, FILTER_TILE + 1, (1 << 18) + 5]) {
        let mut keys = uniform_f32(n, 5);
        for (i, x) in keys.iter_mut().enumerate() {
            if i % 7 == 0 {
                *x = specials[(i / 7) % specials.len()];
            }
        }
        let d = gpu.upload(&keys).unwrap();
        for k in ks(n) {
            check_all(gpu, &mut sel, &keys, &d, k, "f32 specials");
        }
        let wide: Vec<f64> = keys.iter().map(|&x| x as f64).collect();
        let dw = gpu.upload(&wide).unwrap();
        for k in ks(n) {
            check_all(gpu, &mut sel, &wide, &dw, k, "f64 specials");
        }
    }
}

/// Inputs whose sample misleads the threshold (the sampled rows hold the worst keys, or the
/// only good ones): the filter keeps too many or too few, and the call falls back to the
/// exact select with the same answer.
fn misleading_samples_fall_back(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in capped(&[1 << 20, (1 << 21) + 17]) {
        let plan = ops::SamplePlan::new(n, 1000);
        let low: Vec<f32> = (0..n)
            .map(|i| if plan.is_sampled(i) { -1.0 } else { i as f32 })
            .collect();
        let high: Vec<f32> = (0..n)
            .map(|i| {
                if plan.is_sampled(i) {
                    2.0 + i as f32
                } else {
                    1.0
                }
            })
            .collect();
        for (keys, what) in [
            (low, "sample holds the worst"),
            (high, "sample holds the best"),
        ] {
            let d = gpu.upload(&keys).unwrap();
            let want = cpu::top_k(&keys, 1000, TopKOrder::Largest).unwrap();
            let got = sel
                .run(gpu, &d, 1000, TopKOrder::Largest, TopKAlgorithm::Threshold)
                .unwrap();
            same(&got, &want, what);
            assert!(sel.fell_back(), "{what}: expected the exact fallback");
        }
        let fine = Distribution::Uniform.f32s(n, 3);
        let d = gpu.upload(&fine).unwrap();
        sel.run(gpu, &d, 1000, TopKOrder::Largest, TopKAlgorithm::Threshold)
            .unwrap();
        assert!(!sel.fell_back(), "uniform keys should not fall back");
    }
}

fn bad_k_and_empty_input(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    let empty = gpu.upload::<f32>(&[]).unwrap();
    let three = gpu.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    for (d, k) in [(&empty, 1), (&three, 0), (&three, 4)] {
        let e = top_k(gpu, d, k, TopKOrder::Largest)
            .unwrap_err()
            .to_string();
        assert!(e.contains("k"), "{e}");
        assert!(
            sel.run(gpu, d, k, TopKOrder::Largest, TopKAlgorithm::RadixSelect)
                .is_err()
        );
        assert!(SortTopK::new().run(gpu, d, k, TopKOrder::Largest).is_err());
    }
    let wide = gpu.upload(&[1.0f64]).unwrap();
    let e = SortTopK::new()
        .run(gpu, &wide, 1, TopKOrder::Largest)
        .unwrap_err();
    assert!(e.to_string().contains("f32, i32 and u32"), "{e}");
}

harness! {
    gpu: [
        four_distributions_f32,
        ties_and_every_key_type,
        nan_and_signed_zero,
        misleading_samples_fall_back,
        bad_k_and_empty_input,
    ],
}
