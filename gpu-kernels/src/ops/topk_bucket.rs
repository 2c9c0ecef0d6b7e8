//! Bucket select (thesis §4.2.2, §4.3, §4.4.2): the buckets are spaced evenly between the
//! smallest and the largest element, not fixed by radix digits, and each pass keeps only the
//! bucket that holds the `k`-th best.
//!
//! **Elements** are the items of [`topk_perthread`](super::topk_perthread): a key's rank and
//! its complemented row as one number ([`Composite`](super::topk_perthread::Composite)), unique per row, larger is better. So
//! the `k`-th best element is one value, exactly `k` elements reach it, and no pass ever ends
//! on a tie: all-equal keys split on their rows.
//!
//! **A pass** over the elements in the range `[lo, hi]` ([`BucketPass`]) counts them in
//! [`BUCKETS`] buckets of width `2^shift` from `lo` (`count`); the host picks the bucket of
//! the `k`-th best, and the range shrinks to it, by a factor of at least `BUCKETS / 2` (the
//! host takes the smallest `shift` that spans the range), so passes end. A *split* (`split`)
//! writes the elements above the range to the result and those in it to a smaller buffer that
//! the next passes read instead of the keys (the host splits only when that buffer is small
//! enough to pay for itself); once the bucket holds exactly the elements still wanted, the last
//! split writes it, too, to the result: the `k` best, unordered. Sources: the keys (ranks from
//! their bits, rows from their positions) and a buffer of [`Candidate`]s.
use super::topk::Candidate;
#[cfg(target_arch = "nvptx64")]
use super::topk_perthread::Composite;

/// Bits of a bucket index.
pub const BUCKET_BITS: u32 = 11;
/// Buckets per pass.
pub const BUCKETS: usize = 1 << BUCKET_BITS;

/// One pass's range of elements and bucket width, in device memory (written by the host
/// before each pass). An element is `(rank, nrow)`, compared as `(rank << 32) | nrow`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct BucketPass {
    /// Rank of the range's lowest element.
    pub lo_rank: u64,
    /// Rank of the range's highest element.
    pub hi_rank: u64,
    /// Complemented row of the lowest element.
    pub lo_nrow: u32,
    /// Complemented row of the highest element.
    pub hi_nrow: u32,
    /// An element's bucket is `(element - lo) >> shift`.
    pub shift: u32,
    /// 1: a split writes the range's elements to the next buffer; 0: to the result.
    pub to_next: u32,
}

const _: () = assert!(core::mem::size_of::<BucketPass>() == 32);

/// What a split wrote (the host zeroes `next` before each split; `result` accumulates).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct SplitCounts {
    /// Elements in the result.
    pub result: u32,
    /// Elements in the next buffer.
    pub next: u32,
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{
        Atomic, Shared, all, ballot, block_idx, grid_dim, lane_id, lanemask_lt, shfl_idx,
        sync_threads, thread_idx, warp_reduce,
    };
    use crate::ops::topk_bitonic::TopItemKey;
    use crate::ops::topk_perthread::for_each_key;

    /// The pass's bounds as elements.
    #[inline(always)]
    fn bounds<C: Composite>(p: &BucketPass) -> (C, C) {
        (
            C::from_parts(p.lo_rank, p.lo_nrow),
            C::from_parts(p.hi_rank, p.hi_nrow),
        )
    }

    /// Elements a pass walks: every thread of a block makes the same calls, so the visitor
    /// may use warp collectives.
    pub trait Source<C> {
        /// Calls `visit(element, live)` for the elements of this thread, `live` false for the
        /// padding past the last one.
        ///
        /// # Safety
        /// The source's pointers hold its elements; the launch has the source's block size.
        unsafe fn walk(&self, visit: impl FnMut(C, bool));
    }

    /// The keys as elements, tile by tile ([`for_each_key`]).
    pub struct Keys<K, const NT: usize, const IPT: usize> {
        /// The keys.
        pub keys: *const K,
        /// How many.
        pub n: usize,
        /// Whether small keys rank best.
        pub smallest: bool,
    }

    impl<K: TopItemKey + Default, const NT: usize, const IPT: usize> Source<K::It>
        for Keys<K, NT, IPT>
    {
        #[inline(always)]
        unsafe fn walk(&self, visit: impl FnMut(K::It, bool)) {
            // SAFETY: forwarded.
            unsafe { for_each_key::<K, NT, IPT>(self.keys, self.n, self.smallest, visit) }
        }
    }

    /// A buffer of candidates as elements, one per thread in a grid-stride walk.
    pub struct Cands<const NT: usize> {
        /// The candidates.
        pub cands: *const Candidate,
        /// How many.
        pub n: usize,
    }

    impl<C: Composite, const NT: usize> Source<C> for Cands<NT> {
        #[inline(always)]
        unsafe fn walk(&self, mut visit: impl FnMut(C, bool)) {
            let mut base = block_idx() * NT;
            while base < self.n {
                let i = base + thread_idx();
                let live = i < self.n;
                let c = if live {
                    // SAFETY: i < n, the candidates the source holds.
                    unsafe { self.cands.add(i).read() }
                } else {
                    Candidate::default()
                };
                visit(C::from_parts(c.rank, !c.row), live);
                base += grid_dim() * NT;
            }
        }
    }

    /// Adds one to bucket `b` of the block's histogram for each live lane; a warp whose live
    /// lanes share one bucket (skewed inputs) adds once.
    #[inline(always)]
    fn count_bucket(hist: Shared<u32>, b: u32, live: bool) {
        let lanes = ballot(live);
        if lanes == 0 {
            return;
        }
        let lead = lanes.trailing_zeros();
        let first = shfl_idx(b, lead);
        if all(!live || b == first) {
            if lane_id() == lead {
                // SAFETY: buckets are below BUCKETS.
                unsafe { hist.atomic_add(first as usize, lanes.count_ones()) };
            }
        } else if live {
            // SAFETY: as above.
            unsafe { hist.atomic_add(b as usize, 1) };
        }
    }

    /// One pass's histogram: every block counts the elements of `src` that lie
    /// in the pass's range into its shared buckets, then adds them to `hist` (zeroed by the
    /// host). Any grid size.
    ///
    /// # Safety
    /// `pass` is valid, `hist` holds [`BUCKETS`] counts; the pass's `shift` puts every
    /// element of the range below bucket `BUCKETS`; `src` as [`Source::walk`] requires.
    #[inline(always)]
    pub unsafe fn count<C: Composite, const NT: usize>(
        src: impl Source<C>,
        pass: *const BucketPass,
        hist: *mut u32,
        local: Shared<u32>,
    ) {
        let t = thread_idx();
        let mut d = t;
        while d < BUCKETS {
            // SAFETY: d < BUCKETS.
            unsafe { local.write(d, 0) };
            d += NT;
        }
        sync_threads();
        // SAFETY: valid by contract.
        let p = unsafe { pass.read() };
        let (lo, hi) = bounds::<C>(&p);
        // SAFETY: forwarded.
        unsafe {
            src.walk(|c: C, live: bool| {
                let hit = live && !lo.better(c) && !c.better(hi);
                let b = if hit { c.bucket(lo, p.shift) } else { 0 };
                count_bucket(local, b, hit);
            })
        };
        sync_threads();
        let mut d = t;
        while d < BUCKETS {
            // SAFETY: d < BUCKETS; the counts are complete after the barrier.
            unsafe {
                let c = local.read(d);
                if c != 0 {
                    u32::atomic_add(hist.add(d), c);
                }
            }
            d += NT;
        }
    }

    /// Reserves a slot for each lane with `want` at `counter`, one atomic per warp; returns
    /// this lane's slot (meaningless where `want` is false).
    ///
    /// # Safety
    /// `counter` is a valid global address.
    #[inline(always)]
    unsafe fn append(want: bool, counter: *mut u32) -> u32 {
        let lanes = ballot(want);
        if lanes == 0 {
            return 0;
        }
        let lead = lanes.trailing_zeros();
        let mut base = 0;
        if lane_id() == lead {
            // SAFETY: valid by contract.
            base = unsafe { u32::atomic_add(counter, lanes.count_ones()) };
        }
        shfl_idx(base, lead) + (lanes & lanemask_lt()).count_ones()
    }

    /// A split: of the elements of `src`, those above the pass's range go to `result`,
    /// those in it to `next` (`to_next`) or to `result`; slots past a buffer's room are
    /// counted but not written. Any grid size.
    ///
    /// # Safety
    /// `pass` and `counts` are valid; `result` holds `result_cap`, `next` `next_cap`
    /// candidates; `src` as for [`count`].
    #[inline(always)]
    pub unsafe fn split<C: Composite>(
        src: impl Source<C>,
        pass: *const BucketPass,
        result: *mut Candidate,
        result_cap: u32,
        next: *mut Candidate,
        next_cap: u32,
        counts: *mut SplitCounts,
    ) {
        // SAFETY: valid by contract.
        let p = unsafe { pass.read() };
        let (lo, hi) = bounds::<C>(&p);
        let visit = |c: C, live: bool| {
            let above = live && c.better(hi);
            let inside = live && !above && !lo.better(c);
            let to_result = above || (inside && p.to_next == 0);
            let to_next = inside && p.to_next != 0;
            // SAFETY: the counters are fields of the valid counts; slots are checked against
            // the rooms.
            unsafe {
                let r = append(to_result, &raw mut (*counts).result);
                if to_result && r < result_cap {
                    result.add(r as usize).write(c.candidate());
                }
                let s = append(to_next, &raw mut (*counts).next);
                if to_next && s < next_cap {
                    next.add(s as usize).write(c.candidate());
                }
            }
        };
        // SAFETY: forwarded.
        unsafe { src.walk(visit) };
    }

    /// The smallest and the largest rank of the `n` keys into `out[0]` and `out[1]` (which the
    /// host sets to `u64::MAX` and 0). Any grid size.
    ///
    /// # Safety
    /// `keys` holds `n` keys; `out` holds 2.
    #[inline(always)]
    pub unsafe fn min_max<K: TopItemKey + Default, const NT: usize, const IPT: usize>(
        keys: *const K,
        n: usize,
        smallest: bool,
        out: *mut u64,
    ) where
        K::It: Composite,
    {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        // SAFETY: forwarded.
        unsafe {
            for_each_key::<K, NT, IPT>(keys, n, smallest, |x, live| {
                if live {
                    let r = x.candidate().rank;
                    lo = lo.min(r);
                    hi = hi.max(r);
                }
            })
        };
        lo = warp_reduce(lo, |a, b| a.min(b));
        hi = warp_reduce(hi, |a, b| a.max(b));
        if lane_id() == 0 && lo <= hi {
            // SAFETY: out holds 2.
            unsafe {
                u64::atomic_min(out, lo);
                u64::atomic_max(out.add(1), hi);
            }
        }
    }
}

/// Parameters of the min-max kernels over keys `K`: `(keys, n, smallest, out)`.
pub type MinMaxArgs<K> = (*const K, u32, u32, *mut u64);
/// Parameters of the counting passes over keys `K`: `(keys, n, smallest, pass, hist)`.
pub type CountKeysArgs<K> = (*const K, u32, u32, *const BucketPass, *mut u32);
/// Parameters of the splits of keys `K`:
/// `(keys, n, smallest, pass, result, result_cap, next, next_cap, counts)`.
pub type SplitKeysArgs<K> = (
    *const K,
    u32,
    u32,
    *const BucketPass,
    *mut Candidate,
    u32,
    *mut Candidate,
    u32,
    *mut SplitCounts,
);
/// Parameters of the counting passes over candidates: `(cands, n, pass, hist)`.
pub type CountCandsArgs = (*const Candidate, u32, *const BucketPass, *mut u32);
/// Parameters of the splits of candidates:
/// `(cands, n, pass, result, result_cap, next, next_cap, counts)`.
pub type SplitCandsArgs = (
    *const Candidate,
    u32,
    *const BucketPass,
    *mut Candidate,
    u32,
    *mut Candidate,
    u32,
    *mut SplitCounts,
);

macro_rules! bucket_key_kernels {
    ($($t:ty: $mm:ident = $mmname:ident, $count:ident = $cname:ident, $split:ident = $sname:ident;)*) => {$(
        $crate::kernel! {
            /// The smallest and the largest rank of the keys.
            $mm = $mmname[NT = 256, IPT = 8](keys: *const $t, n: u32, smallest: u32, out: *mut u64) {
                // SAFETY: the host passes `n` keys and two words.
                unsafe { min_max::<$t, NT, IPT>(keys, n as usize, smallest != 0, out) }
            }
        }
        $crate::kernel! {
            /// A bucket-select pass's histogram over the keys.
            $count = $cname[NT = 256, IPT = 8](
                keys: *const $t, n: u32, smallest: u32, pass: *const BucketPass, hist: *mut u32
            ) {
                let local = $crate::shared_array!(bucket_hist: [u32; BUCKETS]);
                type C = <$t as $crate::ops::topk_bitonic::TopItemKey>::It;
                // SAFETY: the host passes `n` keys, a pass whose shift spans its range and
                // BUCKETS zeroed counts.
                unsafe {
                    count::<C, NT>(Keys::<$t, NT, IPT> { keys, n: n as usize, smallest: smallest != 0 },
                        pass, hist, local)
                }
            }
        }
        $crate::kernel! {
            /// A bucket-select split of the keys.
            $split = $sname[NT = 256, IPT = 8](
                keys: *const $t, n: u32, smallest: u32, pass: *const BucketPass,
                result: *mut Candidate, result_cap: u32, next: *mut Candidate, next_cap: u32,
                counts: *mut SplitCounts
            ) {
                // SAFETY: the host passes `n` keys, the pass, the counts and the buffers'
                // rooms.
                unsafe {
                    split(Keys::<$t, NT, IPT> { keys, n: n as usize, smallest: smallest != 0 },
                        pass, result, result_cap, next, next_cap, counts)
                }
            }
        }
    )*};
}

bucket_key_kernels! {
    f32: TOPK_BUCKET_MINMAX_F32 = topk_bucket_minmax_f32, TOPK_BUCKET_COUNT_F32 = topk_bucket_count_f32, TOPK_BUCKET_SPLIT_F32 = topk_bucket_split_f32;
    f64: TOPK_BUCKET_MINMAX_F64 = topk_bucket_minmax_f64, TOPK_BUCKET_COUNT_F64 = topk_bucket_count_f64, TOPK_BUCKET_SPLIT_F64 = topk_bucket_split_f64;
    i32: TOPK_BUCKET_MINMAX_I32 = topk_bucket_minmax_i32, TOPK_BUCKET_COUNT_I32 = topk_bucket_count_i32, TOPK_BUCKET_SPLIT_I32 = topk_bucket_split_i32;
    u32: TOPK_BUCKET_MINMAX_U32 = topk_bucket_minmax_u32, TOPK_BUCKET_COUNT_U32 = topk_bucket_count_u32, TOPK_BUCKET_SPLIT_U32 = topk_bucket_split_u32;
}

macro_rules! bucket_cand_kernels {
    ($($c:ty: $count:ident = $cname:ident, $split:ident = $sname:ident;)*) => {$(
        $crate::kernel! {
            /// A bucket-select pass's histogram over candidates.
            $count = $cname[NT = 256, IPT = 1](
                cands: *const Candidate, n: u32, pass: *const BucketPass, hist: *mut u32
            ) {
                let local = $crate::shared_array!(bucket_hist: [u32; BUCKETS]);
                // SAFETY: the host passes `n` candidates, a pass whose shift spans its range
                // and BUCKETS zeroed counts.
                unsafe {
                    count::<$c, NT>(Cands::<NT> { cands, n: n as usize }, pass, hist, local)
                }
            }
        }
        $crate::kernel! {
            /// A bucket-select split of candidates.
            $split = $sname[NT = 256, IPT = 1](
                cands: *const Candidate, n: u32, pass: *const BucketPass,
                result: *mut Candidate, result_cap: u32, next: *mut Candidate, next_cap: u32,
                counts: *mut SplitCounts
            ) {
                // SAFETY: the host passes `n` candidates, the pass, the counts and the
                // buffers' rooms.
                unsafe {
                    split::<$c>(Cands::<NT> { cands, n: n as usize }, pass, result, result_cap,
                        next, next_cap, counts)
                }
            }
        }
    )*};
}

bucket_cand_kernels! {
    u64: TOPK_BUCKET_COUNT_CANDS = topk_bucket_count_cands, TOPK_BUCKET_SPLIT_CANDS = topk_bucket_split_cands;
    super::topk_bitonic::Wide: TOPK_BUCKET_COUNT_WIDE = topk_bucket_count_wide, TOPK_BUCKET_SPLIT_WIDE = topk_bucket_split_wide;
}
