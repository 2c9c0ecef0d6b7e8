//! Per-thread top-k (thesis §4.3.1, §4.4.1, appendix A): every GPU thread keeps the best `k`
//! keys it reads, in a heap in shared memory or a sorted array in registers (see
//! [`tessera_kernels::ops::topk_perthread`]); the exact top-k of those `threads * k`
//! candidates is then a radix select over `(rank, row)` composites, the same candidates'
//! select that finishes the threshold filter ([`super::SelectTopK`]).
use tessera_kernels::ops::topk::{Candidate, FilterCounts, HIST_WORDS, SelectState, TopKState};
use tessera_kernels::ops::topk_perthread::{self as kp, HEAP_NT, MAX_REG_K, PerThreadArgs};
use tessera_kernels::spec::KernelSpec;

use super::buffers::grow_pod;
use super::select::{Candidates, choose, rows_of};
use super::{TopKOrder, TopKRows, TopKey, check_top_k};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, Gpu, LaunchConfig, PodBuffer, grid_per_sm};

/// Where the threads of a [`PerThreadTopK`] keep their best `k`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PerThreadVariant {
    /// A min-heap of `k` items per thread in shared memory (§4.4.1): `k` up to what one warp's
    /// heaps leave of a block's shared memory ([`PerThreadTopK::max_k`]).
    #[default]
    SharedHeap,
    /// A sorted array in registers (appendix A), for `k` up to 32.
    Registers,
}

impl PerThreadVariant {
    /// Both variants.
    pub const ALL: [PerThreadVariant; 2] =
        [PerThreadVariant::SharedHeap, PerThreadVariant::Registers];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            PerThreadVariant::SharedHeap => "per-thread (shared heaps)",
            PerThreadVariant::Registers => "per-thread (registers)",
        }
    }
}

/// Key types of [`PerThreadTopK`]: every [`TopKey`]. Sealed through [`TopKey`].
pub trait PerThreadKey: TopKey {
    /// The shared-heap kernel.
    #[doc(hidden)]
    const HEAP: KernelSpec<PerThreadArgs<Self>>;
    /// The register kernels, one per size of `kp::REG_SIZES`.
    #[doc(hidden)]
    const REGS: [KernelSpec<PerThreadArgs<Self>>; 3];
    /// Bytes of one heap item (key rank and row).
    #[doc(hidden)]
    const ITEM_BYTES: usize;
}

macro_rules! per_thread_key {
    ($($t:ty: $bytes:literal, $heap:ident, [$($reg:ident),*];)*) => {$(
        impl PerThreadKey for $t {
            const HEAP: KernelSpec<PerThreadArgs<$t>> = kp::$heap;
            const REGS: [KernelSpec<PerThreadArgs<$t>>; 3] = [$(kp::$reg),*];
            const ITEM_BYTES: usize = $bytes;
        }
    )*};
}
per_thread_key! {
    f32: 8, TOPK_PT_HEAP_F32, [TOPK_PT_REG8_F32, TOPK_PT_REG16_F32, TOPK_PT_REG32_F32];
    f64: 16, TOPK_PT_HEAP_F64, [TOPK_PT_REG8_F64, TOPK_PT_REG16_F64, TOPK_PT_REG32_F64];
    i32: 8, TOPK_PT_HEAP_I32, [TOPK_PT_REG8_I32, TOPK_PT_REG16_I32, TOPK_PT_REG32_I32];
    u32: 8, TOPK_PT_HEAP_U32, [TOPK_PT_REG8_U32, TOPK_PT_REG16_U32, TOPK_PT_REG32_U32];
}

/// Keys a thread should read per item it keeps: fewer threads for larger `k`, so that the
/// candidates stay a fraction of the input.
const KEYS_PER_KEPT: usize = 4;

/// Per-thread top-k on the GPU with reusable buffers: the `k` best keys of a column and their
/// rows, best first, the exact list of [`crate::cpu::top_k`].
pub struct PerThreadTopK {
    variant: PerThreadVariant,
    cands: PodBuffer<Candidate>,
    state: PodBuffer<TopKState>,
    hist: DeviceColumn<u32>,
    out: PodBuffer<Candidate>,
}

impl PerThreadTopK {
    /// Small buffers for `variant`; they grow with the calls.
    pub fn new(gpu: &Gpu, variant: PerThreadVariant) -> Result<PerThreadTopK> {
        Ok(PerThreadTopK {
            variant,
            cands: PodBuffer::zeroed(gpu, 1)?,
            state: PodBuffer::zeroed(gpu, 1)?,
            hist: gpu.zeros(HIST_WORDS)?,
            out: PodBuffer::zeroed(gpu, 1)?,
        })
    }

    /// The variant this runs.
    pub fn variant(&self) -> PerThreadVariant {
        self.variant
    }

    /// Keys per tile of the variant's kernel for keys `K` (a block reads a tile at a time).
    pub fn tile<K: PerThreadKey>(variant: PerThreadVariant) -> usize {
        match variant {
            PerThreadVariant::SharedHeap => K::HEAP.tile() as usize,
            PerThreadVariant::Registers => K::REGS[0].tile() as usize,
        }
    }

    /// The largest `k` of `variant` for keys `K` on `gpu`: 32 in registers; with shared heaps,
    /// as many items as one warp's heaps fit in the shared memory a block can have.
    pub fn max_k<K: PerThreadKey>(gpu: &Gpu, variant: PerThreadVariant) -> Result<usize> {
        Ok(match variant {
            PerThreadVariant::Registers => MAX_REG_K,
            PerThreadVariant::SharedHeap => {
                gpu.max_dynamic_smem(&K::HEAP)? / (HEAP_NT * K::ITEM_BYTES)
            }
        })
    }

    /// The `k` best keys of `keys` by `order` with their rows, best first; ties keep the
    /// smaller rows. `Err` unless `1 <= k <= n` and `k` is at most the variant's limit
    /// ([`PerThreadTopK::max_k`]).
    pub fn run<K: PerThreadKey>(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKRows<K>> {
        let n = keys.len();
        check_top_k(n, k)?;
        let (spec, cfg) = self.plan::<K>(gpu, n, k)?;
        let m = cfg.grid_dim.0 as usize * cfg.block_dim.0 as usize * k;
        grow_pod(gpu, &mut self.cands, m)?;
        let (n32, k32, smallest) = (n as u32, k as u32, u32::from(order == TopKOrder::Smallest));
        // SAFETY: `n` keys; the grid's threads write `k` candidates each, `m` in all, which
        // `cands` holds; the heap kernel gets its `HEAP_NT * k` items of shared memory
        // (`plan`), the register kernel an array of at least `k`.
        unsafe { gpu.launch(&spec, cfg, (keys, &n32, &k32, &smallest, &mut self.cands)) }?;
        let best = self.select(gpu, m, k, 8 * size_of::<K>() as u32)?;
        Ok(rows_of(best, order))
    }

    /// The kernel and its launch for `k` of `n` keys, or `Err` where `k` is past the
    /// variant's limit.
    fn plan<K: PerThreadKey>(
        &self,
        gpu: &Gpu,
        n: usize,
        k: usize,
    ) -> Result<(KernelSpec<PerThreadArgs<K>>, LaunchConfig)> {
        let limit = Self::max_k::<K>(gpu, self.variant)?;
        if k > limit {
            let why = match self.variant {
                PerThreadVariant::Registers => {
                    "the register arrays hold at most 32 items; use the shared heaps".to_string()
                }
                PerThreadVariant::SharedHeap => format!(
                    "{HEAP_NT} heaps of k items of {} bytes must fit one block's shared memory",
                    K::ITEM_BYTES
                ),
            };
            return Err(Error::invalid(format!(
                "per-thread top-k: k = {k} exceeds its limit of {limit} ({why}); use \
                 BitonicTopK, SelectTopK or BucketSelectTopK for larger k"
            )));
        }
        let (spec, smem, per_sm) = match self.variant {
            PerThreadVariant::Registers => {
                let i = kp::REG_SIZES.iter().position(|&r| k <= r).unwrap_or(2);
                let spec = K::REGS[i];
                (spec, 0, occupancy(gpu, &spec, 0)?)
            }
            PerThreadVariant::SharedHeap => {
                let bytes = HEAP_NT * k * K::ITEM_BYTES;
                gpu.allow_max_dynamic_smem(&K::HEAP)?;
                (K::HEAP, bytes, occupancy(gpu, &K::HEAP, bytes)?)
            }
        };
        // At most one block per `threads * KEYS_PER_KEPT * k` keys (and per tile).
        let per_block =
            spec.threads() as usize * (KEYS_PER_KEPT * k).max(spec.items_per_thread() as usize);
        let want = n.div_ceil(per_block) * spec.tile() as usize;
        let mut cfg = grid_per_sm(gpu, &spec, want, per_sm)?;
        cfg.shared_mem_bytes = smem as u32;
        Ok((spec, cfg))
    }

    /// The `k` best of the `m` candidates: the candidates' radix select over composites, then
    /// the emit of the chosen.
    fn select(&mut self, gpu: &Gpu, m: usize, k: usize, rank_bits: u32) -> Result<Vec<Candidate>> {
        let state = TopKState {
            ranks: SelectState::default(),
            chosen: SelectState::start(k as u32, rank_bits),
            counts: FilterCounts {
                passed: m as u32,
                ..FilterCounts::default()
            },
        };
        self.state.write(gpu, 0, &state)?;
        grow_pod(gpu, &mut self.out, k)?;
        // `cands` holds the `m` candidates the kernel wrote, and the state counts `m`.
        let cands = Candidates {
            buf: &self.cands,
            cap: m,
            bounded: false,
        };
        choose(
            gpu,
            cands,
            rank_bits,
            &mut self.state,
            &mut self.hist,
            &mut self.out,
            k,
        )?;
        let st = self.state.read(gpu, 0)?;
        // Where no more than `k` are candidates, the kernel copies them all without rounds.
        if (m > k && st.chosen.resolved != 1) || st.counts.emitted as usize != k {
            return Err(Error::invalid(format!(
                "per-thread top-k: the candidates' select chose {} of {m}, not {k}",
                st.counts.emitted
            )));
        }
        self.out.read_prefix(gpu, k)
    }
}

/// Resident blocks of `spec` per SM with `smem` bytes of dynamic shared memory.
fn occupancy(gpu: &Gpu, spec: &KernelSpec<impl Sized>, smem: usize) -> Result<u64> {
    Ok(u64::from(gpu.blocks_per_sm(spec, smem)?.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sort_best_first_with_ties_by_row() {
        let c = |rank, row| Candidate { rank, row, pad: 0 };
        let r: TopKRows<u32> = rows_of(vec![c(5, 9), c(7, 3), c(5, 2)], TopKOrder::Largest);
        assert_eq!(r.rows, [3, 2, 9]);
        assert_eq!(r.keys, [7, 5, 5]);
        let r: TopKRows<u32> = rows_of(vec![c(!5u32 as u64, 1)], TopKOrder::Smallest);
        assert_eq!(r.keys, [5]);
    }

    #[test]
    fn register_sizes_cover_every_k_up_to_the_limit() {
        assert_eq!(kp::REG_SIZES.len(), <f32 as PerThreadKey>::REGS.len());
        assert!(kp::REG_SIZES.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*kp::REG_SIZES.last().unwrap(), MAX_REG_K);
    }
}
