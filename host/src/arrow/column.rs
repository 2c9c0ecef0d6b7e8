//! Device columns from Arrow primitive arrays and back.
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::ScalarBuffer;

use super::{ArrowItem, check_no_nulls, downcast};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, Gpu};

impl Gpu {
    /// Copies an Arrow array's values to a new device column: one transfer from the array's
    /// buffer (a sliced array's window of it), no other copy. An array with nulls is an
    /// [`Error::InvalidArgument`] naming the count and the first null's row.
    pub fn upload_arrow<A>(&self, array: &PrimitiveArray<A>) -> Result<DeviceColumn<A::Native>>
    where
        A: ArrowPrimitiveType,
        A::Native: ArrowItem<Arrow = A>,
    {
        check_no_nulls(array, "upload_arrow")?;
        self.upload(array.values())
    }

    /// [`upload_arrow`](Gpu::upload_arrow) for an array of any type, such as a record
    /// batch's column: an array that is not `T`'s Arrow type is an error naming both types.
    pub fn upload_arrow_dyn<T: ArrowItem>(&self, array: &dyn Array) -> Result<DeviceColumn<T>> {
        self.upload_arrow(downcast::<T>(array, "upload_arrow_dyn")?)
    }
}

impl<T: ArrowItem> DeviceColumn<T> {
    /// Copies the column to a new Arrow array (synchronizes the stream): the array takes
    /// over the buffer [`to_vec`](DeviceColumn::to_vec) fills, no further copy.
    pub fn to_arrow(&self, gpu: &Gpu) -> Result<PrimitiveArray<T::Arrow>> {
        array_of(ScalarBuffer::from(self.to_vec(gpu)?))
    }
}

/// A null-free Arrow array over `values`.
pub(crate) fn array_of<T: ArrowItem>(values: ScalarBuffer<T>) -> Result<PrimitiveArray<T::Arrow>> {
    PrimitiveArray::try_new(values, None)
        .map_err(|e| Error::Data(format!("building an Arrow array: {e}")))
}
