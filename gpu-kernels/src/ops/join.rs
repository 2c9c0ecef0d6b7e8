//! Hash join kernels: clear, build, probe-and-aggregate (the thesis' Q4), the two passes of the
//! join that emits row pairs, the semi-join, and the L2 bandwidth probe the join model needs.
//!
//! Every table kernel takes its table as `(slots, ta, tb)`: for linear probing `ta` is the
//! capacity (`tb` unused), for perfect hashing `ta` is the smallest key and `tb` the number of
//! slots. Build kernels insert the rows whose key satisfies a [`crate::predicate`] comparison
//! (the selective build) and report in `state` (a [`crate::hash::BuildState`]) whether keys
//! repeated or found no slot. Probe kernels take `distinct` (no duplicate was reported): walks
//! then stop at the first match. One block per tile, except the persistent probe-and-sum.
//!
//! Keys are `u32` (the unsuffixed kernels), `i32` (probes share the `u32` kernels, which compare
//! key bits; the `_i32` builds evaluate their predicate in `i32` order) or `u64` (the `_u64`
//! kernels: linear probing only, over 64-bit key words, see [`crate::hash`]).

#[cfg(target_arch = "nvptx64")]
use crate::{block::*, ops::select::SelectShared};
#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{
        Atomic, Shared, block_idx, grid_dim, load_vector, store_vector, sync_threads, thread_idx,
    };
    use crate::block::*;
    use crate::hash::{BuildState, HashKey, KeyBits};
    use crate::ops::select::{SelectShared, block_select_write};

    /// Builds a table view from the kernel's `(slots, ta, tb)` arguments.
    pub trait TableArgs: DeviceTable {
        /// The view.
        fn from_args(slots: *mut u32, ta: u32, tb: u32) -> Self;
    }
    impl<B: KeyBits + Atomic> TableArgs for HashMap<u32, B> {
        #[inline(always)]
        fn from_args(slots: *mut u32, ta: u32, _: u32) -> Self {
            HashMap {
                slots: slots.cast(),
                capacity: ta,
            }
        }
    }
    impl TableArgs for PerfectMap<u32> {
        #[inline(always)]
        fn from_args(slots: *mut u32, ta: u32, tb: u32) -> Self {
            PerfectMap {
                slots: slots.cast(),
                min: ta,
                len: tb,
            }
        }
    }
    impl<B: KeyBits + Atomic> TableArgs for HashSet<B> {
        #[inline(always)]
        fn from_args(slots: *mut u32, ta: u32, _: u32) -> Self {
            HashSet {
                keys: slots.cast(),
                capacity: ta,
            }
        }
    }
    impl TableArgs for PerfectSet {
        #[inline(always)]
        fn from_args(slots: *mut u32, ta: u32, tb: u32) -> Self {
            PerfectSet {
                keys: slots,
                min: ta,
                len: tb,
            }
        }
    }

    /// Tile `tile`: first row and number of valid rows.
    #[inline(always)]
    fn tile_at<const NT: usize, const IPT: usize>(tile: usize, n: usize) -> (usize, usize) {
        let start = tile * NT * IPT;
        (start, (n - start).min(NT * IPT))
    }

    /// This block's tile (one block per tile).
    #[inline(always)]
    fn tile<const NT: usize, const IPT: usize>(n: usize) -> (usize, usize) {
        tile_at::<NT, IPT>(block_idx(), n)
    }

    /// Row index of each item of the tile starting at `start`.
    #[inline(always)]
    fn rows<const NT: usize, const IPT: usize>(start: usize) -> [u32; IPT] {
        let t = thread_idx();
        core::array::from_fn(|k| (start + Tile::<u32, NT, IPT>::offset(t, k)) as u32)
    }

    /// Loads the block's tile of keys and flags its valid rows.
    ///
    /// # Safety
    /// `keys` holds `n` items and the block's tile starts below `n`.
    #[inline(always)]
    unsafe fn load_keys<K: HashKey, const NT: usize, const IPT: usize>(
        keys: *const K,
        n: usize,
    ) -> (usize, usize, [K; IPT], [bool; IPT]) {
        // SAFETY: forwarded.
        unsafe { load_keys_at::<K, NT, IPT>(keys, n, block_idx()) }
    }

    /// Loads tile `tile` of keys and flags its valid rows.
    ///
    /// Keys follow the tile layout of `u32` items whatever their width, so that they line up
    /// with the `u32` payload, value and row-index columns of the same rows (a tile of `u64`
    /// items has a vector width of its own, see [`crate::layout`]).
    ///
    /// # Safety
    /// `keys` holds `n` items and the tile starts below `n`.
    #[inline(always)]
    unsafe fn load_keys_at<K: HashKey, const NT: usize, const IPT: usize>(
        keys: *const K,
        n: usize,
        tile: usize,
    ) -> (usize, usize, [K; IPT], [bool; IPT]) {
        let (start, valid) = tile_at::<NT, IPT>(tile, n);
        let mut k = [K::default(); IPT];
        if Tile::<K, NT, IPT>::V == Tile::<u32, NT, IPT>::V {
            // SAFETY: the tile lies within the column.
            unsafe { block_load::<K, NT, IPT>(keys.add(start), valid, &mut k) };
        } else {
            // Wider keys: each thread reads its `u32`-layout items one by one.
            let t = thread_idx();
            for (i, key) in k.iter_mut().enumerate() {
                let o = Tile::<u32, NT, IPT>::offset(t, i);
                if o < valid {
                    // SAFETY: o < valid, the number of items of the tile.
                    *key = unsafe { keys.add(start + o).read() };
                }
            }
        }
        let mut flags = [false; IPT];
        pred_keys::<K, NT, IPT>(&k, valid, &mut flags, Combine::Set, |_| true);
        (start, valid, k, flags)
    }

    /// [`block_pred`] over keys loaded by [`load_keys_at`] (in the `u32` tile layout).
    #[inline(always)]
    fn pred_keys<K: HashKey, const NT: usize, const IPT: usize>(
        k: &[K; IPT],
        valid: usize,
        flags: &mut [bool; IPT],
        combine: Combine,
        p: impl Fn(K) -> bool,
    ) {
        if Tile::<K, NT, IPT>::V == Tile::<u32, NT, IPT>::V {
            block_pred::<K, NT, IPT>(k, valid, flags, combine, p);
        } else {
            // The predicate of item i, with the tail guard of the u32 layout.
            let items: [u32; IPT] = core::array::from_fn(|i| i as u32);
            block_pred::<u32, NT, IPT>(&items, valid, flags, combine, |i| p(k[i as usize]));
        }
    }

    /// Sets `n` words to `value` (clears a table to [`crate::hash::EMPTY_KEY`]).
    ///
    /// # Safety
    /// `words` holds `n` items.
    #[inline(always)]
    pub unsafe fn fill<const NT: usize, const IPT: usize>(words: *mut u32, n: usize, value: u32) {
        let (start, valid) = tile::<NT, IPT>(n);
        // SAFETY: the tile lies within the buffer.
        unsafe { block_store::<u32, NT, IPT>(words.add(start), valid, &[value; IPT]) };
    }

    /// Adds the tile's flagged rows to the state's inserted count and records what the build
    /// saw.
    ///
    /// # Safety
    /// `state` holds the build state words.
    #[inline(always)]
    unsafe fn report<const NT: usize, const IPT: usize>(
        flags: &[bool; IPT],
        st: BuildStatus,
        state: *mut BuildState,
        temp: Shared<u32>,
    ) {
        let inserted = block_count::<u32, NT, IPT>(flags, usize::MAX, temp);
        // SAFETY: by contract.
        unsafe {
            st.record(state);
            if thread_idx() == 0 && inserted != 0 {
                u32::atomic_add(&raw mut (*state).inserted, inserted);
            }
        }
    }

    /// Inserts the rows whose key satisfies `p`, with their payload (`payloads`, or the row
    /// index when `ROWS`).
    ///
    /// # Safety
    /// `keys` (and `payloads` unless `ROWS`) hold `n` items; `table` is cleared or built;
    /// `state` holds the build state words.
    #[inline(always)]
    pub unsafe fn build<
        K: HashKey,
        T: DeviceTable<Value = u32, Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
        const ROWS: bool,
    >(
        keys: *const K,
        payloads: *const u32,
        n: usize,
        p: impl Fn(K) -> bool,
        table: T,
        state: *mut BuildState,
        temp: Shared<u32>,
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let (start, valid, k, mut flags) = load_keys::<K, NT, IPT>(keys, n);
            pred_keys::<K, NT, IPT>(&k, valid, &mut flags, Combine::And, p);
            let v = if ROWS {
                rows::<NT, IPT>(start)
            } else {
                let mut v = [0u32; IPT];
                block_load_sel::<u32, NT, IPT>(payloads.add(start), valid, &flags, &mut v);
                v
            };
            let st = block_build::<K, T, NT, IPT>(&k, &v, &flags, table);
            report::<NT, IPT>(&flags, st, state, temp);
        }
    }

    /// Inserts the keys that satisfy `p` into a key-only table.
    ///
    /// # Safety
    /// As for [`build`].
    #[inline(always)]
    pub unsafe fn build_keys<
        K: HashKey,
        T: DeviceTable<Value = (), Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        n: usize,
        p: impl Fn(K) -> bool,
        table: T,
        state: *mut BuildState,
        temp: Shared<u32>,
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let (_, valid, k, mut flags) = load_keys::<K, NT, IPT>(keys, n);
            pred_keys::<K, NT, IPT>(&k, valid, &mut flags, Combine::And, p);
            let st = block_build_keys::<K, T, NT, IPT>(&k, &flags, table);
            report::<NT, IPT>(&flags, st, state, temp);
        }
    }

    /// This thread's Q4 terms of tile `tile`: `(SUM(A.v + B.v), COUNT(*))` over the matches
    /// of its probe rows (wrapping u64).
    ///
    /// # Safety
    /// `keys` and `values` hold `n` items, the tile starts below `n`; `table` is built.
    #[inline(always)]
    unsafe fn sum_tile<
        K: HashKey,
        T: DeviceTable<Value = u32, Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        values: *const u32,
        n: usize,
        tile: usize,
        table: T,
        distinct: bool,
    ) -> (u64, u64) {
        // SAFETY: forwarded contracts.
        unsafe {
            let (start, valid, k, flags) = load_keys_at::<K, NT, IPT>(keys, n, tile);
            let mut v = [0u32; IPT];
            block_load::<u32, NT, IPT>(values.add(start), valid, &mut v);
            let (mut sum, mut count) = (0u64, 0u64);
            block_lookup_each::<K, T, NT, IPT>(&k, &flags, table, distinct, |i, b| {
                sum = sum.wrapping_add(v[i] as u64 + b as u64);
                count += 1;
            });
            (sum, count)
        }
    }

    /// Adds the block's `(sum, count)` terms to `out[0]` and `out[1]`.
    ///
    /// # Safety
    /// `out` holds 2 words; every thread of the block calls it.
    #[inline(always)]
    unsafe fn add_sums<const NT: usize>(
        (sum, count): (u64, u64),
        out: *mut u64,
        temp: [Shared<u64>; 2],
    ) {
        let sum = block_reduce::<u64, NT, 1>(&[sum], usize::MAX, 0, u64::wrapping_add, temp[0]);
        let count = block_sum::<u64, NT, 1>(&[count], usize::MAX, temp[1]);
        if thread_idx() == 0 {
            // SAFETY: by contract.
            unsafe {
                u64::atomic_add(out, sum);
                u64::atomic_add(out.add(1), count);
            }
        }
    }

    /// Q4: adds `SUM(A.v + B.v)` and `COUNT(*)` over all matches of the probe rows `(keys,
    /// values)` with the table's rows `(key, payload)` to `out[0]` and `out[1]` (wrapping u64).
    /// Persistent: the blocks stride over the tiles, so the host chooses how many blocks an SM
    /// holds (see `JoinAggregate`), and each block adds to `out` once.
    ///
    /// # Safety
    /// `keys` and `values` hold `n` items; `table` is built; `out` holds 2 words.
    #[inline(always)]
    pub unsafe fn join_sum<
        K: HashKey,
        T: DeviceTable<Value = u32, Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        values: *const u32,
        n: usize,
        table: T,
        distinct: bool,
        out: *mut u64,
        temp: [Shared<u64>; 2],
    ) {
        let (tiles, grid) = (n.div_ceil(NT * IPT), grid_dim());
        let (mut sum, mut count) = (0u64, 0u64);
        let mut tile = block_idx();
        // The same tiles for every thread of the block: the loop is uniform.
        while tile < tiles {
            // SAFETY: forwarded contracts; tile < tiles.
            let (s, c) =
                unsafe { sum_tile::<K, T, NT, IPT>(keys, values, n, tile, table, distinct) };
            sum = sum.wrapping_add(s);
            count += c;
            tile += grid;
        }
        // SAFETY: forwarded contracts.
        unsafe { add_sums::<NT>((sum, count), out, temp) };
    }

    /// Copies `words` words from global memory to `dst` (16-byte vectors, then the tail) and
    /// waits for the whole block.
    ///
    /// # Safety
    /// `src` holds `words` words and is 16-byte aligned; `dst` holds `words` words; every
    /// thread of the block calls it.
    #[inline(always)]
    unsafe fn stage<const NT: usize>(src: *const u32, words: usize, dst: Shared<u32>) {
        let vectors = words / 4;
        let mut i = thread_idx();
        while i < vectors {
            // SAFETY: in bounds; 16-byte aligned on both sides (the dynamic shared buffer is).
            unsafe {
                store_vector::<u32, 4>(dst.ptr(4 * i), load_vector::<u32, 4>(src.add(4 * i)))
            };
            i += NT;
        }
        let t = 4 * vectors + thread_idx();
        if t < words {
            // SAFETY: t < words; one writer per word.
            unsafe { dst.write(t, src.add(t).read()) };
        }
        sync_threads();
    }

    /// Q4 as [`join_sum`], probing a copy of the table in shared memory: each (persistent)
    /// block copies the table's `words` words from `slots` to `smem` once, then probes the
    /// tiles `block, block + grid, ...` against that copy (generic loads that resolve to
    /// shared memory), and reduces once at the end. `table` describes `smem`.
    ///
    /// # Safety
    /// As for [`join_sum`]; `slots` holds the built table's `words` words, 16-byte aligned;
    /// `smem` is `words` words of this block's shared memory and `table` a view of it.
    #[inline(always)]
    pub unsafe fn join_sum_shared<
        K: HashKey,
        T: DeviceTable<Value = u32, Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        values: *const u32,
        n: usize,
        slots: *const u32,
        smem: Shared<u32>,
        table: T,
        distinct: bool,
        out: *mut u64,
        temp: [Shared<u64>; 2],
    ) {
        let (tiles, grid) = (n.div_ceil(NT * IPT), grid_dim());
        let mut terms = (0u64, 0u64);
        // SAFETY: forwarded contracts; the probes start after the copy's barrier and nothing
        // writes the copy afterwards.
        unsafe {
            stage::<NT>(slots, smem.len(), smem);
            let mut tile = block_idx();
            while tile < tiles {
                let (s, c) = sum_tile::<K, T, NT, IPT>(keys, values, n, tile, table, distinct);
                terms = (terms.0.wrapping_add(s), terms.1 + c);
                tile += grid;
            }
            add_sums::<NT>(terms, out, temp);
        }
    }

    /// First pass of the pair join: the number of matches of each tile to `tile_counts`, and
    /// their total added to `*total`.
    ///
    /// # Safety
    /// `keys` holds `n` items, `tile_counts` one word per tile; `table` is built.
    #[inline(always)]
    pub unsafe fn join_count<
        K: HashKey,
        T: DeviceTable<Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        n: usize,
        table: T,
        distinct: bool,
        tile_counts: *mut u32,
        total: *mut u64,
        temp: Shared<u64>,
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let (_, _, k, flags) = load_keys::<K, NT, IPT>(keys, n);
            let mut count = 0u64;
            block_lookup_each::<K, T, NT, IPT>(&k, &flags, table, distinct, |_, _| count += 1);
            let count = block_sum::<u64, NT, 1>(&[count], usize::MAX, temp);
            if thread_idx() == 0 {
                tile_counts.add(block_idx()).write(count as u32);
                u64::atomic_add(total, count);
            }
        }
    }

    /// Second pass of the pair join: writes each match as (probe row, build payload) from
    /// `tile_offsets[tile]` on, in probe-row order.
    ///
    /// # Safety
    /// As for [`join_count`], with `tile_offsets` the exclusive scan of its counts and the
    /// outputs holding their total.
    #[inline(always)]
    pub unsafe fn join_write<
        K: HashKey,
        T: DeviceTable<Value = u32, Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        n: usize,
        table: T,
        distinct: bool,
        tile_offsets: *const u32,
        out_rows: *mut u32,
        out_payloads: *mut u32,
        scan: Shared<u32>,
    ) {
        // SAFETY: forwarded contracts; every write lands in the tile's range of the output.
        unsafe {
            let (start, _, k, flags) = load_keys::<K, NT, IPT>(keys, n);
            let mut counts = [0u32; IPT];
            let mut first = [0u32; IPT];
            block_lookup_each::<K, T, NT, IPT>(&k, &flags, table, distinct, |i, b| {
                counts[i] += 1;
                first[i] = b;
            });
            let mut ranks = [0u32; IPT];
            block_exclusive_sum::<u32, u32, NT, IPT>(&counts, &mut ranks, scan);
            let base = tile_offsets.add(block_idx()).read() as usize;
            let row = rows::<NT, IPT>(start);
            if distinct {
                for i in 0..IPT {
                    if counts[i] != 0 {
                        let o = base + ranks[i] as usize;
                        out_rows.add(o).write(row[i]);
                        out_payloads.add(o).write(first[i]);
                    }
                }
            } else {
                let mut o = ranks;
                block_lookup_each::<K, T, NT, IPT>(&k, &flags, table, false, |i, b| {
                    let at = base + o[i] as usize;
                    out_rows.add(at).write(row[i]);
                    out_payloads.add(at).write(b);
                    o[i] += 1;
                });
            }
        }
    }

    /// Semi-join: the rows whose key is in the key-only table, in row order (the ordered
    /// selection's write-out; `state` is its state).
    ///
    /// # Safety
    /// `keys` and `out` hold `n` items; `state` is the zeroed selection state for the tiles
    /// (look-back epoch 0).
    #[inline(always)]
    pub unsafe fn semi_join<
        K: HashKey,
        T: DeviceTable<Value = (), Bits = K::Bits>,
        const NT: usize,
        const IPT: usize,
    >(
        keys: *const K,
        n: usize,
        table: T,
        out: *mut u32,
        state: *mut u64,
        sh: SelectShared<u32>,
    ) {
        let tiles = n.div_ceil(NT * IPT);
        // SAFETY: forwarded contracts.
        unsafe {
            let tile = crate::arch::block_idx();
            let (start, _, k, mut flags) = load_keys::<K, NT, IPT>(keys, n);
            block_probe::<K, T, NT, IPT>(&k, &mut flags, table);
            let row = rows::<NT, IPT>(start);
            block_select_write::<u32, NT, IPT, true, false>(
                &row, &flags, tile, tiles, out, state, 0, sh,
            );
        }
    }

    /// Reads `rounds` times a buffer of `n` words that fits in L2: block `b` reads slice
    /// `(b + r) mod grid` in round `r`, so an SM rarely rereads what its L1 holds. The sum goes
    /// to `*sum` only to keep the loads.
    ///
    /// # Safety
    /// `data` holds `n` words, a multiple of `grid * NT * 4`, 16-byte aligned.
    #[inline(always)]
    pub unsafe fn l2_read<const NT: usize>(
        data: *const u32,
        n: usize,
        rounds: usize,
        sum: *mut u64,
    ) {
        let grid = crate::arch::grid_dim();
        let slice = n / grid;
        let mut acc = 0u32;
        for r in 0..rounds {
            let base = ((block_idx() + r) % grid) * slice;
            let mut i = thread_idx() * 4;
            while i < slice {
                // SAFETY: in bounds and aligned (slice is a multiple of NT * 4 words).
                let v = unsafe { load_vector::<u32, 4>(data.add(base + i)) };
                acc = acc.wrapping_add(v[0] ^ v[1] ^ v[2] ^ v[3]);
                i += NT * 4;
            }
        }
        if acc == 0x9e37_79b9 {
            // Practically never taken; the compiler cannot know that.
            // SAFETY: valid address by contract.
            unsafe { u64::atomic_add(sum, 1) };
        }
    }
}

crate::kernel! {
    /// Fill kernel: `(words, n, value)`.
    JOIN_FILL = join_fill[NT = 256, IPT = 16](words: *mut u32, n: u32, value: u32) {
        // SAFETY: the host launches one block per tile of a buffer of n words.
        unsafe { fill::<NT, IPT>(words, n as usize, value) }
    }
}

/// Parameters of the key + payload builds over keys `K`: `(keys, payloads, n, op, a, b,
/// slots, ta, tb, state)`.
pub type BuildArgs<K> = (
    *const K,
    *const u32,
    u32,
    u32,
    K,
    K,
    *mut u32,
    u32,
    u32,
    *mut crate::hash::BuildState,
);
/// Parameters of the key-only builds over keys `K`: `(keys, n, op, a, b, slots, ta, tb,
/// state)`.
pub type BuildKeysArgs<K> = (
    *const K,
    u32,
    u32,
    K,
    K,
    *mut u32,
    u32,
    u32,
    *mut crate::hash::BuildState,
);
/// Parameters of the probe-and-sum kernels over keys `K`: `(keys, values, n, slots, ta, tb,
/// distinct, out)`.
pub type ProbeSumArgs<K> = (
    *const K,
    *const u32,
    u32,
    *const u32,
    u32,
    u32,
    u32,
    *mut u64,
);
/// Parameters of the match-counting kernels over keys `K`: `(keys, n, slots, ta, tb, distinct,
/// tile_counts, total)`.
pub type ProbeCountArgs<K> = (*const K, u32, *const u32, u32, u32, u32, *mut u32, *mut u64);
/// Parameters of the match-writing kernels over keys `K`: `(keys, n, slots, ta, tb, distinct,
/// tile_offsets, out_rows, out_payloads)`.
pub type ProbeWriteArgs<K> = (
    *const K,
    u32,
    *const u32,
    u32,
    u32,
    u32,
    *const u32,
    *mut u32,
    *mut u32,
);
/// Parameters of the shared-memory probe-and-sum kernels over keys `K`: `(keys, values, n,
/// slots, ta, tb, words, distinct, out)`.
pub type ProbeSharedArgs<K> = (
    *const K,
    *const u32,
    u32,
    *const u32,
    u32,
    u32,
    u32,
    u32,
    *mut u64,
);
/// Parameters of the semi-join kernels over keys `K`: `(keys, n, slots, ta, tb, out, state)`.
pub type SemiJoinArgs<K> = (*const K, u32, *const u32, u32, u32, *mut u32, *mut u64);

/// Build kernels of the key + payload tables: `(keys, payloads, n, op, a, b, slots, ta, tb,
/// state)` with keys and predicate constants of the key type; the `_rows` ones store the row
/// index as payload and ignore `payloads`.
macro_rules! build_kernels {
    ($($spec:ident = $name:ident: $key:ty, $table:ty, rows = $rows:literal;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = 256, IPT = 8](
                keys: *const $key, payloads: *const u32, n: u32, op: u32, a: $key, b: $key,
                slots: *mut u32, ta: u32, tb: u32, state: *mut $crate::hash::BuildState
            ) {
                let temp = $crate::shared_array!(build_temp: [u32; NT / 32 + 1]);
                // SAFETY: the host launches one block per tile with columns of n items, a
                // cleared or built table described by (slots, ta, tb) and the build state.
                unsafe {
                    build::<$key, $table, NT, IPT, $rows>(keys, payloads, n as usize,
                        |k| $crate::predicate::eval(op, k, a, b),
                        <$table as TableArgs>::from_args(slots, ta, tb), state, temp)
                }
            }
        }
    )*};
}

build_kernels! {
    HASH_BUILD = hash_build: u32, HashMap<u32>, rows = false;
    HASH_BUILD_ROWS = hash_build_rows: u32, HashMap<u32>, rows = true;
    PERFECT_BUILD = perfect_build: u32, PerfectMap<u32>, rows = false;
    PERFECT_BUILD_ROWS = perfect_build_rows: u32, PerfectMap<u32>, rows = true;
    HASH_BUILD_I32 = hash_build_i32: i32, HashMap<u32>, rows = false;
    HASH_BUILD_ROWS_I32 = hash_build_rows_i32: i32, HashMap<u32>, rows = true;
    PERFECT_BUILD_I32 = perfect_build_i32: i32, PerfectMap<u32>, rows = false;
    PERFECT_BUILD_ROWS_I32 = perfect_build_rows_i32: i32, PerfectMap<u32>, rows = true;
    HASH_BUILD_U64 = hash_build_u64: u64, HashMap<u32, u64>, rows = false;
    HASH_BUILD_ROWS_U64 = hash_build_rows_u64: u64, HashMap<u32, u64>, rows = true;
}

/// Build kernels of the key-only tables: `(keys, n, op, a, b, slots, ta, tb, state)`.
macro_rules! build_keys_kernels {
    ($($spec:ident = $name:ident: $key:ty, $table:ty;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = 256, IPT = 8](
                keys: *const $key, n: u32, op: u32, a: $key, b: $key,
                slots: *mut u32, ta: u32, tb: u32, state: *mut $crate::hash::BuildState
            ) {
                let temp = $crate::shared_array!(build_temp: [u32; NT / 32 + 1]);
                // SAFETY: as for the key + payload builds.
                unsafe {
                    build_keys::<$key, $table, NT, IPT>(keys, n as usize,
                        |k| $crate::predicate::eval(op, k, a, b),
                        <$table as TableArgs>::from_args(slots, ta, tb), state, temp)
                }
            }
        }
    )*};
}

build_keys_kernels! {
    HASH_SET_BUILD = hash_set_build: u32, HashSet;
    PERFECT_SET_BUILD = perfect_set_build: u32, PerfectSet;
    HASH_SET_BUILD_I32 = hash_set_build_i32: i32, HashSet;
    PERFECT_SET_BUILD_I32 = perfect_set_build_i32: i32, PerfectSet;
    HASH_SET_BUILD_U64 = hash_set_build_u64: u64, HashSet<u64>;
}

/// Probe kernels of the key + payload tables: `_sum` `(keys, values, n, slots, ta, tb,
/// distinct, out)`, `_count` `(keys, n, slots, ta, tb, distinct, tile_counts, total)`, `_write`
/// `(keys, n, slots, ta, tb, distinct, tile_offsets, out_rows, out_payloads)`.
macro_rules! probe_kernels {
    ($($key:ty, $table:ty: $sum:ident = $sum_name:ident, $count:ident = $count_name:ident, $write:ident = $write_name:ident;)*) => {$(
        $crate::kernel! {
            $sum = $sum_name[NT = 256, IPT = 8](
                keys: *const $key, values: *const u32, n: u32, slots: *const u32, ta: u32, tb: u32,
                distinct: u32, out: *mut u64
            ) {
                let temp = [
                    $crate::shared_array!(join_sum_temp: [u64; NT / 32 + 1]),
                    $crate::shared_array!(join_count_temp: [u64; NT / 32 + 1]),
                ];
                // SAFETY: the host launches any grid (the blocks stride over the tiles) with
                // columns of n items, a built table and two zeroed output words.
                unsafe {
                    join_sum::<$key, $table, NT, IPT>(keys, values, n as usize,
                        <$table as TableArgs>::from_args(slots.cast_mut(), ta, tb), distinct != 0, out, temp)
                }
            }
        }
        $crate::kernel! {
            $count = $count_name[NT = 256, IPT = 8](
                keys: *const $key, n: u32, slots: *const u32, ta: u32, tb: u32, distinct: u32,
                tile_counts: *mut u32, total: *mut u64
            ) {
                let temp = $crate::shared_array!(join_count_temp: [u64; NT / 32 + 1]);
                // SAFETY: the host launches one block per tile, with one count word per tile.
                unsafe {
                    join_count::<$key, $table, NT, IPT>(keys, n as usize,
                        <$table as TableArgs>::from_args(slots.cast_mut(), ta, tb), distinct != 0,
                        tile_counts, total, temp)
                }
            }
        }
        $crate::kernel! {
            $write = $write_name[NT = 256, IPT = 8](
                keys: *const $key, n: u32, slots: *const u32, ta: u32, tb: u32, distinct: u32,
                tile_offsets: *const u32, out_rows: *mut u32, out_payloads: *mut u32
            ) {
                let scan = $crate::shared_array!(join_scan: [u32; $crate::layout::scan_temp_words(NT, IPT, 4)]);
                // SAFETY: as for the count kernel, with the offsets its counts scan to and
                // outputs holding their total.
                unsafe {
                    join_write::<$key, $table, NT, IPT>(keys, n as usize,
                        <$table as TableArgs>::from_args(slots.cast_mut(), ta, tb), distinct != 0,
                        tile_offsets, out_rows, out_payloads, scan)
                }
            }
        }
    )*};
}

probe_kernels! {
    u32, HashMap<u32>: HASH_JOIN_SUM = hash_join_sum, HASH_JOIN_COUNT = hash_join_count, HASH_JOIN_WRITE = hash_join_write;
    u32, PerfectMap<u32>: PERFECT_JOIN_SUM = perfect_join_sum, PERFECT_JOIN_COUNT = perfect_join_count, PERFECT_JOIN_WRITE = perfect_join_write;
    u64, HashMap<u32, u64>: HASH_JOIN_SUM_U64 = hash_join_sum_u64, HASH_JOIN_COUNT_U64 = hash_join_count_u64, HASH_JOIN_WRITE_U64 = hash_join_write_u64;
}

/// Probe-and-aggregate kernels against a copy of the table in dynamic shared memory
/// (`words * 4` bytes given at launch), on a persistent grid: `(keys, values, n, slots, ta, tb,
/// words, distinct, out)`. 1024 threads so that one block per SM (a table of over about 110 KB)
/// still keeps enough loads of the probe columns in flight.
macro_rules! probe_shared_kernels {
    ($($spec:ident = $name:ident: $key:ty, $table:ty;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = 1024, IPT = 4, MIN_BLOCKS = 1](
                keys: *const $key, values: *const u32, n: u32, slots: *const u32, ta: u32,
                tb: u32, words: u32, distinct: u32, out: *mut u64
            ) {
                let temp = [
                    $crate::shared_array!(join_sum_temp: [u64; NT / 32 + 1]),
                    $crate::shared_array!(join_count_temp: [u64; NT / 32 + 1]),
                ];
                // SAFETY: the host launches with `words * 4` bytes of dynamic shared memory, a
                // built table of `words` words at `slots`, columns of n items and two zeroed
                // output words.
                unsafe {
                    let smem = $crate::arch::dynamic_shared::<u32>(words as usize);
                    join_sum_shared::<$key, $table, NT, IPT>(keys, values, n as usize, slots, smem,
                        <$table as TableArgs>::from_args(smem.ptr(0), ta, tb), distinct != 0,
                        out, temp)
                }
            }
        }
    )*};
}

probe_shared_kernels! {
    HASH_JOIN_SUM_SHARED = hash_join_sum_shared: u32, HashMap<u32>;
    PERFECT_JOIN_SUM_SHARED = perfect_join_sum_shared: u32, PerfectMap<u32>;
    HASH_JOIN_SUM_SHARED_U64 = hash_join_sum_shared_u64: u64, HashMap<u32, u64>;
}

/// Semi-join kernels of the key-only tables: `(keys, n, slots, ta, tb, out, state)`.
macro_rules! semi_join_kernels {
    ($($spec:ident = $name:ident: $key:ty, $table:ty;)*) => {$(
        $crate::kernel! {
            $spec = $name[NT = 256, IPT = 16](
                keys: *const $key, n: u32, slots: *const u32, ta: u32, tb: u32, out: *mut u32,
                state: *mut u64
            ) {
                let sh = SelectShared {
                    buf: $crate::shared_array!(semi_buf: [u32; NT * IPT + NT]),
                    scan: $crate::shared_array!(semi_scan: [u32; $crate::layout::scan_temp_words(NT, IPT, 4)]),
                    slots: $crate::shared_array!(semi_slots: [u32; 2]),
                };
                // SAFETY: the host launches one block per tile with zeroed selection state, a
                // built set and an output of n items.
                unsafe {
                    semi_join::<$key, $table, NT, IPT>(keys, n as usize,
                        <$table as TableArgs>::from_args(slots.cast_mut(), ta, tb), out, state, sh)
                }
            }
        }
    )*};
}

semi_join_kernels! {
    HASH_SEMI_JOIN = hash_semi_join: u32, HashSet;
    PERFECT_SEMI_JOIN = perfect_semi_join: u32, PerfectSet;
    HASH_SEMI_JOIN_U64 = hash_semi_join_u64: u64, HashSet<u64>;
}

crate::kernel! {
    /// L2 bandwidth probe: `(data, n, rounds, sum)`, launched on a fixed grid.
    JOIN_L2_READ = join_l2_read[NT = 256, IPT = 4](data: *const u32, n: u32, rounds: u32, sum: *mut u64) {
        // SAFETY: the host passes a buffer of n words, a multiple of grid * NT * 4.
        unsafe { l2_read::<NT>(data, n as usize, rounds as usize, sum) }
    }
}
