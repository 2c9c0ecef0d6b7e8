//! GPU-FOR columns on the device and their decoders (thesis §5.3.2): decompression to a plain
//! column and decode-and-sum. A [`DeviceForColumn`] is uploaded from a [`ForColumn`], which is
//! valid by construction (encoded here, or checked when read), so the kernels' reads stay
//! within its arrays.
use tessera_kernels::ops::decompress as k;

use crate::compress::{Compressed, ForColumn};
use crate::error::Result;
use crate::ops::check_same_len;
use crate::runtime::{DeviceColumn, Gpu, tile_grid};

/// A GPU-FOR column in device memory: its block starts and data words.
pub struct DeviceForColumn {
    len: usize,
    starts: DeviceColumn<u32>,
    data: DeviceColumn<u32>,
}

impl DeviceForColumn {
    /// Uploads `col` (two host-to-device copies: its block starts and its data).
    pub fn upload(gpu: &Gpu, col: &ForColumn) -> Result<DeviceForColumn> {
        Ok(DeviceForColumn {
            len: col.len(),
            starts: gpu.upload(col.block_starts())?,
            data: gpu.upload(col.data())?,
        })
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes a decoder reads: the data and the block starts.
    pub fn compressed_bytes(&self) -> usize {
        4 * (self.starts.len() + self.data.len())
    }
}

/// The values of `col` as a plain device column.
pub fn decompress_for(gpu: &Gpu, col: &DeviceForColumn) -> Result<DeviceColumn<u32>> {
    let mut out = gpu.zeros(col.len())?;
    decompress_for_into(gpu, col, &mut out)?;
    Ok(out)
}

/// Queues the decompression of `col` into `out`, which holds `col.len()` values.
pub fn decompress_for_into(
    gpu: &Gpu,
    col: &DeviceForColumn,
    out: &mut DeviceColumn<u32>,
) -> Result<()> {
    let n = col.len();
    check_same_len("decompress_for", "out", out.len(), n)?;
    if n == 0 {
        return Ok(());
    }
    let cfg = tile_grid(&k::FOR_DECOMPRESS, n, 0)?;
    let n32 = n as u32;
    // SAFETY: a valid GPU-FOR column of `n` values (see `DeviceForColumn`), room for `n` in
    // `out`; one block per tile.
    unsafe { gpu.launch(&k::FOR_DECOMPRESS, cfg, (&col.data, &col.starts, &n32, out)) }
}

/// The sum of the values of `col` (wrapping past 2^64, which 2^32 values cannot reach).
pub fn sum_for(gpu: &Gpu, col: &DeviceForColumn) -> Result<u64> {
    let mut sum = gpu.zeros::<u64>(1)?;
    sum_for_into(gpu, col, &mut sum)?;
    Ok(sum.to_vec(gpu)?[0])
}

/// Queues the decode-and-sum of `col`, adding into `sum[0]` (the caller zeroes it).
pub fn sum_for_into(gpu: &Gpu, col: &DeviceForColumn, sum: &mut DeviceColumn<u64>) -> Result<()> {
    check_same_len("sum_for", "sum", sum.len(), 1)?;
    let n = col.len();
    if n == 0 {
        return Ok(());
    }
    let cfg = tile_grid(&k::FOR_SUM, n, 0)?;
    let n32 = n as u32;
    // SAFETY: a valid GPU-FOR column of `n` values, one word at `sum`; one block per tile.
    unsafe { gpu.launch(&k::FOR_SUM, cfg, (&col.data, &col.starts, &n32, sum)) }
}
