//! Kernel descriptors shared by the device and the host: a kernel's exported name and its tile
//! configuration are written once, next to the kernel, and the host wrapper reads them from here.

/// Name and launch shape of one kernel. Only [`kernel!`](crate::kernel) makes one, next to the
/// kernel it describes, so a spec always names a kernel of the PTX with that shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSpec {
    name: &'static str,
    threads: u32,
    items_per_thread: u32,
}

impl KernelSpec {
    #[doc(hidden)]
    pub(crate) const fn new(name: &'static str, threads: u32, items_per_thread: u32) -> Self {
        KernelSpec {
            name,
            threads,
            items_per_thread,
        }
    }

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

/// Defines a kernel: its [`KernelSpec`] constant on every target and, on nvptx, the exported
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
        pub const $spec: $crate::spec::KernelSpec =
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
