//! Device buffers the top-k algorithms keep between calls, grown to the largest call so far,
//! and the grid of their grid-stride kernels.
use tessera_kernels::spec::KernelShape;

use crate::error::Result;
use crate::runtime::{
    DeviceColumn, DeviceItem, Gpu, LaunchConfig, PodBuffer, grid_per_sm, resident_grid,
};

/// Grows `col` to hold at least `len` items and sets its length to `len`.
pub(super) fn grow<T: DeviceItem>(gpu: &Gpu, col: &mut DeviceColumn<T>, len: usize) -> Result<()> {
    if col.capacity() < len {
        *col = gpu.zeros(len)?;
    }
    col.set_len(len);
    Ok(())
}

/// Grows `buf` to hold at least `len` values.
pub(super) fn grow_pod<T: bytemuck::Pod>(
    gpu: &Gpu,
    buf: &mut PodBuffer<T>,
    len: usize,
) -> Result<()> {
    if buf.len() < len {
        *buf = PodBuffer::zeroed(gpu, len)?;
    }
    Ok(())
}

/// A grid-stride launch over `n` items: eight blocks per SM, no more than one per
/// `threads * items_per_thread` items.
pub(super) fn stride_grid(gpu: &Gpu, spec: &KernelShape, n: usize) -> Result<LaunchConfig> {
    grid_per_sm(gpu, spec, n, 8)
}

/// The grid of a multi-round select, whose blocks meet at a grid barrier between rounds: at
/// most `per_sm` blocks per SM and never more than are resident at once (a block that could
/// not start would leave the others waiting), no more than one per tile of `n` items.
pub(super) fn barrier_grid(
    gpu: &Gpu,
    spec: &KernelShape,
    n: usize,
    per_sm: u32,
) -> Result<LaunchConfig> {
    let mut cfg = resident_grid(gpu, spec, n)?;
    cfg.grid_dim.0 = cfg
        .grid_dim
        .0
        .min(per_sm.max(1).saturating_mul(gpu.sm_count()));
    Ok(cfg)
}
