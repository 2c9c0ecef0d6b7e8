//! Device buffers the top-k algorithms keep between calls, grown to the largest call so far,
//! and the grid of their grid-stride kernels.
use tessera_kernels::spec::KernelShape;

use crate::error::Result;
use crate::runtime::{DeviceColumn, DeviceItem, Gpu, LaunchConfig, PodBuffer, grid_per_sm};

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
