//! Arrow in and out (issue 23): round trips Arrow -> device -> Arrow for every column type on
//! awkward lengths, from sliced arrays and from buffers page-locked in place; every download
//! path; the operators fed from Arrow arrays and their results as record batches, against the
//! CPU implementations; nulls and wrong types refused before any work.
mod common;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array, PrimitiveArray,
    RecordBatch, UInt32Array,
};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tessera::arrow::ArrowItem;
use tessera::cpu;
use tessera::ops::{
    self, Agg, DeviceKeyColumn, DeviceValueColumn, HashTable, KeyColumn, Order, Predicate,
    TableOptions, TopKOrder, ValueColumn,
};
use tessera::runtime::DownloadPath;
use tessera::{Error, Gpu};

/// Lengths: empty, one, around a 2048-item tile, several tiles.
const SIZES: [usize; 6] = [0, 1, 2047, 2048, 2049, 100_003];

/// An item type with a random generator that hits its special values.
trait Item: ArrowItem + bytemuck::Pod {
    fn random(rng: &mut StdRng) -> Self;
}

macro_rules! int_item {
    ($($t:ty),*) => {$(
        impl Item for $t {
            fn random(rng: &mut StdRng) -> Self {
                match rng.random_range(0..8) {
                    0 => <$t>::MIN,
                    1 => <$t>::MAX,
                    _ => rng.random(),
                }
            }
        }
    )*};
}
int_item!(u32, i32, u64, i64);

macro_rules! float_item {
    ($($t:ty),*) => {$(
        impl Item for $t {
            fn random(rng: &mut StdRng) -> Self {
                match rng.random_range(0..10) {
                    0 => <$t>::NAN,
                    1 => -0.0,
                    2 => <$t>::NEG_INFINITY,
                    3 => <$t>::MIN_POSITIVE / 2.0,
                    _ => rng.random::<$t>() * 1e6 - 5e5,
                }
            }
        }
    )*};
}
float_item!(f32, f64);

/// Both arrays' values, bit for bit (NaN payloads included).
fn same_bits<T: Item>(a: &PrimitiveArray<T::Arrow>, b: &PrimitiveArray<T::Arrow>, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    assert_eq!(b.null_count(), 0, "{what}: nulls");
    let (a, b): (&[T], &[T]) = (a.values(), b.values());
    assert!(
        bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b),
        "{what}: values differ"
    );
}

fn round_trips<T: Item>(gpu: &Gpu, rng: &mut StdRng) {
    for n in common::capped(&SIZES) {
        let what = format!("{:?} n={n}", T::TYPE);
        let values: Vec<T> = (0..n).map(|_| T::random(rng)).collect();
        let array = PrimitiveArray::<T::Arrow>::from_iter_values(values.iter().copied());
        let col = gpu.upload_arrow(&array).unwrap();
        assert_eq!(col.len(), n);
        same_bits::<T>(
            &col.to_arrow(gpu).unwrap(),
            &array,
            &format!("{what} to_arrow"),
        );
        // Through `dyn Array`, as a record batch's column comes.
        let dynamic: ArrayRef = Arc::new(array.clone());
        let col = gpu.upload_arrow_dyn::<T>(dynamic.as_ref()).unwrap();
        same_bits::<T>(&col.to_arrow(gpu).unwrap(), &array, &format!("{what} dyn"));
        // A window of the buffer: the upload reads the slice's items only.
        if n > 8 {
            let window = array.slice(3, n - 8);
            let col = gpu.upload_arrow(&window).unwrap();
            same_bits::<T>(
                &col.to_arrow(gpu).unwrap(),
                &window,
                &format!("{what} slice"),
            );
        }
        // Page-locked in place: locked while the guard lives; a second guard over the same
        // pages cannot lock them again and uploads the ordinary way; both give the values.
        let pinned = gpu.pin_arrow(&array).unwrap();
        assert_eq!(pinned.is_locked(), n > 0, "{what}: pinned");
        let again = gpu.pin_arrow(&array).unwrap();
        assert!(!again.is_locked(), "{what}: locked twice");
        for p in [&pinned, &again] {
            let col = p.upload(gpu).unwrap();
            same_bits::<T>(
                &col.to_arrow(gpu).unwrap(),
                &array,
                &format!("{what} pinned"),
            );
        }
        drop(again);
        drop(pinned);
        // Unlocked on drop: it can be locked again.
        assert_eq!(
            gpu.pin_arrow(&array).unwrap().is_locked(),
            n > 0,
            "{what}: relock"
        );
    }
}

fn gpu_round_trips_every_type(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(23);
    round_trips::<u32>(gpu, &mut rng);
    round_trips::<i32>(gpu, &mut rng);
    round_trips::<u64>(gpu, &mut rng);
    round_trips::<i64>(gpu, &mut rng);
    round_trips::<f32>(gpu, &mut rng);
    round_trips::<f64>(gpu, &mut rng);
}

/// The record batch of a column `name` holding `values`.
fn one_column(name: &str, values: ArrayRef) -> RecordBatch {
    RecordBatch::try_from_iter([(name, values)]).unwrap()
}

fn gpu_operators_take_and_give_arrow(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2323);
    for n in common::capped(&SIZES) {
        let what = format!("n={n}");
        let y = Float32Array::from_iter_values((0..n).map(|_| rng.random::<f32>()));
        let dy = gpu.upload_arrow(&y).unwrap();

        let small = ops::select(gpu, &dy, Predicate::lt(0.25)).unwrap();
        let want = Float32Array::from(cpu::select(y.values(), Predicate::lt(0.25)));
        assert_eq!(small.to_arrow(gpu).unwrap(), want, "{what}: select");

        let sorted = ops::sort(gpu, &dy, Order::Descending).unwrap();
        let want = Float32Array::from(cpu::sort(y.values(), Order::Descending));
        assert_eq!(sorted.to_arrow(gpu).unwrap(), want, "{what}: sort");

        // Distinct keys, so that the row ids of the top k are one answer.
        let mut perm: Vec<u32> = (0..n as u32).collect();
        perm.shuffle(&mut rng);
        let keys = UInt32Array::from(perm);
        let dkeys = gpu.upload_arrow(&keys).unwrap();
        if n > 0 {
            let k = n.min(100);
            let got = ops::top_k(gpu, &dkeys, k, TopKOrder::Largest).unwrap();
            let want = cpu::top_k(keys.values(), k, TopKOrder::Largest).unwrap();
            assert_eq!(
                got.into_record_batch().unwrap(),
                want.into_record_batch().unwrap(),
                "{what}: top_k"
            );
        }

        // Group by a few keys, from Arrow arrays on the device and on the host.
        let g = UInt32Array::from_iter_values((0..n).map(|_| rng.random_range(0..1000u32)));
        let v = UInt32Array::from_iter_values((0..n).map(|_| rng.random::<u32>()));
        let (dg, dv) = (gpu.upload_arrow(&g).unwrap(), gpu.upload_arrow(&v).unwrap());
        let aggs = [Agg::Count, Agg::Sum(0), Agg::Max(0)];
        let names = ["g", "count", "sum", "max"];
        let got = ops::group_by(
            gpu,
            &[DeviceKeyColumn::U32(&dg)],
            &[DeviceValueColumn::U32(&dv)],
            &aggs,
        )
        .unwrap();
        let want = cpu::group_by(
            &[KeyColumn::from_arrow(&g).unwrap()],
            &[ValueColumn::from_arrow(&v).unwrap()],
            &aggs,
        )
        .unwrap();
        assert_eq!(
            got.into_record_batch(&names).unwrap(),
            want.into_record_batch(&names).unwrap(),
            "{what}: group_by"
        );

        // Join the probe keys `g` against a build side of 500 distinct keys.
        let build = UInt32Array::from_iter_values((0..500u32).map(|i| i * 2));
        let table = HashTable::build(
            gpu,
            &gpu.upload_arrow(&build).unwrap(),
            None,
            TableOptions::default(),
        )
        .unwrap();
        let pairs = ops::join(gpu, &table, &dg).unwrap();
        let cpu_table =
            cpu::CpuHashTable::build(build.values(), None, TableOptions::default()).unwrap();
        let (rows, payloads) = cpu::join(&cpu_table, g.values());
        let want = RecordBatch::try_from_iter([
            ("probe_row", Arc::new(UInt32Array::from(rows)) as ArrayRef),
            ("payload", Arc::new(UInt32Array::from(payloads)) as ArrayRef),
        ])
        .unwrap();
        assert_eq!(pairs.to_record_batch(gpu).unwrap(), want, "{what}: join");

        // The primary-key join of two permutations' halves.
        let a_keys = UInt32Array::from_iter_values((0..n as u32).step_by(2));
        let b_keys = UInt32Array::from_iter_values((0..n as u32).step_by(3));
        let a_vals = Int32Array::from_iter_values((0..a_keys.len() as i32).map(|i| -i));
        let b_vals = Float32Array::from_iter_values((0..b_keys.len()).map(|i| i as f32 / 2.0));
        let got = ops::pk_join(
            gpu,
            &gpu.upload_arrow(&a_keys).unwrap(),
            &gpu.upload_arrow(&a_vals).unwrap(),
            &gpu.upload_arrow(&b_keys).unwrap(),
            &gpu.upload_arrow(&b_vals).unwrap(),
        )
        .unwrap();
        let want = cpu::pk_join(
            a_keys.values(),
            a_vals.values(),
            b_keys.values(),
            b_vals.values(),
        )
        .unwrap();
        assert_eq!(
            got.to_rows(gpu).unwrap().into_record_batch().unwrap(),
            want.into_record_batch().unwrap(),
            "{what}: pk_join"
        );
    }
    // A column of a record batch, read as the type it is.
    let batch = one_column("x", Arc::new(Int64Array::from(vec![5, -3, 7])));
    let col = gpu
        .upload_arrow_dyn::<i64>(batch.column(0).as_ref())
        .unwrap();
    assert_eq!(col.to_vec(gpu).unwrap(), [5, -3, 7]);
}

/// The message of an invalid-argument error.
fn invalid(e: Error) -> String {
    match e {
        Error::InvalidArgument(m) => m,
        e => panic!("expected an invalid-argument error, got {e}"),
    }
}

fn gpu_nulls_and_wrong_types_are_refused(gpu: &Gpu) {
    let nulls = UInt32Array::from(vec![Some(1), None, Some(3), None]);
    let m = invalid(gpu.upload_arrow(&nulls).unwrap_err());
    assert!(
        m.contains("2 nulls of 4 rows") && m.contains("first at row 1"),
        "{m}"
    );
    let m = invalid(gpu.pin_arrow(&nulls).unwrap_err());
    assert!(m.contains("nulls"), "{m}");
    let wide = Int64Array::from(vec![1, 2]);
    let m = invalid(gpu.upload_arrow_dyn::<u32>(&wide).unwrap_err());
    assert!(
        m.contains("Int64") && m.contains("UInt32") && m.contains("cast"),
        "{m}"
    );
    // Nulls sliced away are no nulls.
    let col = gpu.upload_arrow(&nulls.slice(2, 1)).unwrap();
    assert_eq!(col.to_vec(gpu).unwrap(), [3]);
}

fn group_by_columns_read_arrow_in_place() {
    let u = UInt32Array::from(vec![4, 1, 4]);
    let i = Int32Array::from(vec![-1, 2]);
    let l = Int64Array::from(vec![1 << 40]);
    match KeyColumn::from_arrow(&u).unwrap() {
        KeyColumn::U32(s) => assert_eq!(s.as_ptr(), u.values().as_ptr()),
        k => panic!("{k:?}"),
    }
    assert!(matches!(
        KeyColumn::from_arrow(&i).unwrap(),
        KeyColumn::I32(&[-1, 2])
    ));
    assert!(matches!(
        KeyColumn::from_arrow(&l).unwrap(),
        KeyColumn::I64(&[0x100_0000_0000])
    ));
    let window = u.slice(1, 2);
    assert!(matches!(
        KeyColumn::from_arrow(&window).unwrap(),
        KeyColumn::U32(&[1, 4])
    ));
    let f = Float32Array::from(vec![0.5]);
    let d = Float64Array::from(vec![0.25]);
    assert!(matches!(
        ValueColumn::from_arrow(&u).unwrap(),
        ValueColumn::U32(_)
    ));
    assert!(matches!(
        ValueColumn::from_arrow(&i).unwrap(),
        ValueColumn::I32(_)
    ));
    assert!(matches!(
        ValueColumn::from_arrow(&f).unwrap(),
        ValueColumn::F32(&[0.5])
    ));
    assert!(matches!(
        ValueColumn::from_arrow(&d).unwrap(),
        ValueColumn::F64(&[0.25])
    ));

    let m = invalid(KeyColumn::from_arrow(&f).unwrap_err());
    assert!(
        m.contains("Float32") && m.contains("UInt32, Int32 or Int64"),
        "{m}"
    );
    let m = invalid(ValueColumn::from_arrow(&l).unwrap_err());
    assert!(m.contains("Int64") && m.contains("Float64"), "{m}");
    let nulls = Int32Array::from(vec![None, Some(1)]);
    let m = invalid(KeyColumn::from_arrow(&nulls).unwrap_err());
    assert!(
        m.contains("1 nulls of 2 rows") && m.contains("first at row 0"),
        "{m}"
    );
    assert!(ValueColumn::from_arrow(&nulls).is_err());
}

fn results_become_record_batches() {
    let g = Int32Array::from(vec![3, -1, 3, 3, -1]);
    let v = Float64Array::from(vec![1.0, 2.0, 4.0, f64::NAN, 0.5]);
    let aggs = [Agg::Count, Agg::Sum(0), Agg::Min(0), Agg::Mean(0)];
    let grouped = cpu::group_by(
        &[KeyColumn::from_arrow(&g).unwrap()],
        &[ValueColumn::from_arrow(&v).unwrap()],
        &aggs,
    )
    .unwrap();
    let m = invalid(grouped.clone().into_record_batch(&["g"]).unwrap_err());
    assert!(m.contains("1 names for 5 columns"), "{m}");
    let batch = grouped
        .into_record_batch(&["g", "n", "sum", "min", "mean"])
        .unwrap();
    let schema = batch.schema();
    let described: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("{}:{}:{}", f.name(), f.data_type(), f.is_nullable()))
        .collect();
    assert_eq!(
        described,
        [
            "g:Int32:false",
            "n:UInt64:false",
            "sum:Float64:false",
            "min:Float64:false",
            "mean:Float64:false"
        ]
    );
    let col = |i: usize| batch.column(i).as_any();
    assert_eq!(
        col(0).downcast_ref::<Int32Array>().unwrap().values(),
        &[-1, 3]
    );
    let n = col(1).downcast_ref::<arrow_array::UInt64Array>().unwrap();
    assert_eq!(n.values(), &[2, 3]);
    let min = col(3).downcast_ref::<Float64Array>().unwrap();
    assert_eq!(min.values(), &[0.5, 1.0]);

    let top = cpu::top_k(&[5u32, 9, 1, 7], 2, TopKOrder::Largest).unwrap();
    let batch = top.into_record_batch().unwrap();
    let want = RecordBatch::try_from_iter([
        ("key", Arc::new(UInt32Array::from(vec![9, 7])) as ArrayRef),
        ("row", Arc::new(UInt32Array::from(vec![1, 3])) as ArrayRef),
    ])
    .unwrap();
    assert_eq!(batch, want);

    let rows = cpu::pk_join(&[1u32, 2, 3], &[10i32, 20, 30], &[3u32, 1], &[0.5f32, 1.5]).unwrap();
    let batch = rows.into_record_batch().unwrap();
    assert_eq!(batch.schema().field(2).name(), "b");
    assert_eq!(
        batch
            .column(0)
            .as_any()
            .downcast_ref::<UInt32Array>()
            .unwrap()
            .values(),
        &[1, 3]
    );
    assert_eq!(
        batch
            .column(1)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap()
            .values(),
        &[10, 30]
    );
}

/// Every download path gives the column, across the staged path's chunks (16 MiB halves).
fn gpu_download_paths_agree(gpu: &Gpu) {
    let mut rng = StdRng::seed_from_u64(2324);
    for n in common::capped(&[0, 1, 4097, (16 << 20) / 8 * 3 + 5]) {
        let v: Vec<u64> = (0..n).map(|_| rng.random()).collect();
        let col = gpu.upload(&v).unwrap();
        let w: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let col32 = gpu.upload(&w).unwrap();
        for path in [
            DownloadPath::Pageable,
            DownloadPath::Prefault,
            DownloadPath::PrefaultLocked,
            DownloadPath::Staged,
        ] {
            assert_eq!(col.to_vec_with(gpu, path).unwrap(), v, "n={n} {path:?}");
            assert_eq!(
                col32.to_vec_with(gpu, path).unwrap(),
                w,
                "n={n} {path:?} u32"
            );
        }
    }
}

harness! {
    gpu: [
        gpu_round_trips_every_type,
        gpu_download_paths_agree,
        gpu_operators_take_and_give_arrow,
        gpu_nulls_and_wrong_types_are_refused,
    ],
    cpu: [
        group_by_columns_read_arrow_in_place,
        results_become_record_batches,
    ],
}
