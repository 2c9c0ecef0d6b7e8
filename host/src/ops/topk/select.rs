//! Top-k by selection on the GPU: the threshold filter and the exact radix select (see
//! `tessera_kernels::ops::topk` for the kernels and their state).
use tessera_kernels::ops::topk::{
    self as kt, Candidate, DIGIT_BITS, FilterCounts, HIST_WORDS, ORDER_MAX, SAMPLE_RUN,
    SelectState, SourceKernels, SourceParams, TopKState,
};

use super::buffers::{barrier_grid, grow, grow_pod, stride_grid};
use super::{TopKAlgorithm, TopKOrder, TopKRows, TopKey, check_top_k};
use crate::error::{Error, Result};
use crate::ops::scan::exclusive_scan_into;
use crate::runtime::{
    DeviceColumn, DeviceItem, Gpu, PodBuffer, Scratch, grid_per_sm, resident_grid, tile_grid,
};

/// Ranks sampled for the threshold: about this many, in runs of [`SAMPLE_RUN`] adjacent rows
/// at a fixed stride (see [`SamplePlan::is_sampled`]).
pub const SAMPLE_TARGET: usize = 1 << 18;

/// Blocks per SM of the selects over a sample or the candidates (tens of thousands of
/// elements): enough to count them, few to meet at each round's grid barrier.
const SMALL_PER_SM: u32 = 1;

/// Where the threshold filter samples and how far down the sample it sets the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplePlan {
    /// Distance between sampled rows.
    pub stride: usize,
    /// Ranks sampled.
    pub samples: usize,
    /// The threshold is the `j`-th best sampled rank, or a rank at most `slack` samples
    /// further down (a select that stops a round early, see `SelectState::slack`).
    pub j: usize,
    /// See `j`.
    pub slack: usize,
    /// Candidates the filter may write before the run counts as an overflow.
    pub capacity: usize,
}

impl SamplePlan {
    /// The plan for `k` of `n` keys (`1 <= k <= n`). The `j`-th best of the sample is reached
    /// by about `j * stride` keys; `j` keeps that above `2k` with a margin of 8 strides, so a
    /// run has too few candidates only by a large sampling accident, and the capacity holds
    /// twice the most expected (`j + slack` samples' worth).
    pub fn new(n: usize, k: usize) -> SamplePlan {
        let stride = (n / SAMPLE_TARGET).max(1);
        let samples = n / stride;
        let j = (2 * k.div_ceil(stride) + 8).min(samples);
        let slack = j.min(16);
        SamplePlan {
            stride,
            samples,
            j,
            slack,
            capacity: 2 * (j + slack) * stride + 2 * k + 1024,
        }
    }

    /// Whether the sample reads row `row`: runs of [`SAMPLE_RUN`] adjacent rows, one run
    /// every `SAMPLE_RUN * stride` rows, `samples` rows in all.
    pub fn is_sampled(&self, row: usize) -> bool {
        let (run, at) = (SAMPLE_RUN * self.stride, row % (SAMPLE_RUN * self.stride));
        at < SAMPLE_RUN && row / run * SAMPLE_RUN + at < self.samples
    }
}

/// What the per-key kernels read: a key source's columns and constants (absent ones are
/// passed as null) and its kernels. Keys of type `K`, first column of type `C`.
pub(crate) struct Feed<'a, C: DeviceItem> {
    /// The key column, or the first column of a computed key.
    pub c0: &'a DeviceColumn<C>,
    /// The second column of a computed key.
    pub c1: Option<&'a DeviceColumn<u32>>,
    /// The filter column.
    pub fcol: Option<&'a DeviceColumn<u32>>,
    /// Weights and predicate.
    pub params: Option<&'a PodBuffer<SourceParams>>,
    /// The source's kernels.
    pub kernels: SourceKernels<C>,
}

impl<'a, K: TopKey> Feed<'a, K> {
    /// A plain key column.
    pub fn column(keys: &'a DeviceColumn<K>) -> Feed<'a, K> {
        Feed {
            c0: keys,
            c1: None,
            fcol: None,
            params: None,
            kernels: K::SELECT,
        }
    }
}

impl<C: DeviceItem> Feed<'_, C> {
    /// Rows of the input.
    fn len(&self) -> usize {
        self.c0.len()
    }

    /// Gathers `plan.samples` ranks at `plan.stride` into `out` (grown to hold them).
    pub fn sample(
        &self,
        gpu: &Gpu,
        plan: &SamplePlan,
        smallest: bool,
        out: &mut DeviceColumn<u64>,
    ) -> Result<()> {
        grow(gpu, out, plan.samples)?;
        let (s, stride, smallest) = (plan.samples as u32, plan.stride as u32, smallest as u32);
        let spec = &self.kernels.sample;
        let cfg = stride_grid(gpu, spec, plan.samples)?;
        let (c0, c1, fcol, params) = (self.c0, self.c1, self.fcol, self.params);
        // SAFETY: the plan's `s` samples at `stride` lie within the `n` rows of the source's
        // columns (s * stride <= n); `out` holds `s`.
        unsafe {
            gpu.launch(
                spec,
                cfg,
                (c0, c1, fcol, params, &s, &stride, &smallest, out),
            )
        }
    }

    /// The threshold filter pass over every tile at `state`'s finished rank select: passing
    /// live rows into `cands` (up to `cap`), each tile's ties into `tie_counts` (grown to one
    /// per warp of each tile).
    pub fn filter(
        &self,
        gpu: &Gpu,
        smallest: bool,
        state: &mut PodBuffer<TopKState>,
        cands: &mut PodBuffer<Candidate>,
        cap: usize,
        tie_counts: &mut DeviceColumn<u32>,
    ) -> Result<()> {
        if cands.len() < cap {
            return Err(Error::invalid(format!(
                "top_k: room for {} candidates, not {cap}",
                cands.len()
            )));
        }
        let n = self.len();
        let spec = &self.kernels.filter;
        let cfg = if self.kernels.resident_filter {
            resident_grid(gpu, spec, n)?
        } else {
            tile_grid(spec, n, 0)?
        };
        let tiles = spec.tiles(n as u64) as usize;
        grow(
            gpu,
            tie_counts,
            kt::tie_count_len(tiles, spec.threads() as usize),
        )?;
        let (n32, smallest, cap32) = (n as u32, smallest as u32, cap as u32);
        let (c0, c1, fcol, params) = (self.c0, self.c1, self.fcol, self.params);
        // SAFETY: a source of `n` rows, with the grid its filter wants; the candidates hold
        // `cap`, the tie counts one per tile; the caller finished the rank select of `state`.
        unsafe {
            gpu.launch(
                spec,
                cfg,
                (
                    c0, c1, fcol, params, &n32, &smallest, state, cands, &cap32, tie_counts,
                ),
            )
        }
    }

    /// Whether rows can fail a predicate.
    fn filtered(&self) -> bool {
        self.fcol.is_some()
    }
}

/// How a filter pass ended.
enum Finish<K> {
    /// The result.
    Rows(TopKRows<K>),
    /// The threshold kept too few or too many: run the exact select.
    Retry,
    /// Only this many rows are live (fewer than `k`).
    Fewer(usize),
}

/// A reusable top-k by selection: device buffers grown to the largest call so far.
pub struct SelectTopK {
    /// Both selects and the counts: written once per call, read once.
    state: PodBuffer<TopKState>,
    hist: DeviceColumn<u32>,
    sample: DeviceColumn<u64>,
    cands: PodBuffer<Candidate>,
    out: PodBuffer<Candidate>,
    /// The chosen candidates best first, where `k <= ORDER_MAX`.
    sorted: PodBuffer<Candidate>,
    ties: DeviceColumn<u32>,
    /// Each filter tile's count of keys at a tied threshold, and their prefix sum.
    tie_counts: DeviceColumn<u32>,
    tie_prefix: DeviceColumn<u32>,
    scan_state: Option<Scratch>,
    /// A fused query's constants (see `run_query`).
    pub(super) params: Option<PodBuffer<SourceParams>>,
    fell_back: bool,
}

impl SelectTopK {
    /// Small buffers; they grow with the calls.
    pub fn new(gpu: &Gpu) -> Result<SelectTopK> {
        Ok(SelectTopK {
            state: PodBuffer::zeroed(gpu, 1)?,
            hist: gpu.zeros(HIST_WORDS)?,
            sample: gpu.zeros(1)?,
            cands: PodBuffer::zeroed(gpu, 1)?,
            out: PodBuffer::zeroed(gpu, 1)?,
            sorted: PodBuffer::zeroed(gpu, 1)?,
            ties: gpu.zeros(1)?,
            tie_counts: gpu.zeros(1)?,
            tie_prefix: gpu.zeros(1)?,
            scan_state: None,
            params: None,
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
        self.run_feed(gpu, &Feed::column(keys), k, order, algorithm)
    }

    /// The `k` best live rows of `feed` by `order`, best first, with keys `K`; all live rows
    /// where fewer than `k` are live.
    pub(crate) fn run_feed<K: TopKey, C: DeviceItem>(
        &mut self,
        gpu: &Gpu,
        feed: &Feed<'_, C>,
        k: usize,
        order: TopKOrder,
        algorithm: TopKAlgorithm,
    ) -> Result<TopKRows<K>> {
        let n = feed.len();
        check_top_k(n, k)?;
        self.fell_back = false;
        let mut k = k;
        match algorithm {
            TopKAlgorithm::Threshold => {
                let plan = SamplePlan::new(n, k);
                self.sample_select::<K, C>(gpu, feed, k, order, &plan)?;
                match self.filter_and_finish(gpu, feed, k, order, plan.capacity)? {
                    Finish::Rows(rows) => return Ok(rows),
                    Finish::Fewer(live) => k = live,
                    Finish::Retry => {}
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
        // At most twice: a select of more rows than are live learns their count and selects
        // them all (which cannot fall short again).
        for _ in 0..2 {
            if k == 0 {
                return Ok(TopKRows {
                    keys: Vec::new(),
                    rows: Vec::new(),
                });
            }
            self.start::<K>(gpu, SelectState::start(k as u32, rank_bits::<K>()), k)?;
            self.exact_select::<K, C>(gpu, feed, order)?;
            match self.filter_and_finish(gpu, feed, k, order, k)? {
                Finish::Rows(rows) => return Ok(rows),
                Finish::Fewer(live) => k = live,
                Finish::Retry => break,
            }
        }
        Err(Error::invalid(
            "top_k: the exact select kept a wrong number of keys",
        ))
    }

    /// Uploads the state: the rank select `ranks` and a candidates' select of the `k` best
    /// (with the slack the ordering allows), counts zero.
    fn start<K: TopKey>(&mut self, gpu: &Gpu, ranks: SelectState, k: usize) -> Result<()> {
        let state = TopKState {
            ranks,
            chosen: SelectState::start(k as u32, rank_bits::<K>())
                .with_slack(order_slack(k) as u32),
            counts: FilterCounts::default(),
        };
        self.state.write(gpu, 0, &state)
    }

    /// Starts a threshold run for `k` by `plan`: the sample's `j`-th best rank, left in the
    /// rank select.
    fn sample_select<K: TopKey, C: DeviceItem>(
        &mut self,
        gpu: &Gpu,
        f: &Feed<'_, C>,
        k: usize,
        order: TopKOrder,
        plan: &SamplePlan,
    ) -> Result<()> {
        // The sample does not read the state: the GPU gathers it while the state is uploaded.
        f.sample(gpu, plan, order == TopKOrder::Smallest, &mut self.sample)?;
        let ranks = SelectState::start(plan.j as u32, rank_bits::<K>());
        self.start::<K>(gpu, ranks.with_slack(plan.slack as u32), k)?;
        select_sample(
            gpu,
            &self.sample,
            plan.samples,
            rank_bits::<K>(),
            &mut self.state,
            &mut self.hist,
        )
    }

    /// The exact `k`-th best rank of all live rows, left in the rank select.
    fn exact_select<K: TopKey, C: DeviceItem>(
        &mut self,
        gpu: &Gpu,
        f: &Feed<'_, C>,
        order: TopKOrder,
    ) -> Result<()> {
        let (n, smallest) = (f.len() as u32, (order == TopKOrder::Smallest) as u32);
        let spec = &f.kernels.hist;
        let rounds = rank_bits::<K>() / DIGIT_BITS;
        check_hist(&self.hist, rounds)?;
        let cfg = resident_grid(gpu, spec, f.len())?;
        // SAFETY: a source of `n` rows; the state and the histogram (zero) are valid; the
        // grid is resident at once.
        unsafe {
            gpu.launch(
                spec,
                cfg,
                (
                    f.c0,
                    f.c1,
                    f.fcol,
                    f.params,
                    &n,
                    &smallest,
                    &mut self.state,
                    &mut self.hist,
                    &32u32,
                    &rounds,
                ),
            )
        }
    }

    /// The filter pass at the rank select's threshold, the candidates' select and the emit,
    /// then one read of the state and the chosen: [`Finish::Retry`] when fewer than `k` live
    /// rows reached the threshold or more than `capacity` passed it, [`Finish::Fewer`] when
    /// fewer than `k` rows are live and not all of them are candidates.
    fn filter_and_finish<K: TopKey, C: DeviceItem>(
        &mut self,
        gpu: &Gpu,
        f: &Feed<'_, C>,
        k: usize,
        order: TopKOrder,
        capacity: usize,
    ) -> Result<Finish<K>> {
        let n = f.len();
        let cap = capacity.max(k);
        // The select may choose up to `slack` past `k`; the order keeps the best `k`.
        let slack = order_slack(k);
        grow_pod(gpu, &mut self.cands, cap)?;
        grow_pod(gpu, &mut self.out, k + slack)?;
        grow(gpu, &mut self.ties, k)?;
        let smallest_order = order == TopKOrder::Smallest;
        f.filter(
            gpu,
            smallest_order,
            &mut self.state,
            &mut self.cands,
            cap,
            &mut self.tie_counts,
        )?;
        grow(gpu, &mut self.tie_prefix, self.tie_counts.len())?;
        let (n32, smallest) = (n as u32, smallest_order as u32);
        // The candidates' select runs whatever passed; the host checks the counts once, after.
        choose(
            gpu,
            Candidates {
                buf: &self.cands,
                cap,
                bounded: true,
            },
            rank_bits::<K>(),
            &mut self.state,
            &mut self.hist,
            &mut self.out,
            k + slack,
        )?;
        // The chosen (all candidates where no more than `k + slack` passed) come back with
        // the state in one wait, the best `k` first where one block can order them.
        let ordered = k <= ORDER_MAX;
        let chosen = if ordered {
            grow_pod(gpu, &mut self.sorted, k)?;
            order_chosen(gpu, &self.state, &self.out, k + slack, k, &mut self.sorted)?;
            &self.sorted
        } else {
            &self.out
        };
        let (state, mut best) = self.state.read_prefix_with(gpu, 1, chosen, k)?;
        let state = state[0];
        let c = state.counts;
        let (passed, tied) = (c.passed as usize, c.tied as usize);
        let live = if f.filtered() { c.live as usize } else { n };
        let rows = |mut best: Vec<Candidate>, len: usize| {
            best.truncate(len);
            if ordered {
                debug_assert!(best.windows(2).all(|w| kt::ranks_before(&w[0], &w[1])));
                rows_in_order(&best, order)
            } else {
                rows_of(best, order)
            }
        };
        if live < k {
            // Every live row is wanted: done if all of them are candidates (then the choose
            // copied them all).
            return Ok(if passed == live && passed <= cap {
                Finish::Rows(rows(best, passed))
            } else {
                Finish::Fewer(live)
            });
        }
        if passed > cap || passed + tied < k {
            return Ok(Finish::Retry);
        }
        let emitted = c.emitted as usize;
        if passed > k + slack && (!(k..=k + slack).contains(&emitted) || state.chosen.resolved != 1)
        {
            return Err(Error::invalid(format!(
                "top_k: the candidates' select chose {emitted} of {passed}, not {k} (slack \
                 {slack})"
            )));
        }
        if passed >= k {
            // The select chose `k` of them (and with slack, the order kept the best `k`), or
            // copied them all without rounds.
            return Ok(Finish::Rows(rows(best, k)));
        }
        // Every passing key is in (they rank above the tie), then the first ties in row order.
        let need = k - passed;
        exclusive_scan_into(
            gpu,
            &self.tie_counts,
            &mut self.tie_prefix,
            self.scan_state.take(),
        )
        .map(|s| self.scan_state = Some(s))?;
        let fill = grid_per_sm(gpu, &f.kernels.fill, n, 2)?;
        let need32 = need as u32;
        // SAFETY: the tiles of the filter, their prefix sum, and room for `need <= k` rows;
        // any grid size works.
        unsafe {
            gpu.launch(
                &f.kernels.fill,
                fill,
                (
                    f.c0,
                    f.c1,
                    f.fcol,
                    f.params,
                    &n32,
                    &smallest,
                    &self.state,
                    &self.tie_prefix,
                    &mut self.ties,
                    &need32,
                ),
            )
        }?;
        let tie = state.ranks.threshold().tie;
        best.truncate(passed);
        self.ties.set_len(need);
        best.extend(self.ties.to_vec(gpu)?.into_iter().map(|row| Candidate {
            rank: tie,
            row,
            pad: 0,
        }));
        Ok(Finish::Rows(rows(best, k)))
    }
}

/// The rank select of `state` (the first, where the buffer holds several) over the `samples`
/// ranks of `sample`, of `bits` bits: all its rounds in one launch.
pub(super) fn select_sample(
    gpu: &Gpu,
    sample: &DeviceColumn<u64>,
    samples: usize,
    bits: u32,
    state: &mut PodBuffer<TopKState>,
    hist: &mut DeviceColumn<u32>,
) -> Result<()> {
    let (s, rounds) = (samples as u32, bits / DIGIT_BITS);
    check_hist(hist, rounds)?;
    let cfg = barrier_grid(gpu, &kt::TOPK_HIST_RANKS, samples, SMALL_PER_SM)?;
    // SAFETY: the sample holds `s` ranks; the state and the histogram (zero) are valid; the
    // grid is resident at once.
    unsafe {
        gpu.launch(
            &kt::TOPK_HIST_RANKS,
            cfg,
            (sample, &s, state, hist, &32u32, &rounds),
        )
    }
}

/// Candidates for [`choose`]: the first `cap` of `buf` (as many as the state's filter count
/// says, at most `cap`); `bounded` where a threshold filter wrote them, so that their ranks lie
/// between its threshold and the largest it counted.
pub(super) struct Candidates<'a> {
    pub buf: &'a PodBuffer<Candidate>,
    pub cap: usize,
    pub bounded: bool,
}

/// The select of the `k` best of `cands` (with the slack of `state`'s candidates' select),
/// ranks of `bits` bits and ties by row, all its rounds and the emit into `out` (room for
/// `out_cap`: `k` plus the slack) in one launch.
pub(super) fn choose(
    gpu: &Gpu,
    cands: Candidates<'_>,
    bits: u32,
    state: &mut PodBuffer<TopKState>,
    hist: &mut DeviceColumn<u32>,
    out: &mut PodBuffer<Candidate>,
    out_cap: usize,
) -> Result<()> {
    let (cap32, out32, rounds) = (cands.cap as u32, out_cap as u32, (bits + 32) / DIGIT_BITS);
    check_hist(hist, rounds)?;
    if cands.buf.len() < cands.cap || out.len() < out_cap {
        return Err(Error::invalid(format!(
            "top_k: the candidates' select takes room for {} candidates and {out_cap} chosen",
            cands.cap
        )));
    }
    let grid = barrier_grid(gpu, &kt::TOPK_CHOOSE, cands.cap, SMALL_PER_SM)?;
    let bounded = cands.bounded as u32;
    // SAFETY: the candidates hold `cap` (the kernel reads the filter's count, at most `cap`);
    // the state and the histogram (zero) are valid; `out` holds `out_cap`; the grid is
    // resident at once.
    unsafe {
        gpu.launch(
            &kt::TOPK_CHOOSE,
            grid,
            (
                cands.buf, &cap32, state, hist, &rounds, out, &out32, &bounded,
            ),
        )
    }
}

/// Writes the best `k` of the first `min(emitted, cap)` chosen candidates of `chosen` best
/// first into `sorted` (`k <= cap <= ORDER_MAX`).
fn order_chosen(
    gpu: &Gpu,
    state: &PodBuffer<TopKState>,
    chosen: &PodBuffer<Candidate>,
    cap: usize,
    k: usize,
    sorted: &mut PodBuffer<Candidate>,
) -> Result<()> {
    if k > cap || cap > ORDER_MAX || chosen.len() < cap || sorted.len() < k {
        return Err(Error::invalid(format!(
            "top_k: ordering the best {k} of {cap} chosen keys takes k <= {cap} <= \
             {ORDER_MAX} and room for both"
        )));
    }
    // One thread per candidate and share of the others.
    let cfg = tile_grid(&kt::TOPK_ORDER, cap * kt::ORDER_SPLIT, 0)?;
    let (cap32, k32) = (cap as u32, k as u32);
    // SAFETY: the state of the choose that wrote `chosen` (at most `cap` counted in `emitted`
    // are read), room for `k` in `sorted`; `cap <= ORDER_MAX`, which the kernel stages.
    unsafe { gpu.launch(&kt::TOPK_ORDER, cfg, (state, chosen, &cap32, &k32, sorted)) }
}

/// Candidates a select may choose past `k` (see `SelectState::slack`): where the order kernel
/// ranks the result, as many as keep its candidates within twice the next power of two of `k`
/// (at least 64, at most [`ORDER_MAX`]), so that a tied rank or a last bucket of a few keys
/// ends the rounds instead of more rounds over the rows; none where the host orders them.
pub(super) fn order_slack(k: usize) -> usize {
    if k > ORDER_MAX {
        0
    } else {
        (2 * k.next_power_of_two()).clamp(64, ORDER_MAX) - k
    }
}

/// The result of chosen candidates already best first.
fn rows_in_order<K: TopKey>(best: &[Candidate], order: TopKOrder) -> TopKRows<K> {
    TopKRows {
        keys: best.iter().map(|c| K::from_rank(c.rank, order)).collect(),
        rows: best.iter().map(|c| c.row).collect(),
    }
}

/// The result of the chosen candidates (any order): best first, ties by the smaller row.
pub(super) fn rows_of<K: TopKey>(mut best: Vec<Candidate>, order: TopKOrder) -> TopKRows<K> {
    best.sort_unstable_by_key(|c| std::cmp::Reverse(c.composite()));
    TopKRows {
        keys: best.iter().map(|c| K::from_rank(c.rank, order)).collect(),
        rows: best.iter().map(|c| c.row).collect(),
    }
}

/// Checks that `hist` holds a histogram per round of a `rounds`-round select.
fn check_hist(hist: &DeviceColumn<u32>, rounds: u32) -> Result<()> {
    let words = rounds as usize * kt::DIGITS;
    if hist.len() < words {
        return Err(Error::invalid(format!(
            "top_k: {rounds} select rounds take {words} histogram words, not {}",
            hist.len()
        )));
    }
    Ok(())
}

/// Rank bits of `K` (32 or 64).
fn rank_bits<K: TopKey>() -> u32 {
    8 * size_of::<K>() as u32
}
