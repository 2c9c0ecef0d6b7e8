//! Projection: `SELECT f(x1, x2) FROM R`, the thesis' Q1 `a*x1 + b*x2` and Q2
//! `sigmoid(a*x1 + b*x2)`: two tile loads, a map in registers, one tile store.

#[cfg(target_arch = "nvptx64")]
use crate::block::{block_load, block_store};

/// `out = f(x1, x2)` over one tile per block.
///
/// # Safety
/// All three buffers hold `n` items; one block per tile.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn project2<const NT: usize, const IPT: usize>(
    x1: *const f32,
    x2: *const f32,
    n: usize,
    out: *mut f32,
    f: impl Fn(f32, f32) -> f32,
) {
    let start = crate::arch::block_idx() * NT * IPT;
    let valid = (n - start).min(NT * IPT);
    let (mut a, mut b) = ([0f32; IPT], [0f32; IPT]);
    // SAFETY: the tile lies within the buffers.
    unsafe {
        block_load::<f32, NT, IPT>(x1.add(start), valid, &mut a);
        block_load::<f32, NT, IPT>(x2.add(start), valid, &mut b);
        let r: [f32; IPT] = core::array::from_fn(|k| f(a[k], b[k]));
        block_store::<f32, NT, IPT>(out.add(start), valid, &r);
    }
}

/// Parameters of the projection kernels: `(x1, x2, n, a, b, out)`.
pub type ProjectArgs = (*const f32, *const f32, u32, f32, f32, *mut f32);

crate::kernel! {
    /// Q1: `out = a * x1 + b * x2` (two roundings, no contraction: equal to the CPU's result).
    PROJECT_LINEAR_F32 = project_linear_f32[NT = 128, IPT = 16](x1: *const f32, x2: *const f32, n: u32, a: f32, b: f32, out: *mut f32) {
        // SAFETY: launched with one block per tile over buffers of n items.
        unsafe { project2::<NT, IPT>(x1, x2, n as usize, out, |u, v| a * u + b * v) }
    }
}

crate::kernel! {
    /// Q2: `out = sigmoid(a * x1 + b * x2)`.
    PROJECT_SIGMOID_F32 = project_sigmoid_f32[NT = 128, IPT = 16](x1: *const f32, x2: *const f32, n: u32, a: f32, b: f32, out: *mut f32) {
        // SAFETY: launched with one block per tile over buffers of n items.
        unsafe { project2::<NT, IPT>(x1, x2, n as usize, out, |u, v| crate::arch::sigmoid(a * u + b * v)) }
    }
}
