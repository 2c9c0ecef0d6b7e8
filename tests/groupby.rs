//! Group-by and aggregation (issue 22), the CPU implementation (the GPU variants' oracle)
//! against a naive one written here (a `BTreeMap` from composite key to rows): every key type
//! and up to four key columns, every value type and aggregate, on one group, all-distinct
//! keys, uniform, heavy-hitter and skewed keys, and awkward sizes; the semantics the
//! documentation promises (order by key, NaN and signed zeros in min and max, 64-bit sums, the
//! mean); empty input; and the errors before any work.
mod common;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::bench::groupby_keys::DeviceKeys;
use tessera::cpu::group_by;
use tessera::ops::{
    Agg, DeviceKeyColumn, DeviceValueColumn, GROUPBY_SAMPLES, GroupByVariant, Grouped, KeyColumn,
    ResultColumn, ValueColumn, group_by_device, group_by_hash, group_by_partitioned, group_by_sort,
    groups_from_sample_keys,
};
use tessera::{DeviceColumn, Error, Gpu};

/// Sizes: empty, one row, a few, and past any parallel split.
const SIZES: [usize; 6] = [0, 1, 2, 17, 4097, 100_003];

/// A composite key as the naive grouping orders it: each key widened to `i128` keeps its
/// type's order.
fn naive_key(keys: &[KeyColumn], row: usize) -> Vec<i128> {
    keys.iter()
        .map(|k| match k {
            KeyColumn::U32(c) => c[row] as i128,
            KeyColumn::I32(c) => c[row] as i128,
            KeyColumn::I64(c) => c[row] as i128,
        })
        .collect()
}

/// The greatest (`max`) or least value with every NaN above everything, NaN canonical.
fn naive_extreme(v: &[f64], max: bool) -> f64 {
    let nans = v.iter().filter(|x| x.is_nan()).count();
    if max && nans > 0 || nans == v.len() {
        return f64::NAN;
    }
    let mut it = v.iter().copied().filter(|x| !x.is_nan());
    let first = it.next().unwrap();
    it.fold(first, |b, x| {
        let o = x.total_cmp(&b);
        if max && o == Ordering::Greater || !max && o == Ordering::Less {
            x
        } else {
            b
        }
    })
}

/// Each group's greatest (`max`) or least value of `c`.
fn naive_ord_extreme<T: Ord + Copy>(
    c: &[T],
    groups: &BTreeMap<Vec<i128>, Vec<usize>>,
    max: bool,
) -> Vec<T> {
    groups
        .values()
        .map(|rs| {
            let it = rs.iter().map(|&r| c[r]);
            if max { it.max() } else { it.min() }.unwrap()
        })
        .collect()
}

/// The grouping computed naively.
fn naive(keys: &[KeyColumn], values: &[ValueColumn], aggs: &[Agg]) -> Grouped {
    let rows = keys[0].len();
    let mut groups: BTreeMap<Vec<i128>, Vec<usize>> = BTreeMap::new();
    for r in 0..rows {
        groups.entry(naive_key(keys, r)).or_default().push(r);
    }
    let key_cols = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let firsts = groups.values().map(|rs| rs[0]);
            match k {
                KeyColumn::U32(c) => ResultColumn::U32(firsts.map(|r| c[r]).collect()),
                KeyColumn::I32(c) => ResultColumn::I32(firsts.map(|r| c[r]).collect()),
                KeyColumn::I64(c) => {
                    let col = ResultColumn::I64(firsts.map(|r| c[r]).collect());
                    // The map's key holds the same values.
                    assert!(
                        groups
                            .keys()
                            .zip(groups.values())
                            .all(|(k, rs)| k[i] == c[rs[0]] as i128)
                    );
                    col
                }
            }
        })
        .collect();
    let aggregates = aggs
        .iter()
        .map(|&a| {
            let Some(col) = a.column() else {
                return ResultColumn::U64(groups.values().map(|rs| rs.len() as u64).collect());
            };
            let as_f64 = |rs: &Vec<usize>| -> Vec<f64> {
                rs.iter()
                    .map(|&r| match values[col] {
                        ValueColumn::U32(c) => c[r] as f64,
                        ValueColumn::I32(c) => c[r] as f64,
                        ValueColumn::F32(c) => c[r] as f64,
                        ValueColumn::F64(c) => c[r],
                    })
                    .collect()
            };
            let per =
                |f: &dyn Fn(&Vec<usize>) -> f64| -> Vec<f64> { groups.values().map(f).collect() };
            match (a, values[col]) {
                (Agg::Sum(_), ValueColumn::U32(c)) => ResultColumn::U64(
                    groups
                        .values()
                        .map(|rs| rs.iter().map(|&r| c[r] as u64).sum())
                        .collect(),
                ),
                (Agg::Sum(_), ValueColumn::I32(c)) => ResultColumn::I64(
                    groups
                        .values()
                        .map(|rs| rs.iter().map(|&r| c[r] as i64).sum())
                        .collect(),
                ),
                (Agg::Sum(_), _) => ResultColumn::F64(per(&|rs| as_f64(rs).iter().sum())),
                (Agg::Mean(_), ValueColumn::U32(c)) => ResultColumn::F64(per(&|rs| {
                    rs.iter().map(|&r| c[r] as u64).sum::<u64>() as f64 / rs.len() as f64
                })),
                (Agg::Mean(_), ValueColumn::I32(c)) => ResultColumn::F64(per(&|rs| {
                    rs.iter().map(|&r| c[r] as i64).sum::<i64>() as f64 / rs.len() as f64
                })),
                (Agg::Mean(_), _) => {
                    ResultColumn::F64(per(&|rs| as_f64(rs).iter().sum::<f64>() / rs.len() as f64))
                }
                (Agg::Min(_) | Agg::Max(_), ValueColumn::U32(c)) => {
                    ResultColumn::U32(naive_ord_extreme(c, &groups, matches!(a, Agg::Max(_))))
                }
                (Agg::Min(_) | Agg::Max(_), ValueColumn::I32(c)) => {
                    ResultColumn::I32(naive_ord_extreme(c, &groups, matches!(a, Agg::Max(_))))
                }
                (Agg::Min(_) | Agg::Max(_), ValueColumn::F32(_)) => ResultColumn::F32(
                    per(&|rs| naive_extreme(&as_f64(rs), matches!(a, Agg::Max(_))))
                        .into_iter()
                        .map(|x| x as f32)
                        .collect(),
                ),
                (Agg::Min(_) | Agg::Max(_), ValueColumn::F64(_)) => ResultColumn::F64(per(&|rs| {
                    naive_extreme(&as_f64(rs), matches!(a, Agg::Max(_)))
                })),
                (Agg::Count, _) => unreachable!(),
            }
        })
        .collect();
    Grouped {
        keys: key_cols,
        aggregates,
    }
}

/// `got` equals `want`, floats bit for bit but NaN (any NaN equals any NaN) and float sums
/// and means to rounding (the orders of addition differ).
fn same(got: &Grouped, want: &Grouped, what: &str) {
    assert_eq!(got.keys, want.keys, "{what}: keys");
    assert_eq!(got.aggregates.len(), want.aggregates.len(), "{what}");
    for (i, (g, w)) in got.aggregates.iter().zip(&want.aggregates).enumerate() {
        let close = |x: f64, y: f64| {
            x.is_nan() && y.is_nan()
                || x.to_bits() == y.to_bits()
                || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        };
        match (g, w) {
            (ResultColumn::F64(g), ResultColumn::F64(w)) => {
                assert_eq!(g.len(), w.len(), "{what}: aggregate {i}");
                for (j, (&x, &y)) in g.iter().zip(w).enumerate() {
                    assert!(close(x, y), "{what}: aggregate {i}, group {j}: {x} vs {y}");
                }
            }
            (ResultColumn::F32(g), ResultColumn::F32(w)) => {
                assert_eq!(g.len(), w.len(), "{what}: aggregate {i}");
                for (j, (&x, &y)) in g.iter().zip(w).enumerate() {
                    let ok = x.is_nan() && y.is_nan() || x.to_bits() == y.to_bits();
                    assert!(ok, "{what}: aggregate {i}, group {j}: {x} vs {y}");
                }
            }
            _ => assert_eq!(g, w, "{what}: aggregate {i}"),
        }
    }
}

/// Every aggregate of every value column.
fn all_aggs(values: usize) -> Vec<Agg> {
    let mut a = vec![Agg::Count];
    for c in 0..values {
        a.extend([Agg::Sum(c), Agg::Min(c), Agg::Max(c), Agg::Mean(c)]);
    }
    a
}

/// Keys of `n` rows by distribution: one group, all distinct, uniform over a few and over
/// many groups, a heavy hitter (90% one key), skewed (a key's frequency falls as its square).
fn key_distributions(n: usize, rng: &mut StdRng) -> Vec<(&'static str, Vec<u32>)> {
    vec![
        ("one group", vec![7; n]),
        ("all distinct", (0..n as u32).rev().collect()),
        (
            "uniform 100",
            (0..n).map(|_| rng.random_range(0..100)).collect(),
        ),
        (
            "uniform 2^31",
            (0..n).map(|_| rng.random::<u32>() >> 1).collect(),
        ),
        (
            "heavy hitter",
            (0..n)
                .map(|_| {
                    if rng.random_bool(0.9) {
                        42
                    } else {
                        rng.random()
                    }
                })
                .collect(),
        ),
        (
            "skewed",
            (0..n)
                .map(|_| (rng.random::<f64>().powi(2) * 1000.0) as u32)
                .collect(),
        ),
    ]
}

/// Values of every type: integers over their whole range, floats with NaNs, infinities and
/// signed zeros.
struct Values {
    u: Vec<u32>,
    i: Vec<i32>,
    f: Vec<f32>,
    d: Vec<f64>,
}

impl Values {
    /// The four columns, in the order the tests' aggregates number them.
    fn host(&self) -> [ValueColumn<'_>; 4] {
        [
            ValueColumn::U32(&self.u),
            ValueColumn::I32(&self.i),
            ValueColumn::F32(&self.f),
            ValueColumn::F64(&self.d),
        ]
    }

    /// The four columns on the device.
    fn upload(&self, gpu: &Gpu) -> DeviceValues {
        DeviceValues {
            u: gpu.upload(&self.u).unwrap(),
            i: gpu.upload(&self.i).unwrap(),
            f: gpu.upload(&self.f).unwrap(),
            d: gpu.upload(&self.d).unwrap(),
        }
    }
}

/// [`Values`] on the device.
struct DeviceValues {
    u: DeviceColumn<u32>,
    i: DeviceColumn<i32>,
    f: DeviceColumn<f32>,
    d: DeviceColumn<f64>,
}

impl DeviceValues {
    /// The four columns, in [`Values::host`]'s order.
    fn columns(&self) -> [DeviceValueColumn<'_>; 4] {
        [
            DeviceValueColumn::U32(&self.u),
            DeviceValueColumn::I32(&self.i),
            DeviceValueColumn::F32(&self.f),
            DeviceValueColumn::F64(&self.d),
        ]
    }
}

fn values(n: usize, rng: &mut StdRng) -> Values {
    let special = [
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
    ];
    let float = |rng: &mut StdRng| {
        if rng.random_bool(0.01) {
            special[rng.random_range(0..special.len())]
        } else {
            rng.random_range(-1e6..1e6)
        }
    };
    Values {
        u: (0..n).map(|_| rng.random()).collect(),
        i: (0..n).map(|_| rng.random()).collect(),
        f: (0..n).map(|_| float(rng) as f32).collect(),
        d: (0..n).map(|_| float(rng)).collect(),
    }
}

/// Key columns derived from one distribution's keys `k`: every key type, narrow and wide
/// ranges, a constant column, the extremes of `i64`, and up to eight columns.
struct KeySets {
    k: Vec<u32>,
    low: Vec<u32>,
    signed: Vec<i32>,
    near: Vec<i64>,
    wide: Vec<i64>,
    ends: Vec<i64>,
    konst: Vec<i32>,
    nibbles: Vec<Vec<u32>>,
}

impl KeySets {
    fn new(k: Vec<u32>) -> Self {
        KeySets {
            low: k.iter().map(|&x| x % 3).collect(),
            signed: k
                .iter()
                .map(|&x| (x as i32).wrapping_sub(1 << 30))
                .collect(),
            near: k.iter().map(|&x| x as i64 % 1000 - (1 << 40)).collect(),
            wide: k.iter().map(|&x| (x as i64 - 500) * (1 << 30)).collect(),
            ends: k
                .iter()
                .map(|&x| [i64::MIN, i64::MAX, 0, -1][x as usize % 4])
                .collect(),
            konst: vec![-9; k.len()],
            nibbles: (0..8)
                .map(|b| k.iter().map(|&x| (x >> (4 * b)) & 15).collect())
                .collect(),
            k,
        }
    }

    /// The groupings' key columns, each with its name.
    fn sets(&self) -> Vec<(&'static str, Vec<KeyColumn<'_>>)> {
        vec![
            ("u32", vec![KeyColumn::U32(&self.k)]),
            ("i32", vec![KeyColumn::I32(&self.signed)]),
            ("i64 near -2^40", vec![KeyColumn::I64(&self.near)]),
            ("i64 wide", vec![KeyColumn::I64(&self.wide)]),
            ("i64 extremes", vec![KeyColumn::I64(&self.ends)]),
            (
                "u32 % 3, i32",
                vec![KeyColumn::U32(&self.low), KeyColumn::I32(&self.signed)],
            ),
            (
                "constant i32, u32",
                vec![KeyColumn::I32(&self.konst), KeyColumn::U32(&self.k)],
            ),
            (
                "i64, u32, i32, u32",
                vec![
                    KeyColumn::I64(&self.wide),
                    KeyColumn::U32(&self.low),
                    KeyColumn::I32(&self.signed),
                    KeyColumn::U32(&self.k),
                ],
            ),
            (
                "i64 extremes, u32 % 3",
                vec![KeyColumn::I64(&self.ends), KeyColumn::U32(&self.low)],
            ),
            (
                "eight nibbles",
                self.nibbles.iter().map(|c| KeyColumn::U32(c)).collect(),
            ),
        ]
    }
}

fn cpu_matches_the_naive_grouping_on_every_distribution() {
    let mut rng = StdRng::seed_from_u64(2201);
    for n in common::capped(&SIZES) {
        let v = values(n, &mut rng);
        let vals = [
            ValueColumn::U32(&v.u),
            ValueColumn::I32(&v.i),
            ValueColumn::F32(&v.f),
            ValueColumn::F64(&v.d),
        ];
        let aggs = all_aggs(vals.len());
        for (name, k) in key_distributions(n, &mut rng) {
            let derived = KeySets::new(k);
            for (types, keys) in derived.sets() {
                let what = format!("{name}, keys {types}, {n} rows");
                let got = group_by(&keys, &vals, &aggs).unwrap();
                same(&got, &naive(&keys, &vals, &aggs), &what);
                assert_eq!(got.aggregates.len(), aggs.len());
            }
        }
    }
}

/// The documented semantics on inputs small enough to read: order by key, 64-bit sums, the
/// mean, and NaN and signed zeros in min and max.
fn documented_semantics() {
    let keys = [3u32, 1, 3, 2, 3];
    let big = [u32::MAX, 5, u32::MAX, 7, 1];
    let f = [f32::NAN, 1.0, -0.0, 2.0, 0.0];
    let d = [1.5, f64::NAN, 2.5, -0.0, f64::INFINITY];
    let g = group_by(
        &[KeyColumn::U32(&keys)],
        &[
            ValueColumn::U32(&big),
            ValueColumn::F32(&f),
            ValueColumn::F64(&d),
        ],
        &[
            Agg::Count,
            Agg::Sum(0),
            Agg::Mean(0),
            Agg::Min(1),
            Agg::Max(1),
            Agg::Min(2),
            Agg::Max(2),
        ],
    )
    .unwrap();
    assert_eq!(g.groups(), 3);
    assert_eq!(g.keys, vec![ResultColumn::U32(vec![1, 2, 3])]);
    assert_eq!(g.aggregates[0], ResultColumn::U64(vec![1, 1, 3]));
    // Two u32::MAX and a 1 in 64 bits: no wrap.
    assert_eq!(
        g.aggregates[1],
        ResultColumn::U64(vec![5, 7, 2 * u32::MAX as u64 + 1])
    );
    let ResultColumn::F64(mean) = &g.aggregates[2] else {
        panic!("mean is f64")
    };
    assert_eq!(mean[2], (2 * u32::MAX as u64 + 1) as f64 / 3.0);
    // Group 3's f32 values: NaN, -0.0, +0.0: min -0.0 (below +0.0), max NaN.
    let (ResultColumn::F32(min), ResultColumn::F32(max)) = (&g.aggregates[3], &g.aggregates[4])
    else {
        panic!("f32 min and max are f32")
    };
    assert_eq!(min[2].to_bits(), (-0.0f32).to_bits());
    assert!(max[2].is_nan() && max[2].to_bits() == f32::NAN.to_bits());
    // Group 1's one f64 value is NaN: both min and max are NaN.
    let (ResultColumn::F64(min), ResultColumn::F64(max)) = (&g.aggregates[5], &g.aggregates[6])
    else {
        panic!("f64 min and max are f64")
    };
    assert!(min[0].is_nan() && max[0].is_nan());
    assert_eq!((min[2], max[2]), (1.5, f64::INFINITY));
}

/// Empty input gives no groups, with the result's columns typed as documented.
fn empty_input_gives_typed_empty_columns() {
    let g = group_by(
        &[KeyColumn::I64(&[]), KeyColumn::U32(&[])],
        &[ValueColumn::I32(&[])],
        &[Agg::Count, Agg::Sum(0), Agg::Min(0), Agg::Mean(0)],
    )
    .unwrap();
    assert_eq!(g.groups(), 0);
    assert_eq!(
        g.keys,
        vec![ResultColumn::I64(vec![]), ResultColumn::U32(vec![])]
    );
    assert_eq!(
        g.aggregates,
        vec![
            ResultColumn::U64(vec![]),
            ResultColumn::I64(vec![]),
            ResultColumn::I32(vec![]),
            ResultColumn::F64(vec![]),
        ]
    );
}

/// Bad groupings are refused before any work, each naming what is wrong.
fn bad_groupings_are_refused() {
    let (a, b) = ([1u32, 2, 3], [1i32, 2]);
    let refused = |r: Result<Grouped, Error>, needle: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(e.to_string().contains(needle), "{needle:?} not in {e}");
    };
    refused(group_by(&[], &[], &[Agg::Count]), "no key column");
    refused(group_by(&[KeyColumn::U32(&a)], &[], &[]), "no aggregate");
    refused(
        group_by(
            &[KeyColumn::U32(&a), KeyColumn::I32(&b)],
            &[],
            &[Agg::Count],
        ),
        "key column 1 has 2 rows",
    );
    refused(
        group_by(
            &[KeyColumn::U32(&a)],
            &[ValueColumn::I32(&b)],
            &[Agg::Count],
        ),
        "value column 0 has 2 rows",
    );
    refused(
        group_by(
            &[KeyColumn::U32(&a)],
            &[ValueColumn::U32(&a)],
            &[Agg::Sum(1)],
        ),
        "sum(v1) reads value column 1",
    );
}

/// Sizes for the GPU: empty, one row, a tile of the hash kernel (2048 rows) and either side,
/// several tiles, and more tiles than blocks.
const GPU_SIZES: [usize; 9] = [0, 1, 2, 2047, 2048, 2049, 6145, 100_003, (1 << 20) + 17];

/// The aggregates of one value column that one GPU call computes (three accumulators).
fn column_aggs(c: usize) -> Vec<Agg> {
    vec![
        Agg::Count,
        Agg::Sum(c),
        Agg::Min(c),
        Agg::Max(c),
        Agg::Mean(c),
    ]
}

/// A GPU group-by variant's call.
type GpuGroupBy =
    fn(&Gpu, &[DeviceKeyColumn], &[DeviceValueColumn], &[Agg]) -> Result<Grouped, Error>;

/// The GPU variants by name: the hash, sort-based and partitioned group-bys and the call that
/// chooses.
const VARIANTS: [(&str, GpuGroupBy); 4] = [
    ("hash", group_by_hash),
    ("sort", group_by_sort),
    ("partitioned", group_by_partitioned),
    ("group_by", tessera::ops::group_by),
];

/// Each GPU variant's group-by of `keys` (as `u32` and as `i32`) with every value type, each
/// in its own call, against the CPU's.
fn variants_match_cpu(gpu: &Gpu, k: &[u32], v: &Values, what: &str) {
    for (name, f) in VARIANTS {
        variant_matches_cpu(gpu, f, k, v, &format!("{name}: {what}"));
    }
}

/// One GPU variant against the CPU (see [`variants_match_cpu`]).
fn variant_matches_cpu(gpu: &Gpu, group_by_gpu: GpuGroupBy, k: &[u32], v: &Values, what: &str) {
    let signed: Vec<i32> = k.iter().map(|&x| x as i32).collect();
    let dk = gpu.upload(k).unwrap();
    let ds = gpu.upload(&signed).unwrap();
    let uploaded = v.upload(gpu);
    let (host, device) = (v.host(), uploaded.columns());
    for c in 0..host.len() {
        let aggs = column_aggs(c);
        let got = group_by_gpu(gpu, &[DeviceKeyColumn::U32(&dk)], &device, &aggs).unwrap();
        let want = group_by(&[KeyColumn::U32(k)], &host, &aggs).unwrap();
        same(&got, &want, &format!("{what}, u32 keys, value column {c}"));
        let got = group_by_gpu(gpu, &[DeviceKeyColumn::I32(&ds)], &device, &aggs).unwrap();
        let want = group_by(&[KeyColumn::I32(&signed)], &host, &aggs).unwrap();
        same(&got, &want, &format!("{what}, i32 keys, value column {c}"));
    }
    // Count alone, and aggregates of several columns in one call (four accumulators).
    let aggs = [Agg::Count];
    let got = group_by_gpu(gpu, &[DeviceKeyColumn::U32(&dk)], &device, &aggs).unwrap();
    let want = group_by(&[KeyColumn::U32(k)], &host, &aggs).unwrap();
    same(&got, &want, &format!("{what}, count alone"));
    let aggs = [
        Agg::Sum(0),
        Agg::Max(1),
        Agg::Mean(2),
        Agg::Min(3),
        Agg::Count,
        Agg::Mean(0),
    ];
    let got = group_by_gpu(gpu, &[DeviceKeyColumn::U32(&dk)], &device, &aggs).unwrap();
    let want = group_by(&[KeyColumn::U32(k)], &host, &aggs).unwrap();
    same(&got, &want, &format!("{what}, four columns"));
}

/// Every GPU variant equals the CPU's on every distribution (for the hash group-by the shared
/// tables' and the global table's paths; for the sort-based one runs within and across
/// tiles), key type, value type and size.
fn gpu_variants_match_cpu(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2202);
    for n in common::capped(&GPU_SIZES) {
        let v = values(n, &mut rng);
        let mut dists = key_distributions(n, &mut rng);
        // A few groups: the shared table with a copy per lane.
        dists.push((
            "uniform 20",
            (0..n).map(|_| rng.random_range(0..20)).collect(),
        ));
        dists.push((
            "uniform 10^4",
            (0..n).map(|_| rng.random_range(0..10_000)).collect(),
        ));
        // Narrow key ranges, for the partitioned group-by: one partition (split over several
        // blocks once the rows are many), one radix pass, two passes, and a heavy hitter
        // among keys below 2^20 (its partition split).
        dists.push((
            "uniform 4096",
            (0..n).map(|_| rng.random_range(0..4096)).collect(),
        ));
        dists.push((
            "uniform 2^24",
            (0..n).map(|_| rng.random_range(0..1 << 24)).collect(),
        ));
        dists.push((
            "heavy hitter below 2^20",
            (0..n)
                .map(|_| {
                    if rng.random_bool(0.9) {
                        4242
                    } else {
                        rng.random_range(0..1 << 20)
                    }
                })
                .collect(),
        ));
        // The key that marks an empty slot, and its i32 twin -1, among others.
        dists.push((
            "u32::MAX among few",
            (0..n)
                .map(|_| [u32::MAX, 0, 1, u32::MAX - 1][rng.random_range(0..4)])
                .collect(),
        ));
        for (name, k) in dists {
            variants_match_cpu(gpu, &k, &v, &format!("{name}, {n} rows"));
        }
    }
}

/// A sample that shows one key while the rows hold a million: the first tables overflow and
/// the call runs again with larger ones, with the same answer.
fn gpu_hash_recovers_from_a_misleading_sample(gpu: &Gpu) {
    // Under a size cap (the sanitizer runs) the largest size it allows.
    let n = common::capped(&[4099, 1 << 20])
        .last()
        .copied()
        .unwrap_or(0);
    // Every row the sample reads (4096 spread evenly) holds 5; the others differ.
    let mut k: Vec<u32> = (0..n as u32).map(|i| i + 10).collect();
    let samples = n.min(4096);
    for j in 0..samples {
        k[j * n / samples] = 5;
    }
    let mut rng = StdRng::seed_from_u64(2203);
    let v = values(n, &mut rng);
    variant_matches_cpu(gpu, group_by_hash, &k, &v, "misleading sample");
}

/// 64-bit sums of 32-bit values at their extremes (the largest `u32`, `i32::MIN` and
/// `i32::MAX`), where nearly every add carries into the high word, with one block taking
/// every row (a resident block cap of 1) so that each slot of its shared table sums
/// thousands of them: a few groups (the table with a copy per lane), a hundred (a dense
/// table) and a thousand spread over `u32` (a hashed one), each with several aggregates of
/// both columns; and twelve groups over 2^25 rows, whose slots' copies each sum tens of
/// thousands.
fn gpu_sums_of_extreme_values_carry_exactly(gpu: &Gpu) {
    let n = common::capped(&[5000, 1 << 20])
        .last()
        .copied()
        .unwrap_or(0);
    let mut rng = StdRng::seed_from_u64(2206);
    let (u, i) = extreme_values(n, &mut rng);
    let cases: [(&str, Vec<u32>); 3] = [
        ("3 groups", (0..n).map(|_| rng.random_range(0..3)).collect()),
        (
            "100 groups",
            (0..n).map(|_| rng.random_range(0..100)).collect(),
        ),
        (
            "1000 spread groups",
            (0..n)
                .map(|_| rng.random_range(0..1000u32).wrapping_mul(2_654_435_761))
                .collect(),
        ),
    ];
    gpu.set_resident_block_cap(Some(1));
    for (name, k) in &cases {
        let aggs = [
            vec![Agg::Sum(0), Agg::Count],
            vec![Agg::Mean(1), Agg::Count, Agg::Max(0)],
            vec![Agg::Sum(1), Agg::Sum(0), Agg::Min(1)],
        ];
        hash_sums_match_cpu(gpu, name, k, (&u, &i), &aggs);
    }
    // None of the twelve keys is hot (each under an eighth of the rows).
    let n = common::capped(&[1 << 25]).last().copied().unwrap_or(0);
    let (u, i) = extreme_values(n, &mut rng);
    let k: Vec<u32> = (0..n).map(|r| 7 + (r % 12) as u32).collect();
    let aggs = [
        vec![Agg::Sum(0), Agg::Count],
        vec![Agg::Sum(1), Agg::Count, Agg::Sum(0)],
    ];
    hash_sums_match_cpu(gpu, "12 keys", &k, (&u, &i), &aggs);
    gpu.set_resident_block_cap(None);
}

/// `n` values of each 32-bit integer type at or next to its extremes.
fn extreme_values(n: usize, rng: &mut StdRng) -> (Vec<u32>, Vec<i32>) {
    let u = (0..n).map(|_| u32::MAX - rng.random_range(0..3)).collect();
    let i = (0..n)
        .map(|_| [i32::MAX, i32::MAX - 1, i32::MIN, -1][rng.random_range(0..4)])
        .collect();
    (u, i)
}

/// `group_by_hash` of keys `k` with each of `aggs` over the value columns `(u, i)` equals the
/// CPU's grouping (`name` in the message).
fn hash_sums_match_cpu(
    gpu: &Gpu,
    name: &str,
    k: &[u32],
    (u, i): (&[u32], &[i32]),
    aggs: &[Vec<Agg>],
) {
    let (du, di) = (gpu.upload(u).unwrap(), gpu.upload(i).unwrap());
    let host = [ValueColumn::U32(u), ValueColumn::I32(i)];
    let device = [DeviceValueColumn::U32(&du), DeviceValueColumn::I32(&di)];
    let dk = gpu.upload(k).unwrap();
    for aggs in aggs {
        let got = group_by_hash(gpu, &[DeviceKeyColumn::U32(&dk)], &device, aggs);
        let want = group_by(&[KeyColumn::U32(k)], &host, aggs).unwrap();
        same(
            &got.unwrap(),
            &want,
            &format!("{name}, {aggs:?}, one block"),
        );
    }
}

/// Shared tables so large that one block fills an SM (ten thousand keys dense in a range, or
/// seven thousand spread over `u32` in a hashed table, with one or two accumulators of 32-bit
/// values) take their full tiles through shared-memory stages while the block adds up the one
/// before: many tiles and a partial one, with every block over many tiles (a resident block
/// cap of 7) and without a cap.
fn gpu_staged_tiles_match_cpu(gpu: &Gpu) {
    let n = common::capped(&[5000, (1 << 20) + 17])
        .last()
        .copied()
        .unwrap_or(0);
    let mut rng = StdRng::seed_from_u64(2207);
    let v = values(n, &mut rng);
    let (du, di, df) = (
        gpu.upload(&v.u).unwrap(),
        gpu.upload(&v.i).unwrap(),
        gpu.upload(&v.f).unwrap(),
    );
    let host = [
        ValueColumn::U32(&v.u),
        ValueColumn::I32(&v.i),
        ValueColumn::F32(&v.f),
    ];
    let device = [
        DeviceValueColumn::U32(&du),
        DeviceValueColumn::I32(&di),
        DeviceValueColumn::F32(&df),
    ];
    let cases: [(&str, Vec<u32>); 2] = [
        (
            "10^4 dense",
            (0..n).map(|_| rng.random_range(0..10_000)).collect(),
        ),
        (
            "7000 spread",
            (0..n)
                .map(|_| rng.random_range(0..7000u32).wrapping_mul(2_654_435_761))
                .collect(),
        ),
    ];
    for cap in [Some(7), None] {
        gpu.set_resident_block_cap(cap);
        for (name, k) in &cases {
            let dk = gpu.upload(k).unwrap();
            for aggs in [
                vec![Agg::Sum(0), Agg::Count],
                vec![Agg::Mean(1)],
                vec![Agg::Min(2), Agg::Count],
                vec![Agg::Sum(0), Agg::Max(1)],
            ] {
                let got = group_by_hash(gpu, &[DeviceKeyColumn::U32(&dk)], &device, &aggs);
                let want = group_by(&[KeyColumn::U32(k)], &host, &aggs).unwrap();
                let what = format!("{name}, {aggs:?}, block cap {cap:?}");
                same(&got.unwrap(), &want, &what);
            }
        }
    }
    gpu.set_resident_block_cap(None);
}

/// The partitioned group-by where a partition has more rows than one block takes (about
/// 2^14 at these sizes): a heavy hitter's partition and a single partition, each shared by
/// several blocks that merge their tables, next to keys that need two radix passes. Sized
/// for the sanitizer runs (`TESSERA_TEST_MAX_N=40000`).
fn gpu_partitioned_shares_heavy_partitions(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2205);
    for n in common::capped(&[40_000, 300_007]) {
        let v = values(n, &mut rng);
        let heavy: Vec<u32> = (0..n)
            .map(|_| {
                if rng.random_bool(0.9) {
                    77
                } else {
                    rng.random_range(0..1 << 19)
                }
            })
            .collect();
        let one: Vec<u32> = (0..n).map(|_| rng.random_range(0..3000)).collect();
        let wide: Vec<u32> = (0..n).map(|_| rng.random_range(0..1 << 27)).collect();
        for (name, k) in [
            ("heavy hitter", heavy),
            ("one partition", one),
            ("2^27", wide),
        ] {
            let what = format!("partitioned: {name}, {n} rows");
            variant_matches_cpu(gpu, group_by_partitioned, &k, &v, &what);
        }
    }
}

/// The partitioned group-by's tile-local form (key ranges of 2^14 to 2^21 keys with at most
/// two accumulators): tiles of 8,192 rows ordered in place, a warp per partition's run. On
/// ranges far from 0 (up to `u32::MAX`), at sizes around the tile, with no payload (count
/// alone), a shared `u32` payload, row ids (other value columns and mixes), and a heavy
/// hitter whose partition is shared by several blocks. Wider ranges below 2^29 take two
/// levels (a radix pass on the partition's bits above the tile's first), where a tile holds
/// the rows of two radix digits: ranges of 2^22 and 2^26 keys, and a heavy hitter among
/// 2^25 (two blocks per SM, half tables), 2^28 and 2^29 keys (the one-level kernel's tables
/// where the half tables do not reach). Sized for the sanitizer runs
/// (`TESSERA_TEST_MAX_N=40000`).
fn gpu_partitioned_tiles_in_place(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2206);
    let aggs: [&[Agg]; 7] = [
        &[Agg::Count],
        &[Agg::Sum(0)],
        &[Agg::Count, Agg::Mean(0)],
        &[Agg::Sum(1)],
        &[Agg::Max(3)],
        &[Agg::Min(0), Agg::Max(0)],
        &[Agg::Sum(2), Agg::Min(1), Agg::Count],
    ];
    for n in common::capped(&[1, 8191, 8192, 8193, 40_000, 300_007]) {
        let v = values(n, &mut rng);
        let uploaded = v.upload(gpu);
        let (host, device) = (v.host(), uploaded.columns());
        let mut dists: Vec<(String, Vec<u32>)> = Vec::new();
        let ranges = [
            (0u32, 15u32),
            (1_000_000_007, 17),
            (0, 20),
            (12_345, 21),
            (0, 22),
            (12_345, 26),
            // Two levels past the half tables' reach (2^28 with one accumulator, 2^27 with
            // two): the one-level kernel's tables, or the sorted form.
            (0, 28),
            (0, 29),
        ];
        for (base, bits) in ranges {
            let k = (0..n)
                .map(|_| base + rng.random_range(0..1u32 << bits))
                .collect();
            dists.push((format!("{base} + 2^{bits}"), k));
        }
        let top = (0..n)
            .map(|_| u32::MAX - rng.random_range(0..1u32 << 18))
            .collect();
        dists.push(("the top 2^18 of u32".into(), top));
        let heavy = (0..n)
            .map(|_| {
                if rng.random_bool(0.8) {
                    500_000
                } else {
                    rng.random_range(0..1u32 << 20)
                }
            })
            .collect();
        dists.push(("heavy hitter below 2^20".into(), heavy));
        let heavy = (0..n)
            .map(|_| {
                if rng.random_bool(0.6) {
                    5_000_000
                } else {
                    rng.random_range(0..1u32 << 25)
                }
            })
            .collect();
        dists.push(("heavy hitter below 2^25".into(), heavy));
        for (name, k) in &dists {
            let dk = gpu.upload(k).unwrap();
            for aggs in aggs {
                let got =
                    group_by_partitioned(gpu, &[DeviceKeyColumn::U32(&dk)], &device, aggs).unwrap();
                let want = group_by(&[KeyColumn::U32(k)], &host, aggs).unwrap();
                same(
                    &got,
                    &want,
                    &format!("in place: {name}, {n} rows, {aggs:?}"),
                );
            }
        }
    }
}

/// `group_by` plans the partitioned group-by's tile-local form from a sample's key range
/// (2^21 keys from a little below the least sampled one) without reading the keys' range;
/// keys the sample missed outside that range (below it, above it, `u32::MAX`) send the
/// grouping back to the whole range, with the same answer.
fn gpu_group_by_checks_a_sampled_range(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2207);
    for n in common::capped(&[40_000, 300_007]) {
        let v = values(n, &mut rng);
        let du = gpu.upload(&v.u).unwrap();
        // A range the tile-local form takes, and one that the sorted form's joint histogram
        // takes (2^24 keys; its bins reach 2^27).
        let even: Vec<u32> = (0..n)
            .map(|_| 1_000_000 + rng.random_range(0..1 << 19))
            .collect();
        let wide: Vec<u32> = (0..n).map(|_| rng.random_range(0..1 << 24)).collect();
        // Rows right after sampled ones (the sample reads row j * n / s), which it misses.
        let s = n.min(GROUPBY_SAMPLES);
        let missed = [10, s / 2, s - 3].map(|j| j * n / s + 1);
        let mut cases = vec![("none outside", even.clone()), ("wide", wide.clone())];
        let outliers = [
            ("below", 5, &even),
            ("above", 3_000_000, &even),
            ("u32::MAX", u32::MAX, &even),
            ("wide, past the joint bins", (1 << 27) + 5, &wide),
            ("wide, u32::MAX", u32::MAX, &wide),
        ];
        for (name, outlier, keys) in outliers {
            let mut k = keys.clone();
            for &i in &missed {
                k[i] = outlier;
            }
            cases.push((name, k));
        }
        for (name, k) in cases {
            let dk = gpu.upload(&k).unwrap();
            let aggs = [Agg::Count, Agg::Sum(0)];
            let got = tessera::ops::group_by(
                gpu,
                &[DeviceKeyColumn::U32(&dk)],
                &[DeviceValueColumn::U32(&du)],
                &aggs,
            )
            .unwrap();
            let want = group_by(&[KeyColumn::U32(&k)], &[ValueColumn::U32(&v.u)], &aggs).unwrap();
            same(&got, &want, &format!("sampled range, {name}, {n} rows"));
        }
    }
}

/// The partitions' row counts of the partitioned group-by's histogram kernel equal the
/// CPU's on every size around its tile (1,024 x 16 keys) and past one tile per SM, and are
/// `None` where a key lies past its 2^15 partitions (from a base, or below it).
fn gpu_joint_bins_match_cpu(gpu: &Gpu) {
    use tessera::ops::testing::groupby_joint_bins;
    let mut rng = StdRng::seed_from_u64(2208);
    let sizes = [0, 1, 16_383, 16_384, 16_385, 300_007, (1 << 22) + 5];
    for n in common::capped(&sizes) {
        for (base, shift) in [
            (0u32, 12u32),
            (0, 14),
            (1_000_003, 13),
            (u32::MAX - (1 << 26), 11),
        ] {
            let span = 1u64 << (shift + 15);
            let top = (base as u64 + span - 1).min(u32::MAX as u64) as u32;
            let uniform: Vec<u32> = (0..n).map(|_| rng.random_range(base..=top)).collect();
            let one = vec![top; n];
            let heavy: Vec<u32> = (0..n)
                .map(|_| {
                    if rng.random_bool(0.5) {
                        base + 12_345
                    } else {
                        rng.random_range(base..=top)
                    }
                })
                .collect();
            for (what, k) in [("uniform", uniform), ("one key", one), ("heavy", heavy)] {
                let dk = gpu.upload(&k).unwrap();
                let got = groupby_joint_bins(gpu, &dk, base, shift).unwrap();
                let mut want = vec![0u32; 1 << 15];
                for &key in &k {
                    want[((key - base) >> shift) as usize] += 1;
                }
                let at = format!("{what}, {n} keys, base {base}, shift {shift}");
                assert_eq!(got, Some(want), "{at}");
                if n > 0 && top < u32::MAX {
                    let mut k = k.clone();
                    k[n / 2] = top + 1;
                    let dk = gpu.upload(&k).unwrap();
                    let got = groupby_joint_bins(gpu, &dk, base, shift).unwrap();
                    assert_eq!(got, None, "{at}, a key past the partitions");
                }
                if n > 0 && base > 0 {
                    let mut k = k.clone();
                    k[n - 1] = base - 1;
                    let dk = gpu.upload(&k).unwrap();
                    let got = groupby_joint_bins(gpu, &dk, base, shift).unwrap();
                    assert_eq!(got, None, "{at}, a key below the base");
                }
            }
        }
    }
}

/// What the GPU variants do not take is refused before any work, naming the fix.
fn gpu_variants_refuse_what_they_do_not_take(gpu: &Gpu) {
    for (name, f) in VARIANTS {
        println!("{name}");
        refuses_what_it_does_not_take(gpu, f);
    }
}

fn refuses_what_it_does_not_take(gpu: &Gpu, group_by_gpu: GpuGroupBy) {
    let a = gpu.upload(&[1u32, 2, 3]).unwrap();
    let b = gpu.upload(&[1i64, 2, 3]).unwrap();
    let short = gpu.upload(&[1u32, 2]).unwrap();
    let refused = |r: Result<Grouped, Error>, needle: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(e.to_string().contains(needle), "{needle:?} not in {e}");
    };
    let u = DeviceKeyColumn::U32(&a);
    refused(
        group_by_gpu(gpu, &[u; 9], &[], &[Agg::Count]),
        "9 key columns",
    );
    // Two columns spanning 64 and 63 bits: no packed key holds them.
    let wide = gpu.upload(&[i64::MIN, 0, i64::MAX]).unwrap();
    let half = gpu.upload(&[0i64, 1 << 62, i64::MAX]).unwrap();
    let (w, h) = (DeviceKeyColumn::I64(&wide), DeviceKeyColumn::I64(&half));
    refused(
        group_by_gpu(gpu, &[w, h], &[], &[Agg::Count]),
        "need 64 + 63 = 127 bits together",
    );
    // Two small columns pack into a few bits: no error.
    let g = group_by_gpu(gpu, &[u, DeviceKeyColumn::I64(&b)], &[], &[Agg::Count]).unwrap();
    assert_eq!(g.groups(), 3);
    refused(group_by_gpu(gpu, &[], &[], &[Agg::Count]), "no key column");
    refused(
        group_by_gpu(gpu, &[u], &[DeviceValueColumn::U32(&short)], &[Agg::Count]),
        "value column 0 has 2 rows",
    );
    let vals = [DeviceValueColumn::U32(&a), DeviceValueColumn::U32(&a)];
    let five = [
        Agg::Sum(0),
        Agg::Min(0),
        Agg::Max(0),
        Agg::Min(1),
        Agg::Max(1),
    ];
    refused(group_by_gpu(gpu, &[u], &vals, &five), "need 5 accumulators");
    // An empty input is no error: typed empty columns.
    let e = gpu.upload::<i32>(&[]).unwrap();
    let g = group_by_gpu(gpu, &[DeviceKeyColumn::I32(&e)], &[], &[Agg::Count]).unwrap();
    assert_eq!(g.keys, vec![ResultColumn::I32(vec![])]);
    assert_eq!(g.aggregates, vec![ResultColumn::U64(vec![])]);
}

/// Bits a packed key needs for these key columns: each column's range, summed (the test's own
/// reckoning of what the GPU's packing does).
fn packed_bits(keys: &[KeyColumn]) -> u32 {
    keys.iter()
        .map(|k| {
            let wide: Vec<i128> = match k {
                KeyColumn::U32(c) => c.iter().map(|&x| x as i128).collect(),
                KeyColumn::I32(c) => c.iter().map(|&x| x as i128).collect(),
                KeyColumn::I64(c) => c.iter().map(|&x| x as i128).collect(),
            };
            let span = wide.iter().max().unwrap_or(&0) - wide.iter().min().unwrap_or(&0);
            128 - span.leading_zeros()
        })
        .sum()
}

/// Composite keys (up to eight columns of every key type, constant columns among them) and
/// `i64` keys, packed into 32 or 64 bits, on every variant against the CPU: equal results,
/// or for the hash group-by on a key past 32 bits and for every variant past 64, the `Err`
/// that says so.
fn gpu_composite_keys_match_cpu(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2206);
    for n in common::capped(&GPU_SIZES) {
        let v = values(n, &mut rng);
        let (du, di, dd) = (
            gpu.upload(&v.u).unwrap(),
            gpu.upload(&v.i).unwrap(),
            gpu.upload(&v.d).unwrap(),
        );
        let host = [
            ValueColumn::U32(&v.u),
            ValueColumn::I32(&v.i),
            ValueColumn::F64(&v.d),
        ];
        let device = [
            DeviceValueColumn::U32(&du),
            DeviceValueColumn::I32(&di),
            DeviceValueColumn::F64(&dd),
        ];
        let agg_sets = [
            vec![Agg::Count, Agg::Sum(0)],
            vec![Agg::Min(1), Agg::Max(2), Agg::Mean(0), Agg::Count],
        ];
        for (dist, k) in key_distributions(n, &mut rng) {
            let derived = KeySets::new(k);
            for (set, keys) in derived.sets() {
                let bits = packed_bits(&keys);
                let up: Vec<DeviceKeys> = keys
                    .iter()
                    .map(|&c| DeviceKeys::upload(gpu, c).unwrap())
                    .collect();
                let dkeys: Vec<DeviceKeyColumn> = up.iter().map(DeviceKeys::column).collect();
                for aggs in &agg_sets {
                    let want = group_by(&keys, &host, aggs).unwrap();
                    for (name, f) in VARIANTS {
                        let what = format!("{name}: {set} ({bits} bits), {dist}, {n} rows");
                        let got = f(gpu, &dkeys, &device, aggs);
                        let past = if name == "hash" { 32 } else { 64 };
                        if n > 0 && bits > past {
                            let e = got.unwrap_err().to_string();
                            assert!(e.contains("bits"), "{what}: {e}");
                        } else {
                            same(&got.unwrap(), &want, &what);
                        }
                    }
                }
            }
        }
    }
}

/// Dense shared tables (a slot for every key in the sample's range) send the keys the sample
/// did not see, below and above the range and the key `u32::MAX`, to the global table: a
/// range the quick plan takes (a few hundred keys), one the host sizes (ten thousand), and
/// inputs smaller than a sample; `i32` keys whose range crosses zero are dense in their order.
fn gpu_dense_tables_send_strays_to_the_global_table(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2205);
    for n in common::capped(&[3000, 5000, 1 << 20]) {
        let samples = n.min(GROUPBY_SAMPLES);
        let sampled: std::collections::HashSet<usize> =
            (0..samples).map(|j| j * n / samples).collect();
        for span in [200i64, 10_000] {
            let strays = [
                u32::MAX,
                0,
                (-span) as u32,
                (span + 1000) as u32,
                5_000_000,
                0x8000_0000,
            ];
            let k: Vec<u32> = (0..n)
                .map(|i| {
                    if i % 991 == 3 && !sampled.contains(&i) {
                        strays[i / 991 % strays.len()]
                    } else {
                        (rng.random_range(0..span) - span / 2) as u32
                    }
                })
                .collect();
            let v = values(n, &mut rng);
            let what = format!("dense, {n} rows, range {span}");
            variant_matches_cpu(gpu, group_by_hash, &k, &v, &what);
        }
    }
    // Strays of more distinct keys than the global table of the launch after the sample
    // takes (a dense table of ten thousand keys, which that launch plans on the GPU): it
    // overflows, and the host plans again. The sampled rows are multiples of 256.
    for n in common::capped(&[1 << 20]) {
        let k: Vec<u32> = (0..n)
            .map(|i| {
                if i % 16 == 5 {
                    1_000_000 + i as u32
                } else {
                    rng.random_range(0..10_000)
                }
            })
            .collect();
        let v = values(n, &mut rng);
        let what = format!("dense, {n} rows, {} strays", n / 16);
        variant_matches_cpu(gpu, group_by_hash, &k, &v, &what);
    }
}

/// The chooser takes the hash group-by for groups that fit shared memory, the partitioned one
/// for many groups of a narrow key range and the sort-based one for many over every `u32`;
/// its result on the device comes back equal to the CPU's.
fn gpu_group_by_chooses_by_the_estimate(gpu: &Gpu) {
    let n = common::capped(&[5000, 1 << 20])
        .last()
        .copied()
        .unwrap_or(0);
    let mut rng = StdRng::seed_from_u64(2204);
    let v = values(n, &mut rng);
    let dv = gpu.upload(&v.u).unwrap();
    let few: Vec<u32> = (0..n).map(|_| rng.random_range(0..100)).collect();
    let many: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let narrow: Vec<u32> = (0..n).map(|_| rng.random_range(0..1 << 22)).collect();
    // Skewed, with the key that marks an empty slot as the heavy hitter: Chao's bound.
    let skewed: Vec<u32> = (0..n)
        .map(|_| {
            if rng.random_bool(0.5) {
                u32::MAX
            } else {
                rng.random_range(0..10_000)
            }
        })
        .collect();
    // Ten thousand keys with a heavy hitter outside their range: a dense table the launch
    // after the sample plans on the GPU (under the sanitizer's cap the sample may say
    // otherwise).
    let full = n > 100_000;
    let cases = [
        (few, Some(GroupByVariant::Hash), Some(true)),
        (narrow, Some(GroupByVariant::Partitioned), Some(false)),
        (many, Some(GroupByVariant::Sort), Some(false)),
        (skewed, None, full.then_some(true)),
    ];
    for (k, want, quick) in cases {
        let dk = gpu.upload(&k).unwrap();
        let keys = [DeviceKeyColumn::U32(&dk)];
        let values = [DeviceValueColumn::U32(&dv)];
        let aggs = [Agg::Count, Agg::Sum(0)];
        let (r, choice) = group_by_device(gpu, &keys, &values, &aggs).unwrap();
        // The GPU counts the sample's keys as the host does: the same estimate.
        let s = n.min(GROUPBY_SAMPLES);
        let mut sample: Vec<u32> = (0..s).map(|j| k[j * n / s]).collect();
        let est = groups_from_sample_keys(&mut sample, n);
        assert_eq!(choice.estimated_groups, est.groups, "{want:?}: {est:?}");
        // A hundred keys, every one in a full sample many times, or a dense range: no wait
        // for the sample.
        if let Some(quick) = quick {
            assert_eq!(
                choice.quick,
                quick && n >= GROUPBY_SAMPLES,
                "{want:?}: {est:?}"
            );
        }
        // Under a size cap (the sanitizer runs) every key fits a shared table.
        if let Some(want) = want
            && n > 100_000
        {
            assert_eq!(choice.variant, want, "estimate {}", choice.estimated_groups);
        }
        let host = r.to_host(gpu).unwrap();
        assert_eq!(r.groups(), host.groups());
        let cpu = group_by(&[KeyColumn::U32(&k)], &[ValueColumn::U32(&v.u)], &aggs).unwrap();
        same(&host, &cpu, &format!("group_by_device, {want:?}"));
    }
}

harness! {
    gpu: [
        gpu_variants_match_cpu,
        gpu_dense_tables_send_strays_to_the_global_table,
        gpu_composite_keys_match_cpu,
        gpu_hash_recovers_from_a_misleading_sample,
        gpu_sums_of_extreme_values_carry_exactly,
        gpu_staged_tiles_match_cpu,
        gpu_partitioned_shares_heavy_partitions,
        gpu_partitioned_tiles_in_place,
        gpu_group_by_checks_a_sampled_range,
        gpu_joint_bins_match_cpu,
        gpu_variants_refuse_what_they_do_not_take,
        gpu_group_by_chooses_by_the_estimate,
    ],
    cpu: [
        cpu_matches_the_naive_grouping_on_every_distribution,
        documented_semantics,
        empty_input_gives_typed_empty_columns,
        bad_groupings_are_refused,
    ],
}
