//! Multi-key top-k on the GPU (KV, KKV, KKKV: 1 to 3 key columns and a value column) against
//! the CPU version: rows, keys bit for bit and values bit for bit, for every path (the
//! sampled threshold, the exact one, the select over every row).
mod common;
use common::*;
use tessera::cpu;
use tessera::ops::{self, MultiKey, MultiPath, TopKMulti, TopKMultiRows, TopKOrder};
use tessera::{DeviceColumn, DeviceItem, Gpu};

const ORDERS: [TopKOrder; 2] = [TopKOrder::Largest, TopKOrder::Smallest];

/// Tile of the 4-byte filter kernel.
const TILE: usize = ops::TOPK_TILE;

fn bits<T: bytemuck::Pod>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Rows, then keys and values bit for bit.
fn same<K: bytemuck::Pod + std::fmt::Debug, V: bytemuck::Pod + std::fmt::Debug>(
    got: &TopKMultiRows<K, V>,
    want: &TopKMultiRows<K, V>,
    what: &str,
) {
    if got.rows != want.rows {
        let i = (0..got.rows.len().min(want.rows.len()))
            .find(|&i| got.rows[i] != want.rows[i])
            .unwrap_or(0);
        panic!(
            "{what}: {} rows, expected {}; first difference at {i}: row {:?} (keys {:?}), \
             expected row {:?} (keys {:?})",
            got.rows.len(),
            want.rows.len(),
            got.rows.get(i),
            got.keys.iter().map(|c| c.get(i)).collect::<Vec<_>>(),
            want.rows.get(i),
            want.keys.iter().map(|c| c.get(i)).collect::<Vec<_>>(),
        );
    }
    assert_eq!(got.keys.len(), want.keys.len(), "{what}: key columns");
    for (c, (g, w)) in got.keys.iter().zip(&want.keys).enumerate() {
        assert!(bits(g) == bits(w), "{what}: keys of column {c}");
    }
    assert!(bits(&got.values) == bits(&want.values), "{what}: values");
}

/// Columns on the host and the device.
struct Table<K: DeviceItem, V: DeviceItem> {
    keys: Vec<Vec<K>>,
    values: Vec<V>,
    dkeys: Vec<DeviceColumn<K>>,
    dvalues: DeviceColumn<V>,
}

impl<K: DeviceItem, V: DeviceItem> Table<K, V> {
    fn new(gpu: &Gpu, keys: Vec<Vec<K>>, values: Vec<V>) -> Self {
        let dkeys = keys.iter().map(|c| gpu.upload(c).unwrap()).collect();
        let dvalues = gpu.upload(&values).unwrap();
        Table {
            keys,
            values,
            dkeys,
            dvalues,
        }
    }
}

/// The GPU against the CPU on the first `nkeys` key columns, both orders; the paths taken.
fn check<K: MultiKey + bytemuck::Pod, V: DeviceItem>(
    gpu: &Gpu,
    tm: &mut TopKMulti,
    t: &Table<K, V>,
    nkeys: usize,
    k: usize,
    what: &str,
) -> Vec<MultiPath> {
    let host: Vec<&[K]> = t.keys[..nkeys].iter().map(|c| &c[..]).collect();
    let dev: Vec<&DeviceColumn<K>> = t.dkeys[..nkeys].iter().collect();
    let mut paths = Vec::new();
    for order in ORDERS {
        let what = format!("{what} keys={nkeys} n={} k={k} {order:?}", t.values.len());
        let want = cpu::top_k_multi(&host, &t.values, k, order).unwrap();
        let got = tm
            .run(gpu, &dev, &t.dvalues, k, order)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        same(&got, &want, &what);
        paths.extend(tm.path());
    }
    paths
}

fn ks(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [1, 2, 31, 32, 33, 1024, n]
        .into_iter()
        .filter(|&k| k <= n)
        .collect();
    v.dedup();
    v
}

fn awkward_sizes() -> Vec<usize> {
    capped(&[
        1,
        30,
        31,
        32,
        1023,
        1024,
        TILE - 1,
        TILE + 1,
        5 * TILE + 3,
        (1 << 21) + 17,
    ])
}

/// `n` rows of three `U(0, 1)` float keys and `i32` values (the thesis' tuples).
fn uniform(gpu: &Gpu, n: usize, seed: u64) -> Table<f32, i32> {
    let keys = (0..3).map(|c| uniform_f32(n, seed + c)).collect();
    Table::new(gpu, keys, uniform_i32(n, i32::MAX, seed + 9))
}

fn kv_kkv_kkkv_uniform_f32(gpu: &Gpu) {
    let mut tm = TopKMulti::new(gpu).unwrap();
    for n in awkward_sizes() {
        let t = uniform(gpu, n, n as u64);
        for k in ks(n) {
            for nkeys in 1..=3 {
                let paths = check(gpu, &mut tm, &t, nkeys, k, "uniform f32");
                if nkeys > 1 && n > 1 << 20 && k <= 1024 {
                    assert!(
                        paths.iter().all(|&p| p == MultiPath::Threshold),
                        "uniform keys, n={n} k={k}: expected the sampled threshold, got {paths:?}"
                    );
                }
            }
        }
    }
}

/// Few distinct first keys (ties straddle the `k`-th place, the later keys decide), and all
/// first keys equal (the candidates overflow, the select runs over every row).
fn ties_on_the_first_key(gpu: &Gpu) {
    let mut tm = TopKMulti::new(gpu).unwrap();
    for n in capped(&[33, TILE + 1, (1 << 18) + 5, (1 << 21) + 17]) {
        let four: Vec<u32> = uniform_i32(n, 4, n as u64)
            .iter()
            .map(|&x| x as u32)
            .collect();
        let three: Vec<u32> = uniform_i32(n, 3, 7).iter().map(|&x| x as u32).collect();
        let wide: Vec<u32> = uniform_i32(n, i32::MAX, 8)
            .iter()
            .map(|&x| x as u32)
            .collect();
        let vals: Vec<f64> = uniform_f32(n, 4).iter().map(|&x| x as f64).collect();
        let t = Table::new(
            gpu,
            vec![four.clone(), three.clone(), wide.clone()],
            vals.clone(),
        );
        let same_first = Table::new(gpu, vec![vec![7u32; n], three, wide], vals);
        for k in ks(n) {
            for nkeys in 1..=3 {
                check(gpu, &mut tm, &t, nkeys, k, "u32 first key in 0..4");
                let paths = check(gpu, &mut tm, &same_first, nkeys, k, "u32 first key equal");
                if nkeys > 1 && n > 1 << 20 && k <= 1024 {
                    assert!(
                        paths.iter().all(|&p| p == MultiPath::AllRows),
                        "equal first keys, n={n} k={k}: expected every row, got {paths:?}"
                    );
                }
            }
        }
    }
}

/// Every key type, with values of other widths; ties on the first two keys.
fn every_key_type(gpu: &Gpu) {
    let mut tm = TopKMulti::new(gpu).unwrap();
    for n in capped(&[1, 31, TILE - 1, (1 << 18) + 5]) {
        let small = uniform_i32(n, 5, n as u64);
        let mid = uniform_i32(n, 50, 3);
        let big = uniform_i32(n, i32::MAX, 5);
        let i: Vec<Vec<i32>> = vec![
            small.iter().map(|&x| x - 2).collect(),
            mid.iter().map(|&x| 25 - x).collect(),
            big.iter().map(|&x| x - (1 << 30)).collect(),
        ];
        let f64s: Vec<Vec<f64>> = i
            .iter()
            .map(|c| c.iter().map(|&x| x as f64 * 1e300).collect())
            .collect();
        let ti = Table::new(gpu, i, (0..n as u64).collect::<Vec<u64>>());
        let tf = Table::new(gpu, f64s, big.clone());
        let tu = Table::new(
            gpu,
            vec![
                mid.iter().map(|&x| x as u32).collect(),
                big.iter().map(|&x| x as u32).collect(),
            ],
            small.iter().map(|&x| x as f32).collect::<Vec<f32>>(),
        );
        for k in ks(n) {
            for nkeys in 1..=3 {
                check(gpu, &mut tm, &ti, nkeys, k, "i32");
                check(gpu, &mut tm, &tf, nkeys, k, "f64");
            }
            for nkeys in 1..=2 {
                check(gpu, &mut tm, &tu, nkeys, k, "u32");
            }
        }
    }
}

/// NaNs of both signs, infinities and signed zeros in every key column: the total order of
/// `f32::total_cmp`, and of `f64::total_cmp`.
fn nan_and_signed_zero(gpu: &Gpu) {
    let mut tm = TopKMulti::new(gpu).unwrap();
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
    for n in capped(&[8, TILE + 1, (1 << 18) + 5]) {
        let keys: Vec<Vec<f32>> = (0..3u64)
            .map(|c| {
                let mut v = uniform_f32(n, 5 + c);
                for (i, x) in v.iter_mut().enumerate() {
                    if i % (3 + c as usize) == 0 {
                        *x = specials[(i / 3 + c as usize) % specials.len()];
                    }
                }
                v
            })
            .collect();
        let wide: Vec<Vec<f64>> = keys
            .iter()
            .map(|c| c.iter().map(|&x| x as f64).collect())
            .collect();
        let vals: Vec<u32> = (0..n as u32).rev().collect();
        let t = Table::new(gpu, keys, vals.clone());
        let tw = Table::new(gpu, wide, vals);
        for k in ks(n) {
            for nkeys in 1..=3 {
                check(gpu, &mut tm, &t, nkeys, k, "f32 specials");
                check(gpu, &mut tm, &tw, nkeys, k, "f64 specials");
            }
        }
    }
}

fn bad_input_is_an_error(gpu: &Gpu) {
    let mut tm = TopKMulti::new(gpu).unwrap();
    let a = gpu.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let short = gpu.upload(&[1.0f32, 2.0]).unwrap();
    let vals = gpu.upload(&[1u32, 2, 3]).unwrap();
    let short_vals = gpu.upload(&[1u32, 2]).unwrap();
    let order = TopKOrder::Largest;
    type Case<'a> = (
        &'a [&'a DeviceColumn<f32>],
        &'a DeviceColumn<u32>,
        usize,
        &'a str,
    );
    let cases: [Case; 6] = [
        (&[], &vals, 1, "no key columns"),
        (&[&a, &a, &a, &a], &vals, 1, "4 key columns"),
        (&[&a, &short], &vals, 1, "key column 1"),
        (&[&a, &a], &short_vals, 1, "value column"),
        (&[&a, &a], &vals, 0, "k is 0"),
        (&[&a, &a, &a], &vals, 4, "exceeds"),
    ];
    for (keys, v, k, msg) in cases {
        let e = tm.run(gpu, keys, v, k, order).unwrap_err().to_string();
        assert!(
            e.contains(msg),
            "expected an error naming {msg:?}, got {e:?}"
        );
        assert!(ops::top_k_multi(gpu, keys, v, k, order).is_err());
    }
    // The same call still works after the errors.
    let ok = tm.run(gpu, &[&a, &a], &vals, 3, order).unwrap();
    assert_eq!(ok.rows, [2, 1, 0]);
}

/// Figure 4-15 at `TESSERA_MULTI_LOG2N` (default 28) tuples: `--ignored` runs it.
fn bench_multi_key(gpu: &Gpu) {
    let log2n = std::env::var("TESSERA_MULTI_LOG2N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(28);
    let (bw, mut records) = tessera::bench::measure_bandwidth(gpu, 5).unwrap();
    records.extend(tessera::bench::topk_multi::run_multi(gpu, &bw, log2n, 10).unwrap());
    tessera::bench::print_table(&records);
}

harness! {
    extra: [Test::gpu("bench_multi_key", bench_multi_key).ignored("a benchmark; --ignored runs it")],
    gpu: [
        kv_kkv_kkkv_uniform_f32,
        ties_on_the_first_key,
        every_key_type,
        nan_and_signed_zero,
        bad_input_is_an_error,
    ],
}
