//! Projection and the device-wide scan on the GPU against the CPU implementation.
mod common;
use common::*;
use tessera::{cpu, ops};

fn q1_linear_equals_cpu_exactly(gpu: &tessera::Gpu) {
    for (i, n) in sizes().into_iter().enumerate() {
        let (a, b) = (uniform_f32(n, i as u64), uniform_f32(n, 1000 + i as u64));
        let expected = cpu::project_linear(&a, &b, 2.0, -3.5).unwrap();
        let got = ops::project_linear(
            gpu,
            &gpu.upload(&a).unwrap(),
            &gpu.upload(&b).unwrap(),
            2.0,
            -3.5,
        )
        .unwrap();
        let got = got.to_vec(gpu).unwrap();
        assert_eq!(got.len(), n);
        assert!(
            got.iter()
                .zip(&expected)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "n={n}"
        );
    }
}

fn q2_sigmoid_close_to_cpu(gpu: &tessera::Gpu) {
    for (i, n) in sizes().into_iter().enumerate() {
        // Spread the argument over [-40, 40] to cover both tails.
        let a: Vec<f32> = uniform_f32(n, i as u64)
            .iter()
            .map(|x| x * 40.0 - 20.0)
            .collect();
        let b: Vec<f32> = uniform_f32(n, 77 + i as u64)
            .iter()
            .map(|x| x * 40.0 - 20.0)
            .collect();
        let expected = cpu::project_sigmoid(&a, &b, 0.5, 0.5).unwrap();
        let got = ops::project_sigmoid(
            gpu,
            &gpu.upload(&a).unwrap(),
            &gpu.upload(&b).unwrap(),
            0.5,
            0.5,
        )
        .unwrap();
        let got = got.to_vec(gpu).unwrap();
        let worst = got
            .iter()
            .zip(&expected)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(worst <= 1e-6, "n={n}: max abs error {worst}");
    }
}

fn projection_nan_and_infinities(gpu: &tessera::Gpu) {
    let a = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        88.0,
        -88.0,
        1e30,
    ];
    let b = [0.0, 0.0, 0.0, f32::NAN, 0.0, 0.0, -1e30];
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let lin = ops::project_linear(gpu, &da, &db, 1.0, 1.0)
        .unwrap()
        .to_vec(gpu)
        .unwrap();
    let cl = cpu::project_linear(&a, &b, 1.0, 1.0).unwrap();
    for (x, y) in lin.iter().zip(&cl) {
        assert!(
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            "{x} vs {y}"
        );
    }
    let sig = ops::project_sigmoid(gpu, &da, &db, 1.0, 1.0)
        .unwrap()
        .to_vec(gpu)
        .unwrap();
    let cs = cpu::project_sigmoid(&a, &b, 1.0, 1.0).unwrap();
    for (x, y) in sig.iter().zip(&cs) {
        assert!(
            (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-6,
            "{x} vs {y}"
        );
    }
}

fn projection_length_mismatch_is_an_error(gpu: &tessera::Gpu) {
    let (a, b) = (
        gpu.upload(&[1f32; 10]).unwrap(),
        gpu.upload(&[1f32; 9]).unwrap(),
    );
    let e = ops::project_linear(gpu, &a, &b, 1.0, 1.0).unwrap_err();
    assert!(e.to_string().contains("x2 has 9 items, expected 10"), "{e}");
    let mut out = gpu.zeros::<f32>(3).unwrap();
    let e = ops::project_sigmoid_into(gpu, &a, &a, 1.0, 1.0, &mut out).unwrap_err();
    assert!(e.to_string().contains("out has 3 items"), "{e}");
}

fn device_scan_matches_cpu(gpu: &tessera::Gpu) {
    for (i, n) in sizes().into_iter().enumerate() {
        let data: Vec<u32> = uniform_i32(n, i32::MAX, i as u64)
            .into_iter()
            .map(|x| x as u32)
            .collect();
        let (expected, total) = cpu::exclusive_scan(&data);
        let (got, gt) = ops::exclusive_scan(gpu, &gpu.upload(&data).unwrap()).unwrap();
        assert_eq!(got.to_vec(gpu).unwrap(), expected, "n={n}");
        assert_eq!(gt, total, "n={n} total");
    }
}

fn three_kernel_baseline_selects_the_same_items(gpu: &tessera::Gpu) {
    for n in capped(&[0, 1, 129, 100_003, 1 << 22]) {
        let data = uniform_f32(n, n as u64);
        let mut three = ops::ThreeKernelSelect::new(gpu, n).unwrap();
        for s in [0.0f32, 0.5, 1.0] {
            let p = ops::Predicate::lt(s);
            three.launch(gpu, &gpu.upload(&data).unwrap(), p).unwrap();
            let mut got = three.finish(gpu).unwrap();
            let mut expected = cpu::select(&data, p);
            got.sort_by(f32::total_cmp);
            expected.sort_by(f32::total_cmp);
            assert_eq!(got, expected, "n={n} s={s}");
        }
    }
}

fn bandwidth_probes_are_correct(gpu: &tessera::Gpu) {
    for n in capped(&[1, 4095, 4096, 4097, 1 << 20]) {
        let data: Vec<u32> = uniform_i32(n, i32::MAX, 5)
            .into_iter()
            .map(|x| x as u32)
            .collect();
        let d = gpu.upload(&data).unwrap();
        assert_eq!(
            ops::read_sum_u32(gpu, &d).unwrap(),
            cpu::sum_u32(&data),
            "sum n={n}"
        );
        let mut c = gpu.zeros::<u32>(n).unwrap();
        ops::copy_u32(gpu, &d, &mut c).unwrap();
        assert_eq!(c.to_vec(gpu).unwrap(), data, "copy n={n}");
    }
}

harness! {
    gpu: [
        q1_linear_equals_cpu_exactly,
        q2_sigmoid_close_to_cpu,
        projection_nan_and_infinities,
        projection_length_mismatch_is_an_error,
        device_scan_matches_cpu,
        three_kernel_baseline_selects_the_same_items,
        bandwidth_probes_are_correct,
    ],
}
