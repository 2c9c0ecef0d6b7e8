//! Global-memory access beyond plain loads: vector loads and stores (LLVM emits `ld.global.v4`
//! only for 16-byte aligned types, hence the aligned wrappers) and relaxed device-scope
//! accesses for inter-block communication.
use core::arch::asm;

#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Align16<A>(A);

#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Align8<A>(A);

/// Loads the `V` adjacent items at `p` with one vector access when `V * size_of::<T>()` is 8 or
/// 16 bytes.
///
/// # Safety
/// `p` is valid for `V` reads and aligned to `V * size_of::<T>()` bytes when that is 8 or 16.
#[inline(always)]
pub unsafe fn load_vector<T: Copy, const V: usize>(p: *const T) -> [T; V] {
    let bytes = V * core::mem::size_of::<T>();
    // SAFETY: the caller guarantees validity and alignment for the access width chosen here.
    unsafe {
        if bytes == 16 {
            p.cast::<Align16<[T; V]>>().read().0
        } else if bytes == 8 {
            p.cast::<Align8<[T; V]>>().read().0
        } else {
            core::array::from_fn(|i| p.add(i).read())
        }
    }
}

/// Stores `V` adjacent items at `p`, vectorized like [`load_vector`].
///
/// # Safety
/// As for [`load_vector`], for writes.
#[inline(always)]
pub unsafe fn store_vector<T: Copy, const V: usize>(p: *mut T, v: [T; V]) {
    let bytes = V * core::mem::size_of::<T>();
    // SAFETY: the caller guarantees validity and alignment for the access width chosen here.
    unsafe {
        if bytes == 16 {
            p.cast::<Align16<[T; V]>>().write(Align16(v))
        } else if bytes == 8 {
            p.cast::<Align8<[T; V]>>().write(Align8(v))
        } else {
            for (i, x) in v.into_iter().enumerate() {
                p.add(i).write(x)
            }
        }
    }
}

/// Relaxed, device-scope 64-bit load: sees other blocks' [`store_relaxed_u64`] without caching.
///
/// # Safety
/// `p` is a valid, 8-byte aligned global address.
#[inline(always)]
pub unsafe fn load_relaxed_u64(p: *const u64) -> u64 {
    let r: u64;
    // SAFETY: the caller passes a valid address.
    unsafe {
        asm!("ld.relaxed.gpu.u64 {r}, [{p}];", r = out(reg64) r, p = in(reg64) p, options(nostack))
    };
    r
}

/// Relaxed, device-scope 64-bit store.
///
/// # Safety
/// `p` is a valid, 8-byte aligned global address.
#[inline(always)]
pub unsafe fn store_relaxed_u64(p: *mut u64, v: u64) {
    // SAFETY: the caller passes a valid address.
    unsafe {
        asm!("st.relaxed.gpu.u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v, options(nostack))
    };
}

/// Relaxed, device-scope 32-bit load (see [`load_relaxed_u64`]).
///
/// # Safety
/// `p` is a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn load_relaxed_u32(p: *const u32) -> u32 {
    let r: u32;
    // SAFETY: the caller passes a valid address.
    unsafe {
        asm!("ld.relaxed.gpu.u32 {r}, [{p}];", r = out(reg32) r, p = in(reg64) p, options(nostack))
    };
    r
}

/// Relaxed, device-scope 32-bit store.
///
/// # Safety
/// `p` is a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn store_relaxed_u32(p: *mut u32, v: u32) {
    // SAFETY: the caller passes a valid address.
    unsafe {
        asm!("st.relaxed.gpu.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack))
    };
}
