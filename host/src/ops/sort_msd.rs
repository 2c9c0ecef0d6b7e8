//! Host side of the MSD sort of 32-bit keys (three passes over the data, see
//! `tessera_kernels::ops::sort_msd`): the histogram, the plan (which local sort kernel holds
//! the largest bucket, or none), the state the two one-sweep passes share, and the launches.
use cudarc::driver::{CudaSlice, LaunchConfig};
use tessera_kernels::ops::sort::PassArgs;
use tessera_kernels::ops::sort::{self as k, MODE_DESC, MODE_FIRST, MODE_LAST};
use tessera_kernels::ops::sort_msd::{
    LocalSortArgs, LocalSorts, MSD_BUCKETS, MSD_HIST_SMEM, MSD_HIST_WORDS, MSD_SEGMENTS,
    MsdHistArgs, MsdState, local_sort_smem,
};
use tessera_kernels::spec::{KernelShape, KernelSpec};

use super::sort::{PassIo, PassWords, launch_pass};
use crate::error::{Error, Result};
use crate::runtime::Gpu;
use crate::runtime::{bits_of, bits_of_mut};

/// A key type's MSD kernels (named by [`SortKey`](super::SortKey), built by this crate only).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct MsdKernels<K> {
    /// The histogram kernel.
    pub(crate) hist: KernelSpec<MsdHistArgs<K>>,
    /// The local sort kernels.
    pub(crate) local: LocalSorts,
}

/// Allows `spec` `bytes` of dynamic shared memory (above 48 KB it must be allowed per kernel);
/// an error when this GPU does not offer that much.
fn allow_smem(gpu: &Gpu, spec: &KernelShape, bytes: usize) -> Result<()> {
    let limit = gpu.allow_max_dynamic_smem(spec)?;
    if bytes > limit {
        return Err(Error::invalid(format!(
            "{} needs {bytes} bytes of shared memory, this GPU offers {limit}",
            spec.name()
        )));
    }
    Ok(())
}

/// Whether `spec` runs on `gpu` with `dynamic` bytes of dynamic shared memory beside its static
/// shared memory (the MSD kernels need more than 48 KB, which smaller GPUs may not offer).
pub(super) fn fits(gpu: &Gpu, spec: &KernelShape, dynamic: usize) -> Result<bool> {
    Ok(dynamic <= gpu.max_dynamic_smem(spec)?)
}

/// Counts the keys' top-16-bit buckets and low digits into `buf` and returns them
/// ([`MSD_HIST_WORDS`] words); synchronizes.
pub(super) fn histogram<K>(
    gpu: &Gpu,
    spec: KernelSpec<MsdHistArgs<K>>,
    keys: &CudaSlice<K>,
    n: usize,
    desc: bool,
    buf: &mut Option<CudaSlice<u32>>,
) -> Result<Vec<u32>> {
    let hist = match buf {
        Some(b) => b,
        None => buf.insert(gpu.stream().alloc_zeros::<u32>(MSD_HIST_WORDS).map_err(
            Error::driver("allocating the MSD histogram", MSD_HIST_WORDS * 4),
        )?),
    };
    gpu.stream().memset_zeros(hist).map_err(Error::driver(
        "zeroing the MSD histogram",
        MSD_HIST_WORDS * 4,
    ))?;
    allow_smem(gpu, &spec, MSD_HIST_SMEM)?;
    let blocks = spec.tiles(n as u64).clamp(1, gpu.sm_count() as u64) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: MSD_HIST_SMEM as u32,
    };
    let (n32, desc) = (n as u32, u32::from(desc));
    // SAFETY: `keys` holds `n` items, `hist` MSD_HIST_WORDS zeroed words, and the launch
    // gives the kernel its MSD_HIST_SMEM bytes of dynamic shared memory.
    unsafe { gpu.launch(&spec, cfg, (keys, &n32, &desc, &mut *hist)) }?;
    let mut h = vec![0u32; MSD_HIST_WORDS];
    gpu.stream()
        .memcpy_dtoh(&*hist, &mut h[..])
        .map_err(Error::driver(
            "reading the MSD histogram",
            MSD_HIST_WORDS * 4,
        ))?;
    gpu.synchronize()?;
    Ok(h)
}

/// The local sort kernel whose tile holds the largest bucket, if any does among those that
/// `runs` (see [`fits`]).
pub(super) fn local_kernel(
    hist: &[u32],
    local: &LocalSorts,
    values: bool,
    runs: impl Fn(&KernelSpec<LocalSortArgs>) -> Result<bool>,
) -> Result<Option<KernelSpec<LocalSortArgs>>> {
    let largest = hist[..MSD_BUCKETS].iter().copied().max().unwrap_or(0);
    let kernels = if values { local.pairs } else { local.keys };
    for s in kernels.iter().filter(|s| s.tile() >= largest) {
        if runs(s)? {
            return Ok(Some(*s));
        }
    }
    Ok(None)
}

/// Whether the MSD sort of `n` keys (with values or not) with local sort tiles of `tile` items
/// moves less than the LSB sort with histograms `lsb`. Costs are in LSB passes: the MSD sort
/// takes two, a tenth for its larger histogram, and per bucket (empty ones too) a fixed cost
/// plus a per-slot cost of its tile, fitted on the H100 to the local sorts of 2^26 and 2^28
/// uniform keys (key + value sort: a bucket costs what a pass costs for 900 items, a slot
/// 0.8 items; keys alone: 1,700 and 0.7); the LSB sort takes one pass per digit it does not
/// skip.
pub(super) fn pays(n: usize, tile: usize, values: bool, lsb: &[u32]) -> bool {
    let passes = lsb
        .chunks(256)
        .filter(|h| !h.iter().any(|&c| c as usize == n))
        .count();
    let (fixed, slot) = if values { (900.0, 0.8) } else { (1700.0, 0.7) };
    let local = MSD_BUCKETS as f64 * (fixed + slot * tile as f64) / n as f64;
    2.1 + local <= passes as f64
}

/// The LSB sort's four digit histograms (bits 0..8 first) from the MSD histogram.
pub(super) fn lsb_histograms(hist: &[u32]) -> Vec<u32> {
    let (buckets, low) = hist.split_at(MSD_BUCKETS);
    let mut top = vec![0u32; 256];
    let mut second = vec![0u32; 256];
    for (b, &c) in buckets.iter().enumerate() {
        top[b >> 8] += c;
        second[b & 255] += c;
    }
    [&low[256..512], &low[..256], &second[..], &top[..]].concat()
}

/// The state words the host writes before the passes: the first pass's digit offsets, the
/// buckets' starts (then `n`) and the second pass's segment table for `tile`-item tiles.
fn plan_words(hist: &[u32], n: usize, tile: usize) -> Vec<u32> {
    let buckets = &hist[..MSD_BUCKETS];
    let mut words = Vec::with_capacity(MSD_SEGMENTS + MSD_BUCKETS + 1 + MSD_SEGMENTS + 1);
    let mut run = 0u32;
    for seg in buckets.chunks(256) {
        words.push(run);
        run += seg.iter().sum::<u32>();
    }
    let mut run = 0u32;
    for &c in buckets {
        words.push(run);
        run += c;
    }
    words.push(n as u32);
    let mut tiles = 0u32;
    for seg in buckets.chunks(256) {
        words.push(tiles);
        tiles += seg.iter().sum::<u32>().div_ceil(tile as u32);
    }
    words.push(tiles);
    words
}

/// Keys and values of one MSD sort: the input, the output and a temporary of each.
pub(super) struct MsdBuffers<'a, K> {
    pub(super) keys: &'a CudaSlice<K>,
    pub(super) out: &'a mut CudaSlice<K>,
    pub(super) temp: &'a mut CudaSlice<K>,
    pub(super) vals: Option<MsdValues<'a>>,
}

/// Values of an MSD sort.
pub(super) struct MsdValues<'a> {
    pub(super) vals: &'a CudaSlice<u32>,
    pub(super) out: &'a mut CudaSlice<u32>,
    pub(super) temp: &'a mut CudaSlice<u32>,
}

/// The sort's three steps (queued), `hist` from [`histogram`], `local` from
/// [`local_kernel`]; `first` is the key type's one-sweep pass kernel (32-bit status).
#[allow(clippy::too_many_arguments)]
pub(super) fn sort<K: crate::runtime::DeviceItem>(
    gpu: &Gpu,
    hist: &[u32],
    n: usize,
    desc: bool,
    first: KernelSpec<PassArgs<K>>,
    local: KernelSpec<LocalSortArgs>,
    state: &mut Option<CudaSlice<u32>>,
    b: MsdBuffers<'_, K>,
) -> Result<()> {
    let values = b.vals.is_some();
    let second = if values {
        k::SORT_SEG_KV
    } else {
        k::SORT_SEG_K
    };
    let plan = plan_words(hist, n, second.tile() as usize);
    let tiles2 = *plan.last().unwrap_or(&0) as usize;
    let layout = MsdState {
        tiles: tiles2.max(first.tiles(n as u64) as usize),
    };
    let words = layout.words();
    let state = match state.take() {
        Some(s) if s.len() >= words => state.insert(s),
        _ => state.insert(
            gpu.stream()
                .alloc_zeros::<u32>(words)
                .map_err(Error::driver("allocating MSD sort state", words * 4))?,
        ),
    };
    gpu.stream()
        .memset_zeros(&mut state.slice_mut(..words))
        .map_err(Error::driver("zeroing MSD sort state", words * 4))?;
    gpu.stream()
        .memcpy_htod(&plan[..], &mut state.slice_mut(..plan.len()))
        .map_err(Error::driver("writing the MSD sort plan", plan.len() * 4))?;
    let desc_bit = if desc { MODE_DESC } else { 0 };
    let MsdBuffers {
        keys,
        out,
        temp,
        mut vals,
    } = b;
    // Bits 24..32: input -> out.
    launch_pass(
        gpu,
        first,
        state,
        PassWords {
            offsets: layout.offsets(),
            counter: layout.counter(0),
            status: layout.status(0),
            segs: 0,
            segments: 0,
        },
        first.tiles(n as u64) as usize,
        n,
        24,
        MODE_FIRST | desc_bit,
        PassIo {
            keys_in: keys.as_view(),
            keys_out: out.as_view_mut(),
            vals: vals
                .as_mut()
                .map(|v| (v.vals.as_view(), v.out.as_view_mut())),
        },
    )?;
    // Bits 16..24 within each segment: out -> temp, as ordered bits (the first pass wrote
    // them, the local sort turns them back into keys).
    launch_pass(
        gpu,
        second,
        state,
        PassWords {
            offsets: layout.bounds(),
            counter: layout.counter(1),
            status: layout.status(1),
            segs: layout.segs(),
            segments: MSD_SEGMENTS,
        },
        tiles2,
        n,
        16,
        0,
        PassIo {
            keys_in: bits_of(out),
            keys_out: bits_of_mut(temp),
            vals: vals
                .as_mut()
                .map(|v| (v.out.as_view(), v.temp.as_view_mut())),
        },
    )?;
    // Bits 0..16 within each bucket: temp -> out.
    let smem = local_sort_smem(local.tile() as usize, values);
    allow_smem(gpu, &local, smem)?;
    let cfg = LaunchConfig {
        grid_dim: (MSD_BUCKETS as u32, 1, 1),
        block_dim: (local.threads(), 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let mode = MODE_LAST | desc_bit;
    let at = layout.bounds();
    let bounds = state.slice(at..at + MSD_BUCKETS + 1);
    let (vals_in, vals_out) = vals.map(|v| (&*v.temp, v.out)).unzip();
    let args = (
        &bits_of(temp),
        &mut bits_of_mut(out),
        vals_in,
        vals_out,
        &bounds,
        &mode,
    );
    // SAFETY: one block per bucket, each bucket within the `n` keys (and values) of the
    // buffers and no larger than the kernel's tile (`local_kernel` chose it so), and the
    // launch gives the kernel its `local_sort_smem` bytes.
    unsafe { gpu.launch(&local, cfg, args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist_of(keys: &[u32]) -> Vec<u32> {
        let mut h = vec![0u32; MSD_HIST_WORDS];
        for &x in keys {
            h[(x >> 16) as usize] += 1;
            h[MSD_BUCKETS + ((x >> 8) & 255) as usize] += 1;
            h[MSD_BUCKETS + 256 + (x & 255) as usize] += 1;
        }
        h
    }

    #[test]
    fn lsb_histograms_count_each_byte() {
        let keys = [0x0102_0304u32, 0x0102_0305, 0xff00_0001, 7];
        let h = lsb_histograms(&hist_of(&keys));
        for (p, chunk) in h.chunks(256).enumerate() {
            let mut want = vec![0u32; 256];
            for &x in &keys {
                want[((x >> (8 * p)) & 255) as usize] += 1;
            }
            assert_eq!(chunk, &want[..], "digit {p}");
        }
    }

    #[test]
    fn plan_words_give_offsets_bounds_and_tiles() {
        // Segment 1 holds 5 keys in two buckets, segment 255 holds 2 keys.
        let keys = [
            0x0100_0000u32,
            0x0100_0001,
            0x0101_0000,
            0x0101_0000,
            0x0100_0002,
            0xff00_0000,
            0xffff_0000,
        ];
        let w = plan_words(&hist_of(&keys), keys.len(), 2);
        let (offsets, rest) = w.split_at(MSD_SEGMENTS);
        let (bounds, segs) = rest.split_at(MSD_BUCKETS + 1);
        assert_eq!(
            (offsets[0], offsets[1], offsets[2], offsets[255]),
            (0, 0, 5, 5)
        );
        assert_eq!((bounds[0x0100], bounds[0x0101], bounds[0x0102]), (0, 3, 5));
        assert_eq!(
            (
                bounds[0xff00],
                bounds[0xff01],
                bounds[0xffff],
                bounds[MSD_BUCKETS]
            ),
            (5, 6, 6, 7)
        );
        // Tiles of 2: segment 1 takes 3, segment 255 takes 1.
        assert_eq!(
            (segs[0], segs[1], segs[2], segs[255], segs[256]),
            (0, 0, 3, 3, 4)
        );
    }

    #[test]
    fn msd_pays_when_tiles_cost_less_than_the_saved_passes() {
        let lsb = vec![1u32; 1024]; // four digits that vary
        for values in [false, true] {
            assert!(pays(1 << 28, 4608, values, &lsb));
            assert!(pays(1 << 27, 2304, values, &lsb));
            assert!(pays(1 << 29, 9216, values, &lsb));
            assert!(!pays(1 << 27, 9216, values, &lsb));
            assert!(!pays(1 << 25, 1280, values, &lsb));
        }
        // The crossover the H100 measured at 2^26 (docs/perf-log.md): pairs take the MSD sort,
        // keys alone do not.
        assert!(pays(1 << 26, 1280, true, &lsb));
        assert!(!pays(1 << 26, 1280, false, &lsb));
        // Three varying digits: the MSD sort would save nothing.
        let mut three = lsb.clone();
        three[768..].fill(0);
        three[768] = 1 << 28;
        assert!(!pays(1 << 28, 4608, true, &three));
    }

    #[test]
    fn local_kernel_fits_the_largest_bucket() {
        let local = tessera_kernels::ops::sort_msd::LOCAL_U32;
        let all = |_: &KernelSpec<LocalSortArgs>| Ok(true);
        let pick = |h: &[u32], runs: &dyn Fn(&KernelSpec<LocalSortArgs>) -> Result<bool>| {
            local_kernel(h, &local, true, runs).unwrap()
        };
        let mut h = vec![0u32; MSD_HIST_WORDS];
        h[3] = local.pairs[0].tile();
        assert_eq!(pick(&h, &all), Some(local.pairs[0]));
        h[9] = local.pairs[0].tile() + 1;
        assert_eq!(pick(&h, &all), Some(local.pairs[1]));
        // A kernel the GPU cannot run is passed over.
        let not_second = |s: &KernelSpec<LocalSortArgs>| Ok(*s != local.pairs[1]);
        assert_eq!(pick(&h, &not_second), Some(local.pairs[2]));
        h[9] = local.pairs[local.pairs.len() - 1].tile();
        assert_eq!(pick(&h, &all), local.pairs.last().copied());
        h[9] += 1;
        assert_eq!(pick(&h, &all), None);
    }
}
