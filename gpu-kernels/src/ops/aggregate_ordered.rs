//! Ordered aggregation (issue 22; seeds 003 and 004): the count and the 64-bit sum of a `u32`
//! column over each run of equal keys, on input already in key order (after a sort, a
//! sort-merge join, or a clustered column), each group's key and aggregates in run order.
//!
//! A row is a head where its key differs from the row before; the group of a row is the
//! number of heads up to it. The pipelines of seed 004 compute that position and aggregate by
//! it, each thread taking one chunk of `chunk` consecutive rows:
//!
//! * five kernels: map (a head flag per row), the partial prefix sum of the flags per chunk
//!   and the chunk's total, the offsets (the exclusive scan of the totals, `ops::scan`), the
//!   offset addition (each row's group) and the aggregation;
//! * three: map, partial sum and offsets fused into one kernel (the offsets from a block scan
//!   of the chunks' totals and the decoupled look-back over the blocks, where the seed's
//!   kernel adds each total to every later offset with atomics), then the offset addition and
//!   the aggregation;
//! * two: the first kernel writes only each chunk's offset, and the aggregation finds the
//!   groups from the keys itself, starting at its chunk's offset.
//!
//! The aggregation variants (seed 003) differ in how many atomics they issue and where:
//!
//! * naive: one atomic per row and accumulator (seed 004's direct atomics with one row per
//!   thread, its chunked atomics with more);
//! * private variable: a thread accumulates the rows of its current group and adds them with
//!   atomics when the group changes: one flush per group of its chunk;
//! * private array: as the variable, but only the chunk's first and last group can be shared
//!   with another thread, so only those two flushes are atomic and the groups in between are
//!   stored plainly (two atomics per thread whatever the distribution). The seed buffers the
//!   chunk's groups in a private array before writing them; a group in between is complete
//!   when the next begins, so it is stored then, without the array's local-memory traffic;
//!
//! each with its target in device memory (flushes go to the result) or in shared memory (to a
//! table of the block's groups, indexed from the block's first group, which the block then
//! merges into the result with atomics for its first and last group and plain stores for the
//! rest). In both private variants the flushes of the chunks' last groups are merged across
//! the warp first (lanes ending in the same group add theirs with shuffles, and one of them
//! flushes), so that a run longer than a chunk costs one atomic a warp, not one a thread.
//!
//! Every kernel takes one [`OrderedParams`] and runs with any block width that is a multiple
//! of 32 up to 1024 (the benchmarks sweep it); thread `t` of the grid takes rows
//! `[t * chunk, (t + 1) * chunk)`. Read that way, consecutive lanes load words `chunk` apart,
//! and past a few rows per thread the warps' lines no longer fit the L1 cache; with
//! `staged`, each warp first copies its `32 * chunk` rows to shared memory with coalesced
//! loads (the chunks' kernels' columns: keys, or positions or keys and values) and each lane
//! reads its chunk from there.

/// Most rows a block may hold with its target in shared memory (`threads * chunk`): a table
/// entry per row, 12 bytes each.
pub const ORDERED_SHARED_ROWS: usize = 16384;

/// Dynamic shared memory of an aggregation kernel whose target is in shared memory, for a
/// block of `rows` rows: the sums, then the counts, then two words (the block's first and last
/// group).
pub const fn ordered_shared_bytes(rows: usize) -> usize {
    12 * rows + 8
}

/// Most rows a block may hold with staged loads (`threads * chunk`).
pub const ORDERED_STAGED_ROWS: usize = 8192;

/// Shared words of one column's staged rows for a block of `rows` rows: a warp's rows with one
/// word of padding per 32, so that lanes reading their chunks hit distinct banks.
pub const fn staged_words(rows: usize) -> usize {
    rows + rows / 32
}

/// Dynamic shared memory of a kernel of `rows` rows per block: the shared target's table
/// (`shared`) and the staged columns (`staged` of them).
pub const fn ordered_dynamic_bytes(rows: usize, shared: bool, staged: usize) -> usize {
    let table = if shared {
        ordered_shared_bytes(rows)
    } else {
        0
    };
    table + 4 * staged * staged_words(rows)
}

/// Most rows per thread (`chunk`); chunks are powers of two.
pub const ORDERED_MAX_CHUNK: usize = 4096;

/// Aggregation variant: one atomic per row and accumulator.
pub const NAIVE: u32 = 0;
/// Aggregation variant: one atomic flush per group of a thread's chunk.
pub const PRIVATE_VARIABLE: u32 = 1;
/// Aggregation variant: atomic flushes for a chunk's first and last group only.
pub const PRIVATE_ARRAY: u32 = 2;

/// Parameters of every ordered-aggregation kernel: device addresses (0 where a pipeline does
/// not use the buffer) and the shape.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct OrderedParams {
    /// `n` keys (`u32`), equal keys adjacent.
    pub keys: u64,
    /// `n` values (`u32`).
    pub values: u64,
    /// `n` head flags (`u32`, five kernels).
    pub flags: u64,
    /// `n` heads per chunk up to each row (`u32`, five and three kernels).
    pub partial: u64,
    /// `n` groups, one per row (`u32`, five and three kernels).
    pub positions: u64,
    /// One `u32` per chunk: its heads (five kernels).
    pub totals: u64,
    /// One `u32` per chunk: the heads before it.
    pub offsets: u64,
    /// Look-back status words, `STATUS_STRIDE` per block, zeroed (three and two kernels).
    pub status: u64,
    /// One `u32`: the heads of all rows, written by the first kernel (three and two kernels).
    pub heads: u64,
    /// One key (`u32`) per group.
    pub out_keys: u64,
    /// One count (`u32`) per group, zeroed.
    pub counts: u64,
    /// One sum (`u64`) per group, zeroed.
    pub sums: u64,
    /// Rows.
    pub n: u32,
    /// Rows per thread, a power of two up to [`ORDERED_MAX_CHUNK`].
    pub chunk: u32,
    /// 1: each warp first copies its rows to shared memory with coalesced loads and each lane
    /// reads its chunk there (the launch gives [`ordered_dynamic_bytes`]); 0: each lane reads
    /// its chunk from device memory (seed 004's layout: consecutive lanes `chunk` rows apart).
    pub staged: u32,
    /// Padding to 8 bytes.
    pub pad: u32,
}

/// The parameter list every ordered-aggregation kernel shares.
pub type OrderedArgs = (*const OrderedParams,);

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{NAIVE, OrderedParams, PRIVATE_VARIABLE, ordered_shared_bytes, staged_words};
    use crate::arch::{
        Shared, block_dim, block_idx, dynamic_shared, global_idx, grid_dim, lane_id, red_global,
        shfl_down, shfl_up, sync_threads, sync_warp, thread_idx, warp_id,
    };
    use crate::block::{ANY_SCAN_WORDS, block_exclusive_sum_any, block_tile_prefix};

    /// A column's rows as a lane reads its chunk: from device memory, or staged in shared
    /// memory by its warp.
    #[derive(Clone, Copy)]
    pub enum Column {
        Direct(*const u32),
        /// The warp's staged rows and the lane's first among them.
        Staged(Shared<u32>, usize),
    }

    impl Column {
        /// The column `src` for this lane's chunk of `c` rows; with `stage`, its warp copies
        /// its rows (all lanes call this together) into its part of `smem`, the block's staged
        /// words of this column.
        ///
        /// # Safety
        /// `src` holds `n` items; `smem` holds `staged_words(block_dim() * c)` words.
        #[inline(always)]
        pub unsafe fn new(
            src: *const u32,
            n: usize,
            c: usize,
            stage: bool,
            smem: Shared<u32>,
        ) -> Column {
            if !stage {
                return Column::Direct(src);
            }
            let lane = lane_id() as usize;
            let warp_rows = 32 * c;
            let dst = smem.offset(warp_id() * staged_words(warp_rows));
            let first = (block_idx() * block_dim() / 32 + warp_id()) * warp_rows;
            for j in 0..c {
                let r = j * 32 + lane;
                if first + r < n {
                    // SAFETY: row first + r exists; the padded index is within the warp's part.
                    unsafe { dst.write(r + r / 32, src.add(first + r).read()) };
                }
            }
            sync_warp();
            Column::Staged(dst, lane * c)
        }

        /// Row `i` of the column, the lane's `j`-th (`i = lo + j`).
        ///
        /// # Safety
        /// `i < n` is a row of the lane's chunk.
        #[inline(always)]
        pub unsafe fn at(self, i: usize, j: usize) -> u32 {
            // SAFETY: by contract; the lane's row j is warp row `first + j`, at its padded
            // index.
            unsafe {
                match self {
                    Column::Direct(p) => p.add(i).read(),
                    Column::Staged(warp, first) => {
                        let r = first + j;
                        warp.read(r + r / 32)
                    }
                }
            }
        }
    }

    /// This thread's chunk: (its index, first row, end), empty past the rows.
    #[inline(always)]
    pub fn chunk(p: &OrderedParams) -> (usize, usize, usize) {
        let (t, n, c) = (global_idx(), p.n as usize, p.chunk as usize);
        let lo = (t * c).min(n);
        (t, lo, (lo + c).min(n))
    }

    /// Map: `flags[i] = 1` where row `i > 0` is a head. One row per thread.
    ///
    /// # Safety
    /// `p` describes `n` keys and flags; the grid covers the rows.
    #[inline(always)]
    pub unsafe fn map(p: &OrderedParams) {
        let i = global_idx();
        let keys = p.keys as *const u32;
        if i < p.n as usize {
            // SAFETY: rows i - 1 and i exist.
            unsafe {
                let head = i > 0 && keys.add(i).read() != keys.add(i - 1).read();
                (p.flags as *mut u32).add(i).write(head as u32);
            }
        }
    }

    /// Partial prefix sum of the flags per chunk, and the chunk's total (five kernels).
    ///
    /// # Safety
    /// `p` describes `n` flags and partial sums and a total per chunk.
    #[inline(always)]
    pub unsafe fn partial_flags(p: &OrderedParams) {
        let (t, lo, hi) = chunk(p);
        if lo == hi {
            return;
        }
        let mut heads = 0u32;
        for i in lo..hi {
            // SAFETY: i < n.
            unsafe {
                heads += (p.flags as *const u32).add(i).read();
                (p.partial as *mut u32).add(i).write(heads);
            }
        }
        // SAFETY: chunk t exists.
        unsafe { (p.totals as *mut u32).add(t).write(heads) };
    }

    /// Map, partial prefix sum (where `PARTIAL`) and offsets in one kernel: each chunk's heads,
    /// their block scan and the look-back over the blocks give each chunk's offset; the last
    /// block writes the heads of all rows.
    ///
    /// # Safety
    /// `p` describes `n` keys (and partial sums), an offset per chunk, zeroed status words for
    /// every block and the heads word; blocks run in index order; with `staged`, the launch
    /// gives [`ordered_dynamic_bytes`](super::ordered_dynamic_bytes)`(block_dim() * chunk,
    /// false, 1)` bytes.
    #[inline(always)]
    pub unsafe fn offsets_from_keys<const PARTIAL: bool>(p: &OrderedParams) {
        let temp = crate::shared_array!(ordered_scan: [u32; ANY_SCAN_WORDS]);
        let slot = crate::shared_array!(ordered_slot: [u32; 1]);
        let (t, lo, hi) = chunk(p);
        let (n, c) = (p.n as usize, p.chunk as usize);
        let keys = p.keys as *const u32;
        // SAFETY: the launch gives the staged words when `staged` is set; all lanes are here.
        let col = unsafe {
            let smem = dynamic_shared::<u32>(staged_words(block_dim() * c));
            Column::new(keys, n, c, p.staged != 0, smem)
        };
        let mut heads = 0u32;
        if lo < hi {
            // SAFETY: rows lo - 1 .. hi exist.
            let mut prev = unsafe { keys.add(lo.saturating_sub(1)).read() };
            for (j, i) in (lo..hi).enumerate() {
                // SAFETY: row i of this lane's chunk.
                let k = unsafe { col.at(i, j) };
                heads += (k != prev) as u32;
                prev = k;
                if PARTIAL {
                    // SAFETY: i < n.
                    unsafe { (p.partial as *mut u32).add(i).write(heads) };
                }
            }
        }
        let (before, total) = block_exclusive_sum_any(heads, temp);
        // SAFETY: zeroed status words for every block, blocks in index order.
        let prefix =
            unsafe { block_tile_prefix(p.status as *mut u64, block_idx(), total, 0, slot) };
        if lo < hi {
            // SAFETY: chunk t exists.
            unsafe { (p.offsets as *mut u32).add(t).write(prefix + before) };
        }
        if block_idx() == grid_dim() - 1 && thread_idx() == 0 {
            // SAFETY: the heads word exists.
            unsafe { (p.heads as *mut u32).write(prefix + total) };
        }
    }

    /// Offset addition: each row's group, its chunk's offset plus its partial sum. One row per
    /// thread.
    ///
    /// # Safety
    /// `p` describes `n` partial sums and positions and an offset per chunk.
    #[inline(always)]
    pub unsafe fn offset_add(p: &OrderedParams) {
        let i = global_idx();
        if i < p.n as usize {
            let c = p.chunk.trailing_zeros();
            // SAFETY: row i and its chunk exist.
            unsafe {
                let off = (p.offsets as *const u32).add(i >> c).read();
                let part = (p.partial as *const u32).add(i).read();
                (p.positions as *mut u32).add(i).write(off + part);
            }
        }
    }

    /// Where flushes go: the result in device memory, or the block's table in shared memory
    /// (`base` is the block's first group).
    #[derive(Clone, Copy)]
    enum Target {
        Global {
            counts: *mut u32,
            sums: *mut u64,
        },
        Shared {
            counts: Shared<u32>,
            sums: Shared<u64>,
            base: u32,
        },
    }

    impl Target {
        /// Adds a count and a sum to group `g`: with atomics, or with plain stores where this
        /// thread alone holds the group.
        #[inline(always)]
        unsafe fn flush(self, g: u32, count: u32, sum: u64, atomic: bool) {
            // SAFETY (both arms): g is one of the block's groups, inside the result and the
            // table; a plain store only for a group no other thread touches.
            match self {
                Target::Global { counts, sums } => unsafe {
                    let (c, s) = (counts.add(g as usize), sums.add(g as usize));
                    if atomic {
                        red_global::add_u32(c, count);
                        red_global::add_u64(s, sum);
                    } else {
                        c.write(count);
                        s.write(sum);
                    }
                },
                Target::Shared { counts, sums, base } => unsafe {
                    let j = (g - base) as usize;
                    if atomic {
                        counts.atomic_add(j, count);
                        sums.atomic_add(j, sum);
                    } else {
                        counts.write(j, count);
                        sums.write(j, sum);
                    }
                },
            }
        }
    }

    /// The aggregation: `VARIANT` ([`NAIVE`], [`PRIVATE_VARIABLE`], [`PRIVATE_ARRAY`]) into
    /// device memory or (`SHARED`) the block's table, each row's group from the positions or
    /// (`FROM_KEYS`) from the keys and the chunk's offset. Head rows write their group's key.
    ///
    /// # Safety
    /// `p` describes `n` keys and values (and positions), an offset per chunk (`FROM_KEYS`),
    /// and zeroed counts and sums for every group; the launch gives
    /// [`ordered_dynamic_bytes`](super::ordered_dynamic_bytes)`(block_dim() * chunk, SHARED,
    /// 2 * staged)` bytes of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn aggregate<const VARIANT: u32, const SHARED: bool, const FROM_KEYS: bool>(
        p: &OrderedParams,
    ) {
        let (t, lo, hi) = chunk(p);
        let (keys, values) = (p.keys as *const u32, p.values as *const u32);
        let positions = p.positions as *const u32;
        let offsets = p.offsets as *const u32;
        let n = p.n as usize;
        let rows = block_dim() * p.chunk as usize;
        let (block_lo, block_hi) = (block_idx() * rows, ((block_idx() + 1) * rows).min(n));
        let table_bytes = if SHARED {
            ordered_shared_bytes(rows)
        } else {
            0
        };
        // SAFETY: the launch gives the staged words of both columns after the table when
        // `staged` is set; all lanes are here.
        let (col, vals) = unsafe {
            let smem = dynamic_shared::<u32>(table_bytes / 4 + 2 * staged_words(rows))
                .offset(table_bytes / 4);
            let first = if FROM_KEYS { keys } else { positions };
            let stage = p.staged != 0;
            (
                Column::new(first, n, p.chunk as usize, stage, smem),
                Column::new(
                    values,
                    n,
                    p.chunk as usize,
                    stage,
                    smem.offset(staged_words(rows)),
                ),
            )
        };
        let target = if SHARED {
            // SAFETY: the launch gives ordered_shared_bytes(rows) bytes first.
            let smem = unsafe { dynamic_shared::<u64>(ordered_shared_bytes(rows) / 8) };
            let sums = smem;
            let counts = smem.offset(rows).cast::<u32>();
            let span = counts.offset(rows);
            let mut j = thread_idx();
            while j < rows {
                // SAFETY: j < rows.
                unsafe {
                    sums.write(j, 0);
                    counts.write(j, 0);
                }
                j += block_dim();
            }
            if thread_idx() == 0 {
                // SAFETY: the block's first row, the row before it and its chunk exist; two
                // span words. From the keys, its group is its chunk's offset plus its own head.
                unsafe {
                    let base = if FROM_KEYS {
                        let off = offsets.add(block_lo >> p.chunk.trailing_zeros()).read();
                        let i = block_lo;
                        off + (i > 0 && keys.add(i).read() != keys.add(i - 1).read()) as u32
                    } else {
                        positions.add(block_lo).read()
                    };
                    span.write(0, base);
                }
            }
            sync_threads();
            // SAFETY: written before the barrier.
            let base = unsafe { span.read(0) };
            Target::Shared { counts, sums, base }
        } else {
            Target::Global {
                counts: p.counts as *mut u32,
                sums: p.sums as *mut u64,
            }
        };
        // The chunk's last group, its count and its sum (none past the rows).
        let mut last = (u32::MAX, 0u32, 0u64);
        if lo < hi {
            // SAFETY: chunk t exists.
            let off = if FROM_KEYS {
                unsafe { offsets.add(t).read() }
            } else {
                0
            };
            // The group being added up (none yet: no group has this number, n < 2^32).
            let mut cur = u32::MAX;
            // From the keys: the group of the row before the chunk (0 for the first chunk),
            // and that row's key.
            let mut g = off;
            // SAFETY: row lo - 1 exists where lo > 0.
            let mut prev_key = unsafe { keys.add(lo.saturating_sub(1)).read() };
            // SAFETY: as above.
            let mut prev_g = if !FROM_KEYS && lo > 0 {
                unsafe { positions.add(lo - 1).read() }
            } else {
                0
            };
            let (mut count, mut sum, mut first) = (0u32, 0u64, true);
            for (j, i) in (lo..hi).enumerate() {
                // SAFETY: row i of this lane's chunk.
                let v = unsafe { vals.at(i, j) } as u64;
                if FROM_KEYS {
                    // SAFETY: as above.
                    let k = unsafe { col.at(i, j) };
                    let head = i == 0 || k != prev_key;
                    g += (i > 0 && head) as u32;
                    prev_key = k;
                    if head {
                        // SAFETY: g is a group of the result.
                        unsafe { (p.out_keys as *mut u32).add(g as usize).write(k) };
                    }
                } else {
                    // SAFETY: as above.
                    g = unsafe { col.at(i, j) };
                    if i == 0 || g != prev_g {
                        // SAFETY: row i and group g exist.
                        unsafe {
                            (p.out_keys as *mut u32)
                                .add(g as usize)
                                .write(keys.add(i).read())
                        };
                    }
                    prev_g = g;
                }
                if VARIANT == NAIVE {
                    // SAFETY: g is one of the block's groups.
                    unsafe { target.flush(g, 1, v, true) };
                } else {
                    if g != cur {
                        if count > 0 {
                            let atomic = VARIANT == PRIVATE_VARIABLE || first;
                            // SAFETY: cur is one of the block's groups; a group after the
                            // chunk's first that ends inside the chunk is this thread's alone.
                            unsafe { target.flush(cur, count, sum, atomic) };
                            first = false;
                        }
                        (count, sum, cur) = (0, 0, g);
                    }
                    count += 1;
                    sum += v;
                }
            }
            last = (cur, count, sum);
            if let Target::Shared { counts, .. } = target
                && hi == block_hi
            {
                // SAFETY: the second span word; one writer (the thread holding the block's
                // last row).
                unsafe { counts.offset(rows).write(1, g) };
            }
        }
        if VARIANT != NAIVE {
            // The chunks' last groups, which may go on past them, merged across the warp
            // first: its lanes hold consecutive chunks, so the lanes ending in one group are
            // consecutive (all 32 within a long run). A segmented suffix sum leaves each
            // segment's total in its lowest lane, which flushes it: one atomic where there
            // were up to 32.
            let (lg, mut lc, mut ls) = last;
            let lane = lane_id();
            let mut d = 1;
            while d < 32 {
                let (og, oc, os) = (shfl_down(lg, d), shfl_down(lc, d), shfl_down(ls, d));
                if lane + d < 32 && og == lg {
                    lc += oc;
                    ls += os;
                }
                d *= 2;
            }
            let before = shfl_up(lg, 1);
            if lc > 0 && (lane == 0 || before != lg) {
                // SAFETY: lg is the last group of this lane's chunk, one of the block's.
                unsafe { target.flush(lg, lc, ls, true) };
            }
        }
        if let Target::Shared { counts, sums, base } = target {
            sync_threads();
            // SAFETY: written before the barrier.
            let last = unsafe { counts.offset(rows).read(1) };
            let groups = (last - base) as usize + 1;
            let mut j = thread_idx();
            while j < groups {
                // SAFETY: j < groups <= rows; the result holds groups base..=last; only the
                // block's first and last group can be shared with another block.
                unsafe {
                    let (c, s) = (counts.read(j), sums.read(j));
                    let g = base as usize + j;
                    let (rc, rs) = ((p.counts as *mut u32).add(g), (p.sums as *mut u64).add(g));
                    if j == 0 || j == groups - 1 {
                        red_global::add_u32(rc, c);
                        red_global::add_u64(rs, s);
                    } else {
                        rc.write(c);
                        rs.write(s);
                    }
                }
                j += block_dim();
            }
        }
    }
}

crate::kernel! {
    /// Five kernels, 1: head flags.
    ORDERED_MAP = ordered_map[NT = 1024, IPT = 1, MIN_BLOCKS = 1](p: *const OrderedParams) {
        // SAFETY: the host passes parameters describing the rows; one thread per row.
        unsafe { device::map(&*p) }
    }
}

crate::kernel! {
    /// Five kernels, 2: partial sums of the flags per chunk, and the chunks' totals.
    ORDERED_PARTIAL = ordered_partial[NT = 1024, IPT = 1, MIN_BLOCKS = 1](p: *const OrderedParams) {
        // SAFETY: as for the map; one thread per chunk.
        unsafe { device::partial_flags(&*p) }
    }
}

crate::kernel! {
    /// Three kernels, 1: map, partial sums and the chunks' offsets.
    ORDERED_PARTIAL_OFFSETS = ordered_partial_offsets[NT = 1024, IPT = 1, MIN_BLOCKS = 1](p: *const OrderedParams) {
        // SAFETY: as for the map; one thread per chunk, zeroed status words.
        unsafe { device::offsets_from_keys::<true>(&*p) }
    }
}

crate::kernel! {
    /// Two kernels, 1: the chunks' offsets alone.
    ORDERED_OFFSETS = ordered_offsets[NT = 1024, IPT = 1, MIN_BLOCKS = 1](p: *const OrderedParams) {
        // SAFETY: as for the map; one thread per chunk, zeroed status words.
        unsafe { device::offsets_from_keys::<false>(&*p) }
    }
}

crate::kernel! {
    /// Five and three kernels: each row's group from its chunk's offset and its partial sum.
    ORDERED_OFFSET_ADD = ordered_offset_add[NT = 1024, IPT = 1, MIN_BLOCKS = 1](p: *const OrderedParams) {
        // SAFETY: as for the map; one thread per row.
        unsafe { device::offset_add(&*p) }
    }
}

/// One aggregation kernel per (variant, target, source).
macro_rules! aggregation_kernels {
    ($($spec:ident = $name:ident($variant:expr, $shared:literal, $keys:literal);)*) => {$(
        crate::kernel! {
            /// The aggregation (see [`crate::ops::aggregate_ordered`]).
            $spec = $name[NT = 1024, IPT = 1, MIN_BLOCKS = 1](p: *const OrderedParams) {
                // SAFETY: as for the map; one thread per chunk, zeroed results, the dynamic
                // shared memory of a shared target.
                unsafe { device::aggregate::<{ $variant }, $shared, $keys>(&*p) }
            }
        }
    )*};
}

aggregation_kernels! {
    ORDERED_AGG_NAIVE_GLOBAL = ordered_agg_naive_global(NAIVE, false, false);
    ORDERED_AGG_NAIVE_SHARED = ordered_agg_naive_shared(NAIVE, true, false);
    ORDERED_AGG_VARIABLE_GLOBAL = ordered_agg_variable_global(PRIVATE_VARIABLE, false, false);
    ORDERED_AGG_VARIABLE_SHARED = ordered_agg_variable_shared(PRIVATE_VARIABLE, true, false);
    ORDERED_AGG_ARRAY_GLOBAL = ordered_agg_array_global(PRIVATE_ARRAY, false, false);
    ORDERED_AGG_ARRAY_SHARED = ordered_agg_array_shared(PRIVATE_ARRAY, true, false);
    ORDERED_AGG_KEYS_NAIVE_GLOBAL = ordered_agg_keys_naive_global(NAIVE, false, true);
    ORDERED_AGG_KEYS_NAIVE_SHARED = ordered_agg_keys_naive_shared(NAIVE, true, true);
    ORDERED_AGG_KEYS_VARIABLE_GLOBAL = ordered_agg_keys_variable_global(PRIVATE_VARIABLE, false, true);
    ORDERED_AGG_KEYS_VARIABLE_SHARED = ordered_agg_keys_variable_shared(PRIVATE_VARIABLE, true, true);
    ORDERED_AGG_KEYS_ARRAY_GLOBAL = ordered_agg_keys_array_global(PRIVATE_ARRAY, false, true);
    ORDERED_AGG_KEYS_ARRAY_SHARED = ordered_agg_keys_array_shared(PRIVATE_ARRAY, true, true);
}

/// The aggregation kernels from positions, indexed `[variant][shared]`.
pub const ORDERED_AGG: [[crate::spec::KernelSpec<OrderedArgs>; 2]; 3] = [
    [ORDERED_AGG_NAIVE_GLOBAL, ORDERED_AGG_NAIVE_SHARED],
    [ORDERED_AGG_VARIABLE_GLOBAL, ORDERED_AGG_VARIABLE_SHARED],
    [ORDERED_AGG_ARRAY_GLOBAL, ORDERED_AGG_ARRAY_SHARED],
];

/// The aggregation kernels from the keys and the chunks' offsets, indexed `[variant][shared]`.
pub const ORDERED_AGG_KEYS: [[crate::spec::KernelSpec<OrderedArgs>; 2]; 3] = [
    [ORDERED_AGG_KEYS_NAIVE_GLOBAL, ORDERED_AGG_KEYS_NAIVE_SHARED],
    [
        ORDERED_AGG_KEYS_VARIABLE_GLOBAL,
        ORDERED_AGG_KEYS_VARIABLE_SHARED,
    ],
    [ORDERED_AGG_KEYS_ARRAY_GLOBAL, ORDERED_AGG_KEYS_ARRAY_SHARED],
];
