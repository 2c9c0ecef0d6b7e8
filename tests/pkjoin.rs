//! The sample-sort primary-key join on the GPU against the CPU sort-merge join, and the
//! block-wise radix sort alone against a stable CPU sort, on every tile configuration.
mod common;
use common::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::cpu;
use tessera::ops::testing::{PK_BLOCK_SORT_KERNELS, pk_block_sort_tiles};
use tessera::ops::{self, PkJoin, PkJoinSteps, PkKey, PkPayload};

const SORT_TILE: usize = 2048;
const BUCKET: usize = 4096;

/// Per tile of `tile` items, a stable sort by bits `begin .. end`.
fn cpu_block_sort(
    keys: &[u32],
    vals: &[u32],
    tile: usize,
    begin: u32,
    end: u32,
) -> (Vec<u32>, Vec<u32>) {
    let width = end.saturating_sub(begin).min(32);
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    let digit = |k: u32| if width == 0 { 0 } else { (k >> begin) & mask };
    let (mut ok, mut ov) = (Vec::new(), Vec::new());
    for (kc, vc) in keys.chunks(tile).zip(vals.chunks(tile)) {
        let mut pairs: Vec<(u32, u32)> = kc.iter().copied().zip(vc.iter().copied()).collect();
        pairs.sort_by_key(|&(k, _)| digit(k)); // stable
        ok.extend(pairs.iter().map(|p| p.0));
        ov.extend(pairs.iter().map(|p| p.1));
    }
    (ok, ov)
}

fn block_sort_every_configuration(gpu: &tessera::Gpu) {
    for kernel in PK_BLOCK_SORT_KERNELS {
        let tile = kernel.tile();
        for n in capped(&[0, 1, tile - 1, tile, tile + 1, 3 * tile + 5, 100_003]) {
            let mut rng = StdRng::seed_from_u64(n as u64 ^ tile as u64);
            let dists: Vec<(&str, Vec<u32>)> = vec![
                ("uniform", (0..n).map(|_| rng.random()).collect()),
                (
                    "few distinct",
                    (0..n)
                        .map(|_| rng.random_range(0..5u32) * 0x1111_1111)
                        .collect(),
                ),
                ("all equal", vec![0xdead_beef; n]),
                ("sorted", (0..n as u32).collect()),
                ("reverse", (0..n as u32).rev().collect()),
                (
                    "extremes",
                    (0..n)
                        .map(|i| [0, u32::MAX, 1, u32::MAX - 1][i % 4])
                        .collect(),
                ),
            ];
            let vals: Vec<u32> = (0..n as u32).collect();
            for (what, keys) in &dists {
                for (begin, end) in [(0, 32), (0, 0), (4, 13), (28, 40)] {
                    let (gk, gv) =
                        pk_block_sort_tiles(gpu, kernel, keys, &vals, begin, end).unwrap();
                    let (ek, ev) = cpu_block_sort(keys, &vals, tile, begin, end);
                    let ctx = format!("{} n={n} {what} bits {begin}..{end}", kernel.name());
                    assert_eq!(gk, ek, "{ctx}: keys");
                    if kernel.carries_values() {
                        assert_eq!(gv, ev, "{ctx}: values (stability)");
                    }
                }
            }
        }
    }
}

/// The first `n` values of a random permutation of `lo .. lo + space` (distinct keys).
fn distinct(n: usize, lo: u64, space: u64, rng: &mut StdRng) -> Vec<u32> {
    assert!(space >= n as u64);
    if space <= 4 * n as u64 + 16 {
        let mut v: Vec<u32> = (0..space).map(|x| (lo + x) as u32).collect();
        v.shuffle(rng);
        v.truncate(n);
        v
    } else {
        let mut seen = std::collections::HashSet::with_capacity(n);
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            let x = (lo + rng.random_range(0..space)) as u32;
            if seen.insert(x) {
                v.push(x);
            }
        }
        v
    }
}

fn check<
    K: PkKey + Copy + PartialEq + std::fmt::Debug,
    A: PkPayload + Copy,
    B: PkPayload + Copy,
>(
    gpu: &tessera::Gpu,
    join: &mut PkJoin,
    a_keys: &[K],
    a_vals: &[A],
    b_keys: &[K],
    b_vals: &[B],
    what: &str,
) {
    if std::env::var_os("TESSERA_PK_VERBOSE").is_some() {
        eprintln!("checking {what}");
    }
    let expected = cpu::pk_join(a_keys, a_vals, b_keys, b_vals);
    let (ak, av) = (gpu.upload(a_keys).unwrap(), gpu.upload(a_vals).unwrap());
    let (bk, bv) = (gpu.upload(b_keys).unwrap(), gpu.upload(b_vals).unwrap());
    let mut steps = PkJoinSteps::default();
    let got = join.run(gpu, &ak, &av, &bk, &bv, Some(&mut steps));
    match (got, expected) {
        (Ok(g), Ok(e)) => {
            let g = g.to_rows(gpu).unwrap();
            assert_eq!(g.len(), e.len(), "{what}: rows");
            assert!(g.keys == e.keys, "{what}: keys");
            let bits = |x: &[A]| bytemuck::cast_slice::<A, u32>(x).to_vec();
            assert!(bits(&g.a) == bits(&e.a), "{what}: A payloads");
            let bits = |x: &[B]| bytemuck::cast_slice::<B, u32>(x).to_vec();
            assert!(bits(&g.b) == bits(&e.b), "{what}: B payloads");
        }
        (Err(g), Err(e)) => assert_eq!(g.to_string(), e.to_string(), "{what}: error"),
        (g, e) => panic!(
            "{what}: GPU {:?} vs CPU {:?}",
            g.map(|r| r.len()),
            e.map(|r| r.len())
        ),
    }
}

fn payload(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) ^ seed)
        .collect()
}

fn sizes_pk() -> Vec<usize> {
    capped(&[
        0,
        1,
        2,
        SORT_TILE - 1,
        SORT_TILE + 1,
        BUCKET + 1,
        40_000,
        1_000_000,
        3_000_001,
    ])
}

fn match_patterns_all_sizes(gpu: &tessera::Gpu) {
    let mut join = PkJoin::new();
    for n in sizes_pk() {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let space = (n as u64 * 5).div_ceil(4).max(1);
        // Partial match: two random subsets of one key space.
        let a = distinct(n, 0, space, &mut rng);
        let b = distinct(n, 0, space, &mut rng);
        check(
            gpu,
            &mut join,
            &a,
            &payload(n, 1),
            &b,
            &payload(n, 2),
            &format!("partial n={n}"),
        );
        // All match: B is A shuffled; and unequal sizes.
        let mut b = a.clone();
        b.shuffle(&mut rng);
        check(
            gpu,
            &mut join,
            &a,
            &payload(n, 3),
            &b,
            &payload(n, 4),
            &format!("all n={n}"),
        );
        let half = &b[..n / 2];
        check(
            gpu,
            &mut join,
            &a,
            &payload(n, 5),
            half,
            &payload(n / 2, 6),
            &format!("subset n={n}"),
        );
        // No match: even keys against odd keys.
        let even: Vec<u32> = a.iter().map(|&x| x.wrapping_mul(2)).collect();
        let odd: Vec<u32> = a.iter().map(|&x| x.wrapping_mul(2) | 1).collect();
        check(
            gpu,
            &mut join,
            &even,
            &payload(n, 7),
            &odd,
            &payload(n, 8),
            &format!("none n={n}"),
        );
    }
}

fn orders_and_distributions(gpu: &tessera::Gpu) {
    let mut join = PkJoin::new();
    for n in sizes_pk() {
        let mut rng = StdRng::seed_from_u64(7 + n as u64);
        let sorted: Vec<u32> = (0..n as u32).collect();
        let reverse: Vec<u32> = sorted.iter().rev().copied().collect();
        let pa = payload(n, 11);
        check(
            gpu,
            &mut join,
            &sorted,
            &pa,
            &sorted,
            &pa,
            &format!("sorted n={n}"),
        );
        check(
            gpu,
            &mut join,
            &reverse,
            &pa,
            &sorted,
            &pa,
            &format!("reverse n={n}"),
        );
        // Narrow ranges at both ends of the key space, overlapping by half.
        let top = u32::MAX as u64 + 1 - n as u64;
        let a = distinct(n, top, n as u64, &mut rng);
        let b = distinct(n / 2, top.saturating_sub(n as u64 / 2), n as u64, &mut rng);
        check(
            gpu,
            &mut join,
            &a,
            &pa,
            &b,
            &payload(b.len(), 12),
            &format!("top range n={n}"),
        );
        let a = distinct(n, 0, n as u64, &mut rng);
        let b = distinct(n, 0, 2 * n as u64, &mut rng);
        check(
            gpu,
            &mut join,
            &a,
            &pa,
            &b,
            &payload(n, 13),
            &format!("bottom range n={n}"),
        );
        // Zipf-like gaps: clustered values with a heavy tail of large gaps.
        let zipf = rand_distr::Zipf::new(1e6, 1.2).unwrap();
        let mut x = 0u64;
        let mut keys: Vec<u32> = (0..n)
            .map(|_| {
                x += rng.sample(zipf) as u64;
                x as u32
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.shuffle(&mut rng);
        let mut other = keys.clone();
        other.shuffle(&mut rng);
        other.truncate(keys.len() * 2 / 3);
        check(
            gpu,
            &mut join,
            &keys,
            &payload(keys.len(), 14),
            &other,
            &payload(other.len(), 15),
            &format!("zipf gaps n={n}"),
        );
        // Signed keys around zero with f32 payloads.
        let a: Vec<i32> = distinct(n, 0, 2 * n as u64 + 2, &mut rng)
            .iter()
            .map(|&v| v as i32 - n as i32)
            .collect();
        let b: Vec<i32> = distinct(n, 0, 2 * n as u64 + 2, &mut rng)
            .iter()
            .map(|&v| v as i32 - n as i32)
            .collect();
        let fa: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        check(
            gpu,
            &mut join,
            &a,
            &fa,
            &b,
            &payload(n, 16),
            &format!("i32 n={n}"),
        );
    }
}

fn duplicate_keys_are_reported(gpu: &tessera::Gpu) {
    let mut join = PkJoin::new();
    for n in capped(&[2, 3, SORT_TILE + 1, BUCKET * 3, 1_000_000]) {
        let mut rng = StdRng::seed_from_u64(99 + n as u64);
        let a = distinct(n, 0, 2 * n as u64, &mut rng);
        let b = distinct(n, 0, 2 * n as u64, &mut rng);
        let (pa, pb) = (payload(n, 1), payload(n, 2));
        // One duplicate in A, one in B, both, and all-equal keys (the sort's worst skew).
        let mut a2 = a.clone();
        a2[n - 1] = a2[0];
        check(gpu, &mut join, &a2, &pa, &b, &pb, &format!("dup A n={n}"));
        let mut b2 = b.clone();
        b2[n / 2] = b2[n - 1];
        check(gpu, &mut join, &a, &pa, &b2, &pb, &format!("dup B n={n}"));
        check(
            gpu,
            &mut join,
            &a2,
            &pa,
            &b2,
            &pb,
            &format!("dup both n={n}"),
        );
        let same = vec![7u32; n];
        check(
            gpu,
            &mut join,
            &same,
            &pa,
            &b,
            &pb,
            &format!("all equal A n={n}"),
        );
        check(
            gpu,
            &mut join,
            &a,
            &pa,
            &same,
            &pb,
            &format!("all equal B n={n}"),
        );
        let heavy: Vec<u32> = (0..n)
            .map(|i| if i % 3 == 0 { 5 } else { i as u32 })
            .collect();
        check(
            gpu,
            &mut join,
            &b,
            &pb,
            &heavy,
            &pa,
            &format!("heavy key B n={n}"),
        );
    }
}

fn bad_input(gpu: &tessera::Gpu) {
    let k = gpu.upload(&[1u32, 2, 3]).unwrap();
    let v = gpu.upload(&[1u32, 2]).unwrap();
    let e = ops::pk_join(gpu, &k, &v, &k, &k).unwrap_err();
    assert!(matches!(e, tessera::Error::InvalidArgument(_)), "{e}");
    assert!(
        e.to_string().contains("a_vals has 2 items, expected 3"),
        "{e}"
    );
    let e = ops::pk_join(gpu, &k, &k, &k, &v).unwrap_err();
    assert!(
        e.to_string().contains("b_vals has 2 items, expected 3"),
        "{e}"
    );
    // And a good call on the same columns.
    let r = ops::pk_join(gpu, &k, &k, &k, &k)
        .unwrap()
        .to_rows(gpu)
        .unwrap();
    assert_eq!(r.keys, [1, 2, 3]);
}

/// The seed's experiment and beyond (`--ignored pkjoin_benchmark --nocapture`): prints the
/// table of `tessera::bench::pkjoin::measure`.
fn pkjoin_benchmark(gpu: &tessera::Gpu) {
    let reps = std::env::var("TESSERA_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let records = tessera::bench::pkjoin::measure(gpu, reps).unwrap();
    tessera::bench::print_table(&records);
}

harness! {
    gpu: [
        block_sort_every_configuration,
        match_patterns_all_sizes,
        orders_and_distributions,
        duplicate_keys_are_reported,
        bad_input,
    ],
    extra: [
        Test::gpu("pkjoin_benchmark", pkjoin_benchmark).ignored("a benchmark: run it with --ignored"),
    ],
}
