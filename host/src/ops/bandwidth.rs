//! Bandwidth probes: the read and copy kernels every benchmark's model uses.
use tessera_kernels::ops::bandwidth as k;

use super::check_same_len;
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, Gpu, tile_grid};

/// Queues the sum of `input` into `sum` (a one-item column the caller zeroes).
pub(crate) fn read_sum_into(
    gpu: &Gpu,
    input: &DeviceColumn<u32>,
    sum: &mut DeviceColumn<u64>,
) -> Result<()> {
    let n = input.len();
    if n == 0 {
        return Ok(());
    }
    let n32 = n as u32;
    let cfg = tile_grid(&k::BW_READ_U32, n, 0)?;
    // SAFETY: one block per tile of the `n` inputs; `sum` holds the one word they add to.
    unsafe { gpu.launch(&k::BW_READ_U32, cfg, (input, &n32, sum)) }
}

/// Sum of all items (reads every byte once; the read-bandwidth probe).
pub fn read_sum_u32(gpu: &Gpu, input: &DeviceColumn<u32>) -> Result<u64> {
    let mut sum = gpu.zeros::<u64>(1)?;
    read_sum_into(gpu, input, &mut sum)?;
    Ok(sum.to_vec(gpu)?[0])
}

/// Queues `dst = src` (the copy-bandwidth probe).
pub fn copy_u32(gpu: &Gpu, src: &DeviceColumn<u32>, dst: &mut DeviceColumn<u32>) -> Result<()> {
    let n = src.len();
    check_same_len("copy_u32", "dst", dst.len(), n)?;
    if n == 0 {
        return Ok(());
    }
    let n32 = n as u32;
    let cfg = tile_grid(&k::BW_COPY_U32, n, 0)?;
    // SAFETY: one block per tile of the `n` items of both columns.
    unsafe { gpu.launch(&k::BW_COPY_U32, cfg, (src, &n32, dst)) }
}

/// Zeroes a column on the stream.
pub(crate) fn zero<T: crate::runtime::DeviceItem>(
    gpu: &Gpu,
    col: &mut DeviceColumn<T>,
) -> Result<()> {
    gpu.stream()
        .memset_zeros(&mut col.buf)
        .map_err(Error::driver(
            "zeroing a column",
            col.capacity() * std::mem::size_of::<T>(),
        ))
}

/// Zeroes `sum` and queues the read probe into it (what the benchmark times).
#[doc(hidden)]
pub fn read_sum_into_for_bench(
    gpu: &Gpu,
    input: &DeviceColumn<u32>,
    sum: &mut DeviceColumn<u64>,
) -> Result<()> {
    zero(gpu, sum)?;
    read_sum_into(gpu, input, sum)
}
