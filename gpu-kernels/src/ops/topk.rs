//! Top-k by selection: radix select (thesis §4.2.2, §4.4.2) and the threshold filter built on
//! it, both over the **ranks** of the keys.
//!
//! A key's rank is its order-preserving bits ([`RadixKey::ordered`], complemented for the
//! smallest keys) widened to `u64`, so "better" is always "larger rank". Ties break on the
//! row: an element is the 96-bit composite `rank << 32 | !row`, unique per row, so the best
//! `k` composites are exactly the documented result (smaller rows first among equal keys).
//!
//! **Radix select** ([`SelectState`]): rounds of 8-bit digits from the top. A round counts
//! the digit of every element whose higher digits equal the prefix chosen so far, then picks
//! the digit holding the `need`-th best and narrows the prefix; all rounds run in one launch
//! (`hist_rounds`). It stops early (`resolved`) once the chosen bucket is wanted whole, or
//! holds no more than the select's `slack` past the wanted. Sources: the input keys (ranks
//! only, exact select), a sample of ranks, and the filter's candidates (composites, so rows
//! resolve ties; their select starts below the digits they all share).
//!
//! **Threshold filter**: a radix select over a strided sample of the ranks gives a threshold
//! that, for the sample, `j` elements reach; [`FilterCounts`] then reports how many of the
//! whole input pass it in one read of the input, which writes the passing elements
//! ([`Candidate`], unordered, up to a capacity) and, where the select ended on a rank more
//! elements share than are wanted (a tie), each tile's count of them. The host finishes on the
//! candidates; where they are fewer than `k`, a prefix sum of the tie counts and a fill kernel
//! over only the first tiles add the tied rows in row order; where too few reach the
//! threshold or too many pass it, the host runs the exact select instead.
//!
//! **Key sources.** The kernels that read the input (the sample, the exact round, the filter
//! and the tie fill) read it through a `KeySource` (device only): a key column
//! (`Column`), a key computed from two `u32` columns ([`linear_key`], `Linear`), or either
//! behind a row predicate on a `u32` column ([`RowPredicate`], `Filtered`), whose rejected
//! rows are simply not live: never counted, never candidates, never ties. So a top-k of a
//! filtered or computed key costs one read of the columns it needs, with no intermediate
//! column. Every kernel of a source takes the same four leading parameters (the key or first
//! column, the second column, the filter column and the [`SourceParams`]); a source ignores
//! those it does not use (the host passes null).
use crate::radix::RadixKey;
use crate::spec::KernelSpec;

/// Bits per radix-select digit.
pub const DIGIT_BITS: u32 = 8;
/// Buckets per digit.
pub const DIGITS: usize = 1 << DIGIT_BITS;
/// Rounds of the longest select: a composite of a 64-bit rank and a row, a digit at a time.
pub const MAX_ROUNDS: usize = (64 + 32) / DIGIT_BITS as usize;
/// Words of a multi-round select's histograms: one per round (see `hist_rounds`).
pub const HIST_WORDS: usize = MAX_ROUNDS * DIGITS;

/// Where a radix select stands, in device memory; the host sets `need`, `shift` and zeroes
/// the rest before the first round.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct SelectState {
    /// Rank bits of the chosen prefix.
    pub prefix_rank: u64,
    /// Low (`!row`) bits of the chosen prefix (composites only).
    pub prefix_low: u32,
    /// Elements still wanted from the current bucket (at least 1).
    pub need: u32,
    /// Low bit of the next digit, counted in the composite `rank << 32 | low`.
    pub shift: u32,
    /// 0 while rounds remain; 1 once the chosen bucket was wanted whole, or holds no more
    /// than `slack` elements past the wanted (then exactly the elements whose composite
    /// shifted right by `last_shift` is at least the prefix's are chosen: `need` plus at
    /// most `slack`); 2 when the digits ran out on a value more elements share than are
    /// wanted.
    pub resolved: u32,
    /// Low bit of the last digit chosen.
    pub last_shift: u32,
    /// Rounds picked so far.
    pub rounds: u32,
    /// Blocks that have counted: in the current round (`hist_round`: the last one picks), or
    /// in all rounds so far (`hist_rounds`' grid barrier); zero between launches.
    pub arrived: u32,
    /// Blocks of a `hist_rounds` launch that are done (the last one writes the state); zero
    /// between launches.
    pub departed: u32,
    /// Elements the select may choose past the wanted, to stop a round earlier (0: exact).
    pub slack: u32,
    /// Padding (zero).
    pub pad: u32,
}

const _: () = assert!(core::mem::size_of::<SelectState>() == 48);

impl SelectState {
    /// The state before the first round of a select of the `need` best, whose first digit's
    /// low bit is `shift` (`rank_bits + 32 - 8` for composites, the same for ranks alone,
    /// whose rounds then stop at bit 32).
    pub const fn start(need: u32, rank_bits: u32) -> SelectState {
        SelectState {
            prefix_rank: 0,
            prefix_low: 0,
            need,
            shift: rank_bits + 32 - DIGIT_BITS,
            resolved: 0,
            last_shift: 0,
            rounds: 0,
            arrived: 0,
            departed: 0,
            slack: 0,
            pad: 0,
        }
    }

    /// The same select allowed to choose up to `slack` elements past the wanted.
    pub const fn with_slack(self, slack: u32) -> SelectState {
        SelectState { slack, ..self }
    }

    /// A fresh composite select (no round picked) over elements whose ranks all lie in
    /// `lo..=hi`, started at the digit of their highest differing bit: the digits above it
    /// are shared, so their rounds would count every element in one bucket. Unchanged where
    /// `hi < lo` (no element) or after a round.
    pub fn skip_shared(self, lo: u64, hi: u64) -> SelectState {
        if hi < lo || self.rounds != 0 || self.shift < 32 {
            return self;
        }
        let diff = lo ^ hi;
        // Where one rank is shared, the rows' first digit; else the digit holding the highest
        // differing bit, with the bits above it as the prefix.
        let (prefix_rank, shift) = if diff == 0 {
            (lo, 32 - DIGIT_BITS)
        } else {
            let low = (63 - diff.leading_zeros()) / DIGIT_BITS * DIGIT_BITS;
            let above = low + DIGIT_BITS;
            (high(lo, above) << above.min(63), 32 + low)
        };
        if shift > self.shift {
            return self;
        }
        SelectState {
            prefix_rank,
            shift,
            ..self
        }
    }

    /// The digit of composite `(rank, low)` at `shift`.
    #[inline(always)]
    pub fn digit(rank: u64, low: u32, shift: u32) -> u32 {
        let d = if shift >= 32 {
            rank >> (shift - 32)
        } else {
            u64::from(low >> shift)
        };
        d as u32 & (DIGITS as u32 - 1)
    }

    /// Whether composite `(rank, low)` agrees with the prefix on every bit from `bit` up.
    #[inline(always)]
    pub fn agrees_from(&self, rank: u64, low: u32, bit: u32) -> bool {
        if bit >= 32 {
            high(rank, bit - 32) == high(self.prefix_rank, bit - 32)
        } else {
            rank == self.prefix_rank && high32(low, bit) == high32(self.prefix_low, bit)
        }
    }

    /// Whether `(rank, low)` is counted in the current round: its digits above `shift` are
    /// the prefix's.
    #[inline(always)]
    pub fn in_bucket(&self, rank: u64, low: u32) -> bool {
        self.agrees_from(rank, low, self.shift + DIGIT_BITS)
    }

    /// Whether a resolved select chose composite `(rank, low)`.
    #[inline(always)]
    pub fn chosen(&self, rank: u64, low: u32) -> bool {
        let s = self.last_shift;
        if s >= 32 {
            high(rank, s - 32) >= high(self.prefix_rank, s - 32)
        } else {
            rank > self.prefix_rank
                || (rank == self.prefix_rank && high32(low, s) >= high32(self.prefix_low, s))
        }
    }

    /// The pick: given the round's histogram, chooses the digit that holds the `need`-th best,
    /// narrows the prefix and moves to the next digit (stopping at bit `stop`).
    pub fn pick(&mut self, hist: impl Fn(usize) -> u32, stop: u32) {
        let mut above = 0u32;
        let mut d = DIGITS;
        while d > 0 {
            d -= 1;
            let c = hist(d);
            if above + c >= self.need {
                self.narrow(d as u32, c, above, stop);
                return;
            }
            above += c;
        }
    }

    /// Narrows the select to digit `d`, whose bucket holds `count` elements with `above`
    /// elements in better buckets, and moves to the next digit (stopping at bit `stop`).
    #[inline(always)]
    pub fn narrow(&mut self, d: u32, count: u32, above: u32, stop: u32) {
        self.need -= above;
        let s = self.shift;
        if s >= 32 {
            self.prefix_rank |= (d as u64) << (s - 32);
        } else {
            self.prefix_low |= d << s;
        }
        self.last_shift = s;
        self.rounds += 1;
        if count <= self.need + self.slack {
            self.resolved = 1;
        } else if s >= stop + DIGIT_BITS {
            self.shift -= DIGIT_BITS;
        } else {
            // No digit left: the prefix is one exact value shared by more elements than
            // wanted (only ranks alone tie; composites are unique).
            self.resolved = 2;
        }
    }

    /// What a select over ranks alone (stopped at bit 32) says about threshold filtering:
    /// elements whose rank is at least [`Threshold::lo`] pass, and where the rounds ended on a
    /// rank shared by more elements than wanted, those equal to [`Threshold::tie`] queue in
    /// row order.
    #[inline(always)]
    pub fn threshold(&self) -> Threshold {
        if self.resolved == 1 {
            let s = self.last_shift - 32;
            Threshold {
                lo: high(self.prefix_rank, s) << s,
                any_above: true,
                tie: 0,
                has_tie: false,
            }
        } else {
            // Ended on one rank: strictly better ranks pass, equal ones queue.
            let p = self.prefix_rank;
            Threshold {
                lo: p.wrapping_add(1),
                any_above: p != u64::MAX,
                tie: p,
                has_tie: true,
            }
        }
    }
}

/// `x >> s`, zero when `s` is 64 or more.
#[inline(always)]
fn high(x: u64, s: u32) -> u64 {
    if s >= 64 { 0 } else { x >> s }
}

/// `x >> s`, zero when `s` is 32 or more.
#[inline(always)]
fn high32(x: u32, s: u32) -> u32 {
    if s >= 32 { 0 } else { x >> s }
}

/// A threshold filter's test, derived from a finished rank select.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// Ranks at least this pass (when `any_above`).
    pub lo: u64,
    /// False when no rank can pass (the tie is the largest rank).
    pub any_above: bool,
    /// The rank whose elements queue in row order (when `has_tie`).
    pub tie: u64,
    /// Whether equal ranks queue.
    pub has_tie: bool,
}

impl Threshold {
    /// Whether rank `r` passes.
    #[inline(always)]
    pub fn passes(&self, r: u64) -> bool {
        self.any_above && r >= self.lo
    }

    /// Whether rank `r` queues as a tie.
    #[inline(always)]
    pub fn ties(&self, r: u64) -> bool {
        self.has_tie && r == self.tie
    }

    /// The same test on a key's own ordered bits `B` (`u32` for 32-bit keys), so that the
    /// filter compares one word per key rather than a widened rank: ranks of such keys are
    /// below `2^B::BITS`, so a `lo` past that lets no key pass.
    #[inline(always)]
    pub fn narrow<B: TryFrom<u64> + Default>(&self) -> KeyThreshold<B> {
        let lo = B::try_from(self.lo).ok();
        KeyThreshold {
            any_above: self.any_above && lo.is_some(),
            lo: lo.unwrap_or_default(),
            has_tie: self.has_tie,
            // A select over these keys' ranks ends on one of them: the tie always fits.
            tie: B::try_from(self.tie).unwrap_or_default(),
        }
    }
}

/// A [`Threshold`] on the ordered bits `B` of one key type ([`Threshold::narrow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyThreshold<B> {
    /// Ordered bits at least this pass (when `any_above`).
    pub lo: B,
    /// False when no key can pass.
    pub any_above: bool,
    /// The ordered bits whose keys queue in row order (when `has_tie`).
    pub tie: B,
    /// Whether equal keys queue.
    pub has_tie: bool,
}

/// An element that passed the threshold: its rank and row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Candidate {
    /// The key's rank.
    pub rank: u64,
    /// Its row.
    pub row: u32,
    /// Padding (zero).
    pub pad: u32,
}

/// What a filter pass reports (zeroed before it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct FilterCounts {
    /// Elements that passed (may exceed the candidates' capacity: then only that many were
    /// written, and the host must not use them).
    pub passed: u32,
    /// Elements equal to the tie (0 without a tie).
    pub tied: u32,
    /// Elements an emit kernel wrote.
    pub emitted: u32,
    /// Rows of a filtered source that its predicate keeps (0 for a source without a filter,
    /// where every row is live).
    pub live: u32,
    /// The largest rank that passed (0 where none did), so that the candidates' select can
    /// skip the digits every candidate shares ([`SelectState::skip_shared`]).
    pub max_rank: u64,
}

/// All of a top-k's device state, uploaded once per call and read back once: the rank select
/// (over the sample, or exact), the candidates' composite select and the filter's counts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct TopKState {
    /// The rank select whose threshold the filter applies.
    pub ranks: SelectState,
    /// The select of the best `k` candidates.
    pub chosen: SelectState,
    /// The filter's and the emit's counts.
    pub counts: FilterCounts,
}

const _: () = assert!(core::mem::size_of::<TopKState>() == 120);

/// Which select of a [`TopKState`] a histogram round advances.
pub const RANKS: u32 = 0;
/// See [`RANKS`].
pub const CHOSEN: u32 = 1;

impl TopKState {
    /// The select `which` ([`RANKS`] or [`CHOSEN`]).
    ///
    /// # Safety
    /// `state` is valid.
    #[inline(always)]
    pub unsafe fn select(state: *mut TopKState, which: u32) -> *mut SelectState {
        // SAFETY: a field of a valid struct.
        unsafe {
            if which == RANKS {
                &raw mut (*state).ranks
            } else {
                &raw mut (*state).chosen
            }
        }
    }
}

/// A predicate on one `u32` per row: `lo <= x <= hi` ([`RowPredicate::RANGE`]) or `x` among
/// up to [`RowPredicate::MAX_VALUES`] values ([`RowPredicate::SET`]). The CPU twins evaluate
/// the same [`RowPredicate::keeps`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct RowPredicate {
    /// [`RowPredicate::RANGE`] or [`RowPredicate::SET`].
    pub kind: u32,
    /// Smallest kept value (a range).
    pub lo: u32,
    /// Largest kept value (a range).
    pub hi: u32,
    /// The kept values (a set); unused slots repeat the first.
    pub values: [u32; 4],
}

impl RowPredicate {
    /// `lo <= x <= hi`.
    pub const RANGE: u32 = 0;
    /// `x` in `values`.
    pub const SET: u32 = 1;
    /// Most values of a set.
    pub const MAX_VALUES: usize = 4;

    /// `lo <= x <= hi` (keeps nothing when `lo > hi`).
    pub const fn range(lo: u32, hi: u32) -> RowPredicate {
        RowPredicate {
            kind: Self::RANGE,
            lo,
            hi,
            values: [0; 4],
        }
    }

    /// `x` in `values`; `None` unless it holds 1 to [`RowPredicate::MAX_VALUES`] values.
    pub fn set(values: &[u32]) -> Option<RowPredicate> {
        let first = *values.first()?;
        if values.len() > Self::MAX_VALUES {
            return None;
        }
        let mut v = [first; 4];
        v[..values.len()].copy_from_slice(values);
        Some(RowPredicate {
            kind: Self::SET,
            lo: 0,
            hi: 0,
            values: v,
        })
    }

    /// Whether a row whose value is `x` is kept (four compares, no branch per value).
    #[inline(always)]
    pub fn keeps(&self, x: u32) -> bool {
        if self.kind == Self::SET {
            let v = self.values;
            (x == v[0]) | (x == v[1]) | (x == v[2]) | (x == v[3])
        } else {
            (self.lo <= x) & (x <= self.hi)
        }
    }
}

/// Constants of a key source: the weights of a linear key and the predicate of a filter
/// (each read only by the sources that have one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct SourceParams {
    /// Weight of the first column of a linear key.
    pub w0: f32,
    /// Weight of the second column.
    pub w1: f32,
    /// The row predicate of a filtered source.
    pub keep: RowPredicate,
}

const _: () = assert!(core::mem::size_of::<SourceParams>() == 36);

/// The key of a linear source: `w0 * c0 + w1 * c1` in `f32`, each product and the sum rounded
/// once (Rust never contracts them into an FMA), so the kernels and the CPU, both calling
/// this, agree bit for bit.
#[inline(always)]
pub fn linear_key(w0: f32, c0: u32, w1: f32, c1: u32) -> f32 {
    w0 * c0 as f32 + w1 * c1 as f32
}

/// The four kernels of a key source whose first column holds `C`: what the host's top-k
/// launches for it.
pub struct SourceKernels<C> {
    /// The sample.
    pub sample: KernelSpec<SampleArgs<C>>,
    /// The exact radix-select round.
    pub hist: KernelSpec<HistKeysArgs<C>>,
    /// The threshold filter.
    pub filter: KernelSpec<FilterArgs<C>>,
    /// The tie fill.
    pub fill: KernelSpec<FillArgs<C>>,
    /// Launch the filter as a resident grid (else one block per tile); see
    /// `KeySource::RESIDENT_FILTER`.
    pub resident_filter: bool,
}

// Written out: derives would require `C: Clone`.
impl<C> Clone for SourceKernels<C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for SourceKernels<C> {}

/// The rank of a key: its order-preserving bits, complemented for the smallest, widened.
#[inline(always)]
pub fn rank_of<K: RadixKey>(key: K, smallest: bool) -> u64 {
    K::ordered(key.into_raw(), smallest).into()
}

/// Elements per thread a select over a sample or the candidates keeps in registers across
/// its rounds (where its grid has threads enough).
pub const CACHED: usize = 16;

/// Adjacent rows a sample reads together (one 32-byte sector of 32-bit keys).
pub const SAMPLE_RUN: usize = 8;

/// The most chosen candidates the order kernel ([`TOPK_ORDER`]) places (each of its blocks
/// stages them all in shared memory); a larger `k` is ordered on the host.
pub const ORDER_MAX: usize = 1024;
/// Threads of the order kernel that place one candidate together.
pub const ORDER_SPLIT: usize = 16;

impl Candidate {
    /// The candidate's place in a result as one value, larger first: the rank, then the
    /// complemented row (the smaller row first among equal ranks). Rows are distinct, so no
    /// two candidates have the same.
    #[inline(always)]
    pub fn composite(&self) -> (u64, u32) {
        (self.rank, !self.row)
    }
}

/// Whether chosen candidate `a` comes before `b` in a result (see [`Candidate::composite`]).
#[inline(always)]
pub fn ranks_before(a: &Candidate, b: &Candidate) -> bool {
    a.composite() > b.composite()
}

/// Shared buffers of a resident filter's staged tiles: the current one and two in flight.
pub const STAGES: usize = 3;

/// Length of a filter's tie counts over `tiles` tiles of `nt` threads (so also the index of
/// tile `tiles`' first count): one count per warp of each tile, so that a warp writes its own
/// without waiting for the rest of its block.
pub const fn tie_count_len(tiles: usize, nt: usize) -> usize {
    tiles * nt.div_ceil(32)
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{
        Atomic, Shared, any, block_idx, copy_async_commit, copy_async_wait_groups, grid_dim,
        lane_id, shfl_idx, shfl_xor, sync_threads, thread_idx, warp_id, warp_inclusive_sum,
        warp_reduce,
    };
    use crate::block::{
        Tile, block_compact_ranks, block_load_as, block_load_staged, block_stage, stage_bytes,
    };

    /// Where the per-key kernels read their keys: a tile at a time (the exact round, the
    /// filter, the tie fill) or one row (the sample). A row is *live* when the source has it
    /// (in bounds) and its filter, if any, keeps it.
    pub trait KeySource: Copy {
        /// The key type (its tile layout is the one every column of the source loads in).
        type Key: RadixKey + Default + Copy;
        /// Element type of the first column.
        type Col: Copy;
        /// Whether rows can fail a predicate (then the filter counts the live ones).
        const FILTERED: bool;
        /// Whether the filter pass runs as a resident grid that loops over the tiles (a
        /// plain column: no block launched per tile) rather than one block per tile (a source
        /// of several columns, whose loop would spill registers; see docs/perf-log.md).
        const RESIDENT_FILTER: bool = false;

        /// The source over the kernel's four leading parameters.
        ///
        /// # Safety
        /// The pointers the source reads are valid for the kernel's rows; `params` is valid
        /// where the source reads it.
        unsafe fn new(
            c0: *const Self::Col,
            c1: *const u32,
            fcol: *const u32,
            params: *const SourceParams,
        ) -> Self;

        /// Row `i`'s key and whether it is live.
        ///
        /// # Safety
        /// `i` is a row of the input.
        unsafe fn at(&self, i: usize) -> (Self::Key, bool);

        /// Loads the tile of rows from `start` (`valid` of them) into `items` in the layout of
        /// `Tile<Self::Key, NT, IPT>` and returns the live mask (bit `k` for item `k`);
        /// `sel`: only those items are needed (others may stay unread).
        ///
        /// # Safety
        /// `start + valid` rows exist; `start` is a multiple of the tile.
        unsafe fn load<const NT: usize, const IPT: usize>(
            &self,
            start: usize,
            valid: usize,
            sel: Option<&[bool; IPT]>,
            items: &mut [Self::Key; IPT],
        ) -> u64;

        /// Starts copying the full tile of rows from `start` to the shared address `dst`
        /// ([`block_stage`]); only where `RESIDENT_FILTER` (a plain column; a source of several
        /// columns has no room in shared memory for their tiles).
        ///
        /// # Safety
        /// As for [`block_stage`], with the tile's `NT * IPT` rows from `start` in bounds.
        #[inline(always)]
        unsafe fn stage<const NT: usize, const IPT: usize>(&self, start: usize, dst: u32) {
            let _ = (start, dst);
        }

        /// The full tile of rows from `start` that [`KeySource::stage`] copied to `src`, as
        /// [`KeySource::load`] gives it; by default (a source that stages nothing) loaded
        /// from the columns.
        ///
        /// # Safety
        /// As for [`block_load_staged`]; the tile's `NT * IPT` rows from `start` are in bounds.
        #[inline(always)]
        unsafe fn load_staged<const NT: usize, const IPT: usize>(
            &self,
            src: u32,
            start: usize,
            items: &mut [Self::Key; IPT],
        ) -> u64 {
            let _ = src;
            // SAFETY: forwarded.
            unsafe { self.load::<NT, IPT>(start, NT * IPT, None, items) }
        }
    }

    /// The mask of a tile's items that are in bounds.
    #[inline(always)]
    fn in_bounds<K, const NT: usize, const IPT: usize>(valid: usize) -> u64 {
        let t = thread_idx();
        (0..IPT).fold(0, |m, k| {
            m | ((Tile::<K, NT, IPT>::offset(t, k) < valid) as u64) << k
        })
    }

    /// A key column.
    #[derive(Clone, Copy)]
    pub struct Column<K> {
        keys: *const K,
    }

    impl<K: RadixKey + Default + Copy> KeySource for Column<K> {
        type Key = K;
        type Col = K;
        const FILTERED: bool = false;
        const RESIDENT_FILTER: bool = true;

        #[inline(always)]
        unsafe fn new(c0: *const K, _: *const u32, _: *const u32, _: *const SourceParams) -> Self {
            Column { keys: c0 }
        }

        #[inline(always)]
        unsafe fn at(&self, i: usize) -> (K, bool) {
            // SAFETY: a row of the input.
            (unsafe { self.keys.add(i).read() }, true)
        }

        #[inline(always)]
        unsafe fn load<const NT: usize, const IPT: usize>(
            &self,
            start: usize,
            valid: usize,
            sel: Option<&[bool; IPT]>,
            items: &mut [K; IPT],
        ) -> u64 {
            // SAFETY: the tile's `valid` keys are in bounds.
            unsafe { block_load_as::<K, K, NT, IPT>(self.keys.add(start), valid, sel, items) };
            in_bounds::<K, NT, IPT>(valid)
        }

        #[inline(always)]
        unsafe fn stage<const NT: usize, const IPT: usize>(&self, start: usize, dst: u32) {
            // SAFETY: forwarded; tiles start at multiples of the tile size from an aligned
            // column.
            unsafe { block_stage::<K, NT, IPT>(self.keys.add(start), dst) }
        }

        #[inline(always)]
        unsafe fn load_staged<const NT: usize, const IPT: usize>(
            &self,
            src: u32,
            _start: usize,
            items: &mut [K; IPT],
        ) -> u64 {
            // SAFETY: forwarded.
            unsafe { block_load_staged::<K, NT, IPT>(src, items) };
            u64::MAX >> (64 - IPT)
        }
    }

    /// The `f32` key [`linear_key`] of two `u32` columns.
    #[derive(Clone, Copy)]
    pub struct Linear {
        c0: *const u32,
        c1: *const u32,
        w0: f32,
        w1: f32,
    }

    impl KeySource for Linear {
        type Key = f32;
        type Col = u32;
        const FILTERED: bool = false;

        #[inline(always)]
        unsafe fn new(
            c0: *const u32,
            c1: *const u32,
            _: *const u32,
            params: *const SourceParams,
        ) -> Self {
            // SAFETY: valid for a linear source.
            let p = unsafe { params.read() };
            Linear {
                c0,
                c1,
                w0: p.w0,
                w1: p.w1,
            }
        }

        #[inline(always)]
        unsafe fn at(&self, i: usize) -> (f32, bool) {
            // SAFETY: a row of both columns.
            let (a, b) = unsafe { (self.c0.add(i).read(), self.c1.add(i).read()) };
            (linear_key(self.w0, a, self.w1, b), true)
        }

        #[inline(always)]
        unsafe fn load<const NT: usize, const IPT: usize>(
            &self,
            start: usize,
            valid: usize,
            sel: Option<&[bool; IPT]>,
            items: &mut [f32; IPT],
        ) -> u64 {
            let (mut a, mut b) = ([0u32; IPT], [0u32; IPT]);
            // SAFETY: the tile's `valid` rows are in bounds of both columns.
            unsafe {
                block_load_as::<u32, f32, NT, IPT>(self.c0.add(start), valid, sel, &mut a);
                block_load_as::<u32, f32, NT, IPT>(self.c1.add(start), valid, sel, &mut b);
            }
            for k in 0..IPT {
                items[k] = linear_key(self.w0, a[k], self.w1, b[k]);
            }
            in_bounds::<f32, NT, IPT>(valid)
        }
    }

    /// A source whose rows are live only where a [`RowPredicate`] keeps the filter column's
    /// value. The filter column is read first and the source's columns only for the vectors
    /// that hold a kept row, so a selective filter skips their sectors.
    #[derive(Clone, Copy)]
    pub struct Filtered<S> {
        inner: S,
        col: *const u32,
        keep: RowPredicate,
    }

    impl<S: KeySource> KeySource for Filtered<S> {
        type Key = S::Key;
        type Col = S::Col;
        const FILTERED: bool = true;

        #[inline(always)]
        unsafe fn new(
            c0: *const S::Col,
            c1: *const u32,
            fcol: *const u32,
            params: *const SourceParams,
        ) -> Self {
            // SAFETY: forwarded; `params` is valid for a filtered source.
            unsafe {
                Filtered {
                    inner: S::new(c0, c1, fcol, params),
                    col: fcol,
                    keep: params.read().keep,
                }
            }
        }

        #[inline(always)]
        unsafe fn at(&self, i: usize) -> (S::Key, bool) {
            // SAFETY: a row of the input.
            let (key, live) = unsafe { self.inner.at(i) };
            // SAFETY: a row of the filter column.
            (
                key,
                live && self.keep.keeps(unsafe { self.col.add(i).read() }),
            )
        }

        #[inline(always)]
        unsafe fn load<const NT: usize, const IPT: usize>(
            &self,
            start: usize,
            valid: usize,
            sel: Option<&[bool; IPT]>,
            items: &mut [S::Key; IPT],
        ) -> u64 {
            let mut f = [0u32; IPT];
            // SAFETY: the tile's `valid` rows are in bounds of the filter column.
            unsafe {
                block_load_as::<u32, S::Key, NT, IPT>(self.col.add(start), valid, sel, &mut f)
            };
            let bounds = in_bounds::<S::Key, NT, IPT>(valid);
            let kept: [bool; IPT] = core::array::from_fn(|k| {
                (bounds >> k) & 1 != 0 && self.keep.keeps(f[k]) && sel.is_none_or(|s| s[k])
            });
            // SAFETY: forwarded.
            let live = unsafe { self.inner.load::<NT, IPT>(start, valid, Some(&kept), items) };
            kept.iter()
                .enumerate()
                .fold(0, |m, (k, &x)| m | (x as u64) << k)
                & live
        }
    }

    /// Reads the select state (every thread reads the same words; a kernel of the stream
    /// before this one wrote it).
    ///
    /// # Safety
    /// `state` is a valid [`SelectState`].
    #[inline(always)]
    unsafe fn read_state(state: *const SelectState) -> SelectState {
        // SAFETY: valid by contract.
        unsafe { state.read() }
    }

    /// Reads the select state that another block of this grid wrote before a grid barrier:
    /// a few threads load it with volatile loads (no stale copy in L1) into `stage` and the
    /// block reads it there (one line of L2 serves the grid's blocks, not all their threads).
    /// Called by the whole block; `stage` is free again on return.
    ///
    /// # Safety
    /// `state` is a valid [`SelectState`]; `stage` holds 12 words.
    #[inline(always)]
    unsafe fn read_state_fresh(state: *const SelectState, stage: Shared<u32>) -> SelectState {
        const WORDS: usize = size_of::<SelectState>() / 4;
        let t = thread_idx();
        if t < WORDS {
            // SAFETY: t < WORDS, within the state and the stage.
            unsafe { stage.write(t, state.cast::<u32>().add(t).read_volatile()) };
        }
        sync_threads();
        // SAFETY: the stage holds the state's words after the barrier.
        let st = unsafe { stage.ptr(0).cast::<SelectState>().read_unaligned() };
        sync_threads();
        st
    }

    /// Zeroes the block's histogram.
    #[inline(always)]
    fn zero_hist<const NT: usize>(local: Shared<u32>) {
        let mut d = thread_idx();
        while d < DIGITS {
            // SAFETY: d < DIGITS.
            unsafe { local.write(d, 0) };
            d += NT;
        }
        sync_threads();
    }

    /// Counts `digit` once per lane, aggregating the lanes of a warp that share it (inputs
    /// such as `U(0, 1)` floats put almost every element in one bucket of the top digit).
    #[inline(always)]
    fn count_digit(local: Shared<u32>, digit: u32, live: bool) {
        let lanes = crate::arch::ballot(live);
        if lanes == 0 {
            return;
        }
        let peers = crate::arch::match_bits(digit, DIGIT_BITS) & lanes;
        if live && lane_id() == peers.trailing_zeros() {
            // SAFETY: digit < DIGITS.
            unsafe { local.atomic_add(digit as usize, peers.count_ones()) };
        }
    }

    /// Shared memory of a histogram round.
    #[derive(Clone, Copy)]
    pub struct HistShared {
        /// The block's counters.
        pub hist: Shared<u32>,
        /// Warp totals of the pick's scan, and a flag slot.
        pub warps: Shared<u32>,
    }

    /// The elements this thread counts in [`count_elements`]'s grid-stride order, loaded once
    /// (all loads issued before any is used) for every round of a select to count from
    /// registers: rounds then cost no memory latency. `None` when the grid has fewer than
    /// `n / C` threads.
    ///
    /// # Safety
    /// `load` is valid for `i < n`.
    #[inline(always)]
    pub unsafe fn cache_elements<const NT: usize, const C: usize>(
        n: usize,
        load: impl Fn(usize) -> (u64, u32),
    ) -> Option<[(u64, u32); C]> {
        let stride = grid_dim() * NT;
        if n > C * stride {
            return None;
        }
        let first = block_idx() * NT + thread_idx();
        Some(core::array::from_fn(|c| {
            let i = first + c * stride;
            if i < n { load(i) } else { (0, 0) }
        }))
    }

    /// [`count_elements`] over the elements [`cache_elements`] loaded (`n` as there).
    #[inline(always)]
    pub fn count_cached<const NT: usize, const C: usize>(
        st: &SelectState,
        n: usize,
        items: &[(u64, u32); C],
        local: Shared<u32>,
    ) {
        let stride = grid_dim() * NT;
        let first = block_idx() * NT;
        for (c, &(rank, low)) in items.iter().enumerate() {
            let base = first + c * stride;
            // Uniform across the block: the warps stay converged for the count.
            if base >= n {
                break;
            }
            let hit = base + thread_idx() < n && st.in_bucket(rank, low);
            count_digit(local, SelectState::digit(rank, low, st.shift), hit);
        }
    }

    /// Counts, into the block's histogram, the digit of each of the `n` elements that
    /// `load(i)` returns as composites and that lie in the current bucket: a grid-stride loop
    /// of one element per thread (for the small sources: a sample, the candidates).
    ///
    /// # Safety
    /// `load` is valid for `i < n`.
    #[inline(always)]
    pub unsafe fn count_elements<const NT: usize>(
        st: &SelectState,
        n: usize,
        load: impl Fn(usize) -> (u64, u32),
        local: Shared<u32>,
    ) {
        let stride = grid_dim() * NT;
        let mut base = block_idx() * NT;
        while base < n {
            let i = base + thread_idx();
            let live = i < n;
            let (rank, low) = if live { load(i) } else { (0, 0) };
            let hit = live && st.in_bucket(rank, low);
            count_digit(local, SelectState::digit(rank, low, st.shift), hit);
            base += stride;
        }
    }

    /// [`count_elements`] over the ranks of the `n` rows of `src` (live rows only), tile by
    /// tile with vector loads (the exact select reads the whole input every round).
    ///
    /// # Safety
    /// `src` holds `n` rows.
    #[inline(always)]
    pub unsafe fn count_keys<S: KeySource, const NT: usize, const IPT: usize>(
        st: &SelectState,
        src: S,
        n: usize,
        smallest: bool,
        local: Shared<u32>,
    ) {
        let mut tile = block_idx();
        while tile * NT * IPT < n {
            let start = tile * NT * IPT;
            let valid = (n - start).min(NT * IPT);
            let mut items = [S::Key::default(); IPT];
            // SAFETY: the tile's `valid` rows are in bounds.
            let live = unsafe { src.load::<NT, IPT>(start, valid, None, &mut items) };
            for (k, &key) in items.iter().enumerate() {
                let rank = rank_of(key, smallest);
                let hit = (live >> k) & 1 != 0 && st.in_bucket(rank, 0);
                count_digit(local, SelectState::digit(rank, 0, st.shift), hit);
            }
            tile += grid_dim();
        }
    }

    /// One radix-select round over any grid (its blocks need not be resident together):
    /// every block counts (`count` fills its shared histogram) into `hist`, and the last
    /// block to finish picks the digit, updates `state` and clears `hist`.
    ///
    /// # Safety
    /// `state` and `hist` are valid, `hist` zero; `NT == DIGITS`.
    #[inline(always)]
    pub unsafe fn hist_round<const NT: usize>(
        state: *mut TopKState,
        which: u32,
        hist: *mut u32,
        stop: u32,
        sh: HistShared,
        count: impl Fn(&SelectState, Shared<u32>),
    ) {
        const { assert!(NT == DIGITS) };
        // SAFETY: forwarded.
        let state = unsafe { TopKState::select(state, which) };
        // SAFETY: forwarded; the histogram holds DIGITS words.
        let st = unsafe { read_state_fresh(state, sh.hist) };
        if st.resolved != 0 {
            return;
        }
        // SAFETY: the histogram holds DIGITS words.
        unsafe { add_block_counts::<NT>(&st, sh, hist, count) };
        // Publish this block's counts before it arrives.
        crate::arch::fence_device();
        sync_threads();
        // SAFETY: `state` is valid.
        if unsafe { last_to_arrive::<NT>(&raw mut (*state).arrived, sh.warps) } {
            // The last block: every other block's counts are in `hist`.
            crate::arch::fence_device();
            // SAFETY: the state and histogram are valid; this block alone touches them now.
            unsafe { pick::<NT>(state, st, hist, stop, sh) };
        }
    }

    /// `rounds` radix-select rounds (at most) in one launch: in round `r` every block counts
    /// (`count` fills its shared histogram) and adds its counts to the round's own histogram,
    /// `hist[r * DIGITS..]`; the blocks meet at a grid barrier (one arrival count), and then
    /// every block reads the round's whole histogram and makes the same pick itself. So a
    /// round costs one barrier, and no block waits for another's pick or reads the state
    /// again. The last block to leave writes the final state and clears the histograms. A
    /// select that has picked no round yet first goes through `fresh` (the same function in
    /// every block), which may move its start ([`SelectState::skip_shared`]). Returns the
    /// final state, the same in every block.
    ///
    /// # Safety
    /// `state` is valid; `hist` holds `rounds * DIGITS` words, zero; `NT == DIGITS`; every
    /// block of the grid is resident at once.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn hist_rounds<const NT: usize>(
        state: *mut TopKState,
        which: u32,
        hist: *mut u32,
        stop: u32,
        rounds: u32,
        sh: HistShared,
        fresh: impl Fn(SelectState) -> SelectState,
        count: impl Fn(&SelectState, Shared<u32>),
    ) -> SelectState {
        const { assert!(NT == DIGITS) };
        // SAFETY: forwarded.
        let state = unsafe { TopKState::select(state, which) };
        let t = thread_idx();
        let grid = grid_dim() as u32;
        // SAFETY: forwarded; the histogram holds DIGITS words.
        let mut st = unsafe { read_state_fresh(state, sh.hist) };
        if st.resolved != 0 {
            return st;
        }
        if st.rounds == 0 {
            st = fresh(st);
        }
        let mut used = 0u32;
        while used < rounds {
            // SAFETY: round `used` < `rounds` has its DIGITS words in `hist`.
            let round_hist = unsafe { hist.add(used as usize * DIGITS) };
            // SAFETY: as just said.
            unsafe { add_block_counts::<NT>(&st, sh, round_hist, &count) };
            used += 1;
            // The grid barrier: the block's adds come before its arrival (the barrier, then
            // thread 0's fence), and every block's before any block reads the histogram.
            sync_threads();
            if t == 0 {
                crate::arch::fence_device();
                // SAFETY: `state` is valid; the count only grows until the last block leaves.
                unsafe {
                    let arrived = &raw mut (*state).arrived;
                    crate::arch::red_global::add_u32(arrived, 1);
                    while crate::arch::load_relaxed_u32(arrived) < grid * used {}
                }
                crate::arch::fence_device();
            }
            sync_threads();
            // SAFETY: the round's histogram is complete; `sh` as the contract says.
            if !unsafe { pick_local::<NT>(&mut st, round_hist, stop, sh) } || st.resolved != 0 {
                break;
            }
        }
        // The last block to leave (every other block has read every histogram) clears them
        // and writes the final state.
        // SAFETY: `state` is valid.
        if unsafe { last_to_arrive::<NT>(&raw mut (*state).departed, sh.warps) } {
            let mut i = t;
            while i < used as usize * DIGITS {
                // SAFETY: within the rounds' histograms.
                unsafe { hist.add(i).write_volatile(0) };
                i += NT;
            }
            if t == 0 {
                let done = SelectState {
                    arrived: 0,
                    departed: 0,
                    ..st
                };
                // SAFETY: `state` is valid; no other block reads it in this launch.
                unsafe { state.write_volatile(done) };
            }
        }
        st
    }

    /// A block's counts of one round: `count` fills the shared histogram, then each nonzero
    /// counter is added to `hist`. Called by the whole block.
    ///
    /// # Safety
    /// `hist` holds DIGITS words; `NT == DIGITS`.
    #[inline(always)]
    unsafe fn add_block_counts<const NT: usize>(
        st: &SelectState,
        sh: HistShared,
        hist: *mut u32,
        count: impl Fn(&SelectState, Shared<u32>),
    ) {
        zero_hist::<NT>(sh.hist);
        count(st, sh.hist);
        sync_threads();
        let t = thread_idx();
        // SAFETY: t < DIGITS; the counters are complete after the barrier.
        unsafe {
            let c = sh.hist.read(t);
            if c != 0 {
                crate::arch::red_global::add_u32(hist.add(t), c);
            }
        }
    }

    /// Whether this block is the last of the grid to add one to `counter`: thread 0 adds, and
    /// the block learns the answer through the flag slot of `warps` after one barrier. Called
    /// by the whole block.
    ///
    /// # Safety
    /// `counter` is valid; `warps` holds NT / 32 + 1 slots.
    #[inline(always)]
    unsafe fn last_to_arrive<const NT: usize>(counter: *mut u32, warps: Shared<u32>) -> bool {
        if thread_idx() == 0 {
            // SAFETY: by contract.
            unsafe {
                let before = u32::atomic_add(counter, 1);
                warps.write(NT / 32, (before as usize == grid_dim() - 1) as u32);
            }
        }
        sync_threads();
        // SAFETY: written before the barrier.
        unsafe { warps.read(NT / 32) != 0 }
    }

    /// Every block's pick after round's barrier: thread `t` takes digit `DIGITS - 1 - t` of
    /// the complete histogram `hist`, a block scan gives each the count of better digits, and
    /// the one whose bucket holds the `need`-th best narrows `st`, which the block then
    /// shares. False, with `st` unchanged, when no bucket does (fewer elements than wanted).
    ///
    /// # Safety
    /// `hist` holds DIGITS complete counts; called by the whole block; `sh.hist` is free.
    #[inline(always)]
    unsafe fn pick_local<const NT: usize>(
        st: &mut SelectState,
        hist: *const u32,
        stop: u32,
        sh: HistShared,
    ) -> bool {
        let t = thread_idx();
        let d = DIGITS - 1 - t;
        // SAFETY: d < DIGITS; a relaxed load reads L2, where the blocks' adds are.
        let c = unsafe { crate::arch::load_relaxed_u32(hist.add(d)) };
        let incl = warp_inclusive_sum(c);
        // SAFETY: t / 32 < NT / 32; the flag slot exists.
        unsafe {
            if lane_id() == 31 {
                sh.warps.write(t / 32, incl);
            }
            if t == 0 {
                sh.warps.write(NT / 32, 0);
            }
        }
        sync_threads();
        let mut before = 0;
        for w in 0..t / 32 {
            // SAFETY: w < NT / 32.
            before += unsafe { sh.warps.read(w) };
        }
        let above = before + incl - c;
        if above < st.need && st.need <= above + c {
            let mut picked = *st;
            picked.narrow(d as u32, c, above, stop);
            // SAFETY: one thread wins; the stage holds the state's 12 words.
            unsafe {
                sh.hist.ptr(0).cast::<SelectState>().write_unaligned(picked);
                sh.warps.write(NT / 32, 1);
            }
        }
        sync_threads();
        // SAFETY: written before the barrier.
        let found = unsafe { sh.warps.read(NT / 32) } != 0;
        if found {
            // SAFETY: the winner wrote it before the barrier.
            *st = unsafe { sh.hist.ptr(0).cast::<SelectState>().read_unaligned() };
        }
        sync_threads();
        found
    }

    /// [`hist_rounds`] over the `n` elements that `load(i)` returns as composites (a sample,
    /// the candidates): each thread loads its elements once and every round counts them from
    /// registers ([`cache_elements`]) where the grid has threads enough, else every round
    /// reads them again ([`count_elements`]).
    ///
    /// # Safety
    /// As for [`hist_rounds`]; `load` is valid for `i < n`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn hist_rounds_over<const NT: usize>(
        state: *mut TopKState,
        which: u32,
        hist: *mut u32,
        stop: u32,
        rounds: u32,
        sh: HistShared,
        fresh: impl Fn(SelectState) -> SelectState,
        n: usize,
        load: impl Fn(usize) -> (u64, u32),
    ) -> SelectState {
        // SAFETY: forwarded.
        unsafe {
            match cache_elements::<NT, CACHED>(n, &load) {
                Some(items) => {
                    hist_rounds::<NT>(state, which, hist, stop, rounds, sh, fresh, |st, l| {
                        count_cached::<NT, CACHED>(st, n, &items, l)
                    })
                }
                None => hist_rounds::<NT>(state, which, hist, stop, rounds, sh, fresh, |st, l| {
                    count_elements::<NT>(st, n, &load, l)
                }),
            }
        }
    }

    /// The last block's pick of a [`hist_round`]: [`pick_local`], then the state written back
    /// (unchanged where no bucket holds the `need`-th: the host sees the select unresolved)
    /// with the histogram and the arrival count cleared.
    ///
    /// # Safety
    /// As for [`hist_round`], after every other block's counts; called by the whole block.
    #[inline(always)]
    unsafe fn pick<const NT: usize>(
        state: *mut SelectState,
        mut st: SelectState,
        hist: *mut u32,
        stop: u32,
        sh: HistShared,
    ) {
        let t = thread_idx();
        // SAFETY: forwarded; the histogram is complete.
        unsafe { pick_local::<NT>(&mut st, hist, stop, sh) };
        // SAFETY: t < DIGITS; every thread read its digit before `pick_local`'s last barrier;
        // this block alone touches the state now.
        unsafe {
            hist.add(t).write_volatile(0);
            if t == 0 {
                state.write_volatile(SelectState { arrived: 0, ..st });
            }
        }
    }

    /// Row of sample `i`: runs of [`SAMPLE_RUN`] adjacent rows, one run every
    /// `SAMPLE_RUN * stride` rows, so that a run shares one memory sector where a lone row
    /// would read a sector for one key; at most `i * stride`.
    #[inline(always)]
    fn sample_row(i: usize, stride: usize) -> usize {
        let run = i % SAMPLE_RUN;
        (i - run) * stride + run
    }

    /// Gathers `s` ranks of the rows of `src`, one per `stride` rows on average
    /// ([`sample_row`]); a row that is not live gets rank 0, the worst: the sample's `j`-th
    /// best is then the `j`-th best live rank whenever `j` live rows were sampled, and
    /// otherwise a threshold every live row reaches.
    ///
    /// # Safety
    /// `src` holds `(s - 1) * stride + 1` rows at least; `out` holds `s`.
    #[inline(always)]
    pub unsafe fn sample<S: KeySource>(
        src: S,
        s: usize,
        stride: usize,
        smallest: bool,
        out: *mut u64,
    ) {
        let mut i = crate::arch::global_idx();
        while i < s {
            // SAFETY: i < s, so the row (at most (s - 1) * stride) is a row and i within `out`.
            unsafe {
                let (key, live) = src.at(sample_row(i, stride));
                out.add(i)
                    .write(if live { rank_of(key, smallest) } else { 0 })
            };
            i += grid_dim() * crate::arch::block_dim();
        }
    }

    /// The filter pass, tile by tile (a persistent grid: a block that lives for many tiles
    /// spares the launch of one block per tile): live elements whose rank passes the
    /// threshold go to `cands` (unordered, one atomic per warp that has any), counted in
    /// `counts.passed`; where the threshold ties, each warp's count of tied live elements in
    /// each tile goes to `tie_counts[tie_count_len(tile, NT) + warp]` (no barrier: where every key
    /// ties, a barrier per tile would leave one tile in flight per block) and the block's
    /// total, once, to `counts.tied`; a filtered source counts its live rows in
    /// `counts.live`.
    ///
    /// # Safety
    /// `src` holds `n > 0` rows; any grid size with `S::RESIDENT_FILTER`, else one block per
    /// tile; `state.ranks` is a finished select; `cands` holds `cap`, `tie_counts`
    /// [`tie_count_len`] of the tiles; `slot` holds two words, `stage` [`STAGES`] times
    /// [`stage_bytes`] where `S::RESIDENT_FILTER`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn filter<S: KeySource, const NT: usize, const IPT: usize>(
        src: S,
        n: usize,
        smallest: bool,
        state: *mut TopKState,
        cands: *mut Candidate,
        cap: u32,
        tie_counts: *mut u32,
        slot: Shared<u32>,
        stage: Shared<u32>,
    ) {
        if thread_idx() == 0 {
            // SAFETY: slot 0 is the block's tie count, read after the barrier at the end.
            unsafe { slot.write(0, 0) };
        }
        // Once per block: the zero comes before any warp's add.
        sync_threads();
        if !S::RESIDENT_FILTER {
            // One block per tile, as the host launches it; no loop, whose state would spill.
            let tile = block_idx();
            let start = tile * NT * IPT;
            let mut items = [S::Key::default(); IPT];
            // SAFETY: the tile's rows from `start` are in bounds.
            let live =
                unsafe { src.load::<NT, IPT>(start, (n - start).min(NT * IPT), None, &mut items) };
            // After the loads are issued, so that the two round trips overlap.
            // SAFETY: valid by contract.
            let th = unsafe { read_state(&raw const (*state).ranks) }.threshold();
            // SAFETY: forwarded; `items` and `live` are tile `tile`.
            unsafe {
                filter_tile::<S, NT, IPT>(
                    tile,
                    &items,
                    live as u32,
                    smallest,
                    &th.narrow(),
                    state,
                    cands,
                    cap,
                    tie_counts,
                    slot,
                )
            };
            // SAFETY: `state` is valid; `slot` as above.
            unsafe { add_block_total(th.has_tie, slot, &raw mut (*state).counts.tied) };
            return;
        }
        let mut threshold = None;
        let mut tile = block_idx();
        // Full tiles go through STAGES shared buffers: the block's next STAGES - 1 are copied
        // while this one is filtered. Each iteration commits one copy group (maybe empty), so
        // waiting until STAGES - 2 are pending lands the current tile's.
        let tile_items = NT * IPT;
        let full = n / tile_items;
        let bytes = stage_bytes::<S::Key, NT, IPT>() as u32;
        let base = stage.addr(0);
        for s in 0..STAGES - 1 {
            let ahead = tile + s * grid_dim();
            if ahead < full {
                // SAFETY: a full tile of the source into buffer `s`.
                unsafe { src.stage::<NT, IPT>(ahead * tile_items, base + s as u32 * bytes) };
            }
            copy_async_commit();
        }
        let mut cur = 0u32;
        while tile * tile_items < n {
            let start = tile * tile_items;
            let ahead = tile + (STAGES - 1) * grid_dim();
            let last = if cur == 0 { STAGES as u32 - 1 } else { cur - 1 };
            if ahead < full {
                // SAFETY: a full tile into the buffer this thread last read (the tile before),
                // whose values returned before this point.
                unsafe { src.stage::<NT, IPT>(ahead * tile_items, base + last * bytes) };
            }
            copy_async_commit();
            let mut items = [S::Key::default(); IPT];
            let live = if tile < full {
                copy_async_wait_groups::<{ STAGES as u32 - 1 }>();
                // SAFETY: the current buffer's copies landed.
                unsafe { src.load_staged::<NT, IPT>(base + cur * bytes, start, &mut items) };
                None
            } else {
                // SAFETY: the tile's rows from `start` are in bounds.
                let m = unsafe {
                    src.load::<NT, IPT>(start, (n - start).min(tile_items), None, &mut items)
                };
                Some(m as u32)
            };
            // Read after the first tile's loads are issued, so that the two round trips overlap.
            // SAFETY: valid by contract.
            let th = *threshold.get_or_insert_with(|| {
                unsafe { read_state(&raw const (*state).ranks) }
                    .threshold()
                    .narrow()
            });
            // A full tile's filter is its own copy with every item live, so the hot loop
            // tests no mask (only the last tile is partial).
            // SAFETY: forwarded; `items` and `live` are tile `tile`.
            unsafe {
                match live {
                    None => filter_tile::<S, NT, IPT>(
                        tile, &items, ALL_LIVE, smallest, &th, state, cands, cap, tie_counts, slot,
                    ),
                    Some(m) => filter_tile::<S, NT, IPT>(
                        tile, &items, m, smallest, &th, state, cands, cap, tie_counts, slot,
                    ),
                }
            };
            tile += grid_dim();
            cur = if cur + 1 == STAGES as u32 { 0 } else { cur + 1 };
        }
        // Uniform: every thread of the block saw the same tiles.
        let has_tie = threshold.is_some_and(|th| th.has_tie);
        // SAFETY: `state` is valid; `slot` as above.
        unsafe { add_block_total(has_tie, slot, &raw mut (*state).counts.tied) };
    }

    /// A live mask with every item of a tile live.
    const ALL_LIVE: u32 = u32::MAX;

    /// Adds the block's count in `slot` word 0 to `*total` with one atomic, if `any` (uniform
    /// across the block); every thread calls it.
    ///
    /// # Safety
    /// `slot` word 0 holds the count of every warp's tiles; `total` is valid.
    #[inline(always)]
    unsafe fn add_block_total(any: bool, slot: Shared<u32>, total: *mut u32) {
        if !any {
            return;
        }
        // After every warp's last add.
        sync_threads();
        if thread_idx() == 0 {
            // SAFETY: slot 0 is complete after the barrier; `total` is valid.
            unsafe {
                let c = slot.read(0);
                if c != 0 {
                    u32::atomic_add(total, c);
                }
            }
        }
    }

    /// [`filter`] over tile `tile`; each warp adds its count of tied live elements to `slot`
    /// word 0. Every thread of the block reads word 1 only after a barrier that follows the
    /// tile's writes, and thread 0 alone reads it after the last one, so the next tile may
    /// write it without another barrier.
    ///
    /// # Safety
    /// As for [`filter`]; `items` and `live` are tile `tile` as the source loaded it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn filter_tile<S: KeySource, const NT: usize, const IPT: usize>(
        tile: usize,
        items: &[S::Key; IPT],
        live: u32,
        smallest: bool,
        th: &KeyThreshold<<S::Key as RadixKey>::Bits>,
        state: *mut TopKState,
        cands: *mut Candidate,
        cap: u32,
        tie_counts: *mut u32,
        slot: Shared<u32>,
    ) {
        const { assert!(IPT <= 32, "live and pass masks are one word") };
        let start = tile * NT * IPT;
        // SAFETY: a field of the valid state.
        let counts = unsafe { &raw mut (*state).counts };
        let t = thread_idx();
        let live = |k: usize| (live >> k) & 1 != 0;
        if S::FILTERED {
            // The host learns how many rows match: one atomic per block, as one per warp
            // on this one address would serialize (a uniform branch: `FILTERED` is a const).
            let warp = warp_inclusive_sum((0..IPT).filter(|&k| live(k)).count() as u32);
            if t == 0 {
                // SAFETY: slot 1 is the block's live count.
                unsafe { slot.write(1, 0) };
            }
            sync_threads();
            if lane_id() == 31 && warp != 0 {
                // SAFETY: slot 1 is the block's live count.
                unsafe { slot.atomic_add(1, warp) };
            }
            sync_threads();
            if t == 0 {
                // SAFETY: slot 1 is complete after the barrier; `counts` is valid.
                unsafe {
                    let c = slot.read(1);
                    if c != 0 {
                        u32::atomic_add(&raw mut (*counts).live, c);
                    }
                }
            }
        }
        // One word per key: its ordered bits, the rank before widening.
        let ord: [<S::Key as RadixKey>::Bits; IPT] =
            core::array::from_fn(|k| S::Key::ordered(items[k].into_raw(), smallest));
        let mut pass = 0u32;
        // Uniform: every block reads the same threshold.
        if th.any_above {
            for (k, &o) in ord.iter().enumerate() {
                pass |= ((live(k) && o >= th.lo) as u32) << k;
            }
        }
        let mine = pass.count_ones();
        if any(mine != 0) {
            let incl = warp_inclusive_sum(mine);
            let mut top = 0u64;
            for (k, &o) in ord.iter().enumerate() {
                if (pass >> k) & 1 != 0 {
                    top = top.max(o.into());
                }
            }
            let top = warp_reduce(top, u64::max);
            let mut base = 0u32;
            if lane_id() == 31 {
                // SAFETY: `counts` is valid.
                unsafe {
                    base = u32::atomic_add(&raw mut (*counts).passed, incl);
                    crate::arch::red_global::max_u64(&raw mut (*counts).max_rank, top);
                }
            }
            let mut at = shfl_idx(base, 31) + incl - mine;
            for (k, &o) in ord.iter().enumerate() {
                if (pass >> k) & 1 != 0 {
                    if at < cap {
                        let row = (start + Tile::<S::Key, NT, IPT>::offset(t, k)) as u32;
                        // SAFETY: at < cap.
                        unsafe {
                            cands.add(at as usize).write(Candidate {
                                rank: o.into(),
                                row,
                                pad: 0,
                            })
                        };
                    }
                    at += 1;
                }
            }
        }
        if !th.has_tie {
            return;
        }
        // Uniform branch: every block reads the same threshold.
        let mine = (0..IPT).filter(|&k| live(k) && ord[k] == th.tie).count() as u32;
        let warp = warp_inclusive_sum(mine);
        if lane_id() == 31 {
            // SAFETY: one count per warp of each tile, `tie_count_len` in all; slot 0 is the
            // block's count.
            unsafe {
                tie_counts
                    .add(tie_count_len(tile, NT) + warp_id())
                    .write(warp);
                if warp != 0 {
                    slot.atomic_add(0, warp);
                }
            }
        }
    }

    /// Writes the rows of the first `need` tied live elements in row order, given the
    /// exclusive prefix sum of the filter's tie counts (one per warp of each tile): blocks
    /// walk the tiles in order and stop at the first whose prefix reaches `need`, so only the
    /// tiles that hold the wanted ties are read again.
    ///
    /// # Safety
    /// As for [`filter`], with `prefix` the exclusive prefix sum of the filter's tie counts
    /// and `tie_rows` holding `need`; any grid size.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn fill_ties<S: KeySource, const NT: usize, const IPT: usize>(
        src: S,
        n: usize,
        smallest: bool,
        state: *const TopKState,
        prefix: *const u32,
        tie_rows: *mut u32,
        need: u32,
        scan: Shared<u32>,
    ) {
        type Key<X> = <X as KeySource>::Key;
        let tiles = n.div_ceil(NT * IPT);
        // SAFETY: valid by contract.
        let th = unsafe { read_state(&raw const (*state).ranks) }.threshold();
        let t = thread_idx();
        let mut tile = block_idx();
        while tile < tiles {
            // SAFETY: tile < tiles: the count of the tile's first warp.
            let before = unsafe { prefix.add(tie_count_len(tile, NT)).read() };
            if before >= need || !th.has_tie {
                break;
            }
            let start = tile * NT * IPT;
            let valid = (n - start).min(NT * IPT);
            let mut items = [Key::<S>::default(); IPT];
            // SAFETY: the tile's `valid` rows are in bounds.
            let live = unsafe { src.load::<NT, IPT>(start, valid, None, &mut items) };
            let ties: [bool; IPT] = core::array::from_fn(|k| {
                (live >> k) & 1 != 0 && th.ties(rank_of(items[k], smallest))
            });
            let cr = block_compact_ranks::<Key<S>, NT, IPT>(&ties, scan);
            cr.for_each_ranked::<Key<S>, NT>(before, |k, r| {
                if r < need {
                    let row = (start + Tile::<Key<S>, NT, IPT>::offset(t, k)) as u32;
                    // SAFETY: r < need, the room of `tie_rows`.
                    unsafe { tie_rows.add(r as usize).write(row) };
                }
            });
            // The scan's shared partials are reused by the next tile.
            sync_threads();
            tile += grid_dim();
        }
    }

    /// Copies the first `m` candidates to `out` and counts them in `counts.emitted`: the
    /// choice when no more than `out`'s room passed.
    ///
    /// # Safety
    /// `cands` and `out` hold `m`; `state` is valid; any grid size.
    #[inline(always)]
    pub unsafe fn copy_all(
        cands: *const Candidate,
        m: usize,
        state: *mut TopKState,
        out: *mut Candidate,
    ) {
        let mut i = crate::arch::global_idx();
        if i == 0 {
            // SAFETY: a field of the valid state; one thread writes it.
            unsafe { (*state).counts.emitted = m as u32 };
        }
        let stride = grid_dim() * crate::arch::block_dim();
        while i < m {
            // SAFETY: i < m, within both buffers.
            unsafe { out.add(i).write(cands.add(i).read()) };
            i += stride;
        }
    }

    /// Writes the candidates of the first `m` that the composite select `st` chose to `out`
    /// (unordered, at most `out_cap`), counting them in `counts.emitted`; nothing unless the
    /// select resolved. Called after the select's rounds.
    ///
    /// # Safety
    /// `cands` holds `m` candidates; `out` holds `out_cap`; `state` is valid.
    #[inline(always)]
    pub unsafe fn emit(
        st: &SelectState,
        cands: *const Candidate,
        m: usize,
        state: *mut TopKState,
        out: *mut Candidate,
        out_cap: u32,
    ) {
        if st.resolved != 1 {
            return;
        }
        let mut i = crate::arch::global_idx();
        let stride = grid_dim() * crate::arch::block_dim();
        while i < m {
            // SAFETY: i < m.
            let c = unsafe { cands.add(i).read() };
            if st.chosen(c.rank, !c.row) {
                // SAFETY: `counts` is a field of the valid state; `at` is checked.
                unsafe {
                    let at = u32::atomic_add(&raw mut (*state).counts.emitted, 1);
                    if at < out_cap {
                        out.add(at as usize).write(c);
                    }
                }
            }
            i += stride;
        }
    }

    /// Writes the best `k` of the first `m = min(counts.emitted, cap)` chosen candidates of
    /// `chosen`, best first, to `out`: a candidate's place is the count of those before it
    /// ([`ranks_before`]; composites are unique, so the places are a permutation of `0..m`).
    /// [`ORDER_SPLIT`] adjacent threads place one candidate, each comparing it with every
    /// `ORDER_SPLIT`-th other, so that the grid spreads the `m * m` comparisons over many SMs
    /// (one block sorting them was latency-bound). Block `b` places candidates from
    /// `b * NT / ORDER_SPLIT` on, after staging all `m` in shared memory (the emit just wrote
    /// them: they come from L2).
    ///
    /// # Safety
    /// `state` is valid; `chosen` holds `min(counts.emitted, cap)` candidates and `out`
    /// `min(counts.emitted, k)`; `ranks` and `rows` hold at least `cap` (more are not read).
    #[inline(always)]
    pub unsafe fn order<const NT: usize>(
        state: *const TopKState,
        chosen: *const Candidate,
        cap: u32,
        k: u32,
        out: *mut Candidate,
        ranks: Shared<u64>,
        rows: Shared<u32>,
    ) {
        const { assert!(NT % ORDER_SPLIT == 0 && ORDER_SPLIT.is_power_of_two()) };
        const {
            assert!(
                ORDER_SPLIT <= 32,
                "a candidate's threads are lanes of one warp"
            )
        };
        // SAFETY: `state` is valid.
        let m = (unsafe { (*state).counts.emitted }.min(cap) as usize).min(ranks.len());
        let first = block_idx() * (NT / ORDER_SPLIT);
        // Uniform across the block.
        if first >= m {
            return;
        }
        let t = thread_idx();
        let mut i = t;
        while i < m {
            // SAFETY: i < m, within `chosen`, `ranks` and `rows`.
            unsafe {
                let c = chosen.add(i).read();
                ranks.write(i, c.rank);
                rows.write(i, c.row);
            }
            i += NT;
        }
        sync_threads();
        let (me, part) = (first + t / ORDER_SPLIT, t % ORDER_SPLIT);
        // Threads past `m` place a copy of the last, and write nothing.
        let at = me.min(m - 1);
        // SAFETY: at < m, staged above.
        let (rank, row) = unsafe { (ranks.read(at), rows.read(at)) };
        let mut before = 0u32;
        let mut j = part;
        while j < m {
            // SAFETY: j < m, staged above.
            let (r, w) = unsafe { (ranks.read(j), rows.read(j)) };
            before += (r > rank || (r == rank && w < row)) as u32;
            j += ORDER_SPLIT;
        }
        // The split's lanes are an aligned group: a butterfly sums them.
        let mut lanes = ORDER_SPLIT / 2;
        while lanes > 0 {
            before += shfl_xor(before, lanes as u32);
            lanes /= 2;
        }
        if part == 0 && me < m && before < k {
            // SAFETY: before < min(m, k), within `out`.
            unsafe {
                out.add(before as usize)
                    .write(Candidate { rank, row, pad: 0 })
            };
        }
    }
}

/// Declares a histogram round's shared memory at the top of an entry point.
#[cfg(target_arch = "nvptx64")]
macro_rules! hist_shared {
    () => {
        HistShared {
            hist: $crate::shared_array!(topk_hist: [u32; DIGITS]),
            warps: $crate::shared_array!(topk_warps: [u32; DIGITS / 32 + 1]),
        }
    };
}

/// A source kernel's parameter tuple: the four leading parameters every key source takes
/// (its first column, of `$c`, the second column, the filter column and the [`SourceParams`];
/// null where the source has no such column), then the kernel's own.
macro_rules! source_args {
    ($c:ty; $($t:ty),*) => {
        (*const $c, *const u32, *const u32, *const SourceParams, $($t,)*)
    };
}

/// Parameters of the sample kernels of a source whose first column holds `C`:
/// `(c0, c1, fcol, params, s, stride, smallest, out)`.
pub type SampleArgs<C> = source_args!(C; u32, u32, u32, *mut u64);
/// Parameters of the exact rounds:
/// `(c0, c1, fcol, params, n, smallest, state, hist, stop, rounds)`.
pub type HistKeysArgs<C> = source_args!(C; u32, u32, *mut TopKState, *mut u32, u32, u32);
/// Parameters of the filter kernels:
/// `(c0, c1, fcol, params, n, smallest, state, cands, cap, tie_counts)`.
pub type FilterArgs<C> = source_args!(C; u32, u32, *mut TopKState, *mut Candidate, u32, *mut u32);
/// Parameters of the tie-fill kernels:
/// `(c0, c1, fcol, params, n, smallest, state, prefix, tie_rows, need)`.
pub type FillArgs<C> = source_args!(C; u32, u32, *const TopKState, *const u32, *mut u32, u32);

/// The four kernels of each key source (`$src`, first column `$c`, the filter resident or one
/// block per tile as `$resident` says) and their [`SourceKernels`] group.
macro_rules! topk_source_kernels {
    ($($src:ty, $c:ty: $group:ident: $sample:ident = $sname:ident, $hist:ident = $hname:ident, $filter:ident = $fname:ident, $fill:ident = $flname:ident, $ipt:literal, $resident:literal;)*) => {$(
        $crate::kernel! {
            /// Gathers a strided sample of the ranks.
            $sample = $sname[NT = 256, IPT = 1](
                c0: *const $c, c1: *const u32, fcol: *const u32, params: *const SourceParams,
                s: u32, stride: u32, smallest: u32, out: *mut u64
            ) {
                // SAFETY: the host passes the source's columns and parameters and sizes `s`
                // and `stride` within its rows and `out`.
                unsafe {
                    let src = <$src as KeySource>::new(c0, c1, fcol, params);
                    sample::<$src>(src, s as usize, stride as usize, smallest != 0, out)
                }
            }
        }
        $crate::kernel! {
            /// `rounds` exact radix-select rounds over the live rows' ranks.
            $hist = $hname[NT = 256, IPT = 16](
                c0: *const $c, c1: *const u32, fcol: *const u32, params: *const SourceParams,
                n: u32, smallest: u32, state: *mut TopKState, hist: *mut u32, stop: u32,
                rounds: u32
            ) {
                let sh = hist_shared!();
                let smallest = smallest != 0;
                // SAFETY: the host passes a source of `n` rows, a valid state and histogram,
                // and a grid resident at once.
                unsafe {
                    let src = <$src as KeySource>::new(c0, c1, fcol, params);
                    hist_rounds::<NT>(state, RANKS, hist, stop, rounds, sh, |st| st,
                        |st, local| count_keys::<$src, NT, IPT>(st, src, n as usize, smallest,
                            local));
                }
            }
        }
        $crate::kernel! {
            /// The threshold filter pass.
            $filter = $fname[NT = 256, IPT = $ipt, MIN_BLOCKS = 4](
                c0: *const $c, c1: *const u32, fcol: *const u32, params: *const SourceParams,
                n: u32, smallest: u32, state: *mut TopKState,
                cands: *mut Candidate, cap: u32, tie_counts: *mut u32
            ) {
                const { assert!(<$src as KeySource>::RESIDENT_FILTER == $resident) };
                let slot = $crate::shared_array!(topk_slot: [u32; 2]);
                // STAGES staged tiles where the filter is resident.
                let stage = $crate::shared_array!(topk_stage: [u32; if $resident {
                    STAGES * $crate::block::stage_bytes::<$c, NT, IPT>() / 4 } else { 4 }]);
                // SAFETY: the host launches the grid `$resident` asks for (resident, or one
                // block per tile) over a source of `n` rows, with buffers as `filter` requires.
                unsafe {
                    let src = <$src as KeySource>::new(c0, c1, fcol, params);
                    filter::<$src, NT, IPT>(src, n as usize, smallest != 0, state, cands, cap,
                        tie_counts, slot, stage)
                }
            }
        }
        $crate::kernel! {
            /// The tied live rows, in row order, from the tiles that hold the first `need`.
            $fill = $flname[NT = 256, IPT = $ipt](
                c0: *const $c, c1: *const u32, fcol: *const u32, params: *const SourceParams,
                n: u32, smallest: u32, state: *const TopKState,
                prefix: *const u32, tie_rows: *mut u32, need: u32
            ) {
                let scan = $crate::shared_array!(topk_scan: [u32; $crate::layout::scan_temp_words(NT, IPT, $crate::layout::vec_width(core::mem::size_of::<<$src as KeySource>::Key>(), IPT))]);
                // SAFETY: the host passes the filter's source, its tiles' prefix sum and room
                // for `need` rows.
                unsafe {
                    let src = <$src as KeySource>::new(c0, c1, fcol, params);
                    fill_ties::<$src, NT, IPT>(src, n as usize, smallest != 0, state, prefix,
                        tie_rows, need, scan)
                }
            }
        }
        /// The kernels of this source, as the host's top-k launches them.
        pub const $group: SourceKernels<$c> = SourceKernels {
            sample: $sample,
            hist: $hist,
            filter: $filter,
            fill: $fill,
            resident_filter: $resident,
        };
    )*};
}

topk_source_kernels! {
    Column<f32>, f32: TOPK_F32: TOPK_SAMPLE_F32 = topk_sample_f32, TOPK_HIST_F32 = topk_hist_f32, TOPK_FILTER_F32 = topk_filter_f32, TOPK_FILL_F32 = topk_fill_f32, 8, true;
    Column<f64>, f64: TOPK_F64: TOPK_SAMPLE_F64 = topk_sample_f64, TOPK_HIST_F64 = topk_hist_f64, TOPK_FILTER_F64 = topk_filter_f64, TOPK_FILL_F64 = topk_fill_f64, 4, true;
    Column<i32>, i32: TOPK_I32: TOPK_SAMPLE_I32 = topk_sample_i32, TOPK_HIST_I32 = topk_hist_i32, TOPK_FILTER_I32 = topk_filter_i32, TOPK_FILL_I32 = topk_fill_i32, 8, true;
    Column<u32>, u32: TOPK_U32: TOPK_SAMPLE_U32 = topk_sample_u32, TOPK_HIST_U32 = topk_hist_u32, TOPK_FILTER_U32 = topk_filter_u32, TOPK_FILL_U32 = topk_fill_u32, 8, true;
    Filtered<Column<f32>>, f32: TOPK_WHERE_F32: TOPK_WHERE_SAMPLE_F32 = topk_where_sample_f32, TOPK_WHERE_HIST_F32 = topk_where_hist_f32, TOPK_WHERE_FILTER_F32 = topk_where_filter_f32, TOPK_WHERE_FILL_F32 = topk_where_fill_f32, 16, false;
    Filtered<Column<f64>>, f64: TOPK_WHERE_F64: TOPK_WHERE_SAMPLE_F64 = topk_where_sample_f64, TOPK_WHERE_HIST_F64 = topk_where_hist_f64, TOPK_WHERE_FILTER_F64 = topk_where_filter_f64, TOPK_WHERE_FILL_F64 = topk_where_fill_f64, 8, false;
    Filtered<Column<i32>>, i32: TOPK_WHERE_I32: TOPK_WHERE_SAMPLE_I32 = topk_where_sample_i32, TOPK_WHERE_HIST_I32 = topk_where_hist_i32, TOPK_WHERE_FILTER_I32 = topk_where_filter_i32, TOPK_WHERE_FILL_I32 = topk_where_fill_i32, 16, false;
    Filtered<Column<u32>>, u32: TOPK_WHERE_U32: TOPK_WHERE_SAMPLE_U32 = topk_where_sample_u32, TOPK_WHERE_HIST_U32 = topk_where_hist_u32, TOPK_WHERE_FILTER_U32 = topk_where_filter_u32, TOPK_WHERE_FILL_U32 = topk_where_fill_u32, 16, false;
    Linear, u32: TOPK_LINEAR: TOPK_LINEAR_SAMPLE = topk_linear_sample, TOPK_LINEAR_HIST = topk_linear_hist, TOPK_LINEAR_FILTER = topk_linear_filter, TOPK_LINEAR_FILL = topk_linear_fill, 16, false;
    Filtered<Linear>, u32: TOPK_LINEAR_WHERE: TOPK_LINEAR_WHERE_SAMPLE = topk_linear_where_sample, TOPK_LINEAR_WHERE_HIST = topk_linear_where_hist, TOPK_LINEAR_WHERE_FILTER = topk_linear_where_filter, TOPK_LINEAR_WHERE_FILL = topk_linear_where_fill, 16, false;
}

crate::kernel! {
    /// `rounds` radix-select rounds over a buffer of ranks (the sample).
    TOPK_HIST_RANKS = topk_hist_ranks[NT = 256, IPT = 1](ranks: *const u64, n: u32, state: *mut TopKState, hist: *mut u32, stop: u32, rounds: u32) {
        let sh = hist_shared!();
        // SAFETY: the host passes `n` ranks, a valid state and histogram, and a grid
        // resident at once.
        unsafe {
            hist_rounds_over::<NT>(state, RANKS, hist, stop, rounds, sh, |st| st, n as usize,
                |i| (ranks.add(i).read(), 0));
        }
    }
}

crate::kernel! {
    /// The candidates' select, as composites (ties resolve on rows): `rounds` radix-select
    /// rounds, then the chosen candidates written to `out`; all of them, without rounds,
    /// where no more than `out_cap` passed. Where `bounded`, a threshold filter wrote the
    /// candidates: their ranks lie between its threshold and `counts.max_rank`, and the
    /// rounds start below the digits they all share.
    TOPK_CHOOSE = topk_choose[NT = 256, IPT = 1](cands: *const Candidate, cap: u32, state: *mut TopKState, hist: *mut u32, rounds: u32, out: *mut Candidate, out_cap: u32, bounded: u32) {
        let sh = hist_shared!();
        // SAFETY: the host passes room for `cap` candidates (the filter wrote
        // `min(passed, cap)`), a valid state and histogram, room for `out_cap` chosen ones,
        // and a grid resident at once.
        unsafe {
            let passed = (*state).counts.passed;
            let m = passed.min(cap) as usize;
            if passed <= out_cap {
                // Every candidate is chosen: no rounds (ties of a threshold, or few rows).
                copy_all(cands, m, state, out);
                return;
            }
            let th = (*state).ranks.threshold();
            let hi = (*state).counts.max_rank;
            let fresh = |st: SelectState| {
                if bounded != 0 && th.any_above { st.skip_shared(th.lo, hi) } else { st }
            };
            let st = hist_rounds_over::<NT>(state, CHOSEN, hist, 0, rounds, sh, fresh, m, |i| {
                let c = cands.add(i).read();
                (c.rank, !c.row)
            });
            emit(&st, cands, m, state, out, out_cap)
        }
    }
}

crate::kernel! {
    /// The best `k` of the chosen candidates (at most `cap <= ORDER_MAX`) best first: a grid of
    /// one thread per candidate and share of the others ([`ORDER_SPLIT`] per candidate, so
    /// `cap * ORDER_SPLIT` items).
    TOPK_ORDER = topk_order[NT = 256, IPT = 1](state: *const TopKState, chosen: *const Candidate, cap: u32, k: u32, out: *mut Candidate) {
        let ranks = crate::shared_array!(topk_order_ranks: [u64; ORDER_MAX]);
        let rows = crate::shared_array!(topk_order_rows: [u32; ORDER_MAX]);
        // SAFETY: the host passes the state of the choose that wrote `chosen`, room for `cap`
        // there and for `k` in `out`; the staging arrays hold ORDER_MAX.
        unsafe { order::<NT>(state, chosen, cap, k, out, ranks, rows) }
    }
}

crate::kernel! {
    /// `out[i] = i` for the sort-and-choose path's row ids.
    TOPK_IOTA = topk_iota[NT = 256, IPT = 1](out: *mut u32, n: u32) {
        let mut i = crate::arch::global_idx();
        while i < n as usize {
            // SAFETY: i < n, the length of `out`.
            unsafe { out.add(i).write(i as u32) };
            i += crate::arch::grid_dim() * NT;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Runs the select's rounds on the host over composites and returns the final state.
    fn select(items: &[(u64, u32)], need: u32, rank_bits: u32, stop: u32) -> SelectState {
        select_from(SelectState::start(need, rank_bits), items, stop)
    }

    /// Runs the select's rounds on the host from state `st`.
    fn select_from(mut st: SelectState, items: &[(u64, u32)], stop: u32) -> SelectState {
        while st.resolved == 0 {
            let mut hist = [0u32; DIGITS];
            for &(r, l) in items {
                if st.in_bucket(r, l) {
                    hist[SelectState::digit(r, l, st.shift) as usize] += 1;
                }
            }
            st.pick(|d| hist[d], stop);
        }
        st
    }

    fn lcg(n: usize, seed: u64, modulo: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) % modulo
            })
            .collect()
    }

    /// Composites `(rank, !row)`.
    type Composites = Vec<(u64, u32)>;

    /// The composites of `ranks` at rows `0..`, and the same best first.
    fn composites(ranks: &[u64]) -> (Composites, Composites) {
        let items: Composites = ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| (r, !(i as u32)))
            .collect();
        let mut sorted = items.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        (items, sorted)
    }

    #[test]
    fn composite_select_chooses_exactly_the_best() {
        for (modulo, bits) in [(u64::MAX, 64), (1 << 32, 32), (5, 32), (1, 64)] {
            let (items, sorted) = composites(&lcg(3000, modulo ^ 7, modulo));
            for need in [1u32, 2, 31, 100, 2999, 3000] {
                let st = select(&items, need, bits, 0);
                assert_eq!(st.resolved & 1, 1);
                let chosen: Vec<_> = items.iter().filter(|&&(r, l)| st.chosen(r, l)).collect();
                assert_eq!(chosen.len(), need as usize, "modulo {modulo} need {need}");
                let worst = sorted[need as usize - 1];
                assert!(chosen.iter().all(|&&c| c >= worst));
            }
        }
    }

    #[test]
    fn a_select_with_slack_chooses_a_best_prefix_of_at_most_need_plus_slack() {
        for (modulo, bits) in [(u64::MAX, 64), (1 << 32, 32), (5, 32), (1 << 12, 32)] {
            let (items, sorted) = composites(&lcg(3000, modulo ^ 11, modulo));
            for (need, slack) in [(1u32, 63u32), (32, 32), (100, 5), (2999, 1), (3000, 7)] {
                let mut st = SelectState::start(need, bits).with_slack(slack);
                let lo = items.iter().map(|c| c.0).min().unwrap();
                let hi = items.iter().map(|c| c.0).max().unwrap();
                st = st.skip_shared(lo, hi);
                let st = select_from(st, &items, 0);
                assert_eq!(st.resolved, 1);
                let chosen = items.iter().filter(|&&(r, l)| st.chosen(r, l)).count();
                assert!(
                    (need..=need + slack).contains(&(chosen as u32)),
                    "modulo {modulo} need {need} slack {slack}: chose {chosen}"
                );
                // The chosen are exactly the best `chosen`.
                let worst = sorted[chosen - 1];
                assert!(items.iter().all(|&c| st.chosen(c.0, c.1) == (c >= worst)));
            }
        }
    }

    #[test]
    fn skipping_the_shared_digits_chooses_the_same() {
        for (base, spread) in [
            (0x3f7f_0000u64, 1u64 << 9),
            (7, 1),
            (1 << 40, 1 << 33),
            (0, 255),
        ] {
            let items: Vec<(u64, u32)> = lcg(2000, base ^ spread, spread)
                .iter()
                .enumerate()
                .map(|(i, &r)| (base + r, !(i as u32)))
                .collect();
            let lo = items.iter().map(|c| c.0).min().unwrap();
            let hi = items.iter().map(|c| c.0).max().unwrap();
            for need in [1u32, 17, 1999] {
                let plain = select(&items, need, 64, 0);
                let skip = SelectState::start(need, 64).skip_shared(lo, hi);
                assert!(skip.shift <= SelectState::start(need, 64).shift);
                assert!(items.iter().all(|&(r, l)| skip.in_bucket(r, l)));
                let skipped = select_from(skip, &items, 0);
                assert!(
                    skipped.rounds <= plain.rounds,
                    "base {base} spread {spread}"
                );
                assert!(
                    items
                        .iter()
                        .all(|&(r, l)| plain.chosen(r, l) == skipped.chosen(r, l))
                );
            }
            // No element, or a select already under way: unchanged.
            let st = SelectState::start(3, 64);
            assert_eq!(st.skip_shared(hi, lo.wrapping_sub(1)), st);
            let started = SelectState { rounds: 1, ..st };
            assert_eq!(started.skip_shared(lo, hi), started);
        }
    }

    #[test]
    fn rank_select_gives_a_threshold_that_at_least_need_reach() {
        for modulo in [u64::MAX, 1 << 20, 3, 1] {
            let ranks = lcg(2000, modulo, modulo);
            let items: Vec<(u64, u32)> = ranks.iter().map(|&r| (r, 0)).collect();
            let mut sorted = ranks.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            for need in [1u32, 5, 64, 2000] {
                let st = select(&items, need, 64, 32);
                let th = st.threshold();
                let pass = ranks.iter().filter(|&&r| th.passes(r)).count();
                let ties = ranks.iter().filter(|&&r| th.ties(r)).count();
                let kth = sorted[need as usize - 1];
                if !th.has_tie {
                    assert_eq!(pass, need as usize, "resolved: exactly the best pass");
                } else {
                    assert_eq!(th.tie, kth);
                    assert!(pass < need as usize && pass + ties >= need as usize);
                }
            }
        }
    }
}
