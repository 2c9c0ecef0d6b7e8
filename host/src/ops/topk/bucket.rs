//! Bucket select (thesis §4.2.2, §4.3, §4.4.2) on the GPU: the smallest and the largest key,
//! then passes that count the elements of the current range in [`BUCKETS`] buckets spaced
//! evenly over it and keep the bucket of the `k`-th best, until that bucket holds exactly the
//! elements still wanted. The kernels and the elements (`(rank, row)` composites, unique, so
//! every pass shrinks the range and no pass ends on a tie) are described in
//! [`tessera_kernels::ops::topk_bucket`]; this side picks the buckets, decides when the
//! bucket's elements are worth copying out of the keys (a *split*), and reads the result.
use tessera_kernels::ops::topk::Candidate;
use tessera_kernels::ops::topk_bucket::{
    self as kb, BUCKET_BITS, BUCKETS, BucketPass, CountCandsArgs, CountKeysArgs, MinMaxArgs,
    SplitCandsArgs, SplitCounts, SplitKeysArgs,
};
use tessera_kernels::spec::KernelSpec;

use super::buffers::{grow_pod, stride_grid};
use super::select::rows_of;
use super::{TopKOrder, TopKRows, TopKey, check_top_k};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, Gpu, PodBuffer};

/// Key types of [`BucketSelectTopK`]: every [`TopKey`]. Sealed through [`TopKey`].
pub trait BucketKey: TopKey {
    /// The min-max kernel.
    #[doc(hidden)]
    const MIN_MAX: KernelSpec<MinMaxArgs<Self>>;
    /// The counting pass over the keys.
    #[doc(hidden)]
    const COUNT: KernelSpec<CountKeysArgs<Self>>;
    /// The split of the keys.
    #[doc(hidden)]
    const SPLIT: KernelSpec<SplitKeysArgs<Self>>;
    /// The counting pass over candidates of this key type's elements.
    #[doc(hidden)]
    const COUNT_CANDS: KernelSpec<CountCandsArgs>;
    /// The split of candidates of this key type's elements.
    #[doc(hidden)]
    const SPLIT_CANDS: KernelSpec<SplitCandsArgs>;
}

macro_rules! bucket_key {
    ($($t:ty: $mm:ident, $c:ident, $s:ident, $cc:ident, $sc:ident;)*) => {$(
        impl BucketKey for $t {
            const MIN_MAX: KernelSpec<MinMaxArgs<$t>> = kb::$mm;
            const COUNT: KernelSpec<CountKeysArgs<$t>> = kb::$c;
            const SPLIT: KernelSpec<SplitKeysArgs<$t>> = kb::$s;
            const COUNT_CANDS: KernelSpec<CountCandsArgs> = kb::$cc;
            const SPLIT_CANDS: KernelSpec<SplitCandsArgs> = kb::$sc;
        }
    )*};
}
bucket_key! {
    f32: TOPK_BUCKET_MINMAX_F32, TOPK_BUCKET_COUNT_F32, TOPK_BUCKET_SPLIT_F32, TOPK_BUCKET_COUNT_CANDS, TOPK_BUCKET_SPLIT_CANDS;
    i32: TOPK_BUCKET_MINMAX_I32, TOPK_BUCKET_COUNT_I32, TOPK_BUCKET_SPLIT_I32, TOPK_BUCKET_COUNT_CANDS, TOPK_BUCKET_SPLIT_CANDS;
    u32: TOPK_BUCKET_MINMAX_U32, TOPK_BUCKET_COUNT_U32, TOPK_BUCKET_SPLIT_U32, TOPK_BUCKET_COUNT_CANDS, TOPK_BUCKET_SPLIT_CANDS;
    f64: TOPK_BUCKET_MINMAX_F64, TOPK_BUCKET_COUNT_F64, TOPK_BUCKET_SPLIT_F64, TOPK_BUCKET_COUNT_WIDE, TOPK_BUCKET_SPLIT_WIDE;
}

/// Items per tile of the kernels over the keys (32-bit and `f64` keys alike).
pub const BUCKET_TILE: usize = kb::TOPK_BUCKET_COUNT_F32.tile() as usize;

/// Passes after which a select has certainly ended: each shrinks the range of the 96-bit
/// elements by at least `BUCKETS / 2`.
const MAX_PASSES: usize = 2 + 96 / (BUCKET_BITS as usize - 1);

/// A split buffer this small is finished on the host: one download instead of more passes.
const HOST_FINISH: usize = 1 << 12;

/// An element as one number: `(rank << 32) | !row`.
type Elem = u128;

fn elem(rank: u64, nrow: u32) -> Elem {
    (Elem::from(rank) << 32) | Elem::from(nrow)
}

fn elem_of(c: &Candidate) -> Elem {
    elem(c.rank, !c.row)
}

/// The pass over `[lo, hi]`: the smallest shift whose `BUCKETS` buckets span the range.
fn pass(lo: Elem, hi: Elem, to_next: bool) -> BucketPass {
    let bits = Elem::BITS - (hi - lo).leading_zeros();
    BucketPass {
        lo_rank: (lo >> 32) as u64,
        hi_rank: (hi >> 32) as u64,
        lo_nrow: lo as u32,
        hi_nrow: hi as u32,
        shift: bits.saturating_sub(BUCKET_BITS),
        to_next: u32::from(to_next),
    }
}

/// The bucket that holds the `need`-th best of the counted elements (buckets are best last):
/// its index, the elements in better buckets and its own count; `None` when the counts hold
/// fewer than `need`.
fn pick(hist: &[u32], need: usize) -> Option<(usize, usize, usize)> {
    let mut above = 0;
    for (b, &c) in hist.iter().enumerate().rev() {
        let c = c as usize;
        if above + c >= need {
            return Some((b, above, c));
        }
        above += c;
    }
    None
}

/// Whether copying a bucket of `count` elements out of a source of `source_bytes` pays: the
/// later passes then read at most half as many bytes.
fn split_pays(count: usize, source_bytes: usize) -> bool {
    2 * count * size_of::<Candidate>() <= source_bytes
}

/// Where a pass reads its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// The keys.
    Keys,
    /// The first `len` candidates of split buffer `buf`.
    Split { buf: usize, len: usize },
}

/// Bucket select on the GPU with reusable buffers: the `k` best keys of a column and their
/// rows, best first, the exact list of [`crate::cpu::top_k`], for any `k` up to the number of
/// keys.
pub struct BucketSelectTopK {
    pass: PodBuffer<BucketPass>,
    counts: PodBuffer<SplitCounts>,
    hist: DeviceColumn<u32>,
    min_max: DeviceColumn<u64>,
    splits: [PodBuffer<Candidate>; 2],
    result: PodBuffer<Candidate>,
    passes: usize,
}

impl BucketSelectTopK {
    /// Small buffers; they grow with the calls.
    pub fn new(gpu: &Gpu) -> Result<BucketSelectTopK> {
        Ok(BucketSelectTopK {
            pass: PodBuffer::zeroed(gpu, 1)?,
            counts: PodBuffer::zeroed(gpu, 1)?,
            hist: gpu.zeros(BUCKETS)?,
            min_max: gpu.zeros(2)?,
            splits: [PodBuffer::zeroed(gpu, 1)?, PodBuffer::zeroed(gpu, 1)?],
            result: PodBuffer::zeroed(gpu, 1)?,
            passes: 0,
        })
    }

    /// Counting passes of the last run.
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// The `k` best keys of `keys` by `order` with their rows, best first; ties keep the
    /// smaller rows. `Err` unless `1 <= k <= n`.
    pub fn run<K: BucketKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<K>> {
        let n = keys.len();
        check_top_k(n, k)?;
        let smallest = u32::from(order == TopKOrder::Smallest);
        let (rmin, rmax) = self.min_max(gpu, keys, smallest)?;
        // Rows 0..n are the complements !0 down to !(n - 1).
        let (mut lo, mut hi) = (elem(rmin, !(n as u32 - 1)), elem(rmax, u32::MAX));
        grow_pod(gpu, &mut self.result, k)?;
        self.counts.write(gpu, 0, &SplitCounts::default())?;
        let mut src = Source::Keys;
        let mut need = k;
        self.passes = 0;
        while self.passes < MAX_PASSES {
            self.passes += 1;
            let p = pass(lo, hi, false);
            self.pass.write(gpu, 0, &p)?;
            self.count(gpu, keys, smallest, src)?;
            let hist = self.hist.to_vec(gpu)?;
            let (b, above, count) = pick(&hist, need).ok_or_else(|| {
                Error::invalid(format!(
                    "bucket select: pass {} counted {} elements, fewer than the {need} wanted",
                    self.passes,
                    hist.iter().map(|&c| c as usize).sum::<usize>()
                ))
            })?;
            need -= above;
            lo += (b as Elem) << p.shift;
            hi = hi.min(lo + ((1 as Elem) << p.shift) - 1);
            if count == need {
                // The bucket and everything above it: exactly the `k` best.
                self.split(gpu, keys, smallest, src, pass(lo, hi, false), k, 0)?;
                let best = self.result.read_prefix(gpu, k)?;
                return Ok(rows_of(best, order));
            }
            let source_bytes = match src {
                Source::Keys => n * size_of::<K>(),
                Source::Split { len, .. } => len * size_of::<Candidate>(),
            };
            if split_pays(count, source_bytes) {
                let buf = match src {
                    Source::Split { buf, .. } => 1 - buf,
                    Source::Keys => 0,
                };
                grow_pod(gpu, &mut self.splits[buf], count)?;
                self.split(
                    gpu,
                    keys,
                    smallest,
                    src,
                    pass(lo, hi, true),
                    k - need,
                    count,
                )?;
                src = Source::Split { buf, len: count };
                if count <= HOST_FINISH {
                    return self.finish_on_host(gpu, buf, count, k, need, order);
                }
            }
        }
        Err(Error::invalid(format!(
            "bucket select: no result after {MAX_PASSES} passes (a bug: each pass shrinks \
             the range)"
        )))
    }

    /// The smallest and the largest rank of the keys.
    fn min_max<K: BucketKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        smallest: u32,
    ) -> Result<(u64, u64)> {
        gpu.stream()
            .memcpy_htod(&[u64::MAX, 0], &mut self.min_max.buf.slice_mut(..2))
            .map_err(Error::driver("resetting the bucket select's range", 16))?;
        let n32 = keys.len() as u32;
        // SAFETY: `n` keys and two words; any grid size works.
        unsafe {
            gpu.launch(
                &K::MIN_MAX,
                stride_grid(gpu, &K::MIN_MAX, keys.len())?,
                (keys, &n32, &smallest, &mut self.min_max),
            )
        }?;
        let v = self.min_max.to_vec(gpu)?;
        Ok((v[0], v[1]))
    }

    /// Queues a counting pass over `src` into the zeroed histogram.
    fn count<K: BucketKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        smallest: u32,
        src: Source,
    ) -> Result<()> {
        gpu.stream()
            .memset_zeros(&mut self.hist.buf.slice_mut(..BUCKETS))
            .map_err(Error::driver("zeroing the bucket counts", BUCKETS * 4))?;
        match src {
            Source::Keys => {
                let n32 = keys.len() as u32;
                // SAFETY: `n` keys; the pass's shift spans its range (`pass`); BUCKETS zeroed
                // counts; any grid size works.
                unsafe {
                    gpu.launch(
                        &K::COUNT,
                        stride_grid(gpu, &K::COUNT, keys.len())?,
                        (keys, &n32, &smallest, &self.pass, &mut self.hist),
                    )
                }
            }
            Source::Split { buf, len } => {
                let len32 = len as u32;
                // SAFETY: the split buffer holds `len` candidates; as above.
                unsafe {
                    gpu.launch(
                        &K::COUNT_CANDS,
                        stride_grid(gpu, &K::COUNT_CANDS, len)?,
                        (&self.splits[buf], &len32, &self.pass, &mut self.hist),
                    )
                }
            }
        }
    }

    /// Splits `src` by pass `p` (written here): the elements above its range to the result,
    /// those in it to the other split buffer (`p.to_next`) or to the result; then checks that
    /// the result holds `result` elements and the other buffer `next`.
    #[allow(clippy::too_many_arguments)]
    fn split<K: BucketKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        smallest: u32,
        src: Source,
        p: BucketPass,
        result: usize,
        next: usize,
    ) -> Result<()> {
        self.pass.write(gpu, 0, &p)?;
        let mut counts = self.counts.read(gpu, 0)?;
        counts.next = 0;
        self.counts.write(gpu, 0, &counts)?;
        let rcap = self.result.len() as u32;
        let (to, from) = match src {
            Source::Keys => (0, None),
            Source::Split { buf, len } => (1 - buf, Some((buf, len))),
        };
        let [s0, s1] = &mut self.splits;
        let (next_buf, src_buf) = if to == 0 { (s0, &*s1) } else { (s1, &*s0) };
        let ncap = next_buf.len() as u32;
        match from {
            None => {
                let n32 = keys.len() as u32;
                // SAFETY: `n` keys; the pass and the counts are valid; the result holds
                // `rcap`, the next buffer `ncap`; any grid size works.
                unsafe {
                    gpu.launch(
                        &K::SPLIT,
                        stride_grid(gpu, &K::SPLIT, keys.len())?,
                        (
                            keys,
                            &n32,
                            &smallest,
                            &self.pass,
                            &mut self.result,
                            &rcap,
                            next_buf,
                            &ncap,
                            &mut self.counts,
                        ),
                    )
                }?;
            }
            Some((_, len)) => {
                let len32 = len as u32;
                // SAFETY: the source buffer holds `len` candidates; as above.
                unsafe {
                    gpu.launch(
                        &K::SPLIT_CANDS,
                        stride_grid(gpu, &K::SPLIT_CANDS, len)?,
                        (
                            src_buf,
                            &len32,
                            &self.pass,
                            &mut self.result,
                            &rcap,
                            next_buf,
                            &ncap,
                            &mut self.counts,
                        ),
                    )
                }?;
            }
        }
        let c = self.counts.read(gpu, 0)?;
        if c.result as usize != result || c.next as usize != next {
            return Err(Error::invalid(format!(
                "bucket select: a split wrote {} results and {} elements, not {result} and \
                 {next}",
                c.result, c.next
            )));
        }
        Ok(())
    }

    /// The last step for a small split buffer: its `need` best and the result's `k - need`.
    fn finish_on_host<K: TopKey>(
        &self,
        gpu: &Gpu,
        buf: usize,
        len: usize,
        k: usize,
        need: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<K>> {
        let mut rest = self.splits[buf].read_prefix(gpu, len)?;
        rest.sort_unstable_by_key(|c| std::cmp::Reverse(elem_of(c)));
        rest.truncate(need);
        let mut best = self.result.read_prefix(gpu, k - need)?;
        best.append(&mut rest);
        Ok(rows_of(best, order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the host's passes on the host: counts, picks and narrows as `run` does, over
    /// `elems`, and returns the final range and the passes it took.
    fn select(elems: &[Elem], k: usize) -> (Elem, Elem, usize) {
        let (mut lo, mut hi) = (*elems.iter().min().unwrap(), *elems.iter().max().unwrap());
        let mut need = k;
        for passes in 1..=MAX_PASSES {
            let p = pass(lo, hi, false);
            let mut hist = vec![0u32; BUCKETS];
            for &e in elems.iter().filter(|&&e| lo <= e && e <= hi) {
                let b = (e - lo) >> p.shift;
                assert!(b < BUCKETS as Elem);
                hist[b as usize] += 1;
            }
            let (b, above, count) = pick(&hist, need).unwrap();
            need -= above;
            lo += (b as Elem) << p.shift;
            hi = hi.min(lo + (1 << p.shift) - 1);
            if count == need {
                return (lo, hi, passes);
            }
        }
        panic!("no end");
    }

    #[test]
    fn passes_end_on_exactly_the_k_best() {
        let mut x = 7u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 11
        };
        let sets: Vec<Vec<u64>> = vec![
            (0..5000).map(|_| next()).collect(),
            vec![42; 3000],
            (0..4000).map(|_| next() % 3).collect(),
            (0..2000)
                .map(|i| if i % 500 == 7 { 1 << 40 } else { 1 << 20 })
                .collect(),
        ];
        for ranks in sets {
            let elems: Vec<Elem> = ranks
                .iter()
                .enumerate()
                .map(|(i, &r)| elem(r, !(i as u32)))
                .collect();
            let mut sorted = elems.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            for k in [1, 2, 31, 32, 33, 1024, elems.len()] {
                let (lo, _, passes) = select(&elems, k);
                assert!(passes <= MAX_PASSES);
                assert_eq!(elems.iter().filter(|&&e| e >= lo).count(), k);
                assert!(sorted[k - 1] >= lo && (k == elems.len() || sorted[k] < lo));
            }
        }
    }

    #[test]
    fn shifts_span_the_range() {
        for (lo, hi) in [(0, 0), (5, 5 + 2047), (5, 5 + 2048), (0, Elem::MAX >> 32)] {
            let p = pass(lo, hi, true);
            assert!((hi - lo) >> p.shift < BUCKETS as Elem);
            assert!(p.shift == 0 || (hi - lo) >> (p.shift - 1) >= BUCKETS as Elem);
            assert_eq!(elem(p.lo_rank, p.lo_nrow), lo);
            assert_eq!(p.to_next, 1);
        }
        assert_eq!(pick(&[1, 0, 2], 2), Some((2, 0, 2)));
        assert_eq!(pick(&[1, 0, 2], 3), Some((0, 2, 1)));
        assert_eq!(pick(&[1, 0, 2], 4), None);
        assert!(split_pays(10, 320) && !split_pays(11, 320));
    }
}
