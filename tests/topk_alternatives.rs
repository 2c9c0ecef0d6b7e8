//! The two top-k alternatives of thesis §4.3 on the GPU against the CPU top-k: per-thread
//! top-k (shared heaps and registers) and bucket select, the exact list, keys bit for bit and
//! rows.
mod common;
use common::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::Gpu;
use tessera::bench::topk_data::Distribution;
use tessera::cpu;
use tessera::ops::{
    BUCKET_TILE, BucketKey, BucketSelectTopK, PerThreadKey, PerThreadTopK, PerThreadVariant,
    TopKOrder, TopKRows,
};

const ORDERS: [TopKOrder; 2] = [TopKOrder::Largest, TopKOrder::Smallest];
const KS: [usize; 6] = [1, 2, 31, 32, 33, 1024];

/// Key types both algorithms take.
trait Key: PerThreadKey + BucketKey + bytemuck::Pod + std::fmt::Debug {}
impl<K: PerThreadKey + BucketKey + bytemuck::Pod + std::fmt::Debug> Key for K {}

/// One of each algorithm, reused across calls.
struct Algorithms {
    per_thread: Vec<PerThreadTopK>,
    bucket: BucketSelectTopK,
}

impl Algorithms {
    fn new(gpu: &Gpu) -> Algorithms {
        Algorithms {
            per_thread: PerThreadVariant::ALL
                .iter()
                .map(|&v| PerThreadTopK::new(gpu, v).unwrap())
                .collect(),
            bucket: BucketSelectTopK::new(gpu).unwrap(),
        }
    }

    /// Every algorithm that takes `k` against the CPU top-k of `data`; the per-thread
    /// variants past their limit must say so.
    fn check<K: Key>(&mut self, gpu: &Gpu, data: &[K], ks: &[usize], what: &str) {
        let d = gpu.upload(data).unwrap();
        let n = data.len();
        let mut ks: Vec<usize> = ks.iter().copied().filter(|&k| k <= n).collect();
        ks.push(n);
        ks.dedup();
        for &k in &ks {
            for order in ORDERS {
                let want = cpu::top_k(data, k, order).unwrap();
                let at = format!("{what} n {n} k {k} {order:?}");
                for p in &mut self.per_thread {
                    let v = p.variant();
                    let limit = PerThreadTopK::max_k::<K>(gpu, v).unwrap();
                    match p.run(gpu, &d, k, order) {
                        Ok(got) => {
                            assert!(k <= limit, "{at}: {v:?} ran past its limit {limit}");
                            same(&got, &want, &format!("{at} {v:?}"));
                        }
                        Err(e) => {
                            let e = e.to_string();
                            assert!(k > limit, "{at}: {v:?}: {e}");
                            assert!(e.contains(&format!("limit of {limit}")), "{e}");
                        }
                    }
                }
                let got = self.bucket.run(gpu, &d, k, order).unwrap();
                same(&got, &want, &format!("{at} bucket select"));
            }
        }
    }
}

fn same<K: Key>(got: &TopKRows<K>, want: &TopKRows<K>, what: &str) {
    assert_eq!(got.rows, want.rows, "{what}: rows");
    let bits =
        |v: &[K]| -> Vec<Vec<u8>> { v.iter().map(|x| bytemuck::bytes_of(x).to_vec()).collect() };
    assert_eq!(bits(&got.keys), bits(&want.keys), "{what}: keys");
}

/// Sizes for `k`: 1, around `k`, around each kernel's tile, 2^21 + 17 (capped by
/// `TESSERA_TEST_MAX_N`).
fn sizes_for(k: usize) -> Vec<usize> {
    let mut v = vec![1, k.saturating_sub(1), k, k + 1];
    for t in [
        PerThreadTopK::tile::<f32>(PerThreadVariant::SharedHeap),
        PerThreadTopK::tile::<f32>(PerThreadVariant::Registers),
        BUCKET_TILE,
    ] {
        v.extend([t - 1, t, t + 1]);
    }
    v.extend([5 * BUCKET_TILE + 3, (1 << 21) + 17]);
    v.retain(|&n| n >= 1);
    v.sort_unstable();
    v.dedup();
    capped(&v)
}

/// The thesis' four distributions (Figures 4-10 and 4-13), every size of every `k`.
fn four_distributions(gpu: &Gpu) {
    let mut alg = Algorithms::new(gpu);
    for dist in Distribution::ALL {
        let mut done = Vec::new();
        for k in KS {
            for n in sizes_for(k) {
                if !done.contains(&n) {
                    done.push(n);
                    alg.check(gpu, &dist.f32s(n, n as u64), &KS, dist.name());
                }
            }
        }
    }
}

/// Keys of each type: uniform bits (both signs, NaNs and infinities for floats), keys in
/// `0..4` (ties at the k-th place) and all-equal keys.
fn every_key_type_and_ties(gpu: &Gpu) {
    fn run<K: Key>(gpu: &Gpu, from_bits: impl Fn(u64) -> K, name: &str) {
        let mut alg = Algorithms::new(gpu);
        let mut rng = StdRng::seed_from_u64(17);
        for n in capped(&[
            1,
            33,
            255,
            257,
            1025,
            2049,
            3 * BUCKET_TILE * 8 + 5,
            (1 << 21) + 17,
        ]) {
            let wide: Vec<K> = (0..n).map(|_| from_bits(rng.random())).collect();
            alg.check(gpu, &wide, &KS, &format!("{name} bits"));
            let few: Vec<K> = (0..n).map(|_| from_bits(rng.random_range(0..4))).collect();
            alg.check(gpu, &few, &KS, &format!("{name} 0..4"));
            let equal = vec![from_bits(3); n];
            alg.check(gpu, &equal, &KS, &format!("{name} all equal"));
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

fn nan_and_signed_zero(gpu: &Gpu) {
    let mut alg = Algorithms::new(gpu);
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
    alg.check(gpu, &data, &KS, "f32 specials");
    let data: Vec<f64> = (0..5000)
        .map(|i| f64::from(special[(i * 5 + i / 7) % 8]))
        .collect();
    alg.check(gpu, &data, &KS, "f64 specials");
    let zeros: Vec<f32> = (0..3000)
        .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
        .collect();
    alg.check(gpu, &zeros, &KS, "f32 signed zeros");
}

/// The bucket killer at a size where bucket select splits its bucket out of the keys and
/// finishes on the GPU, and all-equal keys, whose passes split on the rows alone.
fn bucket_killer_and_equal_keys_large(gpu: &Gpu) {
    let mut alg = Algorithms::new(gpu);
    for n in capped(&[(1 << 22) + 1]) {
        let data = Distribution::BucketKiller.f32s(n, 3);
        alg.check(gpu, &data, &[1, 4, 5, 32, 1000], "bucket killer");
        let equal = vec![1.0f32; n];
        alg.check(gpu, &equal, &[1, 33, 1024], "all 1.0");
    }
}

fn bad_k_and_empty_input(gpu: &Gpu) {
    let mut alg = Algorithms::new(gpu);
    let empty = gpu.upload::<f32>(&[]).unwrap();
    let three = gpu.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    for (d, k) in [(&empty, 1), (&three, 0), (&three, 4)] {
        for p in &mut alg.per_thread {
            let e = p
                .run(gpu, d, k, TopKOrder::Largest)
                .unwrap_err()
                .to_string();
            assert!(e.contains("k"), "{e}");
        }
        let e = alg
            .bucket
            .run(gpu, d, k, TopKOrder::Largest)
            .unwrap_err()
            .to_string();
        assert!(e.contains("k"), "{e}");
    }
    // Past the per-thread limits, before any work.
    let big = gpu.upload(&vec![1u32; 100_000]).unwrap();
    let regs = &mut alg.per_thread[1];
    let e = regs
        .run(gpu, &big, 33, TopKOrder::Largest)
        .unwrap_err()
        .to_string();
    assert!(e.contains("limit of 32"), "{e}");
    let limit = PerThreadTopK::max_k::<u32>(gpu, PerThreadVariant::SharedHeap).unwrap();
    let heap = &mut alg.per_thread[0];
    let e = heap
        .run(gpu, &big, limit + 1, TopKOrder::Largest)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("limit of {limit}")), "{e}");
    assert!(heap.run(gpu, &big, limit, TopKOrder::Largest).is_ok());
    let wide = PerThreadTopK::max_k::<f64>(gpu, PerThreadVariant::SharedHeap).unwrap();
    assert!(wide < limit, "f64 heap items are twice as large");
}

harness! {
    gpu: [
        four_distributions,
        every_key_type_and_ties,
        nan_and_signed_zero,
        bucket_killer_and_equal_keys_large,
        bad_k_and_empty_input,
    ],
}
