//! Projection: the thesis' Q1 `a*x1 + b*x2` and Q2 `sigmoid(a*x1 + b*x2)` over `f32` columns.
use tessera_kernels::ops::project::{self as k, ProjectArgs};
use tessera_kernels::spec::KernelSpec;

use super::check_same_len;
use crate::error::Result;
use crate::runtime::{DeviceColumn, Gpu, tile_grid};

fn project_into(
    gpu: &Gpu,
    spec: KernelSpec<ProjectArgs>,
    x1: &DeviceColumn<f32>,
    x2: &DeviceColumn<f32>,
    a: f32,
    b: f32,
    out: &mut DeviceColumn<f32>,
) -> Result<()> {
    let n = x1.len();
    check_same_len(spec.name(), "x2", x2.len(), n)?;
    check_same_len(spec.name(), "out", out.len(), n)?;
    if n == 0 {
        return Ok(());
    }
    let n32 = n as u32;
    let cfg = tile_grid(&spec, n, 0)?;
    // SAFETY: one block per tile of the `n` items of all three columns (checked above).
    unsafe { gpu.launch(&spec, cfg, (x1, x2, &n32, &a, &b, out)) }
}

/// Queues `out = a * x1 + b * x2` (all columns of one length). Results equal the CPU's
/// `a * x1 + b * x2` exactly (no fused multiply-add).
pub fn project_linear_into(
    gpu: &Gpu,
    x1: &DeviceColumn<f32>,
    x2: &DeviceColumn<f32>,
    a: f32,
    b: f32,
    out: &mut DeviceColumn<f32>,
) -> Result<()> {
    project_into(gpu, k::PROJECT_LINEAR_F32, x1, x2, a, b, out)
}

/// Queues `out = sigmoid(a * x1 + b * x2)`; within 1e-6 (absolute) of the CPU's result, NaN
/// for NaN input.
pub fn project_sigmoid_into(
    gpu: &Gpu,
    x1: &DeviceColumn<f32>,
    x2: &DeviceColumn<f32>,
    a: f32,
    b: f32,
    out: &mut DeviceColumn<f32>,
) -> Result<()> {
    project_into(gpu, k::PROJECT_SIGMOID_F32, x1, x2, a, b, out)
}

/// `a * x1 + b * x2` into a new column.
pub fn project_linear(
    gpu: &Gpu,
    x1: &DeviceColumn<f32>,
    x2: &DeviceColumn<f32>,
    a: f32,
    b: f32,
) -> Result<DeviceColumn<f32>> {
    let mut out = gpu.zeros(x1.len())?;
    project_linear_into(gpu, x1, x2, a, b, &mut out)?;
    Ok(out)
}

/// `sigmoid(a * x1 + b * x2)` into a new column.
pub fn project_sigmoid(
    gpu: &Gpu,
    x1: &DeviceColumn<f32>,
    x2: &DeviceColumn<f32>,
    a: f32,
    b: f32,
) -> Result<DeviceColumn<f32>> {
    let mut out = gpu.zeros(x1.len())?;
    project_sigmoid_into(gpu, x1, x2, a, b, &mut out)?;
    Ok(out)
}
