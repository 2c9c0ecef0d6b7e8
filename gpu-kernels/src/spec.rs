//! Kernel descriptors shared by the device and the host: a kernel's exported name and its tile
//! configuration are written once, next to the kernel, and the host wrapper reads them from here.

use core::marker::PhantomData;

/// Page-locked host words, mapped into the device, that the host runtime hands a launch to
/// write (a kernel's `host` parameter): word 0 takes a sequence number, written last by a
/// system-scope release, the others the words that number vouches for.
pub const HOST_WORDS: usize = 16;

/// Name and launch shape of a kernel, without its parameter types: what grid sizing, occupancy
/// queries and benchmark listings need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelShape {
    name: &'static str,
    threads: u32,
    items_per_thread: u32,
}

impl KernelShape {
    /// Exported PTX entry name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Threads per block (`NT`).
    pub const fn threads(&self) -> u32 {
        self.threads
    }

    /// Items per thread (`IPT`); a block processes one tile of `threads * items_per_thread`.
    pub const fn items_per_thread(&self) -> u32 {
        self.items_per_thread
    }

    /// Items per tile (`NT * IPT`).
    pub const fn tile(&self) -> u32 {
        self.threads * self.items_per_thread
    }

    /// Number of tiles (= blocks, one tile per block) needed for `n` items.
    pub const fn tiles(&self, n: u64) -> u64 {
        n.div_ceil(self.tile() as u64)
    }
}

/// One kernel: its [`KernelShape`] and, as the type `A`, the tuple of its parameter types in
/// order (`(*const u32, u32, *mut u64)` for `fn k(keys: *const u32, n: u32, out: *mut u64)`).
/// Only [`kernel!`](crate::kernel) makes one, from the kernel's own signature, so a spec
/// always names a kernel of the PTX with that shape and those parameters; the host's launch
/// accepts only arguments that match `A`. It dereferences to its shape.
pub struct KernelSpec<A> {
    shape: KernelShape,
    args: PhantomData<fn(A)>,
}

impl<A> KernelSpec<A> {
    #[doc(hidden)]
    pub(crate) const fn new(name: &'static str, threads: u32, items_per_thread: u32) -> Self {
        KernelSpec {
            shape: KernelShape {
                name,
                threads,
                items_per_thread,
            },
            args: PhantomData,
        }
    }

    /// The kernel's name and shape.
    pub const fn shape(&self) -> KernelShape {
        self.shape
    }

    /// Exported PTX entry name (also in const contexts, where [`Deref`](core::ops::Deref)
    /// does not reach).
    pub const fn name(&self) -> &'static str {
        self.shape.name
    }

    /// Threads per block (`NT`).
    pub const fn threads(&self) -> u32 {
        self.shape.threads
    }

    /// Items per thread (`IPT`).
    pub const fn items_per_thread(&self) -> u32 {
        self.shape.items_per_thread
    }

    /// Items per tile (`NT * IPT`).
    pub const fn tile(&self) -> u32 {
        self.shape.tile()
    }

    /// Number of tiles needed for `n` items.
    pub const fn tiles(&self, n: u64) -> u64 {
        self.shape.tiles(n)
    }
}

impl<A> core::ops::Deref for KernelSpec<A> {
    type Target = KernelShape;
    fn deref(&self) -> &KernelShape {
        &self.shape
    }
}

// Written out: derives would require `A: Clone` etc. of the parameter tuple.
impl<A> Clone for KernelSpec<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for KernelSpec<A> {}
impl<A> PartialEq for KernelSpec<A> {
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape
    }
}
impl<A> Eq for KernelSpec<A> {}
impl<A> core::fmt::Debug for KernelSpec<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.shape.fmt(f)
    }
}

/// Defines a kernel: its [`KernelSpec`] constant, typed by the parameter list, on every target and, on nvptx, the exported
/// entry point with `NT` and `IPT` in scope as constants. `MIN_BLOCKS = m` asks ptxas to fit
/// the registers to `m` resident blocks of `NT` threads per SM (CUDA's `__launch_bounds__`,
/// applied to the PTX by the link step, see `tessera-ptx-build`).
#[macro_export]
macro_rules! kernel {
    (
        $(#[$meta:meta])*
        $spec:ident = $name:ident [NT = $nt:literal, IPT = $ipt:literal, MIN_BLOCKS = $mb:literal]
        ($($arg:ident : $ty:ty),* $(,)?) $body:block
    ) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[used]
            #[unsafe(export_name = concat!("__tessera_bounds_", stringify!($name)))]
            static BOUNDS: u64 = (($nt as u64) << 32) | $mb as u64;
        };
        $crate::kernel! {
            $(#[$meta])*
            $spec = $name[NT = $nt, IPT = $ipt]($($arg: $ty),*) $body
        }
    };
    (
        $(#[$meta:meta])*
        $spec:ident = $name:ident [NT = $nt:literal, IPT = $ipt:literal]
        ($($arg:ident : $ty:ty),* $(,)?) $body:block
    ) => {
        $(#[$meta])*
        pub const $spec: $crate::spec::KernelSpec<($($ty,)*)> =
            $crate::spec::KernelSpec::new(stringify!($name), $nt, $ipt);
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) {
            #[allow(dead_code)]
            const NT: usize = $nt;
            #[allow(dead_code)]
            const IPT: usize = $ipt;
            $body
        }
    };
}
