//! tessera's device code.
//!
//! * `arch`: the thin device layer (indices, barriers, shared memory, warp operations,
//!   atomics, vector loads, fences, math) written with `core::arch::nvptx` and inline PTX.
//! * `block`: Crystal's block-wide functions, generic over `const NT` (threads per block),
//!   `const IPT` (items per thread) and the item type.
//! * [`ops`]: the operator kernels, each a short sequence of block-wide calls, instantiated by
//!   macro for the configurations the host uses.
//!
//! On the host only the target-independent parts compile: [`spec`] (kernel names and launch
//! configurations, shared with the host wrappers), [`layout`], [`predicate`], [`radix`] and
//! [`compress`] (the compressed formats and their index arithmetic).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, stmt_expr_attributes)
)]

#[cfg(test)]
extern crate std;

#[cfg(target_arch = "nvptx64")]
pub mod arch;
#[cfg(target_arch = "nvptx64")]
pub mod block;
pub mod compress;
pub mod hash;
pub mod layout;
pub mod ops;
pub mod predicate;
pub mod radix;
pub mod spec;
pub mod ssb;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // A panic in a kernel is a bug (kernels index with proven bounds): stop the grid loudly.
    // SAFETY: `trap` aborts the kernel; the launch then reports an error to the host.
    unsafe { core::arch::asm!("trap;", options(noreturn)) }
}
