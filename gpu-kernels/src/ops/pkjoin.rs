//! Primary-key join through a bulk-synchronous sample sort (seed 002), one kernel per step.
//!
//! Both key columns are sorted together as one array of `(radix key, row)` pairs, where `row`
//! is the position in `A ++ B` (so `row < na` means side A and the payloads are gathered at the
//! end). The sort is a stable sample sort, level by level, over a list of [`Segment`]s (level 1:
//! the whole array):
//!
//! 1. **sort tiles** ([`PK_SORT_INPUT_U32`], [`PK_SORT_SEGMENTS`]): every tile of
//!    `SORT_NT * SORT_IPT` items is radix-sorted in shared memory (the block-wise radix sort),
//! 2. **splitters** ([`PK_SPLITTERS`]): per segment, `p log p` samples at hashed positions are
//!    sorted in one block and `p - 1` equi-spaced picks, deduplicated, become the splitters,
//! 3. **partition** ([`PK_PARTITION`]): each item's bucket by binary search over the splitters
//!    ([`bucket_of`]), and the tile's split counts with shared-memory atomics, written
//!    bucket-major (`counts[bucket][tile]` per segment),
//! 4. **prefix sum**: one device-wide exclusive scan over all segments' counts gives every
//!    (bucket, tile) run its place (the host calls the project's device scan),
//! 5. **scatter** ([`PK_SCATTER`]): each item goes to its run's place plus its rank within the
//!    run (a segmented prefix sum over the sorted tile's bucket runs),
//! 6. **bucket sort** ([`PK_BUCKET_SORT`]): buckets of at most [`BUCKET_CAPACITY`] items are
//!    sorted in place by one block each; larger ones become the next level's segments.
//!
//! Buckets alternate between ranges and **equality buckets** (keys equal to one splitter,
//! IPS4o's trick): a heavy key is isolated in its own bucket, which is already sorted, and every
//! other bucket of a segment is strictly smaller than the segment (the splitters are keys of the
//! segment), so skew and all-equal keys cannot stall the recursion. Each step is stable, so the
//! whole sort is: equal keys keep their row order, A's rows before B's.
//!
//! 7. **join** ([`PK_JOIN_U32`]): adjacent equal keys with rows from A then B are a match and
//!    are written in key order (ordered compaction with the decoupled look-back); adjacent
//!    equal keys from one side are a duplicate primary key, reported in an error word.

#[cfg(target_arch = "nvptx64")]
use crate::arch::{block_idx, sync_threads, thread_idx};
#[cfg(target_arch = "nvptx64")]
use crate::block::*;

/// Threads of the tile-sort, splitter, partition, scatter and join kernels.
pub const SORT_NT: usize = 256;
/// Items per thread of those kernels.
pub const SORT_IPT: usize = 8;
/// Items per sorted tile.
pub const SORT_TILE: usize = SORT_NT * SORT_IPT;
/// Threads of the bucket-sort kernel.
pub const BUCKET_NT: usize = 256;
/// Items per thread of the bucket-sort kernel.
pub const BUCKET_IPT: usize = 16;
/// Largest bucket one block sorts.
pub const BUCKET_CAPACITY: usize = BUCKET_NT * BUCKET_IPT;
/// Most splitters per segment (so at most `2 * 255 + 1` buckets: the split counts of a segment
/// stay a quarter of its items, and `p log p` samples fit one sorted tile).
pub const MAX_SPLITTERS: u32 = 255;
/// Words per segment in the splitter array: the number of distinct splitters, then them.
pub const SPLITTER_WORDS: usize = MAX_SPLITTERS as usize + 1;
/// Levels after which the host gives up (each level shrinks every bucket; a random sample
/// makes that geometric, so this is never reached in practice).
pub const MAX_LEVELS: u32 = 32;

/// One range of the array being sorted at a level, with where its tiles, split counts and
/// buckets live. The kernels take the level's segments as a `*const Segment`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Segment {
    /// First item.
    pub start: u32,
    /// Items.
    pub len: u32,
    /// Global index of its first tile (tiles of all segments are numbered in segment order).
    pub first_tile: u32,
    /// Tiles (`ceil(len / SORT_TILE)`).
    pub tiles: u32,
    /// Offset of its `buckets x tiles` split counts in the level's count array.
    pub count_base: u32,
    /// Items in all earlier segments of the level (the scan's value at `count_base`).
    pub items_before: u32,
    /// Index of its first bucket in the level's bucket list.
    pub bucket_base: u32,
    /// Splitters requested (`p - 1`); the segment has `2 * splitters + 1` bucket slots.
    pub splitters: u32,
}

impl Segment {
    /// Bucket slots (ranges and equality buckets).
    pub const fn buckets(&self) -> u32 {
        2 * self.splitters + 1
    }

    /// Splitters for a segment of `len` items: enough for buckets of half the bucket
    /// capacity, at least one, at most [`MAX_SPLITTERS`].
    pub const fn splitters_for(len: u32) -> u32 {
        let p = (2 * len as u64).div_ceil(BUCKET_CAPACITY as u64);
        let p = if p < 2 { 2 } else { p };
        let p = if p > MAX_SPLITTERS as u64 + 1 {
            MAX_SPLITTERS as u64 + 1
        } else {
            p
        };
        (p - 1) as u32
    }

    /// Samples drawn: `p * ceil(log2 p)` (the seed's `p log p`), at most one sorted tile and at
    /// most the segment's length.
    pub const fn samples(&self) -> u32 {
        let p = self.splitters + 1;
        let log = 32 - (p - 1).leading_zeros();
        let s = p * if log < 1 { 1 } else { log };
        let s = if s > SORT_TILE as u32 {
            SORT_TILE as u32
        } else {
            s
        };
        if s > self.len { self.len } else { s }
    }
}

/// Bucket of `key` among `count` distinct ascending splitters (`get(i)` is splitter `i`):
/// `2 i` for the keys strictly between splitters `i - 1` and `i`, `2 i + 1` for the keys equal
/// to splitter `i`. Binary search: the number of splitters below the key.
#[inline(always)]
pub fn bucket_of(key: u32, count: usize, get: impl Fn(usize) -> u32) -> u32 {
    let (mut lo, mut hi) = (0usize, count);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if get(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (2 * lo + (lo < count && get(lo) == key) as usize) as u32
}

/// Position (within a segment of `len > 0` items) of sample `i` at recursion `level`: a hash,
/// so samples are spread over the segment without a random-number state.
#[inline(always)]
pub fn sample_position(level: u32, segment: u32, i: u32, len: u32) -> u32 {
    let mut x = ((level as u64) << 56) ^ ((segment as u64) << 32) ^ i as u64;
    // SplitMix64's finalizer.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    ((x as u32 as u64 * len as u64) >> 32) as u32
}

/// Error word of the join kernel when no duplicate was seen.
pub const NO_DUPLICATE: u64 = u64::MAX;

/// The join kernel's error word for a duplicate `key` (radix bits) on side A (`side_b` false)
/// or B: the smallest word wins, so the report names the smallest duplicated key, side A first.
#[inline(always)]
pub const fn duplicate_word(key_bits: u32, side_b: bool) -> u64 {
    ((key_bits as u64) << 1) | side_b as u64
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{Atomic, Shared, block_idx, sync_threads, thread_idx};
    use crate::radix::RadixKey;

    /// Reads segment `s` from the kernels' segment words.
    ///
    /// # Safety
    /// `segs` holds more than `s` segments.
    #[inline(always)]
    pub unsafe fn segment(segs: *const Segment, s: usize) -> Segment {
        // SAFETY: by contract.
        unsafe { segs.add(s).read() }
    }

    /// The segment whose range of `field` values contains `x` (segments are in ascending order
    /// of `field`, the first starting at 0): binary search.
    ///
    /// # Safety
    /// `segs` holds `nsegs > 0` segments.
    #[inline(always)]
    pub unsafe fn find_segment(
        segs: *const Segment,
        nsegs: usize,
        x: u32,
        field: impl Fn(&Segment) -> u32,
    ) -> (usize, Segment) {
        let (mut lo, mut hi) = (0usize, nsegs - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            // SAFETY: mid < nsegs.
            if field(&unsafe { segment(segs, mid) }) <= x {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        // SAFETY: lo < nsegs.
        (lo, unsafe { segment(segs, lo) })
    }

    /// The tile this block sorts, partitions or scatters.
    ///
    /// # Safety
    /// As for [`find_segment`].
    #[inline(always)]
    pub unsafe fn segment_tile(segs: *const Segment, nsegs: usize) -> SegmentTile {
        let g = block_idx() as u32;
        // SAFETY: forwarded.
        let (index, seg) = unsafe { find_segment(segs, nsegs, g, |s| s.first_tile) };
        let tile = (g - seg.first_tile) as usize;
        let offset = tile * SORT_TILE;
        SegmentTile {
            index,
            seg,
            tile,
            start: seg.start as usize + offset,
            valid: (seg.len as usize - offset).min(SORT_TILE),
        }
    }

    /// A block's tile within its segment.
    pub struct SegmentTile {
        /// Index of the segment in the level's list.
        pub index: usize,
        /// The segment.
        pub seg: Segment,
        /// Index of the tile within the segment.
        pub tile: usize,
        /// First item of the tile in the array.
        pub start: usize,
        /// Items in the tile.
        pub valid: usize,
    }

    /// Loads a segment's distinct splitters into shared memory and returns how many there are.
    ///
    /// # Safety
    /// `splitters` holds the segment's [`SPLITTER_WORDS`] words; `sh` holds `MAX_SPLITTERS`.
    #[inline(always)]
    pub unsafe fn load_splitters(splitters: *const u32, sh: Shared<u32>) -> usize {
        // SAFETY: by contract; the count is at most MAX_SPLITTERS.
        unsafe {
            let count = splitters.read() as usize;
            let mut i = thread_idx();
            while i < count {
                sh.write(i, splitters.add(1 + i).read());
                i += SORT_NT;
            }
            sync_threads();
            count
        }
    }

    /// Sorts one tile of `valid` items (keys and rows read by position) and stores it striped
    /// at `keys_out` / `rows_out`.
    ///
    /// # Safety
    /// The outputs hold `valid` items.
    #[inline(always)]
    pub unsafe fn sort_tile<const NT: usize, const IPT: usize>(
        valid: usize,
        key_at: impl Fn(usize) -> u32,
        row_at: impl Fn(usize) -> u32,
        keys_out: *mut u32,
        rows_out: *mut u32,
        sh: BlockSortShared,
    ) {
        let mut keys = [0u32; IPT];
        let mut rows = [0u32; IPT];
        // Padding keys are last in blocked order, so the stable sort keeps them last even
        // against real u32::MAX keys.
        block_load_blocked::<NT, IPT>(valid, key_at, u32::MAX, &mut keys, sh.exchange);
        block_load_blocked::<NT, IPT>(valid, row_at, u32::MAX, &mut rows, sh.exchange);
        let end = block_differing_bits::<NT, IPT>(&keys, valid, sh.scan);
        block_radix_sort::<u32, NT, IPT>(&mut keys, &mut rows, 0, end, sh);
        // SAFETY: forwarded.
        unsafe {
            block_store_striped::<u32, NT, IPT>(keys_out, valid, &keys);
            block_store_striped::<u32, NT, IPT>(rows_out, valid, &rows);
        }
    }

    /// The adjacent-match join over one tile of the sorted `(key, row)` pairs: a pair of equal
    /// keys with rows from A then B is a match, written (key, A payload, B payload) after the
    /// matches of all earlier tiles; equal keys from one side lower the error word to
    /// [`duplicate_word`].
    ///
    /// # Safety
    /// `keys` / `rows` hold `n` sorted pairs; the payload arrays hold `na` and `n - na` words;
    /// the outputs hold every match; `state` is zeroed select-style state for the tiles;
    /// `error` is a valid word.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn join<K: RadixKey<Bits = u32>>(
        keys: *const u32,
        rows: *const u32,
        n: usize,
        na: u32,
        a_vals: *const u32,
        b_vals: *const u32,
        out_keys: *mut K,
        out_a: *mut u32,
        out_b: *mut u32,
        state: *mut u64,
        error: *mut u64,
        skeys: Shared<u32>,
        srows: Shared<u32>,
        scan: Shared<u32>,
        slots: Shared<u32>,
    ) {
        const NT: usize = SORT_NT;
        const IPT: usize = SORT_IPT;
        let t = thread_idx();
        // SAFETY: forwarded contracts; shared indices stay below SORT_TILE + 1.
        unsafe {
            let tile = block_dynamic_tile_id(state.cast::<u32>(), slots);
            let start = tile * SORT_TILE;
            let valid = (n - start).min(SORT_TILE);
            // The tile, and the next tile's first pair for the match across the boundary.
            for k in 0..IPT {
                let pos = k * NT + t;
                if pos < valid {
                    skeys.write(pos, keys.add(start + pos).read());
                    srows.write(pos, rows.add(start + pos).read());
                }
            }
            if t == 0 && start + valid < n {
                skeys.write(valid, keys.add(start + valid).read());
                srows.write(valid, rows.add(start + valid).read());
            }
            sync_threads();
            let mut flags = [0u32; IPT];
            for (k, f) in flags.iter_mut().enumerate() {
                let pos = k * NT + t;
                if pos < valid && start + pos + 1 < n && skeys.read(pos) == skeys.read(pos + 1) {
                    let (a0, a1) = (srows.read(pos) < na, srows.read(pos + 1) < na);
                    if a0 && !a1 {
                        *f = 1;
                    } else if a0 == a1 {
                        u64::atomic_min(error, duplicate_word(skeys.read(pos), !a0));
                    }
                    // (B, A) cannot occur: the sort is stable and A's rows come first.
                }
            }
            let mut rank = [0u32; IPT];
            let count = block_exclusive_sum::<Striped, u32, NT, IPT>(&flags, &mut rank, scan);
            let status = state.add(crate::ops::select::STATE_HEADER as usize);
            let offset = block_tile_prefix(status, tile, count, 0, slots.offset(1));
            if tile + 1 == n.div_ceil(SORT_TILE) && t == 0 {
                state.add(1).cast::<u32>().write(offset + count);
            }
            for (k, &f) in flags.iter().enumerate() {
                if f == 1 {
                    let pos = k * NT + t;
                    let o = (offset + rank[k]) as usize;
                    out_keys.add(o).write(K::from_bits(skeys.read(pos)));
                    out_a
                        .add(o)
                        .write(a_vals.add(srows.read(pos) as usize).read());
                    out_b
                        .add(o)
                        .write(b_vals.add((srows.read(pos + 1) - na) as usize).read());
                }
            }
        }
    }

    /// Level 1's tile sort: tile `block_idx()` of `A ++ B`, keys mapped to radix bits, rows
    /// are positions.
    ///
    /// # Safety
    /// `a` holds `na` keys, `b` holds `n - na`; the outputs hold `n`; one block per tile.
    #[inline(always)]
    pub unsafe fn sort_input<K: RadixKey<Bits = u32>>(
        a: *const K,
        na: usize,
        b: *const K,
        n: usize,
        keys_out: *mut u32,
        rows_out: *mut u32,
        sh: BlockSortShared,
    ) {
        let start = block_idx() * SORT_TILE;
        let valid = (n - start).min(SORT_TILE);
        let key_at = |p: usize| {
            let g = start + p;
            // SAFETY: g < n: A's rows first, then B's.
            unsafe {
                if g < na {
                    a.add(g).read()
                } else {
                    b.add(g - na).read()
                }
            }
            .to_bits()
        };
        // SAFETY: forwarded.
        unsafe {
            sort_tile::<SORT_NT, SORT_IPT>(
                valid,
                key_at,
                |p| (start + p) as u32,
                keys_out.add(start),
                rows_out.add(start),
                sh,
            )
        }
    }
}

/// Parameters of the level 1 tile sorts of keys `K`: `(a_keys, na, b_keys, n, keys_out,
/// rows_out)`; the output keys are their radix bits.
pub type SortInputArgs<K> = (*const K, u32, *const K, u32, *mut u32, *mut u32);

/// Parameters of the join kernels of keys `K`: `(keys, rows, n, na, a_vals, b_vals, out_keys,
/// out_a, out_b, state, error)`; sorted keys are radix bits, payloads any 4-byte bits.
pub type JoinArgs<K> = (
    *const u32,
    *const u32,
    u32,
    u32,
    *const u32,
    *const u32,
    *mut K,
    *mut u32,
    *mut u32,
    *mut u64,
    *mut u64,
);

crate::kernel! {
    /// Level 1 tile sort of `u32` keys: `(a_keys, na, b_keys, n, keys_out, rows_out)`.
    PK_SORT_INPUT_U32 = pk_sort_input_u32[NT = 256, IPT = 8](a: *const u32, na: u32, b: *const u32, n: u32, keys_out: *mut u32, rows_out: *mut u32) {
        let sh = crate::block_sort_shared!(NT, IPT);
        // SAFETY: the host launches one block per tile of n = na + nb items.
        unsafe { sort_input::<u32>(a, na as usize, b, n as usize, keys_out, rows_out, sh) }
    }
}

crate::kernel! {
    /// Level 1 tile sort of `i32` keys (as radix bits).
    PK_SORT_INPUT_I32 = pk_sort_input_i32[NT = 256, IPT = 8](a: *const i32, na: u32, b: *const i32, n: u32, keys_out: *mut u32, rows_out: *mut u32) {
        let sh = crate::block_sort_shared!(NT, IPT);
        // SAFETY: as for the u32 kernel.
        unsafe { sort_input::<i32>(a, na as usize, b, n as usize, keys_out, rows_out, sh) }
    }
}

crate::kernel! {
    /// Tile sort of the segments of a later level: `(keys_in, rows_in, segs, nsegs, keys_out,
    /// rows_out)`, one block per tile of every segment.
    PK_SORT_SEGMENTS = pk_sort_segments[NT = 256, IPT = 8](keys_in: *const u32, rows_in: *const u32, segs: *const Segment, nsegs: u32, keys_out: *mut u32, rows_out: *mut u32) {
        let sh = crate::block_sort_shared!(NT, IPT);
        // SAFETY: the host launches one block per tile of the nsegs > 0 segments, which lie
        // within all four buffers.
        unsafe {
            let SegmentTile { start, valid, .. } = segment_tile(segs, nsegs as usize);
            sort_tile::<NT, IPT>(valid, |p| keys_in.add(start + p).read(), |p| rows_in.add(start + p).read(),
                keys_out.add(start), rows_out.add(start), sh);
        }
    }
}

crate::kernel! {
    /// Splitters: block `s` samples segment `s` of `keys` (tile-sorted), sorts the samples and
    /// writes its distinct equi-spaced picks to `splitters[s * SPLITTER_WORDS ..]` (count
    /// first). `(keys, segs, level, splitters)`.
    PK_SPLITTERS = pk_splitters[NT = 256, IPT = 8](keys: *const u32, segs: *const Segment, level: u32, splitters: *mut u32) {
        let sh = crate::block_sort_shared!(NT, IPT);
        let picks = crate::shared_array!(pk_picks: [u32; NT]);
        let s = block_idx();
        let t = thread_idx();
        // SAFETY: one block per segment; the splitter array holds SPLITTER_WORDS per segment.
        unsafe {
            let seg = segment(segs, s);
            let samples = seg.samples() as usize;
            let at = |i: usize| keys.add(seg.start as usize + sample_position(level, s as u32, i as u32, seg.len) as usize).read();
            let mut items = [0u32; IPT];
            for (k, x) in items.iter_mut().enumerate() {
                let i = t * IPT + k;
                *x = if i < samples { at(i) } else { u32::MAX };
            }
            let end = block_differing_bits::<NT, IPT>(&items, samples, sh.scan);
            block_radix_sort::<(), NT, IPT>(&mut items, &mut [(); IPT], 0, end, sh);
            // Sorted sample r is item r / NT of thread r % NT: park them in the exchange tile.
            block_store_striped::<u32, NT, IPT>(sh.exchange.ptr(0), SORT_TILE, &items);
            sync_threads();
            // Pick j is sample (j + 1) * samples / p. Every thread writes one (those past the
            // last splitter repeat it) and the tests below are selects, not branches: with a
            // branch on `t < splitters` around the barrier, LLVM duplicated the barrier into
            // both arms, and one warp at two `bar.sync` sites (`.aligned` in PTX) never left
            // them on the H100.
            let p = seg.splitters as usize + 1;
            let j = t.min((seg.splitters as usize).saturating_sub(1));
            picks.write(t, sh.exchange.read((j + 1) * samples / p));
            sync_threads();
            let mine = t < seg.splitters as usize;
            let new_value = (t == 0) | (picks.read(t) != picks.read(t.saturating_sub(1)));
            let distinct = [(mine & new_value) as u32];
            let mut rank = [0u32];
            let count = block_exclusive_sum::<u32, u32, NT, 1>(&distinct, &mut rank, sh.scan);
            let out = splitters.add(s * SPLITTER_WORDS);
            if distinct[0] == 1 {
                out.add(1 + rank[0] as usize).write(picks.read(t));
            }
            if t == 0 {
                out.write(count);
            }
        }
    }
}

crate::kernel! {
    /// Split counts: each tile's items per bucket, counted with shared-memory atomics and
    /// written to `counts[seg.count_base + bucket * seg.tiles + tile]`. `(keys, segs, nsegs,
    /// splitters, counts)`.
    PK_PARTITION = pk_partition[NT = 256, IPT = 8](keys: *const u32, segs: *const Segment, nsegs: u32, splitters: *const u32, counts: *mut u32) {
        let split = crate::shared_array!(pk_split: [u32; MAX_SPLITTERS as usize]);
        let hist = crate::shared_array!(pk_hist: [u32; 2 * MAX_SPLITTERS as usize + 1]);
        let t = thread_idx();
        // SAFETY: one block per tile of the nsegs > 0 segments; counts hold each segment's
        // buckets x tiles words at its count_base.
        unsafe {
            let SegmentTile { index: s, seg, tile, start, valid } = segment_tile(segs, nsegs as usize);
            let buckets = seg.buckets() as usize;
            let mut j = t;
            while j < buckets {
                hist.write(j, 0);
                j += NT;
            }
            let count = load_splitters(splitters.add(s * SPLITTER_WORDS), split);
            for k in 0..IPT {
                let pos = k * NT + t;
                if pos < valid {
                    let b = bucket_of(keys.add(start + pos).read(), count, |i| split.read(i));
                    hist.atomic_add(b as usize, 1);
                }
            }
            sync_threads();
            let mut j = t;
            while j < buckets {
                counts.add(seg.count_base as usize + j * seg.tiles as usize + tile).write(hist.read(j));
                j += NT;
            }
        }
    }
}

crate::kernel! {
    /// Bucket starts after the scan: `bounds[seg.bucket_base + j]` is where bucket `j` of its
    /// segment begins in the array. One thread per bucket slot: `(scan, segs, nsegs, slots,
    /// bounds)`.
    PK_BUCKET_BOUNDS = pk_bucket_bounds[NT = 256, IPT = 1](scan: *const u32, segs: *const Segment, nsegs: u32, slots: u32, bounds: *mut u32) {
        let q = crate::arch::global_idx();
        if q < slots as usize {
            // SAFETY: q indexes the level's bucket slots; the scan covers every count.
            unsafe {
                let (_, seg) = find_segment(segs, nsegs as usize, q as u32, |s| s.bucket_base);
                let j = q - seg.bucket_base as usize;
                let run = scan.add(seg.count_base as usize + j * seg.tiles as usize).read();
                bounds.add(q).write(seg.start.wrapping_sub(seg.items_before).wrapping_add(run));
            }
        }
    }
}

crate::kernel! {
    /// Scatter: every item of a sorted tile goes to its (bucket, tile) run's place from the
    /// scanned counts plus its rank within the tile's bucket run. `(keys_in, rows_in, segs,
    /// nsegs, splitters, scan, keys_out, rows_out)`.
    PK_SCATTER = pk_scatter[NT = 256, IPT = 8](keys_in: *const u32, rows_in: *const u32, segs: *const Segment, nsegs: u32, splitters: *const u32, scan: *const u32, keys_out: *mut u32, rows_out: *mut u32) {
        let split = crate::shared_array!(pk_split: [u32; MAX_SPLITTERS as usize]);
        let ids = crate::shared_array!(pk_ids: [u16; NT * IPT]);
        let first = crate::shared_array!(pk_first: [u16; 2 * MAX_SPLITTERS as usize + 1]);
        let t = thread_idx();
        // SAFETY: as for the partition kernel; the scan holds the exclusive prefix of its counts.
        unsafe {
            let SegmentTile { index: s, seg, tile, start, valid } = segment_tile(segs, nsegs as usize);
            let count = load_splitters(splitters.add(s * SPLITTER_WORDS), split);
            let mut keys = [0u32; IPT];
            let mut bucket = [0u32; IPT];
            for k in 0..IPT {
                let pos = k * NT + t;
                if pos < valid {
                    keys[k] = keys_in.add(start + pos).read();
                    bucket[k] = bucket_of(keys[k], count, |i| split.read(i));
                    ids.write(pos, bucket[k] as u16);
                }
            }
            sync_threads();
            // The tile is sorted, so each bucket is one run: its head records where it starts.
            for k in 0..IPT {
                let pos = k * NT + t;
                if pos < valid && (pos == 0 || ids.read(pos - 1) as u32 != bucket[k]) {
                    first.write(bucket[k] as usize, pos as u16);
                }
            }
            sync_threads();
            let base = seg.start.wrapping_sub(seg.items_before);
            for k in 0..IPT {
                let pos = k * NT + t;
                if pos < valid {
                    let b = bucket[k] as usize;
                    let run = scan.add(seg.count_base as usize + b * seg.tiles as usize + tile).read();
                    let dest = base.wrapping_add(run) as usize + pos - first.read(b) as usize;
                    keys_out.add(dest).write(keys[k]);
                    rows_out.add(dest).write(rows_in.add(start + pos).read());
                }
            }
        }
    }
}

crate::kernel! {
    /// Bucket sort in place: block `i` sorts the bucket at `buckets[2 i]` of `buckets[2 i + 1]
    /// <= BUCKET_CAPACITY` items. `(keys, rows, buckets)`.
    PK_BUCKET_SORT = pk_bucket_sort[NT = 256, IPT = 16](keys: *mut u32, rows: *mut u32, buckets: *const u32) {
        let sh = crate::block_sort_shared!(NT, IPT);
        let i = block_idx();
        // SAFETY: one block per listed bucket; buckets lie within the arrays and are disjoint.
        unsafe {
            let start = buckets.add(2 * i).read() as usize;
            let valid = buckets.add(2 * i + 1).read() as usize;
            let (k, r) = (keys.add(start), rows.add(start));
            sort_tile::<NT, IPT>(valid, |p| k.add(p).read(), |p| r.add(p).read(), k, r, sh);
        }
    }
}

/// The join over the sorted pairs, for key type `$k`.
macro_rules! join_kernels {
    ($($spec:ident = $name:ident: $k:ty;)*) => {$(
        crate::kernel! {
            /// Adjacent-match join: `(keys, rows, n, na, a_vals, b_vals, out_keys, out_a, out_b,
            /// state, error)`; `state` is zeroed select-style state, `error` starts at
            /// `NO_DUPLICATE`.
            $spec = $name[NT = 256, IPT = 8](keys: *const u32, rows: *const u32, n: u32, na: u32, a_vals: *const u32, b_vals: *const u32,
                out_keys: *mut $k, out_a: *mut u32, out_b: *mut u32, state: *mut u64, error: *mut u64) {
                let skeys = crate::shared_array!(pk_join_keys: [u32; NT * IPT + 1]);
                let srows = crate::shared_array!(pk_join_rows: [u32; NT * IPT + 1]);
                let scan = crate::shared_array!(pk_join_scan: [u32; crate::layout::scan_temp_words(NT, IPT, 1)]);
                let slots = crate::shared_array!(pk_join_slots: [u32; 2]);
                // SAFETY: one block per tile of the n sorted pairs; outputs hold min(na, nb)
                // rows, which bounds the matches.
                unsafe { join::<$k>(keys, rows, n as usize, na, a_vals, b_vals, out_keys, out_a, out_b, state, error, skeys, srows, scan, slots) }
            }
        }
    )*};
}

join_kernels! {
    PK_JOIN_U32 = pk_join_u32: u32;
    PK_JOIN_I32 = pk_join_i32: i32;
}

/// Kernels that run one block-wise radix sort per tile, for the tests of every tile
/// configuration the join uses (and a small one).
#[cfg(feature = "testing")]
pub mod testing {
    #[cfg(target_arch = "nvptx64")]
    use crate::block::*;

    /// Parameters of the block-sort test kernels: `(keys, vals, n, begin, end, keys_out,
    /// vals_out)`.
    pub type BlockSortArgs = (*const u32, *const u32, u32, u32, u32, *mut u32, *mut u32);

    macro_rules! block_sort_test_kernels {
        ($($spec:ident = $name:ident: $nt:literal x $ipt:literal, $v:ty;)*) => {$(
            crate::kernel! {
                /// Sorts each tile of `(keys, vals)` (`n` items) by bits `begin .. end` and
                /// stores it in place of the input at `keys_out` / `vals_out`.
                $spec = $name[NT = $nt, IPT = $ipt](keys: *const u32, vals: *const u32, n: u32, begin: u32, end: u32, keys_out: *mut u32, vals_out: *mut u32) {
                    let sh = crate::block_sort_shared!(NT, IPT);
                    let start = crate::arch::block_idx() * NT * IPT;
                    let valid = (n as usize - start).min(NT * IPT);
                    let mut k = [0u32; IPT];
                    let mut v = [0u32; IPT];
                    // SAFETY: one block per tile of n items in every buffer.
                    unsafe {
                        block_load_blocked::<NT, IPT>(valid, |p| keys.add(start + p).read(), u32::MAX, &mut k, sh.exchange);
                        block_load_blocked::<NT, IPT>(valid, |p| vals.add(start + p).read(), u32::MAX, &mut v, sh.exchange);
                        let mut vv: [$v; IPT] = core::array::from_fn(|i| <$v as ValueBits>::from_bits(v[i]));
                        block_radix_sort::<$v, NT, IPT>(&mut k, &mut vv, begin, end, sh);
                        block_store_striped::<u32, NT, IPT>(keys_out.add(start), valid, &k);
                        if core::mem::size_of::<$v>() != 0 {
                            let v: [u32; IPT] = core::array::from_fn(|i| ValueBits::bits(vv[i]));
                            block_store_striped::<u32, NT, IPT>(vals_out.add(start), valid, &v);
                        }
                    }
                }
            }
        )*};
    }

    /// Values the test kernels carry: `u32`, or nothing.
    #[cfg(target_arch = "nvptx64")]
    trait ValueBits {
        fn from_bits(v: u32) -> Self;
        fn bits(self) -> u32;
    }
    #[cfg(target_arch = "nvptx64")]
    impl ValueBits for u32 {
        fn from_bits(v: u32) -> Self {
            v
        }
        fn bits(self) -> u32 {
            self
        }
    }
    #[cfg(target_arch = "nvptx64")]
    impl ValueBits for () {
        fn from_bits(_: u32) -> Self {}
        fn bits(self) -> u32 {
            0
        }
    }

    block_sort_test_kernels! {
        BLOCK_SORT_256X8 = block_sort_256x8: 256 x 8, u32;
        BLOCK_SORT_256X16 = block_sort_256x16: 256 x 16, u32;
        BLOCK_SORT_KEYS_256X8 = block_sort_keys_256x8: 256 x 8, ();
        BLOCK_SORT_64X3 = block_sort_64x3: 64 x 3, u32;
    }

    /// Every block-sort test kernel and whether it carries values.
    pub const ALL: [(crate::spec::KernelSpec<BlockSortArgs>, bool); 4] = [
        (BLOCK_SORT_256X8, true),
        (BLOCK_SORT_256X16, true),
        (BLOCK_SORT_KEYS_256X8, false),
        (BLOCK_SORT_64X3, true),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_alternate_ranges_and_equality() {
        let s = [10u32, 20, 30];
        let b = |k| bucket_of(k, s.len(), |i| s[i]);
        assert_eq!(
            [b(0), b(9), b(10), b(11), b(20), b(25), b(30), b(31)],
            [0, 0, 1, 2, 3, 4, 5, 6]
        );
        assert_eq!(b(u32::MAX), 6);
        assert_eq!(bucket_of(5, 0, |_| 0), 0, "no splitters: one bucket");
        let top = [u32::MAX];
        assert_eq!(bucket_of(u32::MAX, 1, |i| top[i]), 1);
    }

    #[test]
    fn segment_sizing() {
        assert_eq!(Segment::splitters_for(BUCKET_CAPACITY as u32 + 1), 2);
        assert_eq!(Segment::splitters_for(u32::MAX), MAX_SPLITTERS);
        let s = Segment {
            len: 1 << 30,
            splitters: MAX_SPLITTERS,
            ..Default::default()
        };
        assert_eq!(
            s.samples(),
            SORT_TILE as u32,
            "p log p = 256 * 8 fills one tile"
        );
        assert_eq!(s.buckets(), 511);
        let s = Segment {
            len: 5000,
            splitters: 2,
            ..Default::default()
        };
        assert_eq!(s.samples(), 3 * 2);
        assert_eq!(
            size_of::<Segment>(),
            8 * 4,
            "no padding: the host uploads it as is"
        );
    }

    #[test]
    fn sample_positions_stay_in_range_and_spread() {
        let len = 10_007;
        let mut hist = [0u32; 10];
        for i in 0..20_000 {
            let p = sample_position(1, 3, i, len);
            assert!(p < len);
            hist[(p as usize * 10) / len as usize] += 1;
        }
        assert!(hist.iter().all(|&h| (1500..2500).contains(&h)), "{hist:?}");
    }

    #[test]
    fn duplicate_words_order_by_key_then_side() {
        assert!(duplicate_word(3, true) < duplicate_word(4, false));
        assert!(duplicate_word(3, false) < duplicate_word(3, true));
        assert!(duplicate_word(u32::MAX, true) < NO_DUPLICATE);
    }
}
