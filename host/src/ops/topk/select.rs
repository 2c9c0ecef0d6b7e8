//! Top-k by selection on the GPU: the threshold filter and the exact radix select (see
//! `tessera_kernels::ops::topk` for the kernels and their state).
use cudarc::driver::{CudaSlice, LaunchConfig};
use tessera_kernels::ops::topk::{
    self as kt, Candidate, DIGIT_BITS, DIGITS, FilterCounts, SelectState,
};

use super::{TopKAlgorithm, TopKOrder, TopKRows, TopKey, check_top_k, key_of_rank};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, EpochScratch, Gpu, PodBuffer, tile_grid};

/// Ranks sampled for the threshold: about this many, at a fixed stride.
pub const SAMPLE_TARGET: usize = 1 << 18;

/// Where the threshold filter samples and how far down the sample it sets the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplePlan {
    /// Distance between sampled rows.
    pub stride: usize,
    /// Ranks sampled.
    pub samples: usize,
    /// The threshold is the `j`-th best sampled rank.
    pub j: usize,
    /// Candidates the filter may write before the run counts as an overflow.
    pub capacity: usize,
}

impl SamplePlan {
    /// The plan for `k` of `n` keys (`1 <= k <= n`). The `j`-th best of the sample is reached
    /// by about `j * stride` keys; `j` keeps that above `2k` with a margin of 8 strides, so a
    /// run has too few candidates only by a large sampling accident, and the capacity holds
    /// twice the expectation.
    pub fn new(n: usize, k: usize) -> SamplePlan {
        let stride = (n / SAMPLE_TARGET).max(1);
        let samples = n / stride;
        let j = (2 * k.div_ceil(stride) + 8).min(samples);
        SamplePlan {
            stride,
            samples,
            j,
            capacity: 2 * j * stride + 2 * k + 1024,
        }
    }
}

/// A reusable top-k by selection: device buffers grown to the largest call so far.
pub struct SelectTopK {
    /// The rank select's state (over the sample, or exact over the keys).
    ranks: PodBuffer<SelectState>,
    /// The candidates' composite select.
    chosen: PodBuffer<SelectState>,
    hist: CudaSlice<u32>,
    counts: PodBuffer<FilterCounts>,
    sample: CudaSlice<u64>,
    cands: PodBuffer<Candidate>,
    out: PodBuffer<Candidate>,
    ties: CudaSlice<u32>,
    lookback: EpochScratch,
    fell_back: bool,
}

impl SelectTopK {
    /// Small buffers; they grow with the calls.
    pub fn new(gpu: &Gpu) -> Result<SelectTopK> {
        Ok(SelectTopK {
            ranks: PodBuffer::zeroed(gpu, 1)?,
            chosen: PodBuffer::zeroed(gpu, 1)?,
            hist: alloc(gpu, DIGITS)?,
            counts: PodBuffer::zeroed(gpu, 1)?,
            sample: alloc(gpu, 1)?,
            cands: PodBuffer::zeroed(gpu, 1)?,
            out: PodBuffer::zeroed(gpu, 1)?,
            ties: alloc(gpu, 1)?,
            lookback: EpochScratch::default(),
            fell_back: false,
        })
    }

    /// Whether the last threshold run fell back to the exact select (its estimate kept too
    /// few or too many keys).
    pub fn fell_back(&self) -> bool {
        self.fell_back
    }

    /// The `k` best of `keys` by `order`, best first, by `algorithm` (the threshold filter or
    /// radix select; sort and choose is [`super::SortTopK`]).
    pub fn run<K: TopKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
        algorithm: TopKAlgorithm,
    ) -> Result<TopKRows<K>> {
        let n = keys.len();
        check_top_k(n, k)?;
        self.fell_back = false;
        match algorithm {
            TopKAlgorithm::Threshold => {
                let plan = SamplePlan::new(n, k);
                self.sample_select(gpu, keys, order, &plan)?;
                if let Some(rows) = self.filter_and_finish(gpu, keys, k, order, plan.capacity)? {
                    return Ok(rows);
                }
                self.fell_back = true;
            }
            TopKAlgorithm::RadixSelect => {}
            TopKAlgorithm::Sort => {
                return Err(Error::invalid(
                    "SelectTopK runs the threshold filter and radix select; sort and choose \
                     is SortTopK",
                ));
            }
        }
        self.exact_select(gpu, keys, k, order)?;
        self.filter_and_finish(gpu, keys, k, order, k)?
            .ok_or_else(|| Error::invalid("top_k: the exact select kept a wrong number of keys"))
    }

    /// The sample's `j`-th best rank, left in the rank select's state.
    fn sample_select<K: TopKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        order: TopKOrder,
        plan: &SamplePlan,
    ) -> Result<()> {
        grow(gpu, &mut self.sample, plan.samples)?;
        let width = rank_bits::<K>();
        self.ranks
            .write(gpu, 0, &SelectState::start(plan.j as u32, width))?;
        let (s, stride, smallest) = (
            plan.samples as u32,
            plan.stride as u32,
            (order == TopKOrder::Smallest) as u32,
        );
        let cfg = stride_grid(&K::SAMPLE, plan.samples);
        // SAFETY: `s` samples at `stride` lie within the `n` keys (s * stride <= n); the
        // sample buffer holds `s`.
        unsafe {
            gpu.launch(
                &K::SAMPLE,
                cfg,
                (keys, &s, &stride, &smallest, &mut self.sample),
            )
        }?;
        for _ in 0..width / DIGIT_BITS {
            let cfg = stride_grid(&kt::TOPK_HIST_RANKS, plan.samples);
            // SAFETY: the sample holds `s` ranks; the state and the histogram (zero between
            // rounds) are valid; any grid size works.
            unsafe {
                gpu.launch(
                    &kt::TOPK_HIST_RANKS,
                    cfg,
                    (&self.sample, &s, &mut self.ranks, &mut self.hist, &32u32),
                )
            }?;
        }
        Ok(())
    }

    /// The exact `k`-th best rank of all keys, left in the rank select's state.
    fn exact_select<K: TopKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<()> {
        let width = rank_bits::<K>();
        self.ranks
            .write(gpu, 0, &SelectState::start(k as u32, width))?;
        let (n, smallest) = (keys.len() as u32, (order == TopKOrder::Smallest) as u32);
        for _ in 0..width / DIGIT_BITS {
            let cfg = stride_grid(&K::HIST, keys.len());
            // SAFETY: `n` keys; the state and the histogram (zero between rounds) are valid; any
            // grid size works.
            unsafe {
                gpu.launch(
                    &K::HIST,
                    cfg,
                    (keys, &n, &smallest, &mut self.ranks, &mut self.hist, &32u32),
                )
            }?;
        }
        Ok(())
    }

    /// The filter pass at the rank select's threshold, then the finish: `None` when fewer
    /// than `k` keys reached the threshold or more than `capacity` passed it.
    fn filter_and_finish<K: TopKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
        capacity: usize,
    ) -> Result<Option<TopKRows<K>>> {
        let n = keys.len();
        let cap = capacity.max(k);
        grow_pod(gpu, &mut self.cands, cap)?;
        grow(gpu, &mut self.ties, k)?;
        self.counts.write(gpu, 0, &FilterCounts::default())?;
        let cfg = tile_grid(&K::FILTER, n, 0)?;
        let tiles = cfg.grid_dim.0 as usize;
        let epoch = self
            .lookback
            .next(gpu, tiles * tessera_kernels::layout::STATUS_STRIDE, 0)?;
        let (n32, smallest, cap32, k32) = (
            n as u32,
            (order == TopKOrder::Smallest) as u32,
            cap as u32,
            k as u32,
        );
        let status = self.lookback.words_mut()?;
        // SAFETY: one block per tile of the `n` keys; the candidates hold `cap`, the tie rows
        // `k`; the look-back words cover the tiles in this epoch; the rank select finished.
        unsafe {
            gpu.launch(
                &K::FILTER,
                cfg,
                (
                    keys,
                    &n32,
                    &smallest,
                    &self.ranks,
                    &mut self.cands,
                    &cap32,
                    &mut self.ties,
                    &k32,
                    &mut self.counts,
                    status,
                    &epoch,
                ),
            )
        }?;
        let counts = self.counts.read(gpu, 0)?;
        let (passed, tied) = (counts.passed as usize, counts.tied as usize);
        if passed > cap || passed + tied < k {
            return Ok(None);
        }
        let mut best = if passed >= k {
            self.choose_candidates(gpu, passed, k, rank_bits::<K>())?
        } else {
            // Every passing key is in, then the first ties by row.
            let tie = self.ranks.read(gpu, 0)?.threshold().tie;
            let mut best = self.cands.read_prefix(gpu, passed)?;
            let mut rows = vec![0u32; k - passed];
            gpu.stream()
                .memcpy_dtoh(&self.ties.slice(..k - passed), &mut rows[..])
                .map_err(Error::driver("reading the tied rows", 4 * (k - passed)))?;
            gpu.synchronize()?;
            best.extend(rows.into_iter().map(|row| Candidate {
                rank: tie,
                row,
                pad: 0,
            }));
            best
        };
        best.sort_unstable_by(|a, b| b.rank.cmp(&a.rank).then(a.row.cmp(&b.row)));
        Ok(Some(TopKRows {
            keys: best.iter().map(|c| key_of_rank(c.rank, order)).collect(),
            rows: best.iter().map(|c| c.row).collect(),
        }))
    }

    /// The `k` best of the `m >= k` candidates (a composite select, unique per row), on the
    /// host, unordered.
    fn choose_candidates(
        &mut self,
        gpu: &Gpu,
        m: usize,
        k: usize,
        width: u32,
    ) -> Result<Vec<Candidate>> {
        if m == k {
            return self.cands.read_prefix(gpu, m);
        }
        self.chosen
            .write(gpu, 0, &SelectState::start(k as u32, width))?;
        let m32 = m as u32;
        for _ in 0..(width + 32) / DIGIT_BITS {
            let cfg = stride_grid(&kt::TOPK_HIST_CANDS, m);
            // SAFETY: `m` candidates; the state and the histogram (zero between rounds) are
            // valid; any grid size works.
            unsafe {
                gpu.launch(
                    &kt::TOPK_HIST_CANDS,
                    cfg,
                    (&self.cands, &m32, &mut self.chosen, &mut self.hist, &0u32),
                )
            }?;
        }
        grow_pod(gpu, &mut self.out, k)?;
        let cfg = stride_grid(&kt::TOPK_EMIT, m);
        // SAFETY: `m` candidates; the composite select resolved on exactly `k` of them (rows
        // make composites unique) and `out` holds `k`.
        unsafe {
            gpu.launch(
                &kt::TOPK_EMIT,
                cfg,
                (
                    &self.cands,
                    &m32,
                    &self.chosen,
                    &mut self.out,
                    &mut self.counts,
                ),
            )
        }?;
        let emitted = self.counts.read(gpu, 0)?.emitted as usize;
        if emitted != k {
            return Err(Error::invalid(format!(
                "top_k: the candidates' select chose {emitted} of {m}, not {k}"
            )));
        }
        self.out.read_prefix(gpu, k)
    }
}

/// Grows `buf` to hold at least `len` values.
fn grow_pod<T: bytemuck::Pod>(gpu: &Gpu, buf: &mut PodBuffer<T>, len: usize) -> Result<()> {
    if buf.len() < len {
        *buf = PodBuffer::zeroed(gpu, len)?;
    }
    Ok(())
}

/// Rank bits of `K` (32 or 64).
fn rank_bits<K: TopKey>() -> u32 {
    8 * size_of::<K>() as u32
}

/// A grid-stride launch over `n` items: enough blocks to fill the GPU, no more than needed.
fn stride_grid(spec: &tessera_kernels::spec::KernelShape, n: usize) -> LaunchConfig {
    let per_block = spec.threads() as usize * spec.items_per_thread().max(1) as usize;
    let blocks = n.div_ceil(per_block).clamp(1, 1024);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: 0,
    }
}

fn alloc<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    len: usize,
) -> Result<CudaSlice<T>> {
    gpu.stream()
        .alloc_zeros::<T>(len.max(1))
        .map_err(Error::driver(
            "allocating top-k buffers",
            len * size_of::<T>(),
        ))
}

/// Grows `buf` to hold at least `len` items.
fn grow<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    buf: &mut CudaSlice<T>,
    len: usize,
) -> Result<()> {
    if buf.len() < len {
        *buf = alloc(gpu, len)?;
    }
    Ok(())
}
