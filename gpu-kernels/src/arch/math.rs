//! Math that `core` does not have on nvptx. LLVM's generic `llvm.exp.f32` has no nvptx lowering
//! and libdevice is not in the toolchain, so `exp` is built on the hardware's `ex2.approx`.
use core::arch::asm;

/// `a * b + c` with one rounding.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers.
    unsafe {
        asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
    };
    r
}

/// `2^x`, relative error about 2^-22 (flushes subnormal results to zero).
#[inline(always)]
pub fn exp2_approx(x: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers.
    unsafe {
        asm!("ex2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
    };
    r
}

/// `e^x` within a few ulp: `x * log2(e)` is split into its rounded value and the rounding error
/// (recovered with an fma) so large arguments keep their low bits.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    let hi = x * LOG2_E;
    // Past |hi| = 128 the result over- or underflows anyway, and for infinite x the split
    // would be inf - inf = NaN; NaN x fails the test and stays NaN through ex2.
    let lo = if hi.abs() < 128.0 {
        fma(x, LOG2_E, -hi)
    } else {
        0.0
    };
    exp2_approx(hi) * exp2_approx(lo)
}

/// `1 / x` within 1 ulp (`rcp.approx`; IEEE division expands to a slow-path sequence that made
/// the sigmoid projection compute-bound).
#[inline(always)]
pub fn rcp_approx(x: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers.
    unsafe {
        asm!("rcp.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
    };
    r
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    rcp_approx(1.0 + exp(-x))
}

/// `x`, hidden from the optimizer: a bit set built from many flags stays one register instead
/// of being folded back into a flag per bit (which ptxas then keeps in a register each).
#[inline(always)]
pub fn opaque_u64(x: u64) -> u64 {
    let r: u64;
    // SAFETY: a register move.
    unsafe {
        core::arch::asm!("mov.b64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(nostack, nomem, pure))
    };
    r
}

/// `if c { a } else { b }` as one `selp`, hidden from the optimizer: a chain of selects
/// among an array's elements is otherwise turned into an indexed load from the array, which
/// then lives in local memory.
#[inline(always)]
pub fn select_u32(c: bool, a: u32, b: u32) -> u32 {
    let r: u32;
    // SAFETY: arithmetic on registers.
    unsafe {
        core::arch::asm!("{{ .reg .pred %sp; setp.ne.u32 %sp, {c}, 0; selp.b32 {r}, {a}, {b}, %sp; }}",
            r = out(reg32) r, c = in(reg32) c as u32, a = in(reg32) a, b = in(reg32) b,
            options(pure, nomem, nostack))
    };
    r
}

/// The low 32 bits of `(hi:lo) >> (shift % 32)` (`shf.r.wrap`): a bit field that may straddle
/// two words, in one instruction.
#[inline(always)]
pub fn funnel_shr(lo: u32, hi: u32, shift: u32) -> u32 {
    let r: u32;
    // SAFETY: arithmetic on registers.
    unsafe {
        asm!("shf.r.wrap.b32 {r}, {lo}, {hi}, {s};", r = out(reg32) r, lo = in(reg32) lo, hi = in(reg32) hi, s = in(reg32) shift, options(pure, nomem, nostack))
    };
    r
}

/// The mask of the low `width` (0..=32) bits: 0 for 0, all ones for 32, with no branch and no
/// 64-bit shift (PTX clamps a shift by 32 or more to a result of 0, where Rust's `<<` would
/// wrap the amount). The complement of a shift, so that ptxas folds the `not` into the `and`
/// that uses the mask: one instruction where `!0 >> (32 - width)` took two.
#[inline(always)]
pub fn low_mask(width: u32) -> u32 {
    let r: u32;
    // SAFETY: arithmetic on registers.
    unsafe {
        asm!("{{ .reg .b32 %hm; shl.b32 %hm, 0xffffffff, {w}; not.b32 {r}, %hm; }}", r = out(reg32) r, w = in(reg32) width, options(pure, nomem, nostack))
    };
    r
}
