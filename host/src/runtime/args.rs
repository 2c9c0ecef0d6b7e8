//! Typed kernel launches: the host values that a kernel parameter accepts, checked by the
//! compiler against the parameter types that `tessera_kernels::kernel!` records in each
//! [`KernelSpec`].
//!
//! A kernel `fn k(keys: *const u32, n: u32, out: *mut u64)` has the spec type
//! `KernelSpec<(*const u32, u32, *mut u64)>`, and [`Gpu::launch`] takes for it a tuple
//! `(&CudaSlice<u32> or &DeviceColumn<u32>, &u32, &mut CudaSlice<u64>)`: a read-only
//! parameter takes a shared borrow, a written one an exclusive borrow, a scalar its value's
//! reference. Any other type, count or order of arguments fails to compile (see
//! [`Gpu::launch`]).
use cudarc::driver::{
    CudaSlice, CudaView, CudaViewMut, LaunchArgs, LaunchConfig, PushKernelArg as _,
};
use tessera_kernels::spec::KernelSpec;

use super::{DeviceColumn, DeviceItem, Gpu};
use crate::error::{Error, Result};

/// A host value that a kernel parameter of device type `D` accepts. Sealed: the impls below
/// are the whole mapping.
pub trait KernelArg<D>: sealed::Sealed {
    #[doc(hidden)]
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b;
}

/// The arguments of a kernel whose parameter types are the tuple `A`: a tuple of
/// [`KernelArg`]s, one per parameter, in order. Sealed with [`KernelArg`].
pub trait KernelArgs<A>: sealed::Sealed {
    #[doc(hidden)]
    fn push_all<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b;
}

pub(super) mod sealed {
    /// Keeps [`KernelArg`](super::KernelArg) and [`KernelArgs`](super::KernelArgs) to the
    /// mappings of this module.
    pub trait Sealed {}
}

macro_rules! buffer_args {
    ($($host:ty => $dev:ty;)*) => {$(
        impl<'a, 'c, T> sealed::Sealed for $host {}
        impl<'a, 'c, T> KernelArg<$dev> for $host {
            fn push<'b>(self, b: &mut LaunchArgs<'b>)
            where
                Self: 'b,
            {
                b.arg(self);
            }
        }
    )*};
}
buffer_args! {
    &'a CudaSlice<T> => *const T;
    &'a mut CudaSlice<T> => *mut T;
    &'a CudaView<'c, T> => *const T;
    &'a mut CudaViewMut<'c, T> => *mut T;
}

/// An absent buffer: the kernel receives a null pointer (for parameters its mode never reads
/// or writes, such as a keys-only sort's values).
impl<H: sealed::Sealed> sealed::Sealed for Option<H> {}
macro_rules! optional_args {
    ($($ptr:ty),*) => {$(
        impl<T, H: KernelArg<$ptr>> KernelArg<$ptr> for Option<H> {
            fn push<'b>(self, b: &mut LaunchArgs<'b>)
            where
                Self: 'b,
            {
                match self {
                    Some(h) => h.push(b),
                    None => {
                        b.arg(&NULL);
                    }
                }
            }
        }
    )*};
}
optional_args!(*const T, *mut T);
/// The null device pointer.
static NULL: u64 = 0;

impl<T: DeviceItem> sealed::Sealed for &DeviceColumn<T> {}
impl<T: DeviceItem> KernelArg<*const T> for &DeviceColumn<T> {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(&self.buf);
    }
}
impl<T: DeviceItem> sealed::Sealed for &mut DeviceColumn<T> {}
impl<T: DeviceItem> KernelArg<*mut T> for &mut DeviceColumn<T> {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(&mut self.buf);
    }
}

/// A scalar parameter takes a reference to its value.
impl<T: DeviceItem> sealed::Sealed for &T {}
impl<T: DeviceItem> KernelArg<T> for &T {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(self);
    }
}

/// A structured parameter passed by value: a `#[repr(C)]` [`Pod`](bytemuck::Pod) struct that
/// the kernel crate shares, which the kernel takes as a parameter of its own type `T` (and so
/// reads from the launch's parameters, not from device memory). Give the launch a
/// `&ByValue<T>`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByValue<T>(pub T);

// SAFETY: a transparent wrapper of a `Pod` value, which the driver copies as its bytes into the
// kernel's parameter of type `T` (the launch's types are checked against the kernel's spec).
unsafe impl<T: bytemuck::Pod> cudarc::driver::DeviceRepr for ByValue<T> {}

impl<T: bytemuck::Pod> sealed::Sealed for &ByValue<T> {}
impl<T: bytemuck::Pod> KernelArg<T> for &ByValue<T> {
    fn push<'b>(self, b: &mut LaunchArgs<'b>)
    where
        Self: 'b,
    {
        b.arg(self);
    }
}

macro_rules! tuple_args {
    ($(($($h:ident: $d:ident),*);)*) => {$(
        impl<$($h),*> sealed::Sealed for ($($h,)*) {}
        impl<$($h: KernelArg<$d>, $d),*> KernelArgs<($($d,)*)> for ($($h,)*) {
            #[allow(non_snake_case, unused_variables)]
            fn push_all<'b>(self, b: &mut LaunchArgs<'b>)
            where
                Self: 'b,
            {
                let ($($h,)*) = self;
                $($h.push(b);)*
            }
        }
    )*};
}
tuple_args! {
    ();
    (H1: D1);
    (H1: D1, H2: D2);
    (H1: D1, H2: D2, H3: D3);
    (H1: D1, H2: D2, H3: D3, H4: D4);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8, H9: D9);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8, H9: D9, H10: D10);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8, H9: D9, H10: D10,
        H11: D11);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8, H9: D9, H10: D10,
        H11: D11, H12: D12);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8, H9: D9, H10: D10,
        H11: D11, H12: D12, H13: D13);
    (H1: D1, H2: D2, H3: D3, H4: D4, H5: D5, H6: D6, H7: D7, H8: D8, H9: D9, H10: D10,
        H11: D11, H12: D12, H13: D13, H14: D14);
}

/// A buffer's items as the words `W` (several per item when `W` is narrower), for kernels that
/// move or compare items as bits without reading them as numbers (sort passes, join keys and
/// payloads).
pub(crate) fn view_as<'a, W: DeviceItem, K: DeviceItem>(s: &CudaView<'a, K>) -> CudaView<'a, W> {
    const { assert!(size_of::<K>().is_multiple_of(size_of::<W>())) };
    let words = s.len() * (size_of::<K>() / size_of::<W>());
    // SAFETY: K and W are Pod and K is a whole number of W, so its bytes are `words` W of any
    // bits.
    unsafe { s.transmute(words) }.expect("same byte length")
}

/// A buffer as its 32-bit words.
pub(crate) fn bits_of<K: DeviceItem>(s: &CudaSlice<K>) -> CudaView<'_, u32> {
    view_as(&s.as_view())
}

/// [`bits_of`] for writing.
pub(crate) fn bits_of_mut<K: DeviceItem>(s: &mut CudaSlice<K>) -> CudaViewMut<'_, u32> {
    let words = s.len() * size_of::<K>() / 4;
    // SAFETY: as in `view_as`; any bits written make valid items of the Pod type K.
    unsafe { s.transmute_mut(words) }.expect("same byte length")
}

impl Gpu {
    /// Launches `spec` on the stream with `cfg` and `args`, one per kernel parameter, each of
    /// the parameter's [`KernelArg`] type. The compiler checks the count, the order and the
    /// types against the kernel's own signature:
    ///
    /// ```no_run
    /// # fn main() -> tessera_host::Result<()> {
    /// use tessera_host::{Gpu, runtime::LaunchConfig};
    /// use tessera_kernels::ops::project::PROJECT_LINEAR_F32; // (x1, x2, n, a, b, out)
    /// let gpu = Gpu::new()?;
    /// let (x1, x2) = (gpu.upload(&[1.0f32; 4])?, gpu.upload(&[2.0f32; 4])?);
    /// let mut out = gpu.zeros::<f32>(4)?;
    /// let cfg = LaunchConfig::for_num_elems(4);
    /// // SAFETY: one tile covers the 4 items of each column.
    /// unsafe { gpu.launch(&PROJECT_LINEAR_F32, cfg, (&x1, &x2, &4u32, &0.5f32, &2.0f32, &mut out)) }
    /// # }
    /// ```
    ///
    /// Integer columns where the kernel reads `f32`, a missing argument or two swapped ones
    /// do not compile:
    ///
    /// ```compile_fail,E0277
    /// # fn main() -> tessera_host::Result<()> {
    /// # use tessera_host::{Gpu, runtime::LaunchConfig};
    /// # use tessera_kernels::ops::project::PROJECT_LINEAR_F32;
    /// # let gpu = Gpu::new()?;
    /// let (x1, x2) = (gpu.upload(&[1u32; 4])?, gpu.upload(&[2u32; 4])?);
    /// # let mut out = gpu.zeros::<f32>(4)?;
    /// # let cfg = LaunchConfig::for_num_elems(4);
    /// unsafe { gpu.launch(&PROJECT_LINEAR_F32, cfg, (&x1, &x2, &4u32, &0.5f32, &2.0f32, &mut out)) }
    /// # }
    /// ```
    ///
    /// ```compile_fail,E0277
    /// # fn main() -> tessera_host::Result<()> {
    /// # use tessera_host::{Gpu, runtime::LaunchConfig};
    /// # use tessera_kernels::ops::project::PROJECT_LINEAR_F32;
    /// # let gpu = Gpu::new()?;
    /// # let (x1, x2) = (gpu.upload(&[1.0f32; 4])?, gpu.upload(&[2.0f32; 4])?);
    /// # let mut out = gpu.zeros::<f32>(4)?;
    /// # let cfg = LaunchConfig::for_num_elems(4);
    /// unsafe { gpu.launch(&PROJECT_LINEAR_F32, cfg, (&x1, &x2, &0.5f32, &2.0f32, &mut out)) }
    /// # }
    /// ```
    ///
    /// ```compile_fail,E0277
    /// # fn main() -> tessera_host::Result<()> {
    /// # use tessera_host::{Gpu, runtime::LaunchConfig};
    /// # use tessera_kernels::ops::project::PROJECT_LINEAR_F32;
    /// # let gpu = Gpu::new()?;
    /// # let (x1, x2) = (gpu.upload(&[1.0f32; 4])?, gpu.upload(&[2.0f32; 4])?);
    /// # let mut out = gpu.zeros::<f32>(4)?;
    /// # let cfg = LaunchConfig::for_num_elems(4);
    /// unsafe { gpu.launch(&PROJECT_LINEAR_F32, cfg, (&x1, &x2, &0.5f32, &4u32, &2.0f32, &mut out)) }
    /// # }
    /// ```
    ///
    /// # Safety
    ///
    /// What the types cannot say: every buffer holds the items the kernel reaches for this
    /// grid and these scalars (counts, offsets, tile numbers), the kernel's state buffers are
    /// prepared as its module documents, and `cfg` gives the kernel the dynamic shared memory
    /// it expects.
    pub unsafe fn launch<A, H: KernelArgs<A>>(
        &self,
        spec: &KernelSpec<A>,
        cfg: LaunchConfig,
        args: H,
    ) -> Result<()> {
        let f = self.function(spec)?;
        let mut b = self.stream().launch_builder(&f);
        args.push_all(&mut b);
        // SAFETY: the arguments match the kernel's parameters in count, order and type (the
        // bounds above); the caller vouches for the rest (see # Safety).
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(Error::launch(spec.name()))
    }
}
