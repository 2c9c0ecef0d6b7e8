//! Criterion benchmarks of selection and projection at 2^24 items: the GPU operators (when a
//! GPU is present; skipped with a notice otherwise) and the CPU implementations.
use criterion::{Criterion, criterion_group, criterion_main};
use tessera::bench::ops::uniform_f32;
use tessera::ops::{self, Predicate, SelectVariant, Selection};
use tessera::{cpu, gpu_or_skip};

const N: usize = 1 << 24;

fn gpu_benches(c: &mut Criterion) {
    let Some(gpu) = gpu_or_skip("criterion GPU benchmarks") else {
        return;
    };
    let (x1, x2) = (uniform_f32(N, 1), uniform_f32(N, 2));
    let (d1, d2) = (gpu.upload(&x1).unwrap(), gpu.upload(&x2).unwrap());
    let mut sel = Selection::<f32>::new(&gpu, N).unwrap();
    for variant in [SelectVariant::Ordered, SelectVariant::Unordered] {
        c.bench_function(&format!("gpu select f32 s=0.5 {variant:?} 2^24"), |b| {
            b.iter(|| {
                sel.launch(&gpu, &d1, Predicate::lt(0.5), variant).unwrap();
                sel.finish(&gpu).unwrap()
            })
        });
    }
    let mut out = gpu.zeros::<f32>(N).unwrap();
    c.bench_function("gpu project sigmoid 2^24", |b| {
        b.iter(|| {
            ops::project_sigmoid_into(&gpu, &d1, &d2, 2.0, 3.0, &mut out).unwrap();
            gpu.synchronize().unwrap()
        })
    });
}

fn cpu_benches(c: &mut Criterion) {
    let (x1, x2) = (uniform_f32(N, 1), uniform_f32(N, 2));
    c.bench_function("cpu select f32 s=0.5 2^24", |b| {
        b.iter(|| cpu::select(&x1, Predicate::lt(0.5f32)).len())
    });
    c.bench_function("cpu project sigmoid 2^24", |b| {
        b.iter(|| cpu::project_sigmoid(&x1, &x2, 2.0, 3.0).unwrap().len())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = gpu_benches, cpu_benches
}
criterion_main!(benches);
