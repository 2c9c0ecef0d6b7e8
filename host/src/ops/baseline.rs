//! The thesis' "independent threads" selection (count, prefix sum, write), kept as the baseline
//! the one-pass kernel is measured against. Output order is by thread, not input order.
use tessera_kernels::ops::baseline as k;

use super::scan::exclusive_scan_into;
use super::select::Predicate;
use crate::error::Result;
use crate::runtime::{DeviceColumn, Gpu, Scratch};
use cudarc::driver::LaunchConfig;

/// Buffers of the three-kernel selection over `f32`, reusable across calls.
pub struct ThreeKernelSelect {
    counts: DeviceColumn<u32>,
    offsets: DeviceColumn<u32>,
    out: DeviceColumn<f32>,
    state: Option<Scratch>,
    blocks: u32,
}

impl ThreeKernelSelect {
    /// Buffers for inputs of up to `capacity` items, with 8 blocks of 256 threads per SM.
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<Self> {
        let blocks = gpu.sm_count() * 8;
        let threads = (blocks * k::INDEP_COUNT_F32.threads()) as usize;
        Ok(ThreeKernelSelect {
            counts: gpu.zeros(threads)?,
            offsets: gpu.zeros(threads)?,
            out: gpu.zeros(capacity)?,
            state: None,
            blocks,
        })
    }

    /// Queues the three kernels.
    pub fn launch(
        &mut self,
        gpu: &Gpu,
        input: &DeviceColumn<f32>,
        pred: Predicate<f32>,
    ) -> Result<()> {
        let n = input.len();
        if n > self.out.capacity() {
            return Err(crate::Error::invalid(format!(
                "three-kernel selection buffers hold {} items, input has {n}",
                self.out.capacity()
            )));
        }
        let cfg = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (k::INDEP_COUNT_F32.threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        let (n32, op) = (n as u32, pred.op.code());
        let (a, b) = (&pred.a, &pred.b);
        let args = (input, &n32, &op, a, b, &mut self.counts);
        // SAFETY: `n` items in `input` (checked against the output's capacity), one count per
        // thread of the fixed grid in `counts`.
        unsafe { gpu.launch(&k::INDEP_COUNT_F32, cfg, args) }?;
        self.state = Some(exclusive_scan_into(
            gpu,
            &self.counts,
            &mut self.offsets,
            self.state.take(),
        )?);
        let args = (input, &n32, &op, a, b, &self.offsets, &mut self.out);
        // SAFETY: the same grid; each thread's offset from the scan of its count places its
        // survivors within the `n`-item output.
        unsafe { gpu.launch(&k::INDEP_WRITE_F32, cfg, args) }
    }

    /// Waits and returns the selected items (grouped by thread, not in input order).
    pub fn finish(&mut self, gpu: &Gpu) -> Result<Vec<f32>> {
        let count = Scratch::count(self.state.as_ref(), gpu)?;
        self.out.set_len(count);
        self.out.to_vec(gpu)
    }
}
