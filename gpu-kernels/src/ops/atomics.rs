//! The atomics micro-benchmark of seed 003 (§2.2): every thread adds its share of the input
//! into one target, with an atomic or with a plain load, add and store (which loses updates:
//! the synchronization-free bound), the target in device memory or in each block's shared
//! memory (whose total one atomic per block adds to the result). The benchmark varies the
//! number of threads; each thread takes rows `t, t + threads, ..` (coalesced). Also the
//! group-by's global-atomics anchor ([`ATOMICS_GROUPBY`]), the same loop with an atomic per
//! row into tables indexed by the key.

/// The parameter list of every probe: input, rows, result (zeroed).
pub type AtomicsArgs = (*const u32, u32, *mut u32);

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{
        Atomic, block_dim, global_idx, grid_dim, load_relaxed_u32, red_global, store_relaxed_u32,
        sync_threads, thread_idx,
    };

    /// Adds this thread's rows into `target` (a global address, or a shared one in generic
    /// form) with an atomic (`ATOMIC`) or a relaxed load and store.
    ///
    /// # Safety
    /// `input` holds `n` values; `target` is valid.
    #[inline(always)]
    pub unsafe fn add_rows<const ATOMIC: bool>(input: *const u32, n: u32, target: *mut u32) {
        let step = grid_dim() * block_dim();
        let mut i = global_idx();
        while i < n as usize {
            // SAFETY: i < n; target valid by contract.
            unsafe {
                let v = input.add(i).read();
                if ATOMIC {
                    u32::atomic_add(target, v);
                } else {
                    store_relaxed_u32(target, load_relaxed_u32(target).wrapping_add(v));
                }
            }
            i += step;
        }
    }

    /// Adds this thread's rows into the dense tables: a global atomic on the count and one
    /// on the 64-bit sum of each row's key.
    ///
    /// # Safety
    /// `keys` and `values` hold `n` values; `counts` and `sums` hold an entry for every key.
    #[inline(always)]
    pub unsafe fn group_rows(
        keys: *const u32,
        values: *const u32,
        n: u32,
        counts: *mut u32,
        sums: *mut u64,
    ) {
        let step = grid_dim() * block_dim();
        let mut i = global_idx();
        while i < n as usize {
            // SAFETY: i < n; every key has its entries, by contract.
            unsafe {
                let (k, v) = (keys.add(i).read() as usize, values.add(i).read());
                red_global::add_u32(counts.add(k), 1);
                red_global::add_u64(sums.add(k), v as u64);
            }
            i += step;
        }
    }

    /// The probe with its target in the block's shared memory, merged into `out`.
    ///
    /// # Safety
    /// As for [`add_rows`]; `out` is a valid global address.
    #[inline(always)]
    pub unsafe fn shared_target<const ATOMIC: bool>(input: *const u32, n: u32, out: *mut u32) {
        let word = crate::shared_array!(atomics_word: [u32; 1]);
        if thread_idx() == 0 {
            // SAFETY: one word.
            unsafe { word.write(0, 0) };
        }
        sync_threads();
        // SAFETY: forwarded; the word's generic address.
        unsafe { add_rows::<ATOMIC>(input, n, word.ptr(0)) };
        sync_threads();
        if thread_idx() == 0 {
            // SAFETY: written before the barrier; out valid by contract.
            unsafe { red_global::add_u32(out, word.read(0)) };
        }
    }
}

crate::kernel! {
    /// Atomic adds into one word of device memory.
    ATOMICS_GLOBAL_ATOMIC = atomics_global_atomic[NT = 1024, IPT = 1, MIN_BLOCKS = 1](input: *const u32, n: u32, out: *mut u32) {
        // SAFETY: n values; out a valid word.
        unsafe { device::add_rows::<true>(input, n, out) }
    }
}

crate::kernel! {
    /// Plain (relaxed) load, add and store on one word of device memory.
    ATOMICS_GLOBAL_PLAIN = atomics_global_plain[NT = 1024, IPT = 1, MIN_BLOCKS = 1](input: *const u32, n: u32, out: *mut u32) {
        // SAFETY: as above.
        unsafe { device::add_rows::<false>(input, n, out) }
    }
}

crate::kernel! {
    /// Atomic adds into one word of each block's shared memory.
    ATOMICS_SHARED_ATOMIC = atomics_shared_atomic[NT = 1024, IPT = 1, MIN_BLOCKS = 1](input: *const u32, n: u32, out: *mut u32) {
        // SAFETY: as above.
        unsafe { device::shared_target::<true>(input, n, out) }
    }
}

crate::kernel! {
    /// Plain (relaxed) load, add and store on one word of each block's shared memory.
    ATOMICS_SHARED_PLAIN = atomics_shared_plain[NT = 1024, IPT = 1, MIN_BLOCKS = 1](input: *const u32, n: u32, out: *mut u32) {
        // SAFETY: as above.
        unsafe { device::shared_target::<false>(input, n, out) }
    }
}

crate::kernel! {
    /// The global-atomics anchor of the group-by (issue 22's "global atomics"): count and
    /// 64-bit sum of each row's value in dense tables indexed by the key, a global atomic
    /// each, no shared memory.
    ATOMICS_GROUPBY = atomics_groupby[NT = 256, IPT = 1](keys: *const u32, values: *const u32, n: u32, counts: *mut u32, sums: *mut u64) {
        // SAFETY: n keys and values; the tables cover every key (the host's contract).
        unsafe { device::group_rows(keys, values, n, counts, sums) }
    }
}

/// The probes, indexed `[shared][atomic]`.
pub const ATOMICS: [[crate::spec::KernelSpec<AtomicsArgs>; 2]; 2] = [
    [ATOMICS_GLOBAL_PLAIN, ATOMICS_GLOBAL_ATOMIC],
    [ATOMICS_SHARED_PLAIN, ATOMICS_SHARED_ATOMIC],
];
