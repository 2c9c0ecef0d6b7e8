//! The primary-key join figures (seed 002): sample-sort join against the hash join.
//!
//! Data: A and B each hold N distinct `u32` keys, the first N values of two independent random
//! permutations of the shared key space `0 .. 5N/4` (so about 80% of the keys match: N^2 / M
//! expected matches), with `u32` payloads. Sizes: the seed's 10^6 x 10^6, then 10^7, 10^8 and
//! the largest N whose buffers fit the GPU's free memory (and `2N < 2^32`, the join's row
//! limit). Each join is timed end to end (host-driven levels included) with CUDA events, median
//! of the repetitions after one warm-up; 10^8 also gets the per-step breakdown.
use rayon::prelude::*;

use super::Record;
use tessera_host::ops::{self, HashTable, PkJoin, PkJoinSteps, PkStep, TableOptions};
use tessera_host::runtime::{DeviceColumn, Gpu, MAX_COLUMN_LEN};
use tessera_host::{Error, Result};

const EXPERIMENT: &str = "pkjoin";
/// Device bytes per N (both sides) at the peak: inputs 16, the sort's two pair arrays 32,
/// split counts about 4, output 12.
const BYTES_PER_ROW: u64 = 64;

/// Words per slot of the comparison's hash table (key and payload).
const HASH_WORDS_PER_SLOT: u64 = 2;

/// Whether the hash join's table for `n` build rows (default fill) fits one device column, so
/// both joins run at every size.
fn hash_table_fits(n: u64) -> bool {
    tessera_kernels::hash::capacity_for(n, TableOptions::default().fill)
        .is_some_and(|slots| slots as u64 * HASH_WORDS_PER_SLOT <= MAX_COLUMN_LEN as u64)
}

/// A bijection of `0 .. 2^bits` (multiply by an odd constant and xor-shift, three rounds).
fn mix(mut x: u64, bits: u32, seed: u64) -> u64 {
    let mask = (1u64 << bits) - 1;
    for r in 0..3u64 {
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15 ^ (seed.wrapping_add(r) << 1) | 1) & mask;
        x ^= x >> (bits / 2 + 1);
    }
    x
}

/// The first `n` values of a random permutation of `0 .. space` (cycle walking over a
/// bijection of the next power of two), generated in parallel.
pub fn permutation_prefix(n: usize, space: u64, seed: u64) -> Vec<u32> {
    assert!(n as u64 <= space && space <= 1 << 32);
    let bits = 64 - (space - 1).max(1).leading_zeros();
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let mut x = mix(i, bits, seed);
            while x >= space {
                x = mix(x, bits, seed);
            }
            x as u32
        })
        .collect()
}

/// Bytes the sample-sort join moves for `n = 2N` rows, `levels` levels and `m` matches:
/// level 1 reads the keys (4n) and writes tile-sorted pairs (8n), the partition reads keys
/// (4n), the scatter moves pairs (8n + 8n); each further level adds a tile sort and the same
/// partition and scatter; the bucket sort and the join read pairs again; the join gathers two
/// payloads and writes three columns per match. Split counts are ignored.
fn sample_sort_bytes(n: f64, levels: u32, m: f64) -> (f64, f64) {
    let extra = levels.saturating_sub(1) as f64;
    let read = n * (4.0 + 4.0 + 8.0) + extra * n * (8.0 + 4.0 + 8.0) + 8.0 * n + 8.0 * n + 8.0 * m;
    let written = n * (8.0 + 8.0) + extra * n * 16.0 + 8.0 * n + 12.0 * m;
    (read, written)
}

/// Bytes of the hash join (build on A, probe with B, table not cache-resident): the build
/// reads keys and payloads and dirties one 32-byte sector per row; the probe reads the keys
/// and one sector per row and writes a (row, payload) pair per match.
fn hash_join_bytes(n_build: f64, n_probe: f64, m: f64) -> (f64, f64) {
    let read = 8.0 * n_build + 32.0 * n_build + 4.0 * n_probe + 32.0 * n_probe;
    let written = 32.0 * n_build + 8.0 * m;
    (read, written)
}

fn label(n: usize) -> String {
    let e = (n as f64).log10();
    if (e - e.round()).abs() < 1e-9 {
        format!("N=1e{}", e.round())
    } else {
        format!("N={:.2}e9", n as f64 / 1e9)
    }
}

/// Runs the experiment: sample-sort join and hash join at 10^6, 10^7, 10^8 and the largest
/// size that fits, plus the per-step breakdown at 10^8.
pub fn measure(gpu: &Gpu, reps: usize) -> Result<Vec<Record>> {
    let reps = reps.max(1);
    let (bw, _) = super::measure_bandwidth(gpu, reps)?;
    let (free, _) = gpu
        .context()
        .mem_get_info()
        .map_err(Error::driver("querying free memory", 0))?;
    let largest = ((free as u64 * 85 / 100) / BYTES_PER_ROW).min(u32::MAX as u64 / 2);
    let mut largest = largest / 100_000_000 * 100_000_000;
    while largest > 0 && !hash_table_fits(largest) {
        largest -= 100_000_000;
    }
    let largest = largest as usize;
    let mut sizes = vec![1_000_000usize, 10_000_000, 100_000_000];
    if largest > 100_000_000 {
        sizes.push(largest);
    }
    let mut rec: Vec<Record> = Vec::new();
    // Each record is also printed as it is measured, so a run cut short still shows them.
    let mut shown = 0;
    let mut progress = |rec: &[Record]| {
        for r in &rec[shown..] {
            eprintln!(
                "pkjoin: {} | {} | {:.3} ms (model {:.3} ms)",
                r.implementation, r.param, r.median_ms, r.model_ms
            );
        }
        shown = rec.len();
    };
    for n in sizes {
        let space = (n as u64 * 5).div_ceil(4);
        let a_keys = permutation_prefix(n, space, 1);
        let b_keys = permutation_prefix(n, space, 2);
        let a_vals: Vec<u32> = (0..n as u32).into_par_iter().collect();
        let b_vals: Vec<u32> = (0..n as u32).into_par_iter().map(|i| !i).collect();
        let (ak, av): (DeviceColumn<u32>, DeviceColumn<u32>) =
            (gpu.upload(&a_keys)?, gpu.upload(&a_vals)?);
        let (bk, bv) = (gpu.upload(&b_keys)?, gpu.upload(&b_vals)?);
        drop((a_keys, b_keys, a_vals, b_vals));
        let param = format!("{} x {}, ~80% match", label(n), label(n));
        // Big sizes get fewer repetitions: each takes a good fraction of a second.
        let reps_n = if n > 100_000_000 { reps.min(3) } else { reps };

        let mut pk = PkJoin::new();
        let mut steps = PkJoinSteps::default();
        let matches = pk.run(gpu, &ak, &av, &bk, &bv, Some(&mut steps))?.len();
        let t = gpu
            .time(0, reps_n, || {
                pk.run(gpu, &ak, &av, &bk, &bv, None).map(drop)
            })?
            .median_ms();
        let (r, w) = sample_sort_bytes(2.0 * n as f64, steps.levels, matches as f64);
        rec.push(Record::new(
            EXPERIMENT,
            &format!("sample-sort pk_join ({} levels)", steps.levels),
            param.clone(),
            n as u64,
            t,
            bw.model_ms(r, w),
        ));
        if n == 100_000_000 {
            let mut total = PkJoinSteps::default();
            for _ in 0..reps_n {
                let mut s = PkJoinSteps::default();
                pk.run(gpu, &ak, &av, &bk, &bv, Some(&mut s))?;
                for (acc, x) in total.ms.iter_mut().zip(s.ms) {
                    *acc += x / reps_n as f64;
                }
            }
            for (step, ms) in PkStep::ALL.iter().zip(total.ms) {
                rec.push(Record::new(
                    "pkjoin_steps",
                    step.name(),
                    format!("{param}, mean of {reps_n}"),
                    n as u64,
                    ms,
                    f64::NAN,
                ));
            }
        }
        drop(pk);
        progress(&rec);

        // The hash join on the same data: build on A (with payloads), probe with B.
        let mut hash_matches = 0;
        let t = gpu
            .time(1, reps_n, || {
                let table = HashTable::build(gpu, &ak, Some(&av), TableOptions::default())?;
                hash_matches = ops::join(gpu, &table, &bk)?.probe_rows.len();
                Ok(())
            })?
            .median_ms();
        if hash_matches != matches {
            return Err(Error::invalid(format!(
                "bench pkjoin: the hash join found {hash_matches} matches, the sample-sort join \
                 {matches}, at {param}"
            )));
        }
        let (r, w) = hash_join_bytes(n as f64, n as f64, matches as f64);
        rec.push(Record::new(
            EXPERIMENT,
            "hash join (build A, probe B)",
            param,
            n as u64,
            t,
            bw.model_ms(r, w),
        ));
        progress(&rec);
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_prefixes_are_distinct_and_in_range() {
        for (n, space) in [(1000usize, 1250u64), (4096, 4096), (77, 1 << 20), (1, 1)] {
            let v = permutation_prefix(n, space, 9);
            let mut s = v.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), n, "distinct");
            assert!(v.iter().all(|&x| (x as u64) < space));
        }
        let full = permutation_prefix(1 << 12, 1 << 12, 3);
        assert_ne!(full, (0..1u32 << 12).collect::<Vec<_>>(), "shuffled");
    }

    #[test]
    fn largest_sizes_keep_the_hash_table_in_one_column() {
        assert!(hash_table_fits(1_000_000_000));
        assert!(
            !hash_table_fits(1_100_000_000),
            "2.2e9 slots x 2 words > 2^32"
        );
    }

    #[test]
    fn about_four_fifths_match() {
        let n = 100_000;
        let a = permutation_prefix(n, n as u64 * 5 / 4, 1);
        let b: std::collections::HashSet<u32> = permutation_prefix(n, n as u64 * 5 / 4, 2)
            .into_iter()
            .collect();
        let m = a.iter().filter(|k| b.contains(k)).count() as f64 / n as f64;
        assert!((0.77..0.83).contains(&m), "{m}");
    }
}
