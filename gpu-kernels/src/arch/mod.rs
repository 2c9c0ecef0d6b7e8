//! The device layer: everything that touches the hardware, as small `#[inline(always)]`
//! functions over `core::arch::nvptx` and inline PTX. Nothing above this module writes `asm!`.

mod atomic;
mod ids;
mod math;
mod memory;
mod shared;
mod sync;
mod warp;

pub use atomic::{Atomic, atomic_or_u32, red_global};
pub use ids::*;
pub use math::*;
pub use memory::*;
pub use shared::*;
pub use sync::*;
pub use warp::*;

/// Threads per warp.
pub const WARP: usize = 32;
