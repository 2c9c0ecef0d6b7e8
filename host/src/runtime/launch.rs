//! Launch shapes and reusable kernel state.
use cudarc::driver::{CudaSlice, LaunchConfig};
use tessera_kernels::spec::KernelShape;

use super::Gpu;
use crate::error::{Error, Result};

/// One block per tile of `spec` over `n` items (`n > 0`), with `dynamic_smem` bytes.
pub fn tile_grid(spec: &KernelShape, n: usize, dynamic_smem: u32) -> Result<LaunchConfig> {
    let blocks = spec.tiles(n as u64);
    if blocks == 0 || blocks > i32::MAX as u64 {
        return Err(Error::invalid(format!(
            "{} cannot launch {blocks} blocks for {n} items",
            spec.name()
        )));
    }
    Ok(LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: dynamic_smem,
    })
}

/// A persistent grid: as many blocks of `spec` as are resident at once, at most one per tile
/// of `n` items and at least one. Launch only kernels that work with any grid size.
pub fn resident_grid(gpu: &Gpu, spec: &KernelShape, n: usize) -> Result<LaunchConfig> {
    let per_sm = gpu.resident_blocks_per_sm(spec)?;
    grid_per_sm(gpu, spec, n, per_sm.into())
}

/// [`resident_grid`] for a kernel that takes `dynamic_smem` bytes of dynamic shared memory:
/// as many blocks as are resident with it, allowed above the 48 KB that need no opt-in. An
/// error when one block cannot have that much on this GPU.
pub fn resident_grid_smem(
    gpu: &Gpu,
    spec: &KernelShape,
    n: usize,
    dynamic_smem: usize,
) -> Result<LaunchConfig> {
    let most = gpu.allow_max_dynamic_smem(spec)?;
    if dynamic_smem > most {
        return Err(Error::invalid(format!(
            "{} needs {dynamic_smem} bytes of dynamic shared memory; this GPU allows it {most}",
            spec.name()
        )));
    }
    let per_sm = gpu.blocks_per_sm(spec, dynamic_smem)?.max(1);
    let mut cfg = grid_per_sm(gpu, spec, n, per_sm.into())?;
    cfg.shared_mem_bytes = dynamic_smem as u32;
    Ok(cfg)
}

/// A persistent grid of `per_sm` blocks of `spec` per SM, at most one per tile of `n` items
/// and at least one. Launch only kernels that work with any grid size.
pub fn grid_per_sm(gpu: &Gpu, spec: &KernelShape, n: usize, per_sm: u64) -> Result<LaunchConfig> {
    let resident = per_sm.max(1) * u64::from(gpu.sm_count());
    let most = gpu
        .resident_block_cap()
        .map_or(resident, |c| resident.min(c.into()));
    let blocks = spec.tiles(n as u64).clamp(1, most);
    Ok(LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Zeroed 64-bit words of kernel state (tile counters, look-back status, totals), kept between
/// calls so repeated operators do not allocate.
pub(crate) struct Scratch {
    pub(crate) words: CudaSlice<u64>,
}

impl Scratch {
    /// Scratch with at least `words` words, zeroed on the stream.
    pub(crate) fn zeroed(gpu: &Gpu, words: usize, cached: Option<Scratch>) -> Result<Scratch> {
        let mut s = match cached {
            Some(s) if s.words.len() >= words => s,
            _ => Scratch {
                words: gpu
                    .stream()
                    .alloc_zeros::<u64>(words.max(1))
                    .map_err(Error::driver("allocating kernel state", words * 8))?,
            },
        };
        gpu.stream()
            .memset_zeros(&mut s.words.slice_mut(..words.max(1)))
            .map_err(Error::driver("zeroing kernel state", words * 8))?;
        Ok(s)
    }

    /// The count a kernel left in word 1 (selections, scans), 0 when nothing ran.
    pub(crate) fn count(state: Option<&Scratch>, gpu: &Gpu) -> Result<usize> {
        Ok(match state {
            Some(s) => s.read(gpu, 1)? as u32 as usize,
            None => 0,
        })
    }

    /// Reads word `i` (synchronizes the stream).
    pub(crate) fn read(&self, gpu: &Gpu, i: usize) -> Result<u64> {
        let mut v = [0u64];
        gpu.stream()
            .memcpy_dtoh(&self.words.slice(i..i + 1), &mut v[..])
            .map_err(Error::driver("reading kernel state", 8))?;
        gpu.synchronize()?;
        Ok(v[0])
    }
}

/// Look-back state zeroed once and reused: each launch takes the next epoch (see
/// [`tessera_kernels::layout::MAX_EPOCH`]), so status words an earlier launch left read as
/// unpublished and no memset runs per launch.
#[derive(Default)]
pub(crate) struct EpochScratch {
    scratch: Option<Scratch>,
    epoch: u32,
}

impl EpochScratch {
    /// Prepares state of at least `words` words for the next launch and returns its epoch.
    /// The first `zero_header` words are zeroed on the stream (counters the kernel accumulates
    /// into).
    pub(crate) fn next(&mut self, gpu: &Gpu, words: usize, zero_header: usize) -> Result<u32> {
        let reuse = matches!(&self.scratch, Some(s) if s.words.len() >= words)
            && self.epoch < tessera_kernels::layout::MAX_EPOCH;
        if reuse {
            self.epoch += 1;
            if zero_header > 0 {
                let s = self.scratch.as_mut().expect("checked above");
                gpu.stream()
                    .memset_zeros(&mut s.words.slice_mut(..zero_header))
                    .map_err(Error::driver("zeroing kernel state", zero_header * 8))?;
            }
        } else {
            // All of a reused buffer: words past this launch's may hold any earlier epoch.
            let len = self
                .scratch
                .as_ref()
                .map_or(0, |s| s.words.len())
                .max(words);
            self.scratch = Some(Scratch::zeroed(gpu, len, self.scratch.take())?);
            self.epoch = 0;
        }
        Ok(self.epoch)
    }

    /// Sets the epoch the next reuse counts on from (tests of the wrap-around).
    pub(crate) fn set_epoch(&mut self, epoch: u32) {
        self.epoch = epoch;
    }

    /// The state of the last launch, if any.
    pub(crate) fn last(&self) -> Option<&Scratch> {
        self.scratch.as_ref()
    }

    /// The words of the state [`EpochScratch::next`] prepared.
    pub(crate) fn words_mut(&mut self) -> Result<&mut CudaSlice<u64>> {
        match &mut self.scratch {
            Some(s) => Ok(&mut s.words),
            None => Err(Error::invalid("kernel state used before it was prepared")),
        }
    }
}
