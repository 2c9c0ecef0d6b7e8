//! Radix sort and radix partition: GPU against the CPU implementations.
mod common;

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Zipf};
use tessera::cpu;
use tessera::ops::{self, Order, RadixPartition, RadixSort, SortStrategy};

/// Items per tile of the 32-bit key-only, 32-bit key + value, and 64-bit key passes.
const TILE32: usize = 256 * 16;
const TILE_KV: usize = 256 * 20;
const TILE64: usize = 256 * 12;

/// Panics naming the first position where `got` and `want` differ.
fn same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let lo = i.saturating_sub(2);
        let hi = (i + 3).min(got.len());
        panic!(
            "{what}: first difference at {i} of {}: got {:?}, want {:?}",
            got.len(),
            &got[lo..hi],
            &want[lo..hi]
        );
    }
}

fn sizes() -> Vec<usize> {
    common::capped(&[
        0,
        1,
        2,
        255,
        TILE64 - 1,
        TILE64 + 1,
        TILE32 - 1,
        TILE32,
        TILE32 + 1,
        TILE_KV - 1,
        TILE_KV + 1,
        5 * TILE32 + 17,
        (1 << 20) + 3,
        1 << 23,
    ])
}

/// Key distributions: uniform over all bits, a narrow range (skipped passes), all equal,
/// sorted, reverse sorted, Zipf-skewed.
fn distributions(n: usize, seed: u64) -> Vec<(&'static str, Vec<u32>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(10_000.0, 1.2).unwrap();
    vec![
        ("uniform", (0..n).map(|_| rng.random()).collect()),
        (
            "narrow",
            (0..n).map(|_| rng.random_range(0..1 << 12)).collect(),
        ),
        ("equal", vec![0xdead_beef; n]),
        ("sorted", (0..n as u32).map(|i| i.wrapping_mul(3)).collect()),
        ("reverse", (0..n as u32).rev().collect()),
        (
            "zipf",
            (0..n)
                .map(|_| zipf.sample(&mut rng) as u32 * 7919)
                .collect(),
        ),
    ]
}

fn sort_pairs_u32_matches_cpu(gpu: &tessera::Gpu) {
    for n in sizes() {
        for (dist, keys) in distributions(n, n as u64) {
            let vals: Vec<u32> = (0..n as u32).collect();
            let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&vals).unwrap());
            for order in [Order::Ascending, Order::Descending] {
                let (gk, gv) = ops::sort_pairs(gpu, &dk, &dv, order).unwrap();
                let (ck, cv) = cpu::sort_pairs(&keys, Some(&vals), order).unwrap();
                same(
                    &gk.to_vec(gpu).unwrap(),
                    &ck,
                    &format!("keys n={n} {dist} {order:?}"),
                );
                same(
                    &gv.to_vec(gpu).unwrap(),
                    &cv,
                    &format!("values n={n} {dist} {order:?}"),
                );
            }
        }
    }
}

fn sort_keys_of_every_type_matches_cpu(gpu: &tessera::Gpu) {
    for n in sizes() {
        let mut rng = StdRng::seed_from_u64(n as u64 + 1);
        let raw: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        for order in [Order::Ascending, Order::Descending] {
            let i: Vec<i32> = raw.iter().map(|&x| x as i32).collect();
            let got = ops::sort(gpu, &gpu.upload(&i).unwrap(), order).unwrap();
            assert!(
                got.to_vec(gpu).unwrap() == cpu::sort(&i, order),
                "i32 n={n}"
            );

            // Floats over every bit pattern: NaNs of both signs, zeros, infinities, subnormals.
            let mut f: Vec<f32> = raw.iter().map(|&x| f32::from_bits(x)).collect();
            let specials = [
                f32::NAN,
                -f32::NAN,
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ];
            for (slot, s) in f.iter_mut().zip(specials) {
                *slot = s;
            }
            let got = ops::sort(gpu, &gpu.upload(&f).unwrap(), order).unwrap();
            let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(got.to_vec(gpu).unwrap()) == bits(cpu::sort(&f, order)),
                "f32 n={n}"
            );

            let w: Vec<u64> = raw
                .iter()
                .enumerate()
                .map(|(j, &x)| ((x as u64) << 32) | (j as u64 % 977))
                .collect();
            let got = ops::sort(gpu, &gpu.upload(&w).unwrap(), order).unwrap();
            assert!(
                got.to_vec(gpu).unwrap() == cpu::sort(&w, order),
                "u64 n={n}"
            );

            let u = ops::sort(gpu, &gpu.upload(&raw).unwrap(), order).unwrap();
            assert!(
                u.to_vec(gpu).unwrap() == cpu::sort(&raw, order),
                "u32 n={n}"
            );
        }
    }
}

fn sort_pairs_u64_and_f32_are_stable(gpu: &tessera::Gpu) {
    for n in sizes() {
        let mut rng = StdRng::seed_from_u64(n as u64 + 2);
        let vals: Vec<u32> = (0..n as u32).collect();
        let w: Vec<u64> = (0..n).map(|_| rng.random_range(0..50u64) << 40).collect();
        let (gk, gv) = ops::sort_pairs(
            gpu,
            &gpu.upload(&w).unwrap(),
            &gpu.upload(&vals).unwrap(),
            Order::Descending,
        )
        .unwrap();
        let (ck, cv) = cpu::sort_pairs(&w, Some(&vals), Order::Descending).unwrap();
        same(&gk.to_vec(gpu).unwrap(), &ck, &format!("u64 keys n={n}"));
        same(&gv.to_vec(gpu).unwrap(), &cv, &format!("u64 values n={n}"));
        let f: Vec<f32> = (0..n)
            .map(|_| rng.random_range(-4..4) as f32 * 0.5)
            .collect();
        let (gk, gv) = ops::sort_pairs(
            gpu,
            &gpu.upload(&f).unwrap(),
            &gpu.upload(&vals).unwrap(),
            Order::Ascending,
        )
        .unwrap();
        let (ck, cv) = cpu::sort_pairs(&f, Some(&vals), Order::Ascending).unwrap();
        same(&gk.to_vec(gpu).unwrap(), &ck, &format!("f32 keys n={n}"));
        same(&gv.to_vec(gpu).unwrap(), &cv, &format!("f32 values n={n}"));
    }
}

/// Keys for the MSD sort: `prefixes` distinct top-16-bit prefixes spread over the key space,
/// `per` keys each, low bits drawn from `low` values (few values: many equal keys, so values
/// show whether the sort is stable). Returned shuffled.
fn bucketed(prefixes: u32, per: usize, low: u32, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys: Vec<u32> = (0..prefixes)
        .flat_map(|p| {
            let prefix = p.wrapping_mul(0x9e37) & 0xffff;
            (0..per).map(move |_| prefix << 16)
        })
        .map(|k| k | (rng.random_range(0..low).wrapping_mul(0x0101) & 0xffff))
        .collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
    keys
}

fn msd_sort_matches_cpu(gpu: &tessera::Gpu) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut cases: Vec<(String, Vec<u32>)> = Vec::new();
    for n in common::capped(&[1, 2, 255, 4097, 70_001, (1 << 20) + 3, 1 << 23]) {
        cases.push((
            format!("uniform n={n}"),
            (0..n).map(|_| rng.random()).collect(),
        ));
        // Spread over the whole range, already in order and in reverse.
        let step = (u32::MAX as usize / n.max(1)) as u32;
        cases.push((
            format!("sorted n={n}"),
            (0..n as u32).map(|i| i * step).collect(),
        ));
        cases.push((
            format!("reverse n={n}"),
            (0..n as u32).rev().map(|i| i * step).collect(),
        ));
    }
    check_msd(gpu, &cases);
}

/// Sorts every case with the MSD sort (key + value and keys alone, both orders) and compares
/// the results with the CPU's.
fn check_msd(gpu: &tessera::Gpu, cases: &[(String, Vec<u32>)]) {
    let cap = cases.iter().map(|(_, k)| k.len()).max().unwrap_or(0);
    let mut sorter = RadixSort::<u32>::new(gpu, cap, true).unwrap();
    sorter.set_strategy(SortStrategy::Msd);
    for (what, keys) in cases {
        let n = keys.len();
        let vals: Vec<u32> = (0..n as u32).collect();
        let (dk, dv) = (gpu.upload(keys).unwrap(), gpu.upload(&vals).unwrap());
        let (mut ko, mut vo) = (gpu.zeros(n).unwrap(), gpu.zeros(n).unwrap());
        for order in [Order::Ascending, Order::Descending] {
            sorter
                .sort_pairs(gpu, &dk, &dv, &mut ko, &mut vo, order)
                .unwrap();
            assert_eq!(sorter.strategy_run(), Some(SortStrategy::Msd), "{what}");
            let (ck, cv) = cpu::sort_pairs(keys, Some(&vals), order).unwrap();
            same(
                &ko.to_vec(gpu).unwrap(),
                &ck,
                &format!("keys {what} {order:?}"),
            );
            same(
                &vo.to_vec(gpu).unwrap(),
                &cv,
                &format!("values {what} {order:?}"),
            );
            let mut keys_only = gpu.zeros(n).unwrap();
            sorter.sort_keys(gpu, &dk, &mut keys_only, order).unwrap();
            same(
                &keys_only.to_vec(gpu).unwrap(),
                &ck,
                &format!("keys only {what} {order:?}"),
            );
        }
    }
}

fn msd_local_sorts_of_every_tile_match_cpu(gpu: &tessera::Gpu) {
    // The largest bucket picks the local sort's tile (1280, 2304, 4608 or 9216 items). A few
    // buckets of each size keep the inputs small enough for compute-sanitizer; many buckets
    // at once follow. Few low values make many equal keys, whose values show stability.
    let mut cases: Vec<(String, Vec<u32>)> = Vec::new();
    for (prefixes, per, low) in [
        (2, 1200, 3),
        (2, 2000, 7),
        (3, 4500, 50),
        (2, 5000, 300),
        (1, 8192, 65536),
        (300, 2000, 7),
        (200, 4500, 50),
        (100, 5000, 300),
        (40, 8000, 2),
    ] {
        if common::capped(&[prefixes as usize * per]).is_empty() {
            continue;
        }
        cases.push((
            format!("{prefixes} buckets of {per}, {low} low values"),
            bucketed(prefixes, per, low, per as u64),
        ));
    }
    check_msd(gpu, &cases);
}

fn msd_sort_of_signed_and_float_keys_matches_cpu(gpu: &tessera::Gpu) {
    for n in common::capped(&[3, 10_007, 1 << 21]) {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let raw: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        for order in [Order::Ascending, Order::Descending] {
            let i: Vec<i32> = raw.iter().map(|&x| x as i32).collect();
            let mut si = RadixSort::<i32>::new(gpu, n, false).unwrap();
            si.set_strategy(SortStrategy::Msd);
            let mut out = gpu.zeros(n).unwrap();
            si.sort_keys(gpu, &gpu.upload(&i).unwrap(), &mut out, order)
                .unwrap();
            assert_eq!(si.strategy_run(), Some(SortStrategy::Msd));
            same(
                &out.to_vec(gpu).unwrap(),
                &cpu::sort(&i, order),
                &format!("i32 n={n} {order:?}"),
            );

            let mut f: Vec<f32> = raw.iter().map(|&x| f32::from_bits(x)).collect();
            for (slot, s) in f
                .iter_mut()
                .zip([f32::NAN, -f32::NAN, 0.0, -0.0, f32::INFINITY])
            {
                *slot = s;
            }
            let vals: Vec<u32> = (0..n as u32).collect();
            let mut sf = RadixSort::<f32>::new(gpu, n, true).unwrap();
            sf.set_strategy(SortStrategy::Msd);
            let (mut ko, mut vo) = (gpu.zeros(n).unwrap(), gpu.zeros(n).unwrap());
            sf.sort_pairs(
                gpu,
                &gpu.upload(&f).unwrap(),
                &gpu.upload(&vals).unwrap(),
                &mut ko,
                &mut vo,
                order,
            )
            .unwrap();
            assert_eq!(sf.strategy_run(), Some(SortStrategy::Msd));
            let (ck, cv) = cpu::sort_pairs(&f, Some(&vals), order).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            same(
                &bits(&ko.to_vec(gpu).unwrap()),
                &bits(&ck),
                &format!("f32 n={n} {order:?}"),
            );
            same(
                &vo.to_vec(gpu).unwrap(),
                &cv,
                &format!("f32 values n={n} {order:?}"),
            );
        }
    }
}

fn msd_sort_falls_back_to_lsb_for_large_buckets(gpu: &tessera::Gpu) {
    // Three 16-bit prefixes hold every key: their buckets (a third of n each) must exceed the
    // largest local sort tile, 9,216 items, so n stays at 30,000 however tight the cap (at
    // 20,000 the buckets fit and the MSD sort rightly ran).
    let n = common::capped(&[100_000])
        .first()
        .copied()
        .unwrap_or(30_000);
    let mut rng = StdRng::seed_from_u64(7);
    let keys: Vec<u32> = (0..n)
        .map(|_| (rng.random_range(0..3u32) << 30) | rng.random_range(0..1 << 16))
        .collect();
    let vals: Vec<u32> = (0..n as u32).collect();
    let mut sorter = RadixSort::<u32>::new(gpu, n, true).unwrap();
    sorter.set_strategy(SortStrategy::Msd);
    let (mut ko, mut vo) = (gpu.zeros(n).unwrap(), gpu.zeros(n).unwrap());
    let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&vals).unwrap());
    sorter
        .sort_pairs(gpu, &dk, &dv, &mut ko, &mut vo, Order::Ascending)
        .unwrap();
    assert_eq!(sorter.strategy_run(), Some(SortStrategy::Lsb));
    // Bits 16..24 are zero everywhere: the fallback skips that pass, as the LSB sort does.
    assert_eq!(sorter.passes_run(), 3);
    let (ck, cv) = cpu::sort_pairs(&keys, Some(&vals), Order::Ascending).unwrap();
    same(&ko.to_vec(gpu).unwrap(), &ck, "fallback keys");
    same(&vo.to_vec(gpu).unwrap(), &cv, "fallback values");
    // Small inputs take the LSB sort unless asked otherwise.
    sorter.set_strategy(SortStrategy::Auto);
    sorter
        .sort_pairs(gpu, &dk, &dv, &mut ko, &mut vo, Order::Ascending)
        .unwrap();
    assert_eq!(sorter.strategy_run(), Some(SortStrategy::Lsb));
    same(&ko.to_vec(gpu).unwrap(), &ck, "auto keys");
}

fn trivial_passes_are_skipped(gpu: &tessera::Gpu) {
    let n = common::capped(&[100_000, 3000])
        .first()
        .copied()
        .unwrap_or(3000);
    let keys: Vec<u32> = (0..n as u32).map(|i| (i * 7919) % 60_000).collect();
    let dk = gpu.upload(&keys).unwrap();
    let mut sorter = RadixSort::<u32>::new(gpu, n, false).unwrap();
    let mut out = gpu.zeros(n).unwrap();
    sorter
        .sort_keys(gpu, &dk, &mut out, Order::Ascending)
        .unwrap();
    assert_eq!(
        sorter.passes_run(),
        2,
        "keys below 2^16 need two 8-bit passes"
    );
    assert!(out.to_vec(gpu).unwrap() == cpu::sort(&keys, Order::Ascending));
    // Reuse with all-equal keys: one pass still runs, the result is the input.
    let same = gpu.upload(&vec![5u32; n]).unwrap();
    sorter
        .sort_keys(gpu, &same, &mut out, Order::Descending)
        .unwrap();
    assert_eq!(sorter.passes_run(), 1);
    assert!(out.to_vec(gpu).unwrap() == vec![5u32; n]);
}

fn partition_matches_cpu(gpu: &tessera::Gpu) {
    for n in common::capped(&[0, 1, TILE32 - 1, TILE32 + 1, 3 * TILE32 + 5, 1 << 22]) {
        for (dist, keys) in distributions(n, 7 + n as u64) {
            let vals: Vec<u32> = (0..n as u32).collect();
            let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&vals).unwrap());
            for bits in 1..=10 {
                let start = if bits % 2 == 0 { 0 } else { 32 - bits };
                let want = cpu::radix_partition(&keys, &vals, start, bits).unwrap();
                let want_off: Vec<u64> = want.offsets.iter().map(|&o| o as u64).collect();
                let stable = ops::radix_partition(gpu, &dk, &dv, start, bits, true).unwrap();
                assert_eq!(stable.offsets, want_off, "offsets n={n} {dist} bits={bits}");
                same(
                    &stable.keys.to_vec(gpu).unwrap(),
                    &want.keys,
                    &format!("stable keys n={n} {dist} bits={bits}"),
                );
                same(
                    &stable.values.to_vec(gpu).unwrap(),
                    &want.values,
                    &format!("stable values n={n} {dist} bits={bits}"),
                );

                // Unstable: same partitions, same pairs in each, any order within one.
                let un = ops::radix_partition(gpu, &dk, &dv, start, bits, false).unwrap();
                assert_eq!(un.offsets, want_off);
                let (uk, uv) = (un.keys.to_vec(gpu).unwrap(), un.values.to_vec(gpu).unwrap());
                for w in want.offsets.windows(2) {
                    let mut got: Vec<(u32, u32)> = uk[w[0]..w[1]]
                        .iter()
                        .copied()
                        .zip(uv[w[0]..w[1]].iter().copied())
                        .collect();
                    let mut exp: Vec<(u32, u32)> = want.keys[w[0]..w[1]]
                        .iter()
                        .copied()
                        .zip(want.values[w[0]..w[1]].iter().copied())
                        .collect();
                    got.sort_unstable();
                    exp.sort_unstable();
                    assert!(got == exp, "unstable partition n={n} {dist} bits={bits}");
                }
            }
        }
    }
}

fn bad_arguments_are_errors(gpu: &tessera::Gpu) {
    let k = gpu.upload(&[3u32, 1, 2]).unwrap();
    let v2 = gpu.upload(&[1u32, 2]).unwrap();
    assert!(ops::sort_pairs(gpu, &k, &v2, Order::Ascending).is_err());
    assert!(ops::radix_partition(gpu, &k, &v2, 0, 4, true).is_err());
    assert!(RadixPartition::new(0, 11, true).is_err());
    assert!(RadixPartition::new(0, 0, true).is_err());
    assert!(RadixPartition::new(28, 5, false).is_err());
    let mut p = RadixPartition::new(0, 4, true).unwrap();
    let (mut a, mut b) = (gpu.zeros(3).unwrap(), gpu.zeros(3).unwrap());
    let v3 = gpu.upload(&[1u32, 2, 3]).unwrap();
    let e = p.shuffle(gpu, &k, &v3, &mut a, &mut b).unwrap_err();
    assert!(e.to_string().contains("before histogram"), "{e}");
    let mut small = RadixSort::<u32>::new(gpu, 2, false).unwrap();
    let mut out = gpu.zeros(3).unwrap();
    assert!(
        small
            .sort_keys(gpu, &k, &mut out, Order::Ascending)
            .is_err()
    );
    let mut keys_only = RadixSort::<u32>::new(gpu, 3, false).unwrap();
    let mut vo = gpu.zeros(3).unwrap();
    assert!(
        keys_only
            .sort_pairs(gpu, &k, &v3, &mut out, &mut vo, Order::Ascending)
            .is_err()
    );
}

harness! {
    gpu: [
        sort_pairs_u32_matches_cpu,
        sort_keys_of_every_type_matches_cpu,
        sort_pairs_u64_and_f32_are_stable,
        msd_sort_matches_cpu,
        msd_local_sorts_of_every_tile_match_cpu,
        msd_sort_of_signed_and_float_keys_matches_cpu,
        msd_sort_falls_back_to_lsb_for_large_buckets,
        trivial_passes_are_skipped,
        partition_matches_cpu,
        bad_arguments_are_errors,
    ],
}
