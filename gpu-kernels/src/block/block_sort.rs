//! Block-wise radix sort of one tile in shared memory (CUB's BlockRadixSort).
//!
//! Keys are 32-bit radix words ([`crate::radix::RadixKey::to_bits`] maps `i32` / `f32` keys to
//! them) held in registers as `[u32; IPT]`, with an optional value per key (`[u32; IPT]`, or
//! `[(); IPT]` for keys alone). Each pass ranks one 4-bit digit:
//!
//! 1. every thread counts its own items' digits in its own column of shared counters
//!    (`counters[digit * NT + thread]`: a private column needs no atomics, and a thread always
//!    hits the same bank),
//! 2. one block scan (the project's [`block_exclusive_sum`]) over the counters in
//!    `(digit, thread)` order turns each counter into the number of items ranked before it,
//! 3. each item's rank is its counter plus the items of the same digit earlier in its thread,
//! 4. keys (then values) are exchanged through a padded shared tile to their ranks and read back
//!    blocked (thread `t` holds ranks `t * IPT ..`), which keeps the next pass stable.
//!
//! The sort is stable with respect to the **blocked** order of the input (item `k` of thread `t`
//! at position `t * IPT + k`); the last pass reads back **striped** (item `k` of thread `t` has
//! rank `k * NT + t`) so the sorted tile can be stored with coalesced accesses. Load with
//! [`block_load_blocked`] to sort a tile stably in memory order, with the invalid items of a
//! partial tile last.
use super::{block_exclusive_sum, block_reduce};
use crate::arch::{Shared, sync_threads, thread_idx};
use crate::radix::RadixBits;

/// Bits ranked per pass.
pub const RADIX_BITS: u32 = 4;
/// Counters per thread (digit values per pass).
pub const RADIX_DIGITS: usize = 1 << RADIX_BITS;

/// Marker item type for the block scan's arrangement: a zero-sized type has vector width 1,
/// i.e. Crystal's striped order (`k * NT + t`), which is the `(digit, thread)` order of the
/// counters and the rank order of a sorted tile.
pub struct Striped;

/// Shared `u32` words of the exchange tile: one pad word per 32 items keeps blocked reads
/// (stride `IPT`) free of bank conflicts.
pub const fn block_sort_exchange_words(nt: usize, ipt: usize) -> usize {
    nt * ipt + nt * ipt / 32 + 1
}

/// Shared `u32` words of the counter scan.
pub const fn block_sort_scan_words(nt: usize) -> usize {
    crate::layout::scan_temp_words(nt, RADIX_DIGITS, 1)
}

#[inline(always)]
fn pad(i: usize) -> usize {
    i + i / 32
}

/// Shared memory of [`block_radix_sort`] (declare it with [`crate::block_sort_shared!`]).
#[derive(Clone, Copy)]
pub struct BlockSortShared {
    /// `RADIX_DIGITS * NT` digit counters.
    pub counters: Shared<u32>,
    /// The padded exchange tile, [`block_sort_exchange_words`].
    pub exchange: Shared<u32>,
    /// Block-scan partials, [`block_sort_scan_words`] (also used by [`block_differing_bits`]).
    pub scan: Shared<u32>,
}

/// Declares [`BlockSortShared`] for `NT` threads and `IPT` items per thread at the top of a
/// kernel (once per kernel: the names are fixed).
#[macro_export]
macro_rules! block_sort_shared {
    ($nt:expr, $ipt:expr) => {
        $crate::block::BlockSortShared {
            counters: $crate::shared_array!(bsort_counters: [u32; $crate::block::RADIX_DIGITS * $nt]),
            exchange: $crate::shared_array!(bsort_exchange: [u32; $crate::block::block_sort_exchange_words($nt, $ipt)]),
            scan: $crate::shared_array!(bsort_scan: [u32; $crate::block::block_sort_scan_words($nt)]),
        }
    };
}

/// Moves `items` to the positions `dest[k]` of the tile and reads them back, thread `t` taking
/// `t * IPT + k` (blocked) or `k * NT + t` (striped). Ends with a barrier, so the exchange tile
/// can be reused at once.
#[inline(always)]
fn exchange<V: Copy, const NT: usize, const IPT: usize>(
    items: &mut [V; IPT],
    dest: &[u32; IPT],
    striped: bool,
    buf: Shared<u32>,
) {
    if core::mem::size_of::<V>() == 0 {
        return; // keys alone: nothing to move
    }
    let buf = buf.cast::<V>();
    let t = thread_idx();
    for k in 0..IPT {
        // SAFETY: ranks are a permutation of the tile; padded indices stay below the buffer's
        // length; a barrier separates these writes from earlier reads (callers' or the end of
        // the previous exchange).
        unsafe { buf.write(pad(dest[k] as usize), items[k]) };
    }
    sync_threads();
    for (k, item) in items.iter_mut().enumerate() {
        let src = if striped { k * NT + t } else { t * IPT + k };
        // SAFETY: written before the barrier.
        *item = unsafe { buf.read(pad(src)) };
    }
    sync_threads();
}

/// Sorts the tile's keys by bits `begin_bit .. end_bit` (ascending, stable in blocked order),
/// moving each value with its key. On return item `k` of thread `t` holds rank `k * NT + t`
/// (striped). Callers pass a barrier before reusing `sh`.
#[inline(always)]
pub fn block_radix_sort<V: Copy, const NT: usize, const IPT: usize>(
    keys: &mut [u32; IPT],
    vals: &mut [V; IPT],
    begin_bit: u32,
    end_bit: u32,
    sh: BlockSortShared,
) {
    const { assert!(core::mem::size_of::<V>() == 0 || core::mem::size_of::<V>() == 4) };
    let t = thread_idx();
    let end_bit = end_bit.min(32);
    let passes = end_bit.saturating_sub(begin_bit).div_ceil(RADIX_BITS);
    if passes == 0 {
        // Nothing to rank: only turn the blocked order into the striped one.
        let dest: [u32; IPT] = core::array::from_fn(|k| (t * IPT + k) as u32);
        exchange::<u32, NT, IPT>(keys, &dest, true, sh.exchange);
        exchange::<V, NT, IPT>(vals, &dest, true, sh.exchange);
        return;
    }
    let col = |d: usize| d * NT + t;
    for pass in 0..passes {
        let bit = begin_bit + pass * RADIX_BITS;
        let width = RADIX_BITS.min(end_bit - bit);
        // 1. Count this thread's digits in its own column.
        for d in 0..RADIX_DIGITS {
            // SAFETY: own column; no other thread touches it outside the scan's barriers.
            unsafe { sh.counters.write(col(d), 0) };
        }
        for &key in keys.iter() {
            let d = key.digit(bit, width) as usize;
            // SAFETY: own column.
            unsafe { sh.counters.write(col(d), sh.counters.read(col(d)) + 1) };
        }
        // 2. Exclusive scan in (digit, thread) order.
        let mut counts = [0u32; RADIX_DIGITS];
        for (d, c) in counts.iter_mut().enumerate() {
            // SAFETY: own column.
            *c = unsafe { sh.counters.read(col(d)) };
        }
        let mut before = [0u32; RADIX_DIGITS];
        block_exclusive_sum::<Striped, u32, NT, RADIX_DIGITS>(&counts, &mut before, sh.scan);
        for (d, &b) in before.iter().enumerate() {
            // SAFETY: own column.
            unsafe { sh.counters.write(col(d), b) };
        }
        // 3. Rank: the counter, bumped per item in order (stable within the thread).
        let mut rank = [0u32; IPT];
        for (k, &key) in keys.iter().enumerate() {
            let d = key.digit(bit, width) as usize;
            // SAFETY: own column.
            unsafe {
                let r = sh.counters.read(col(d));
                rank[k] = r;
                sh.counters.write(col(d), r + 1);
            }
        }
        // 4. Exchange; the last pass leaves the tile striped for the store.
        let last = pass + 1 == passes;
        exchange::<u32, NT, IPT>(keys, &rank, last, sh.exchange);
        exchange::<V, NT, IPT>(vals, &rank, last, sh.exchange);
    }
}

/// Loads the `n` valid items of a tile (`min(n, NT * IPT)`) into the blocked arrangement (item
/// `k` of thread `t` is position `t * IPT + k`) through the exchange tile, reading memory
/// striped so that accesses coalesce; `read(pos)` returns the item at `pos < n`, and positions
/// past `n` get `fill`. Ends with a barrier.
#[inline(always)]
pub fn block_load_blocked<const NT: usize, const IPT: usize>(
    n: usize,
    read: impl Fn(usize) -> u32,
    fill: u32,
    items: &mut [u32; IPT],
    exchange: Shared<u32>,
) {
    let t = thread_idx();
    for k in 0..IPT {
        let pos = k * NT + t;
        let v = if pos < n { read(pos) } else { fill };
        // SAFETY: distinct padded slots within the exchange tile.
        unsafe { exchange.write(pad(pos), v) };
    }
    sync_threads();
    for (k, item) in items.iter_mut().enumerate() {
        // SAFETY: written before the barrier.
        *item = unsafe { exchange.read(pad(t * IPT + k)) };
    }
    sync_threads();
}

/// Stores a striped tile (item `k` of thread `t` at `k * NT + t`): its first `n` positions.
///
/// # Safety
/// `out` is valid for `min(n, NT * IPT)` writes.
#[inline(always)]
pub unsafe fn block_store_striped<T: Copy, const NT: usize, const IPT: usize>(
    out: *mut T,
    n: usize,
    items: &[T; IPT],
) {
    let t = thread_idx();
    for (k, &x) in items.iter().enumerate() {
        let pos = k * NT + t;
        if pos < n {
            // SAFETY: pos < n.
            unsafe { out.add(pos).write(x) };
        }
    }
}

/// One past the highest bit in which the first `n` keys of a blocked tile differ (0 when they
/// are all equal): keys agree above it, so sorting bits `0 .. end` sorts them. Computed from
/// the OR and the AND of all keys in one block reduction. `temp` holds at least
/// `NT / 16 + 2` words; ends with a barrier.
#[inline(always)]
pub fn block_differing_bits<const NT: usize, const IPT: usize>(
    keys: &[u32; IPT],
    n: usize,
    temp: Shared<u32>,
) -> u32 {
    const IDENTITY: u64 = 0x0000_0000_ffff_ffff; // OR = 0 (high word), AND = !0 (low word)
    let t = thread_idx();
    let packed: [u64; IPT] = core::array::from_fn(|k| {
        if t * IPT + k < n {
            ((keys[k] as u64) << 32) | keys[k] as u64
        } else {
            IDENTITY
        }
    });
    let both = block_reduce::<u64, NT, IPT>(
        &packed,
        usize::MAX,
        IDENTITY,
        |a, b| ((a | b) & !IDENTITY) | (a & b & IDENTITY),
        temp.cast::<u64>(),
    );
    sync_threads();
    let differ = (both >> 32) as u32 ^ both as u32;
    32 - differ.leading_zeros()
}
