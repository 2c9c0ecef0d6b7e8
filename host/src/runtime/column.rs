//! Typed device columns.
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

use super::Gpu;
use crate::error::{Error, Result};

/// Longest column tessera accepts: kernels index items with 32-bit counts.
pub const MAX_COLUMN_LEN: usize = u32::MAX as usize;

/// Element type of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `i32`
    I32,
    /// `u32`
    U32,
    /// `f32`
    F32,
    /// `i64`
    I64,
    /// `u64`
    U64,
    /// `f64`
    F64,
}

/// Item types a [`DeviceColumn`] can hold: `i32`, `u32`, `f32`, `i64`, `u64` and `f64`.
///
/// Sealed: the kernels are built for these types only, so no other crate can implement it
/// (and with it [`SortKey`](crate::ops::SortKey), [`SelectItem`](crate::ops::SelectItem) and the
/// other item traits, which all require it). A type with every other bound still fails:
///
/// ```compile_fail,E0277
/// use tessera_host::{DeviceItem, ElemType};
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
/// #[derive(bytemuck::Pod, bytemuck::Zeroable)]
/// struct Cents(u32);
/// unsafe impl cudarc::driver::DeviceRepr for Cents {}
/// unsafe impl cudarc::driver::ValidAsZeroBits for Cents {}
/// impl DeviceItem for Cents {
///     const TYPE: ElemType = ElemType::U32;
/// }
/// ```
pub trait DeviceItem:
    sealed::Sealed
    + DeviceRepr
    + ValidAsZeroBits
    + bytemuck::Pod
    + Default
    + PartialOrd
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
    /// The element type tag.
    const TYPE: ElemType;
}

mod sealed {
    /// The supertrait that keeps [`DeviceItem`](super::DeviceItem) to this crate's types.
    pub trait Sealed {}
}

macro_rules! device_item {
    ($($t:ty => $e:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl DeviceItem for $t { const TYPE: ElemType = ElemType::$e; }
    )*};
}
device_item!(i32 => I32, u32 => U32, f32 => F32, i64 => I64, u64 => U64, f64 => F64);

/// Checks a column length against [`MAX_COLUMN_LEN`].
pub fn check_len(len: usize) -> Result<()> {
    if len > MAX_COLUMN_LEN {
        return Err(Error::invalid(format!(
            "column of {len} items exceeds the limit of {MAX_COLUMN_LEN} (2^32 - 1) items"
        )));
    }
    Ok(())
}

/// A column of `T` in device memory. Its buffer may be larger than its length (operators such
/// as selection allocate for the worst case and then report how many items they produced).
pub struct DeviceColumn<T: DeviceItem> {
    pub(crate) buf: CudaSlice<T>,
    pub(crate) len: usize,
}

impl<T: DeviceItem> std::fmt::Debug for DeviceColumn<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceColumn<{:?}>(len {})", T::TYPE, self.len)
    }
}

impl<T: DeviceItem> DeviceColumn<T> {
    /// Its items on the device, for applications that launch kernels of their own (see
    /// [`Gpu::launch`]).
    pub fn view(&self) -> cudarc::driver::CudaView<'_, T> {
        self.buf.slice(..self.len)
    }

    /// Its items on the device, writable: for applications that copy into a column or
    /// launch kernels of their own.
    pub fn view_mut(&mut self) -> cudarc::driver::CudaViewMut<'_, T> {
        self.buf.slice_mut(..self.len)
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column has no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Items the buffer can hold.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Element type.
    pub fn elem_type(&self) -> ElemType {
        T::TYPE
    }

    /// Copies the column to the host (synchronizes the stream). The copy engine writes
    /// page-locked staging memory that all cores copy out of while it fills the next part, so
    /// that the transfer runs near the link's bandwidth instead of the driver's pageable rate
    /// (measured by `tessera bench transfer`).
    pub fn to_vec(&self, gpu: &Gpu) -> Result<Vec<T>> {
        self.to_vec_with(gpu, super::DownloadPath::Staged)
    }

    /// Sets the length after a kernel reported how many items it wrote.
    pub(crate) fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.buf.len());
        self.len = len.min(self.buf.len());
    }
}

impl Gpu {
    /// Allocates a zeroed column of `len` items.
    pub fn zeros<T: DeviceItem>(&self, len: usize) -> Result<DeviceColumn<T>> {
        check_len(len)?;
        let bytes = len * std::mem::size_of::<T>();
        // A zero-byte allocation is an error in the driver: keep one item of room.
        let buf = self
            .stream()
            .alloc_zeros::<T>(len.max(1))
            .map_err(Error::driver("allocating a column", bytes))?;
        Ok(DeviceColumn { buf, len })
    }

    /// A new device column of `len` items whose contents are unspecified until a kernel
    /// writes them: for scratch that is written before it is read, without the zeroing pass.
    pub(crate) fn scratch<T: DeviceItem>(&self, len: usize) -> Result<DeviceColumn<T>> {
        check_len(len)?;
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: the items are plain data (`DeviceItem`), any bits are a value; the callers
        // write every item they read.
        let buf = unsafe { self.stream().alloc::<T>(len.max(1)) }
            .map_err(Error::driver("allocating a column", bytes))?;
        Ok(DeviceColumn { buf, len })
    }

    /// Copies `data` to a new device column. From 1 MiB on, the copy goes through page-locked
    /// staging memory that all cores fill while the copy engine reads the previous part (the
    /// driver's copy from ordinary memory runs far below the link; `tessera bench transfer`
    /// measures both), and returns once it is done.
    pub fn upload<T: DeviceItem>(&self, data: &[T]) -> Result<DeviceColumn<T>> {
        if std::mem::size_of_val(data) < super::download::STAGED_UPLOAD_MIN {
            return self.upload_direct(data);
        }
        // Unzeroed: the copy writes every item of the column.
        let mut col = self.scratch::<T>(data.len())?;
        super::download::upload_staged(self, data, &mut col.view_mut())?;
        Ok(col)
    }

    /// One driver copy of `data` to a new device column: what page-locked memory wants (the
    /// copy engine reads it directly) and small columns (no staging lock).
    #[doc(hidden)]
    pub fn upload_direct<T: DeviceItem>(&self, data: &[T]) -> Result<DeviceColumn<T>> {
        // Unzeroed: the copy writes every item of the column.
        let mut col = self.scratch::<T>(data.len())?;
        if !data.is_empty() {
            self.stream()
                .memcpy_htod(data, &mut col.buf.slice_mut(..data.len()))
                .map_err(Error::driver(
                    "uploading a column",
                    std::mem::size_of_val(data),
                ))?;
        }
        Ok(col)
    }
}
