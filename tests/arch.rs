//! The device layer, each function exercised by a kernel and checked on the host.
mod common;
use common::*;
use tessera::ops::testing as t;

fn thread_block_grid_lane_warp_indices(gpu: &tessera::Gpu) {
    let grid = 5;
    let (nt, v) = t::arch_ids(gpu, grid).unwrap();
    for g in 0..(grid * nt) as usize {
        let r = &v[g * t::IDS_PER_THREAD..][..t::IDS_PER_THREAD];
        let (tid, bid) = (g as u32 % nt, g as u32 / nt);
        let lane = tid % 32;
        assert_eq!(
            r,
            [
                tid,
                bid,
                nt,
                grid,
                lane,
                tid / 32,
                g as u32,
                (1u32 << lane) - 1
            ],
            "thread {g}"
        );
    }
}

fn warp_shuffles_votes_popc(gpu: &tessera::Gpu) {
    let mut input = uniform_i32(256, i32::MAX, 3)
        .into_iter()
        .map(|x| x as u32)
        .collect::<Vec<_>>();
    input[40] = 12345; // warp 1 has a 12345; warp 3 is all non-zero, warp 2 has a zero
    input[70] = 0;
    let out = t::arch_warp(gpu, &input).unwrap();
    for g in 0..input.len() {
        let (w, lane) = (g / 32 * 32, (g % 32) as u32);
        let at = |l: u32| input[w + l as usize];
        let ballot = (0..32)
            .filter(|&l| at(l) & 1 == 1)
            .fold(0u32, |m, l| m | 1 << l);
        let any = (0..32).any(|l| at(l) == 12345) as u32;
        let all = (0..32).all(|l| at(l) != 0) as u32;
        let wx = ((at(lane ^ 1) as u64) << 32) | (lane ^ 1) as u64;
        let incl = (0..=lane).map(|l| at(l) & 0xff).sum::<u32>();
        let peers = (0..32)
            .filter(|&l| at(l) & 7 == at(lane) & 7)
            .fold(0u32, |m, l| m | 1 << l);
        let expected = [
            at(5),
            if lane >= 3 { at(lane - 3) } else { at(lane) },
            if lane + 3 < 32 {
                at(lane + 3)
            } else {
                at(lane)
            },
            at(lane ^ 6),
            ballot,
            any,
            all,
            at(lane).count_ones(),
            (at(31 - lane) as f32).to_bits(),
            wx as u32,
            (wx >> 32) as u32,
            incl,
            peers,
            peers,
        ];
        assert_eq!(
            out[g * t::WARP_PER_THREAD..][..t::WARP_PER_THREAD],
            expected,
            "thread {g}"
        );
    }
}

fn atomics_on_global_and_shared_memory(gpu: &tessera::Gpu) {
    let blocks = 6;
    let input: Vec<u32> = uniform_i32(256 * blocks, 1 << 12, 11)
        .into_iter()
        .map(|x| x as u32 + 1)
        .collect();
    let mut init = [0u64; t::ATOMIC_SLOTS];
    init[1] = u32::MAX as u64;
    init[4] = i32::MAX as u32 as u64;
    init[5] = i32::MIN as u32 as u64;
    init[7] = u64::MAX;
    init[10] = i64::MAX as u64;
    init[11] = i64::MIN as u64;
    init[13] = f32::INFINITY.to_bits() as u64;
    init[14] = f32::NEG_INFINITY.to_bits() as u64;
    init[16] = f64::INFINITY.to_bits();
    init[17] = f64::NEG_INFINITY.to_bits();
    init[19] = u64::MAX;
    let (global, shared) = t::arch_atomics(gpu, &input, &init).unwrap();
    let check = |r: &[u64], v: &[u32], what: &str| {
        let lo = |i: usize| r[i] as u32;
        let vi = |x: u32| x as i32 - 1000;
        assert_eq!(
            lo(0),
            v.iter().fold(0u32, |a, &x| a.wrapping_add(x)),
            "{what} u32 add"
        );
        assert_eq!(lo(1), *v.iter().min().unwrap(), "{what} u32 min");
        assert_eq!(lo(2), *v.iter().max().unwrap(), "{what} u32 max");
        assert_eq!(
            lo(3) as i32,
            v.iter().map(|&x| vi(x)).sum::<i32>(),
            "{what} i32 add"
        );
        assert_eq!(
            lo(4) as i32,
            v.iter().map(|&x| vi(x)).min().unwrap(),
            "{what} i32 min"
        );
        assert_eq!(
            lo(5) as i32,
            v.iter().map(|&x| vi(x)).max().unwrap(),
            "{what} i32 max"
        );
        assert_eq!(
            r[6],
            v.iter().map(|&x| (x as u64) << 20).sum::<u64>(),
            "{what} u64 add"
        );
        assert_eq!(
            r[7],
            v.iter().map(|&x| (x as u64) << 20).min().unwrap(),
            "{what} u64 min"
        );
        assert_eq!(
            r[8],
            v.iter().map(|&x| (x as u64) << 20).max().unwrap(),
            "{what} u64 max"
        );
        assert_eq!(
            r[9] as i64,
            v.iter().map(|&x| -(x as i64) << 20).sum::<i64>(),
            "{what} i64 add"
        );
        assert_eq!(
            r[10] as i64,
            v.iter().map(|&x| -(x as i64) << 20).min().unwrap(),
            "{what} i64 min"
        );
        assert_eq!(
            r[11] as i64,
            v.iter().map(|&x| -(x as i64) << 20).max().unwrap(),
            "{what} i64 max"
        );
        // Halves and quarters of integers below 2^13 add up exactly in any order.
        assert_eq!(
            f32::from_bits(lo(12)),
            v.iter().map(|&x| x as f32 * 0.5).sum::<f32>(),
            "{what} f32 add"
        );
        assert_eq!(
            f32::from_bits(lo(13)),
            *v.iter().min().unwrap() as f32 * 0.5,
            "{what} f32 min"
        );
        assert_eq!(
            f32::from_bits(lo(14)),
            *v.iter().max().unwrap() as f32 * 0.5,
            "{what} f32 max"
        );
        assert_eq!(
            f64::from_bits(r[15]),
            v.iter().map(|&x| x as f64 * 0.25).sum::<f64>(),
            "{what} f64 add"
        );
        assert_eq!(
            f64::from_bits(r[16]),
            *v.iter().min().unwrap() as f64 * 0.25,
            "{what} f64 min"
        );
        assert_eq!(
            f64::from_bits(r[17]),
            *v.iter().max().unwrap() as f64 * 0.25,
            "{what} f64 max"
        );
        assert_eq!(lo(18) as usize, v.len(), "{what} CAS increments");
        assert!(
            v.iter().any(|&x| x as u64 == r[19]),
            "{what} exch leaves one thread's value"
        );
    };
    check(&global, &input, "global");
    for b in 0..blocks {
        check(
            &shared[b * t::ATOMIC_SLOTS..][..t::ATOMIC_SLOTS],
            &input[b * 256..][..256],
            &format!("shared block {b}"),
        );
    }
}

fn static_and_dynamic_shared_memory(gpu: &tessera::Gpu) {
    let input: Vec<u32> = (0..256 * 3).map(|i| i * 7 + 1).collect();
    let (rev, rot) = t::arch_shared(gpu, &input).unwrap();
    for (i, (&r, &o)) in rev.iter().zip(&rot).enumerate() {
        let (b, tid) = (i / 256 * 256, i % 256);
        assert_eq!(r, input[b + 255 - tid], "reverse {i}");
        assert_eq!(o, input[b + (tid + 1) % 256], "rotate {i}");
    }
}

fn vector_loads_and_stores(gpu: &tessera::Gpu) {
    let threads = 256;
    let a: Vec<u32> = (0..threads * 4).map(|i| i as u32 ^ 0xdead_beef).collect();
    let b: Vec<u64> = (0..threads * 2).map(|i| (i as u64) << 40 | 7).collect();
    let c: Vec<u32> = (0..threads * 2).map(|i| i as u32 * 3).collect();
    let (oa, ob, oc) = t::arch_vector(gpu, &a, &b, &c).unwrap();
    assert_eq!((oa, ob, oc), (a, b, c));
}

fn fences_order_the_last_block_reduction(gpu: &tessera::Gpu) {
    for n in capped(&[1, 511, 512, 513, 1 << 20, (1 << 22) + 9]) {
        let data: Vec<u32> = uniform_i32(n, i32::MAX, n as u64)
            .into_iter()
            .map(|x| x as u32)
            .collect();
        assert_eq!(
            t::arch_fence_reduce(gpu, &data).unwrap(),
            tessera::cpu::sum_u32(&data),
            "n={n}"
        );
    }
}

fn exp_and_sigmoid(gpu: &tessera::Gpu) {
    let xs: Vec<f32> = (-8000..=8000)
        .map(|i| i as f32 * 0.011)
        .chain([0.0, -0.0, 88.0, -87.0, 100.0, -100.0])
        .collect();
    let (e, s) = t::arch_math(gpu, &xs).unwrap();
    for ((&x, &ge), &gs) in xs.iter().zip(&e).zip(&s) {
        let (re, rs) = (x.exp(), 1.0 / (1.0 + (-x).exp()));
        if re.is_finite() && re > 1e-30 {
            assert!(
                ((ge - re) / re).abs() < 4e-6,
                "exp({x}) = {ge}, expected {re}"
            );
        }
        assert!((gs - rs).abs() < 1e-6, "sigmoid({x}) = {gs}, expected {rs}");
    }
}

/// The kernels came from the binary's cubin where it has one for this GPU: a driver refusing
/// it falls back to the PTX (and its JIT) without an error, so only this says so. Every family
/// loads as the core family did (a family's cubin missing where the others are would be a
/// build that failed to assemble it).
fn kernels_load_from_the_cubin_where_built(gpu: &tessera::Gpu) {
    println!("kernels: {} ({})", gpu.kernel_code(), gpu.arch());
    if let tessera::KernelCode::Ptx { why } = gpu.kernel_code() {
        assert!(
            !why.contains("refused"),
            "{why}: the cubin should load on a driver as new as the ptxas that assembled it"
        );
    }
    let fresh = tessera::Gpu::new().unwrap();
    let families = fresh.kernel_families();
    assert_eq!(families[0].0, "core");
    assert!(
        families[0].1.is_some(),
        "the core family loads when a Gpu opens"
    );
    assert!(
        families[1..].iter().all(|f| f.1.is_none()),
        "the other families load at their first launch: {families:?}"
    );
    let started = std::time::Instant::now();
    fresh.load_all_kernels().unwrap();
    println!("the other families loaded in {:?}", started.elapsed());
    for (name, code) in fresh.kernel_families() {
        assert_eq!(code.as_ref(), Some(gpu.kernel_code()), "family {name}");
    }
}

harness! {
    gpu: [
        kernels_load_from_the_cubin_where_built,
        thread_block_grid_lane_warp_indices,
        warp_shuffles_votes_popc,
        atomics_on_global_and_shared_memory,
        static_and_dynamic_shared_memory,
        vector_loads_and_stores,
        fences_order_the_last_block_reduction,
        exp_and_sigmoid,
    ],
}
