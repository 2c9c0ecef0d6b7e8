//! Ordered aggregation (issue 22; seeds 003 and 004): every pipeline, atomic variant and
//! target, at several block shapes, against the CPU version on sorted keys (one group,
//! all-distinct, few and many groups, a heavy hitter, runs longer than a block) and on
//! unsorted keys (one group per run), at sizes across every chunk, block and look-back
//! boundary; the CPU version against a naive one; and the plans and inputs refused before any
//! work.
mod common;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::cpu::aggregate_runs;
use tessera::ops::{
    AtomicTarget, OrderedAggregates, OrderedLoads, OrderedPipeline, OrderedPlan, OrderedVariant,
    aggregate_sorted,
};
use tessera::{Error, Gpu};

/// Sizes: empty, one row, warp and block edges, and past the CPU's parallel pieces.
const SIZES: [usize; 12] = [
    0,
    1,
    2,
    31,
    33,
    255,
    257,
    4095,
    4097,
    65_537,
    1 << 20,
    (1 << 20) + 17,
];

/// The naive aggregation: one pass over the rows.
fn naive(keys: &[u32], values: &[u32]) -> OrderedAggregates {
    let mut out = OrderedAggregates::default();
    for (i, (&k, &v)) in keys.iter().zip(values).enumerate() {
        if i == 0 || keys[i - 1] != k {
            out.keys.push(k);
            out.counts.push(0);
            out.sums.push(0);
        }
        let g = out.keys.len() - 1;
        out.counts[g] += 1;
        out.sums[g] += u64::from(v);
    }
    out
}

/// Key distributions of `n` rows, sorted but for the last.
fn distributions(n: usize, rng: &mut StdRng) -> Vec<(&'static str, Vec<u32>)> {
    let sorted = |mut v: Vec<u32>| {
        v.sort_unstable();
        v
    };
    let mut d = vec![
        ("one group", vec![7; n]),
        ("all distinct", (0..n as u32).map(|i| 3 * i + 1).collect()),
        (
            "10 groups",
            sorted((0..n).map(|_| rng.random_range(0..10)).collect()),
        ),
        (
            "10^4 groups",
            sorted((0..n).map(|_| rng.random_range(0..10_000)).collect()),
        ),
        ("runs of 5000", (0..n as u32).map(|i| i / 5000).collect()),
    ];
    let heavy = sorted(
        (0..n)
            .map(|_| {
                if rng.random_bool(0.9) {
                    4242
                } else {
                    rng.random()
                }
            })
            .collect(),
    );
    d.push(("heavy hitter", heavy));
    d.push(("unsorted", (0..n).map(|_| rng.random_range(0..4)).collect()));
    d
}

/// Every plan at four block shapes: one row per thread in one warp, a block width that is not a
/// power of two, the default, and the largest shared table; each with direct and (where the
/// block's rows allow) staged loads.
fn plans() -> Vec<OrderedPlan> {
    let mut out = Vec::new();
    for pipeline in [
        OrderedPipeline::Five,
        OrderedPipeline::Three,
        OrderedPipeline::Two,
    ] {
        for variant in [
            OrderedVariant::Naive,
            OrderedVariant::PrivateVariable,
            OrderedVariant::PrivateArray,
        ] {
            for target in [AtomicTarget::Global, AtomicTarget::Shared] {
                for (threads, chunk) in [(32, 1), (96, 4), (256, 8), (1024, 16)] {
                    for loads in [OrderedLoads::Direct, OrderedLoads::Staged] {
                        let plan = OrderedPlan {
                            pipeline,
                            variant,
                            target,
                            threads,
                            chunk,
                            loads,
                        };
                        if plan.check().is_ok() {
                            out.push(plan);
                        }
                    }
                }
            }
        }
    }
    out
}

fn cpu_matches_the_naive_aggregation() {
    let mut rng = StdRng::seed_from_u64(2203);
    for n in SIZES.into_iter().chain([(1 << 21) + 5]) {
        let values: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        for (name, keys) in distributions(n, &mut rng) {
            let got = aggregate_runs(&keys, &values).unwrap();
            assert_eq!(got, naive(&keys, &values), "{name}, n = {n}");
        }
    }
}

fn gpu_every_plan_matches_cpu(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2204);
    let plans = plans();
    for n in common::capped(&SIZES) {
        let values: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let dv = gpu.upload(&values).unwrap();
        for (name, keys) in distributions(n, &mut rng) {
            let want = aggregate_runs(&keys, &values).unwrap();
            let dk = gpu.upload(&keys).unwrap();
            for plan in &plans {
                let got = aggregate_sorted(gpu, &dk, &dv, plan).unwrap();
                assert_eq!(got.groups(), want.keys.len(), "{name}, n = {n}, {plan:?}");
                let got = got.to_host(gpu).unwrap();
                assert!(got == want, "{name}, n = {n}, {plan:?}: results differ");
            }
        }
    }
}

fn refused(r: Result<impl Sized, Error>, what: &str) {
    match r {
        Err(e) => assert!(e.to_string().contains(what), "{e} should name {what}"),
        Ok(_) => panic!("accepted; expected an error naming {what}"),
    }
}

fn gpu_bad_plans_and_inputs_are_refused(gpu: &Gpu) {
    let k = gpu.upload(&[1u32, 1, 2]).unwrap();
    let v = gpu.upload(&[1u32, 2, 3]).unwrap();
    let short = gpu.upload(&[1u32, 2]).unwrap();
    let base = OrderedPlan::default();
    refused(aggregate_sorted(gpu, &k, &short, &base), "values");
    for threads in [0, 16, 48, 2048] {
        refused(
            aggregate_sorted(gpu, &k, &v, &OrderedPlan { threads, ..base }),
            "threads",
        );
    }
    for chunk in [0, 3, 8192] {
        refused(
            aggregate_sorted(gpu, &k, &v, &OrderedPlan { chunk, ..base }),
            "chunk",
        );
    }
    let big = OrderedPlan {
        target: AtomicTarget::Shared,
        threads: 1024,
        chunk: 32,
        loads: OrderedLoads::Direct,
        ..base
    };
    refused(aggregate_sorted(gpu, &k, &v, &big), "shared");
    let big = OrderedPlan {
        threads: 1024,
        chunk: 16,
        loads: OrderedLoads::Staged,
        ..base
    };
    refused(aggregate_sorted(gpu, &k, &v, &big), "staged");
    // A plan refused by the GPU call is refused by its check alone, before any work.
    assert!(OrderedPlan { chunk: 3, ..base }.check().is_err());
    let ok = aggregate_sorted(gpu, &k, &v, &base)
        .unwrap()
        .to_host(gpu)
        .unwrap();
    assert_eq!(
        ok,
        OrderedAggregates {
            keys: vec![1, 2],
            counts: vec![2, 1],
            sums: vec![3, 3]
        }
    );
}

fn cpu_refuses_columns_of_different_lengths() {
    refused(aggregate_runs(&[1, 2], &[1]), "values");
    assert_eq!(
        aggregate_runs(&[], &[]).unwrap(),
        OrderedAggregates::default()
    );
}

harness! {
    gpu: [gpu_every_plan_matches_cpu, gpu_bad_plans_and_inputs_are_refused],
    cpu: [cpu_matches_the_naive_aggregation, cpu_refuses_columns_of_different_lengths],
}
