//! Selection on the GPU against the CPU implementation.
mod common;
use common::*;
use tessera::cpu;
use tessera::ops::{self, Predicate, SelectVariant, Selection};

const VARIANTS: [SelectVariant; 3] = [
    SelectVariant::Ordered,
    SelectVariant::Predicated,
    SelectVariant::Unordered,
];

fn check<T: ops::SelectItem + Copy + std::fmt::Debug>(
    gpu: &tessera::Gpu,
    data: &[T],
    p: Predicate<T>,
    what: &str,
) {
    let expected = cpu::select(data, p);
    let d = gpu.upload(data).unwrap();
    for v in VARIANTS {
        let got = ops::select_with(gpu, &d, p, v).unwrap();
        assert_selected(&got.to_vec(gpu).unwrap(), &expected, v, what);
    }
}

/// `got` holds the items of `want` bit for bit: in order, or in any order for the unordered
/// variant.
fn assert_selected<T: bytemuck::Pod>(got: &[T], want: &[T], v: SelectVariant, what: &str) {
    assert_eq!(got.len(), want.len(), "{what} {v:?}: count");
    if v == SelectVariant::Unordered {
        let key = |x: &T| bytemuck::bytes_of(x).to_vec();
        let (mut a, mut b) = (got.to_vec(), want.to_vec());
        a.sort_by_key(key);
        b.sort_by_key(key);
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| bytemuck::bytes_of(x) == bytemuck::bytes_of(y)),
            "{what} {v:?}: items"
        );
    } else {
        assert!(
            got.iter()
                .zip(want)
                .all(|(x, y)| bytemuck::bytes_of(x) == bytemuck::bytes_of(y)),
            "{what} {v:?}: items or order"
        );
    }
}

fn q3_f32_lt_all_sizes_and_selectivities(gpu: &tessera::Gpu) {
    for (i, n) in sizes().into_iter().enumerate() {
        let data = uniform_f32(n, i as u64);
        for s in [0.0f32, 0.01, 0.5, 1.0] {
            check(gpu, &data, Predicate::lt(s), &format!("n={n} s={s}"));
        }
    }
}

fn ordered_over_many_tiles(gpu: &tessera::Gpu) {
    // Thousands of tiles: look-backs walk several windows and wait for late predecessors.
    let mut list = sizes();
    list.extend(capped(&[300 * TILE + 5, 2000 * TILE - 1]));
    let mut sel = Selection::<f32>::new(gpu, *list.iter().max().unwrap()).unwrap();
    for (i, n) in list.into_iter().enumerate() {
        let data = uniform_f32(n, 100 + i as u64);
        let d = gpu.upload(&data).unwrap();
        for s in [0.0f32, 0.3, 1.0] {
            let p = Predicate::lt(s);
            sel.launch(gpu, &d, p, SelectVariant::Ordered).unwrap();
            let count = sel.finish(gpu).unwrap();
            let want = cpu::select(&data, p);
            assert_eq!(count, want.len(), "n={n} s={s}: count");
            let got = sel.output().to_vec(gpu).unwrap();
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "n={n} s={s}: items or order"
            );
        }
    }
}

fn q0_i32_gt_all_sizes_and_selectivities(gpu: &tessera::Gpu) {
    for (i, n) in sizes().into_iter().enumerate() {
        let data = uniform_i32(n, 1000, 100 + i as u64);
        // y in [0, 1000): y > v selects (999 - v) / 1000.
        for v in [999, 989, 499, -1] {
            check(gpu, &data, Predicate::gt(v), &format!("n={n} v={v}"));
        }
    }
}

fn every_item_type_and_comparison(gpu: &tessera::Gpu) {
    fn run<T: ops::SelectItem + Copy + std::fmt::Debug>(gpu: &tessera::Gpu, f: impl Fn(i32) -> T) {
        for &n in &[1usize, 1000, TILE + 1, 100_003] {
            let data: Vec<T> = uniform_i32(n, 100, n as u64).into_iter().map(&f).collect();
            for p in [
                Predicate::lt(f(30)),
                Predicate::le(f(30)),
                Predicate::gt(f(70)),
                Predicate::ge(f(70)),
                Predicate::eq(f(5)),
                Predicate::ne(f(5)),
                Predicate::between(f(20), f(40)),
            ] {
                check(gpu, &data, p, &format!("{:?} n={n} {:?}", T::TYPE, p.op));
            }
        }
    }
    run::<i32>(gpu, |x| x - 50);
    run::<u32>(gpu, |x| x as u32);
    run::<f32>(gpu, |x| x as f32 * 0.5);
    run::<i64>(gpu, |x| (x as i64 - 50) << 33);
    run::<u64>(gpu, |x| (x as u64) << 33);
    run::<f64>(gpu, |x| x as f64 * 0.25);
}

fn nan_is_never_selected_by_ordered_comparisons(gpu: &tessera::Gpu) {
    let data: Vec<f32> = (0..5000)
        .map(|i| if i % 3 == 0 { f32::NAN } else { i as f32 })
        .collect();
    check(gpu, &data, Predicate::lt(2500.0), "nan lt");
    check(gpu, &data, Predicate::ge(0.0), "nan ge");
    check(gpu, &data, Predicate::ne(7.0), "nan ne");
    let d = gpu.upload(&data).unwrap();
    let lt = ops::select(gpu, &d, Predicate::lt(f32::INFINITY))
        .unwrap()
        .to_vec(gpu)
        .unwrap();
    assert!(lt.iter().all(|x| !x.is_nan()));
    let ne = ops::select(gpu, &d, Predicate::ne(f32::NAN)).unwrap();
    assert_eq!(ne.len(), data.len(), "everything is != NaN");
}

fn two_predicates(gpu: &tessera::Gpu) {
    for (i, n) in sizes().into_iter().enumerate() {
        let x = uniform_i32(n, 1000, 7 + i as u64);
        let y = uniform_i32(n, 1000, 70 + i as u64);
        for (w, v) in [(499, 499), (989, 0), (-1, -1), (999, 499)] {
            let (px, py) = (Predicate::gt(w), Predicate::gt(v));
            let expected = cpu::select_where2(&x, px, &y, py).unwrap();
            let (dx, dy) = (gpu.upload(&x).unwrap(), gpu.upload(&y).unwrap());
            let got = ops::select_where2(gpu, &dx, px, &dy, py)
                .unwrap()
                .to_vec(gpu)
                .unwrap();
            assert_eq!(got, expected, "n={n} w={w} v={v}");
        }
        let xf = uniform_f32(n, 9);
        let yf = uniform_f32(n, 10);
        let (px, py) = (Predicate::lt(0.3f32), Predicate::gt(0.6f32));
        let expected = cpu::select_where2(&xf, px, &yf, py).unwrap();
        let got = ops::select_where2(
            gpu,
            &gpu.upload(&xf).unwrap(),
            px,
            &gpu.upload(&yf).unwrap(),
            py,
        )
        .unwrap();
        assert_eq!(got.to_vec(gpu).unwrap(), expected, "f32 n={n}");
    }
}

fn reused_buffers_and_bad_input(gpu: &tessera::Gpu) {
    let mut sel = Selection::<f32>::new(gpu, 10_000).unwrap();
    // Every variant after every other on the same state: ordered launches reuse status words
    // that earlier launches left (look-back epochs), unordered ones need a zero cursor.
    for (n, s) in [
        (10_000, 0.7f32),
        (3, 1.0),
        (0, 1.0),
        (9_999, 0.2),
        (10_000, 0.0),
    ] {
        let data = uniform_f32(n, n as u64);
        let want = cpu::select(&data, Predicate::lt(s));
        let d = gpu.upload(&data).unwrap();
        for v in VARIANTS.into_iter().chain(VARIANTS) {
            sel.launch(gpu, &d, Predicate::lt(s), v).unwrap();
            let k = sel.finish(gpu).unwrap();
            let got = sel.output().to_vec(gpu).unwrap();
            assert_eq!(k, got.len());
            assert_selected(&got, &want, v, &format!("reuse n={n}"));
        }
    }
    let big = gpu.upload(&uniform_f32(10_001, 1)).unwrap();
    let e = sel
        .launch(gpu, &big, Predicate::lt(0.5), SelectVariant::Ordered)
        .unwrap_err();
    assert!(e.to_string().contains("10001"), "{e}");
    let (a, b) = (
        gpu.upload(&[1i32, 2, 3]).unwrap(),
        gpu.upload(&[1i32, 2]).unwrap(),
    );
    let e = ops::select_where2(gpu, &a, Predicate::gt(0), &b, Predicate::gt(0)).unwrap_err();
    assert!(matches!(e, tessera::Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("has 2 items, expected 3"), "{e}");
}

fn look_back_epochs_wrap_around(gpu: &tessera::Gpu) {
    let (big, small) = (50 * TILE + 7, 3 * TILE + 1);
    let mut sel = Selection::<f32>::new(gpu, big).unwrap();
    let data = uniform_f32(big, 5);
    let d_big = gpu.upload(&data).unwrap();
    let d_small = gpu.upload(&data[..small]).unwrap();
    let run = |sel: &mut Selection<f32>, d: &tessera::DeviceColumn<f32>, s: f32, what: &str| {
        let p = Predicate::lt(s);
        sel.launch(gpu, d, p, SelectVariant::Predicated).unwrap();
        sel.finish(gpu).unwrap();
        let got = sel.output().to_vec(gpu).unwrap();
        assert_eq!(got, cpu::select(&data[..d.len()], p), "{what}");
    };
    // The first launch zeroes the state; the next ones take the last epochs, then the state
    // is zeroed again, all of it, and epochs restart. Selectivities differ so that a stale
    // status word read as current would shift the output.
    run(&mut sel, &d_big, 0.9, "first launch");
    sel.set_epoch(ops::SELECT_MAX_EPOCH - 2);
    run(&mut sel, &d_big, 0.1, "epoch MAX - 1 over the big input");
    run(&mut sel, &d_small, 0.6, "epoch MAX over the small input");
    run(&mut sel, &d_small, 0.3, "epoch 0 after the wrap");
    // Back to the epoch the big input's words were left with: only zeroing all of the state
    // at the wrap keeps them from reading as published.
    sel.set_epoch(ops::SELECT_MAX_EPOCH - 2);
    run(
        &mut sel,
        &d_big,
        0.8,
        "epoch MAX - 1 again over the big input",
    );
}

harness! {
    gpu: [
        q3_f32_lt_all_sizes_and_selectivities,
        ordered_over_many_tiles,
        q0_i32_gt_all_sizes_and_selectivities,
        every_item_type_and_comparison,
        nan_is_never_selected_by_ordered_comparisons,
        two_predicates,
        reused_buffers_and_bad_input,
        look_back_epochs_wrap_around,
    ],
}
