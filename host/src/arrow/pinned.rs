//! An Arrow array's own buffer page-locked in place for uploads: the zero-copy path from an
//! Arrow buffer to memory the copy engines read directly.
//!
//! An upload from ordinary (pageable) memory goes through the driver's staging buffer at a
//! fraction of the link's bandwidth; page-locked memory is read by the copy engines directly.
//! Locking costs time once (the pages are pinned one by one), about what the staging costs
//! one upload, and nothing on every further upload of the same buffer.
use std::sync::Arc;

use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
use cudarc::driver::CudaContext;

use super::{ArrowItem, check_no_nulls};
use crate::error::Result;
use crate::runtime::{DeviceColumn, Gpu, lock, unlock};

/// An Arrow array whose values buffer is page-locked in place for as long as this lives
/// ([`Gpu::pin_arrow`]): its uploads skip the driver's staging copy. Unlocked on drop.
///
/// Where the buffer cannot be locked (its pages are already locked by another registration,
/// say for an overlapping slice of the same buffer, or the system refuses), the uploads are
/// ordinary ones: [`is_locked`](PinnedArrow::is_locked) says which.
pub struct PinnedArrow<'a, T: ArrowItem> {
    array: &'a PrimitiveArray<T::Arrow>,
    /// The context that holds the registration; `None` when the buffer is not locked here.
    locked: Option<Arc<CudaContext>>,
}

impl<T: ArrowItem> std::fmt::Debug for PinnedArrow<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedArrow<{:?}>(len {}, locked {})",
            T::TYPE,
            self.array.len(),
            self.locked.is_some()
        )
    }
}

impl Gpu {
    /// Page-locks `array`'s values in place (`cuMemHostRegister`) until the returned guard
    /// drops, so that uploads from it run at the link's bandwidth with no staging copy. An
    /// array with nulls is refused, as by [`upload_arrow`](Gpu::upload_arrow).
    pub fn pin_arrow<'a, A>(
        &self,
        array: &'a PrimitiveArray<A>,
    ) -> Result<PinnedArrow<'a, A::Native>>
    where
        A: ArrowPrimitiveType,
        A::Native: ArrowItem<Arrow = A>,
    {
        check_no_nulls(array, "pin_arrow")?;
        let values: &[A::Native] = array.values();
        // SAFETY: the values stay alive and unmoved while the guard borrows the array, and
        // the guard's drop unlocks them.
        let locked =
            (!values.is_empty() && unsafe { lock(self, values)? }).then(|| self.context().clone());
        Ok(PinnedArrow { array, locked })
    }
}

impl<T: ArrowItem> PinnedArrow<'_, T> {
    /// Whether the values are page-locked by this guard.
    pub fn is_locked(&self) -> bool {
        self.locked.is_some()
    }

    /// The array.
    pub fn array(&self) -> &PrimitiveArray<T::Arrow> {
        self.array
    }

    /// Copies the values to a new device column (returns once the copy is done).
    pub fn upload(&self, gpu: &Gpu) -> Result<DeviceColumn<T>> {
        let col = gpu.upload_direct(self.array.values())?;
        gpu.synchronize()?;
        Ok(col)
    }
}

impl<T: ArrowItem> Drop for PinnedArrow<'_, T> {
    fn drop(&mut self) {
        if let Some(ctx) = self.locked.take() {
            // Uploads from the pages have completed (`upload` waits for them).
            unlock(&ctx, self.array.values());
        }
    }
}
