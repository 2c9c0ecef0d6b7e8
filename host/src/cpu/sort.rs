//! CPU radix partition and sort: parallel LSB passes in the manner of Polychroniou et al. (the
//! thesis' CPU side of §3.6.4): each thread counts its chunk's digits, one prefix sum over
//! (digit, chunk) gives every chunk its write cursors, and the chunks scatter in parallel. Stable,
//! with the same order-preserving key maps as the kernels.
use rayon::prelude::*;
use tessera_kernels::radix::{RadixBits, RadixKey};

use crate::ops::Order;

/// Items per chunk of one parallel pass.
const CHUNK: usize = 1 << 16;

/// A pointer that chunks write through at disjoint positions.
#[derive(Clone, Copy)]
struct Scatter<T>(*mut T);
// SAFETY: every position is written by exactly one chunk (the cursors partition the output).
unsafe impl<T: Send> Send for Scatter<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Scatter<T> {}

impl<T> Scatter<T> {
    /// Position `i` (a method, so closures capture the whole `Sync` wrapper).
    fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

/// One stable partition pass on digit `shift .. shift + bits` of `bits_in` (with `vals_in`)
/// into the outputs; returns the digit offsets (`2^bits + 1` entries).
fn pass<B: RadixBits + Send + Sync>(
    bits_in: &[B],
    vals_in: Option<&[u32]>,
    bits_out: &mut [B],
    vals_out: Option<&mut [u32]>,
    shift: u32,
    bits: u32,
) -> Vec<usize> {
    let bins = 1usize << bits;
    let hists: Vec<Vec<usize>> = bits_in
        .par_chunks(CHUNK)
        .map(|c| {
            let mut h = vec![0usize; bins];
            c.iter().for_each(|b| h[b.digit(shift, bits) as usize] += 1);
            h
        })
        .collect();
    let mut cursors = vec![vec![0usize; bins]; hists.len()];
    let mut offsets = Vec::with_capacity(bins + 1);
    let mut run = 0;
    for d in 0..bins {
        offsets.push(run);
        for (c, h) in hists.iter().enumerate() {
            cursors[c][d] = run;
            run += h[d];
        }
    }
    offsets.push(run);
    let ko = Scatter(bits_out.as_mut_ptr());
    let vo = vals_out.map(|v| Scatter(v.as_mut_ptr()));
    cursors
        .into_par_iter()
        .enumerate()
        .for_each(|(c, mut cur)| {
            let lo = c * CHUNK;
            let keys = &bits_in[lo..(lo + CHUNK).min(bits_in.len())];
            for (i, &b) in keys.iter().enumerate() {
                let d = b.digit(shift, bits) as usize;
                let o = cur[d];
                cur[d] += 1;
                // SAFETY: o < len, and the cursors give every item its own position.
                unsafe {
                    ko.at(o).write(b);
                    if let (Some(vo), Some(vi)) = (vo, vals_in) {
                        vo.at(o).write(vi[lo + i]);
                    }
                }
            }
        });
    offsets
}

/// Keys as ordered bits, in parallel.
fn to_bits<K: RadixKey + Sync>(keys: &[K], order: Order) -> Vec<K::Bits>
where
    K::Bits: Send,
{
    let desc = order == Order::Descending;
    keys.par_iter()
        .map(|&k| K::ordered(k.into_raw(), desc))
        .collect()
}

/// Stable LSB radix sort of `keys` (and `values` with them), 8 bits per pass, skipping passes
/// whose digit is the same for every key. Fails when the lengths differ.
pub fn sort_pairs<K: RadixKey + Send + Sync>(
    keys: &[K],
    values: Option<&[u32]>,
    order: Order,
) -> crate::Result<(Vec<K>, Vec<u32>)>
where
    K::Bits: Send + Sync + Default,
{
    if let Some(v) = values {
        crate::ops::check_same_len("cpu sort", "values", v.len(), keys.len())?;
    }
    let n = keys.len();
    let mut a = to_bits(keys, order);
    let mut b = vec![K::Bits::default(); n];
    let mut va = values.map(<[u32]>::to_vec).unwrap_or_default();
    let mut vb = vec![0u32; va.len()];
    for p in 0..<K::Bits as RadixBits>::BITS / 8 {
        let shift = p * 8;
        let first = a.first().map(|x| x.digit(shift, 8));
        if a.par_iter().all(|x| Some(x.digit(shift, 8)) == first) {
            continue;
        }
        let (vi, vo) = if values.is_some() {
            (Some(&va[..]), Some(&mut vb[..]))
        } else {
            (None, None)
        };
        pass(&a, vi, &mut b, vo, shift, 8);
        std::mem::swap(&mut a, &mut b);
        std::mem::swap(&mut va, &mut vb);
    }
    let desc = order == Order::Descending;
    let sorted = a
        .par_iter()
        .map(|&x| K::from_raw(K::unordered(x, desc)))
        .collect();
    Ok((sorted, va))
}

/// Stable radix sort of `keys`.
pub fn sort<K: RadixKey + Send + Sync>(keys: &[K], order: Order) -> Vec<K>
where
    K::Bits: Send + Sync + Default,
{
    sort_pairs(keys, None, order)
        .expect("no values, no length to check")
        .0
}

/// Keys and values grouped by digit `start_bit .. start_bit + bits` of the key, stably, with
/// the offset of each of the `2^bits` partitions (and the total at the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPartitions {
    /// Partitioned keys.
    pub keys: Vec<u32>,
    /// Their values.
    pub values: Vec<u32>,
    /// Start of partition `d` at `[d]`; `[2^bits]` is the length.
    pub offsets: Vec<usize>,
}

/// One stable radix partition pass (the thesis' CPU Stable): `bits` in `1..=16`,
/// `start_bit + bits <= 32`.
pub fn radix_partition(
    keys: &[u32],
    values: &[u32],
    start_bit: u32,
    bits: u32,
) -> crate::Result<CpuPartitions> {
    crate::ops::check_same_len("cpu radix partition", "values", values.len(), keys.len())?;
    if !(1..=16).contains(&bits) || start_bit + bits > 32 {
        return Err(crate::Error::invalid(format!(
            "cpu radix partition: bits {start_bit}..{} are not within 1..=16 bits of a 32-bit key",
            start_bit + bits
        )));
    }
    let mut out = CpuPartitions {
        keys: vec![0; keys.len()],
        values: vec![0; keys.len()],
        offsets: Vec::new(),
    };
    out.offsets = pass(
        keys,
        Some(values),
        &mut out.keys,
        Some(&mut out.values),
        start_bit,
        bits,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(n: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 32) as u32
            })
            .collect()
    }

    #[test]
    fn sorts_like_std_stably() {
        for n in [0, 1, 2, 1000, CHUNK + 7, 3 * CHUNK + 1] {
            let keys: Vec<u32> = lcg(n, 7).iter().map(|k| k % 1000).collect();
            let vals: Vec<u32> = (0..n as u32).collect();
            let (sk, sv) = sort_pairs(&keys, Some(&vals), Order::Ascending).unwrap();
            let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(vals.clone()).collect();
            want.sort_by_key(|p| p.0); // std's sort is stable
            assert_eq!(sk, want.iter().map(|p| p.0).collect::<Vec<_>>());
            assert_eq!(sv, want.iter().map(|p| p.1).collect::<Vec<_>>());
            let (dk, dv) = sort_pairs(&keys, Some(&vals), Order::Descending).unwrap();
            want.sort_by_key(|p| std::cmp::Reverse(p.0));
            assert_eq!(dk, want.iter().map(|p| p.0).collect::<Vec<_>>());
            assert_eq!(dv, want.iter().map(|p| p.1).collect::<Vec<_>>());
        }
    }

    #[test]
    fn sorts_signed_float_and_wide_keys() {
        let raw = lcg(50_000, 3);
        let i: Vec<i32> = raw.iter().map(|&x| x as i32).collect();
        let mut want = i.clone();
        want.sort();
        assert_eq!(sort(&i, Order::Ascending), want);
        let mut f: Vec<f32> = raw.iter().map(|&x| f32::from_bits(x)).collect();
        f.extend([f32::NAN, -f32::NAN, 0.0, -0.0, f32::INFINITY]);
        let got = sort(&f, Order::Ascending);
        f.sort_by(f32::total_cmp);
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            f.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let w: Vec<u64> = raw.iter().map(|&x| ((x as u64) << 17) ^ x as u64).collect();
        let mut want = w.clone();
        want.sort_by(|a, b| b.cmp(a));
        assert_eq!(sort(&w, Order::Descending), want);
    }

    #[test]
    fn partitions_stably_with_offsets() {
        let keys = lcg(10_000, 9);
        let vals: Vec<u32> = (0..10_000).collect();
        let p = radix_partition(&keys, &vals, 4, 5).unwrap();
        assert_eq!(p.offsets.len(), 33);
        assert_eq!(p.offsets[32], keys.len());
        for d in 0..32 {
            let part = &p.values[p.offsets[d]..p.offsets[d + 1]];
            assert!(part.windows(2).all(|w| w[0] < w[1]), "stable");
            assert!(
                part.iter()
                    .all(|&v| (keys[v as usize] >> 4) & 31 == d as u32)
            );
        }
        assert!(radix_partition(&keys, &vals, 30, 5).is_err());
        assert!(radix_partition(&keys, &vals[1..], 0, 5).is_err());
    }
}
