//! Radix sort and radix partitioning (thesis §3.6.4) with one-sweep passes: one histogram
//! kernel reads the keys once for every pass, then each pass reads and writes keys (and values)
//! once. Passes whose digit is the same for every key are skipped (their permutation is the
//! identity), so keys of a narrow range cost fewer passes. Large inputs of 32-bit keys take the
//! MSD sort of `sort_msd` instead when it pays (see [`SortStrategy`]): two passes and one
//! shared-memory sort per 16-bit bucket, three trips through memory instead of four.
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, LaunchConfig};
use tessera_kernels::ops::sort::{self as k, HistArgs, PassArgs, RadixState};
use tessera_kernels::ops::sort_msd as msd;
use tessera_kernels::radix::{RadixBits, RadixKey};
use tessera_kernels::spec::KernelSpec;

use super::check_same_len;
use super::sort_msd::{self as msd_host, MsdBuffers, MsdKernels, MsdValues};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, DeviceItem, Gpu, tile_grid};

/// Sort direction. Both are stable: equal keys keep their input order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Smallest first; floats as [`f32::total_cmp`] orders them (-NaN first, +NaN last).
    #[default]
    Ascending,
    /// Largest first.
    Descending,
}

/// Key types the radix sort orders: `u32`, `i32`, `f32`, `u64`. Sealed through
/// [`DeviceItem`]: other types cannot be sort keys.
pub trait SortKey: DeviceItem + RadixKey {
    /// The histogram kernel.
    #[doc(hidden)]
    const HIST: KernelSpec<HistArgs<Self>>;
    /// Pass kernels: `[keys only, with values][32-bit status, 64-bit status]`.
    #[doc(hidden)]
    const PASS: [[KernelSpec<PassArgs<Self>>; 2]; 2];
    /// The MSD sort's kernels (32-bit keys).
    #[doc(hidden)]
    const MSD: Option<MsdKernels<Self>>;
}

macro_rules! sort_key {
    ($($t:ty: $h:ident, [$a:ident, $b:ident], [$c:ident, $d:ident], $msd:expr;)*) => {$(
        impl SortKey for $t {
            const HIST: KernelSpec<HistArgs<$t>> = k::$h;
            const PASS: [[KernelSpec<PassArgs<$t>>; 2]; 2] = [[k::$a, k::$b], [k::$c, k::$d]];
            const MSD: Option<MsdKernels<$t>> = $msd;
        }
    )*};
}
sort_key! {
    u32: RADIX_HIST_U32, [SORT_U32_K_S32, SORT_U32_K_S64], [SORT_U32_KV_S32, SORT_U32_KV_S64],
        Some(MsdKernels { hist: msd::MSD_HIST_U32, local: msd::LOCAL_U32 });
    i32: RADIX_HIST_I32, [SORT_I32_K_S32, SORT_I32_K_S64], [SORT_I32_KV_S32, SORT_I32_KV_S64],
        Some(MsdKernels { hist: msd::MSD_HIST_I32, local: msd::LOCAL_I32 });
    f32: RADIX_HIST_F32, [SORT_F32_K_S32, SORT_F32_K_S64], [SORT_F32_KV_S32, SORT_F32_KV_S64],
        Some(MsdKernels { hist: msd::MSD_HIST_F32, local: msd::LOCAL_F32 });
    u64: RADIX_HIST_U64, [SORT_U64_K_S32, SORT_U64_K_S64], [SORT_U64_KV_S32, SORT_U64_KV_S64], None;
}

/// How [`RadixSort`] sorts 32-bit keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortStrategy {
    /// MSD where it costs less than LSB: from [`MSD_MIN_ITEMS`] items on, when every 16-bit
    /// bucket fits a local sort and the local sorts (each bucket costs a whole tile, padding
    /// included) cost less than the LSB passes the MSD sort saves. LSB otherwise.
    #[default]
    Auto,
    /// Always the LSB sort: a histogram, then one one-sweep pass per 8-bit digit that is not
    /// the same for every key.
    Lsb,
    /// The MSD sort at any size: a histogram of the top 16 bits, a one-sweep pass on bits
    /// 24..32, a segmented one on bits 16..24, then one shared-memory sort per 16-bit bucket.
    /// Three passes over the data instead of four; when a bucket is larger than a block can
    /// sort (keys concentrated in a few 16-bit prefixes), the LSB sort runs instead.
    Msd,
}

/// Inputs from which [`SortStrategy::Auto`] tries the MSD sort: below it even the smallest
/// local sort tile costs more than the passes the MSD sort saves.
pub const MSD_MIN_ITEMS: usize = 1 << 26;

/// Index of the look-back status width `n` items need: 0 for 32-bit words, 1 for 64-bit ones
/// (the kernels' second variant); a status word occupies `1 + index` state words.
fn status_width(n: usize) -> usize {
    usize::from(n as u64 > k::STATUS32_MAX_ITEMS)
}

/// Exclusive prefix sums of each `bins`-word histogram.
fn digit_offsets(hist: &[u32], bins: usize) -> Vec<u32> {
    hist.chunks(bins)
        .flat_map(|h| {
            h.iter().scan(0u32, |run, &c| {
                let o = *run;
                *run = run.wrapping_add(c);
                Some(o)
            })
        })
        .collect()
}

/// Kernel state and host staging of one sort or partition: reused across calls that fit.
struct RadixWork {
    state: CudaSlice<u32>,
    layout: RadixState,
}

impl RadixWork {
    fn prepare(gpu: &Gpu, cached: Option<RadixWork>, layout: RadixState) -> Result<RadixWork> {
        let words = layout.words();
        let mut state = match cached {
            Some(w) if w.state.len() >= words => w.state,
            _ => gpu
                .stream()
                .alloc_zeros::<u32>(words)
                .map_err(Error::driver("allocating radix state", words * 4))?,
        };
        gpu.stream()
            .memset_zeros(&mut state.slice_mut(..words))
            .map_err(Error::driver("zeroing radix state", words * 4))?;
        Ok(RadixWork { state, layout })
    }

    /// Counts the digits of all passes (queued).
    #[allow(clippy::too_many_arguments)]
    fn histogram<K: SortKey>(
        &mut self,
        gpu: &Gpu,
        spec: KernelSpec<HistArgs<K>>,
        keys: &CudaSlice<K>,
        n: usize,
        shift: u32,
        bits: u32,
        desc: bool,
    ) -> Result<()> {
        let blocks = spec.tiles(n as u64).min(gpu.sm_count() as u64 * 8).max(1) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (spec.threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        let (n32, passes, desc) = (n as u32, self.layout.passes as u32, u32::from(desc));
        let args = (keys, &n32, &shift, &bits, &passes, &desc, &mut self.state);
        // SAFETY: `keys` holds `n` items (the grid strides over them), and the state holds
        // `passes` zeroed histograms of 2^bits words (RadixWork::prepare sized it).
        unsafe { gpu.launch(&spec, cfg, args) }
    }

    /// Downloads the histograms (synchronizes).
    fn read_histograms(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        let words = self.layout.passes * self.layout.bins;
        let mut h = vec![0u32; words];
        gpu.stream()
            .memcpy_dtoh(&self.state.slice(..words), &mut h[..])
            .map_err(Error::driver("reading radix histograms", words * 4))?;
        gpu.synchronize()?;
        Ok(h)
    }

    /// Writes the digit offsets of every pass.
    fn write_offsets(&mut self, gpu: &Gpu, offsets: &[u32]) -> Result<()> {
        let at = self.layout.offsets(0);
        gpu.stream()
            .memcpy_htod(offsets, &mut self.state.slice_mut(at..at + offsets.len()))
            .map_err(Error::driver("writing radix offsets", offsets.len() * 4))?;
        Ok(())
    }

    /// Queues pass `p` with `spec`.
    #[allow(clippy::too_many_arguments)]
    fn pass<B>(
        &mut self,
        gpu: &Gpu,
        spec: KernelSpec<PassArgs<B>>,
        p: usize,
        n: usize,
        shift: u32,
        mode: u32,
        keys_in: &CudaSlice<B>,
        keys_out: &mut CudaSlice<B>,
        vals: Option<(&CudaSlice<u32>, &mut CudaSlice<u32>)>,
    ) -> Result<()> {
        let l = self.layout;
        let at = PassWords {
            offsets: l.offsets(p),
            counter: l.counter(p),
            status: l.status(p),
            segs: 0,
            segments: 0,
        };
        let tiles = spec.tiles(n as u64) as usize;
        let io = PassIo {
            keys_in: keys_in.as_view(),
            keys_out: keys_out.as_view_mut(),
            vals: vals.map(|(i, o)| (i.as_view(), o.as_view_mut())),
        };
        launch_pass(gpu, spec, &mut self.state, at, tiles, n, shift, mode, io)
    }
}

/// Where a pass kernel finds its parts of the state buffer (`u32` word indices; status in
/// status-word units) and, when segmented, its segment table.
pub(super) struct PassWords {
    pub(super) offsets: usize,
    pub(super) counter: usize,
    pub(super) status: usize,
    pub(super) segs: usize,
    pub(super) segments: usize,
}

/// A pass's inputs and outputs.
pub(super) struct PassIo<'a, B> {
    pub(super) keys_in: CudaView<'a, B>,
    pub(super) keys_out: CudaViewMut<'a, B>,
    pub(super) vals: Option<(CudaView<'a, u32>, CudaViewMut<'a, u32>)>,
}

/// Queues one pass kernel over `tiles` tiles.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_pass<B>(
    gpu: &Gpu,
    spec: KernelSpec<PassArgs<B>>,
    state: &mut CudaSlice<u32>,
    at: PassWords,
    tiles: usize,
    n: usize,
    shift: u32,
    mode: u32,
    io: PassIo<'_, B>,
) -> Result<()> {
    let word = |w: usize| {
        u32::try_from(w).map_err(|_| {
            Error::invalid(format!("{}: state index {w} exceeds 32 bits", spec.name()))
        })
    };
    let (n32, offsets_at, counter_at, status_at, segs_at, segments) = (
        n as u32,
        word(at.offsets)?,
        word(at.counter)?,
        word(at.status)?,
        word(at.segs)?,
        word(at.segments)?,
    );
    let cfg = tile_grid(&spec, tiles * spec.tile() as usize, 0)?;
    let PassIo {
        keys_in,
        mut keys_out,
        vals,
    } = io;
    // Keys-only kernels never touch the value pointers: they get null ones.
    let (vals_in, mut vals_out) = vals.unzip();
    let args = (
        &keys_in,
        &mut keys_out,
        vals_in.as_ref(),
        vals_out.as_mut(),
        &n32,
        &shift,
        &mode,
        state,
        &offsets_at,
        &counter_at,
        &status_at,
        &segs_at,
        &segments,
    );
    // SAFETY: the key (and value) buffers hold `n` items, the grid covers `tiles` tiles of
    // them, and the caller prepared the state at these words for this pass and these tiles.
    unsafe { gpu.launch(&spec, cfg, args) }
}

/// A reusable radix sort: temporary buffers and kernel state for inputs of up to `capacity`
/// items, so repeated sorts allocate nothing.
pub struct RadixSort<K: SortKey> {
    temp_keys: DeviceColumn<K>,
    temp_vals: Option<DeviceColumn<u32>>,
    work: Option<RadixWork>,
    msd_hist: Option<CudaSlice<u32>>,
    msd_state: Option<CudaSlice<u32>>,
    strategy: SortStrategy,
    passes_run: usize,
    ran: Option<SortStrategy>,
    /// A pass kernel for the benchmark's sweep, and whether it moves values.
    pass_override: Option<(KernelSpec<PassArgs<K>>, bool)>,
    /// A local sort kernel for the benchmark's sweep of the MSD sort.
    local_override: Option<KernelSpec<msd::LocalSortArgs>>,
    /// The local sort kernel the last MSD sort ran.
    local_run: Option<KernelSpec<msd::LocalSortArgs>>,
}

impl<K: SortKey> RadixSort<K> {
    /// Buffers for up to `capacity` keys, with room for `u32` values when `with_values`.
    pub fn new(gpu: &Gpu, capacity: usize, with_values: bool) -> Result<Self> {
        Ok(RadixSort {
            // Passes write the temporaries before they read them.
            temp_keys: gpu.scratch(capacity)?,
            temp_vals: if with_values {
                Some(gpu.scratch(capacity)?)
            } else {
                None
            },
            work: None,
            msd_hist: None,
            msd_state: None,
            strategy: SortStrategy::Auto,
            passes_run: 0,
            ran: None,
            pass_override: None,
            local_override: None,
            local_run: None,
        })
    }

    /// Chooses how later sorts of 32-bit keys run (`u64` keys always take the LSB sort).
    pub fn set_strategy(&mut self, strategy: SortStrategy) {
        self.strategy = strategy;
    }

    /// The sort the last call ran: [`SortStrategy::Lsb`] or [`SortStrategy::Msd`] (`None`
    /// before the first sort and for empty inputs).
    pub fn strategy_run(&self) -> Option<SortStrategy> {
        self.ran
    }

    /// Uses `spec` (a pass kernel of `K` with 32-bit status, such as the tile sweep's; key +
    /// value when `values`) for the sorts of that kind below 2^30 items: for the benchmark.
    #[doc(hidden)]
    pub fn set_pass_kernel(&mut self, spec: KernelSpec<PassArgs<K>>, values: bool) {
        self.pass_override = Some((spec, values));
    }

    /// Uses `spec` (a local sort kernel of `K`, keys alone or with values as the sorts will
    /// be) for the MSD sort's buckets when its tile holds the largest: for the benchmark.
    #[doc(hidden)]
    pub fn set_local_kernel(&mut self, spec: KernelSpec<msd::LocalSortArgs>) {
        self.local_override = Some(spec);
    }

    /// The local sort kernel the last sort ran, if it was the MSD sort.
    #[doc(hidden)]
    pub fn local_run(&self) -> Option<KernelSpec<msd::LocalSortArgs>> {
        self.local_run
    }

    /// Passes over the data the last sort ran after its histogram: the LSB sort's one-sweep
    /// passes (after skipping trivial ones), or 3 for the MSD sort (two passes and the local
    /// sorts).
    pub fn passes_run(&self) -> usize {
        self.passes_run
    }

    /// Sorts `keys` into `out` (equal lengths).
    pub fn sort_keys(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        out: &mut DeviceColumn<K>,
        order: Order,
    ) -> Result<()> {
        self.run(gpu, keys, out, None, order)
    }

    /// Sorts `keys` with their `values` into `keys_out` and `vals_out` (all of equal length).
    pub fn sort_pairs(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        values: &DeviceColumn<u32>,
        keys_out: &mut DeviceColumn<K>,
        vals_out: &mut DeviceColumn<u32>,
        order: Order,
    ) -> Result<()> {
        self.run(gpu, keys, keys_out, Some((values, vals_out)), order)
    }

    /// Checks the lengths against each other and the buffers, then runs the MSD sort where
    /// it pays and the LSB sort otherwise.
    fn run(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        out: &mut DeviceColumn<K>,
        vals: Option<(&DeviceColumn<u32>, &mut DeviceColumn<u32>)>,
        order: Order,
    ) -> Result<()> {
        self.check(keys, out, &vals)?;
        self.passes_run = 0;
        self.ran = None;
        self.local_run = None;
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let (desc, with_values) = (order == Order::Descending, vals.is_some());
        // The MSD sort's histogram also counts what the LSB sort needs if a bucket is too
        // large for it.
        let mut lsb_hist = None;
        if let Some(m) = self.msd_kernels(gpu, n)? {
            let hist = msd_host::histogram(gpu, m.hist, &keys.buf, n, desc, &mut self.msd_hist)?;
            let lsb = msd_host::lsb_histograms(&hist);
            match self.msd_local_kernel(gpu, &m, &hist, &lsb, n, with_values)? {
                Some(local) => return self.run_msd(gpu, &hist, desc, local, keys, out, vals),
                None => lsb_hist = Some(lsb),
            }
        }
        self.run_lsb(gpu, keys, out, vals, desc, lsb_hist)
    }

    /// Refuses outputs of another length than the keys, and inputs larger than the buffers.
    fn check(
        &self,
        keys: &DeviceColumn<K>,
        out: &DeviceColumn<K>,
        vals: &Option<(&DeviceColumn<u32>, &mut DeviceColumn<u32>)>,
    ) -> Result<()> {
        let (n, name) = (keys.len(), "radix sort");
        check_same_len(name, "output keys", out.len(), n)?;
        if let Some((vi, vo)) = vals {
            check_same_len(name, "values", vi.len(), n)?;
            check_same_len(name, "output values", vo.len(), n)?;
            if self.temp_vals.is_none() {
                return Err(Error::invalid(format!(
                    "{name}: this RadixSort was made without value buffers"
                )));
            }
        }
        if n > self.temp_keys.capacity() {
            return Err(Error::invalid(format!(
                "{name}: buffers hold {} keys, input has {n}",
                self.temp_keys.capacity()
            )));
        }
        Ok(())
    }

    /// The MSD sort's kernels where the strategy asks for it at `n` keys and the GPU offers
    /// its histogram's shared memory.
    fn msd_kernels(&self, gpu: &Gpu, n: usize) -> Result<Option<MsdKernels<K>>> {
        let wanted = n as u64 <= k::STATUS32_MAX_ITEMS
            && self.pass_override.is_none()
            && match self.strategy {
                SortStrategy::Auto => n >= MSD_MIN_ITEMS,
                SortStrategy::Lsb => false,
                SortStrategy::Msd => true,
            };
        Ok(match K::MSD {
            Some(m) if wanted && msd_host::fits(gpu, &m.hist, msd::MSD_HIST_SMEM)? => Some(m),
            _ => None,
        })
    }

    /// The local sort kernel whose tile holds the largest bucket of `hist` (or the
    /// benchmark's), where the MSD sort then costs less than the LSB passes it saves; `None`
    /// sends the keys to the LSB sort.
    fn msd_local_kernel(
        &self,
        gpu: &Gpu,
        m: &MsdKernels<K>,
        hist: &[u32],
        lsb: &[u32],
        n: usize,
        with_values: bool,
    ) -> Result<Option<KernelSpec<msd::LocalSortArgs>>> {
        let runs = |s: &KernelSpec<msd::LocalSortArgs>| {
            msd_host::fits(gpu, s, msd::local_sort_smem(s.tile() as usize, with_values))
        };
        let local =
            msd_host::local_kernel(hist, &m.local, with_values, runs)?.map(|fit| {
                match self.local_override {
                    Some(o) if o.tile() >= fit.tile() => o,
                    _ => fit,
                }
            });
        Ok(local.filter(|l| {
            self.strategy == SortStrategy::Msd
                || msd_host::pays(n, l.tile() as usize, with_values, lsb)
        }))
    }

    /// The MSD sort with the local sort kernel `local`: two passes, then one local sort per
    /// bucket.
    #[allow(clippy::too_many_arguments)]
    fn run_msd(
        &mut self,
        gpu: &Gpu,
        hist: &[u32],
        desc: bool,
        local: KernelSpec<msd::LocalSortArgs>,
        keys: &DeviceColumn<K>,
        out: &mut DeviceColumn<K>,
        vals: Option<(&DeviceColumn<u32>, &mut DeviceColumn<u32>)>,
    ) -> Result<()> {
        let first = K::PASS[usize::from(vals.is_some())][0];
        let b = MsdBuffers {
            keys: &keys.buf,
            out: &mut out.buf,
            temp: &mut self.temp_keys.buf,
            vals: match (vals, self.temp_vals.as_mut()) {
                (Some((vi, vo)), Some(tv)) => Some(MsdValues {
                    vals: &vi.buf,
                    out: &mut vo.buf,
                    temp: &mut tv.buf,
                }),
                _ => None,
            },
        };
        msd_host::sort(
            gpu,
            hist,
            keys.len(),
            desc,
            first,
            local,
            &mut self.msd_state,
            b,
        )?;
        self.passes_run = 3;
        self.ran = Some(SortStrategy::Msd);
        self.local_run = Some(local);
        Ok(())
    }

    /// The pass kernel for `n` keys (alone or with values): the benchmark's where it set one.
    fn pass_kernel(&self, n: usize, with_values: bool) -> KernelSpec<PassArgs<K>> {
        let s64 = status_width(n);
        match self.pass_override {
            Some((o, v)) if v == with_values && s64 == 0 => o,
            _ => K::PASS[usize::from(with_values)][s64],
        }
    }

    /// Sorts `keys` (with `values`) ascending by their 8-bit digits from bit `first_bit` up
    /// whose histograms `hist` holds ([`digit_histograms`]), stably: the LSB passes of those
    /// digits (skipping trivial ones). The partitioned group-by's partial sort.
    pub(crate) fn sort_digits(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        out: &mut DeviceColumn<K>,
        vals: Option<(&DeviceColumn<u32>, &mut DeviceColumn<u32>)>,
        first_bit: u32,
        hist: Vec<u32>,
    ) -> Result<()> {
        self.check(keys, out, &vals)?;
        self.passes_run = 0;
        self.ran = None;
        self.local_run = None;
        let digits = hist.len() >> k::SORT_BITS;
        if keys.is_empty() || digits == 0 {
            return Ok(());
        }
        self.run_lsb_digits(gpu, keys, out, vals, false, Some(hist), first_bit, digits)
    }

    /// The LSB sort: a histogram of every digit (unless the MSD sort's `hist` has them), then
    /// one one-sweep pass per digit that does not hold every key, ping-ponging between `out`
    /// and the temporary so that the last pass writes `out`.
    fn run_lsb(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        out: &mut DeviceColumn<K>,
        vals: Option<(&DeviceColumn<u32>, &mut DeviceColumn<u32>)>,
        desc: bool,
        hist: Option<Vec<u32>>,
    ) -> Result<()> {
        let digits = (<K::Bits as RadixBits>::BITS / k::SORT_BITS) as usize;
        self.run_lsb_digits(gpu, keys, out, vals, desc, hist, 0, digits)
    }

    /// [`Self::run_lsb`] over `digits` digits from bit `first_bit` up.
    #[allow(clippy::too_many_arguments)]
    fn run_lsb_digits(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        out: &mut DeviceColumn<K>,
        mut vals: Option<(&DeviceColumn<u32>, &mut DeviceColumn<u32>)>,
        desc: bool,
        hist: Option<Vec<u32>>,
        first_bit: u32,
        digits: usize,
    ) -> Result<()> {
        let n = keys.len();
        let spec = self.pass_kernel(n, vals.is_some());
        let bits = k::SORT_BITS;
        let layout = RadixState {
            passes: digits,
            bins: 1 << bits,
            tiles: spec.tiles(n as u64) as usize,
            status_words: 1 + status_width(n),
        };
        let mut work = RadixWork::prepare(gpu, self.work.take(), layout)?;
        let hist = match hist {
            Some(h) => h,
            None => {
                work.histogram::<K>(gpu, K::HIST, &keys.buf, n, first_bit, bits, desc)?;
                work.read_histograms(gpu)?
            }
        };
        work.write_offsets(gpu, &digit_offsets(&hist, layout.bins))?;
        let run = nontrivial_passes(&hist, layout.passes, layout.bins, n);
        let last = run.len() - 1;
        let temp_keys = &mut self.temp_keys.buf;
        let mut temp_vals = self.temp_vals.as_mut().map(|t| &mut t.buf);
        for (i, &p) in run.iter().enumerate() {
            let mode = (if i == 0 { k::MODE_FIRST } else { 0 })
                | (if i == last { k::MODE_LAST } else { 0 })
                | (if desc { k::MODE_DESC } else { 0 });
            let to_out = (last - i).is_multiple_of(2);
            let shift = first_bit + p as u32 * bits;
            // Bits and keys share a representation: passes move raw words.
            let (ki, ko): (&CudaSlice<K>, &mut CudaSlice<K>) = match (i, to_out) {
                (0, true) => (&keys.buf, &mut out.buf),
                (0, false) => (&keys.buf, &mut *temp_keys),
                (_, true) => (&*temp_keys, &mut out.buf),
                (_, false) => (&out.buf, &mut *temp_keys),
            };
            let v = match (&mut vals, &mut temp_vals) {
                (Some((vi, vo)), Some(tv)) => Some(match (i, to_out) {
                    (0, true) => (&vi.buf, &mut vo.buf),
                    (0, false) => (&vi.buf, &mut **tv),
                    (_, true) => (&**tv, &mut vo.buf),
                    (_, false) => (&vo.buf, &mut **tv),
                }),
                _ => None,
            };
            work.pass(gpu, spec, p, n, shift, mode, ki, ko, v)?;
        }
        self.passes_run = run.len();
        self.ran = Some(SortStrategy::Lsb);
        self.work = Some(work);
        Ok(())
    }
}

/// The passes of an LSB sort of `n` keys worth running: a pass where one digit holds every key
/// moves nothing. At least one runs, which also maps the keys to ordered bits and back.
fn nontrivial_passes(hist: &[u32], passes: usize, bins: usize, n: usize) -> Vec<usize> {
    let mut run: Vec<usize> = (0..passes)
        .filter(|&p| {
            !hist[p * bins..(p + 1) * bins]
                .iter()
                .any(|&c| c as usize == n)
        })
        .collect();
    if run.is_empty() {
        run.push(0);
    }
    run
}

/// Histograms of `digits` 8-bit digits of `keys` from bit `first_bit` up (`256` words each;
/// one read of the keys, synchronizes), as [`RadixSort::sort_digits`] takes them.
pub(crate) fn digit_histograms(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    first_bit: u32,
    digits: usize,
) -> Result<Vec<u32>> {
    let bits = k::SORT_BITS;
    let layout = RadixState {
        passes: digits,
        bins: 1 << bits,
        tiles: 0,
        status_words: 1,
    };
    let mut work = RadixWork::prepare(gpu, None, layout)?;
    let n = keys.len();
    if n > 0 {
        work.histogram::<u32>(
            gpu,
            <u32 as SortKey>::HIST,
            &keys.buf,
            n,
            first_bit,
            bits,
            false,
        )?;
    }
    work.read_histograms(gpu)
}

/// The row ids `0 .. n` in a new column, the payload of a sort that remembers where each key
/// came from.
pub(crate) fn row_ids(gpu: &Gpu, n: usize) -> Result<DeviceColumn<u32>> {
    let mut rows = gpu.scratch::<u32>(n)?;
    fill_row_ids(gpu, &mut rows)?;
    Ok(rows)
}

/// Writes `rows[i] = i` over the column's length.
pub(crate) fn fill_row_ids(gpu: &Gpu, rows: &mut DeviceColumn<u32>) -> Result<()> {
    use tessera_kernels::ops::topk::TOPK_IOTA;
    let n = rows.len();
    let n32 = n as u32;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (n.div_ceil(256).clamp(1, 4096) as u32, 1, 1),
        block_dim: (TOPK_IOTA.threads(), 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `rows` holds `n` items; the kernel strides over any grid.
    unsafe { gpu.launch(&TOPK_IOTA, cfg, (rows, &n32)) }
}

/// Sorts `keys` into a new column.
pub fn sort<K: SortKey>(
    gpu: &Gpu,
    keys: &DeviceColumn<K>,
    order: Order,
) -> Result<DeviceColumn<K>> {
    let mut out = gpu.zeros(keys.len())?;
    RadixSort::new(gpu, keys.len(), false)?.sort_keys(gpu, keys, &mut out, order)?;
    Ok(out)
}

/// Sorts `keys` with their `values` (stable) into new columns.
pub fn sort_pairs<K: SortKey>(
    gpu: &Gpu,
    keys: &DeviceColumn<K>,
    values: &DeviceColumn<u32>,
    order: Order,
) -> Result<(DeviceColumn<K>, DeviceColumn<u32>)> {
    let (mut ko, mut vo) = (gpu.zeros(keys.len())?, gpu.zeros(keys.len())?);
    RadixSort::new(gpu, keys.len(), true)?
        .sort_pairs(gpu, keys, values, &mut ko, &mut vo, order)?;
    Ok((ko, vo))
}

/// Keys and values grouped by a radix digit of the key.
#[derive(Debug)]
pub struct Partitions {
    /// Partitioned keys.
    pub keys: DeviceColumn<u32>,
    /// Their values.
    pub values: DeviceColumn<u32>,
    /// Start of partition `d` at `[d]`; the last entry is the number of items.
    pub offsets: Vec<u64>,
}

/// A radix partition pass over `u32` keys with `u32` values (thesis Figure 3-13): a histogram
/// phase, then a shuffle phase, each callable on its own so they can be timed apart. Stable
/// passes keep input order within a partition (the LSB building block); unstable ones leave
/// the order of tiles to the scheduler (the MSB building block) and need no look-back.
pub struct RadixPartition {
    start_bit: u32,
    bits: u32,
    stable: bool,
    work: Option<RadixWork>,
    offsets: Vec<u32>,
    n: Option<usize>,
}

impl RadixPartition {
    /// Partitions on key bits `start_bit .. start_bit + bits`, `bits` in `1..=10`.
    pub fn new(start_bit: u32, bits: u32, stable: bool) -> Result<Self> {
        if !(1..=10).contains(&bits) || start_bit + bits > 32 {
            return Err(Error::invalid(format!(
                "radix partition: bits {start_bit}..{} must be 1 to 10 bits within a 32-bit key",
                start_bit + bits
            )));
        }
        Ok(RadixPartition {
            start_bit,
            bits,
            stable,
            work: None,
            offsets: Vec::new(),
            n: None,
        })
    }

    fn spec(&self, n: usize) -> KernelSpec<PassArgs<u32>> {
        k::PARTITION[self.bits as usize - 1][if self.stable { status_width(n) } else { 2 }]
    }

    /// Histogram phase: counts the partitions' sizes and returns their offsets (the last entry
    /// is `keys.len()`); synchronizes.
    pub fn histogram(&mut self, gpu: &Gpu, keys: &DeviceColumn<u32>) -> Result<Vec<u64>> {
        let n = keys.len();
        let spec = self.spec(n);
        let layout = self.layout_of(n, spec);
        let mut work = RadixWork::prepare(gpu, self.work.take(), layout)?;
        if n > 0 {
            work.histogram::<u32>(
                gpu,
                k::RADIX_HIST_U32,
                &keys.buf,
                n,
                self.start_bit,
                self.bits,
                false,
            )?;
        }
        let hist = work.read_histograms(gpu)?;
        self.offsets = digit_offsets(&hist, layout.bins);
        self.work = Some(work);
        self.n = Some(n);
        let mut out: Vec<u64> = self.offsets.iter().map(|&o| o as u64).collect();
        out.push(n as u64);
        Ok(out)
    }

    /// Shuffle phase (queued): writes the partitions of `keys` and `values` to the outputs,
    /// using the offsets of the last [`RadixPartition::histogram`] of these keys.
    pub fn shuffle(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<u32>,
        values: &DeviceColumn<u32>,
        keys_out: &mut DeviceColumn<u32>,
        vals_out: &mut DeviceColumn<u32>,
    ) -> Result<()> {
        let n = keys.len();
        let name = "radix partition";
        check_same_len(name, "values", values.len(), n)?;
        check_same_len(name, "output keys", keys_out.len(), n)?;
        check_same_len(name, "output values", vals_out.len(), n)?;
        let (Some(hn), Some(work)) = (self.n, self.work.take()) else {
            return Err(Error::invalid(format!("{name}: shuffle before histogram")));
        };
        if hn != n {
            self.work = Some(work);
            return Err(Error::invalid(format!(
                "{name}: the histogram counted {hn} keys, the shuffle got {n}"
            )));
        }
        let spec = self.spec(n);
        // Fresh tile counter and status, and the cursors an unstable pass consumes.
        let mut work = RadixWork::prepare(gpu, Some(work), self.layout_of(n, spec))?;
        work.write_offsets(gpu, &self.offsets)?;
        let r = if n == 0 {
            Ok(())
        } else {
            work.pass(
                gpu,
                spec,
                0,
                n,
                self.start_bit,
                k::MODE_FIRST | k::MODE_LAST,
                &keys.buf,
                &mut keys_out.buf,
                Some((&values.buf, &mut vals_out.buf)),
            )
        };
        self.work = Some(work);
        r
    }

    fn layout_of(&self, n: usize, spec: KernelSpec<PassArgs<u32>>) -> RadixState {
        RadixState {
            passes: 1,
            bins: 1 << self.bits,
            tiles: spec.tiles(n as u64) as usize,
            // Unstable passes keep no status; their state stays as small as a 32-bit one.
            status_words: 1 + if self.stable { status_width(n) } else { 0 },
        }
    }
}

/// Partitions `keys` and `values` on key bits `start_bit .. start_bit + bits` (`bits` in
/// `1..=10`) into new columns.
pub fn radix_partition(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    values: &DeviceColumn<u32>,
    start_bit: u32,
    bits: u32,
    stable: bool,
) -> Result<Partitions> {
    let mut p = RadixPartition::new(start_bit, bits, stable)?;
    check_same_len("radix partition", "values", values.len(), keys.len())?;
    let offsets = p.histogram(gpu, keys)?;
    let (mut ko, mut vo) = (gpu.zeros(keys.len())?, gpu.zeros(keys.len())?);
    p.shuffle(gpu, keys, values, &mut ko, &mut vo)?;
    Ok(Partitions {
        keys: ko,
        values: vo,
        offsets,
    })
}
