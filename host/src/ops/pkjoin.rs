//! Primary-key join by sample sort (seed 002): `A JOIN B ON A.key = B.key` for tables whose
//! keys are unique on each side, through a stable sample sort of both key columns together and
//! an adjacent-match pass. The kernels, one per step, are in `tessera_kernels::ops::pkjoin`
//! (read its module documentation for the algorithm); this module drives the levels of the
//! sort from the host.
//!
//! Design decisions:
//! * **Recursion instead of a `p x p` count matrix.** The seed sizes its buckets to a block and
//!   counts every (bucket, block) pair, which is quadratic (it stopped at 10^6 rows). Here a
//!   level splits each segment into at most 511 buckets (255 splitters plus their equality
//!   buckets), so the split counts are at most a quarter of the items; buckets larger than a
//!   block's capacity ([`BUCKET_CAPACITY`] = 4096) are split again at the next level (at 10^8
//!   rows per side: two levels), the rest are sorted by one block each.
//! * **Equality buckets** hold the keys equal to a splitter: already sorted, never split again.
//!   Every other bucket is strictly smaller than its segment, so skewed and all-equal keys
//!   finish (in one level for all-equal keys).
//! * **Duplicates**: a key that appears twice on one side is not a primary key; the join
//!   returns [`Error::InvalidArgument`] naming the smallest such key and the side (A first),
//!   exactly as [`crate::cpu::pk_join`] does. The hash join handles duplicate keys.
//! * Payloads are gathered at the end by row (the sort carries `(key, row)` pairs), so any
//!   4-byte payload type works and the sort moves 8 bytes per row.
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, LaunchConfig};
use tessera_kernels::ops::pkjoin::{
    self as k, BUCKET_CAPACITY, JoinArgs, SORT_TILE, Segment, SortInputArgs,
};
use tessera_kernels::ops::select::state_words;
use tessera_kernels::radix::RadixKey;
use tessera_kernels::spec::{KernelShape, KernelSpec};

use super::scan::exclusive_scan_into;
use crate::error::{Error, Result};
use crate::runtime::{
    DeviceColumn, DeviceItem, Gpu, MAX_COLUMN_LEN, PodBuffer, Scratch, bits_of, bits_of_mut,
    tile_grid,
};

/// Key types of the primary-key join (their radix bits order them; see
/// [`tessera_kernels::radix`]).
pub trait PkKey: DeviceItem + RadixKey<Bits = u32> {
    /// Level 1 tile sort for this key type.
    #[doc(hidden)]
    const SORT_INPUT: KernelSpec<SortInputArgs<Self>>;
    /// Join kernel for this key type.
    #[doc(hidden)]
    const JOIN: KernelSpec<JoinArgs<Self>>;
}
impl PkKey for u32 {
    const SORT_INPUT: KernelSpec<SortInputArgs<u32>> = k::PK_SORT_INPUT_U32;
    const JOIN: KernelSpec<JoinArgs<u32>> = k::PK_JOIN_U32;
}
impl PkKey for i32 {
    const SORT_INPUT: KernelSpec<SortInputArgs<i32>> = k::PK_SORT_INPUT_I32;
    const JOIN: KernelSpec<JoinArgs<i32>> = k::PK_JOIN_I32;
}

/// Payload types of the primary-key join: any 4-byte item (the kernels move its bits).
pub trait PkPayload: DeviceItem {}
impl PkPayload for u32 {}
impl PkPayload for i32 {}
impl PkPayload for f32 {}

/// Joined rows on the host, ascending by key: what [`PkJoinResult::to_rows`] reads back and
/// what the CPU join ([`crate::cpu::pk_join`]) returns.
#[derive(Clone, Debug, PartialEq)]
pub struct PkJoinRows<K, A, B> {
    /// The matching keys, ascending.
    pub keys: Vec<K>,
    /// A's payload of each key.
    pub a: Vec<A>,
    /// B's payload of each key.
    pub b: Vec<B>,
}

impl<K, A, B> PkJoinRows<K, A, B> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The joined rows on the device: one per key present in both inputs, ascending by key.
#[derive(Debug)]
pub struct PkJoinResult<K: PkKey, A: PkPayload, B: PkPayload> {
    /// The matching keys, ascending.
    pub keys: DeviceColumn<K>,
    /// A's payload of each key.
    pub a: DeviceColumn<A>,
    /// B's payload of each key.
    pub b: DeviceColumn<B>,
}

impl<K: PkKey, A: PkPayload, B: PkPayload> PkJoinResult<K, A, B> {
    /// Number of joined rows.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key matched.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Copies the rows to the host.
    pub fn to_rows(&self, gpu: &Gpu) -> Result<PkJoinRows<K, A, B>> {
        Ok(PkJoinRows {
            keys: self.keys.to_vec(gpu)?,
            a: self.a.to_vec(gpu)?,
            b: self.b.to_vec(gpu)?,
        })
    }
}

/// The error for a duplicate primary key (shared with the CPU implementation, so both report
/// the same problem the same way).
pub(crate) fn pk_duplicate_error(key: impl std::fmt::Debug, side_b: bool) -> Error {
    let side = if side_b { "b_keys" } else { "a_keys" };
    Error::invalid(format!(
        "pk_join: key {key:?} appears more than once in {side}; primary keys must be unique \
         (the hash join handles duplicate keys)"
    ))
}

/// Checks the column lengths of a primary-key join and returns `na + nb`.
pub(crate) fn check_pk_inputs(na: usize, a_vals: usize, nb: usize, b_vals: usize) -> Result<usize> {
    super::check_same_len("pk_join", "a_vals", a_vals, na)?;
    super::check_same_len("pk_join", "b_vals", b_vals, nb)?;
    let n = na + nb;
    if n > MAX_COLUMN_LEN {
        return Err(Error::invalid(format!(
            "pk_join: {na} + {nb} keys exceed the limit of {MAX_COLUMN_LEN} rows in both inputs \
             together (rows are numbered with 32 bits)"
        )));
    }
    Ok(n)
}

/// `SELECT key, A.val, B.val FROM A JOIN B USING (key)` for primary keys (unique per side),
/// ascending by key. See the module documentation for the algorithm and [`PkJoin`] to reuse
/// buffers across calls.
pub fn pk_join<K: PkKey, A: PkPayload, B: PkPayload>(
    gpu: &Gpu,
    a_keys: &DeviceColumn<K>,
    a_vals: &DeviceColumn<A>,
    b_keys: &DeviceColumn<K>,
    b_vals: &DeviceColumn<B>,
) -> Result<PkJoinResult<K, A, B>> {
    PkJoin::new().run(gpu, a_keys, a_vals, b_keys, b_vals, None)
}

/// The steps of the join whose GPU time [`PkJoin::run`] can report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PkStep {
    /// Block-wise radix sort of the tiles (every level).
    SortTiles,
    /// Sampling and splitter selection.
    Splitters,
    /// Binary-search partitioning with split counts, their prefix sum and the bucket bounds
    /// (including the host's look at the bucket sizes).
    Partition,
    /// Scatter into bucket order.
    Scatter,
    /// Sorting the buckets that fit a block.
    BucketSort,
    /// Adjacent-match join and payload gather.
    Join,
}

impl PkStep {
    /// Every step, in pipeline order.
    pub const ALL: [PkStep; 6] = [
        PkStep::SortTiles,
        PkStep::Splitters,
        PkStep::Partition,
        PkStep::Scatter,
        PkStep::BucketSort,
        PkStep::Join,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            PkStep::SortTiles => "sort tiles",
            PkStep::Splitters => "splitters",
            PkStep::Partition => "partition + scan",
            PkStep::Scatter => "scatter",
            PkStep::BucketSort => "bucket sort",
            PkStep::Join => "join",
        }
    }
}

/// GPU time per step of one join (CUDA events between the steps) and the sort's shape.
#[derive(Clone, Debug, Default)]
pub struct PkJoinSteps {
    /// Milliseconds per step, in [`PkStep::ALL`] order.
    pub ms: [f64; 6],
    /// Sample-sort levels that ran.
    pub levels: u32,
    /// Buckets sorted by one block each.
    pub small_buckets: usize,
}

/// Records events between the steps when asked to.
struct StepClock<'a> {
    gpu: &'a Gpu,
    marks: Vec<(Option<PkStep>, CudaEvent)>,
}

impl<'a> StepClock<'a> {
    fn start(gpu: &'a Gpu) -> Result<Self> {
        let mut c = StepClock {
            gpu,
            marks: Vec::new(),
        };
        c.record(None)?;
        Ok(c)
    }

    fn record(&mut self, step: Option<PkStep>) -> Result<()> {
        let ev = self
            .gpu
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(Error::driver("creating a timing event", 0))?;
        ev.record(self.gpu.stream())
            .map_err(Error::driver("recording an event", 0))?;
        self.marks.push((step, ev));
        Ok(())
    }

    fn finish(self, steps: &mut PkJoinSteps) -> Result<()> {
        for w in self.marks.windows(2) {
            let ms = w[0]
                .1
                .elapsed_ms(&w[1].1)
                .map_err(Error::driver("reading an event", 0))? as f64;
            if let Some(step) = w[1].0 {
                let i = PkStep::ALL.iter().position(|&s| s == step).expect("listed");
                steps.ms[i] += ms;
            }
        }
        Ok(())
    }
}

fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TESSERA_PK_TRACE").is_some())
}

/// With `TESSERA_PK_TRACE` set, waits for each kernel and names it on stderr (to find a
/// kernel that does not finish).
fn trace(gpu: &Gpu, what: &str) -> Result<()> {
    if tracing() {
        eprintln!("pk_join: {what} queued");
        let t = std::time::Instant::now();
        gpu.synchronize()?;
        eprintln!("pk_join: {what} done in {:?}", t.elapsed());
    }
    Ok(())
}

fn mark(clock: &mut Option<StepClock>, step: PkStep) -> Result<()> {
    match clock {
        Some(c) => c.record(Some(step)),
        None => Ok(()),
    }
}

/// The sort's working arrays: `(key bits, row)` pairs twice (tile-sorted and bucket order).
struct Pairs {
    keys: DeviceColumn<u32>,
    rows: DeviceColumn<u32>,
}

impl Pairs {
    fn new(gpu: &Gpu, n: usize) -> Result<Pairs> {
        Ok(Pairs {
            keys: gpu.zeros(n)?,
            rows: gpu.zeros(n)?,
        })
    }
}

/// A primary-key join whose working buffers are kept between calls (for repeated joins of
/// similar size, such as benchmarks).
#[derive(Default)]
pub struct PkJoin {
    bufs: Option<[Pairs; 2]>,
    counts: Option<(DeviceColumn<u32>, DeviceColumn<u32>)>,
    scan_state: Option<Scratch>,
    join_state: Option<Scratch>,
}

fn blocks(spec: &KernelShape, blocks: usize) -> Result<LaunchConfig> {
    if blocks == 0 || blocks > i32::MAX as usize {
        return Err(Error::invalid(format!(
            "{} cannot launch {blocks} blocks",
            spec.name()
        )));
    }
    Ok(LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: 0,
    })
}

/// One level of the sample sort laid out for its kernels: the segments with their tiles, split
/// counts and bucket slots numbered across the level in segment order. Pure host logic, so the
/// level loop can be checked without a GPU (see the tests).
#[derive(Debug)]
struct LevelPlan {
    segs: Vec<Segment>,
    /// Tiles of all segments (blocks of the tile sort, partition and scatter).
    tiles: u64,
    /// Split counts of all segments (`buckets x tiles` each): the scan's length.
    counts: u64,
    /// Bucket slots of all segments.
    slots: u64,
}

impl LevelPlan {
    /// Lays out `segments` (`(start, len)`, ascending and disjoint, each longer than a tile).
    fn new(segments: &[(u32, u32)]) -> LevelPlan {
        let mut plan = LevelPlan {
            segs: Vec::with_capacity(segments.len()),
            tiles: 0,
            counts: 0,
            slots: 0,
        };
        let mut items = 0u64;
        for &(start, len) in segments {
            let s = Segment {
                start,
                len,
                first_tile: plan.tiles as u32,
                tiles: len.div_ceil(SORT_TILE as u32),
                count_base: plan.counts as u32,
                items_before: items as u32,
                bucket_base: plan.slots as u32,
                splitters: Segment::splitters_for(len),
            };
            plan.tiles += s.tiles as u64;
            plan.counts += s.buckets() as u64 * s.tiles as u64;
            plan.slots += s.buckets() as u64;
            items += len as u64;
            plan.segs.push(s);
        }
        plan
    }

    /// Splits every segment at its bucket starts `bounds` (one per slot, from the bucket-bounds
    /// kernel): range buckets that fit a block are appended to `small` as `(start, len)`, the
    /// larger ones are returned as the next level's segments; equality buckets (odd slots) and
    /// buckets of at most one item are already sorted. Bounds that do not partition their
    /// segment are an error rather than a wrapped length, which would become a segment of
    /// billions of rows.
    fn split(&self, bounds: &[u32], small: &mut Vec<u32>) -> Result<Vec<(u32, u32)>> {
        if bounds.len() as u64 != self.slots {
            return Err(Error::invalid(format!(
                "pk_join: {} bucket bounds for {} slots",
                bounds.len(),
                self.slots
            )));
        }
        let mut next = Vec::new();
        for s in &self.segs {
            let base = s.bucket_base as usize;
            let nb = s.buckets() as usize;
            let seg_end = s.start + s.len;
            for j in 0..nb {
                let start = bounds[base + j];
                let end = if j + 1 < nb {
                    bounds[base + j + 1]
                } else {
                    seg_end
                };
                if start < s.start || end < start || end > seg_end {
                    return Err(Error::invalid(format!(
                        "pk_join: bucket {j} of the segment at {} ({} rows) spans {start} .. \
                         {end}, outside the segment (inconsistent split counts)",
                        s.start, s.len
                    )));
                }
                let len = end - start;
                // Odd buckets hold one key value: already sorted (the scatter is stable).
                if j % 2 == 1 || len <= 1 {
                    continue;
                }
                if len as usize <= BUCKET_CAPACITY {
                    small.extend_from_slice(&[start, len]);
                } else {
                    next.push((start, len));
                }
            }
        }
        Ok(next)
    }
}

impl PkJoin {
    /// A join with no buffers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`pk_join`], reusing this value's buffers; with `steps`, also the GPU time per step
    /// (which adds an event per kernel).
    pub fn run<K: PkKey, A: PkPayload, B: PkPayload>(
        &mut self,
        gpu: &Gpu,
        a_keys: &DeviceColumn<K>,
        a_vals: &DeviceColumn<A>,
        b_keys: &DeviceColumn<K>,
        b_vals: &DeviceColumn<B>,
        steps: Option<&mut PkJoinSteps>,
    ) -> Result<PkJoinResult<K, A, B>> {
        let (na, nb) = (a_keys.len(), b_keys.len());
        let n = check_pk_inputs(na, a_vals.len(), nb, b_vals.len())?;
        let cap = na.min(nb);
        let mut out = PkJoinResult {
            keys: gpu.zeros::<K>(cap)?,
            a: gpu.zeros::<A>(cap)?,
            b: gpu.zeros::<B>(cap)?,
        };
        if n == 0 {
            return Ok(out);
        }
        if self.bufs.as_ref().is_none_or(|b| b[0].keys.len() < n) {
            self.bufs = None; // free before allocating the larger ones
            self.bufs = Some([Pairs::new(gpu, n)?, Pairs::new(gpu, n)?]);
        }
        let mut clock = match steps {
            Some(_) => Some(StepClock::start(gpu)?),
            None => None,
        };
        let mut shape = PkJoinSteps::default();
        self.sort_input(gpu, a_keys, b_keys, &mut clock)?;
        if n > SORT_TILE {
            self.sample_sort(gpu, n, &mut shape, &mut clock)?;
        }
        let count = self.join_sorted(gpu, na, a_vals, b_vals, &mut out, &mut clock)?;
        if let (Some(c), Some(s)) = (clock, steps) {
            c.finish(&mut shape)?;
            *s = shape;
        }
        out.keys.set_len(count);
        out.a.set_len(count);
        out.b.set_len(count);
        Ok(out)
    }

    /// Level 1's tile sort of both inputs' keys with their rows, into the tile buffer (or the
    /// sorted one when one tile is the whole sort).
    fn sort_input<K: PkKey>(
        &mut self,
        gpu: &Gpu,
        a_keys: &DeviceColumn<K>,
        b_keys: &DeviceColumn<K>,
        clock: &mut Option<StepClock>,
    ) -> Result<()> {
        let (na, n) = (a_keys.len(), a_keys.len() + b_keys.len());
        let (na32, n32) = (na as u32, n as u32);
        let [sorted, tiles] = self.bufs.as_mut().expect("allocated");
        let first = if n <= SORT_TILE {
            &mut *sorted
        } else {
            &mut *tiles
        };
        let cfg = tile_grid(&K::SORT_INPUT, n, 0)?;
        let args = (
            a_keys,
            &na32,
            b_keys,
            &n32,
            &mut first.keys.buf,
            &mut first.rows.buf,
        );
        // SAFETY: one block per tile of the `n` = na + nb keys; the pair buffers hold `n`.
        unsafe { gpu.launch(&K::SORT_INPUT, cfg, args) }?;
        trace(gpu, "sort input")?;
        mark(clock, PkStep::SortTiles)
    }

    /// The sample sort's levels over the tile-sorted pairs until every segment is small, then
    /// one block sort per small bucket: the `n` pairs end sorted in the sorted buffer.
    fn sample_sort(
        &mut self,
        gpu: &Gpu,
        n: usize,
        shape: &mut PkJoinSteps,
        clock: &mut Option<StepClock>,
    ) -> Result<()> {
        let mut segments = vec![(0u32, n as u32)];
        let mut small: Vec<u32> = Vec::new();
        while !segments.is_empty() {
            if shape.levels >= k::MAX_LEVELS {
                return Err(Error::invalid(format!(
                    "pk_join: the sample sort did not finish in {} levels",
                    k::MAX_LEVELS
                )));
            }
            segments = self.level(gpu, shape.levels, &segments, &mut small, clock)?;
            shape.levels += 1;
        }
        if !small.is_empty() {
            let list = gpu.upload(&small)?;
            let spec = k::PK_BUCKET_SORT;
            let [sorted, _] = self.bufs.as_mut().expect("allocated");
            let cfg = blocks(&spec, small.len() / 2)?;
            let args = (&mut sorted.keys.buf, &mut sorted.rows.buf, &list);
            // SAFETY: one block per listed (start, len) bucket; the buckets are disjoint, lie
            // within the `n` sorted pairs and hold at most BUCKET_CAPACITY, the block's tile.
            unsafe { gpu.launch(&spec, cfg, args) }?;
            trace(gpu, "bucket sort")?;
            shape.small_buckets = small.len() / 2;
        }
        mark(clock, PkStep::BucketSort)
    }

    /// The adjacent-match join over the sorted pairs into `out`; returns the match count, or
    /// the error naming a duplicate key.
    fn join_sorted<K: PkKey, A: PkPayload, B: PkPayload>(
        &mut self,
        gpu: &Gpu,
        na: usize,
        a_vals: &DeviceColumn<A>,
        b_vals: &DeviceColumn<B>,
        out: &mut PkJoinResult<K, A, B>,
        clock: &mut Option<StepClock>,
    ) -> Result<usize> {
        let n = na + b_vals.len();
        let (na32, n32) = (na as u32, n as u32);
        let spec = K::JOIN;
        let tiles_n = spec.tiles(n as u64);
        let mut state =
            Scratch::zeroed(gpu, state_words(tiles_n) as usize, self.join_state.take())?;
        let mut error = gpu.upload(&[k::NO_DUPLICATE])?;
        let [sorted, _] = self.bufs.as_mut().expect("allocated");
        let cfg = tile_grid(&spec, n, 0)?;
        let (a, b) = (&bits_of(&a_vals.buf), &bits_of(&b_vals.buf));
        let (out_a, out_b) = (
            &mut bits_of_mut(&mut out.a.buf),
            &mut bits_of_mut(&mut out.b.buf),
        );
        let (keys, rows) = (&sorted.keys.buf, &sorted.rows.buf);
        let out_keys = &mut out.keys.buf;
        let (state_words, error_word) = (&mut state.words, &mut error.buf);
        let args = (
            keys,
            rows,
            &n32,
            &na32,
            a,
            b,
            out_keys,
            out_a,
            out_b,
            state_words,
            error_word,
        );
        // SAFETY: one block per tile of the `n` sorted pairs; the outputs hold min(na, nb)
        // rows, which bounds the matches; the state is zeroed for these tiles and the error
        // word starts at NO_DUPLICATE.
        unsafe { gpu.launch(&spec, cfg, args) }?;
        trace(gpu, "join")?;
        mark(clock, PkStep::Join)?;
        let count = Scratch::count(Some(&state), gpu)?;
        self.join_state = Some(state);
        let word = error.to_vec(gpu)?[0];
        if word != k::NO_DUPLICATE {
            return Err(pk_duplicate_error(
                K::from_bits((word >> 1) as u32),
                word & 1 == 1,
            ));
        }
        Ok(count)
    }

    /// One level of the sample sort over `segments` (tile-sorted in the tile buffer at level
    /// 0, in the sorted buffer after): splitters, partition, scan, scatter into the sorted
    /// buffer. Buckets that fit a block are added to `small` as `(start, len)`; the larger
    /// ones are returned as the next level's segments.
    fn level(
        &mut self,
        gpu: &Gpu,
        level: u32,
        segments: &[(u32, u32)],
        small: &mut Vec<u32>,
        clock: &mut Option<StepClock>,
    ) -> Result<Vec<(u32, u32)>> {
        let plan = LevelPlan::new(segments);
        let segs = &plan.segs;
        let (tiles, counts, slots) = (plan.tiles, plan.counts, plan.slots);
        let seg_dev = PodBuffer::upload(gpu, segs)?;
        let nsegs = segs.len() as u32;
        let [sorted, tile_buf] = self.bufs.as_mut().expect("allocated");
        if level > 0 {
            let spec = k::PK_SORT_SEGMENTS;
            let cfg = blocks(&spec, tiles as usize)?;
            let (keys, rows) = (&sorted.keys.buf, &sorted.rows.buf);
            let out = (&mut tile_buf.keys.buf, &mut tile_buf.rows.buf);
            let args = (keys, rows, &seg_dev, &nsegs, out.0, out.1);
            // SAFETY: one block per tile of the `nsegs` segments the plan laid out, all
            // within the `n` pairs of both buffers.
            unsafe { gpu.launch(&spec, cfg, args) }?;
            trace(gpu, "sort segments")?;
            mark(clock, PkStep::SortTiles)?;
        }

        let mut splitters = gpu.zeros::<u32>(segs.len() * k::SPLITTER_WORDS)?;
        let spec = k::PK_SPLITTERS;
        let cfg = blocks(&spec, segs.len())?;
        let args = (&tile_buf.keys.buf, &seg_dev, &level, &mut splitters.buf);
        // SAFETY: one block per segment, each within the tile-sorted keys; SPLITTER_WORDS
        // words of splitters per segment.
        unsafe { gpu.launch(&spec, cfg, args) }?;
        trace(gpu, "splitters")?;
        mark(clock, PkStep::Splitters)?;

        let counts = counts as usize;
        if self.counts.as_ref().is_none_or(|c| c.0.capacity() < counts) {
            self.counts = None;
            self.counts = Some((gpu.zeros(counts)?, gpu.zeros(counts)?));
        }
        let (cnt, scanned) = self.counts.as_mut().expect("allocated");
        cnt.set_len(counts);
        scanned.set_len(counts);
        let spec = k::PK_PARTITION;
        let cfg = blocks(&spec, tiles as usize)?;
        let args = (
            &tile_buf.keys.buf,
            &seg_dev,
            &nsegs,
            &splitters.buf,
            &mut cnt.buf,
        );
        // SAFETY: one block per tile of the segments; `cnt` holds the plan's `counts` words,
        // one per (tile, bucket).
        unsafe { gpu.launch(&spec, cfg, args) }?;
        trace(gpu, "partition")?;
        self.scan_state = Some(exclusive_scan_into(
            gpu,
            cnt,
            scanned,
            self.scan_state.take(),
        )?);
        trace(gpu, "scan")?;
        let mut bounds = gpu.zeros::<u32>(slots as usize)?;
        let spec = k::PK_BUCKET_BOUNDS;
        let slots32 = slots as u32;
        let cfg = tile_grid(&spec, slots as usize, 0)?;
        let args = (&*scanned, &seg_dev, &nsegs, &slots32, &mut bounds);
        // SAFETY: one thread per bucket slot (`slots` of them in `bounds`); the scan holds
        // every count.
        unsafe { gpu.launch(&spec, cfg, args) }?;
        trace(gpu, "bucket bounds")?;
        mark(clock, PkStep::Partition)?;

        let spec = k::PK_SCATTER;
        let cfg = blocks(&spec, tiles as usize)?;
        let (keys, rows) = (&tile_buf.keys.buf, &tile_buf.rows.buf);
        let out = (&mut sorted.keys.buf, &mut sorted.rows.buf);
        let args = (
            keys,
            rows,
            &seg_dev,
            &nsegs,
            &splitters.buf,
            &*scanned,
            out.0,
            out.1,
        );
        // SAFETY: one block per tile of the segments; the scanned counts place every item
        // of a segment within the segment's range of the sorted buffers.
        unsafe { gpu.launch(&spec, cfg, args) }?;
        trace(gpu, "scatter")?;
        mark(clock, PkStep::Scatter)?;

        // Bucket sizes decide the next level (one small download per level).
        let bounds = bounds.to_vec(gpu)?;
        if tracing() {
            eprintln!(
                "pk_join: level {level} {:?} bounds {:?}",
                plan,
                &bounds[..bounds.len().min(40)]
            );
        }
        plan.split(&bounds, small)
    }
}

#[cfg(test)]
mod tests {
    //! The level loop on the CPU: a model of each kernel's arithmetic (the same `Segment`,
    //! `bucket_of` and `sample_position` the kernels use) drives [`LevelPlan`], so the host
    //! logic of multi-tile joins (bucket bounds, split, termination) is checked without a GPU.
    use super::*;
    use k::{bucket_of, sample_position};
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// Stable sort of `keys[range]` / `rows[range]` by key, tile by tile (the tile sorts).
    fn sort_tiles(keys: &[u32], rows: &[u32], start: usize, len: usize) -> Vec<(u32, u32)> {
        let mut out = Vec::with_capacity(len);
        for t in (start..start + len).step_by(SORT_TILE) {
            let end = (t + SORT_TILE).min(start + len);
            let mut tile: Vec<(u32, u32)> = (t..end).map(|i| (keys[i], rows[i])).collect();
            tile.sort_by_key(|p| p.0);
            out.extend(tile);
        }
        out
    }

    /// The splitter kernel: sorted samples at hashed positions, equi-spaced picks, repeats
    /// dropped.
    fn splitters(level: u32, index: u32, s: &Segment, tile_keys: &[u32]) -> Vec<u32> {
        let samples = s.samples();
        let mut sample: Vec<u32> = (0..samples)
            .map(|i| tile_keys[(s.start + sample_position(level, index, i, s.len)) as usize])
            .collect();
        sample.sort_unstable();
        let p = s.splitters + 1;
        let mut picks: Vec<u32> = (0..s.splitters)
            .map(|j| sample[((j + 1) * samples / p) as usize])
            .collect();
        picks.dedup();
        picks
    }

    /// Sorts `keys` (radix bits) with rows `0..n` through the level loop, modelling each
    /// kernel on the CPU; returns the sorted pairs and the number of levels.
    fn model_sort(keys: &[u32]) -> Result<(Vec<(u32, u32)>, u32)> {
        let n = keys.len();
        let rows: Vec<u32> = (0..n as u32).collect();
        let (mut sk, mut sr) = (keys.to_vec(), rows.clone());
        let mut small = Vec::new();
        let mut segments = vec![(0u32, n as u32)];
        let mut level = 0;
        while !segments.is_empty() {
            assert!(level < k::MAX_LEVELS, "levels");
            let plan = LevelPlan::new(&segments);
            // Tile sort (level 0 reads the input, later levels the sorted buffer).
            let (mut tk, mut tr) = (sk.clone(), sr.clone());
            for s in &plan.segs {
                for (i, (k, r)) in sort_tiles(&sk, &sr, s.start as usize, s.len as usize)
                    .into_iter()
                    .enumerate()
                {
                    tk[s.start as usize + i] = k;
                    tr[s.start as usize + i] = r;
                }
            }
            let split: Vec<Vec<u32>> = plan
                .segs
                .iter()
                .enumerate()
                .map(|(i, s)| splitters(level, i as u32, s, &tk))
                .collect();
            let bucket =
                |si: usize, key: u32| bucket_of(key, split[si].len(), |i| split[si][i]) as usize;
            // Partition: counts[count_base + bucket * tiles + tile].
            let mut counts = vec![0u32; plan.counts as usize];
            for (si, s) in plan.segs.iter().enumerate() {
                for i in 0..s.len as usize {
                    let (tile, b) = (i / SORT_TILE, bucket(si, tk[s.start as usize + i]));
                    assert!(b < s.buckets() as usize);
                    counts[s.count_base as usize + b * s.tiles as usize + tile] += 1;
                }
            }
            // The device scan (wrapping, as on the GPU).
            let mut scan = Vec::with_capacity(counts.len());
            let mut acc = 0u32;
            for &c in &counts {
                scan.push(acc);
                acc = acc.wrapping_add(c);
            }
            // Bucket bounds, as the kernel computes them.
            let mut bounds = vec![0u32; plan.slots as usize];
            for s in &plan.segs {
                for j in 0..s.buckets() {
                    let run = scan[(s.count_base + j * s.tiles) as usize];
                    bounds[(s.bucket_base + j) as usize] =
                        s.start.wrapping_sub(s.items_before).wrapping_add(run);
                }
            }
            // Scatter: run start plus rank within the tile's run.
            for (si, s) in plan.segs.iter().enumerate() {
                let base = s.start.wrapping_sub(s.items_before);
                let mut seen = vec![0u32; s.buckets() as usize];
                for i in 0..s.len as usize {
                    let tile = i / SORT_TILE;
                    if i % SORT_TILE == 0 {
                        seen.fill(0);
                    }
                    let p = s.start as usize + i;
                    let b = bucket(si, tk[p]);
                    let run = scan[s.count_base as usize + b * s.tiles as usize + tile];
                    let dest = base.wrapping_add(run).wrapping_add(seen[b]) as usize;
                    seen[b] += 1;
                    sk[dest] = tk[p];
                    sr[dest] = tr[p];
                }
            }
            let before = segments.clone();
            segments = plan.split(&bounds, &mut small)?;
            for &(start, len) in &segments {
                let parent = before
                    .iter()
                    .find(|&&(s, l)| s <= start && start + len <= s + l)
                    .expect("a bucket lies in its segment");
                assert!(len < parent.1, "buckets shrink: {len} of {parent:?}");
            }
            level += 1;
        }
        for pair in small.chunks(2) {
            let (start, len) = (pair[0] as usize, pair[1] as usize);
            assert!(len <= BUCKET_CAPACITY);
            let mut b: Vec<(u32, u32)> = (start..start + len).map(|i| (sk[i], sr[i])).collect();
            b.sort_by_key(|p| p.0);
            for (i, (k, r)) in b.into_iter().enumerate() {
                sk[start + i] = k;
                sr[start + i] = r;
            }
        }
        Ok((sk.into_iter().zip(sr).collect(), level))
    }

    fn check(keys: &[u32], what: &str) -> u32 {
        let (got, levels) = model_sort(keys).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(0..).collect();
        want.sort_by_key(|p| p.0); // stable: rows ascend within a key
        assert!(got == want, "{what}: not the stable sort");
        levels
    }

    fn two_subsets(n: usize, seed: u64) -> Vec<u32> {
        let mut rng = StdRng::seed_from_u64(seed);
        let space = (n as u32 * 5).div_ceil(4);
        let mut all: Vec<u32> = (0..space).collect();
        all.shuffle(&mut rng);
        let mut keys = all[..n].to_vec();
        all.shuffle(&mut rng);
        keys.extend_from_slice(&all[..n]);
        keys
    }

    #[test]
    fn two_tiles_of_partial_matches_finish_in_one_level() {
        // The first multi-tile case of the GPU tests: 2047 keys per side, 4094 rows.
        let keys = two_subsets(2047, 2047);
        let plan = LevelPlan::new(&[(0, keys.len() as u32)]);
        assert_eq!((plan.tiles, plan.counts, plan.slots), (2, 6, 3));
        assert_eq!(check(&keys, "partial n=2047"), 1);
    }

    #[test]
    fn level_loop_sorts_every_shape() {
        let mut rng = StdRng::seed_from_u64(5);
        for n in [SORT_TILE + 1, 2 * BUCKET_CAPACITY + 3, 40_000, 300_001] {
            let uniform: Vec<u32> = (0..n).map(|_| rng.random()).collect();
            check(&uniform, &format!("uniform n={n}"));
            check(&two_subsets(n / 2, n as u64), &format!("subsets n={n}"));
            check(&vec![7; n], &format!("all equal n={n}"));
            let few: Vec<u32> = (0..n).map(|_| rng.random_range(0..3) * 1000).collect();
            check(&few, &format!("few distinct n={n}"));
            let heavy: Vec<u32> = (0..n as u32)
                .map(|i| if i % 3 == 0 { 5 } else { i })
                .collect();
            check(&heavy, &format!("heavy n={n}"));
            check(
                &(0..n as u32).rev().collect::<Vec<_>>(),
                &format!("reverse n={n}"),
            );
        }
    }

    #[test]
    fn bounds_outside_their_segment_are_an_error() {
        let plan = LevelPlan::new(&[(0, 5000)]);
        assert_eq!(plan.segs[0].buckets(), 5);
        let mut small = Vec::new();
        let next = plan
            .split(&[0, 4000, 4000, 4999, 5000], &mut small)
            .unwrap();
        assert!(next.is_empty());
        assert_eq!(
            small,
            [0, 4000, 4000, 999],
            "ranges 0 and 2; equality buckets skipped"
        );
        // A bound past the next one would wrap to a segment of ~2^32 rows.
        let e = plan
            .split(&[0, 4000, 3000, 4999, 5000], &mut small)
            .unwrap_err();
        assert!(e.to_string().contains("outside the segment"), "{e}");
        let e = plan.split(&[0, 1], &mut small).unwrap_err();
        assert!(e.to_string().contains("2 bucket bounds for 5 slots"), "{e}");
    }
}
