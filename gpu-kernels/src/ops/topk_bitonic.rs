//! Bitonic top-k (thesis §4.3.2, optimized as §4.4.3 describes): the `k` best keys of a column
//! with their rows, by bitonic merges only, the same work whatever the data.
//!
//! **Items.** Every key becomes one item that carries its row: for 32-bit keys a `u64`,
//! `(rank << 32) | !row`, for `f64` a [`Wide`] `(rank, !row)`; `rank` is the key's
//! order-preserving bits ([`RadixKey::ordered`], complemented for the smallest keys), so a
//! larger item is always the better one, and equal keys rank by the smaller row, the one
//! exact order of `tessera_host`'s top-k. Padding is the item 0 (rank 0, row `u32::MAX`):
//! rows are below `u32::MAX`, so it is worse than every real item and never displaces one.
//!
//! **The network.** Within a tile of `A = 2^log_a` items (`A <= NT * B`), with `K = 2^log_k`
//! (`K >= 16`, the host rounds `k` up):
//! * *local sort* (SortReducer only): a bitonic sort into sorted runs of `K` items, alternating
//!   best-first and best-last;
//! * `merges` times *merge* (item `i` of each best-first run against item `i` of the best-last
//!   run after it, the better one kept: a bitonic run holding the pair's best `K`) and
//!   *rebuild* (a bitonic merge of that run into a sorted one, alternating again).
//!
//! The tile's `A >> merges` items (sorted runs of `K`) go to `out`. The SortReducer reads keys,
//! the BitonicReducer the runs of an earlier pass; the host ([`plan`]) chains passes until `K`
//! items remain: the answer, best first.
//!
//! **Rounds** (the optimizations). A thread holds `B = 16` items of one *window*, the positions
//! that differ in four consecutive index bits `lo .. lo + 4` (the rest of the index is the
//! thread's), and runs every step whose stride lies in the window on its registers; only when
//! a step leaves the window do the items go back to shared memory and the next window come in
//! ("combined steps", Figure 4-5). A merge halves the data; the next window packs the
//! survivors again on `len / B` threads ("reassigned partitions"). The first window of the
//! SortReducer is read straight from global memory, 16 adjacent keys per thread, and sorted in
//! registers before anything is written ("work before writing"). Shared slots are permuted
//! (`pos ^ ((pos >> 4) & 15)`: a window's 16 items of one register index land in 16 distinct
//! bank pairs, the thesis' chunk permutation as an address map) or padded (one slot per 16),
//! against bank conflicts. Each of these is a bit of the kernels' `OPT` ([`opt`]) so the
//! ablation of §4.4.3 can switch it off; the product kernels use [`opt::PRODUCT`].
//!
//! **Levels** (beyond the thesis). The host may split the keys into levels, each given the
//! top-k of the keys before it: the SortReducer then reads each full tile coalesced and skips
//! it, writing nothing, when no key reaches the `k`-th of that top-k; the tiles that reach it
//! count themselves into consecutive places after it, and the BitonicReducers read the counts,
//! leave dead tiles and merge only a tile's live runs. A kept tile whose keys that reach the
//! threshold fit one run gathers them and writes them ranked by counting, without the network
//! ([`opt::FEW`]): on keys in random order nearly every kept tile past the first level holds
//! one or two. See `tessera_host::ops::BitonicTopK`.
//!
//! The bookkeeping of rounds ([`Plan`]) and the register work ([`Regs`]) are plain code, so
//! the host's unit tests run the network thread by thread against a sort.
use crate::radix::RadixKey;

/// Items a thread holds in a round (the thesis' `B`).
pub const B: usize = 16;
/// `log2(B)`: index bits of a window.
pub const B_LOG: u32 = 4;
/// Smallest `log2(K)` of the network: a run fills at least one window.
pub const MIN_LOG_K: u32 = 4;
/// Largest `k` (a sorted run of `K` items must fit a tile twice over).
pub const MAX_K: usize = 1024;

/// The optimizations of §4.4.3 that the kernels' `OPT` switches (bits).
pub mod opt {
    /// Work before writing: the first round reads its window from global memory.
    pub const EARLY: u32 = 1;
    /// Combined steps: every step of a window in registers (else one step per round).
    pub const COMBINE: u32 = 2;
    /// One padding slot per 16 items.
    pub const PAD: u32 = 4;
    /// Chunk permutation: slot `pos ^ ((pos >> 4) & 15)`.
    pub const PERMUTE: u32 = 8;
    /// Reassigned partitions: 16 items per active thread after a merge (else the tile's items
    /// spread over all threads, fewer per thread).
    pub const REASSIGN: u32 = 16;
    /// Few live keys (levels only): a kept tile whose keys that reach the threshold fit one
    /// run (at most `min(K, NT)`) ranks them by counting and writes them as its first run,
    /// without the network; the other keys cannot be in the top-k.
    pub const FEW: u32 = 32;
    /// The product kernels' options.
    pub const PRODUCT: u32 = EARLY | COMBINE | PERMUTE | REASSIGN | FEW;
}

/// Shared slots of a tile of `items` items under `opt`.
pub const fn tile_slots(items: usize, opt: u32) -> usize {
    if opt & opt::PAD != 0 {
        items + items / 16
    } else {
        items
    }
}

/// The shared slot of position `pos` under `OPT`.
#[inline(always)]
pub fn slot<const OPT: u32>(pos: usize) -> usize {
    let mut s = pos;
    if OPT & opt::PERMUTE != 0 {
        s ^= (s >> 4) & 15;
    }
    if OPT & opt::PAD != 0 {
        s += s >> 4;
    }
    s
}

/// An item of the network: larger is better.
pub trait Item: Copy {
    /// The padding item, worse than every real one.
    const WORST: Self;
    /// Whether `self` ranks strictly above `other`.
    fn better(self, other: Self) -> bool;
}

impl Item for u64 {
    const WORST: u64 = 0;
    #[inline(always)]
    fn better(self, other: u64) -> bool {
        self > other
    }
}

/// The item of a 64-bit key: its rank and its complemented row (16 bytes, two words of the
/// pass buffers).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wide {
    /// Order-preserving bits of the key.
    pub rank: u64,
    /// `!row`.
    pub nrow: u32,
    /// Unused.
    pub pad: u32,
}

impl Item for Wide {
    const WORST: Wide = Wide {
        rank: 0,
        nrow: 0,
        pad: 0,
    };
    #[inline(always)]
    fn better(self, other: Wide) -> bool {
        self.rank > other.rank || (self.rank == other.rank && self.nrow > other.nrow)
    }
}

/// Key types of the kernels and their items.
pub trait TopItemKey: RadixKey {
    /// The item type.
    type It: Item;
    /// The item of this key at `row`; `smallest` ranks small keys best.
    fn item(self, row: u32, smallest: bool) -> Self::It;
}

macro_rules! narrow_key {
    ($($t:ty),*) => {$(
        impl TopItemKey for $t {
            type It = u64;
            #[inline(always)]
            fn item(self, row: u32, smallest: bool) -> u64 {
                let rank = <$t as RadixKey>::ordered(self.into_raw(), smallest);
                ((rank as u64) << 32) | (!row) as u64
            }
        }
    )*};
}
narrow_key!(f32, i32, u32);

impl TopItemKey for f64 {
    type It = Wide;
    #[inline(always)]
    fn item(self, row: u32, smallest: bool) -> Wide {
        Wide {
            rank: f64::ordered(self.into_raw(), smallest),
            nrow: !row,
            pad: 0,
        }
    }
}

/// No merge in the round.
const NONE: u32 = u32::MAX;

/// One round: the window `lo .. lo + w` over the `2^log_len` items loaded, and the bit of the
/// round's merge, if any (in the round's coordinates; the store drops that bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// Lowest index bit of the window.
    pub lo: u32,
    /// Bits of the window (4 unless partitions are not reassigned).
    pub w: u32,
    /// `log2` of the items when the round was loaded.
    pub log_len: u32,
    /// The merged bit, or none.
    merged: u32,
}

impl Round {
    /// Whether the round merged (its store packs the survivors).
    #[inline(always)]
    pub fn merged(&self) -> bool {
        self.merged != NONE
    }

    /// Threads with items in this round.
    #[inline(always)]
    pub fn threads(&self) -> usize {
        1 << (self.log_len - self.w)
    }

    /// Position of register `j` of thread `t`.
    #[inline(always)]
    pub fn pos(&self, t: usize, j: usize) -> usize {
        let lo = self.lo as usize;
        ((t >> lo) << (lo + self.w as usize)) | (j << lo) | (t & ((1 << lo) - 1))
    }

    /// Where the store puts the item at round position `pos`: its position once the merged
    /// bit is dropped, or `None` for the losers of the merge.
    #[inline(always)]
    pub fn stored(&self, pos: usize) -> Option<usize> {
        if self.merged == NONE {
            return Some(pos);
        }
        let c = self.merged as usize;
        if (pos >> c) & 1 == 1 {
            return None;
        }
        Some((pos & ((1 << c) - 1)) | ((pos >> (c + 1)) << c))
    }

    /// A bit of the current (compacted) index in this round's coordinates.
    #[inline(always)]
    fn map(&self, bit: u32) -> u32 {
        if self.merged != NONE && bit >= self.merged {
            bit + 1
        } else {
            bit
        }
    }
}

/// One step on the registers, in the round's coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Compare-exchange across window bit `r`; the better item goes first where bit `d` of
    /// the position, xor `flip`, is 0.
    Ce {
        /// Window bit of the stride.
        r: u32,
        /// Position bit of the direction.
        d: u32,
        /// Reverses the direction.
        flip: u32,
    },
    /// Keeps the better item of each pair across window bit `r` in the lower one.
    Merge {
        /// Window bit.
        r: u32,
    },
}

/// What the block does for one step: store the round ending (then a barrier), load `round` if
/// it starts here, then run `op` on it.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// The round to store, if one ends.
    pub store: Option<Round>,
    /// Whether `round` starts with this step.
    pub load: bool,
    /// The round the step runs in.
    pub round: Round,
    /// The register step.
    pub op: Op,
}

/// The block-uniform bookkeeping of rounds: which window holds which step.
#[derive(Clone, Copy, Debug)]
pub struct Plan<const OPT: u32> {
    log_nt: u32,
    log_len: u32,
    round: Option<Round>,
}

impl<const OPT: u32> Plan<OPT> {
    /// A tile of `2^log_len` items on `2^log_nt` threads.
    #[inline(always)]
    pub fn new(log_nt: u32, log_len: u32) -> Self {
        Plan {
            log_nt,
            log_len,
            round: None,
        }
    }

    /// Opens `round`, whose registers the threads already hold (see [`presort`]).
    #[inline(always)]
    pub fn open(&mut self, round: Round) {
        self.round = Some(round);
    }

    /// `log2` of the items now (merges halve it).
    #[inline(always)]
    pub fn log_len(&self) -> u32 {
        self.log_len
    }

    /// Compare-exchange at stride bit `b` with direction bit `d` (current coordinates).
    #[inline(always)]
    pub fn ce(&mut self, b: u32, d: u32, flip: u32) -> Step {
        let (store, load, round) = self.enter(b, false);
        Step {
            store,
            load,
            round,
            op: Op::Ce {
                r: round.map(b) - round.lo,
                d: round.map(d),
                flip,
            },
        }
    }

    /// Merge across bit `b`: the data halves.
    #[inline(always)]
    pub fn merge(&mut self, b: u32) -> Step {
        let (store, load, mut round) = self.enter(b, true);
        let r = b - round.lo;
        round.merged = b;
        self.round = Some(round);
        self.log_len -= 1;
        Step {
            store,
            load,
            round,
            op: Op::Merge { r },
        }
    }

    /// The round to store at the end, if any.
    #[inline(always)]
    pub fn finish(&mut self) -> Option<Round> {
        self.round.take()
    }

    /// The round that runs a step at current bit `b`: the open one if the step fits it, else
    /// a new one (returned with the round to store first).
    #[inline(always)]
    fn enter(&mut self, b: u32, merge: bool) -> (Option<Round>, bool, Round) {
        if let Some(r) = self.round {
            let fits = OPT & opt::COMBINE != 0
                && if merge {
                    r.merged == NONE
                } else {
                    r.merged == NONE || b < r.merged
                }
                && r.map(b) >= r.lo
                && r.map(b) < r.lo + r.w;
            if fits {
                return (None, false, r);
            }
        }
        let w = if OPT & opt::REASSIGN != 0 {
            B_LOG
        } else {
            self.log_len.saturating_sub(self.log_nt).clamp(1, B_LOG)
        };
        let lo = b.saturating_sub(w - 1).min(self.log_len - w);
        let new = Round {
            lo,
            w,
            log_len: self.log_len,
            merged: NONE,
        };
        let old = self.round.replace(new);
        (old, true, new)
    }
}

/// A thread's registers of a round: item `j` sits at [`Round::pos`]`(t, j)`.
#[derive(Clone, Copy)]
pub struct Regs<I: Item, const OPT: u32> {
    v: [I; B],
}

impl<I: Item, const OPT: u32> Regs<I, OPT> {
    /// Registers whose contents the first [`Regs::load`] sets. Nothing reads a register a
    /// load did not set (the first step of a tile always loads).
    #[inline(always)]
    pub fn new() -> Self {
        // Not `[I::WORST; B]`: ptxas gets the same code either way, but LLVM then shares the
        // constant's register with loop counters, which the divergent-barrier check of
        // `cargo xtask build-ptx` reads as thread-dependent.
        let v = core::array::from_fn(|_| {
            let x = core::mem::MaybeUninit::<I>::uninit();
            // SAFETY: `I` is plain integer words (`u64`, `Wide`), and the value is
            // overwritten by the first load before any read.
            unsafe { x.assume_init() }
        });
        Regs { v }
    }

    /// Sets register `j`.
    #[inline(always)]
    pub fn set(&mut self, j: usize, x: I) {
        self.v[j] = x;
    }

    /// Register `j`.
    #[inline(always)]
    pub fn get(&self, j: usize) -> I {
        self.v[j]
    }

    /// Whether register `j` is part of round `r`.
    #[inline(always)]
    fn used(r: &Round, j: usize) -> bool {
        OPT & opt::REASSIGN != 0 || j < (1 << r.w)
    }

    /// Loads thread `t`'s window of `r` with `read(pos)`.
    #[inline(always)]
    pub fn load(&mut self, r: &Round, t: usize, read: impl Fn(usize) -> I) {
        for j in 0..B {
            if Self::used(r, j) {
                self.v[j] = read(r.pos(t, j));
            }
        }
    }

    /// Stores thread `t`'s window of `r` with `write(pos, item)`, merge losers dropped and
    /// positions compacted.
    #[inline(always)]
    pub fn store(&self, r: &Round, t: usize, mut write: impl FnMut(usize, I)) {
        for j in 0..B {
            if Self::used(r, j)
                && let Some(p) = r.stored(r.pos(t, j))
            {
                write(p, self.v[j]);
            }
        }
    }

    /// Runs `op` of round `r` for thread `t`.
    #[inline(always)]
    pub fn apply(&mut self, r: &Round, t: usize, op: Op) {
        match op {
            Op::Ce { r: 0, d, flip } => self.ce::<1>(r, t, d, flip),
            Op::Ce { r: 1, d, flip } => self.ce::<2>(r, t, d, flip),
            Op::Ce { r: 2, d, flip } => self.ce::<4>(r, t, d, flip),
            Op::Ce { d, flip, .. } => self.ce::<8>(r, t, d, flip),
            // A merge's bit is the window's top one (its window starts `w - 1` below it). With
            // one arm per stride LLVM merged the arms into selects of register addresses,
            // which put the registers in local memory; a merge is a compare-exchange that puts
            // the better item first everywhere (direction bit 63: always 0).
            Op::Merge { .. } if OPT & opt::REASSIGN != 0 => self.merge::<8>(r),
            Op::Merge { r: 0 } => self.ce::<1>(r, t, 63, 0),
            Op::Merge { r: 1 } => self.ce::<2>(r, t, 63, 0),
            Op::Merge { r: 2 } => self.ce::<4>(r, t, 63, 0),
            Op::Merge { .. } => self.ce::<8>(r, t, 63, 0),
        }
    }

    /// Compare-exchange of the registers `j` and `j | S` (stride `S` in the window).
    #[inline(always)]
    fn ce<const S: usize>(&mut self, r: &Round, t: usize, d: u32, flip: u32) {
        let base = r.pos(t, 0);
        for j in 0..B {
            if j & S != 0 || !Self::used(r, j | S) {
                continue;
            }
            // Pairs the round's merge dropped hold nothing.
            if r.merged != NONE && (j >> (r.merged - r.lo)) & 1 == 1 {
                continue;
            }
            let p = base | (j << r.lo);
            let best_first = (((p >> d) as u32 ^ flip) & 1) == 0;
            let (a, b) = (self.v[j], self.v[j | S]);
            let swap = b.better(a) == best_first;
            self.v[j] = if swap { b } else { a };
            self.v[j | S] = if swap { a } else { b };
        }
    }

    /// Keeps the better of registers `j` and `j | S` in `j`.
    #[inline(always)]
    fn merge<const S: usize>(&mut self, r: &Round) {
        for j in 0..B {
            if j & S != 0 || !Self::used(r, j | S) {
                continue;
            }
            let (a, b) = (self.v[j], self.v[j | S]);
            self.v[j] = if b.better(a) { b } else { a };
        }
    }
}

impl<I: Item, const OPT: u32> Default for Regs<I, OPT> {
    fn default() -> Self {
        Self::new()
    }
}

/// The steps of a tile, in order, given to `step`: the phases after the first `done` of the
/// local sort into runs of `2^log_k` (`done = log_k`: none), then `merges` times merge and
/// rebuild. `flip` reverses the runs of `2^log_k` (so that runs alternate across tiles, see
/// [`flip`]).
#[inline(always)]
pub fn for_each_step<const OPT: u32>(
    plan: &mut Plan<OPT>,
    done: u32,
    log_k: u32,
    merges: u32,
    flip: u32,
    mut step: impl FnMut(Step),
) {
    // Loop counters count down from the parameters: a counter that starts at a constant may
    // share its register with a thread-dependent value, which the divergent-barrier check of
    // `cargo xtask build-ptx` cannot tell apart.
    for q in (0..log_k - done).rev() {
        let p = log_k - q;
        let f = if q == 0 { flip } else { 0 };
        for b in (0..p).rev() {
            step(plan.ce(b, p, f));
        }
    }
    for _ in (0..merges).rev() {
        step(plan.merge(log_k));
        for b in (0..log_k).rev() {
            step(plan.ce(b, log_k, flip));
        }
    }
}

/// The first window of a SortReducer tile of `2^log_len`, 16 adjacent items per thread, and
/// the first [`B_LOG`] phases of the local sort on `regs` (thread `t`): runs of 16, sorted in
/// registers before anything is written. Every index and direction is a constant but the
/// thread's parity, so the network compiles to plain compare-exchanges.
#[inline(always)]
pub fn presort<I: Item, const OPT: u32>(
    regs: &mut Regs<I, OPT>,
    r: &Round,
    t: usize,
    log_k: u32,
    flip: u32,
) {
    for p in 1..=B_LOG {
        let f = if p == log_k { flip } else { 0 };
        for b in (0..p).rev() {
            regs.apply(
                r,
                t,
                Op::Ce {
                    r: b,
                    d: p,
                    flip: f,
                },
            );
        }
    }
}

/// The first round of a SortReducer tile of `2^log_len` items: 16 adjacent items per thread.
#[inline(always)]
pub fn first_round(log_len: u32) -> Round {
    Round {
        lo: 0,
        w: B_LOG,
        log_len,
        merged: NONE,
    }
}

/// The direction flip of a tile's runs: the parity of its first run's index in the output, so
/// that the output's runs alternate best-first, best-last.
#[inline(always)]
pub fn flip(tile: usize, log_out: u32, log_k: u32) -> u32 {
    (((tile << log_out) >> log_k) & 1) as u32
}

/// One pass of a top-k: its tiles of `2^log_a` items, the merges per tile and the items it
/// writes (`tiles << (log_a - merges)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// `log2` of the items per tile.
    pub log_a: u32,
    /// Merges per tile.
    pub merges: u32,
    /// Tiles (blocks).
    pub tiles: usize,
    /// Items in.
    pub len: usize,
    /// Items out.
    pub out: usize,
}

/// The passes of a top-k of `2^log_k` over `n` items (`n >= 1`) with tiles of at most
/// `2^log_tile` items, at most `max_merges` merges per tile of a pass with several tiles
/// (a single tile reduces to `2^log_k` at once). Ends with a pass whose output is `2^log_k`.
pub fn plan(n: usize, log_k: u32, log_tile: u32, max_merges: u32, mut each: impl FnMut(Pass)) {
    let k = 1usize << log_k;
    let mut len = n;
    loop {
        let log_a = if len >= 1 << log_tile {
            log_tile
        } else {
            len.max(k).next_power_of_two().trailing_zeros()
        };
        let tiles = len.div_ceil(1 << log_a);
        let merges = if tiles == 1 {
            log_a - log_k
        } else {
            max_merges.clamp(1, log_a - log_k)
        };
        let out = tiles << (log_a - merges);
        each(Pass {
            log_a,
            merges,
            tiles,
            len,
            out,
        });
        if out == k {
            return;
        }
        len = out;
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{
        Atomic, Shared, block_idx, load_if, load_vector, sync_threads, sync_threads_or, thread_idx,
    };

    /// Items in shared memory, through `ld.shared` / `st.shared` of their words.
    pub trait SharedItem: Item {
        /// Reads slot `i`.
        ///
        /// # Safety
        /// As for [`Shared::read`].
        unsafe fn get(sh: Shared<Self>, i: usize) -> Self;
        /// Writes slot `i`.
        ///
        /// # Safety
        /// As for [`Shared::write`].
        unsafe fn put(sh: Shared<Self>, i: usize, x: Self);
    }

    impl SharedItem for u64 {
        #[inline(always)]
        unsafe fn get(sh: Shared<u64>, i: usize) -> u64 {
            // SAFETY: forwarded.
            unsafe { sh.read(i) }
        }
        #[inline(always)]
        unsafe fn put(sh: Shared<u64>, i: usize, x: u64) {
            // SAFETY: forwarded.
            unsafe { sh.write(i, x) }
        }
    }

    impl SharedItem for Wide {
        #[inline(always)]
        unsafe fn get(sh: Shared<Wide>, i: usize) -> Wide {
            let w = sh.cast::<u64>();
            // SAFETY: slot `i` is words `2i` and `2i + 1`.
            let (rank, nrow) = unsafe { (w.read(2 * i), w.read(2 * i + 1)) };
            Wide {
                rank,
                nrow: nrow as u32,
                pad: 0,
            }
        }
        #[inline(always)]
        unsafe fn put(sh: Shared<Wide>, i: usize, x: Wide) {
            let w = sh.cast::<u64>();
            // SAFETY: as for `get`.
            unsafe {
                w.write(2 * i, x.rank);
                w.write(2 * i + 1, x.nrow as u64);
            }
        }
    }

    /// The block's network over the tile in `sh`: runs the steps, moving windows between
    /// registers and shared memory. With `EARLY` the first window comes from `first(pos)`
    /// (work before writing), else every window from shared memory. Leaves the result in `sh`
    /// (`2^plan.log_len()` items at their [`slot`]s) after a barrier.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn network<I: SharedItem, const NT: usize, const OPT: u32>(
        sh: Shared<I>,
        plan: &mut Plan<OPT>,
        mut regs: Regs<I, OPT>,
        mut fresh: bool,
        done: u32,
        log_k: u32,
        merges: u32,
        flip: u32,
        first: impl Fn(usize) -> I,
    ) {
        let t = thread_idx();
        let store = |regs: &Regs<I, OPT>, r: &Round| {
            if t < r.threads() {
                // SAFETY: each position of a round belongs to one thread, and stored positions
                // stay below the round's length, within the tile.
                regs.store(r, t, |p, x| unsafe { I::put(sh, slot::<OPT>(p), x) });
            }
        };
        for_each_step(plan, done, log_k, merges, flip, |s| {
            if let Some(r) = s.store {
                merge_barrier(&r);
                store(&regs, &r);
                sync_threads();
            }
            let r = s.round;
            if t < r.threads() {
                if s.load {
                    if fresh {
                        regs.load(&r, t, &first);
                    } else {
                        // SAFETY: positions of a round are below its length; a barrier
                        // separates them from the last writes.
                        regs.load(&r, t, |p| unsafe { I::get(sh, slot::<OPT>(p)) });
                    }
                }
                regs.apply(&r, t, s.op);
            }
            fresh &= !s.load;
        });
        if let Some(r) = plan.finish() {
            merge_barrier(&r);
            store(&regs, &r);
        }
        sync_threads();
    }

    /// A barrier before the store of a round with a merge: it packs the survivors into
    /// positions other threads loaded in the same round.
    #[inline(always)]
    fn merge_barrier(r: &Round) {
        if r.merged() {
            sync_threads();
        }
    }

    /// The items of the 16 keys from `first` (rows `first ..`) into `regs`, padding from
    /// `limit` on. Predicated loads, no branch: LLVM duplicated the barriers that follow a
    /// branch on the thread's keys into both of its arms.
    ///
    /// # Safety
    /// `keys` holds `limit` keys.
    #[inline(always)]
    unsafe fn load16<K: TopItemKey, const OPT: u32>(
        keys: *const K,
        limit: usize,
        first: usize,
        smallest: bool,
        regs: &mut Regs<K::It, OPT>,
    ) {
        for j in 0..B {
            let live = first + j < limit;
            // SAFETY: read only when in bounds.
            let x = unsafe { load_if(live, keys.wrapping_add(first + j)) };
            let it = x.item((first + j) as u32, smallest);
            regs.set(j, if live { it } else { K::It::WORST });
        }
    }

    /// Writes the tile's `2^log_len` items from `sh` to `out`, coalesced.
    ///
    /// # Safety
    /// `out` holds `2^log_len` items.
    #[inline(always)]
    unsafe fn write_out<I: SharedItem, const NT: usize, const OPT: u32>(
        sh: Shared<I>,
        log_len: u32,
        out: *mut I,
    ) {
        let mut i = thread_idx();
        while i < 1 << log_len {
            // SAFETY: the network left the items at their slots; `i` is in bounds.
            unsafe { out.add(i).write(I::get(sh, slot::<OPT>(i))) };
            i += NT;
        }
    }

    /// Copies `2^log_len` items given by `item(pos)` into `sh`, coalesced, then a barrier (the
    /// tile's first round then reads shared memory: no work before writing).
    #[inline(always)]
    fn fill<I: SharedItem, const NT: usize, const OPT: u32>(
        sh: Shared<I>,
        log_len: u32,
        item: impl Fn(usize) -> I,
    ) {
        let mut i = thread_idx();
        while i < 1 << log_len {
            // SAFETY: `i` is below the tile's length; distinct threads write distinct slots.
            unsafe { I::put(sh, slot::<OPT>(i), item(i)) };
            i += NT;
        }
        sync_threads();
    }

    /// Keys that can be checked against a threshold a vector at a time.
    pub trait TileKey: TopItemKey {
        /// Calls `f` with the item of each of the `NT * B` keys at `keys` (rows from `row`,
        /// 16-byte aligned) that reaches `th`, read coalesced: vector `j` of thread `t` holds
        /// keys `(j * NT + t) * V ..` for the `V` keys of 16 bytes.
        ///
        /// # Safety
        /// `keys` holds `NT * B` keys and is 16-byte aligned.
        unsafe fn each_reaching<const NT: usize>(
            keys: *const Self,
            row: usize,
            smallest: bool,
            th: Self::It,
            f: impl FnMut(Self::It),
        );

        /// How many of this thread's keys of the tile ([`TileKey::each_reaching`]) reach `th`.
        ///
        /// # Safety
        /// As for [`TileKey::each_reaching`].
        #[inline(always)]
        unsafe fn count_reaching<const NT: usize>(
            keys: *const Self,
            row: usize,
            smallest: bool,
            th: Self::It,
        ) -> u32 {
            let mut count = 0;
            // SAFETY: forwarded.
            unsafe { Self::each_reaching::<NT>(keys, row, smallest, th, |_| count += 1) };
            count
        }
    }

    macro_rules! tile_key {
        ($($t:ty: $v:literal;)*) => {$(
            impl TileKey for $t {
                #[inline(always)]
                unsafe fn each_reaching<const NT: usize>(
                    keys: *const $t,
                    row: usize,
                    smallest: bool,
                    th: Self::It,
                    mut f: impl FnMut(Self::It),
                ) {
                    let t = thread_idx();
                    for j in 0..B / $v {
                        let first = (j * NT + t) * $v;
                        // SAFETY: `first + $v <= NT * B`, 16-byte aligned by contract.
                        let v = unsafe { load_vector::<$t, $v>(keys.add(first)) };
                        for (i, x) in v.into_iter().enumerate() {
                            let it = x.item((row + first + i) as u32, smallest);
                            if !th.better(it) {
                                f(it);
                            }
                        }
                    }
                }
            }
        )*};
    }
    tile_key! { f32: 4; i32: 4; u32: 4; f64: 2; }

    /// [`opt::FEW`] on a kept full tile (every thread): counts the tile's keys that reach `th`
    /// (`mine` of them this thread's, rows from `row`), and where they fit one run (at most
    /// `min(2^log_k, NT)`) gathers them into `sh` and writes the tile's `2^log_out` items to
    /// `out`: its first run the gathered items ranked by counting, best-first (best-last with
    /// `flip`) as the network orders it, and padding elsewhere. Returns whether it did; if
    /// not, nothing was written and the tile goes through the network.
    ///
    /// # Safety
    /// `tile` holds `NT * B` keys, 16-byte aligned; `out` holds `2^log_out` items,
    /// `log_k <= log_out`; `sh` holds at least `NT` items; `flag`'s word 1 is 0 for every
    /// thread.
    #[inline(always)]
    unsafe fn write_few<K: TileKey<It: SharedItem>, const NT: usize>(
        (tile, row, smallest, th, mine): (*const K, usize, bool, K::It, u32),
        (log_k, log_out, flip): (u32, u32, u32),
        out: *mut K::It,
        sh: Shared<K::It>,
        flag: Shared<u32>,
    ) -> bool {
        let k = 1u32 << log_k;
        let cap = k.min(NT as u32);
        // Every thread adds and gathers, `mine` or not: LLVM copies a barrier that follows a
        // branch on the thread's data into both arms, which `build-ptx --check` rejects.
        // SAFETY: `flag` word 1 counts the reaching keys; the barrier publishes the count.
        let mut at = unsafe { flag.atomic_add(1, mine) };
        sync_threads();
        // SAFETY: as above.
        let c = unsafe { flag.read(1) };
        if c > cap {
            // Many keys reach the threshold (an early level, or sorted keys): the network.
            return false;
        }
        // SAFETY: this thread's slots `at .. at + mine` lie below `c <= cap`, in `sh`.
        unsafe {
            K::each_reaching::<NT>(tile, row, smallest, th, |x| {
                K::It::put(sh, at as usize, x);
                at += 1;
            })
        };
        sync_threads();
        let t = thread_idx() as u32;
        if t < c {
            // SAFETY: slots below `c` hold the gathered items.
            let item = |j: u32| unsafe { K::It::get(sh, j as usize) };
            let x = item(t);
            let rank = (0..c).map(|j| item(j).better(x) as u32).sum::<u32>();
            let pos = if flip == 0 { rank } else { k - 1 - rank };
            // SAFETY: an item's rank is below `c <= k`: its place lies in the first run.
            unsafe { out.add(pos as usize).write(x) };
        }
        let mut p = t;
        while p < 1 << log_out {
            let empty = p >= k || if flip == 0 { p >= c } else { p < k - c };
            if empty {
                // SAFETY: `p < 2^log_out`.
                unsafe { out.add(p as usize).write(K::It::WORST) };
            }
            p += NT as u32;
        }
        true
    }

    /// The SortReducer: local sort and `merges` merge-rebuilds of tile `block_idx()` of the
    /// keys `base .. n` (tiles of `2^log_a`), `2^(log_a - merges)` items to `out` at the tile's
    /// place. With a `threshold` (and `live`), a full tile none of whose keys reaches it writes
    /// nothing, and a tile that does claims the next place after the first (`out`'s first run
    /// is the earlier keys' top-k, left there by the host) by counting in `live`; with
    /// [`opt::FEW`] it skips the network where its reaching keys fit one run ([`write_few`]).
    ///
    /// # Safety
    /// `keys` holds `n` keys, 16-byte aligned, and `base` is a multiple of the tile; `out` holds
    /// `tiles << (log_a - merges)` items (one run more with a threshold); `4 <= log_k`,
    /// `log_k + merges <= log_a`, `2^log_a <= NT * B`, `sh` holds
    /// [`tile_slots`]`(NT * B, OPT)` items and `flag` two words; a non-null `threshold` is one
    /// item, not inside the places this pass writes, and comes with a `live` counter that
    /// starts at 0.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sort_reducer<K: TileKey<It: SharedItem>, const NT: usize, const OPT: u32>(
        keys: *const K,
        base: usize,
        n: usize,
        log_a: u32,
        merges: u32,
        log_k: u32,
        smallest: bool,
        threshold: *const K::It,
        live: *mut u32,
        out: *mut K::It,
        sh: Shared<K::It>,
        flag: Shared<u32>,
    ) {
        let start = base + (block_idx() << log_a);
        let valid = (n - start).min(1 << log_a);
        let key = |p: usize| {
            if p < valid {
                // SAFETY: `start + p < n`.
                unsafe { keys.add(start + p).read() }.item((start + p) as u32, smallest)
            } else {
                K::It::WORST
            }
        };
        let log_out = log_a - merges;
        let full = valid == NT * B;
        let mut place = block_idx();
        // The threshold and how many of this thread's keys reach it (of a full tile).
        let mut reaching = None;
        if !threshold.is_null() {
            // SAFETY: a non-null threshold points to one item.
            let th = unsafe { threshold.read() };
            // A partial tile is kept unchecked; a full one is read coalesced first, and most
            // tiles end there.
            let mine = if full {
                // SAFETY: a full tile of the aligned keys, at an aligned multiple of the tile.
                unsafe { K::count_reaching::<NT>(keys.add(start), start, smallest, th) }
            } else {
                0
            };
            if !sync_threads_or(!full || mine > 0) {
                return;
            }
            // SAFETY: `live` is this pass's counter; the barrier publishes the place and the
            // zeroed count of `write_few`.
            unsafe {
                if thread_idx() == 0 {
                    flag.write(0, 1 + u32::atomic_add(live, 1));
                    flag.write(1, 0);
                }
                sync_threads();
                place = flag.read(0) as usize;
            }
            reaching = Some((th, mine));
        }
        let flip = flip(place, log_out, log_k);
        if let Some((th, mine)) = reaching
            && OPT & opt::FEW != 0
            && full
            // SAFETY: a full tile as above; the place's output fits `out` by contract.
            && unsafe {
                write_few::<K, NT>(
                    (keys.add(start), start, smallest, th, mine),
                    (log_k, log_out, flip),
                    out.add(place << log_out),
                    sh,
                    flag,
                )
            }
        {
            return;
        }
        let mut plan = Plan::<OPT>::new(NT.trailing_zeros(), log_a);
        let mut regs = Regs::<K::It, OPT>::new();
        if OPT & opt::EARLY == 0 {
            fill::<_, NT, OPT>(sh, log_a, key);
            network::<_, NT, OPT>(sh, &mut plan, regs, false, 0, log_k, merges, flip, key);
        } else {
            let t = thread_idx();
            let r = first_round(log_a);
            // Every thread loads (padding past the tile) and sorts, so that no branch on the
            // thread precedes the barriers.
            // SAFETY: `keys` holds `start + valid` keys.
            unsafe { load16(keys, start + valid, start + t * B, smallest, &mut regs) };
            presort(&mut regs, &r, t, log_k, flip);
            plan.open(r);
            network::<_, NT, OPT>(sh, &mut plan, regs, false, B_LOG, log_k, merges, flip, key);
        }
        // SAFETY: the place's output fits `out` by contract.
        unsafe { write_out::<_, NT, OPT>(sh, log_out, out.add(place << log_out)) };
    }

    /// The BitonicReducer: `merges` merge-rebuilds of tile `block_idx()` of the `len` items of
    /// an earlier pass (sorted runs of `2^log_k`, alternating), `2^(log_a - merges)` to `out`.
    /// With `live_in`, only the first `*live_in + extra` runs of the input are real: tiles
    /// past them write nothing, and `live_out` (if any) gets the runs this pass writes.
    ///
    /// # Safety
    /// `input` holds `len` items (whole runs); `out`, `sh` and the sizes as for
    /// [`sort_reducer`], with `merges >= 1`; `live_in` and `live_out`, where not null, are
    /// counters of the passes before and of this one.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bitonic_reducer<I: SharedItem, const NT: usize, const OPT: u32>(
        input: *const I,
        len: usize,
        log_a: u32,
        merges: u32,
        log_k: u32,
        live_in: *const u32,
        extra: u32,
        live_out: *mut u32,
        out: *mut I,
        sh: Shared<I>,
    ) {
        let tile = block_idx();
        let log_out = log_a - merges;
        let start = tile << log_a;
        let (mut len, mut log_a, mut merges) = (len, log_a, merges);
        if !live_in.is_null() {
            // SAFETY: the counter of an earlier kernel, complete before this one started.
            let runs = unsafe { live_in.read() } + extra;
            len = len.min((runs as usize) << log_k);
            let tiles = len.div_ceil(1 << log_a);
            if tile == 0 && thread_idx() == 0 && !live_out.is_null() {
                // SAFETY: this pass's counter, written by this thread alone.
                unsafe { live_out.write((tiles << (log_out - log_k)) as u32) };
            }
            if tile >= tiles {
                return;
            }
            if log_out == log_k {
                // A tile that reduces to one run needs only as many merges as its live runs
                // take (at least one, which also turns the run the tile's way): the rest of
                // the planned tile is padding, and the network's depth is its latency.
                let live = (len - start).min(1 << log_a) >> log_k;
                merges = live.next_power_of_two().trailing_zeros().max(1);
                log_a = log_k + merges;
            }
        }
        let valid = (len - start).min(1 << log_a);
        let item = |p: usize| {
            if p < valid {
                // SAFETY: `start + p < len`.
                unsafe { input.add(start + p).read() }
            } else {
                I::WORST
            }
        };
        let flip = flip(tile, log_out, log_k);
        let mut plan = Plan::<OPT>::new(NT.trailing_zeros(), log_a);
        let early = OPT & opt::EARLY != 0;
        if !early {
            fill::<_, NT, OPT>(sh, log_a, item);
        }
        let regs = Regs::<I, OPT>::new();
        network::<_, NT, OPT>(sh, &mut plan, regs, early, log_k, log_k, merges, flip, item);
        // SAFETY: the tile's output fits `out` by contract.
        unsafe { write_out::<_, NT, OPT>(sh, log_out, out.add(tile << log_out)) };
    }
}

/// Parameters of a SortReducer over keys `K`: `(keys, base, n, log_a, merges, log_k,
/// smallest, threshold, live, out)`, items as `u64` words (one per item of a 32-bit key, two
/// for `f64`). A full tile none of whose items reaches the item at `threshold` (null: none)
/// skips the network and writes nothing: no such item can be in the top-k when the threshold
/// is the `k`-th best of other keys, whose top-k the host leaves as `out`'s first run; the
/// tiles that reach it write their runs after it, in the order they count themselves in
/// `live`.
pub type SortReducerArgs<K> = (
    *const K,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *const u64,
    *mut u32,
    *mut u64,
);
/// Parameters of a BitonicReducer: `(input, len, log_a, merges, log_k, live_in, extra,
/// live_out, out)`, items as `u64` words; `live_in` (null: all `len`) counts the input's runs
/// but `extra`, `live_out` (null: not counted) gets the runs written.
pub type BitonicReducerArgs = (
    *const u64,
    u32,
    u32,
    u32,
    u32,
    *const u32,
    u32,
    *mut u32,
    *mut u64,
);

/// The SortReducer and BitonicReducer of one key type and one `OPT`.
macro_rules! bitonic_kernels {
    ($($sort:ident = $sname:ident, $red:ident = $rname:ident: $k:ty, $nt:literal, $opt:expr;)*) => {$(
        $crate::kernel! {
            /// Bitonic top-k's first pass (the SortReducer), see the module documentation.
            $sort = $sname[NT = $nt, IPT = 16](
                keys: *const $k, base: u32, n: u32, log_a: u32, merges: u32, log_k: u32,
                smallest: u32, threshold: *const u64, live: *mut u32, out: *mut u64
            ) {
                type It = <$k as TopItemKey>::It;
                let sh = $crate::shared_array!(bitonic_tile: [It; tile_slots($nt * B, $opt)]);
                let flag = $crate::shared_array!(bitonic_flag: [u32; 2]);
                // SAFETY: the host launches one block per tile of the pass it planned
                // (`plan`), with buffers of the sizes it names and a null or one-item
                // threshold.
                unsafe {
                    sort_reducer::<$k, NT, { $opt }>(keys, base as usize, n as usize, log_a,
                        merges, log_k, smallest != 0, threshold.cast::<It>(), live,
                        out.cast::<It>(), sh, flag)
                }
            }
        }
        $crate::kernel! {
            /// Bitonic top-k's later passes (the BitonicReducer), see the module documentation.
            $red = $rname[NT = $nt, IPT = 16](
                input: *const u64, len: u32, log_a: u32, merges: u32, log_k: u32,
                live_in: *const u32, extra: u32, live_out: *mut u32, out: *mut u64
            ) {
                type It = <$k as TopItemKey>::It;
                let sh = $crate::shared_array!(bitonic_tile: [It; tile_slots($nt * B, $opt)]);
                // SAFETY: as for the SortReducer.
                unsafe {
                    bitonic_reducer::<It, NT, { $opt }>(input.cast::<It>(), len as usize, log_a,
                        merges, log_k, live_in, extra, live_out, out.cast::<It>(), sh)
                }
            }
        }
    )*};
}

bitonic_kernels! {
    TOPK_BITONIC_SORT_F32 = topk_bitonic_sort_f32, TOPK_BITONIC_REDUCE_F32 = topk_bitonic_reduce_f32: f32, 256, opt::PRODUCT;
    TOPK_BITONIC_SORT_I32 = topk_bitonic_sort_i32, TOPK_BITONIC_REDUCE_I32 = topk_bitonic_reduce_i32: i32, 256, opt::PRODUCT;
    TOPK_BITONIC_SORT_U32 = topk_bitonic_sort_u32, TOPK_BITONIC_REDUCE_U32 = topk_bitonic_reduce_u32: u32, 256, opt::PRODUCT;
    TOPK_BITONIC_SORT_F64 = topk_bitonic_sort_f64, TOPK_BITONIC_REDUCE_F64 = topk_bitonic_reduce_f64: f64, 128, opt::PRODUCT;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// The block's network run thread by thread on the host, as the kernels run it.
    fn network<const OPT: u32>(
        items: &[u64],
        log_nt: u32,
        local: bool,
        log_k: u32,
        merges: u32,
        flip: u32,
    ) -> Vec<u64> {
        let log_a = items.len().trailing_zeros();
        let nt = 1usize << log_nt;
        let mut sh = std::vec![u64::MAX; tile_slots(items.len().max(nt * B), OPT)];
        if OPT & opt::EARLY == 0 {
            for (p, &x) in items.iter().enumerate() {
                sh[slot::<OPT>(p)] = x;
            }
        }
        let mut plan = Plan::<OPT>::new(log_nt, log_a);
        let mut regs = std::vec![Regs::<u64, OPT>::new(); nt];
        let mut fresh = OPT & opt::EARLY != 0;
        let mut done = if local { 0 } else { log_k };
        if local && fresh {
            let r = first_round(log_a);
            for (t, regs) in regs.iter_mut().enumerate().take(r.threads()) {
                for j in 0..B {
                    regs.set(j, items.get(t * B + j).copied().unwrap_or(0));
                }
                presort(regs, &r, t, log_k, flip);
            }
            plan.open(r);
            (fresh, done) = (false, B_LOG);
        }
        let store = |regs: &Vec<Regs<u64, OPT>>, sh: &mut Vec<u64>, r: &Round| {
            for (t, regs) in regs.iter().enumerate().take(r.threads()) {
                regs.store(r, t, |p, x| sh[slot::<OPT>(p)] = x);
            }
        };
        for_each_step(&mut plan, done, log_k, merges, flip, |s| {
            if let Some(r) = s.store {
                store(&regs, &mut sh, &r);
            }
            let r = s.round;
            for (t, regs) in regs.iter_mut().enumerate().take(r.threads()) {
                if s.load {
                    if fresh {
                        regs.load(&r, t, |p| items[p]);
                    } else {
                        regs.load(&r, t, |p| sh[slot::<OPT>(p)]);
                    }
                }
                regs.apply(&r, t, s.op);
            }
            fresh &= !s.load;
        });
        if let Some(r) = plan.finish() {
            store(&regs, &mut sh, &r);
        }
        (0..1 << plan.log_len())
            .map(|i| sh[slot::<OPT>(i)])
            .collect()
    }

    /// The whole top-k of `K = 2^log_k` over `items` by the host's passes.
    fn top<const OPT: u32>(items: &[u64], log_k: u32, log_tile: u32, max_merges: u32) -> Vec<u64> {
        let log_nt = log_tile - B_LOG;
        let mut cur = items.to_vec();
        let mut first = true;
        plan(items.len(), log_k, log_tile, max_merges, |p| {
            assert_eq!(p.len, cur.len());
            let mut out = Vec::new();
            for tile in 0..p.tiles {
                let a = 1usize << p.log_a;
                let tile_items: Vec<u64> = (0..a)
                    .map(|i| cur.get(tile * a + i).copied().unwrap_or(0))
                    .collect();
                let f = flip(tile, p.log_a - p.merges, log_k);
                out.extend(network::<OPT>(
                    &tile_items,
                    log_nt,
                    first,
                    log_k,
                    p.merges,
                    f,
                ));
            }
            assert_eq!(out.len(), p.out);
            cur = out;
            first = false;
        });
        cur
    }

    fn check<const OPT: u32>(n: usize, log_k: u32, log_tile: u32, max_merges: u32, seed: u64) {
        let mut x = seed;
        let items: Vec<u64> = (0..n)
            .map(|row| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Few distinct ranks: ties at the k-th place.
                let rank = x >> 61;
                (rank << 32) | (!(row as u32)) as u64
            })
            .collect();
        let mut want = items.clone();
        want.sort_unstable_by(|a, b| b.cmp(a));
        want.resize(1 << log_k, 0);
        let got = top::<OPT>(&items, log_k, log_tile, max_merges);
        assert_eq!(
            got, want,
            "n {n} log_k {log_k} tile {log_tile} merges {max_merges} opt {OPT}"
        );
    }

    /// `write_few` (opt::FEW) writes a kept tile's first run in the network's order:
    /// best-first, best-last when flipped.
    #[test]
    fn a_tiles_first_run_is_best_first_unless_flipped() {
        let items: Vec<u64> = (0..256u64).map(|i| ((i * 7919) % 256) << 32 | i).collect();
        for flip in [0, 1] {
            let out = network::<{ opt::PRODUCT }>(&items, 4, true, 5, 2, flip);
            let run = &out[..32];
            let best_first = run.windows(2).all(|w| w[0] > w[1]);
            let best_last = run.windows(2).all(|w| w[0] < w[1]);
            assert!(
                if flip == 0 { best_first } else { best_last },
                "flip {flip}"
            );
        }
    }

    #[test]
    fn the_network_finds_the_top_k_on_every_option() {
        for (n, log_k, log_tile, mm) in [
            (1, 4, 8, 4),
            (16, 4, 8, 4),
            (17, 4, 8, 4),
            (255, 4, 8, 4),
            (256, 4, 8, 4),
            (1000, 4, 8, 2),
            (5000, 5, 8, 1),
            (5000, 5, 10, 9),
            (3000, 7, 9, 1),
            (70_000, 6, 10, 4),
            (9000, 10, 12, 1),
            (40_000, 8, 12, 4),
        ] {
            check::<{ opt::PRODUCT }>(n, log_k, log_tile, mm, n as u64);
            check::<0>(n, log_k, log_tile, mm, 1);
            check::<{ opt::PAD | opt::COMBINE }>(n, log_k, log_tile, mm, 2);
            check::<{ opt::EARLY | opt::PAD }>(n, log_k, log_tile, mm, 3);
            check::<{ opt::PERMUTE | opt::PAD | opt::EARLY | opt::COMBINE }>(
                n, log_k, log_tile, mm, 4,
            );
            check::<{ opt::REASSIGN | opt::COMBINE }>(n, log_k, log_tile, mm, 5);
        }
    }

    #[test]
    fn slots_are_a_permutation() {
        for o in [0, opt::PAD, opt::PERMUTE, opt::PAD | opt::PERMUTE] {
            let n = 4096;
            let mut seen = std::vec![false; tile_slots(n, o)];
            for p in 0..n {
                let s = match o {
                    0 => slot::<0>(p),
                    opt::PAD => slot::<{ opt::PAD }>(p),
                    opt::PERMUTE => slot::<{ opt::PERMUTE }>(p),
                    _ => slot::<{ opt::PAD | opt::PERMUTE }>(p),
                };
                assert!(!seen[s]);
                seen[s] = true;
            }
        }
    }

    #[test]
    fn plans_end_at_k() {
        for n in [1, 15, 16, 17, 4095, 4096, 4097, 1 << 20, (1 << 21) + 17] {
            for log_k in 4..=10 {
                let mut last = 0;
                plan(n, log_k, 12, 4, |p| {
                    assert!(p.log_a >= log_k + p.merges && p.log_a <= 12);
                    assert!(p.tiles == 1 || p.merges >= 1);
                    last = p.out;
                });
                assert_eq!(last, 1 << log_k);
            }
        }
    }
}

/// The ablation of §4.4.3 (`f32` keys): the network with fewer of the optimizations.
#[cfg(feature = "sweeps")]
pub mod sweep {
    #[cfg(target_arch = "nvptx64")]
    use super::device::*;
    #[cfg(target_arch = "nvptx64")]
    use super::{B, TopItemKey, opt, tile_slots};

    #[cfg(target_arch = "nvptx64")]
    const C: u32 = opt::COMBINE;
    #[cfg(target_arch = "nvptx64")]
    const E: u32 = opt::COMBINE | opt::EARLY;
    #[cfg(target_arch = "nvptx64")]
    const P: u32 = opt::COMBINE | opt::EARLY | opt::PAD;
    #[cfg(target_arch = "nvptx64")]
    const R: u32 = opt::COMBINE | opt::EARLY | opt::PAD | opt::REASSIGN;
    #[cfg(target_arch = "nvptx64")]
    const L: u32 = opt::PRODUCT & !opt::FEW;

    bitonic_kernels! {
        BASE_SORT = topk_bitonic_base_sort, BASE_REDUCE = topk_bitonic_base_reduce: f32, 256, 0;
        COMBINE_SORT = topk_bitonic_combine_sort, COMBINE_REDUCE = topk_bitonic_combine_reduce: f32, 256, C;
        EARLY_SORT = topk_bitonic_early_sort, EARLY_REDUCE = topk_bitonic_early_reduce: f32, 256, E;
        PAD_SORT = topk_bitonic_pad_sort, PAD_REDUCE = topk_bitonic_pad_reduce: f32, 256, P;
        PADR_SORT = topk_bitonic_padr_sort, PADR_REDUCE = topk_bitonic_padr_reduce: f32, 256, R;
        LEVELS_SORT = topk_bitonic_levels_sort, LEVELS_REDUCE = topk_bitonic_levels_reduce: f32, 256, L;
    }
}
