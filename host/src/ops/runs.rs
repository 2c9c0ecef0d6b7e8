//! Runs of equal adjacent values of a `u32` column on the GPU: on a sorted column, its distinct
//! values and how many rows hold each, which is `GROUP BY x ORDER BY COUNT(*)` after a sort
//! (the thesis' tweets query Q4: sort the user ids, count the runs, take the top-k of the
//! counts). See `tessera_kernels::ops::runs` for the kernels.
use tessera_kernels::ops::runs as kr;

use crate::error::Result;
use crate::ops::scan::exclusive_scan_into;
use crate::runtime::{DeviceColumn, Gpu, grid_per_sm, tile_grid};

/// The runs of a column, in row order, on the device.
#[derive(Debug)]
pub struct Runs {
    /// Each run's value.
    pub values: DeviceColumn<u32>,
    /// Each run's length (rows).
    pub counts: DeviceColumn<u32>,
}

/// The runs of equal adjacent values of `keys` (on a sorted column, its distinct values and
/// their counts), in row order: two reads of the column, a scan of one count per tile, and
/// one write per run. An empty column has no runs.
pub fn count_runs(gpu: &Gpu, keys: &DeviceColumn<u32>) -> Result<Runs> {
    let n = keys.len();
    if n == 0 {
        return Ok(Runs {
            values: gpu.zeros(0)?,
            counts: gpu.zeros(0)?,
        });
    }
    let n32 = n as u32;
    let cfg = tile_grid(&kr::RUNS_COUNT, n, 0)?;
    let tiles = cfg.grid_dim.0 as usize;
    let mut tile_counts = gpu.zeros::<u32>(tiles)?;
    // SAFETY: one block per tile of the `n` keys; one count per tile.
    unsafe { gpu.launch(&kr::RUNS_COUNT, cfg, (keys, &n32, &mut tile_counts)) }?;
    let mut prefix = gpu.zeros::<u32>(tiles)?;
    let state = exclusive_scan_into(gpu, &tile_counts, &mut prefix, None)?;
    // At most n runs, so the total (which synchronizes) does not wrap.
    let runs = state.read(gpu, 1)? as usize;
    let mut values = gpu.zeros::<u32>(runs)?;
    let mut starts = gpu.zeros::<u32>(runs)?;
    // SAFETY: the same tiles, each with the prefix of the heads before it; `values` and
    // `starts` hold every head.
    unsafe {
        gpu.launch(
            &kr::RUNS_WRITE,
            cfg,
            (keys, &n32, &prefix, &mut values, &mut starts),
        )
    }?;
    let mut counts = gpu.zeros::<u32>(runs)?;
    let runs32 = runs as u32;
    // SAFETY: `starts` and `counts` hold `runs` items; any grid size works.
    unsafe {
        gpu.launch(
            &kr::RUNS_LENGTHS,
            grid_per_sm(gpu, &kr::RUNS_LENGTHS, runs, 8)?,
            (&starts, &runs32, &n32, &mut counts),
        )
    }?;
    Ok(Runs { values, counts })
}
