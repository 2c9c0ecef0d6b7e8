//! Top-k fused with a filter and with a linear key (`top_k_query`), and the runs of a sorted
//! column (`count_runs`), on the GPU against their CPU twins: the exact list, keys bit for bit
//! and rows, including queries that match fewer than `k` rows.
mod common;
use common::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::Gpu;
use tessera::cpu;
use tessera::ops::{
    self, Keep, RowFilter, SelectTopK, TopKOrder, TopKQuery, TopKRows, TopKey, count_runs,
    top_k_query,
};

const ORDERS: [TopKOrder; 2] = [TopKOrder::Largest, TopKOrder::Smallest];

/// Tile of the 4-byte filter kernels (the `f64` ones take half).
const TILE: usize = ops::TOPK_TILE;

/// 0, 1, a tile and its neighbours, several tiles, a large size.
fn sizes() -> Vec<usize> {
    capped(&[
        0,
        1,
        33,
        TILE / 2 + 1,
        TILE - 1,
        TILE,
        TILE + 1,
        5 * TILE + 3,
        (1 << 21) + 17,
    ])
}

/// The `k`s of the brief that `n` rows allow: 1, 2, 31, 32, 33, 1024 and `n`.
fn ks(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [1, 2, 31, 32, 33, 1024, n]
        .into_iter()
        .filter(|&k| k >= 1 && k <= n)
        .collect();
    v.dedup();
    v
}

/// Filters on a column uniform in `0..1000`: none, ~1%, ~50% and all of the rows, a set of
/// two values (~0.2%) and of four.
fn keeps() -> Vec<(Keep, &'static str)> {
    vec![
        (Keep::lt(0), "0%"),
        (Keep::lt(10), "1%"),
        (Keep::lt(500), "50%"),
        (
            Keep::Range {
                lo: 0,
                hi: u32::MAX,
            },
            "100%",
        ),
        (Keep::In(vec![3, 977]), "in 2"),
        (Keep::In(vec![1, 2, 500, 999]), "in 4"),
    ]
}

/// `n` values uniform in `0..m`.
fn uniform_u32(n: usize, m: u32, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..m)).collect()
}

/// Heavy-tailed counts like the tweets' retweets: most small, some large.
fn heavy_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let u: f64 = rng.random_range(1e-9..1.0);
            (u.powf(-0.86) - 1.0).min(1e7) as u32
        })
        .collect()
}

/// A filtered column query against `cpu::top_k_where`, for every `k` and order.
fn check_where<K: TopKey + bytemuck::Pod + std::fmt::Debug>(
    gpu: &Gpu,
    sel: &mut SelectTopK,
    keys: &[K],
    column: &[u32],
    what: &str,
) {
    let (dk, dc) = (gpu.upload(keys).unwrap(), gpu.upload(column).unwrap());
    for (keep, name) in keeps() {
        let q = TopKQuery::column(&dk).filter(RowFilter::new(&dc, keep.clone()));
        for k in ks(keys.len()) {
            for order in ORDERS {
                let want = cpu::top_k_where(keys, column, &keep, k, order).unwrap();
                let got = sel.run_query(gpu, &q, k, order).unwrap();
                let what = format!("{what} n={} {name} k={k} {order:?}", keys.len());
                same(&got, &want, &what);
            }
        }
    }
}

/// Filtered column queries of every key type on awkward sizes and every selectivity.
fn where_every_key_type(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in sizes() {
        let column = uniform_u32(n, 1000, n as u64 + 3);
        let u = uniform_u32(n, u32::MAX, n as u64);
        check_where(gpu, &mut sel, &u, &column, "u32");
        let f: Vec<f32> = uniform_f32(n, n as u64 + 1)
            .iter()
            .map(|&x| x - 0.5)
            .collect();
        check_where(gpu, &mut sel, &f, &column, "f32");
        if n <= TILE + 1 || n == 5 * TILE + 3 {
            let i: Vec<i32> = u.iter().map(|&x| x as i32).collect();
            check_where(gpu, &mut sel, &i, &column, "i32");
            let d: Vec<f64> = f.iter().map(|&x| x as f64 * 1e200).collect();
            check_where(gpu, &mut sel, &d, &column, "f64");
        }
    }
}

/// Keys of few distinct values under a filter, so equal keys straddle the `k`-th place of
/// the matching rows (the tie fill reads only live rows).
fn where_ties(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in capped(&[33, TILE + 1, 5 * TILE + 3, (1 << 21) + 17]) {
        let column = uniform_u32(n, 1000, 11);
        let small = uniform_u32(n, 4, n as u64);
        check_where(gpu, &mut sel, &small, &column, "u32 in 0..4");
        let halves: Vec<f32> = small.iter().map(|&x| x as f32 * 0.5).collect();
        check_where(gpu, &mut sel, &halves, &column, "f32 halves");
        let neg: Vec<f64> = small.iter().map(|&x| -(x as f64)).collect();
        check_where(gpu, &mut sel, &neg, &column, "f64 in -3..=0");
    }
}

/// `w0 * c0 + w1 * c1`, with and without a filter, against the CPU (heavy-tailed counts have
/// many equal keys, so ties matter here too).
fn linear_and_linear_where(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in sizes() {
        let (rt, likes) = (heavy_u32(n, n as u64), heavy_u32(n, n as u64 + 7));
        let column = uniform_u32(n, 1000, 5);
        let (d0, d1, dc) = (
            gpu.upload(&rt).unwrap(),
            gpu.upload(&likes).unwrap(),
            gpu.upload(&column).unwrap(),
        );
        for (w0, w1) in [(1.0f32, 0.5f32), (-0.25, 3.0)] {
            let q = TopKQuery::linear(&d0, w0, &d1, w1);
            for k in ks(n) {
                for order in ORDERS {
                    let what = format!("linear {w0} {w1} n={n} k={k} {order:?}");
                    let want = cpu::top_k_linear(&rt, w0, &likes, w1, k, order).unwrap();
                    same(&sel.run_query(gpu, &q, k, order).unwrap(), &want, &what);
                    for (keep, name) in keeps() {
                        let qf = q.clone().filter(RowFilter::new(&dc, keep.clone()));
                        let want =
                            cpu::top_k_linear_where(&rt, w0, &likes, w1, &column, &keep, k, order)
                                .unwrap();
                        let got = sel.run_query(gpu, &qf, k, order).unwrap();
                        same(&got, &want, &format!("{what} where {name}"));
                    }
                }
            }
        }
    }
}

/// Filters that match fewer rows than `k` (none, one, `k - 1`, rows only in the last tile or
/// off every sampled row): the result is every matching row, best first, and `top_k_query`
/// agrees with the reusable `SelectTopK`.
fn fewer_matches_than_k(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in capped(&[TILE + 1, 5 * TILE + 3, (1 << 21) + 17]) {
        let keys = uniform_u32(n, 1 << 20, 3);
        let dk = gpu.upload(&keys).unwrap();
        let plan = ops::SamplePlan::new(n, 32);
        let stride = plan.stride;
        for k in [32usize, 1024] {
            let layouts: Vec<(Vec<u32>, &str)> = vec![
                (vec![0; n], "none"),
                ((0..n).map(|i| (i == n / 2) as u32).collect(), "one"),
                ((0..n).map(|i| (i < k - 1) as u32).collect(), "k - 1 first"),
                ((0..n).map(|i| (i + k > n) as u32).collect(), "k - 1 last"),
                (
                    (0..n)
                        .map(|i| {
                            (i % stride == 1 && !plan.is_sampled(i) && i < stride * (k - 1)) as u32
                        })
                        .collect(),
                    "off the sample",
                ),
            ];
            for (column, what) in layouts {
                let dc = gpu.upload(&column).unwrap();
                let keep = Keep::In(vec![1]);
                let q = TopKQuery::column(&dk).filter(RowFilter::is_in(&dc, &[1]));
                for order in ORDERS {
                    let want = cpu::top_k_where(&keys, &column, &keep, k, order).unwrap();
                    assert!(want.rows.len() < k, "{what}: fewer than k match");
                    let what = format!("{what} n={n} k={k} {order:?}");
                    same(&sel.run_query(gpu, &q, k, order).unwrap(), &want, &what);
                    same(&top_k_query(gpu, &q, k, order).unwrap(), &want, &what);
                }
            }
        }
    }
}

/// Filters whose kept rows are exactly the sampled rows, or all but them: the threshold's
/// estimate is off and the exact fallback gives the same answer.
fn misleading_samples_fall_back(gpu: &Gpu) {
    let mut sel = SelectTopK::new(gpu).unwrap();
    for n in capped(&[1 << 20, (1 << 21) + 17]) {
        let k = 1000;
        let plan = ops::SamplePlan::new(n, k);
        let keys: Vec<f32> = (0..n)
            .map(|i| if plan.is_sampled(i) { 1e9 } else { i as f32 })
            .collect();
        let dk = gpu.upload(&keys).unwrap();
        for (column, what) in [
            (
                (0..n)
                    .map(|i| !plan.is_sampled(i) as u32)
                    .collect::<Vec<_>>(),
                "the filter drops the sample's best",
            ),
            (
                (0..n).map(|i| (i % 2 == 0) as u32).collect::<Vec<_>>(),
                "every other row",
            ),
        ] {
            let dc = gpu.upload(&column).unwrap();
            let keep = Keep::In(vec![1]);
            let q = TopKQuery::column(&dk).filter(RowFilter::new(&dc, keep.clone()));
            let want = cpu::top_k_where(&keys, &column, &keep, k, TopKOrder::Largest).unwrap();
            let got = sel.run_query(gpu, &q, k, TopKOrder::Largest).unwrap();
            same(&got, &want, what);
        }
    }
}

/// Bad queries are errors that name the problem, before any work.
fn bad_queries(gpu: &Gpu) {
    let three = gpu.upload(&[1u32, 2, 3]).unwrap();
    let two = gpu.upload(&[1u32, 2]).unwrap();
    let empty = gpu.upload::<u32>(&[]).unwrap();
    let col = TopKQuery::column(&three);
    let expect = |r: tessera::Result<TopKRows<u32>>, needle: &str| {
        let e = r.unwrap_err().to_string();
        assert!(e.contains(needle), "{e} should mention {needle}");
    };
    let expect_f = |r: tessera::Result<TopKRows<f32>>, needle: &str| {
        let e = r.unwrap_err().to_string();
        assert!(e.contains(needle), "{e} should mention {needle}");
    };
    let order = TopKOrder::Largest;
    expect(top_k_query(gpu, &col, 0, order), "k is 0");
    expect(top_k_query(gpu, &col, 4, order), "exceeds");
    expect(
        top_k_query(gpu, &TopKQuery::column(&empty), 1, order),
        "exceeds",
    );
    let short = col.clone().filter(RowFilter::lt(&two, 5));
    expect(top_k_query(gpu, &short, 1, order), "filter column");
    for values in [&[][..], &[1, 2, 3, 4, 5]] {
        let q = col.clone().filter(RowFilter::is_in(&three, values));
        expect(top_k_query(gpu, &q, 1, order), "1 to 4 values");
    }
    let lin = TopKQuery::linear(&three, 1.0, &two, 1.0);
    expect_f(top_k_query(gpu, &lin, 1, order), "second key column");
    let mut sel = SelectTopK::new(gpu).unwrap();
    expect(sel.run_query(gpu, &col, 0, order), "k is 0");
    // The reusable state is still good after an error.
    let ok = sel
        .run_query(gpu, &col.filter(RowFilter::lt(&three, 3)), 3, order)
        .unwrap();
    assert_eq!(ok.rows, [1, 0]);
}

/// `count_runs` against its CPU twin: sorted columns with runs inside and across tiles, all
/// equal, all distinct.
fn runs_match_the_cpu(gpu: &Gpu) {
    for n in sizes() {
        let mut random = uniform_u32(n, (n as u32 / 3).max(1), n as u64);
        random.sort_unstable();
        let long: Vec<u32> = (0..n as u32).map(|i| i / 5000).collect();
        for (keys, what) in [
            (random, "random sorted"),
            (vec![7; n], "all equal"),
            ((0..n as u32).collect(), "all distinct"),
            (long, "runs across tiles"),
        ] {
            let d = gpu.upload(&keys).unwrap();
            let runs = count_runs(gpu, &d).unwrap();
            let (values, counts) = cpu::count_runs(&keys);
            assert_eq!(
                runs.values.to_vec(gpu).unwrap(),
                values,
                "{what} n={n}: values"
            );
            assert_eq!(
                runs.counts.to_vec(gpu).unwrap(),
                counts,
                "{what} n={n}: counts"
            );
        }
    }
}

/// Q4, `GROUP BY user ORDER BY count DESC LIMIT 50`: sort, count the runs, top-k of the
/// counts (rows are runs; the smaller user first among equal counts).
fn group_by_count_top_k(gpu: &Gpu) {
    for n in capped(&[1, TILE + 1, (1 << 21) + 17]) {
        let users = uniform_u32(n, (n as u32 / 4).max(1), 9);
        let d = gpu.upload(&users).unwrap();
        let sorted = ops::sort(gpu, &d, ops::Order::Ascending).unwrap();
        let runs = count_runs(gpu, &sorted).unwrap();
        let k = 50.min(runs.counts.len());
        let got = ops::top_k(gpu, &runs.counts, k, TopKOrder::Largest).unwrap();
        let mut host = users.clone();
        host.sort_unstable();
        let (values, counts) = cpu::count_runs(&host);
        let want = cpu::top_k(&counts, k, TopKOrder::Largest).unwrap();
        same(&got, &want, &format!("q4 n={n}"));
        let top_users: Vec<u32> = got.rows.iter().map(|&r| values[r as usize]).collect();
        let all_values = runs.values.to_vec(gpu).unwrap();
        let gpu_users: Vec<u32> = got.rows.iter().map(|&r| all_values[r as usize]).collect();
        assert_eq!(gpu_users, top_users, "q4 n={n}: users");
    }
}

/// The CPU twins against a full sort of the matching rows (runs without a GPU).
fn cpu_twins_match_a_full_sort() {
    for n in [0usize, 1, 100, 5000] {
        let keys = heavy_u32(n, 1);
        let likes = heavy_u32(n, 2);
        let column = uniform_u32(n, 10, 3);
        let keep = Keep::In(vec![2, 7]);
        for k in ks(n) {
            for order in ORDERS {
                let live: Vec<u32> = (0..n as u32)
                    .filter(|&i| [2, 7].contains(&column[i as usize]))
                    .collect();
                let key = |i: u32| 2.0 * keys[i as usize] as f32 + 0.5 * likes[i as usize] as f32;
                let mut want = live.clone();
                want.sort_by(|&a, &b| {
                    order
                        .oriented_rank(key(b))
                        .cmp(&order.oriented_rank(key(a)))
                        .then(a.cmp(&b))
                });
                want.truncate(k);
                let got =
                    cpu::top_k_linear_where(&keys, 2.0, &likes, 0.5, &column, &keep, k, order)
                        .unwrap();
                assert_eq!(got.rows, want, "n={n} k={k} {order:?}");
                let plain = cpu::top_k_where(&keys, &column, &keep, k, order).unwrap();
                assert_eq!(plain.rows.len(), want.len());
            }
        }
    }
}

harness! {
    gpu: [
        where_every_key_type,
        where_ties,
        linear_and_linear_where,
        fewer_matches_than_k,
        misleading_samples_fall_back,
        bad_queries,
        runs_match_the_cpu,
        group_by_count_top_k,
    ],
    cpu: [cpu_twins_match_a_full_sort],
}
