//! Device memory of `#[repr(C)]` structs that kernels take as structured parameters (the SSB
//! plans and build jobs): uploaded and read back as the struct type and passed to a
//! `*const T` or `*mut T` parameter of that type, so neither side indexes words by hand.
use std::marker::PhantomData;

use bytemuck::Pod;
use cudarc::driver::{CudaSlice, CudaViewMut, DevicePtr, LaunchArgs, PushKernelArg as _};

use super::Gpu;
use super::args::{KernelArg, sealed};
use super::download::STAGING_HALF;
use crate::error::{Error, Result};

/// Device memory holding `len` values of the Pod struct `T`.
pub struct PodBuffer<T: Pod> {
    bytes: CudaSlice<u8>,
    len: usize,
    item: PhantomData<T>,
}

impl<T: Pod> std::fmt::Debug for PodBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PodBuffer<{}>(len {})",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

impl<T: Pod> PodBuffer<T> {
    /// Copies `items` to the device.
    pub fn upload(gpu: &Gpu, items: &[T]) -> Result<PodBuffer<T>> {
        let bytes: &[u8] = bytemuck::cast_slice(items);
        let bytes = gpu
            .stream()
            .clone_htod(bytes)
            .map_err(Error::driver("uploading kernel parameters", bytes.len()))?;
        Ok(PodBuffer {
            bytes,
            len: items.len(),
            item: PhantomData,
        })
    }

    /// `len` zeroed values.
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<PodBuffer<T>> {
        let size = len * size_of::<T>();
        let bytes = gpu
            .stream()
            .alloc_zeros::<u8>(size.max(1))
            .map_err(Error::driver("allocating kernel parameters", size))?;
        Ok(PodBuffer {
            bytes,
            len,
            item: PhantomData,
        })
    }

    /// Downloads the first `count` values (synchronizes the stream).
    pub fn read_prefix(&self, gpu: &Gpu, count: usize) -> Result<Vec<T>> {
        if count > self.len {
            return Err(Error::invalid(format!(
                "reading {count} kernel parameters of a buffer of {}",
                self.len
            )));
        }
        let mut v = vec![T::zeroed(); count];
        if count > 0 {
            let size = count * size_of::<T>();
            gpu.stream()
                .memcpy_dtoh(
                    &self.bytes.slice(..size),
                    bytemuck::cast_slice_mut::<T, u8>(&mut v),
                )
                .map_err(Error::driver("reading kernel parameters", size))?;
            gpu.synchronize()?;
        }
        Ok(v)
    }

    /// Downloads the first `count` values of this buffer and the first `other_count` of
    /// `other` with one wait for the stream (both copies into the page-locked staging memory,
    /// then one synchronization), where two [`read_prefix`](Self::read_prefix) calls would
    /// wait twice.
    pub fn read_prefix_with<U: Pod>(
        &self,
        gpu: &Gpu,
        count: usize,
        other: &PodBuffer<U>,
        other_count: usize,
    ) -> Result<(Vec<T>, Vec<U>)> {
        if count > self.len || other_count > other.len {
            return Err(Error::invalid(format!(
                "reading {count} and {other_count} kernel parameters of buffers of {} and {}",
                self.len, other.len
            )));
        }
        let (a, b) = (count * size_of::<T>(), other_count * size_of::<U>());
        if a + b > STAGING_HALF {
            return Ok((
                self.read_prefix(gpu, count)?,
                other.read_prefix(gpu, other_count)?,
            ));
        }
        gpu.with_staging(|[half, _]| {
            let stream = gpu.stream();
            for (bytes, at, len) in [(&self.bytes, 0, a), (&other.bytes, a, b)] {
                if len == 0 {
                    continue;
                }
                let (src, _sync) = bytes.device_ptr(stream);
                // SAFETY: `len` bytes lie inside the buffer (checked above); the staging
                // memory is page-locked and not read before the synchronization below.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut half[at..at + len],
                        src,
                        stream.cu_stream(),
                    )
                }
                .map_err(Error::driver("reading kernel parameters", len))?;
            }
            gpu.synchronize()?;
            let mut va = vec![T::zeroed(); count];
            let mut vb = vec![U::zeroed(); other_count];
            bytemuck::cast_slice_mut::<T, u8>(&mut va).copy_from_slice(&half[..a]);
            bytemuck::cast_slice_mut::<U, u8>(&mut vb).copy_from_slice(&half[a..a + b]);
            Ok((va, vb))
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Downloads value `i` (synchronizes the stream).
    pub fn read(&self, gpu: &Gpu, i: usize) -> Result<T> {
        let size = size_of::<T>();
        let mut v = T::zeroed();
        gpu.stream()
            .memcpy_dtoh(
                &self.bytes.slice(self.range(i)?),
                bytemuck::bytes_of_mut(&mut v),
            )
            .map_err(Error::driver("reading kernel parameters", size))?;
        gpu.synchronize()?;
        Ok(v)
    }

    /// Overwrites value `i` with `v` (queued).
    pub fn write(&mut self, gpu: &Gpu, i: usize, v: &T) -> Result<()> {
        let r = self.range(i)?;
        gpu.stream()
            .memcpy_htod(bytemuck::bytes_of(v), &mut self.bytes.slice_mut(r))
            .map_err(Error::driver("writing kernel parameters", size_of::<T>()))
    }

    /// Value `i` as a kernel argument the kernel may write.
    pub fn item_mut(&mut self, i: usize) -> Result<PodItemMut<'_, T>> {
        let r = self.range(i)?;
        Ok(PodItemMut {
            bytes: self.bytes.slice_mut(r),
            item: PhantomData,
        })
    }

    fn range(&self, i: usize) -> Result<std::ops::Range<usize>> {
        if i >= self.len {
            return Err(Error::invalid(format!(
                "kernel parameter {i} of a buffer of {}",
                self.len
            )));
        }
        let size = size_of::<T>();
        Ok(i * size..(i + 1) * size)
    }
}

/// One value of a [`PodBuffer`], for a `*mut T` kernel parameter.
pub struct PodItemMut<'a, T: Pod> {
    bytes: CudaViewMut<'a, u8>,
    item: PhantomData<T>,
}

impl<T: Pod> sealed::Sealed for &PodBuffer<T> {}
impl<T: Pod> KernelArg<*const T> for &PodBuffer<T> {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(&self.bytes);
    }
}

impl<T: Pod> sealed::Sealed for &mut PodBuffer<T> {}
impl<T: Pod> KernelArg<*mut T> for &mut PodBuffer<T> {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(&mut self.bytes);
    }
}

impl<T: Pod> sealed::Sealed for &mut PodItemMut<'_, T> {}
impl<T: Pod> KernelArg<*mut T> for &mut PodItemMut<'_, T> {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(&mut self.bytes);
    }
}
