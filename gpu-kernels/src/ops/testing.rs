//! Kernels that exercise the device layer and the block-wide functions directly, so the host
//! tests can check each of them on the GPU against values computed on the CPU.

#[cfg(target_arch = "nvptx64")]
use crate::arch::*;
#[cfg(target_arch = "nvptx64")]
use crate::block::*;

/// Values each thread of [`ARCH_IDS`] writes.
pub const IDS_PER_THREAD: usize = 8;
/// Values each thread of [`ARCH_WARP`] writes.
pub const WARP_PER_THREAD: usize = 14;
/// Slots of the atomics test region (u64 words; 32-bit types use the low half).
pub const ATOMIC_SLOTS: usize = 20;

crate::kernel! {
    /// Per thread: thread, block, block size, grid size, lane, warp, global index, lanemask_lt.
    ARCH_IDS = arch_ids[NT = 64, IPT = 1](out: *mut u32) {
        let v = [thread_idx() as u32, block_idx() as u32, block_dim() as u32, grid_dim() as u32,
                 lane_id(), warp_id() as u32, global_idx() as u32, lanemask_lt()];
        for (i, x) in v.into_iter().enumerate() {
            // SAFETY: the host allocates IDS_PER_THREAD words per thread.
            unsafe { out.add(global_idx() * IDS_PER_THREAD + i).write(x) };
        }
    }
}

crate::kernel! {
    /// Per thread, for `v = input[global]`: shfl idx(5), up(3), down(3), xor(6); ballot(v odd);
    /// any(v == 12345); all(v != 0); popc(v); f32 shfl idx(lane 31 - lane) of v as f32 (bits);
    /// u64 shfl xor(1) of (v << 32 | lane), low and high words; warp inclusive sum of v & 0xff;
    /// match_any(v & 7); match_bits(v, 3).
    ARCH_WARP = arch_warp[NT = 128, IPT = 1](input: *const u32, out: *mut u32) {
        let g = global_idx();
        // SAFETY: one input per thread.
        let v = unsafe { input.add(g).read() };
        let lane = lane_id();
        let w = shfl_xor(((v as u64) << 32) | lane as u64, 1);
        let r = [
            shfl_idx(v, 5), shfl_up(v, 3), shfl_down(v, 3), shfl_xor(v, 6),
            ballot(v & 1 == 1), any(v == 12345) as u32, all(v != 0) as u32, popc(v),
            shfl_idx(v as f32, 31 - lane).to_bits(), w as u32, (w >> 32) as u32,
            warp_inclusive_sum(v & 0xff), match_any(v & 7), match_bits(v, 3),
        ];
        for (i, x) in r.into_iter().enumerate() {
            // SAFETY: the host allocates WARP_PER_THREAD words per thread.
            unsafe { out.add(g * WARP_PER_THREAD + i).write(x) };
        }
    }
}

/// Applies one of each atomic to the slots at `base` with this thread's value `v`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn atomics_on(base: *mut u64, v: u32) {
    let s = |i: usize| base.wrapping_add(i);
    let vi = v as i32 - 1000;
    // SAFETY: the caller passes ATOMIC_SLOTS valid words.
    unsafe {
        u32::atomic_add(s(0).cast(), v);
        u32::atomic_min(s(1).cast(), v);
        u32::atomic_max(s(2).cast(), v);
        i32::atomic_add(s(3).cast(), vi);
        i32::atomic_min(s(4).cast(), vi);
        i32::atomic_max(s(5).cast(), vi);
        u64::atomic_add(s(6), (v as u64) << 20);
        u64::atomic_min(s(7), (v as u64) << 20);
        u64::atomic_max(s(8), (v as u64) << 20);
        i64::atomic_add(s(9).cast(), -(v as i64) << 20);
        i64::atomic_min(s(10).cast(), -(v as i64) << 20);
        i64::atomic_max(s(11).cast(), -(v as i64) << 20);
        f32::atomic_add(s(12).cast(), v as f32 * 0.5);
        f32::atomic_min(s(13).cast(), v as f32 * 0.5);
        f32::atomic_max(s(14).cast(), v as f32 * 0.5);
        f64::atomic_add(s(15).cast(), v as f64 * 0.25);
        f64::atomic_min(s(16).cast(), v as f64 * 0.25);
        f64::atomic_max(s(17).cast(), v as f64 * 0.25);
        // Increment through CAS retries: ends at the number of threads.
        let p: *mut u32 = s(18).cast();
        let mut old = core::ptr::read_volatile(p);
        loop {
            let seen = u32::atomic_cas(p, old, old + 1);
            if seen == old {
                break;
            }
            old = seen;
        }
        u64::atomic_exch(s(19), v as u64);
    }
}

crate::kernel! {
    /// Every thread applies `atomics_on` to the global region and to a per-block shared
    /// copy (initialised from the global region's initial values `init`); block `b` writes
    /// its shared result to `out[b * ATOMIC_SLOTS..]`.
    ARCH_ATOMICS = arch_atomics[NT = 256, IPT = 1](input: *const u32, init: *const u64, global: *mut u64, out: *mut u64) {
        let sh = crate::shared_array!(atomics_smem: [u64; ATOMIC_SLOTS]);
        let t = thread_idx();
        if t < ATOMIC_SLOTS {
            // SAFETY: t < ATOMIC_SLOTS.
            unsafe { sh.write(t, init.add(t).read()) };
        }
        sync_threads();
        // SAFETY: one input per thread; both regions hold ATOMIC_SLOTS words.
        unsafe {
            let v = input.add(global_idx()).read();
            atomics_on(global, v);
            atomics_on(sh.ptr(0), v);
        }
        sync_threads();
        if t < ATOMIC_SLOTS {
            // SAFETY: per-block output rows.
            unsafe { out.add(block_idx() * ATOMIC_SLOTS + t).write(sh.read(t)) };
        }
    }
}

crate::kernel! {
    /// Static shared memory: reverses each block's 256 items.
    ARCH_SHARED_STATIC = arch_shared_static[NT = 256, IPT = 1](input: *const u32, out: *mut u32) {
        let tile = crate::shared_array!(reverse_tile: [u32; NT]);
        let (t, g) = (thread_idx(), global_idx());
        // SAFETY: one item per thread; t < NT.
        unsafe {
            tile.write(t, input.add(g).read());
            sync_threads();
            out.add(g).write(tile.read(NT - 1 - t));
        }
    }
}

crate::kernel! {
    /// Dynamic shared memory (launched with NT * 4 bytes): each thread takes its right
    /// neighbour's item, wrapping within the block.
    ARCH_SHARED_DYNAMIC = arch_shared_dynamic[NT = 256, IPT = 1](input: *const u32, out: *mut u32) {
        let (t, g) = (thread_idx(), global_idx());
        // SAFETY: the host launches with NT words of dynamic shared memory.
        unsafe {
            let tile = dynamic_shared::<u32>(NT);
            tile.write(t, input.add(g).read());
            sync_threads();
            out.add(g).write(tile.read((t + 1) % NT));
        }
    }
}

crate::kernel! {
    /// Vector accesses: per thread, copies 16 bytes as `[u32; 4]`, 16 as `[u64; 2]` and 8 as
    /// `[u32; 2]` from `input` to `out` (each region `NT * grid` vectors long).
    ARCH_VECTOR = arch_vector[NT = 128, IPT = 1](a_in: *const u32, a_out: *mut u32, b_in: *const u64, b_out: *mut u64, c_in: *const u32, c_out: *mut u32) {
        let g = global_idx();
        // SAFETY: the host sizes each region for one vector per thread, 16-byte aligned.
        unsafe {
            store_vector::<u32, 4>(a_out.add(g * 4), load_vector::<u32, 4>(a_in.add(g * 4)));
            store_vector::<u64, 2>(b_out.add(g * 2), load_vector::<u64, 2>(b_in.add(g * 2)));
            store_vector::<u32, 2>(c_out.add(g * 2), load_vector::<u32, 2>(c_in.add(g * 2)));
        }
    }
}

crate::kernel! {
    /// Fences: each block writes its tile's sum, fences, and bumps a counter; the block that
    /// arrives last adds up all partials into `result` (CUDA's threadFenceReduction).
    ARCH_FENCE_REDUCE = arch_fence_reduce[NT = 128, IPT = 4](input: *const u32, n: u32, partials: *mut u64, counter: *mut u32, result: *mut u64) {
        let temp = crate::shared_array!(fence_temp: [u64; NT / 32 + 1]);
        let last = crate::shared_array!(fence_last: [u32; 1]);
        let start = block_idx() * NT * IPT;
        let valid = (n as usize - start).min(NT * IPT);
        let mut items = [0u32; IPT];
        // SAFETY: tile within the input; one partial per block; valid global scalars.
        unsafe {
            block_load::<u32, NT, IPT>(input.add(start), valid, &mut items);
            let mine = [items.iter().map(|&x| x as u64).sum::<u64>()];
            let s = block_sum::<u64, NT, 1>(&mine, usize::MAX, temp);
            if thread_idx() == 0 {
                partials.add(block_idx()).write_volatile(s);
                fence_device();
                let arrived = u32::atomic_add(counter, 1);
                last.write(0, (arrived as usize == grid_dim() - 1) as u32);
            }
            sync_threads();
            if last.read(0) == 1 && thread_idx() == 0 {
                fence_device();
                let mut total = 0u64;
                for b in 0..grid_dim() {
                    total += partials.add(b).read_volatile();
                }
                result.write(total);
            }
        }
    }
}

crate::kernel! {
    /// Per item: `exp(x)` and `sigmoid(x)`.
    ARCH_MATH = arch_math[NT = 128, IPT = 1](input: *const f32, n: u32, exp_out: *mut f32, sigmoid_out: *mut f32) {
        let g = global_idx();
        if g < n as usize {
            // SAFETY: g < n.
            unsafe {
                let x = input.add(g).read();
                exp_out.add(g).write(exp(x));
                sigmoid_out.add(g).write(sigmoid(x));
            }
        }
    }
}

crate::kernel! {
    /// BlockPred with Set / Or / And: `flags = (x < a OR x > b) AND x != c`, written as 0 / 1.
    BLOCK_PRED_I32 = block_pred_i32[NT = 128, IPT = 8](input: *const i32, n: u32, a: i32, b: i32, c: i32, out: *mut u32) {
        let start = block_idx() * NT * IPT;
        let valid = (n as usize - start).min(NT * IPT);
        let mut items = [0i32; IPT];
        let mut flags = [false; IPT];
        // SAFETY: the tile lies within both buffers.
        unsafe {
            block_load::<i32, NT, IPT>(input.add(start), valid, &mut items);
            block_pred::<i32, NT, IPT>(&items, valid, &mut flags, Combine::Set, |x| x < a);
            block_pred::<i32, NT, IPT>(&items, valid, &mut flags, Combine::Or, |x| x > b);
            block_pred::<i32, NT, IPT>(&items, valid, &mut flags, Combine::And, |x| x != c);
            let f: [u32; IPT] = core::array::from_fn(|k| flags[k] as u32);
            // u32 flags share i32's arrangement (same size).
            block_store::<u32, NT, IPT>(out.add(start), valid, &f);
        }
    }
}

crate::kernel! {
    /// WarpCompact, coded and by flags: each warp packs the rows of its tile part whose
    /// `input` is non-zero with the input's low four bits as their code, and the survivor
    /// rounds (two per lane) add the code to `visits` at each packed row; then it packs the
    /// same rows by flag and adds 16 to each; then both again sparsely
    /// ([`warp_compact_sparse`], adding 256, and [`warp_compact_coded_sparse`] with a
    /// two-bit code, 1 plus the input's low bit, adding the code times 4096).
    /// `counts[block * warps + warp]` gets the coded compactions' count in its low and the
    /// flag compactions' in its high 16 bits (0xffff where a sparse one's count differs).
    BLOCK_COMPACT = block_compact[NT = 128, IPT = 12](input: *const u32, n: u32, visits: *mut u32, counts: *mut u32) {
        let start = block_idx() * NT * IPT;
        let valid = (n as usize - start).min(NT * IPT);
        let buf = crate::shared_array!(compact_buf: [u16; compact_slots(NT, IPT)]);
        let mut items = [0u32; IPT];
        let mut flags = [false; IPT];
        // SAFETY: the tile lies within the buffers; every lane of every warp takes part; codes
        // are four bits.
        unsafe {
            block_load::<u32, NT, IPT>(input.add(start), valid, &mut items);
            block_pred::<u32, NT, IPT>(&items, valid, &mut flags, Combine::Set, |x| x != 0);
            let codes: [u32; IPT] = core::array::from_fn(|k| if flags[k] { items[k] & 15 } else { 0 });
            let coded = warp_compact_coded::<u32, NT, IPT, 4>(&codes, buf);
            for_each_survivor_coded::<u32, NT, IPT, 2, 4>(buf, coded, |offsets, codes, live| {
                for s in 0..2 {
                    if live[s] {
                        u32::atomic_add(visits.add(start + offsets[s] as usize), codes[s]);
                    }
                }
            });
            let flagged = warp_compact::<u32, NT, IPT>(&flags, buf);
            for_each_survivor::<u32, NT, IPT, 2>(buf, flagged, |offsets, live| {
                for s in 0..2 {
                    if live[s] {
                        u32::atomic_add(visits.add(start + offsets[s] as usize), 16);
                    }
                }
            });
            let sparse = warp_compact_sparse::<u32, NT, IPT>(&flags, buf);
            for_each_survivor::<u32, NT, IPT, 2>(buf, sparse, |offsets, live| {
                for s in 0..2 {
                    if live[s] {
                        u32::atomic_add(visits.add(start + offsets[s] as usize), 256);
                    }
                }
            });
            // A lane's codes must fit one word: two bits each, 1 or 2.
            let codes: [u32; IPT] = codes.map(|c| if c != 0 { 1 + (c & 1) } else { 0 });
            let coded_sparse = warp_compact_coded_sparse::<u32, NT, IPT, 2>(&codes, buf);
            for_each_survivor_coded::<u32, NT, IPT, 2, 2>(buf, coded_sparse, |offsets, codes, live| {
                for s in 0..2 {
                    if live[s] {
                        u32::atomic_add(visits.add(start + offsets[s] as usize), codes[s] << 12);
                    }
                }
            });
            if lane_id() == 0 {
                // The sparse compactions must count the rows the others do.
                let coded = if coded_sparse == coded { coded } else { 0xffff };
                let flagged = if sparse == flagged { flagged } else { 0xffff };
                counts.add(block_idx() * (NT / 32) + warp_id()).write(coded | flagged << 16);
            }
        }
    }
}

/// Rows each warp of [`BLOCK_TAIL_QUEUE`] pushes, 64 a push (two per lane).
pub const TAIL_QUEUE_WARP_ROWS: usize = 64 * 40;

/// One pass of [`BLOCK_TAIL_QUEUE`]: the warp's rows from `base` pushed through `queue` in
/// rounds of `R` rows per lane, each live row adding its word shifted `8 * (R - 1)` bits.
///
/// # Safety
/// Called by every lane of the warp; `queue` holds `tail_slots(NT, R)` entries; `input`
/// holds `n` rows and `visits` as many.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn tail_queue_pass<const R: usize>(
    queue: TailQueue,
    base: usize,
    (input, n): (*const u32, u32),
    (visits, bad): (*mut u32, *mut u32),
) {
    let lane = lane_id() as usize;
    let visit = #[inline(always)]
    |flush: bool| {
        #[inline(always)]
        move |rows: &[u32; 2], words: &[u32; 2], live: &[bool; 2]| {
            for s in 0..2 {
                // SAFETY: live rows are below n; one bad counter.
                unsafe {
                    if live[s] {
                        u32::atomic_add(visits.add(rows[s] as usize), words[s] << (8 * (R - 1)));
                    }
                    let expected = s < R;
                    if (!flush && live[s] != expected) || (flush && live[s] && !expected) {
                        u32::atomic_add(bad, 1);
                    }
                }
            }
        }
    };
    let mut held = 0u32;
    for p in 0..TAIL_QUEUE_WARP_ROWS / 64 {
        let r = [0, 1].map(|s| (base + p * 64 + s * 32 + lane) as u32);
        // SAFETY: rows below n only.
        let w = r.map(|r| {
            if r < n {
                unsafe { input.add(r as usize).read() }
            } else {
                0
            }
        });
        // SAFETY: forwarded.
        unsafe { queue.push::<2, R, 2>(&mut held, &r, &w, &w.map(|x| x != 0), visit(false)) };
    }
    // SAFETY: forwarded.
    unsafe { queue.flush::<R, 2>(held, visit(true)) };
}

crate::kernel! {
    /// TailQueue: each warp pushes its [`TAIL_QUEUE_WARP_ROWS`] rows, 64 at a time, those
    /// whose `input` is non-zero (at most 255) flagged, with the input as their word, into a
    /// queue of rounds of one row per lane, then of two; each round adds the word of its
    /// live rows to `visits` at their row (shifted 8 bits in the second pass). `bad` counts
    /// the rounds' slots whose liveness breaks the promise: every row of a full round live,
    /// the slots past its rows dead.
    BLOCK_TAIL_QUEUE = block_tail_queue[NT = 64, IPT = 1](input: *const u32, n: u32, visits: *mut u32, bad: *mut u32) {
        let queue = TailQueue {
            rows: crate::shared_array!(tail_rows: [u32; tail_slots(NT, 2)]),
            words: crate::shared_array!(tail_words: [u32; tail_slots(NT, 2)]),
        };
        let base = (block_idx() * (NT / 32) + warp_id()) * TAIL_QUEUE_WARP_ROWS;
        // SAFETY: every lane of every warp takes part in both passes; the queue holds
        // tail_slots(NT, 2) entries, enough for both.
        unsafe {
            tail_queue_pass::<1>(queue, base, (input, n), (visits, bad));
            // The second pass lays the warps' parts out differently: every warp is done with
            // the first's first.
            sync_threads();
            tail_queue_pass::<2>(queue, base, (input, n), (visits, bad));
        }
    }
}

/// Consecutive tiles each block of [`BLOCK_QUEUED_SURVIVORS`] walks, carrying its warps'
/// survivors from one to the next.
pub const QUEUED_BLOCK_TILES: usize = 12;

crate::kernel! {
    /// Survivors queued across tiles ([`survivor_rounds`] queued, then
    /// [`flush_queued_survivors`]): each block walks [`QUEUED_BLOCK_TILES`] tiles, the rows
    /// whose `input` is non-zero flagged with its low four bits as their code, and each round
    /// of two rows per lane adds the codes of its live rows to `visits` at their row. `bad`
    /// counts the slots that break the promises: a full round's slot dead, or a flush's slot
    /// live past the carried rows or dead before them.
    BLOCK_QUEUED_SURVIVORS = block_queued_survivors[NT = 64, IPT = 8](input: *const u32, n: u32, visits: *mut u32, bad: *mut u32) {
        let buf = crate::shared_array!(queued_buf: [u16; compact_slots(NT, IPT)]);
        let carry = Carry {
            rows: crate::shared_array!(queued_rows: [u32; carry_slots(NT, 2)]),
            codes: crate::shared_array!(queued_codes: [u8; carry_slots(NT, 2)]),
        };
        let visit = #[inline(always)]
        |flush: Option<u32>| {
            let lane = lane_id();
            #[inline(always)]
            move |_: usize, rows: &[u32; 2], codes: &[u32; 2], live: &[bool; 2]| {
                for s in 0..2 {
                    // SAFETY: live rows are the compactions', below n; one bad counter.
                    unsafe {
                        if live[s] {
                            u32::atomic_add(visits.add(rows[s] as usize), codes[s]);
                        }
                        let expected = flush.is_none_or(|carried| s as u32 * 32 + lane < carried);
                        if live[s] != expected {
                            u32::atomic_add(bad, 1);
                        }
                    }
                }
            }
        };
        let mut carried = 0u32;
        for t in 0..QUEUED_BLOCK_TILES {
            let start = (block_idx() * QUEUED_BLOCK_TILES + t) * NT * IPT;
            if start >= n as usize {
                break;
            }
            let valid = (n as usize - start).min(NT * IPT);
            let mut items = [0u32; IPT];
            let mut flags = [false; IPT];
            // SAFETY: the tile lies within the input; every lane of every warp takes part;
            // codes are four bits; the carry holds carry_slots(NT, 2) entries.
            unsafe {
                block_load::<u32, NT, IPT>(input.add(start), valid, &mut items);
                block_pred::<u32, NT, IPT>(&items, valid, &mut flags, Combine::Set, |x| x != 0);
                let codes: [u32; IPT] =
                    core::array::from_fn(|k| if flags[k] { items[k] & 15 } else { 0 });
                let count = warp_compact_coded::<u32, NT, IPT, 4>(&codes, buf);
                survivor_rounds::<u32, NT, IPT, 2, 4>(
                    true,
                    buf,
                    count,
                    start,
                    carry,
                    &mut carried,
                    visit(None),
                );
            }
        }
        // SAFETY: the walk above left the carry and its count.
        unsafe { flush_queued_survivors::<2, 4>(true, carry, carried, visit(Some(carried))) };
    }
}

/// Results per tile of the block-aggregate kernels: sum, min, max (as the item type) and the
/// count of items greater than zero (in `counts`).
/// Parameters of the block-aggregate test kernels over items `T`: `(input, n, out, counts)`.
pub type AggregateArgs<T> = (*const T, u32, *mut T, *mut u32);

macro_rules! block_aggregate_kernels {
    ($($spec:ident = $name:ident: $t:ty, min_identity = $lo:expr, max_identity = $hi:expr;)*) => {$(
        crate::kernel! {
            $spec = $name[NT = 128, IPT = 8](input: *const $t, n: u32, out: *mut $t, counts: *mut u32) {
                let temp = crate::shared_array!(agg_temp: [$t; NT / 32 + 1]);
                let ctemp = crate::shared_array!(agg_count: [u32; NT / 32 + 1]);
                let start = block_idx() * NT * IPT;
                let valid = (n as usize - start).min(NT * IPT);
                let mut items = [<$t>::default(); IPT];
                // SAFETY: tile within the input; three outputs and one count per tile.
                unsafe {
                    block_load::<$t, NT, IPT>(input.add(start), valid, &mut items);
                    let sum = block_sum::<$t, NT, IPT>(&items, valid, temp);
                    sync_threads();
                    let min = block_min::<$t, NT, IPT>(&items, valid, $lo, temp);
                    sync_threads();
                    let max = block_max::<$t, NT, IPT>(&items, valid, $hi, temp);
                    let mut pos = [false; IPT];
                    block_pred::<$t, NT, IPT>(&items, valid, &mut pos, Combine::Set, |x| x > <$t>::default());
                    let count = block_count::<$t, NT, IPT>(&pos, valid, ctemp);
                    if thread_idx() == 0 {
                        let b = block_idx();
                        out.add(b * 3).write(sum);
                        out.add(b * 3 + 1).write(min);
                        out.add(b * 3 + 2).write(max);
                        counts.add(b).write(count);
                    }
                }
            }
        }
    )*};
}

block_aggregate_kernels! {
    BLOCK_AGGREGATE_I32 = block_aggregate_i32: i32, min_identity = i32::MAX, max_identity = i32::MIN;
    BLOCK_AGGREGATE_U32 = block_aggregate_u32: u32, min_identity = u32::MAX, max_identity = u32::MIN;
    BLOCK_AGGREGATE_F32 = block_aggregate_f32: f32, min_identity = f32::INFINITY, max_identity = f32::NEG_INFINITY;
    BLOCK_AGGREGATE_I64 = block_aggregate_i64: i64, min_identity = i64::MAX, max_identity = i64::MIN;
    BLOCK_AGGREGATE_U64 = block_aggregate_u64: u64, min_identity = u64::MAX, max_identity = u64::MIN;
    BLOCK_AGGREGATE_F64 = block_aggregate_f64: f64, min_identity = f64::INFINITY, max_identity = f64::NEG_INFINITY;
}
