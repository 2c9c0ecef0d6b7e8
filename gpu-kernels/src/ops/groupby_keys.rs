//! Composite and 64-bit group-by keys (issue 22, seed 000's N key columns): every key column
//! is mapped to its ordered bits (`u32` as is, `i32` and `i64` with the sign bit flipped, so
//! that unsigned order is the type's order), [`GROUPBY_KEY_RANGE`] finds each column's least
//! and greatest ordered value in one read, and [`GROUPBY_KEY_PACK32`] / [`GROUPBY_KEY_PACK64`]
//! write one key per row: each column's offset from its least value in the bits the host
//! gives it, the first column in the highest bits. Unsigned order of the packed keys is then
//! the lexicographic order of the columns, and a grouping of one packed column is the
//! grouping of all of them; the host reads each column back from a group's key bits.

/// Key columns one grouping packs.
pub const GROUPBY_MAX_KEYS: usize = 8;

/// Key column types (a key column's `types` entry).
pub mod key_type {
    /// `u32`.
    pub const U32: u32 = 0;
    /// `i32`.
    pub const I32: u32 = 1;
    /// `i64`.
    pub const I64: u32 = 2;
}

/// The ordered bits of a key word of type `ty` (`u32` and `i32` words in the low half).
#[inline(always)]
pub const fn ordered_key(ty: u32, word: u64) -> u64 {
    match ty {
        key_type::U32 => word & 0xffff_ffff,
        key_type::I32 => (word & 0xffff_ffff) ^ 0x8000_0000,
        _ => word ^ (1 << 63),
    }
}

/// The key word of type `ty` whose ordered bits are `ord` (inverse of [`ordered_key`]).
#[inline(always)]
pub const fn unordered_key(ty: u32, ord: u64) -> u64 {
    ordered_key(ty, ord)
}

/// Parameters of the range and pack kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct KeyPackParams {
    /// Device address of each key column.
    pub columns: [u64; GROUPBY_MAX_KEYS],
    /// Each column's least ordered value (packing only).
    pub mins: [u64; GROUPBY_MAX_KEYS],
    /// Each column's shift in the packed key (packing only).
    pub shifts: [u32; GROUPBY_MAX_KEYS],
    /// Each column's [`key_type`].
    pub types: [u32; GROUPBY_MAX_KEYS],
    /// Key columns.
    pub keys: u32,
    /// Rows.
    pub n: u32,
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{GROUPBY_MAX_KEYS, KeyPackParams, key_type, ordered_key};

    /// The ordered bits of column `c`'s row `i`.
    ///
    /// # Safety
    /// `i < p.n` and `c < p.keys`, `c < GROUPBY_MAX_KEYS`.
    #[inline(always)]
    pub unsafe fn ordered_at(p: &KeyPackParams, c: usize, i: usize) -> u64 {
        // SAFETY: by contract, c < GROUPBY_MAX_KEYS.
        let (ty, column) = unsafe { (*p.types.get_unchecked(c), *p.columns.get_unchecked(c)) };
        // SAFETY: by contract, the column holds row i.
        let word = unsafe {
            if ty == key_type::I64 {
                (column as *const u64).add(i).read()
            } else {
                (column as *const u32).add(i).read() as u64
            }
        };
        ordered_key(ty, word)
    }

    /// The packed key of row `i`.
    ///
    /// # Safety
    /// `i < p.n`.
    #[inline(always)]
    pub unsafe fn packed_at(p: &KeyPackParams, i: usize) -> u64 {
        let mut key = 0u64;
        for c in 0..(p.keys as usize).min(GROUPBY_MAX_KEYS) {
            // SAFETY: forwarded; c < keys.
            let offset = unsafe { ordered_at(p, c, i) }.wrapping_sub(p.mins[c]);
            // A constant column has offset 0, whatever its shift.
            key |= offset.wrapping_shl(p.shifts[c]);
        }
        key
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

/// The arguments of the range kernel: `(params, out)`.
pub type KeyRangeArgs = (*const KeyPackParams, *mut u64);

crate::kernel! {
    /// Each key column's least and greatest ordered value into `out[2 c]` and `out[2 c + 1]`
    /// (which the host sets to `u64::MAX` and 0). Any grid size.
    GROUPBY_KEY_RANGE = groupby_key_range[NT = 256, IPT = 1](
        params: *const KeyPackParams, out: *mut u64
    ) {
        use crate::arch::{Atomic, lane_id, warp_reduce};
        use crate::ops::groupby_keys::GROUPBY_MAX_KEYS;
        // SAFETY: one parameter struct, aligned, not written while the kernel runs. Read
        // through a reference: a copy lowers to a byte loop into local memory.
        let p = unsafe { &*params };
        let stride = crate::arch::grid_dim() * NT;
        for c in 0..(p.keys as usize).min(GROUPBY_MAX_KEYS) {
            let (mut lo, mut hi) = (u64::MAX, 0u64);
            let mut i = crate::arch::global_idx();
            while i < p.n as usize {
                // SAFETY: i < n, c < keys.
                let v = unsafe { ordered_at(p, c, i) };
                lo = lo.min(v);
                hi = hi.max(v);
                i += stride;
            }
            lo = warp_reduce(lo, |a, b| a.min(b));
            hi = warp_reduce(hi, |a, b| a.max(b));
            if lane_id() == 0 && lo <= hi {
                // SAFETY: out holds two words per key column.
                unsafe {
                    u64::atomic_min(out.add(2 * c), lo);
                    u64::atomic_max(out.add(2 * c + 1), hi);
                }
            }
        }
    }
}

macro_rules! pack_kernels {
    ($($name:ident = $kname:ident: $t:ty;)*) => {$(
        crate::kernel! {
            /// Each row's packed key (the host sizes the shifts so that it fits). Any grid
            /// size.
            $name = $kname[NT = 256, IPT = 1](params: *const KeyPackParams, out: *mut $t) {
                // SAFETY: one parameter struct, aligned, not written while the kernel runs. Read
                // through a reference: a copy lowers to a byte loop into local memory.
                let p = unsafe { &*params };
                let stride = crate::arch::grid_dim() * NT;
                let mut i = crate::arch::global_idx();
                while i < p.n as usize {
                    // SAFETY: i < n, the output's length; the packed key fits `$t`.
                    unsafe { out.add(i).write(packed_at(p, i) as $t) };
                    i += stride;
                }
            }
        }
    )*};
}

pack_kernels! {
    GROUPBY_KEY_PACK32 = groupby_key_pack32: u32;
    GROUPBY_KEY_PACK64 = groupby_key_pack64: u64;
}

/// The arguments of the pack kernels: `(params, out)`.
pub type KeyPackArgs<T> = (*const KeyPackParams, *mut T);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_keys_sort_as_their_types() {
        let i32s = [i32::MIN, -7, -1, 0, 1, i32::MAX];
        let o = i32s.map(|x| ordered_key(key_type::I32, x as u32 as u64));
        assert!(o.windows(2).all(|w| w[0] < w[1]));
        let i64s = [i64::MIN, -(1 << 40), -1, 0, 5, i64::MAX];
        let o = i64s.map(|x| ordered_key(key_type::I64, x as u64));
        assert!(o.windows(2).all(|w| w[0] < w[1]));
        for (ty, w) in [(0, 77u64), (1, 0x8000_0001), (2, 1 << 63 | 3)] {
            assert_eq!(unordered_key(ty, ordered_key(ty, w)), w);
        }
    }

    #[test]
    fn params_have_no_padding() {
        assert_eq!(
            size_of::<KeyPackParams>(),
            16 * GROUPBY_MAX_KEYS + 8 * GROUPBY_MAX_KEYS + 8
        );
    }
}
