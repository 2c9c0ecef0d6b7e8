//! Multi-key top-k (thesis §4.5.6): the `k` best rows by one to three key columns compared
//! lexicographically (first key most significant), ties on all keys keeping the smaller row.
//!
//! **Composite.** A row's place in the order is the bit string of its key ranks
//! ([`rank_of`]: first key first, each 32 or 64 bits) followed by `!row` (so the smaller row
//! ranks higher among equal keys): unique per row, and larger is better. [`Composite`] holds
//! it as 32-bit words, at most 7 (three 64-bit keys and the row).
//!
//! **Generalized select.** A radix select ([`SelectState`], the rounds of
//! `ops::topk::hist_round`) handles 96-bit composites, so the composite is cut into
//! *levels* of 96 bits ([`Composite::chunk`]). Level 0's select runs over every listed row;
//! where it ends on one exact chunk shared by more rows than wanted (`resolved == 2`), level
//! 1's select runs over only the rows with that chunk, wanting what is still wanted, and so
//! on. The row is in the last level, so the last level always resolves. A row is chosen
//! ([`Levels::chosen`]) when, at the first level where its chunk differs from the level's
//! prefix, it is better, or when it reaches a resolved level and that select chose it.
//!
//! **Rows listed.** The host lists either every row (exact whatever the input), or the
//! candidates that the single-key threshold filter of `ops::topk` kept: the rows whose first
//! key reaches a threshold that at least `k` rows reach, a superset of the answer (every
//! answer row's first key is at least the `k`-th best first key).
use super::topk::{Candidate, SelectState, TopKState, rank_of};
use crate::radix::RadixKey;

/// The most key columns.
pub const MAX_KEYS: usize = 3;
/// Levels of the generalized select: 7 composite words in 96-bit levels.
pub const LEVELS: usize = 3;
/// Composite words, padded to whole levels.
const WORDS: usize = 3 * LEVELS;

/// A row's composite, in 32-bit words, most significant first; words past the row are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Composite {
    w: [u32; WORDS],
}

impl Composite {
    /// The composite of a row with key ranks `ranks` (the first `nkeys` used, each `64`-bit
    /// when `wide`, else in its low 32 bits).
    #[inline(always)]
    pub fn new(ranks: [u64; MAX_KEYS], nkeys: u32, wide: bool, row: u32) -> Composite {
        let per = if wide { 2 } else { 1 };
        let keys = nkeys * per;
        Composite {
            w: core::array::from_fn(|i| {
                let i = i as u32;
                if i < keys {
                    // `get`: no bounds check (and no panic path) in the kernels.
                    let r = ranks.get((i / per) as usize).copied().unwrap_or(0);
                    if wide && i.is_multiple_of(2) {
                        (r >> 32) as u32
                    } else {
                        r as u32
                    }
                } else if i == keys {
                    !row
                } else {
                    0
                }
            }),
        }
    }

    /// Level `level`'s 96 bits as a select's composite: the high 64 bits and the low 32.
    #[inline(always)]
    pub fn chunk(&self, level: usize) -> (u64, u32) {
        let at = |i: usize| {
            (
                u64::from(self.w[i]) << 32 | u64::from(self.w[i + 1]),
                self.w[i + 2],
            )
        };
        // Constant indices keep the words in registers.
        match level {
            0 => at(0),
            1 => at(3),
            _ => at(6),
        }
    }
}

/// Levels of a composite of `nkeys` keys (`wide`: 64-bit ranks).
pub const fn levels(nkeys: u32, wide: bool) -> usize {
    let words = nkeys as usize * if wide { 2 } else { 1 } + 1;
    words.div_ceil(3)
}

/// Radix-select rounds (8-bit digits) that level `level` of such a composite can take: its
/// words' digits (a level past the row holds only zeros).
pub const fn rounds(nkeys: u32, wide: bool, level: usize) -> usize {
    let words = nkeys as usize * if wide { 2 } else { 1 } + 1;
    let here = words.saturating_sub(3 * level);
    4 * if here < 3 { here } else { 3 }
}

/// The levels' selects, as read from the state (level `l`'s is `states[l].chosen`).
#[derive(Clone, Copy, Debug)]
pub struct Levels {
    /// Each level's select.
    pub sel: [SelectState; LEVELS],
}

impl Levels {
    /// Whether a row of composite `c` is counted at `level`: its chunks of the earlier levels
    /// equal their prefixes (each of those selects ended on one exact chunk).
    #[inline(always)]
    pub fn in_level(&self, c: &Composite, level: usize) -> bool {
        let mut same = true;
        for l in 0..LEVELS {
            if l < level {
                let s = &self.sel[l];
                same &= c.chunk(l) == (s.prefix_rank, s.prefix_low);
            }
        }
        same
    }

    /// Whether the selects of the first `levels` levels chose a row of composite `c`:
    /// decided at the first level where it differs from a tied prefix (better: chosen) or
    /// that resolved (its select's choice). A level that did not finish chooses nothing.
    #[inline(always)]
    pub fn chosen(&self, c: &Composite, levels: usize) -> bool {
        for l in 0..LEVELS {
            if l >= levels {
                break;
            }
            let s = &self.sel[l];
            let (rank, low) = c.chunk(l);
            match s.resolved {
                1 => return s.chosen(rank, low),
                2 if (rank, low) != (s.prefix_rank, s.prefix_low) => {
                    return (rank, low) > (s.prefix_rank, s.prefix_low);
                }
                2 => {}
                _ => return false,
            }
        }
        false
    }
}

/// The states of a multi-key top-k before its first kernel: the first key's threshold
/// select of the `j` best (`width`-bit ranks) in `states[0].ranks`, the filter's and the
/// emit's counts in `states[0].counts`, and each level's select of the 96-bit chunks in
/// `states[l].chosen`, level 0 wanting `k` (the later levels' `need` comes from the level
/// before, see [`TOPK_MULTI_NEXT`]).
pub fn start_states(j: u32, width: u32, k: u32) -> [TopKState; LEVELS] {
    core::array::from_fn(|l| TopKState {
        ranks: SelectState::start(j, width),
        chosen: SelectState::start(if l == 0 { k } else { 0 }, 64),
        counts: Default::default(),
    })
}

/// Makes a finished rank select's threshold inclusive: a select that ended on one rank
/// shared by more elements than wanted (`resolved == 2`) becomes one whose threshold passes
/// every element of at least that rank, so the threshold filter keeps the tied rows (which
/// the later keys may rank anywhere) instead of counting them.
pub fn make_inclusive(st: &mut SelectState) {
    if st.resolved != 1 {
        // The prefix is the tied rank, all of its digits chosen; passing means `rank >=
        // prefix_rank` (see `SelectState::threshold`).
        st.resolved = 1;
        st.last_shift = 32;
    }
}

/// The key columns and the rows listed, as the kernels see them.
#[derive(Clone, Copy)]
pub struct Source<K> {
    /// Key columns (the first `nkeys` valid).
    pub keys: [*const K; MAX_KEYS],
    /// Key columns used.
    pub nkeys: u32,
    /// Ranks for the smallest keys.
    pub smallest: bool,
    /// The filter's candidates, or null for every row.
    pub cands: *const Candidate,
    /// Room of `cands`.
    pub cap: u32,
    /// Rows of the input.
    pub n: u32,
}

impl<K: RadixKey> Source<K> {
    /// Rows listed: the filter's count (at most `cap`), or every row.
    ///
    /// # Safety
    /// `state` is the valid first state.
    #[inline(always)]
    pub unsafe fn len(&self, state: *const TopKState) -> usize {
        if self.cands.is_null() {
            self.n as usize
        } else {
            // SAFETY: valid by contract.
            unsafe { (*state).counts.passed.min(self.cap) as usize }
        }
    }

    /// The row and composite of listed entry `i`.
    ///
    /// # Safety
    /// `i` is below [`Source::len`]; the key columns hold `n` keys.
    #[inline(always)]
    pub unsafe fn composite(&self, i: usize) -> (u32, Composite) {
        let row = if self.cands.is_null() {
            i as u32
        } else {
            // SAFETY: i < len <= cap.
            unsafe { (*self.cands.add(i)).row }
        };
        let ranks: [u64; MAX_KEYS] = core::array::from_fn(|j| {
            if (j as u32) < self.nkeys {
                // SAFETY: row < n, and key column j is valid.
                rank_of(
                    unsafe { self.keys[j].add(row as usize).read() },
                    self.smallest,
                )
            } else {
                0
            }
        });
        let wide = core::mem::size_of::<K>() == 8;
        (row, Composite::new(ranks, self.nkeys, wide, row))
    }

    /// Levels this source's composites have.
    #[inline(always)]
    pub fn levels(&self) -> usize {
        levels(self.nkeys, core::mem::size_of::<K>() == 8)
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{
        Atomic, ballot, block_dim, block_idx, global_idx, grid_dim, lane_id, lanemask_lt, shfl_idx,
        thread_idx,
    };
    use crate::ops::topk::{CHOSEN, HistShared, hist_round};

    /// Reads the levels' selects.
    ///
    /// # Safety
    /// `states` holds [`LEVELS`] valid states.
    #[inline(always)]
    unsafe fn read_levels(states: *const TopKState) -> Levels {
        // SAFETY: valid by contract.
        Levels {
            sel: core::array::from_fn(|l| unsafe { (&raw const (*states.add(l)).chosen).read() }),
        }
    }

    /// One round of level `level`'s select over the listed rows in that level (see
    /// [`Levels::in_level`]); nothing unless every earlier level ended tied. Any grid size.
    ///
    /// # Safety
    /// `src` as for [`Source::composite`]; `states` holds [`LEVELS`] valid states, `hist`
    /// [`super::super::topk::DIGITS`] counters, zero at a level's first round; `NT` is 256.
    #[inline(always)]
    pub unsafe fn level_round<K: RadixKey, const NT: usize>(
        src: &Source<K>,
        states: *mut TopKState,
        level: usize,
        hist: *mut u32,
        sh: HistShared,
    ) {
        // SAFETY: valid by contract.
        let lv = unsafe { read_levels(states) };
        // Uniform: every block reads the same states.
        if lv.sel.iter().take(level).any(|s| s.resolved != 2) {
            return;
        }
        // SAFETY: forwarded.
        let m = unsafe { src.len(states) };
        // SAFETY: forwarded; level < LEVELS.
        unsafe {
            hist_round::<NT>(states.add(level), CHOSEN, hist, 0, sh, |st, local| {
                // Block-uniform trips: the round's barriers follow the loop.
                let mut base = block_idx() * NT;
                while base < m {
                    let i = base + thread_idx();
                    if i < m {
                        let (_, c) = src.composite(i);
                        let (rank, low) = c.chunk(level);
                        if lv.in_level(&c, level) && st.in_bucket(rank, low) {
                            local.atomic_add(SelectState::digit(rank, low, st.shift) as usize, 1);
                        }
                    }
                    base += grid_dim() * NT;
                }
            })
        }
    }

    /// Writes the rows the levels chose to `out` (unordered, at most `out_cap`), counting them
    /// in the first state's `counts.emitted`: one atomic per warp that has any. Any grid size.
    ///
    /// # Safety
    /// As for [`level_round`]; `out` holds `out_cap` rows; blocks of `NT` threads.
    #[inline(always)]
    pub unsafe fn emit_rows<K: RadixKey, const NT: usize>(
        src: &Source<K>,
        states: *mut TopKState,
        out: *mut u32,
        out_cap: u32,
    ) {
        // SAFETY: valid by contract.
        let (lv, m) = unsafe { (read_levels(states), src.len(states)) };
        let levels = src.levels();
        // Warp-uniform trips: the ballot needs every lane.
        let mut base = block_idx() * NT;
        while base < m {
            let i = base + thread_idx();
            let (row, pick) = if i < m {
                // SAFETY: i < m.
                let (row, c) = unsafe { src.composite(i) };
                (row, lv.chosen(&c, levels))
            } else {
                (0, false)
            };
            let lanes = ballot(pick);
            if lanes != 0 {
                let first = lanes.trailing_zeros();
                let mut at = 0;
                if lane_id() == first {
                    // SAFETY: `counts` is a field of the valid first state.
                    at = unsafe {
                        u32::atomic_add(&raw mut (*states).counts.emitted, lanes.count_ones())
                    };
                }
                let at = shfl_idx(at, first) + (lanes & lanemask_lt()).count_ones();
                if pick && at < out_cap {
                    // SAFETY: at < out_cap.
                    unsafe { out.add(at as usize).write(row) };
                }
            }
            base += grid_dim() * NT;
        }
    }

    /// Item `i < k` of `out` is item `rows[i]` of `col`, items of `words` 32-bit words (keys
    /// and values of the chosen rows, of any width). Any grid size.
    ///
    /// # Safety
    /// `rows` holds `k` rows within `col`; `out` holds `k * words` words.
    #[inline(always)]
    pub unsafe fn gather(col: *const u32, rows: *const u32, k: usize, words: usize, out: *mut u32) {
        // Never 0: no division-by-zero panic path in the kernel.
        let words = words.max(1);
        let mut i = global_idx();
        while i < k * words {
            let (item, w) = (i / words, i % words);
            // SAFETY: valid by contract.
            unsafe {
                let row = rows.add(item).read() as usize;
                out.add(i).write(col.add(row * words + w).read());
            }
            i += grid_dim() * block_dim();
        }
    }
}

/// Parameters of a level round over keys `K`:
/// `(k1, k2, k3, nkeys, smallest, cands, cap, n, states, level, hist)`.
pub type MultiHistArgs<K> = (
    *const K,
    *const K,
    *const K,
    u32,
    u32,
    *const Candidate,
    u32,
    u32,
    *mut TopKState,
    u32,
    *mut u32,
);
/// Parameters of the emit over keys `K`:
/// `(k1, k2, k3, nkeys, smallest, cands, cap, n, states, out, k)`.
pub type MultiEmitArgs<K> = (
    *const K,
    *const K,
    *const K,
    u32,
    u32,
    *const Candidate,
    u32,
    u32,
    *mut TopKState,
    *mut u32,
    u32,
);

macro_rules! topk_multi_kernels {
    ($($t:ty: $hist:ident = $hname:ident, $emit:ident = $ename:ident;)*) => {$(
        $crate::kernel! {
            /// One round of a level's select (see `level_round`).
            $hist = $hname[NT = 256, IPT = 1](
                k1: *const $t, k2: *const $t, k3: *const $t, nkeys: u32, smallest: u32,
                cands: *const Candidate, cap: u32, n: u32, states: *mut TopKState, level: u32,
                hist: *mut u32
            ) {
                let sh = $crate::ops::topk::HistShared {
                    hist: $crate::shared_array!(multi_hist: [u32; $crate::ops::topk::DIGITS]),
                    warps: $crate::shared_array!(multi_warps: [u32; $crate::ops::topk::DIGITS / 32 + 1]),
                };
                let src = Source { keys: [k1, k2, k3], nkeys, smallest: smallest != 0, cands, cap, n };
                // SAFETY: the host passes `nkeys` columns of `n` keys, room for `cap`
                // candidates (or none: every row), the states and a zeroed histogram.
                unsafe { level_round::<$t, NT>(&src, states, level as usize, hist, sh) }
            }
        }
        $crate::kernel! {
            /// The chosen rows (see `emit_rows`).
            $emit = $ename[NT = 256, IPT = 1](
                k1: *const $t, k2: *const $t, k3: *const $t, nkeys: u32, smallest: u32,
                cands: *const Candidate, cap: u32, n: u32, states: *mut TopKState,
                out: *mut u32, k: u32
            ) {
                let src = Source { keys: [k1, k2, k3], nkeys, smallest: smallest != 0, cands, cap, n };
                // SAFETY: as for the round; `out` holds `k` rows.
                unsafe { emit_rows::<$t, NT>(&src, states, out, k) }
            }
        }
    )*};
}

topk_multi_kernels! {
    f32: TOPK_MULTI_HIST_F32 = topk_multi_hist_f32, TOPK_MULTI_EMIT_F32 = topk_multi_emit_f32;
    f64: TOPK_MULTI_HIST_F64 = topk_multi_hist_f64, TOPK_MULTI_EMIT_F64 = topk_multi_emit_f64;
    i32: TOPK_MULTI_HIST_I32 = topk_multi_hist_i32, TOPK_MULTI_EMIT_I32 = topk_multi_emit_i32;
    u32: TOPK_MULTI_HIST_U32 = topk_multi_hist_u32, TOPK_MULTI_EMIT_U32 = topk_multi_emit_u32;
}

crate::kernel! {
    /// Makes the first key's threshold inclusive ([`make_inclusive`]), between its select and
    /// the filter. One thread.
    TOPK_MULTI_INCLUSIVE = topk_multi_inclusive[NT = 32, IPT = 1](states: *mut TopKState) {
        if crate::arch::global_idx() == 0 {
            // SAFETY: the host passes the valid states.
            unsafe { make_inclusive(&mut (*states).ranks) }
        }
    }
}

crate::kernel! {
    /// Before level `level`'s rounds: where the level before ended tied, this level wants what
    /// that one still wanted. One thread.
    TOPK_MULTI_NEXT = topk_multi_next[NT = 32, IPT = 1](states: *mut TopKState, level: u32) {
        if crate::arch::global_idx() == 0 && level > 0 && (level as usize) < LEVELS {
            // SAFETY: the host passes LEVELS valid states; level - 1 and level are in range.
            unsafe {
                let before = (*states.add(level as usize - 1)).chosen;
                if before.resolved == 2 {
                    (*states.add(level as usize)).chosen.need = before.need;
                }
            }
        }
    }
}

crate::kernel! {
    /// The chosen rows' items of a column of `words`-word items (see `gather`).
    TOPK_GATHER = topk_gather[NT = 256, IPT = 1](col: *const u32, rows: *const u32, k: u32, words: u32, out: *mut u32) {
        // SAFETY: the host passes `k` rows within `col` and room for `k * words` words.
        unsafe { gather(col, rows, k as usize, words as usize, out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// The host twin of the device rounds: every level's select over `comps`, as the kernels
    /// run them (gated on the levels before, `need` carried from the level before).
    fn run_levels(comps: &[Composite], k: u32, lv_count: usize) -> Levels {
        let mut lv = Levels {
            sel: start_states(k, 32, k).map(|s| s.chosen),
        };
        for level in 0..lv_count {
            if level > 0 {
                if lv.sel[level - 1].resolved != 2 {
                    break;
                }
                lv.sel[level].need = lv.sel[level - 1].need;
            }
            for _ in 0..12 {
                if lv.sel[level].resolved != 0 {
                    break;
                }
                let (before, st) = (lv, lv.sel[level]);
                let mut hist = [0u32; super::super::topk::DIGITS];
                for c in comps {
                    let (r, l) = c.chunk(level);
                    if before.in_level(c, level) && st.in_bucket(r, l) {
                        hist[SelectState::digit(r, l, st.shift) as usize] += 1;
                    }
                }
                lv.sel[level].pick(|d| hist[d], 0);
            }
        }
        lv
    }

    fn lcg(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) % m
        }
    }

    #[test]
    fn composite_words_and_levels() {
        let c = Composite::new([0xa, 0xb, 0xc], 3, false, 5);
        assert_eq!(c.chunk(0), (0xa << 32 | 0xb, 0xc));
        assert_eq!(c.chunk(1), ((!5u64 & 0xffff_ffff) << 32, 0));
        let w = Composite::new([0x1_0000_0002, 0x3_0000_0004, 0], 2, true, 0);
        assert_eq!(w.chunk(0), (0x1_0000_0002, 3));
        assert_eq!(w.chunk(1), (0x4_ffff_ffff, 0));
        assert_eq!(levels(1, false), 1);
        assert_eq!(levels(2, false), 1);
        assert_eq!(levels(3, false), 2);
        assert_eq!(levels(3, true), 3);
        assert_eq!(rounds(3, false, 0), 12);
        assert_eq!(rounds(3, false, 1), 4);
        assert_eq!(rounds(3, true, 2), 4);
        assert_eq!(rounds(1, false, 1), 0);
    }

    #[test]
    fn generalized_select_chooses_the_lexicographic_best() {
        let mut rnd = lcg(11);
        for (nkeys, wide, distinct) in [
            (2, false, 4u64),
            (3, false, 3),
            (3, false, 1),
            (3, true, 2),
            (2, true, u64::MAX),
            (1, true, 5),
            (3, false, u64::MAX),
        ] {
            let n = 700;
            // Narrow keys' ranks are 32 bits.
            let mask = if wide { u64::MAX } else { u32::MAX.into() };
            let ranks: Vec<[u64; 3]> = (0..n)
                .map(|_| core::array::from_fn(|_| rnd(distinct) & mask))
                .collect();
            let comps: Vec<Composite> = (0..n)
                .map(|i| Composite::new(ranks[i], nkeys, wide, i as u32))
                .collect();
            let mut order: Vec<usize> = (0..n).collect();
            let key = |i: usize| {
                let r = ranks[i];
                let m = |j: usize| if j < nkeys as usize { r[j] } else { 0 };
                (m(0), m(1), m(2), core::cmp::Reverse(i))
            };
            order.sort_by_key(|&i| core::cmp::Reverse(key(i)));
            let lvs = levels(nkeys, wide);
            for k in [1u32, 2, 31, 100, 699, 700] {
                let lv = run_levels(&comps, k, lvs);
                let mut got: Vec<usize> = (0..n).filter(|&i| lv.chosen(&comps[i], lvs)).collect();
                let mut want = order[..k as usize].to_vec();
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(
                    got, want,
                    "nkeys {nkeys} wide {wide} distinct {distinct} k {k}"
                );
            }
        }
    }

    #[test]
    fn inclusive_threshold_passes_the_tied_rank() {
        let mut st = SelectState::start(3, 32);
        st.prefix_rank = 7 << 32;
        st.resolved = 2;
        make_inclusive(&mut st);
        let th = st.threshold();
        assert!(th.passes(7 << 32) && th.passes(8 << 32) && !th.passes((7 << 32) - 1));
        assert!(!th.has_tie);
    }
}
