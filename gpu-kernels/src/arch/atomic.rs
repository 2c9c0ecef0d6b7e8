//! Atomics on global or shared memory through generic addresses (relaxed, device scope), for
//! the integer widths and floats that PTX has; float min / max are CAS loops.
use core::arch::asm;

/// Types with device atomics. Every method returns the previous value.
pub trait Atomic: Copy {
    /// `*p += v`
    ///
    /// # Safety
    /// `p` is a valid, aligned global or shared address.
    unsafe fn atomic_add(p: *mut Self, v: Self) -> Self;
    /// `*p = min(*p, v)`
    ///
    /// # Safety
    /// As for [`Atomic::atomic_add`].
    unsafe fn atomic_min(p: *mut Self, v: Self) -> Self;
    /// `*p = max(*p, v)`
    ///
    /// # Safety
    /// As for [`Atomic::atomic_add`].
    unsafe fn atomic_max(p: *mut Self, v: Self) -> Self;
    /// `*p = v`
    ///
    /// # Safety
    /// As for [`Atomic::atomic_add`].
    unsafe fn atomic_exch(p: *mut Self, v: Self) -> Self;
    /// `if *p == cmp { *p = v }` (bitwise comparison for floats)
    ///
    /// # Safety
    /// As for [`Atomic::atomic_add`].
    unsafe fn atomic_cas(p: *mut Self, cmp: Self, v: Self) -> Self;
}

macro_rules! atomic_int {
    ($t:ty, $reg:ident, $add:literal, $min:literal, $max:literal, $exch:literal, $cas:literal) => {
        impl Atomic for $t {
            #[inline(always)]
            unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
                let r: Self;
                // SAFETY: the caller passes a valid address.
                unsafe { asm!(concat!($add, " {r}, [{p}], {v};"), r = out($reg) r, p = in(reg64) p, v = in($reg) v, options(nostack)) };
                r
            }
            #[inline(always)]
            unsafe fn atomic_min(p: *mut Self, v: Self) -> Self {
                let r: Self;
                // SAFETY: the caller passes a valid address.
                unsafe { asm!(concat!($min, " {r}, [{p}], {v};"), r = out($reg) r, p = in(reg64) p, v = in($reg) v, options(nostack)) };
                r
            }
            #[inline(always)]
            unsafe fn atomic_max(p: *mut Self, v: Self) -> Self {
                let r: Self;
                // SAFETY: the caller passes a valid address.
                unsafe { asm!(concat!($max, " {r}, [{p}], {v};"), r = out($reg) r, p = in(reg64) p, v = in($reg) v, options(nostack)) };
                r
            }
            #[inline(always)]
            unsafe fn atomic_exch(p: *mut Self, v: Self) -> Self {
                let r: Self;
                // SAFETY: the caller passes a valid address.
                unsafe { asm!(concat!($exch, " {r}, [{p}], {v};"), r = out($reg) r, p = in(reg64) p, v = in($reg) v, options(nostack)) };
                r
            }
            #[inline(always)]
            unsafe fn atomic_cas(p: *mut Self, cmp: Self, v: Self) -> Self {
                let r: Self;
                // SAFETY: the caller passes a valid address.
                unsafe { asm!(concat!($cas, " {r}, [{p}], {c}, {v};"), r = out($reg) r, p = in(reg64) p, c = in($reg) cmp, v = in($reg) v, options(nostack)) };
                r
            }
        }
    };
}

atomic_int!(
    u32,
    reg32,
    "atom.add.u32",
    "atom.min.u32",
    "atom.max.u32",
    "atom.exch.b32",
    "atom.cas.b32"
);
atomic_int!(
    i32,
    reg32,
    "atom.add.u32",
    "atom.min.s32",
    "atom.max.s32",
    "atom.exch.b32",
    "atom.cas.b32"
);
atomic_int!(
    u64,
    reg64,
    "atom.add.u64",
    "atom.min.u64",
    "atom.max.u64",
    "atom.exch.b64",
    "atom.cas.b64"
);
atomic_int!(
    i64,
    reg64,
    "atom.add.u64",
    "atom.min.s64",
    "atom.max.s64",
    "atom.exch.b64",
    "atom.cas.b64"
);

macro_rules! atomic_float {
    ($t:ty, $bits:ty, $reg:ident, $add:literal) => {
        impl Atomic for $t {
            #[inline(always)]
            unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
                let r: Self;
                // SAFETY: the caller passes a valid address.
                unsafe { asm!(concat!($add, " {r}, [{p}], {v};"), r = out($reg) r, p = in(reg64) p, v = in($reg) v, options(nostack)) };
                r
            }
            #[inline(always)]
            unsafe fn atomic_min(p: *mut Self, v: Self) -> Self {
                // SAFETY: forwarded to the caller's contract.
                unsafe { cas_loop(p, |old| if v < old { v } else { old }) }
            }
            #[inline(always)]
            unsafe fn atomic_max(p: *mut Self, v: Self) -> Self {
                // SAFETY: forwarded to the caller's contract.
                unsafe { cas_loop(p, |old| if v > old { v } else { old }) }
            }
            #[inline(always)]
            unsafe fn atomic_exch(p: *mut Self, v: Self) -> Self {
                // SAFETY: same size and alignment as the bits type.
                <$t>::from_bits(unsafe { <$bits>::atomic_exch(p.cast(), v.to_bits()) })
            }
            #[inline(always)]
            unsafe fn atomic_cas(p: *mut Self, cmp: Self, v: Self) -> Self {
                // SAFETY: same size and alignment as the bits type.
                <$t>::from_bits(unsafe { <$bits>::atomic_cas(p.cast(), cmp.to_bits(), v.to_bits()) })
            }
        }
    };
}

atomic_float!(f32, u32, reg32, "atom.add.f32");
atomic_float!(f64, u64, reg64, "atom.add.f64");

/// Read-modify-write through compare-and-swap until no other thread interferes.
#[inline(always)]
unsafe fn cas_loop<T: Atomic + FloatBits>(p: *mut T, f: impl Fn(T) -> T) -> T {
    // SAFETY: the caller passes a valid address; a plain first read is only a guess that the
    // CAS verifies.
    let mut old = unsafe { core::ptr::read_volatile(p) };
    loop {
        let new = f(old);
        if new.bits() == old.bits() {
            return old;
        }
        // SAFETY: as above.
        let seen = unsafe { T::atomic_cas(p, old, new) };
        if seen.bits() == old.bits() {
            return old;
        }
        old = seen;
    }
}

trait FloatBits {
    fn bits(self) -> u64;
}
impl FloatBits for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl FloatBits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// `*p |= v` on a 32-bit word (relaxed, device scope); returns the previous value.
///
/// # Safety
/// `p` is a valid, aligned global or shared address.
#[inline(always)]
pub unsafe fn atomic_or_u32(p: *mut u32, v: u32) -> u32 {
    let r: u32;
    // SAFETY: the caller passes a valid address.
    unsafe {
        asm!("atom.or.b32 {r}, [{p}], {v};", r = out(reg32) r, p = in(reg64) p, v = in(reg32) v, options(nostack))
    };
    r
}

/// Global reductions without the previous value (`red.global`, relaxed, device scope): the
/// merges of group-by's accumulators, which never read what they update.
pub mod red_global {
    use core::arch::asm;

    macro_rules! red {
        ($($(#[$m:meta])* $name:ident: $t:ty, $reg:ident, $op:literal;)*) => {$(
            $(#[$m])*
            ///
            /// # Safety
            /// `p` is a valid, aligned global address.
            #[inline(always)]
            pub unsafe fn $name(p: *mut $t, v: $t) {
                // SAFETY: by contract.
                unsafe {
                    asm!(concat!($op, " [{p}], {v};"), p = in(reg64) p, v = in($reg) v,
                        options(nostack, preserves_flags))
                };
            }
        )*};
    }

    red! {
        /// `*p += v`
        add_u32: u32, reg32, "red.global.add.u32";
        /// `*p += v`
        add_u64: u64, reg64, "red.global.add.u64";
        /// `*p += v`
        add_f64: f64, reg64, "red.global.add.f64";
        /// `*p = min(*p, v)`
        min_u64: u64, reg64, "red.global.min.u64";
        /// `*p = max(*p, v)`
        max_u64: u64, reg64, "red.global.max.u64";
    }
}
