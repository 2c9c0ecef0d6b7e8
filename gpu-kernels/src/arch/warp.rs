//! Warp-level operations over all 32 lanes: shuffles, votes, population count.
use core::arch::asm;

const FULL: u32 = 0xffff_ffff;

#[inline(always)]
fn shfl_idx_b32(v: u32, src: u32) -> u32 {
    let r: u32;
    // SAFETY: warp shuffle over the full mask; callers call it with the warp converged.
    unsafe {
        asm!("shfl.sync.idx.b32 {r}, {v}, {s}, 0x1f, {m};",
            r = out(reg32) r, v = in(reg32) v, s = in(reg32) src, m = in(reg32) FULL, options(nostack, nomem))
    };
    r
}

#[inline(always)]
fn shfl_up_b32(v: u32, delta: u32) -> u32 {
    let r: u32;
    // SAFETY: as above; lanes below `delta` get their own value back.
    unsafe {
        asm!("shfl.sync.up.b32 {r}, {v}, {d}, 0x0, {m};",
            r = out(reg32) r, v = in(reg32) v, d = in(reg32) delta, m = in(reg32) FULL, options(nostack, nomem))
    };
    r
}

#[inline(always)]
fn shfl_down_b32(v: u32, delta: u32) -> u32 {
    let r: u32;
    // SAFETY: as above; lanes above `31 - delta` get their own value back.
    unsafe {
        asm!("shfl.sync.down.b32 {r}, {v}, {d}, 0x1f, {m};",
            r = out(reg32) r, v = in(reg32) v, d = in(reg32) delta, m = in(reg32) FULL, options(nostack, nomem))
    };
    r
}

#[inline(always)]
fn shfl_xor_b32(v: u32, mask: u32) -> u32 {
    let r: u32;
    // SAFETY: as above.
    unsafe {
        asm!("shfl.sync.bfly.b32 {r}, {v}, {x}, 0x1f, {m};",
            r = out(reg32) r, v = in(reg32) v, x = in(reg32) mask, m = in(reg32) FULL, options(nostack, nomem))
    };
    r
}

/// Values that can move between lanes: 32-bit ones in one shuffle, 64-bit ones in two.
pub trait Shuffle: Copy {
    /// Applies a 32-bit shuffle to every word of the value.
    fn shuffle_words(self, f: impl Fn(u32) -> u32) -> Self;
}

macro_rules! shuffle32 {
    ($($t:ty),*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle_words(self, f: impl Fn(u32) -> u32) -> Self {
                <$t>::from_ne_bytes(f(u32::from_ne_bytes(self.to_ne_bytes())).to_ne_bytes())
            }
        }
    )*};
}
macro_rules! shuffle64 {
    ($($t:ty),*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle_words(self, f: impl Fn(u32) -> u32) -> Self {
                let b = u64::from_ne_bytes(self.to_ne_bytes());
                let lo = f(b as u32) as u64;
                let hi = f((b >> 32) as u32) as u64;
                <$t>::from_ne_bytes((lo | (hi << 32)).to_ne_bytes())
            }
        }
    )*};
}
shuffle32!(u32, i32, f32);
shuffle64!(u64, i64, f64);

/// Wrapping sums (a scan of wrapping deltas).
impl Shuffle for core::num::Wrapping<u32> {
    #[inline(always)]
    fn shuffle_words(self, f: impl Fn(u32) -> u32) -> Self {
        core::num::Wrapping(f(self.0))
    }
}

/// Value of `v` in lane `src` (`__shfl_sync`).
#[inline(always)]
pub fn shfl_idx<T: Shuffle>(v: T, src: u32) -> T {
    v.shuffle_words(|w| shfl_idx_b32(w, src))
}

/// Value of `v` in lane `lane - delta`, own value for lanes below `delta` (`__shfl_up_sync`).
#[inline(always)]
pub fn shfl_up<T: Shuffle>(v: T, delta: u32) -> T {
    v.shuffle_words(|w| shfl_up_b32(w, delta))
}

/// Value of `v` in lane `lane + delta`, own value for the top `delta` lanes (`__shfl_down_sync`).
#[inline(always)]
pub fn shfl_down<T: Shuffle>(v: T, delta: u32) -> T {
    v.shuffle_words(|w| shfl_down_b32(w, delta))
}

/// Value of `v` in lane `lane ^ mask` (`__shfl_xor_sync`).
#[inline(always)]
pub fn shfl_xor<T: Shuffle>(v: T, mask: u32) -> T {
    v.shuffle_words(|w| shfl_xor_b32(w, mask))
}

/// Bit `i` set where lane `i`'s `p` is true (`__ballot_sync`).
#[inline(always)]
pub fn ballot(p: bool) -> u32 {
    let r: u32;
    // SAFETY: warp vote over the full mask; the predicate lives in a scoped register.
    unsafe {
        asm!("{{ .reg .pred %tp; setp.ne.u32 %tp, {x}, 0; vote.sync.ballot.b32 {r}, %tp, {m}; }}",
            x = in(reg32) p as u32, r = out(reg32) r, m = in(reg32) FULL, options(nostack, nomem))
    };
    r
}

/// Whether `p` is true in any lane (`__any_sync`).
#[inline(always)]
pub fn any(p: bool) -> bool {
    let r: u32;
    // SAFETY: as for `ballot`.
    unsafe {
        asm!("{{ .reg .pred %tp; setp.ne.u32 %tp, {x}, 0; vote.sync.any.pred %tp, %tp, {m}; selp.u32 {r}, 1, 0, %tp; }}",
            x = in(reg32) p as u32, r = out(reg32) r, m = in(reg32) FULL, options(nostack, nomem))
    };
    r != 0
}

/// Whether `p` is true in every lane (`__all_sync`).
#[inline(always)]
pub fn all(p: bool) -> bool {
    let r: u32;
    // SAFETY: as for `ballot`.
    unsafe {
        asm!("{{ .reg .pred %tp; setp.ne.u32 %tp, {x}, 0; vote.sync.all.pred %tp, %tp, {m}; selp.u32 {r}, 1, 0, %tp; }}",
            x = in(reg32) p as u32, r = out(reg32) r, m = in(reg32) FULL, options(nostack, nomem))
    };
    r != 0
}

/// Mask of the lanes whose `v` equals this lane's (`__match_any_sync`, sm_70+).
#[inline(always)]
pub fn match_any(v: u32) -> u32 {
    let r: u32;
    // SAFETY: warp match over the full mask; callers call it with the warp converged.
    unsafe {
        asm!("match.any.sync.b32 {r}, {v}, {m};",
            r = out(reg32) r, v = in(reg32) v, m = in(reg32) FULL, options(nostack, nomem))
    };
    r
}

/// Mask of the lanes whose low `bits` bits of `v` equal this lane's: `match_any(v & mask)`
/// from one ballot per bit, as CUB's `MatchAny` does it. On the H100 `match.any` is much
/// slower than a few ballots.
///
/// Each bit is one `lop3` to a predicate, the ballot and a predicated complement in SASS.
/// (Written with `ballot` and a select, it compiled to six instructions per bit.)
#[inline(always)]
pub fn match_bits(v: u32, bits: u32) -> u32 {
    let mut peers = FULL;
    for b in 0..bits {
        let w: u32;
        // SAFETY: warp vote over the full mask; callers call it with the warp converged.
        unsafe {
            asm!("{{ .reg .pred %tp; and.b32 {w}, {v}, {bit}; setp.ne.u32 %tp, {w}, 0; vote.sync.ballot.b32 {w}, %tp, {m}; @!%tp not.b32 {w}, {w}; }}",
                w = out(reg32) w, v = in(reg32) v, bit = in(reg32) 1u32 << b, m = in(reg32) FULL,
                options(nostack, nomem))
        };
        peers &= w;
    }
    peers
}

/// Number of set bits (`popc`).
#[inline(always)]
pub fn popc(x: u32) -> u32 {
    x.count_ones()
}

/// Inclusive prefix sum across the warp (Kogge-Stone over shuffles).
#[inline(always)]
pub fn warp_inclusive_sum(mut v: u32) -> u32 {
    let lane = super::lane_id();
    let mut d = 1;
    while d < 32 {
        let up = shfl_up(v, d);
        if lane >= d {
            v += up;
        }
        d *= 2;
    }
    v
}

/// Reduces `v` over the warp with `op`; every lane gets the result.
#[inline(always)]
pub fn warp_reduce<T: Shuffle>(mut v: T, op: impl Fn(T, T) -> T) -> T {
    let mut m = 16;
    while m > 0 {
        v = op(v, shfl_xor(v, m));
        m /= 2;
    }
    v
}
