//! Arrow in and out (feature `arrow`, on by default): device columns from Arrow primitive
//! arrays and back, the operators' inputs and results as Arrow arrays and record batches, and
//! Arrow buffers page-locked in place for uploads at the link's bandwidth ([`PinnedArrow`]).
//!
//! An upload reads the array's values buffer in place (a sliced array's window of it) and a
//! download fills a buffer the Arrow array then owns: no copy beyond the transfer itself. Arrow arrays may hold nulls and tessera's columns do not yet: an array with
//! nulls is refused with the count and the first null's row, before anything is allocated.
//!
//! ```no_run
//! use arrow_array::UInt32Array;
//! use tessera_host::{Gpu, ops::{self, Predicate}};
//! let gpu = Gpu::new()?;
//! let prices = UInt32Array::from(vec![30, 2, 9, 4]);
//! let cheap = ops::select(&gpu, &gpu.upload_arrow(&prices)?, Predicate::lt(5))?;
//! assert_eq!(cheap.to_arrow(&gpu)?, UInt32Array::from(vec![2, 4]));
//! # Ok::<(), tessera_host::Error>(())
//! ```
mod column;
mod pinned;
mod results;

pub use pinned::PinnedArrow;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};

use crate::error::{Error, Result};
use crate::runtime::DeviceItem;

/// The Arrow primitive type of each column item type: `u32` is `UInt32`, `i32` `Int32`,
/// `u64` `UInt64`, `i64` `Int64`, `f32` `Float32`, `f64` `Float64`.
///
/// Implemented for the [`DeviceItem`] types only (a sealed set).
pub trait ArrowItem: DeviceItem + arrow_array::ArrowNativeTypeOp {
    /// The Arrow type whose arrays hold this item.
    type Arrow: ArrowPrimitiveType<Native = Self>;
}

macro_rules! arrow_item {
    ($($t:ty => $a:ty),*) => {$(
        impl ArrowItem for $t { type Arrow = $a; }
    )*};
}
arrow_item!(
    u32 => UInt32Type, i32 => Int32Type, u64 => UInt64Type, i64 => Int64Type,
    f32 => Float32Type, f64 => Float64Type
);

/// Refuses an array with nulls: `what` names the array in the message.
pub(crate) fn check_no_nulls(array: &dyn Array, what: &str) -> Result<()> {
    let Some(nulls) = array.logical_nulls().filter(|n| n.null_count() > 0) else {
        return Ok(());
    };
    let first = nulls.iter().position(|valid| !valid).unwrap_or(0);
    Err(Error::invalid(format!(
        "{what}: the Arrow array holds {} nulls of {} rows (the first at row {first}); tessera's \
         columns have no nulls: filter the null rows out (arrow's `filter` with `is_not_null`) \
         or fill them before the call",
        nulls.null_count(),
        array.len()
    )))
}

/// `array` as the primitive array of `T`, or an error naming both types.
pub(crate) fn downcast<'a, T: ArrowItem>(
    array: &'a dyn Array,
    what: &str,
) -> Result<&'a PrimitiveArray<T::Arrow>> {
    array
        .as_any()
        .downcast_ref::<PrimitiveArray<T::Arrow>>()
        .ok_or_else(|| {
            Error::invalid(format!(
                "{what}: the Arrow array is {}, the call wants {}: cast it first \
                 (arrow's `cast`)",
                array.data_type(),
                T::Arrow::DATA_TYPE
            ))
        })
}
