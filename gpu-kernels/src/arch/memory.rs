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

/// `*p` when `live`, else all-zero bits, as one predicated load (`@p ld`): no branch, so the
/// loads of several items can all be issued before any result is used. In a branch per item,
/// each load and its use stayed together and every probe of an SSB tile waited a full memory
/// latency in turn (ncu: flight 3 stalled on each lookup's test).
///
/// # Safety
/// When `live`, `p` is a valid, aligned global or shared address; `T` is 1, 2, 4 or 8 bytes
/// and valid as all-zero bits.
#[inline(always)]
pub unsafe fn load_if<T: Copy>(live: bool, p: *const T) -> T {
    let c = live as u32;
    // SAFETY: the caller guarantees validity when live; sizes match the transmutes.
    unsafe {
        match core::mem::size_of::<T>() {
            1 => {
                let mut r: u32 = 0;
                asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {c}, 0; @%lp ld.u8 {r}, [{a}]; }}",
                    r = inout(reg32) r, c = in(reg32) c, a = in(reg64) p,
                    options(readonly, nostack, preserves_flags));
                core::mem::transmute_copy(&(r as u8))
            }
            2 => {
                let mut r: u32 = 0;
                asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {c}, 0; @%lp ld.u16 {r}, [{a}]; }}",
                    r = inout(reg32) r, c = in(reg32) c, a = in(reg64) p,
                    options(readonly, nostack, preserves_flags));
                core::mem::transmute_copy(&(r as u16))
            }
            4 => {
                let mut r: u32 = 0;
                asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {c}, 0; @%lp ld.u32 {r}, [{a}]; }}",
                    r = inout(reg32) r, c = in(reg32) c, a = in(reg64) p,
                    options(readonly, nostack, preserves_flags));
                core::mem::transmute_copy(&r)
            }
            8 => {
                let mut r: u64 = 0;
                asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {c}, 0; @%lp ld.u64 {r}, [{a}]; }}",
                    r = inout(reg64) r, c = in(reg32) c, a = in(reg64) p,
                    options(readonly, nostack, preserves_flags));
                core::mem::transmute_copy(&r)
            }
            _ => {
                if live {
                    p.read()
                } else {
                    core::mem::zeroed()
                }
            }
        }
    }
}

/// Brings the line holding global address `p` into L2 when `live`, without waiting for it
/// (`@p prefetch.global.L2`): a hint, which never faults.
#[inline(always)]
pub fn prefetch_l2_if(live: bool, p: *const u32) {
    // SAFETY: a prefetch reads nothing into registers and never faults.
    unsafe {
        asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {c}, 0; @%lp prefetch.global.L2 [{a}]; }}",
            c = in(reg32) live as u32, a = in(reg64) p,
            options(readonly, nostack, preserves_flags));
    }
}

/// `*p` when `live`, else 0, as [`load_if`] but through the read-only global path
/// (`@p ld.global.nc`): for data that no thread writes during the kernel, reached through an
/// address the compiler cannot place in global memory (one read from shared memory, say),
/// which it would load with a generic `ld`.
///
/// # Safety
/// When `live`, `p` is a valid, 4-byte aligned global address, unchanged during the kernel.
#[inline(always)]
pub unsafe fn load_global_nc_if_u32(live: bool, p: *const u32) -> u32 {
    let mut r: u32 = 0;
    // SAFETY: the caller guarantees validity when live.
    unsafe {
        asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {c}, 0; @%lp ld.global.nc.u32 {r}, [{a}]; }}",
            r = inout(reg32) r, c = in(reg32) live as u32, a = in(reg64) p,
            options(readonly, nostack, preserves_flags));
    }
    r
}

/// The four words at `p` when `live`, else zeros, as one predicated `ld.global.nc.v4`.
///
/// # Safety
/// When `live`, `p` is a valid, 16-byte aligned global address of data unchanged during the
/// kernel.
#[inline(always)]
pub unsafe fn load_global_nc_if_v4_u32(live: bool, p: *const u32) -> [u32; 4] {
    let (mut a, mut b, mut c, mut d) = (0u32, 0u32, 0u32, 0u32);
    // SAFETY: the caller guarantees validity and alignment when live.
    unsafe {
        asm!("{{ .reg .pred %lp; setp.ne.u32 %lp, {l}, 0; @%lp ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}]; }}",
            a = inout(reg32) a, b = inout(reg32) b, c = inout(reg32) c, d = inout(reg32) d,
            l = in(reg32) live as u32, p = in(reg64) p,
            options(readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// The two words at `p` (one `ld.global.nc.v2`): raw data a walk keeps in registers while
/// it works on its current tile, decoded only when its tile comes (a value extracted at once
/// would wait for the load there).
///
/// # Safety
/// `p` is a valid, 8-byte aligned global address of data unchanged during the kernel.
#[inline(always)]
pub unsafe fn load_global_nc_v2_u32(p: *const u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: the caller guarantees validity and alignment.
    unsafe {
        asm!("ld.global.nc.v2.u32 {{{a}, {b}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, p = in(reg64) p,
            options(readonly, nostack, preserves_flags));
    }
    [a, b]
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

/// Release, system-scope 32-bit store: this thread's earlier writes are seen, by the host
/// too, before this one (a flag in page-locked host memory mapped into the device).
///
/// # Safety
/// `p` is a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn store_release_sys_u32(p: *mut u32, v: u32) {
    // SAFETY: the caller passes a valid address.
    unsafe {
        asm!("st.release.sys.global.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack))
    };
}

/// Starts an asynchronous copy of the 16 bytes at global `src` to shared `dst` (`cp.async.cg`,
/// sm_80+). A thread's copies complete at its next [`copy_async_wait_all`] (or
/// [`copy_async_wait_groups`] past their group); no register holds the data, so a thread can
/// have all of its copies in flight at once.
///
/// # Safety
/// `dst` is a 16-byte aligned shared-window address ([`crate::arch::Shared::addr`]) of 16
/// bytes no other thread accesses until the block's next barrier after the wait; `src` is a
/// 16-byte aligned global address valid for 16 bytes of reads.
#[inline(always)]
pub unsafe fn copy_async_16(dst: u32, src: *const u32) {
    // SAFETY: the caller guarantees both addresses; `cvta.to.global` turns the generic
    // pointer into the global-window address cp.async takes.
    unsafe {
        asm!("{{ .reg .u64 %g; cvta.to.global.u64 %g, {s}; cp.async.cg.shared.global [{d}], [%g], 16; }}",
            d = in(reg32) dst, s = in(reg64) src, options(nostack, preserves_flags));
    }
}

/// Starts asynchronous copies of the first `words` (1..=4) words at global `src` to shared
/// `dst`: one [`copy_async_16`] for 4, else a [`copy_async_4`] per word, so that nothing past
/// `src + words` is read. (cp.async's zero-filling source size is no substitute: the hardware
/// still reads the aligned 16 bytes, which compute-sanitizer reports past an allocation's end;
/// it also costs ptxas several instructions per copy to encode the size into the address.)
///
/// # Safety
/// As [`copy_async_16`], with `src` valid for `words` reads.
#[inline(always)]
pub unsafe fn copy_async_words(dst: u32, src: *const u32, words: u32) {
    // SAFETY: the caller guarantees `words` readable words and the 16 bytes at `dst`.
    unsafe {
        if words >= 4 {
            copy_async_16(dst, src);
        } else {
            for i in 0..3 {
                if i < words {
                    copy_async_4(dst + 4 * i, src.add(i as usize));
                }
            }
        }
    }
}

/// Starts an asynchronous copy of the word at global `src` to shared `dst` (`cp.async.ca`),
/// as [`copy_async_16`].
///
/// # Safety
/// As [`copy_async_16`], for one 4-byte aligned word.
#[inline(always)]
pub unsafe fn copy_async_4(dst: u32, src: *const u32) {
    // SAFETY: as `copy_async_16`.
    unsafe {
        asm!("{{ .reg .u64 %g; cvta.to.global.u64 %g, {s}; cp.async.ca.shared.global [{d}], [%g], 4; }}",
            d = in(reg32) dst, s = in(reg64) src, options(nostack, preserves_flags));
    }
}

/// Closes this thread's group of asynchronous copies started since the last commit: the unit
/// [`copy_async_wait_groups`] waits for.
#[inline(always)]
pub fn copy_async_commit() {
    // SAFETY: bookkeeping of the thread's own copies.
    unsafe { asm!("cp.async.commit_group;", options(nostack, preserves_flags)) };
}

/// Waits until at most `PENDING` of this thread's committed copy groups, the latest, are
/// still in flight (other threads see the data after a barrier).
#[inline(always)]
pub fn copy_async_wait_groups<const PENDING: u32>() {
    // SAFETY: a wait on the thread's own copies.
    unsafe {
        asm!("cp.async.wait_group {n};", n = const PENDING, options(nostack, preserves_flags))
    };
}

/// Waits until every asynchronous copy of this thread has landed in shared memory (other
/// threads see the data after a barrier).
#[inline(always)]
pub fn copy_async_wait_all() {
    // SAFETY: a wait on the thread's own copies.
    unsafe { asm!("cp.async.wait_all;", options(nostack, preserves_flags)) };
}
