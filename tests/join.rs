//! Hash join on the GPU against the CPU join (and, at small sizes, a plain `HashMap` oracle),
//! on `u32`, `i32` and `u64` keys.
mod common;
use std::collections::HashMap;
use std::hash::Hash;

use common::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Zipf};
use tessera::cpu::{self, CpuHashTable};
use tessera::ops::{
    self, HashTable, JOIN_TILE, JoinAggregate, JoinKey, JoinSum, KeySet, Predicate, ProbePath,
    TableLayout, TableOptions,
};

/// Probe-side sizes: empty, one, around the probe tile, larger than a million.
fn probe_sizes() -> Vec<usize> {
    capped(&[
        0,
        1,
        JOIN_TILE - 1,
        JOIN_TILE,
        JOIN_TILE + 1,
        3 * JOIN_TILE + 7,
        (1 << 20) + 3,
    ])
}

/// `m` distinct random keys below `EMPTY_KEY`.
fn distinct_keys(m: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut set = std::collections::HashSet::with_capacity(m);
    while set.len() < m {
        set.insert(rng.random_range(0..u32::MAX));
    }
    let mut v: Vec<u32> = set.into_iter().collect();
    v.sort_unstable();
    v.shuffle(&mut rng);
    v
}

fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

/// The naive oracle: every (probe row, payload) pair, sorted.
fn oracle_pairs<K: Hash + Eq + Copy>(
    build: &[K],
    payloads: &[u32],
    probe: &[K],
) -> Vec<(u32, u32)> {
    let mut m: HashMap<K, Vec<u32>> = HashMap::new();
    for (&k, &p) in build.iter().zip(payloads) {
        m.entry(k).or_default().push(p);
    }
    let mut out = Vec::new();
    for (i, k) in probe.iter().enumerate() {
        for &p in m.get(k).map(|v| v.as_slice()).unwrap_or(&[]) {
            out.push((i as u32, p));
        }
    }
    out.sort_unstable();
    out
}

fn sorted_pairs(rows: Vec<u32>, payloads: Vec<u32>) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = rows.into_iter().zip(payloads).collect();
    v.sort_unstable();
    v
}

/// Builds both tables, runs `join_sum` and `join` on both sides and compares; returns the sum.
fn check<K: JoinKey>(
    gpu: &tessera::Gpu,
    build: &[K],
    payloads: &[u32],
    probe: &[K],
    values: &[u32],
    layout: TableLayout<K>,
    what: &str,
) -> JoinSum {
    let (dk, dp) = (gpu.upload(build).unwrap(), gpu.upload(payloads).unwrap());
    let (table, ctable) = match layout {
        TableLayout::Linear { capacity } => {
            let opts = TableOptions {
                capacity: Some(capacity as usize),
                ..TableOptions::default()
            };
            (
                HashTable::build(gpu, &dk, Some(&dp), opts).unwrap(),
                CpuHashTable::build(build, Some(payloads), opts).unwrap(),
            )
        }
        TableLayout::Perfect { min, max } => {
            let mut t = HashTable::perfect(gpu, min, max).unwrap();
            t.insert(gpu, &dk, Some(&dp)).unwrap();
            (
                t,
                CpuHashTable::perfect(build, Some(payloads), min, max).unwrap(),
            )
        }
    };
    assert_eq!(table.len(), build.len(), "{what}: rows");
    assert_eq!(
        table.has_duplicates(),
        ctable.has_duplicates(),
        "{what}: duplicates"
    );
    let (dq, dv) = (gpu.upload(probe).unwrap(), gpu.upload(values).unwrap());
    let got = ops::join_sum(gpu, &table, &dq, &dv).unwrap();
    let expected = cpu::join_sum(&ctable, probe, values).unwrap();
    assert_eq!(got, expected, "{what}: join_sum");
    // Both probe paths, whichever Auto picked.
    let fits = table.bytes() <= ops::shared_table_limit(gpu).unwrap();
    for path in [ProbePath::Global, ProbePath::Shared] {
        if path == ProbePath::Shared && !fits {
            continue;
        }
        assert_eq!(
            path_sum(gpu, &table, &dq, &dv, path),
            expected,
            "{what}: join_sum {path:?}"
        );
    }

    let pairs = ops::join(gpu, &table, &dq).unwrap();
    let rows = pairs.probe_rows.to_vec(gpu).unwrap();
    let pays = pairs.payloads.to_vec(gpu).unwrap();
    assert_eq!(rows.len() as u64, expected.count, "{what}: pair count");
    assert!(
        rows.windows(2).all(|w| w[0] <= w[1]),
        "{what}: pairs ordered by probe row"
    );
    let (crows, cpays) = cpu::join(&ctable, probe);
    assert_eq!(crows, rows, "{what}: probe rows");
    assert_eq!(
        sorted_pairs(rows, pays),
        sorted_pairs(crows, cpays),
        "{what}: pairs"
    );
    got
}

/// `join_sum` along `path`.
fn path_sum<K: JoinKey>(
    gpu: &tessera::Gpu,
    table: &HashTable<K>,
    keys: &tessera::DeviceColumn<K>,
    values: &tessera::DeviceColumn<u32>,
    path: ProbePath,
) -> JoinSum {
    let mut q = JoinAggregate::with_path(gpu, path).unwrap();
    q.launch(gpu, table, keys, values).unwrap();
    q.finish(gpu).unwrap()
}

fn linear<K>(rows: usize) -> TableLayout<K> {
    TableLayout::Linear {
        capacity: (2 * rows + 1) as u32,
    }
}

fn q4_random_keys_all_sizes(gpu: &tessera::Gpu) {
    for (i, n) in probe_sizes().into_iter().enumerate() {
        let m = (n / 3).max(1);
        let build = distinct_keys(m, 10 + i as u64);
        let payloads = random_u32(m, 20 + i as u64);
        // Half the probes hit a build key, half are random (mostly misses).
        let mut rng = StdRng::seed_from_u64(30 + i as u64);
        let probe: Vec<u32> = (0..n)
            .map(|_| {
                if rng.random::<bool>() {
                    build[rng.random_range(0..m)]
                } else {
                    rng.random_range(0..u32::MAX)
                }
            })
            .collect();
        let values = random_u32(n, 40 + i as u64);
        let s = check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            linear(m),
            &format!("n={n}"),
        );
        if n <= 5000 {
            let o = oracle_pairs(&build, &payloads, &probe);
            assert_eq!(s.count, o.len() as u64, "n={n}: oracle count");
        }
    }
}

fn no_match_and_all_match(gpu: &tessera::Gpu) {
    for n in capped(&[1, JOIN_TILE + 1, 100_003]) {
        let m = 1000.min(n);
        // Even build keys, odd probe keys: nothing matches.
        let build: Vec<u32> = (0..m as u32).map(|k| 2 * k).collect();
        let payloads = random_u32(m, 1);
        let probe: Vec<u32> = (0..n as u32).map(|i| 2 * (i % 5000) + 1).collect();
        let values = random_u32(n, 2);
        let s = check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            linear(m),
            "no match",
        );
        assert_eq!(s, JoinSum { sum: 0, count: 0 });
        // Every probe key is a build key.
        let probe: Vec<u32> = (0..n).map(|i| build[(i * 7) % m]).collect();
        let s = check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            linear(m),
            "all match",
        );
        assert_eq!(s.count, n as u64);
    }
}

fn duplicate_build_keys_give_all_matches(gpu: &tessera::Gpu) {
    for n in capped(&[1, 1000, JOIN_TILE + 1, 200_001]) {
        let mut rng = StdRng::seed_from_u64(n as u64);
        // Build keys 0..100 each repeated 1 to 4 times (a few hundred rows).
        let mut build = Vec::new();
        for k in 0..100u32 {
            for _ in 0..rng.random_range(1..=4) {
                build.push(k * 977);
            }
        }
        build.shuffle(&mut rng);
        let payloads = random_u32(build.len(), 3);
        let probe: Vec<u32> = (0..n).map(|_| rng.random_range(0..120u32) * 977).collect();
        let values = random_u32(n, 4);
        let s = check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            linear(build.len()),
            "dups",
        );
        let o = oracle_pairs(&build, &payloads, &probe);
        assert_eq!(
            s.count,
            o.len() as u64,
            "n={n}: one result per matching build row"
        );
        let osum = o
            .iter()
            .map(|&(r, p)| values[r as usize] as u64 + p as u64)
            .fold(0u64, u64::wrapping_add);
        assert_eq!(s.sum, osum, "n={n}: oracle sum");
    }
    // All build keys equal: every probe of that key meets every build row.
    let build = vec![42u32; 300];
    let payloads: Vec<u32> = (0..300).collect();
    let probe = vec![42u32, 7, 42];
    let s = check(
        gpu,
        &build,
        &payloads,
        &probe,
        &[1, 2, 3],
        linear(300),
        "all equal",
    );
    assert_eq!(s.count, 600);
}

/// Tables with a single empty slot, small and odd capacities: walks run long and wrap from
/// the last slot to the first. Distinct keys and heavy duplicates (all matches over long
/// walks), hits and misses, both probe paths, the pair join and the semi-join.
fn full_tables_walk_long_and_wrap(gpu: &tessera::Gpu) {
    for capacity in [2usize, 3, 4, 5, 6, 7, 8, 9, 31, 33, 1001, 4099] {
        let m = capacity - 1;
        for dup in [false, true] {
            let seed = 200 + capacity as u64 * 2 + dup as u64;
            let build = if dup {
                let mut rng = StdRng::seed_from_u64(seed);
                (0..m).map(|_| rng.random_range(0..4u32)).collect()
            } else {
                distinct_keys(m, seed)
            };
            let payloads = random_u32(m, seed + 1);
            let mut rng = StdRng::seed_from_u64(seed + 2);
            let n = 3 * JOIN_TILE + 5;
            let probe: Vec<u32> = (0..n)
                .map(|_| match rng.random_range(0..3) {
                    0 => build[rng.random_range(0..m)],
                    1 => rng.random_range(0..8),
                    _ => rng.random(),
                })
                .collect();
            let values = random_u32(n, seed + 3);
            let layout = TableLayout::Linear {
                capacity: capacity as u32,
            };
            let what = format!("capacity={capacity} dup={dup}");
            let s = check(gpu, &build, &payloads, &probe, &values, layout, &what);
            let o = oracle_pairs(&build, &payloads, &probe);
            assert_eq!(s.count, o.len() as u64, "{what}: oracle count");

            let ds = gpu.upload(&build).unwrap();
            let dq = gpu.upload(&probe).unwrap();
            let opts = TableOptions {
                capacity: Some(capacity),
                ..TableOptions::default()
            };
            let set = KeySet::build(gpu, &ds, opts).unwrap();
            let got = ops::semi_join(gpu, &set, &dq).unwrap().to_vec(gpu).unwrap();
            assert_eq!(
                got,
                cpu::semi_join(&build, &probe).unwrap(),
                "{what}: semi-join"
            );
        }
    }
}

/// The shared-memory probe at the largest table it takes and the Auto / Global probe one slot
/// beyond; awkward probe sizes, persistent blocks with several tiles each.
fn shared_probe_at_its_size_limit(gpu: &tessera::Gpu) {
    let limit = ops::shared_table_limit(gpu).unwrap();
    let at = limit / 8; // slots of the largest table that fits
    for (i, n) in capped(&[1, JOIN_TILE + 1, 3 * JOIN_TILE - 1, 300_007, 2_000_003])
        .into_iter()
        .enumerate()
    {
        for capacity in [at, at + 1] {
            // Fill 0.45 (distinct random keys); half the probes hit.
            let m = capacity * 9 / 20;
            let build = distinct_keys(m, 90 + i as u64);
            let payloads = random_u32(m, 91);
            let mut rng = StdRng::seed_from_u64(92 + i as u64);
            let probe: Vec<u32> = (0..n)
                .map(|_| {
                    if rng.random::<bool>() {
                        build[rng.random_range(0..m)]
                    } else {
                        rng.random_range(0..u32::MAX)
                    }
                })
                .collect();
            let values = random_u32(n, 93);
            let opts = TableOptions {
                capacity: Some(capacity),
                ..TableOptions::default()
            };
            let (dk, dp) = (gpu.upload(&build).unwrap(), gpu.upload(&payloads).unwrap());
            let table = HashTable::build(gpu, &dk, Some(&dp), opts).unwrap();
            assert_eq!(table.bytes(), capacity * 8);
            let ctable = CpuHashTable::build(&build, Some(&payloads), opts).unwrap();
            let expected = cpu::join_sum(&ctable, &probe, &values).unwrap();
            let (dq, dv) = (gpu.upload(&probe).unwrap(), gpu.upload(&values).unwrap());
            let what = format!("n={n} capacity={capacity} (limit {limit} bytes)");
            let auto = JoinAggregate::new(gpu).unwrap();
            let chosen = auto.path_for(gpu, &table, n).unwrap();
            assert_eq!(
                ops::join_sum(gpu, &table, &dq, &dv).unwrap(),
                expected,
                "{what}: auto"
            );
            assert_eq!(
                path_sum(gpu, &table, &dq, &dv, ProbePath::Global),
                expected,
                "{what}"
            );
            if capacity == at {
                assert_eq!(
                    path_sum(gpu, &table, &dq, &dv, ProbePath::Shared),
                    expected,
                    "{what}"
                );
            } else {
                assert_eq!(chosen, ProbePath::Global, "{what}: too large to stage");
                let mut q = JoinAggregate::with_path(gpu, ProbePath::Shared).unwrap();
                assert!(
                    matches!(
                        q.launch(gpu, &table, &dq, &dv),
                        Err(tessera::Error::InvalidArgument(_))
                    ),
                    "{what}: forcing the shared path must fail"
                );
            }
        }
    }
}

/// Auto stages small tables in shared memory for large probes only (the copies must pay).
fn auto_probe_path_rule(gpu: &tessera::Gpu) {
    let build: Vec<u32> = (1..=512).collect();
    let dk = gpu.upload(&build).unwrap();
    let table = HashTable::build(gpu, &dk, None, TableOptions::default()).unwrap();
    let q = JoinAggregate::new(gpu).unwrap();
    assert_eq!(q.path_for(gpu, &table, 1).unwrap(), ProbePath::Global);
    assert_eq!(q.path_for(gpu, &table, 1 << 28).unwrap(), ProbePath::Shared);
    let g = JoinAggregate::with_path(gpu, ProbePath::Global).unwrap();
    assert_eq!(g.path_for(gpu, &table, 1 << 28).unwrap(), ProbePath::Global);
}

fn zipf_probe_keys(gpu: &tessera::Gpu) {
    for (i, n) in capped(&[JOIN_TILE - 1, 500_000, (1 << 20) + 3])
        .into_iter()
        .enumerate()
    {
        let m = 10_000;
        let build = distinct_keys(m, 50 + i as u64);
        let payloads = random_u32(m, 60);
        let mut rng = StdRng::seed_from_u64(70 + i as u64);
        let z = Zipf::new(m as f64 * 1.5, 1.1).unwrap();
        // Zipf ranks beyond m are misses.
        let probe: Vec<u32> = (0..n)
            .map(|_| {
                let r = z.sample(&mut rng) as usize - 1;
                if r < m { build[r] } else { r as u32 }
            })
            .collect();
        let values = random_u32(n, 80);
        check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            linear(m),
            &format!("zipf n={n}"),
        );
    }
}

fn perfect_hash_tables(gpu: &tessera::Gpu) {
    // Dense keys with gaps, like d_datekey: every third key of 19920101..=19981231 present.
    let (min, max) = (19_920_101u32, 19_981_231u32);
    let build: Vec<u32> = (min..=max).step_by(3).collect();
    let payloads: Vec<u32> = build.iter().map(|d| d / 10_000).collect();
    for (i, n) in probe_sizes().into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(90 + i as u64);
        // Keys around the range: some below, some above, most inside.
        let probe: Vec<u32> = (0..n)
            .map(|_| rng.random_range(min - 100..max + 100))
            .collect();
        let values = random_u32(n, 91);
        let layout = TableLayout::Perfect { min, max };
        check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            layout,
            &format!("perfect n={n}"),
        );
    }
    // Keys 1..=N (part, supplier, customer), including max = N exactly.
    let build: Vec<u32> = (1..=5000).rev().collect();
    let payloads = random_u32(5000, 92);
    let probe: Vec<u32> = (0..20_000).map(|i| i % 5003).collect();
    let values = random_u32(20_000, 93);
    let layout = TableLayout::Perfect { min: 1, max: 5000 };
    let s = check(
        gpu,
        &build,
        &payloads,
        &probe,
        &values,
        layout,
        "perfect 1..=N",
    );
    assert_eq!(
        s.count,
        (0..20_000u32)
            .filter(|i| (1..=5000).contains(&(i % 5003)))
            .count() as u64
    );
}

fn build_errors(gpu: &tessera::Gpu) {
    let err = |r: tessera::Result<()>| r.unwrap_err().to_string();
    // The sentinel key.
    let keys = gpu.upload(&[1u32, u32::MAX, 3]).unwrap();
    let e = HashTable::build(gpu, &keys, None, TableOptions::default()).unwrap_err();
    assert!(e.to_string().contains("reserved"), "{e}");
    let ce = CpuHashTable::build(&[1, u32::MAX, 3], None, TableOptions::default()).err();
    assert!(ce.unwrap().to_string().contains("reserved"));
    let e = KeySet::build(gpu, &keys, TableOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("reserved"), "{e}");
    // Too full: 10 rows never fit in 10 slots; two inserts of 6 neither.
    let ten = gpu.upload(&(0..10u32).collect::<Vec<_>>()).unwrap();
    let mut t = HashTable::with_capacity(gpu, 10).unwrap();
    assert!(err(t.insert(gpu, &ten, None)).contains("too full"));
    let six = gpu.upload(&(0..6u32).collect::<Vec<_>>()).unwrap();
    let mut t = HashTable::<u32>::with_capacity(gpu, 10).unwrap();
    t.insert(gpu, &six, None).unwrap();
    assert!(err(t.insert(gpu, &six, None)).contains("too full"));
    // A selective insert is checked after the build.
    let mut t = HashTable::with_capacity(gpu, 4).unwrap();
    let e = err(t.insert_where(gpu, &ten, None, Predicate::lt(5)));
    assert!(e.contains("too full"), "{e}");
    let mut t = HashTable::with_capacity(gpu, 4).unwrap();
    t.insert_where(gpu, &ten, None, Predicate::lt(3)).unwrap();
    assert_eq!(t.len(), 3);
    for fill in [0.0, 0.95, f64::NAN] {
        let o = TableOptions {
            fill,
            capacity: None,
        };
        assert!(HashTable::build(gpu, &ten, None, o).is_err(), "fill {fill}");
        assert!(
            CpuHashTable::build(&[1, 2], None, o).is_err(),
            "fill {fill}"
        );
    }
    assert!(HashTable::<u32>::with_capacity(gpu, 0).is_err());
    // Perfect tables: key outside the range, repeated key, bad range.
    let mut p = HashTable::perfect(gpu, 1, 5).unwrap();
    assert!(err(p.insert(gpu, &six, None)).contains("outside"));
    let mut p = HashTable::perfect(gpu, 0, 9).unwrap();
    let dup = gpu.upload(&[1u32, 2, 1]).unwrap();
    assert!(err(p.insert(gpu, &dup, None)).contains("twice"));
    assert!(CpuHashTable::perfect(&[1, 2, 1], None, 0, 9).is_err());
    assert!(HashTable::perfect(gpu, 5u32, 4).is_err());
    assert!(HashTable::perfect(gpu, 0, u32::MAX).is_err());
    // The reserved keys of i32 and u64, and perfect tables of u64 keys.
    let keys = reserved_key_is_refused(gpu, &[1i32, -1, 3], "i32");
    let mut p = HashTable::perfect(gpu, -5i32, 5).unwrap();
    assert!(err(p.insert(gpu, &keys, None)).contains("reserved"));
    reserved_key_is_refused(gpu, &[1u64 << 40, u64::MAX, 3], "u64");
    assert!(HashTable::perfect(gpu, 0u64, 10).is_err());
    assert!(KeySet::perfect(gpu, 0u64, 10).is_err());
    assert!(HashTable::perfect(gpu, i32::MIN, i32::MAX).is_err());
    // Length mismatch.
    let pay = gpu.upload(&[1u32]).unwrap();
    assert!(HashTable::build(gpu, &six, Some(&pay), TableOptions::default()).is_err());
    let t = HashTable::build(gpu, &six, None, TableOptions::default()).unwrap();
    assert!(ops::join_sum(gpu, &t, &six, &pay).is_err());
}

/// Checks that a table and a set of `keys`, which hold `K`'s reserved key, are refused with
/// an error naming it and `name`; returns the keys on the device.
fn reserved_key_is_refused<K: ops::JoinKey>(
    gpu: &tessera::Gpu,
    keys: &[K],
    name: &str,
) -> tessera::DeviceColumn<K> {
    let keys = gpu.upload(keys).unwrap();
    let e = HashTable::build(gpu, &keys, None, TableOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("reserved") && msg.contains(name), "{e}");
    let e = KeySet::build(gpu, &keys, TableOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("reserved"), "{e}");
    keys
}

fn row_payloads_give_row_pairs_and_selective_build(gpu: &tessera::Gpu) {
    for n in capped(&[1, JOIN_TILE + 1, 300_007]) {
        let m = (n / 2).max(1);
        let build: Vec<u32> = (0..m).map(|i| (i as u32 * 7) % 1009 + 1).collect(); // repeats
        let probe: Vec<u32> = (0..n).map(|i| (i as u32 * 13) % 1200).collect();
        let rows: Vec<u32> = (0..m as u32).collect();
        let dk = gpu.upload(&build).unwrap();
        let dq = gpu.upload(&probe).unwrap();
        // Only build keys < 500 go in.
        let pred = Predicate::lt(500u32);
        let mut t = HashTable::<u32>::with_capacity(gpu, 2 * m + 1).unwrap();
        t.insert_where(gpu, &dk, None, pred).unwrap();
        let layout = t.layout();
        let c = CpuHashTable::build_where(&build, None, layout, pred).unwrap();
        assert_eq!(t.len(), c.len());
        let pairs = ops::join(gpu, &t, &dq).unwrap();
        let got = sorted_pairs(
            pairs.probe_rows.to_vec(gpu).unwrap(),
            pairs.payloads.to_vec(gpu).unwrap(),
        );
        let (cr, cp) = cpu::join(&c, &probe);
        assert_eq!(got, sorted_pairs(cr, cp), "n={n}");
        if n <= 5000 {
            let kept: Vec<usize> = (0..m).filter(|&i| build[i] < 500).collect();
            let kb: Vec<u32> = kept.iter().map(|&i| build[i]).collect();
            let kr: Vec<u32> = kept.iter().map(|&i| rows[i]).collect();
            assert_eq!(got, oracle_pairs(&kb, &kr, &probe), "n={n}: oracle");
        }
    }
}

fn semi_join_with_key_sets(gpu: &tessera::Gpu) {
    for (i, n) in probe_sizes().into_iter().enumerate() {
        let set_keys: Vec<u32> = (0..3000u32)
            .map(|k| k * 3 % 7001)
            .chain([5, 5, 5])
            .collect();
        let mut rng = StdRng::seed_from_u64(100 + i as u64);
        let probe: Vec<u32> = (0..n).map(|_| rng.random_range(0..8000)).collect();
        let expected = cpu::semi_join(&set_keys, &probe).unwrap();
        let ds = gpu.upload(&set_keys).unwrap();
        let dq = gpu.upload(&probe).unwrap();
        let set = KeySet::build(gpu, &ds, TableOptions::default()).unwrap();
        let got = ops::semi_join(gpu, &set, &dq).unwrap().to_vec(gpu).unwrap();
        assert_eq!(got, expected, "hash set n={n}");
        let mut pset = KeySet::perfect(gpu, 0, 7000).unwrap();
        pset.insert_where(gpu, &ds, Predicate::between(0, u32::MAX))
            .unwrap();
        let got = ops::semi_join(gpu, &pset, &dq)
            .unwrap()
            .to_vec(gpu)
            .unwrap();
        assert_eq!(got, expected, "perfect set n={n}");
    }
}

fn cpu_join_matches_oracle() {
    // Runs without a GPU: the CPU join against the naive oracle.
    let build = distinct_keys(5000, 7);
    let payloads = random_u32(5000, 8);
    let mut rng = StdRng::seed_from_u64(9);
    let probe: Vec<u32> = (0..20_000)
        .map(|_| {
            if rng.random::<bool>() {
                build[rng.random_range(0..5000)]
            } else {
                rng.random()
            }
        })
        .collect();
    let t = CpuHashTable::build(&build, Some(&payloads), TableOptions::default()).unwrap();
    let (r, p) = cpu::join(&t, &probe);
    assert_eq!(sorted_pairs(r, p), oracle_pairs(&build, &payloads, &probe));
    let dup: Vec<u32> = build.iter().chain(&build[..100]).copied().collect();
    let dp = random_u32(dup.len(), 10);
    let t = CpuHashTable::build(&dup, Some(&dp), TableOptions::default()).unwrap();
    assert!(t.has_duplicates());
    let (r, p) = cpu::join(&t, &probe);
    assert_eq!(sorted_pairs(r, p), oracle_pairs(&dup, &dp, &probe));
}

/// `m` distinct i32 keys (never the reserved `-1`): the extremes, keys around 0 and random
/// ones, shuffled.
fn distinct_i32(m: usize, seed: u64) -> Vec<i32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut set = std::collections::HashSet::with_capacity(m);
    let special = [
        i32::MIN,
        i32::MIN + 1,
        i32::MAX - 1,
        i32::MAX,
        -2,
        0,
        1,
        -100,
    ];
    for &k in special.iter().take(m) {
        set.insert(k);
    }
    while set.len() < m {
        let k = if rng.random::<bool>() {
            rng.random_range(-(m as i32)..m as i32)
        } else {
            rng.random::<i32>()
        };
        if k != -1 {
            set.insert(k);
        }
    }
    let mut v: Vec<i32> = set.into_iter().collect();
    v.sort_unstable();
    v.shuffle(&mut rng);
    v
}

/// `m` distinct u64 keys (never `u64::MAX`): keys above 2^32, near `u64::MAX - 1`, keys that
/// differ only in their high half, and random ones, shuffled.
fn distinct_u64(m: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut set = std::collections::HashSet::with_capacity(m);
    let special = [
        u64::MAX - 1,
        u64::MAX - 2,
        1 << 32,
        (1 << 32) - 1,
        0,
        1,
        7 << 32,
    ];
    for &k in special.iter().take(m) {
        set.insert(k);
    }
    while set.len() < m {
        let k = match rng.random_range(0..4) {
            0 => (1u64 << 33) + rng.random_range(0..4 * m as u64),
            1 => u64::MAX - 1 - rng.random_range(0..4 * m as u64),
            2 => rng.random_range(0..4 * m as u64) << 32,
            _ => rng.random::<u64>(),
        };
        if k != u64::MAX {
            set.insert(k);
        }
    }
    let mut v: Vec<u64> = set.into_iter().collect();
    v.sort_unstable();
    v.shuffle(&mut rng);
    v
}

/// Probe keys: half hit a build key, the rest from `miss` (mostly misses).
fn probes<K: Copy>(
    n: usize,
    build: &[K],
    seed: u64,
    mut miss: impl FnMut(&mut StdRng) -> K,
) -> Vec<K> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if rng.random::<bool>() && !build.is_empty() {
                build[rng.random_range(0..build.len())]
            } else {
                miss(&mut rng)
            }
        })
        .collect()
}

/// The semi-join of `probe` against a hash set (and a perfect set over `perfect`) of
/// `set_keys`, GPU against CPU.
fn check_semi<K: JoinKey>(
    gpu: &tessera::Gpu,
    set_keys: &[K],
    probe: &[K],
    perfect: Option<(K, K)>,
    what: &str,
) {
    let expected = cpu::semi_join(set_keys, probe).unwrap();
    let ds = gpu.upload(set_keys).unwrap();
    let dq = gpu.upload(probe).unwrap();
    let set = KeySet::build(gpu, &ds, TableOptions::default()).unwrap();
    let got = ops::semi_join(gpu, &set, &dq).unwrap().to_vec(gpu).unwrap();
    assert_eq!(got, expected, "{what}: hash set");
    if let Some((min, max)) = perfect {
        let mut pset = KeySet::perfect(gpu, min, max).unwrap();
        pset.insert_where(gpu, &ds, Predicate::between(K::MIN, K::MAX))
            .unwrap();
        let got = ops::semi_join(gpu, &pset, &dq)
            .unwrap()
            .to_vec(gpu)
            .unwrap();
        assert_eq!(got, expected, "{what}: perfect set");
    }
}

/// i32 keys: negative keys, keys around 0, `i32::MIN` and `i32::MAX - 1`, with probes of the
/// reserved `-1` (which must miss), on every probe size; linear and perfect tables (ranges
/// across 0 and at `i32::MIN`), the selective build in signed order, and the semi-join.
fn i32_keys_all_sizes(gpu: &tessera::Gpu) {
    for (i, n) in probe_sizes().into_iter().enumerate() {
        let m = (n / 3).max(1);
        let build = distinct_i32(m, 300 + i as u64);
        let payloads = random_u32(m, 301 + i as u64);
        let probe = probes(n, &build, 302 + i as u64, |r| match r.random_range(0..3) {
            0 => -1,
            1 => r.random_range(-1000..1000),
            _ => r.random(),
        });
        let values = random_u32(n, 303 + i as u64);
        let what = format!("i32 n={n}");
        let s = check(gpu, &build, &payloads, &probe, &values, linear(m), &what);
        if n <= 5000 {
            let o = oracle_pairs(&build, &payloads, &probe);
            assert_eq!(s.count, o.len() as u64, "{what}: oracle count");
        }
        // Perfect tables: every third key of -3000..=3000 (the range holds -1, whose slot stays
        // empty), and a range at the bottom of i32 probed with keys that wrap around it.
        let mut build: Vec<i32> = (-3000..=3000).step_by(3).collect();
        build.reverse();
        let payloads = random_u32(build.len(), 304);
        let probe = probes(n, &build, 305 + i as u64, |r| r.random_range(-3100..3100));
        let layout = TableLayout::Perfect {
            min: -3000,
            max: 3000,
        };
        check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            layout,
            &format!("{what} perfect"),
        );
        let build: Vec<i32> = (0..1000).map(|k| i32::MIN + 2 * k).collect();
        let payloads = random_u32(build.len(), 306);
        let probe = probes(n, &build, 307 + i as u64, |r| match r.random_range(0..3) {
            0 => i32::MIN + r.random_range(0..2100),
            1 => i32::MAX - r.random_range(0..100),
            _ => r.random(),
        });
        let layout = TableLayout::Perfect {
            min: i32::MIN,
            max: i32::MIN + 1998,
        };
        check(
            gpu,
            &build,
            &payloads,
            &probe,
            &values,
            layout,
            &format!("{what} perfect low"),
        );
        let set: Vec<i32> = (-1500..1500)
            .map(|k| k * 3 % 4001)
            .filter(|&k| k != -1)
            .collect();
        let probe: Vec<i32> = probes(n, &set, 308 + i as u64, |r| r.random_range(-4100..4100));
        check_semi(gpu, &set, &probe, Some((-4000, 4000)), &what);
    }
    // Selective build in signed order: only the negative keys go in.
    for n in capped(&[1, JOIN_TILE + 1, 300_007]) {
        let m = (n / 2).max(1);
        let build: Vec<i32> = (0..m as i32)
            .map(|k| (k * 7) % 2001 - 1000)
            .filter(|&k| k != -1)
            .collect();
        let probe: Vec<i32> = (0..n as i32).map(|k| (k * 13) % 2400 - 1200).collect();
        let dk = gpu.upload(&build).unwrap();
        let dq = gpu.upload(&probe).unwrap();
        let pred = Predicate::lt(0i32);
        let mut t = HashTable::<i32>::with_capacity(gpu, 2 * m + 1).unwrap();
        t.insert_where(gpu, &dk, None, pred).unwrap();
        let c = CpuHashTable::build_where(&build, None, t.layout(), pred).unwrap();
        assert_eq!(t.len(), c.len(), "i32 selective n={n}");
        assert_eq!(t.len(), build.iter().filter(|&&k| k < 0).count());
        let pairs = ops::join(gpu, &t, &dq).unwrap();
        let got = sorted_pairs(
            pairs.probe_rows.to_vec(gpu).unwrap(),
            pairs.payloads.to_vec(gpu).unwrap(),
        );
        let (cr, cp) = cpu::join(&c, &probe);
        assert_eq!(got, sorted_pairs(cr, cp), "i32 selective n={n}");
    }
}

/// u64 keys: above 2^32, near `u64::MAX - 1`, differing only in their high half, with probes
/// of `u64::MAX` (which must miss) and of keys equal to a build key in their low half only;
/// every probe size, duplicates, full tables that wrap, the selective build, the semi-join.
fn u64_keys_all_sizes(gpu: &tessera::Gpu) {
    for (i, n) in probe_sizes().into_iter().enumerate() {
        let m = (n / 3).max(1);
        let build = distinct_u64(m, 400 + i as u64);
        let payloads = random_u32(m, 401 + i as u64);
        let low: Vec<u64> = build.iter().map(|&k| k & 0xffff_ffff).collect();
        let probe = probes(n, &build, 402 + i as u64, |r| match r.random_range(0..4) {
            0 => u64::MAX,
            1 => low[r.random_range(0..low.len())],
            2 => r.random_range(0..64u64) << 32,
            _ => r.random(),
        });
        let values = random_u32(n, 403 + i as u64);
        let what = format!("u64 n={n}");
        let s = check(gpu, &build, &payloads, &probe, &values, linear(m), &what);
        if n <= 5000 {
            let o = oracle_pairs(&build, &payloads, &probe);
            assert_eq!(s.count, o.len() as u64, "{what}: oracle count");
        }
        check_semi(gpu, &build, &probe, None, &what);
    }
    // Duplicate keys (all matches) and tables with one empty slot (long walks that wrap).
    for capacity in [2usize, 3, 5, 8, 33, 1001] {
        let m = capacity - 1;
        for dup in [false, true] {
            let seed = 500 + capacity as u64 * 2 + dup as u64;
            let build: Vec<u64> = if dup {
                let mut rng = StdRng::seed_from_u64(seed);
                (0..m)
                    .map(|_| (rng.random_range(0..4u64) << 40) + 5)
                    .collect()
            } else {
                distinct_u64(m, seed)
            };
            let payloads = random_u32(m, seed + 1);
            let n = 3 * JOIN_TILE + 5;
            let probe = probes(n, &build, seed + 2, |r| (r.random_range(0..6u64) << 40) + 5);
            let values = random_u32(n, seed + 3);
            let layout = TableLayout::Linear {
                capacity: capacity as u32,
            };
            let what = format!("u64 capacity={capacity} dup={dup}");
            let s = check(gpu, &build, &payloads, &probe, &values, layout, &what);
            let o = oracle_pairs(&build, &payloads, &probe);
            assert_eq!(s.count, o.len() as u64, "{what}: oracle count");
        }
    }
    // Selective build: only keys at or above 2^40 go in.
    let build = distinct_u64(20_000, 600);
    let probe = probes(100_003, &build, 601, |r| r.random());
    let (dk, dq) = (gpu.upload(&build).unwrap(), gpu.upload(&probe).unwrap());
    let pred = Predicate::ge(1u64 << 40);
    let mut t = HashTable::<u64>::with_capacity(gpu, 40_001).unwrap();
    t.insert_where(gpu, &dk, None, pred).unwrap();
    let c = CpuHashTable::build_where(&build, None, t.layout(), pred).unwrap();
    assert_eq!(t.len(), c.len());
    let pairs = ops::join(gpu, &t, &dq).unwrap();
    let got = sorted_pairs(
        pairs.probe_rows.to_vec(gpu).unwrap(),
        pairs.payloads.to_vec(gpu).unwrap(),
    );
    let (cr, cp) = cpu::join(&c, &probe);
    assert_eq!(got, sorted_pairs(cr, cp), "u64 selective");
}

/// Without a GPU: the reserved key of each key type is refused by name, perfect tables of u64
/// keys and the full i32 range are refused, an i32 range across -1 is fine.
fn cpu_reserved_keys_are_refused() {
    let o = TableOptions::default();
    let e = CpuHashTable::build(&[1u32, u32::MAX], None, o)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("reserved") && e.contains("u32::MAX") && e.contains("4294967295"),
        "{e}"
    );
    let e = CpuHashTable::build(&[1i32, -1], None, o)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("reserved") && e.contains("key -1") && e.contains("i32"),
        "{e}"
    );
    let e = CpuHashTable::perfect(&[-1i32], None, -5, 5)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("reserved"), "{e}");
    let e = CpuHashTable::build(&[1u64 << 40, u64::MAX], None, o)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("reserved") && e.contains("u64::MAX") && e.contains("u64 key"),
        "{e}"
    );
    let e = cpu::semi_join(&[3i32, -1], &[3]).unwrap_err().to_string();
    assert!(e.contains("reserved") && e.contains("i32"), "{e}");
    let e = cpu::semi_join(&[u64::MAX], &[3]).unwrap_err().to_string();
    assert!(e.contains("reserved") && e.contains("u64"), "{e}");
    let e = cpu::semi_join(&[u32::MAX], &[3]).unwrap_err().to_string();
    assert!(e.contains("reserved") && e.contains("u32"), "{e}");
    // The largest keys that are not reserved are fine.
    let t = CpuHashTable::build(&[u64::MAX - 1, 0, 1 << 32], None, o).unwrap();
    assert_eq!(t.len(), 3);
    let (r, p) = cpu::join(&t, &[1 << 32, u64::MAX, u64::MAX - 1, 0, 1]);
    assert_eq!(sorted_pairs(r, p), vec![(0, 2), (2, 0), (3, 1)]);
    let t = CpuHashTable::build(&[i32::MIN, i32::MAX, -2, 0], None, o).unwrap();
    let (r, p) = cpu::join(&t, &[-1, i32::MAX, i32::MIN, 0, -2]);
    assert_eq!(sorted_pairs(r, p), vec![(1, 1), (2, 0), (3, 3), (4, 2)]);
    // Perfect layouts.
    let e = CpuHashTable::perfect(&[1u64], None, 0, 10)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("32-bit") && e.contains("u64"), "{e}");
    let layout = TableLayout::Perfect { min: 0u64, max: 10 };
    assert!(
        CpuHashTable::build_where(&[1u64], None, layout, Predicate::between(0, u64::MAX)).is_err()
    );
    assert!(CpuHashTable::perfect(&[1i32], None, i32::MIN, i32::MAX).is_err());
    assert!(CpuHashTable::perfect(&[1i32], None, 5, 4).is_err());
    let keys: Vec<i32> = (-10..=10).filter(|&k| k != -1).collect();
    let t = CpuHashTable::perfect(&keys, None, -10, 10).unwrap();
    assert_eq!(t.len(), 20);
    let (r, _) = cpu::join(&t, &[-11, -10, -1, 0, 10, 11, i32::MAX, i32::MIN]);
    assert_eq!(r, vec![1, 3, 4]);
    let t = CpuHashTable::perfect(&[i32::MAX - 1, i32::MAX], None, i32::MAX - 1, i32::MAX).unwrap();
    let (r, _) = cpu::join(&t, &[i32::MIN, i32::MAX, i32::MAX - 2, i32::MAX - 1]);
    assert_eq!(r, vec![1, 3]);
}

/// Without a GPU: the CPU join on i32 and u64 keys against the naive oracle, with duplicates.
fn cpu_join_i32_and_u64_match_oracle() {
    let build = distinct_i32(5000, 700);
    let dup: Vec<i32> = build.iter().chain(&build[..100]).copied().collect();
    let payloads = random_u32(dup.len(), 701);
    let probe = probes(20_000, &dup, 702, |r| r.random_range(-6000..6000));
    let t = CpuHashTable::build(&dup, Some(&payloads), TableOptions::default()).unwrap();
    assert!(t.has_duplicates());
    let (r, p) = cpu::join(&t, &probe);
    assert_eq!(sorted_pairs(r, p), oracle_pairs(&dup, &payloads, &probe));
    let build = distinct_u64(5000, 703);
    let dup: Vec<u64> = build.iter().chain(&build[..100]).copied().collect();
    let payloads = random_u32(dup.len(), 704);
    let probe = probes(20_000, &dup, 705, |r| r.random_range(0..64u64) << 32);
    let t = CpuHashTable::build(&dup, Some(&payloads), TableOptions::default()).unwrap();
    assert!(t.has_duplicates());
    let (r, p) = cpu::join(&t, &probe);
    assert_eq!(sorted_pairs(r, p), oracle_pairs(&dup, &payloads, &probe));
    let sum = cpu::join_sum(&t, &probe, &random_u32(probe.len(), 706)).unwrap();
    assert_eq!(
        sum.count,
        oracle_pairs(&dup, &payloads, &probe).len() as u64
    );
}

harness! {
    gpu: [
        q4_random_keys_all_sizes,
        no_match_and_all_match,
        duplicate_build_keys_give_all_matches,
        full_tables_walk_long_and_wrap,
        shared_probe_at_its_size_limit,
        auto_probe_path_rule,
        zipf_probe_keys,
        perfect_hash_tables,
        build_errors,
        row_payloads_give_row_pairs_and_selective_build,
        semi_join_with_key_sets,
        i32_keys_all_sizes,
        u64_keys_all_sizes,
    ],
    cpu: [
        cpu_join_matches_oracle,
        cpu_reserved_keys_are_refused,
        cpu_join_i32_and_u64_match_oracle,
    ],
}
