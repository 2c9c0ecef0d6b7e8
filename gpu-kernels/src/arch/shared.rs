//! Shared memory.
//!
//! PTX has no scopes for declarations made inside inline assembly, so a `.shared` declaration
//! must appear exactly once per kernel: [`shared_array!`] is called at the top of a kernel entry
//! (as Crystal's kernels declare their `__shared__` buffers) and the resulting [`Shared`] handle
//! is passed down to the block-wide functions. Dynamic shared memory is one module-wide symbol
//! ([`dynamic_shared`]) whose size is given at launch.
//!
//! A handle keeps the generic address (`cvta.shared`), which LLVM cannot tell is shared, so
//! its accessors convert it back and use `ld.shared`, `st.shared` and `atom.shared`
//! explicitly; the raw pointer ([`Shared::ptr`]) is for vector accesses and views that may
//! point to either memory.

use core::arch::asm;

/// A typed handle to a shared-memory buffer of `len` items.
#[derive(Clone, Copy)]
pub struct Shared<T> {
    ptr: *mut T,
    len: usize,
}

impl<T: Copy> Shared<T> {
    /// Wraps a shared-memory buffer.
    ///
    /// # Safety
    /// `ptr` must point to `len` items of shared memory that live as long as the kernel.
    #[inline(always)]
    pub unsafe fn from_raw(ptr: *mut T, len: usize) -> Self {
        Shared { ptr, len }
    }

    /// Number of items.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no items.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads item `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread writes item `i` concurrently.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T {
        let a = self.addr(i);
        // SAFETY: the caller guarantees `i` is in bounds and race-free; `a` is its shared
        // address; the sizes match the transmutes.
        unsafe {
            match core::mem::size_of::<T>() {
                1 => {
                    let r: u16;
                    asm!("ld.shared.u8 {r}, [{a}];", r = out(reg16) r, a = in(reg32) a,
                        options(readonly, nostack, preserves_flags));
                    core::mem::transmute_copy(&(r as u8))
                }
                2 => {
                    let r: u16;
                    asm!("ld.shared.b16 {r}, [{a}];", r = out(reg16) r, a = in(reg32) a,
                        options(readonly, nostack, preserves_flags));
                    core::mem::transmute_copy(&r)
                }
                4 => {
                    let r: u32;
                    asm!("ld.shared.b32 {r}, [{a}];", r = out(reg32) r, a = in(reg32) a,
                        options(readonly, nostack, preserves_flags));
                    core::mem::transmute_copy(&r)
                }
                8 => {
                    let r: u64;
                    asm!("ld.shared.b64 {r}, [{a}];", r = out(reg64) r, a = in(reg32) a,
                        options(readonly, nostack, preserves_flags));
                    core::mem::transmute_copy(&r)
                }
                _ => self.ptr.add(i).read(),
            }
        }
    }

    /// Writes item `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread accesses item `i` concurrently.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, v: T) {
        let a = self.addr(i);
        // SAFETY: as for `read`.
        unsafe {
            match core::mem::size_of::<T>() {
                1 => {
                    let v: u8 = core::mem::transmute_copy(&v);
                    asm!("st.shared.u8 [{a}], {v};", a = in(reg32) a, v = in(reg16) v as u16,
                        options(nostack, preserves_flags));
                }
                2 => {
                    let v: u16 = core::mem::transmute_copy(&v);
                    asm!("st.shared.b16 [{a}], {v};", a = in(reg32) a, v = in(reg16) v,
                        options(nostack, preserves_flags));
                }
                4 => {
                    let v: u32 = core::mem::transmute_copy(&v);
                    asm!("st.shared.b32 [{a}], {v};", a = in(reg32) a, v = in(reg32) v,
                        options(nostack, preserves_flags));
                }
                8 => {
                    let v: u64 = core::mem::transmute_copy(&v);
                    asm!("st.shared.b64 [{a}], {v};", a = in(reg32) a, v = in(reg64) v,
                        options(nostack, preserves_flags));
                }
                _ => self.ptr.add(i).write(v),
            }
        }
    }

    /// Shared-window address of item `i`. Reads, writes and atomics go through `ld.shared`,
    /// `st.shared` and `atom.shared` with it: through the generic pointer (what LLVM emits for
    /// a pointer it cannot see is shared) they became generic `LD` / `ATOM.E...GPU` in SASS,
    /// whose address-space resolution and device-scope atomics cost latency in every block
    /// function.
    #[inline(always)]
    pub fn addr(&self, i: usize) -> u32 {
        let s: u64;
        // SAFETY: converts a generic address of shared memory to its shared-window address.
        unsafe {
            asm!("cvta.to.shared.u64 {s}, {p};", s = out(reg64) s, p = in(reg64) self.ptr,
                options(pure, nomem, nostack, preserves_flags))
        };
        (s as u32).wrapping_add((i * core::mem::size_of::<T>()) as u32)
    }

    /// Pointer to item `i` (for atomics).
    #[inline(always)]
    pub fn ptr(&self, i: usize) -> *mut T {
        self.ptr.wrapping_add(i)
    }

    /// Reinterprets the buffer as items of another type (for temp storage reused across phases).
    #[inline(always)]
    pub fn cast<U: Copy>(self) -> Shared<U> {
        Shared {
            ptr: self.ptr.cast(),
            len: self.len * core::mem::size_of::<T>() / core::mem::size_of::<U>(),
        }
    }

    /// The sub-buffer starting at item `start` (`start <= len`).
    #[inline(always)]
    pub fn offset(self, start: usize) -> Self {
        Shared {
            ptr: self.ptr.wrapping_add(start),
            len: self.len.saturating_sub(start),
        }
    }
}

/// The word at shared-window address `a`: for inner loops that step through a buffer by
/// 32-bit address arithmetic ([`Shared::addr`]) rather than by a 64-bit index.
///
/// # Safety
/// `a` is the 4-byte aligned shared-window address of a word no other thread writes
/// concurrently.
#[inline(always)]
pub unsafe fn load_shared_u32(a: u32) -> u32 {
    let r: u32;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("ld.shared.b32 {r}, [{a}];", r = out(reg32) r, a = in(reg32) a,
            options(readonly, nostack, preserves_flags))
    };
    r
}

/// The four words at shared-window address `a`, in one 16-byte load.
///
/// # Safety
/// `a` is the 16-byte aligned shared-window address of four words no other thread writes
/// concurrently.
#[inline(always)]
pub unsafe fn load_shared_v4_u32(a: u32) -> [u32; 4] {
    let (x, y, z, w): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("ld.shared.v4.b32 {{{x}, {y}, {z}, {w}}}, [{a}];", x = out(reg32) x,
            y = out(reg32) y, z = out(reg32) z, w = out(reg32) w, a = in(reg32) a,
            options(readonly, nostack, preserves_flags))
    };
    [x, y, z, w]
}

/// Writes four words at shared-window address `a` in one 16-byte store.
///
/// # Safety
/// `a` is the 16-byte aligned shared-window address of four words no other thread accesses
/// concurrently.
#[inline(always)]
pub unsafe fn store_shared_v4_u32(a: u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("st.shared.v4.b32 [{a}], {{{x}, {y}, {z}, {w}}};", a = in(reg32) a,
            x = in(reg32) v[0], y = in(reg32) v[1], z = in(reg32) v[2], w = in(reg32) v[3],
            options(nostack, preserves_flags))
    };
}

/// Items with a shared-memory atomic add.
pub trait SharedAdd: Copy {
    /// `*a += v` at shared address `a`; the previous value.
    ///
    /// # Safety
    /// `a` is a valid, aligned shared address.
    unsafe fn shared_add(a: u32, v: Self) -> Self;
}

impl SharedAdd for u32 {
    #[inline(always)]
    unsafe fn shared_add(a: u32, v: u32) -> u32 {
        let r: u32;
        // SAFETY: by contract.
        unsafe {
            asm!("atom.shared.add.u32 {r}, [{a}], {v};", r = out(reg32) r, a = in(reg32) a,
                v = in(reg32) v, options(nostack, preserves_flags))
        };
        r
    }
}

impl SharedAdd for u64 {
    #[inline(always)]
    unsafe fn shared_add(a: u32, v: u64) -> u64 {
        let r: u64;
        // SAFETY: by contract.
        unsafe {
            asm!("atom.shared.add.u64 {r}, [{a}], {v};", r = out(reg64) r, a = in(reg32) a,
                v = in(reg64) v, options(nostack, preserves_flags))
        };
        r
    }
}

impl<T: SharedAdd> Shared<T> {
    /// Atomically adds `v` to item `i` (block scope); returns the previous value.
    ///
    /// # Safety
    /// `i < len`.
    #[inline(always)]
    pub unsafe fn atomic_add(&self, i: usize, v: T) -> T {
        // SAFETY: in bounds by contract.
        unsafe { T::shared_add(self.addr(i), v) }
    }
}

impl Shared<u32> {
    /// Atomically ORs `v` into item `i` (block scope).
    ///
    /// # Safety
    /// `i < len`.
    #[inline(always)]
    pub unsafe fn atomic_or(&self, i: usize, v: u32) {
        // SAFETY: in bounds by contract.
        unsafe {
            asm!("red.shared.or.b32 [{a}], {v};", a = in(reg32) self.addr(i), v = in(reg32) v,
                options(nostack, preserves_flags))
        }
    }
}

/// Declares a statically sized shared array in the calling kernel and returns a [`Shared`]
/// handle to it: `let tile = shared_array!(tile: [f32; NT * IPT]);`. Call it once per name per
/// kernel, with a length that is a constant.
#[macro_export]
macro_rules! shared_array {
    ($name:ident : [$t:ty; $n:expr]) => {{
        let p: *mut $t;
        // SAFETY: declares a 16-byte aligned shared array of exactly $n items and converts its
        // address to a generic pointer; the declaration is made once per kernel.
        unsafe {
            core::arch::asm!(
                concat!(
                    ".shared .align 16 .b8 ", stringify!($name), "[{bytes}];\n\t",
                    "cvta.shared.u64 {p}, ", stringify!($name), ";"
                ),
                bytes = const ($n) * core::mem::size_of::<$t>(),
                p = out(reg64) p,
                options(nostack, nomem, pure),
            );
            $crate::arch::Shared::from_raw(p, $n)
        }
    }};
}

core::arch::global_asm!(".extern .shared .align 16 .b8 tessera_dynamic_smem[];");

/// The kernel's dynamic shared memory as `len` items of `T`; `len * size_of::<T>()` bytes must
/// have been requested at launch.
///
/// # Safety
/// The launch must provide at least `len * size_of::<T>()` bytes of dynamic shared memory.
#[inline(always)]
pub unsafe fn dynamic_shared<T: Copy>(len: usize) -> Shared<T> {
    let p: *mut T;
    // SAFETY: converts the module's dynamic shared symbol to a generic address.
    unsafe {
        core::arch::asm!(
            "cvta.shared.u64 {p}, tessera_dynamic_smem;",
            p = out(reg64) p,
            options(nostack, nomem, pure)
        );
        Shared::from_raw(p, len)
    }
}

/// Shared-memory atomics on 32-bit shared-window addresses ([`Shared::addr`]), block scope,
/// for the hash tables that group-by keeps in shared memory.
pub mod shared_atomic {
    use core::arch::asm;

    macro_rules! shared_rmw {
        ($($(#[$m:meta])* $name:ident: $t:ty, $reg:ident, $op:literal;)*) => {$(
            $(#[$m])*
            ///
            /// # Safety
            /// `a` is a valid, aligned shared-window address.
            #[inline(always)]
            pub unsafe fn $name(a: u32, v: $t) -> $t {
                let r: $t;
                // SAFETY: by contract.
                unsafe {
                    asm!(concat!($op, " {r}, [{a}], {v};"), r = out($reg) r, a = in(reg32) a,
                        v = in($reg) v, options(nostack, preserves_flags))
                };
                r
            }
        )*};
    }

    shared_rmw! {
        /// `*a = min(*a, v)`; the previous value.
        min_u32: u32, reg32, "atom.shared.min.u32";
        /// `*a = max(*a, v)`; the previous value.
        max_u32: u32, reg32, "atom.shared.max.u32";
        /// `*a |= v`; the previous value.
        or_b32: u32, reg32, "atom.shared.or.b32";
        /// `*a = min(*a, v)`; the previous value.
        min_u64: u64, reg64, "atom.shared.min.u64";
        /// `*a = max(*a, v)`; the previous value.
        max_u64: u64, reg64, "atom.shared.max.u64";
        /// `*a += v` on the `f64` with these bits; the previous bits.
        add_f64: f64, reg64, "atom.shared.add.f64";
    }

    /// `if *a == cmp { *a = v }`; the previous value.
    ///
    /// # Safety
    /// `a` is a valid, aligned shared-window address.
    #[inline(always)]
    pub unsafe fn cas_u32(a: u32, cmp: u32, v: u32) -> u32 {
        let r: u32;
        // SAFETY: by contract.
        unsafe {
            asm!("atom.shared.cas.b32 {r}, [{a}], {c}, {v};", r = out(reg32) r, a = in(reg32) a,
                c = in(reg32) cmp, v = in(reg32) v, options(nostack, preserves_flags))
        };
        r
    }

    /// `*a += v` without the previous value.
    ///
    /// # Safety
    /// `a` is a valid, aligned shared-window address.
    #[inline(always)]
    pub unsafe fn red_add_u32(a: u32, v: u32) {
        // SAFETY: by contract.
        unsafe {
            asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) a, v = in(reg32) v,
                options(nostack, preserves_flags))
        };
    }
}
