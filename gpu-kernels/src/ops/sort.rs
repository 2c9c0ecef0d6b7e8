//! Radix sort and radix partitioning (thesis §3.6.4), as one-sweep passes (Adinets and Merrill,
//! "Onesweep", 2022): a histogram kernel counts the digits of every pass in one read of the keys;
//! then each pass is one kernel that ranks a tile's keys by digit in shared memory, learns where
//! each digit's run goes through a per-digit decoupled look-back (stable) or one atomic per digit
//! (unstable), and scatters keys and values. A pass reads and writes keys and values once.
//!
//! Kernel state is one buffer of `u32` words laid out by [`RadixState`]; the host zeroes it,
//! runs the histogram, turns the histograms into digit offsets and writes those back.
//!
//! A pass is one block per tile, not persistent blocks that copy their next tile into shared
//! memory (`cp.async`) while they rank and scatter the current one: the loads' latency is not
//! what bounds a pass. The warp ranking is one sweep per round: splitting it into two sweeps
//! (all rounds' matches and atomics, then all broadcasts) gained nothing and spills at the
//! key + value tile. Both experiments are in `docs/perf-log.md`.

/// Threads per block of the pass and histogram kernels (one per digit at 8 bits).
pub const RADIX_NT: u32 = 256;
/// Radix bits per sort pass.
pub const SORT_BITS: u32 = 8;
/// Most items a pass may look back over with 32-bit status words (the flag takes two bits);
/// larger inputs use the 64-bit kernels.
pub const STATUS32_MAX_ITEMS: u64 = (1 << 30) - 1;
/// Largest `passes * 2^bits` the histogram kernel counts at once.
pub const HIST_WORDS: usize = 2048;

/// Where each part of the kernel state lives, in `u32` words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixState {
    /// Passes.
    pub passes: usize,
    /// Digits per pass (`2^bits`).
    pub bins: usize,
    /// Tiles per pass.
    pub tiles: usize,
    /// Words per look-back status word (1 or 2).
    pub status_words: usize,
}

impl RadixState {
    /// Histogram of pass `p` (`bins` words).
    pub const fn hist(&self, p: usize) -> usize {
        p * self.bins
    }
    /// Digit offsets of pass `p` (`bins` words; the cursors of an unstable pass).
    pub const fn offsets(&self, p: usize) -> usize {
        (self.passes + p) * self.bins
    }
    /// Tile counter of pass `p`.
    pub const fn counter(&self, p: usize) -> usize {
        2 * self.passes * self.bins + p
    }
    /// Status words of pass `p` (in units of the status type, from the start of the buffer).
    pub const fn status(&self, p: usize) -> usize {
        let header = (2 * self.passes * self.bins + self.passes).next_multiple_of(2);
        header / self.status_words + p * self.tiles * self.bins
    }
    /// Total words.
    pub const fn words(&self) -> usize {
        (self.status(self.passes)) * self.status_words
    }
}

/// Pass mode bit: the input holds keys as given (map them to ordered bits on load).
pub const MODE_FIRST: u32 = 1;
/// Pass mode bit: write keys as given (map ordered bits back on store).
pub const MODE_LAST: u32 = 2;
/// Pass mode bit: descending order (ordered bits complemented).
pub const MODE_DESC: u32 = 4;

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::arch::{Atomic, Shared, block_idx, grid_dim, sync_threads, thread_idx};
    use crate::block::*;
    use crate::radix::{RadixBits, RadixKey};

    /// Counts the digits of `passes` passes of `bits` bits from bit `shift` up, over all keys,
    /// into `hist` (`passes * 2^bits` words, zeroed). Grid-stride over tiles; block-private
    /// counters in `sh` (`HIST_WORDS` words).
    ///
    /// # Safety
    /// `keys` holds `n` items; `passes << bits <= HIST_WORDS`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn radix_histogram<K: RadixKey, const NT: usize, const IPT: usize>(
        keys: *const K::Bits,
        n: usize,
        shift: u32,
        bits: u32,
        passes: usize,
        descending: bool,
        hist: *mut u32,
        sh: Shared<u32>,
    ) where
        K::Bits: Default,
    {
        let t = thread_idx();
        let words = passes << bits;
        let mut i = t;
        while i < words {
            // SAFETY: words <= HIST_WORDS, the buffer's length.
            unsafe { sh.write(i, 0) };
            i += NT;
        }
        sync_threads();
        let mut tile = block_idx();
        while tile * NT * IPT < n {
            let start = tile * NT * IPT;
            let valid = (n - start).min(NT * IPT);
            let mut raw = [K::Bits::default(); IPT];
            // SAFETY: the tile lies within `keys`.
            unsafe { block_load::<K::Bits, NT, IPT>(keys.add(start), valid, &mut raw) };
            for (k, &r) in raw.iter().enumerate() {
                if Tile::<K::Bits, NT, IPT>::offset(t, k) < valid {
                    let b = K::ordered(r, descending);
                    for p in 0..passes {
                        let d = b.digit(shift + p as u32 * bits, bits) as usize;
                        // SAFETY: (p << bits) + d < words.
                        unsafe { sh.atomic_add((p << bits) + d, 1) };
                    }
                }
            }
            tile += grid_dim();
        }
        sync_threads();
        let mut i = t;
        while i < words {
            // SAFETY: in bounds of both buffers.
            unsafe {
                let c = sh.read(i);
                if c != 0 {
                    u32::atomic_add(hist.add(i), c);
                }
            }
            i += NT;
        }
    }

    /// Shared memory of a pass kernel.
    #[derive(Clone, Copy)]
    pub struct PassShared<B> {
        /// Ranking counters and scan partials.
        pub rank: RadixRankShared,
        /// Keys in digit order, `NT * IPT` items.
        pub keys: Shared<B>,
        /// Values in digit order, `NT * IPT` items (unused without values). It shares its
        /// memory with the ranking counters, which are dead once the keys are ranked, or with
        /// `keys` when `vals_on_keys`.
        pub vals: Shared<u32>,
        /// Whether `vals` is `keys`' memory, which the keys' scatter must have left first.
        pub vals_on_keys: bool,
        /// Per digit: output position of the tile's run of that digit, minus its tile start.
        pub base: Shared<u32>,
        /// Tile id broadcast.
        pub slot: Shared<u32>,
    }

    /// Where a pass finds its state.
    #[derive(Clone, Copy)]
    pub struct PassState {
        /// The state buffer.
        pub words: *mut u32,
        /// Word index of the digit offsets (cursors when unstable).
        pub offsets: usize,
        /// Word index of the tile counter.
        pub counter: usize,
        /// Index of the status words, in status-word units.
        pub status: usize,
        /// Segmented passes: word index of the segments' first tiles (`segments + 1` words,
        /// the last one the number of tiles); the digit offsets are then `segments * BINS + 1`
        /// absolute positions, segment `s` spanning `offsets[s * BINS] .. offsets[(s + 1) *
        /// BINS]`.
        pub segs: usize,
        /// Segments of a segmented pass.
        pub segments: usize,
    }

    /// Where one tile of a pass lies.
    #[derive(Clone, Copy)]
    struct TilePlace {
        /// Tile id (its look-back status words).
        tile: usize,
        /// First item.
        start: usize,
        /// Items.
        valid: usize,
        /// Whether the look-back ends here: tile 0, or a segment's first tile.
        first: bool,
        /// Word index of the digit offsets the tile's digits start at.
        offsets: usize,
    }

    /// The tile `tile` of a pass over `n` items, or of a segmented pass (see [`PassState`]).
    #[inline(always)]
    fn place<const BINS: usize>(
        tile: usize,
        tile_items: usize,
        n: usize,
        st: &PassState,
        segmented: bool,
    ) -> TilePlace {
        if !segmented {
            let start = tile * tile_items;
            return TilePlace {
                tile,
                start,
                valid: (n - start).min(tile_items),
                first: tile == 0,
                offsets: st.offsets,
            };
        }
        // SAFETY (all reads): the segment table and offsets hold the words PassState names.
        let word = |i: usize| unsafe { st.words.add(i).read() } as usize;
        // The last segment whose first tile is at most `tile` (empty segments own no tile).
        let (mut lo, mut hi) = (0, st.segments);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if word(st.segs + mid) <= tile {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let local = tile - word(st.segs + lo);
        let offsets = st.offsets + lo * BINS;
        let start = word(offsets) + local * tile_items;
        TilePlace {
            tile,
            start,
            valid: (word(offsets + BINS) - start).min(tile_items),
            first: local == 0,
            offsets,
        }
    }

    /// What a radix pass kernel does besides moving keys: one type per kernel, which
    /// `pass_kernel!` defines from the kernel's options (see [`radix_pass`]).
    pub trait PassPolicy {
        /// The key type.
        type Key: RadixKey;
        /// The look-back status word (`u64` past [`STATUS32_MAX_ITEMS`] items).
        type Status: StatusWord;
        /// Whether `u32` values move with the keys.
        const VALUES: bool;
        /// Whether the pass keeps the tiles' order (through the look-back).
        const STABLE: bool;
        /// Whether digits are counted before they are ranked.
        const EARLY: bool;
        /// Whether a stable pass's tile is its block index.
        const BLOCK_IDS: bool;
        /// Whether the pass orders each segment of its input on its own.
        const SEGMENTED: bool;
    }

    /// The radix bits of a policy's keys.
    pub type Bits<P> = <<P as PassPolicy>::Key as RadixKey>::Bits;

    /// One radix pass over digit `shift .. shift + R` (`BINS = 2^R`, `DPT = ceil(BINS / NT)`):
    /// keys (and values when `VALUES`) from `*_in` to `*_out`, stably ordered by the digit when
    /// `STABLE` (tiles in order through the look-back), else grouped by digit with the order of
    /// tiles left to the scheduler (the options are the policy `P`'s). `EARLY` counts the
    /// digits before ranking them (see [`block_radix_count`]). A stable pass's tile is its
    /// block index with `BLOCK_IDS`
    /// (blocks are dispatched in index order, so a tile's predecessors are running or done),
    /// else a dynamic id from the pass's counter. Block indices save an atomic round trip and
    /// a barrier per tile, which pays for the keys-only passes; the key + value passes ran
    /// slower with them, so they keep dynamic ids.
    ///
    /// Registers bound the occupancy of this kernel, so few per-item arrays live at once: the
    /// digits are recomputed from the keys and ranks overwrite the in-warp ranks.
    ///
    /// A `SEGMENTED` pass orders each segment of its input by the digit on its own (the second
    /// pass of the MSD sort, whose segments are the first pass's digits): tiles never straddle
    /// segments, and a segment's first tile starts its look-back chain.
    ///
    /// # Safety
    /// Inputs and outputs hold `n` items; the state was prepared as [`RadixState`] (or
    /// [`MsdState`]) says; one block per tile.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn radix_pass<
        P: PassPolicy,
        const NT: usize,
        const IPT: usize,
        const R: u32,
        const BINS: usize,
        const DPT: usize,
    >(
        keys_in: *const Bits<P>,
        keys_out: *mut Bits<P>,
        vals_in: *const u32,
        vals_out: *mut u32,
        n: usize,
        shift: u32,
        mode: u32,
        st: PassState,
        sh: PassShared<Bits<P>>,
    ) where
        Bits<P>: Default,
    {
        const { assert!(BINS == 1 << R && (P::STABLE || !P::SEGMENTED)) };
        let tile = if P::STABLE && !P::BLOCK_IDS {
            // SAFETY: the counter word of this pass, zeroed.
            unsafe { block_dynamic_tile_id(st.words.add(st.counter), sh.slot) }
        } else {
            block_idx()
        };
        let at = place::<BINS>(tile, NT * IPT, n, &st, P::SEGMENTED);
        let io = (keys_in, keys_out, vals_in, vals_out);
        // Full tiles (all but a segment's last) test no item against the tail.
        // SAFETY: forwarded.
        unsafe {
            if at.valid == NT * IPT {
                pass_tile::<P, NT, IPT, R, BINS, DPT, true>(io, at, shift, mode, st, sh)
            } else {
                pass_tile::<P, NT, IPT, R, BINS, DPT, false>(io, at, shift, mode, st, sh)
            }
        }
    }

    /// [`radix_pass`] for the tile at `at` (`FULL`: of all `NT * IPT` items).
    ///
    /// # Safety
    /// As for [`radix_pass`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    unsafe fn pass_tile<
        P: PassPolicy,
        const NT: usize,
        const IPT: usize,
        const R: u32,
        const BINS: usize,
        const DPT: usize,
        const FULL: bool,
    >(
        (keys_in, keys_out, vals_in, vals_out): (
            *const Bits<P>,
            *mut Bits<P>,
            *const u32,
            *mut u32,
        ),
        at: TilePlace,
        shift: u32,
        mode: u32,
        st: PassState,
        sh: PassShared<Bits<P>>,
    ) where
        Bits<P>: Default,
    {
        type K<P> = <P as PassPolicy>::Key;
        type S<P> = <P as PassPolicy>::Status;
        let valid = if FULL { NT * IPT } else { at.valid };
        let t = thread_idx();
        let (tile, start) = (at.tile, at.start);
        let (first, last, desc) = (
            mode & MODE_FIRST != 0,
            mode & MODE_LAST != 0,
            mode & MODE_DESC != 0,
        );
        // SAFETY: the tile lies within the input.
        let mut bits = unsafe {
            block_load_warp_striped::<Bits<P>, NT, IPT>(
                keys_in.add(start),
                valid,
                Bits::<P>::default(),
            )
        };
        // Values are loaded now, so that their latency overlaps the ranking.
        let vals = if P::VALUES {
            // SAFETY: the tile lies within the input.
            unsafe { block_load_warp_striped::<u32, NT, IPT>(vals_in.add(start), valid, 0) }
        } else {
            [0; IPT]
        };
        if first {
            bits = bits.map(|r| K::<P>::ordered(r, desc));
        }
        let mine = if FULL {
            IPT as u32
        } else {
            warp_striped_count::<IPT>(t, valid) as u32
        };
        let digit = |k: usize| {
            if (k as u32) < mine {
                bits[k].digit(shift, R)
            } else {
                NO_DIGIT
            }
        };

        let mut ranks = [0u32; IPT];
        // Early counts for key + value passes (see block_radix_count).
        let early = P::EARLY;
        let totals =
            block_radix_count::<NT, IPT, BINS, DPT>(digit, &mut ranks, sh.rank, early, FULL);
        let status = st.words.cast::<S<P>>().wrapping_add(st.status);
        if P::STABLE {
            // SAFETY: this pass's status words, BINS per tile.
            unsafe { block_digit_publish::<S<P>, BINS, DPT>(status, tile, at.first, &totals) };
        }
        let starts = block_radix_rank_finish::<NT, IPT, BINS, DPT>(
            digit, &mut ranks, &totals, sh.rank, early, FULL,
        );
        let offsets = st.words.wrapping_add(at.offsets);
        // Where item i of the sorted tile goes, less the count of its digit in earlier tiles:
        // the digit's global start (stable) minus its tile start (wrapping: it may be
        // "negative"). Read before the look-back, whose wait hides the load.
        let origin: [u32; DPT] = core::array::from_fn(|j| {
            let d = t * DPT + j;
            let global = if P::STABLE && d < BINS {
                // SAFETY: offsets are read-only in a stable pass.
                unsafe { offsets.add(d).read() }
            } else {
                0
            };
            global.wrapping_sub(starts[j])
        });
        let before: [u32; DPT] = if P::STABLE {
            // SAFETY: published above.
            unsafe { block_digit_lookback::<S<P>, BINS, DPT>(status, tile, at.first, &totals) }
        } else {
            core::array::from_fn(|j| {
                let d = t * DPT + j;
                if d < BINS && totals[j] > 0 {
                    // SAFETY: the cursor of digit d (unstable: the reserved place is global).
                    unsafe { u32::atomic_add(offsets.add(d), totals[j]) }
                } else {
                    0
                }
            })
        };
        for j in 0..DPT {
            let d = t * DPT + j;
            if d < BINS {
                // SAFETY: digit d is this thread's.
                unsafe { sh.base.write(d, origin[j].wrapping_add(before[j])) };
            }
        }
        for k in 0..IPT {
            if digit(k) != NO_DIGIT {
                // SAFETY: ranks of valid items are distinct positions below NT * IPT.
                unsafe { sh.keys.write(ranks[k] as usize, bits[k]) };
            }
        }
        sync_threads();
        // Position i of the sorted tile goes to its digit's base plus i; the values follow
        // their keys to the same places.
        let (t32, valid32) = (t as u32, valid as u32);
        let mut dest = [0u32; IPT];
        for (k, o) in dest.iter_mut().enumerate() {
            let i = k as u32 * NT as u32 + t32;
            if i < valid32 {
                // SAFETY: written before the barrier; base holds every digit of the tile;
                // base + i < n is the item's place in the output.
                unsafe {
                    let b = sh.keys.read(i as usize);
                    *o = sh.base.read(b.digit(shift, R) as usize).wrapping_add(i);
                    keys_out.add(*o as usize).write(if last {
                        K::<P>::unordered(b, desc)
                    } else {
                        b
                    });
                }
            }
        }
        if P::VALUES {
            if sh.vals_on_keys {
                sync_threads();
            }
            for k in 0..IPT {
                if (k as u32) < mine {
                    // SAFETY: as for the keys.
                    unsafe { sh.vals.write(ranks[k] as usize, vals[k]) };
                }
            }
            sync_threads();
            for (k, &o) in dest.iter().enumerate() {
                let i = k as u32 * NT as u32 + t32;
                if i < valid32 {
                    // SAFETY: as for the keys.
                    unsafe { vals_out.add(o as usize).write(sh.vals.read(i as usize)) };
                }
            }
        }
    }
}

/// Parameters of the histogram kernels over keys `K` (read as their radix bits): `(keys, n,
/// shift, bits, passes, descending, hist)`.
pub type HistArgs<K> = (*const K, u32, u32, u32, u32, u32, *mut u32);

/// Parameters of the radix pass kernels over keys `K` (moved as their bits): `(keys_in,
/// keys_out, vals_in, vals_out, n, shift, mode, state, offsets_at, counter_at, status_at,
/// segs_at, segments)`.
pub type PassArgs<K> = (
    *const K,
    *mut K,
    *const u32,
    *mut u32,
    u32,
    u32,
    u32,
    *mut u32,
    u32,
    u32,
    u32,
    u32,
    u32,
);

/// Defines a histogram kernel for key type `$k`.
macro_rules! histogram_kernel {
    ($($spec:ident = $name:ident($k:ty);)*) => {$(
        crate::kernel! {
            /// Digit histograms of `passes` passes of `bits` bits from bit `shift`.
            $spec = $name[NT = 256, IPT = 16](keys: *const $k, n: u32, shift: u32, bits: u32, passes: u32, descending: u32, hist: *mut u32) {
                let sh = crate::shared_array!(hist_sh: [u32; HIST_WORDS]);
                // SAFETY: the host checks passes << bits <= HIST_WORDS and sizes the buffers.
                unsafe { radix_histogram::<$k, NT, IPT>(keys.cast(), n as usize, shift, bits, passes as usize, descending != 0, hist, sh) }
            }
        }
    )*};
}

histogram_kernel! {
    RADIX_HIST_U32 = radix_hist_u32(u32);
    RADIX_HIST_I32 = radix_hist_i32(i32);
    RADIX_HIST_F32 = radix_hist_f32(f32);
    RADIX_HIST_U64 = radix_hist_u64(u64);
}

/// The option given to a kernel macro, else its default (used in kernel bodies, which exist
/// on nvptx only).
#[cfg(target_arch = "nvptx64")]
macro_rules! or_default {
    ($default:expr) => {
        $default
    };
    ($default:expr, $given:expr) => {
        $given
    };
}

/// Defines radix pass kernels: key type, status word type, items per thread, radix bits,
/// values or not, stable or not, resident blocks per SM, early counts (default: with values),
/// whether the values take the keys' shared memory (`SHARE`, default no), whether tiles are
/// block indices (`BLOCK_IDS`, default no) and whether the pass is segmented (`SEGMENTED`,
/// default no; see [`radix_pass`]).
macro_rules! pass_kernel {
    ($($spec:ident = $name:ident($k:ty, $s:ty, IPT = $ipt:literal, R = $r:literal, VALUES = $v:literal, STABLE = $stable:literal, MIN_BLOCKS = $mb:literal $(, EARLY = $early:literal)? $(, SHARE = $share:literal)? $(, BLOCK_IDS = $ids:literal)? $(, SEGMENTED = $seg:literal)?);)*) => {$(
        crate::kernel! {
            /// One radix pass (see `radix_pass`).
            $spec = $name[NT = 256, IPT = $ipt, MIN_BLOCKS = $mb](
                keys_in: *const $k,
                keys_out: *mut $k,
                vals_in: *const u32,
                vals_out: *mut u32,
                n: u32,
                shift: u32,
                mode: u32,
                state: *mut u32,
                offsets_at: u32,
                counter_at: u32,
                status_at: u32,
                segs_at: u32,
                segments: u32
            ) {
                const BINS: usize = 1 << $r;
                const DPT: usize = BINS.div_ceil(NT);
                type B = <$k as crate::radix::RadixKey>::Bits;
                struct Policy;
                impl PassPolicy for Policy {
                    type Key = $k;
                    type Status = $s;
                    const VALUES: bool = $v;
                    const STABLE: bool = $stable;
                    const EARLY: bool = or_default!($v $(, $early)?);
                    const BLOCK_IDS: bool = or_default!(false $(, $ids)?);
                    const SEGMENTED: bool = or_default!(false $(, $seg)?);
                }
                const COUNTERS: usize = NT / 32 * BINS;
                const SHARE: bool = or_default!(false $(, $share)?);
                const UNION: usize = if $v && !SHARE && NT * IPT > COUNTERS { NT * IPT } else { COUNTERS };
                let counters = crate::shared_array!(counters_or_vals: [u32; UNION]);
                let keys = crate::shared_array!(sorted_keys: [B; NT * IPT]);
                let sh = PassShared {
                    rank: crate::block::RadixRankShared {
                        counters,
                        scan: crate::shared_array!(rank_scan: [u32; crate::block::Tile::<u32, NT, DPT>::SCAN_WORDS]),
                    },
                    keys,
                    vals: if SHARE { keys.cast() } else { counters },
                    vals_on_keys: SHARE,
                    base: crate::shared_array!(digit_base: [u32; BINS]),
                    slot: crate::shared_array!(tile_slot: [u32; 1]),
                };
                let st = PassState {
                    words: state,
                    offsets: offsets_at as usize,
                    counter: counter_at as usize,
                    status: status_at as usize,
                    segs: segs_at as usize,
                    segments: segments as usize,
                };
                // SAFETY: the host sizes the buffers for n items and prepares the state.
                unsafe {
                    radix_pass::<Policy, NT, IPT, $r, BINS, DPT>(
                        keys_in.cast(), keys_out.cast(), vals_in, vals_out, n as usize, shift, mode, st, sh,
                    )
                }
            }
        }
    )*};
}

pass_kernel! {
    SORT_U32_K_S32 = sort_u32_k_s32(u32, u32, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true);
    SORT_U32_K_S64 = sort_u32_k_s64(u32, u64, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true);
    SORT_U32_KV_S32 = sort_u32_kv_s32(u32, u32, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
    SORT_U32_KV_S64 = sort_u32_kv_s64(u32, u64, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
    SORT_I32_K_S32 = sort_i32_k_s32(i32, u32, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true);
    SORT_I32_K_S64 = sort_i32_k_s64(i32, u64, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true);
    SORT_I32_KV_S32 = sort_i32_kv_s32(i32, u32, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
    SORT_I32_KV_S64 = sort_i32_kv_s64(i32, u64, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
    SORT_F32_K_S32 = sort_f32_k_s32(f32, u32, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true);
    SORT_F32_K_S64 = sort_f32_k_s64(f32, u64, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true);
    SORT_F32_KV_S32 = sort_f32_kv_s32(f32, u32, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
    SORT_F32_KV_S64 = sort_f32_kv_s64(f32, u64, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
    SORT_U64_K_S32 = sort_u64_k_s32(u64, u32, IPT = 12, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3);
    SORT_U64_K_S64 = sort_u64_k_s64(u64, u64, IPT = 12, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3);
    SORT_U64_KV_S32 = sort_u64_kv_s32(u64, u32, IPT = 12, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2);
    SORT_U64_KV_S64 = sort_u64_kv_s64(u64, u64, IPT = 12, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2);
    // The MSD sort's second pass (see `sort_msd`): ordered bits in and out, so one kernel
    // serves every 32-bit key type.
    SORT_SEG_K = sort_segmented_k(u32, u32, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true, BLOCK_IDS = true, SEGMENTED = true);
    SORT_SEG_KV = sort_segmented_kv(u32, u32, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true, SEGMENTED = true);
}

/// Defines the partition pass kernels for 1..=10 radix bits, `[stable with u32 status, stable
/// with u64 status, unstable]` per bit count, in `PARTITION[bits - 1]`. Tiles are the sort's
/// (256 x 26, values on the keys' shared memory) up to 8 bits, and as large as shared memory
/// allows beside 8 warps' private counters (16 or 32 KB) at 9 and 10 bits: the largest tiles
/// ran fastest at every bit count, stable and unstable.
macro_rules! partition_kernels {
    ($($r:literal, $ipt:literal: $a:ident = $an:ident, $b:ident = $bn:ident, $c:ident = $cn:ident;)*) => {
        pass_kernel! {$(
            $a = $an(u32, u32, IPT = $ipt, R = $r, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
            $b = $bn(u32, u64, IPT = $ipt, R = $r, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
            $c = $cn(u32, u32, IPT = $ipt, R = $r, VALUES = true, STABLE = false, MIN_BLOCKS = 2, SHARE = true);
        )*}
        /// Partition pass kernels by radix bits (index `bits - 1`): stable with 32-bit status,
        /// stable with 64-bit status, unstable.
        pub const PARTITION: [[crate::spec::KernelSpec<PassArgs<u32>>; 3]; 10] = [$([$a, $b, $c]),*];
    };
}

partition_kernels! {
    1, 26: PART_R1_S32 = partition_r1_s32, PART_R1_S64 = partition_r1_s64, PART_R1_U = partition_r1_unstable;
    2, 26: PART_R2_S32 = partition_r2_s32, PART_R2_S64 = partition_r2_s64, PART_R2_U = partition_r2_unstable;
    3, 26: PART_R3_S32 = partition_r3_s32, PART_R3_S64 = partition_r3_s64, PART_R3_U = partition_r3_unstable;
    4, 26: PART_R4_S32 = partition_r4_s32, PART_R4_S64 = partition_r4_s64, PART_R4_U = partition_r4_unstable;
    5, 26: PART_R5_S32 = partition_r5_s32, PART_R5_S64 = partition_r5_s64, PART_R5_U = partition_r5_unstable;
    6, 26: PART_R6_S32 = partition_r6_s32, PART_R6_S64 = partition_r6_s64, PART_R6_U = partition_r6_unstable;
    7, 26: PART_R7_S32 = partition_r7_s32, PART_R7_S64 = partition_r7_s64, PART_R7_U = partition_r7_unstable;
    8, 26: PART_R8_S32 = partition_r8_s32, PART_R8_S64 = partition_r8_s64, PART_R8_U = partition_r8_unstable;
    9, 20: PART_R9_S32 = partition_r9_s32, PART_R9_S64 = partition_r9_s64, PART_R9_U = partition_r9_unstable;
    10, 10: PART_R10_S32 = partition_r10_s32, PART_R10_S64 = partition_r10_s64, PART_R10_U = partition_r10_unstable;
}

/// Tile shapes for `tessera bench sort`'s sweep of the `u32` passes: items per thread, resident
/// blocks per SM (which sets the register budget) and whether values reuse the keys' shared
/// memory (`sh`, one more barrier per tile). The defaults are the largest tiles that still keep
/// two blocks per SM (three for keys only) without spilling: key + value 256 x 26 with values
/// on the keys' memory (a buffer for each fits 48 KB of static shared memory only up to
/// 256 x 23), keys only 256 x 20 with early counts. The sweep's figures are in
/// `docs/perf-log.md`.
#[cfg(feature = "sweeps")]
pub mod sweep {
    #[cfg(target_arch = "nvptx64")]
    use super::*;

    pass_kernel! {
        SORT_KV_IPT8_B4 = sort_kv_sweep_ipt8_b4(u32, u32, IPT = 8, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 4);
        SORT_KV_IPT12_B3 = sort_kv_sweep_ipt12_b3(u32, u32, IPT = 12, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 3);
        SORT_KV_IPT16_B3 = sort_kv_sweep_ipt16_b3(u32, u32, IPT = 16, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 3);
        SORT_KV_IPT16_B2 = sort_kv_sweep_ipt16_b2(u32, u32, IPT = 16, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2);
        SORT_KV_IPT20_B2 = sort_kv_sweep_ipt20_b2(u32, u32, IPT = 20, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2);
        SORT_KV_IPT23_B2 = sort_kv_sweep_ipt23_b2(u32, u32, IPT = 23, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2);
        SORT_KV_IPT22_B2 = sort_kv_sweep_ipt22_b2(u32, u32, IPT = 22, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2);
        SORT_KV_SH23 = sort_kv_sweep_sh23(u32, u32, IPT = 23, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
        SORT_KV_SH28 = sort_kv_sweep_sh28(u32, u32, IPT = 28, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true);
        SORT_K_IPT16_B3 = sort_k_sweep_ipt16_b3(u32, u32, IPT = 16, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true);
        SORT_K_IPT16_B3_LATE = sort_k_sweep_ipt16_b3_late(u32, u32, IPT = 16, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3);
        SORT_K_IPT24_B2 = sort_k_sweep_ipt24_b2(u32, u32, IPT = 24, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 2, EARLY = true);
        SORT_K_IPT20_B3_DYN = sort_k_sweep_ipt20_b3_dynamic(u32, u32, IPT = 20, R = 8, VALUES = false, STABLE = true, MIN_BLOCKS = 3, EARLY = true);
        SORT_KV_SH26_BLOCK = sort_kv_sweep_sh26_block_ids(u32, u32, IPT = 26, R = 8, VALUES = true, STABLE = true, MIN_BLOCKS = 2, SHARE = true, BLOCK_IDS = true);
    }

    /// The key + value sweep, the default kernel first.
    pub const PAIRS: [crate::spec::KernelSpec<super::PassArgs<u32>>; 11] = [
        super::SORT_U32_KV_S32,
        SORT_KV_SH26_BLOCK,
        SORT_KV_SH23,
        SORT_KV_SH28,
        SORT_KV_IPT8_B4,
        SORT_KV_IPT12_B3,
        SORT_KV_IPT16_B3,
        SORT_KV_IPT16_B2,
        SORT_KV_IPT20_B2,
        SORT_KV_IPT22_B2,
        SORT_KV_IPT23_B2,
    ];

    /// The keys-only sweep, the default kernel first (`_late`: counts while ranking).
    pub const KEYS: [crate::spec::KernelSpec<super::PassArgs<u32>>; 5] = [
        super::SORT_U32_K_S32,
        SORT_K_IPT20_B3_DYN,
        SORT_K_IPT16_B3,
        SORT_K_IPT16_B3_LATE,
        SORT_K_IPT24_B2,
    ];
}
