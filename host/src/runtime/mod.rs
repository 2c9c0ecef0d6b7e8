//! The host runtime: device and module ([`Gpu`]), typed device columns, launches and timing.

mod args;
mod column;
mod download;
mod gpu;
mod launch;
mod mapped;
mod pod;
mod timing;

pub use args::{ByValue, KernelArg, KernelArgs};
pub(crate) use args::{bits_of, bits_of_mut, view_as};
pub use column::{DeviceColumn, DeviceItem, ElemType, MAX_COLUMN_LEN, check_len};
pub use cudarc::driver::LaunchConfig;
#[doc(hidden)]
pub use download::DownloadPath;
pub(crate) use download::{append_staged, collect_indexed};
#[cfg(feature = "arrow")]
pub(crate) use download::{lock, unlock};
pub use gpu::{Gpu, KernelCode};
pub(crate) use launch::{EpochScratch, Scratch};
pub use launch::{grid_per_sm, resident_grid, resident_grid_smem, tile_grid};
pub(crate) use mapped::HostWords;
pub use pod::{PodBuffer, PodItemMut};
pub use timing::{Timing, median};
