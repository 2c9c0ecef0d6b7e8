//! Bitonic top-k (thesis §4.3.2, §4.4.3): a SortReducer pass over the keys, then
//! BitonicReducer passes over its runs until `K` items remain (`K`: `k` rounded up to a power
//! of two, at least 16). The kernels and the network are described in
//! [`tessera_kernels::ops::topk_bitonic`]; this side plans the passes, owns the pass buffers
//! and turns the last pass's items back into keys and rows.
use cudarc::driver::{CudaSlice, LaunchConfig};
use tessera_kernels::ops::topk_bitonic::{
    self as kb, BitonicReducerArgs, MAX_K, MIN_LOG_K, Pass, SortReducerArgs,
};
use tessera_kernels::radix::RadixKey;
use tessera_kernels::spec::KernelSpec;

use super::{TopKOrder, TopKRows, TopKey, check_top_k};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, Gpu};

/// Key types of [`BitonicTopK`]: `f32`, `i32`, `u32`, `f64` (every [`TopKey`]). Sealed
/// through [`TopKey`].
pub trait BitonicKey: TopKey + RadixKey {
    /// The product kernels.
    #[doc(hidden)]
    const KERNELS: BitonicConfig<Self>;
    /// `u64` words per item in the pass buffers.
    #[doc(hidden)]
    const WORDS: usize;
    /// The key and row of the item in `words`; `smallest` as the kernels were told.
    #[doc(hidden)]
    fn decode(words: &[u64], smallest: bool) -> (Self, u32);
}

/// The kernels of a bitonic top-k and the most merges per tile of a pass with several tiles
/// (a single tile always reduces to `K` at once). Public for the benchmarks' ablation of
/// §4.4.3 only.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct BitonicConfig<K> {
    /// What the benchmark calls it.
    pub name: &'static str,
    /// The SortReducer.
    pub sort: KernelSpec<SortReducerArgs<K>>,
    /// The BitonicReducer (same tile as `sort`).
    pub reduce: KernelSpec<BitonicReducerArgs>,
    /// Merges per tile of a pass with several tiles (the thesis: 4, `B = 16`).
    pub max_merges: u32,
    /// Whether the keys go in levels, each with the top-k of the levels before as its
    /// threshold (see [`FIRST_LEVEL`]); only kernels with work before writing use it.
    pub sample: bool,
}

/// Keys of the first level. The levels split the input at `FIRST_LEVEL * g^i`: the first
/// level's top-k is found by the full network; each later level gets the top-k of the keys
/// before it as its first run and the `k`-th of those as its threshold, and its tiles none of
/// whose keys reach the threshold skip the network and write nothing (and a tile with at most
/// `min(k, threads per block)` such keys writes them ranked, without it). Growing the levels by
/// `g` keeps about `(g - 1) k` keys of each level above its threshold (on keys in random
/// order), so few tiles pay for the network, while each level adds the latency of its passes:
/// `g` is 8, or 4 for `k > 256`. Inputs of fewer than four first levels go in one level.
pub const FIRST_LEVEL: usize = 1 << 20;

/// Counters of one level's passes (in `BitonicTopK::live`).
const LEVEL_COUNTERS: usize = 16;

/// Merges per tile of the product kernels: each tile reduces as far as its `K` allows, so
/// there are as few passes (and trips through global memory) as possible.
const PRODUCT_MERGES: u32 = 12;

macro_rules! narrow_key {
    ($($t:ty: $sort:ident, $red:ident;)*) => {$(
        impl BitonicKey for $t {
            const KERNELS: BitonicConfig<$t> = BitonicConfig {
                name: "product",
                sort: kb::$sort,
                reduce: kb::$red,
                max_merges: PRODUCT_MERGES,
                sample: true,
            };
            const WORDS: usize = 1;
            fn decode(words: &[u64], smallest: bool) -> ($t, u32) {
                let rank = (words[0] >> 32) as u32;
                let raw = <$t as RadixKey>::unordered(rank, smallest);
                (<$t as RadixKey>::from_raw(raw), !(words[0] as u32))
            }
        }
    )*};
}
narrow_key! {
    f32: TOPK_BITONIC_SORT_F32, TOPK_BITONIC_REDUCE_F32;
    i32: TOPK_BITONIC_SORT_I32, TOPK_BITONIC_REDUCE_I32;
    u32: TOPK_BITONIC_SORT_U32, TOPK_BITONIC_REDUCE_U32;
}

impl BitonicKey for f64 {
    const KERNELS: BitonicConfig<f64> = BitonicConfig {
        name: "product",
        sort: kb::TOPK_BITONIC_SORT_F64,
        reduce: kb::TOPK_BITONIC_REDUCE_F64,
        max_merges: PRODUCT_MERGES,
        sample: true,
    };
    const WORDS: usize = 2;
    fn decode(words: &[u64], smallest: bool) -> (f64, u32) {
        let raw = f64::unordered(words[0], smallest);
        (f64::from_raw(raw), !(words[1] as u32))
    }
}

impl<K: BitonicKey> BitonicConfig<K> {
    /// The product configuration.
    pub fn product() -> Self {
        K::KERNELS
    }
}

#[cfg(feature = "sweeps")]
impl BitonicConfig<f32> {
    /// The ablation of §4.4.3 on `f32`, from the unoptimized network (shared memory and
    /// merged operators only) to the product, one optimization added per row; then the
    /// product with padding instead of the permutation, and with the thesis' 4 merges per
    /// kernel, and with one merge per kernel (operators not merged); then the levels, with
    /// every kept tile through the network, and the product, where a kept tile with few keys
    /// that reach its threshold skips it (`opt::FEW`).
    pub fn ablation() -> Vec<Self> {
        use tessera_kernels::ops::topk_bitonic::sweep as s;
        let c = |name, sort, reduce, max_merges| BitonicConfig {
            name,
            sort,
            reduce,
            max_merges,
            sample: false,
        };
        vec![
            c("shared memory", s::BASE_SORT, s::BASE_REDUCE, 4),
            c("+ combined steps", s::COMBINE_SORT, s::COMBINE_REDUCE, 4),
            c("+ work before writing", s::EARLY_SORT, s::EARLY_REDUCE, 4),
            c("+ padding", s::PAD_SORT, s::PAD_REDUCE, 4),
            c("+ reassigned partitions", s::PADR_SORT, s::PADR_REDUCE, 4),
            c(
                "permutation for padding",
                kb::TOPK_BITONIC_SORT_F32,
                kb::TOPK_BITONIC_REDUCE_F32,
                4,
            ),
            c(
                "+ merges to k per tile",
                kb::TOPK_BITONIC_SORT_F32,
                kb::TOPK_BITONIC_REDUCE_F32,
                PRODUCT_MERGES,
            ),
            c(
                "product, 1 merge per kernel",
                kb::TOPK_BITONIC_SORT_F32,
                kb::TOPK_BITONIC_REDUCE_F32,
                1,
            ),
            BitonicConfig {
                name: "+ levels with thresholds",
                sort: s::LEVELS_SORT,
                reduce: s::LEVELS_REDUCE,
                max_merges: PRODUCT_MERGES,
                sample: true,
            },
            BitonicConfig {
                name: "+ few live keys skip the network (product)",
                ..BitonicConfig::product()
            },
        ]
    }
}

/// Bitonic top-k on the GPU with reusable pass buffers: the `k` best keys of a column and
/// their rows, best first, the exact list of [`crate::cpu::top_k`], for `k` up to 1024.
pub struct BitonicTopK<K: BitonicKey> {
    bufs: [CudaSlice<u64>; 2],
    /// The `k`-th item of the earlier levels' top-k.
    threshold: CudaSlice<u64>,
    /// Runs written by each pass of each level (zeroed per call).
    live: CudaSlice<u32>,
    capacity: usize,
    config: BitonicConfig<K>,
}

impl<K: BitonicKey> BitonicTopK<K> {
    /// Buffers for columns of up to `capacity` keys.
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<Self> {
        let config = BitonicConfig::product();
        let words = pass_words(capacity.max(1), &config);
        Ok(BitonicTopK {
            bufs: [alloc(gpu, words)?, alloc(gpu, words)?],
            threshold: alloc(gpu, K::WORDS)?,
            live: gpu
                .stream()
                .alloc_zeros::<u32>(LEVEL_COUNTERS * 64)
                .map_err(Error::driver(
                    "allocating top-k counters",
                    LEVEL_COUNTERS * 256,
                ))?,
            capacity,
            config,
        })
    }

    /// Runs later calls with `config` (the benchmarks' ablation).
    #[doc(hidden)]
    pub fn set_config(&mut self, config: BitonicConfig<K>) {
        self.config = config;
    }

    /// The `k` best keys of `keys` by `order` with their rows, best first; ties keep the
    /// smaller rows. `Err` unless `1 <= k <= min(n, 1024)` and `n` fits the buffers.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<K>> {
        let last = self.launch(gpu, keys, k, order)?;
        let mut words = vec![0u64; k * K::WORDS];
        gpu.stream()
            .memcpy_dtoh(&self.bufs[last].slice(..words.len()), &mut words[..])
            .map_err(Error::driver("downloading the top-k", words.len() * 8))?;
        gpu.synchronize()?;
        let smallest = order == TopKOrder::Smallest;
        let (keys, rows) = words
            .chunks_exact(K::WORDS)
            .map(|w| K::decode(w, smallest))
            .unzip();
        Ok(TopKRows { keys, rows })
    }

    /// Queues the passes of a top-k and returns the buffer that will hold its `K` items, best
    /// first (the benchmarks time this).
    #[doc(hidden)]
    pub fn launch(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<usize> {
        let n = keys.len();
        check_top_k(n, k)?;
        if k > MAX_K {
            return Err(Error::invalid(format!(
                "bitonic top-k: k = {k} exceeds its limit of {MAX_K} (two sorted runs of k \
                 must fit one tile); use another top-k for larger k"
            )));
        }
        if n > self.capacity {
            return Err(Error::invalid(format!(
                "bitonic top-k: buffers hold {} keys, input has {n}",
                self.capacity
            )));
        }
        let cfg = self.config;
        let need = pass_words(n, &cfg);
        if self.bufs[0].len() < need {
            self.bufs = [alloc(gpu, need)?, alloc(gpu, need)?];
        }
        let log_k = log_k(k);
        let smallest = u32::from(order == TopKOrder::Smallest);
        let bounds = levels(n, k, cfg.sample);
        if bounds.len() - 1 > self.live.len() / LEVEL_COUNTERS {
            return Err(Error::invalid(format!(
                "bitonic top-k: {} levels exceed the counters",
                bounds.len() - 1
            )));
        }
        gpu.stream()
            .memset_zeros(&mut self.live)
            .map_err(Error::driver(
                "clearing top-k counters",
                self.live.len() * 4,
            ))?;
        let mut last = None;
        for (level, w) in bounds.windows(2).enumerate() {
            if let Some(r) = last {
                let item = (k - 1) * K::WORDS..k * K::WORDS;
                let [b0, b1] = &self.bufs;
                let top = if r == 0 { b0 } else { b1 };
                gpu.stream()
                    .memcpy_dtod(&top.slice(item), &mut self.threshold)
                    .map_err(Error::driver("copying the top-k threshold", K::WORDS * 8))?;
            }
            let counters = level * LEVEL_COUNTERS;
            last = Some(self.passes(gpu, keys, w[0], w[1], log_k, smallest, last, counters)?);
        }
        Ok(last.unwrap_or(0))
    }

    /// Queues the passes over keys `lo .. hi`; with `seed`, the buffer whose first run holds
    /// the top-k of the keys before `lo` (the threshold holds its `k`-th item), which then
    /// joins this level's runs. Returns the buffer that will hold the level's `K` items.
    #[allow(clippy::too_many_arguments)]
    fn passes(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        lo: usize,
        hi: usize,
        log_k: u32,
        smallest: u32,
        seed: Option<usize>,
        counters: usize,
    ) -> Result<usize> {
        let cfg = self.config;
        let all = passes(hi - lo, log_k, &cfg);
        let first = all[0];
        if seed.is_some() && first.log_a - first.merges != log_k {
            return Err(Error::invalid(format!(
                "bitonic top-k: configuration {:?} leaves runs of {} items, not k; levels \
                 need its tiles to merge down to k",
                cfg.name,
                1u32 << (first.log_a - first.merges)
            )));
        }
        let rest = match seed {
            // The tiles that reach the threshold follow the seed's run.
            Some(_) => passes(first.out + (1 << log_k), log_k, &cfg),
            None => all[1..].to_vec(),
        };
        let grid = |p: &Pass| LaunchConfig {
            grid_dim: (p.tiles as u32, 1, 1),
            block_dim: (cfg.sort.threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        let mut out = seed.unwrap_or(0);
        let (base, end, log_a, merges) = (lo as u32, hi as u32, first.log_a, first.merges);
        {
            let threshold = seed.map(|_| &self.threshold);
            let mut live = seed.map(|_| self.live.slice_mut(counters..counters + 1));
            let dst = &mut self.bufs[out];
            // SAFETY: one block per tile of the pass `plan` made for keys `lo .. hi` (`lo` a
            // multiple of the tile, the keys 16-byte aligned as allocated); `dst` holds the
            // pass's output and, with a seed, its run first (`pass_words`); the threshold is
            // one item of another buffer; the level's counters were zeroed.
            unsafe {
                gpu.launch(
                    &cfg.sort,
                    grid(&first),
                    (
                        keys,
                        &base,
                        &end,
                        &log_a,
                        &merges,
                        &log_k,
                        &smallest,
                        threshold,
                        live.as_mut(),
                        dst,
                    ),
                )
            }?;
        }
        for (i, p) in rest.iter().enumerate() {
            let (len, log_a, merges) = (p.len as u32, p.log_a, p.merges);
            let extra = u32::from(i == 0);
            let [b0, b1] = &mut self.bufs;
            let (src, dst) = if out == 0 { (&*b0, b1) } else { (&*b1, b0) };
            out = 1 - out;
            let (before, mut after) = self.live.split_at_mut(counters + i + 1);
            let live_in = seed.map(|_| before.slice(counters + i..));
            let mut live_out = seed.map(|_| after.slice_mut(..1));
            // SAFETY: `src` holds the `len` items of the previous pass (those past the
            // counted runs are never read); one block per tile; `dst` holds this pass's
            // output; the counters are the previous pass's and this one's.
            unsafe {
                gpu.launch(
                    &cfg.reduce,
                    grid(p),
                    (
                        src,
                        &len,
                        &log_a,
                        &merges,
                        &log_k,
                        live_in.as_ref(),
                        &extra,
                        live_out.as_mut(),
                        dst,
                    ),
                )
            }?;
        }
        Ok(out)
    }
}

/// `log2(K)`: `k` rounded up to a power of two, at least `2^MIN_LOG_K`.
fn log_k(k: usize) -> u32 {
    k.next_power_of_two().trailing_zeros().max(MIN_LOG_K)
}

/// The passes over `n` keys for `K = 2^log_k`.
fn passes<K>(n: usize, log_k: u32, cfg: &BitonicConfig<K>) -> Vec<Pass> {
    let mut v = Vec::new();
    let log_tile = cfg.sort.tile().trailing_zeros();
    kb::plan(n, log_k, log_tile, cfg.max_merges, |p| v.push(p));
    v
}

/// Words each pass buffer needs for `n` keys, whatever `k`: the largest pass's output and
/// the run of the earlier levels before it.
fn pass_words<K: BitonicKey>(n: usize, cfg: &BitonicConfig<K>) -> usize {
    let most = (MIN_LOG_K..=MAX_K.trailing_zeros())
        .flat_map(|lk| passes(n, lk, cfg))
        .map(|p| p.out)
        .max()
        .unwrap_or(MAX_K);
    (most + MAX_K) * K::WORDS
}

/// The bounds of the levels of a top-`k` of `n` keys: `0`, then [`FIRST_LEVEL`] growing while
/// below `n`, then `n`; just `0, n` without `sample` or for small `n`.
fn levels(n: usize, k: usize, sample: bool) -> Vec<usize> {
    let mut bounds = vec![0];
    if sample && n >= 4 * FIRST_LEVEL {
        // Each level keeps about `(growth - 1) k` tiles: larger `k` wants more, smaller levels.
        let growth = if k > 256 { 4 } else { 8 };
        let mut b = FIRST_LEVEL;
        while b < n {
            bounds.push(b);
            b *= growth;
        }
    }
    bounds.push(n);
    bounds
}

fn alloc(gpu: &Gpu, words: usize) -> Result<CudaSlice<u64>> {
    gpu.stream()
        .alloc_zeros::<u64>(words.max(1))
        .map_err(Error::driver("allocating top-k pass buffers", words * 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_decode_to_their_keys() {
        for smallest in [false, true] {
            for (x, row) in [
                (1.5f32, 3u32),
                (-0.0, 0),
                (f32::NAN, 7),
                (f32::NEG_INFINITY, 9),
            ] {
                let rank = f32::ordered(x.into_raw(), smallest);
                let item = ((rank as u64) << 32) | u64::from(!row);
                let (y, r) = f32::decode(&[item], smallest);
                assert_eq!((y.to_bits(), r), (x.to_bits(), row));
            }
            let (y, r) = f64::decode(
                &[f64::ordered((-2.5f64).into_raw(), smallest), !5u64],
                smallest,
            );
            assert_eq!((y, r), (-2.5, 5));
            let (y, r) = i32::decode(
                &[((i32::ordered((-7i32) as u32, smallest) as u64) << 32) | u64::from(!2u32)],
                smallest,
            );
            assert_eq!((y, r), (-7, 2));
        }
    }

    #[test]
    fn levels_split_the_keys() {
        assert_eq!(levels(1 << 29, 32, false), vec![0, 1 << 29]);
        assert_eq!(levels((4 << 20) - 1, 32, true), vec![0, (4 << 20) - 1]);
        assert_eq!(
            levels((4 << 20) + 3, 1, true),
            vec![0, 1 << 20, (4 << 20) + 3]
        );
        assert_eq!(
            levels(1 << 29, 256, true),
            vec![0, 1 << 20, 1 << 23, 1 << 26, 1 << 29]
        );
        assert_eq!(
            levels(1 << 25, 1024, true),
            vec![0, 1 << 20, 1 << 22, 1 << 24, 1 << 25]
        );
        assert_eq!(levels(1 << 23, 32, true), vec![0, 1 << 20, 1 << 23]);
    }

    #[test]
    fn k_rounds_up_to_a_run() {
        assert_eq!(log_k(1), MIN_LOG_K);
        assert_eq!(log_k(17), 5);
        assert_eq!(log_k(1024), 10);
    }
}
