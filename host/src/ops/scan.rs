//! Device-wide exclusive prefix sum of `u32` in one pass.
use tessera_kernels::ops::{scan as k, select::state_words};

use crate::error::Result;
use crate::runtime::{DeviceColumn, Gpu, Scratch, tile_grid};

/// Queues `out[i] = input[0] + .. + input[i - 1]` (wrapping) and returns the scratch whose word 1
/// will hold the (wrapping) total.
pub(crate) fn exclusive_scan_into(
    gpu: &Gpu,
    input: &DeviceColumn<u32>,
    out: &mut DeviceColumn<u32>,
    state: Option<Scratch>,
) -> Result<Scratch> {
    let n = input.len();
    super::check_same_len("exclusive_scan", "out", out.len(), n)?;
    let spec = k::SCAN_EXCLUSIVE_U32;
    let mut state = Scratch::zeroed(gpu, state_words(spec.tiles(n as u64)) as usize, state)?;
    if n > 0 {
        let n32 = n as u32;
        let cfg = tile_grid(&spec, n, 0)?;
        // SAFETY: one block per tile of the `n` items of both columns; the state is zeroed
        // for these tiles.
        unsafe { gpu.launch(&spec, cfg, (input, &n32, &mut *out, &mut state.words)) }?;
    }
    Ok(state)
}

/// Exclusive prefix sum of `input` (wrapping at 2^32) and the total.
pub fn exclusive_scan(gpu: &Gpu, input: &DeviceColumn<u32>) -> Result<(DeviceColumn<u32>, u32)> {
    let mut out = gpu.zeros(input.len())?;
    let state = exclusive_scan_into(gpu, input, &mut out, None)?;
    let total = state.read(gpu, 1)? as u32;
    Ok((out, total))
}
