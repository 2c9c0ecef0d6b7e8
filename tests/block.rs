//! Block-wide functions exercised on their own: BlockPred (Set / Or / And), WarpCompact and its
//! survivor rounds, the tail queue, BlockAggregate (sum, min, max, count) for every item type,
//! on partial and full tiles.
mod common;
use common::*;
use tessera::ops::testing as t;

fn block_pred_combines_flags(gpu: &tessera::Gpu) {
    for &n in &[0usize, 1, 1023, 1024, 1025, 100_000] {
        let data = uniform_i32(n, 100, n as u64);
        let got = t::block_pred_i32(gpu, &data, 20, 80, 90).unwrap();
        let expected: Vec<u32> = data
            .iter()
            .map(|&x| (!(20..=80).contains(&x) && x != 90) as u32)
            .collect();
        assert_eq!(got, expected, "n={n}");
    }
}

fn aggregate<T>(gpu: &tessera::Gpu, data: &[T], add: impl Fn(T, T) -> T, zero: T)
where
    T: t::AggregateItem + Copy + PartialOrd + PartialEq + std::fmt::Debug,
{
    let (tile, out, counts) = t::block_aggregate(gpu, data).unwrap();
    for (b, chunk) in data.chunks(tile as usize).enumerate() {
        let sum = chunk.iter().fold(zero, |a, &x| add(a, x));
        let min = chunk
            .iter()
            .copied()
            .fold(chunk[0], |a, x| if x < a { x } else { a });
        let max = chunk
            .iter()
            .copied()
            .fold(chunk[0], |a, x| if x > a { x } else { a });
        let pos = chunk.iter().filter(|&&x| x > zero).count() as u32;
        assert_eq!(out[b * 3 + 1], min, "{:?} tile {b} min", T::TYPE);
        assert_eq!(out[b * 3 + 2], max, "{:?} tile {b} max", T::TYPE);
        assert_eq!(counts[b], pos, "{:?} tile {b} count", T::TYPE);
        assert_eq!(out[b * 3], sum, "{:?} tile {b} sum", T::TYPE);
    }
}

fn block_aggregate_every_type(gpu: &tessera::Gpu) {
    use tessera::DeviceItem as _;
    for &n in &[1usize, 1023, 1024, 1025, 50_001] {
        let base = uniform_i32(n, 2000, n as u64);
        aggregate(
            gpu,
            &base.iter().map(|&x| x - 1000).collect::<Vec<i32>>(),
            i32::wrapping_add,
            0,
        );
        aggregate(
            gpu,
            &base.iter().map(|&x| x as u32).collect::<Vec<u32>>(),
            u32::wrapping_add,
            0,
        );
        // Multiples of 1/4 below 2^11: float sums are exact in any order.
        aggregate(
            gpu,
            &base
                .iter()
                .map(|&x| (x - 1000) as f32 * 0.25)
                .collect::<Vec<f32>>(),
            |a, b| a + b,
            0.0,
        );
        aggregate(
            gpu,
            &base
                .iter()
                .map(|&x| ((x - 1000) as i64) << 30)
                .collect::<Vec<i64>>(),
            i64::wrapping_add,
            0,
        );
        aggregate(
            gpu,
            &base.iter().map(|&x| (x as u64) << 30).collect::<Vec<u64>>(),
            u64::wrapping_add,
            0,
        );
        aggregate(
            gpu,
            &base
                .iter()
                .map(|&x| (x - 1000) as f64 * 0.5)
                .collect::<Vec<f64>>(),
            |a, b| a + b,
            0.0,
        );
    }
    let _ = f32::TYPE;
}

fn warp_compact_visits_each_surviving_row_once_with_its_code(gpu: &tessera::Gpu) {
    let rows = t::block_compact_tile_rows();
    for &n in &[0usize, 1, 31, rows - 1, rows, rows + 1, 100_001] {
        // None, survivors in a few lanes of a warp, sparse (one survivor round, its first
        // slots only), one round of every slot, about one in five (two rounds per warp at
        // most), most, and all rows flagged; each alone and in runs of four rows, which lie
        // in one lane (as an order's line items do).
        for (&per_mille, run) in [0u32, 2, 10, 100, 200, 900, 1000]
            .iter()
            .flat_map(|p| [(p, 1), (p, 4)])
        {
            // Flagged rows hold 1..=15: the kernel adds each survivor's code (its low four
            // bits, kept beside its offset), 16 for its flag, then 256 for its flag and 4096
            // times a two-bit code (1 plus its low bit) compacted sparsely, to its row.
            let draws = uniform_i32(n, 1000, n as u64 + u64::from(per_mille) + run as u64);
            let input: Vec<u32> = (0..n)
                .map(|i| draws[i / run * run] as u32)
                .map(|x| (x < per_mille) as u32 * (1 + x % 15))
                .collect();
            let (visits, counts) = t::block_compact(gpu, &input).unwrap();
            let want: Vec<u32> = input
                .iter()
                .map(|&x| x + (x != 0) as u32 * (272 + ((1 + (x & 1)) << 12)))
                .collect();
            assert_eq!(
                visits, want,
                "n={n} per mille={per_mille} run={run}: visits"
            );
            let mut expected = vec![0u32; counts.len()];
            for (i, &f) in input.iter().enumerate() {
                let warp = t::block_compact_warp(i % rows);
                expected[i / rows * t::BLOCK_COMPACT_WARPS + warp] += (f != 0) as u32 * 0x1_0001;
            }
            assert_eq!(
                counts, expected,
                "n={n} per mille={per_mille} run={run}: warp counts"
            );
        }
    }
}

/// `n` rows, about `per_mille` of them flagged: a flagged row holds a value in `1..=max`, the
/// others 0 (draws of `seed`).
fn flagged_rows(n: usize, per_mille: u32, seed: u64, max: u32) -> Vec<u32> {
    uniform_i32(n, 1000, seed)
        .iter()
        .map(|&x| (x < per_mille as i32) as u32 * (1 + x as u32 % max))
        .collect()
}

fn tail_queue_runs_each_pushed_row_once_in_full_rounds(gpu: &tessera::Gpu) {
    let warp_rows = t::TAIL_QUEUE_WARP_ROWS;
    for &n in &[
        0usize,
        1,
        31,
        64,
        warp_rows - 1,
        warp_rows,
        warp_rows + 1,
        100_001,
    ] {
        // None, a few rows (a partial round at the flush only), about one round in a few
        // pushes, a round in every push, and every row (each push fills one round and more).
        for per_mille in [0u32, 10, 200, 500, 1000] {
            let input = flagged_rows(n, per_mille, n as u64 * 7 + u64::from(per_mille), 255);
            let (visits, bad) = t::block_tail_queue(gpu, &input).unwrap();
            let want: Vec<u32> = input.iter().map(|&x| x | x << 8).collect();
            assert_eq!(visits, want, "n={n} per mille={per_mille}: visits");
            assert_eq!(bad, 0, "n={n} per mille={per_mille}: round slots live");
        }
    }
}

fn queued_survivors_run_each_row_once_across_tiles(gpu: &tessera::Gpu) {
    let (tile, block) = (t::queued_tile_rows(), t::queued_block_rows());
    for &n in &[
        0usize,
        1,
        tile - 1,
        tile,
        tile + 1,
        block - 1,
        block,
        block + 1,
        3 * block + 7,
        100_001,
    ] {
        // None, a few rows per warp tile (a round every few tiles, the rest flushed), about
        // one round a tile, more than a round a tile, and every row.
        for per_mille in [0u32, 2, 20, 100, 500, 1000] {
            let input = flagged_rows(n, per_mille, n as u64 * 13 + u64::from(per_mille), 15);
            let (visits, bad) = t::block_queued_survivors(gpu, &input).unwrap();
            assert_eq!(visits, input, "n={n} per mille={per_mille}: visits");
            assert_eq!(bad, 0, "n={n} per mille={per_mille}: round slots live");
        }
    }
}

harness! {
    gpu: [
        block_pred_combines_flags,
        block_aggregate_every_type,
        warp_compact_visits_each_surviving_row_once_with_its_code,
        tail_queue_runs_each_pushed_row_once_in_full_rounds,
        queued_survivors_run_each_row_once_across_tiles,
    ],
}
