//! Survivors queued across tiles: a warp runs its rounds over the rows of a compaction
//! ([`super::warp_compact`]) only once they fill a round, and carries the rest to its next
//! tile. A selective first test leaves a warp a few rows per tile; run at once, each tile pays
//! the survivors' whole chain of dependent loads (gather, lookup, gather, ...) for them, and
//! the warp's next tile waits behind it. Queued, the chain is paid once per full round, and
//! the tiles in between cost their first column's load and test alone.
//!
//! The rounds get absolute rows, not tile offsets: a queued row may come from an earlier
//! tile than the one the warp is on.
use super::for_each_survivor_coded;
use crate::arch::{Shared, ballot, lane_id, lanemask_lt, popc, sync_warp, thread_idx};

/// Shared-memory entries a block of `NT` threads needs for the carried rows with `S`
/// survivors per lane and round.
pub const fn carry_slots(nt: usize, s: usize) -> usize {
    nt * s
}

/// A warp's carried survivors: fewer than one round of rows, with their codes where the
/// compaction is coded ([`carry_slots`] entries each).
#[derive(Clone, Copy)]
pub struct Carry {
    /// Rows.
    pub rows: Shared<u32>,
    /// Codes (at most 8 bits).
    pub codes: Shared<u8>,
}

/// Runs `f(rows, codes, live)` over every full round of the warp's carried survivors
/// (`carried` of them) followed by the `count` entries of the tile at `start` that
/// [`super::warp_compact_coded`] left in `buf`, `S` per lane and round: entry
/// `r * 32 * S + s * 32 + lane` is slot `s` of a lane in round `r`, every slot live. The
/// entries past the last full round become the carried ones, and `carried` their number.
///
/// # Safety
/// As for [`super::for_each_survivor_coded`], whose `buf` and `count` these are; `carry`
/// holds [`carry_slots`]`(NT, S)` entries, of which the warp's first `carried` are its
/// carried survivors; the rows fit `u32` and `CODE_BITS` is at most 8.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn for_each_queued_survivor<const IPT: usize, const S: usize, const CODE_BITS: u32>(
    buf: Shared<u16>,
    count: u32,
    start: usize,
    carry: Carry,
    carried: &mut u32,
    mut f: impl FnMut(&[u32; S], &[u32; S], &[bool; S]),
) {
    let round = (32 * S) as u32;
    let warp = thread_idx() / 32;
    let (part, mine) = (warp * 32 * IPT, warp * 32 * S);
    let lane = lane_id();
    let offset_mask = (1u32 << (16 - CODE_BITS)) - 1;
    let held = *carried;
    let total = held + count;
    // The tile's entry `i` (its row and code), and entry `j` of the queue: a carried one, or
    // one of the tile's.
    // SAFETY (the reads): i < count and j < total, within the warp's compaction or its
    // carried entries.
    let tile_entry = |i: u32| unsafe {
        let e = buf.read(part + i as usize) as u32;
        (start as u32 + (e & offset_mask), e >> (16 - CODE_BITS))
    };
    let entry = |j: u32| {
        if j < held {
            // SAFETY: as above.
            unsafe { carried_at::<CODE_BITS>(carry, mine + j as usize) }
        } else {
            tile_entry(j - held)
        }
    };
    let full = total / round * round;
    let mut first = 0u32;
    while first < full {
        let mut rows = [0u32; S];
        let mut codes = [0u32; S];
        for s in 0..S {
            (rows[s], codes[s]) = entry(first + s as u32 * 32 + lane);
        }
        f(&rows, &codes, &[true; S]);
        first += round;
    }
    // The rest, fewer than a round, becomes the carried entries. Without a full round the
    // carried ones stay where they are and only the tile's move in behind them; after one
    // (`full` is a round or more, past every carried entry) all of the rest is the tile's.
    // No lane reads the carry here, so a barrier ahead of the writes only keeps the rounds'
    // reads of it first.
    sync_warp();
    for s in 0..S {
        let j = full + s as u32 * 32 + lane;
        if j >= held && j < total {
            let (row, code) = tile_entry(j - held);
            let at = mine + (j - full) as usize;
            // SAFETY: j - full < 32 * S, the warp's carried entries.
            unsafe {
                carry.rows.write(at, row);
                if CODE_BITS != 0 {
                    carry.codes.write(at, code as u8);
                }
            }
        }
    }
    *carried = total - full;
    // The carried entries are read back, and `buf` rewritten, only after the next compaction's
    // warp barrier; this one keeps the rounds' reads of `buf` ahead of that compaction.
    sync_warp();
}

/// The last round of the warp's `carried` survivors, after its last tile, where they are
/// `queued`: `f(0, rows, codes, live)` (the rows as [`survivor_rounds`] passes them) with slot
/// `s` of a lane live where `s * 32 + lane < carried`. Nothing when none is carried.
///
/// # Safety
/// As for [`for_each_queued_survivor`], which left `carry` and `carried`.
#[inline(always)]
pub unsafe fn flush_queued_survivors<const S: usize, const CODE_BITS: u32>(
    queued: bool,
    carry: Carry,
    carried: u32,
    mut f: impl FnMut(usize, &[u32; S], &[u32; S], &[bool; S]),
) {
    if !queued || carried == 0 {
        return;
    }
    let mine = thread_idx() / 32 * 32 * S;
    let lane = lane_id();
    let mut rows = [0u32; S];
    let mut codes = [0u32; S];
    let mut live = [false; S];
    // A dead slot repeats the warp's first carried row, so that reads at it stay in rows the
    // columns hold.
    // SAFETY: carried >= 1 entries of the warp's part.
    let own = unsafe { carry.rows.read(mine) };
    for s in 0..S {
        let j = s as u32 * 32 + lane;
        live[s] = j < carried;
        rows[s] = own;
        if live[s] {
            // SAFETY: j < carried entries of the warp's part.
            (rows[s], codes[s]) = unsafe { carried_at::<CODE_BITS>(carry, mine + j as usize) };
        }
    }
    f(0, &rows, &codes, &live);
}

/// A tile's survivor rounds, `f(start, offsets, codes, live)` over rows `start + offsets[s]`:
/// run at once ([`for_each_survivor_coded`] of the tile at `start`), or, where `queued`,
/// queued across tiles ([`for_each_queued_survivor`]), with `start` 0 and the rows
/// themselves as offsets. A walk that queues ends with [`flush_queued_survivors`].
///
/// # Safety
/// As for [`for_each_survivor_coded`], and where `queued`, for [`for_each_queued_survivor`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn survivor_rounds<
    T,
    const NT: usize,
    const IPT: usize,
    const S: usize,
    const CODE_BITS: u32,
>(
    queued: bool,
    buf: Shared<u16>,
    count: u32,
    start: usize,
    carry: Carry,
    carried: &mut u32,
    mut f: impl FnMut(usize, &[u32; S], &[u32; S], &[bool; S]),
) {
    // SAFETY (both): forwarded.
    unsafe {
        if queued {
            for_each_queued_survivor::<IPT, S, CODE_BITS>(
                buf,
                count,
                start,
                carry,
                carried,
                #[inline(always)]
                |rows, codes, live| f(0, rows, codes, live),
            );
        } else {
            for_each_survivor_coded::<T, NT, IPT, S, CODE_BITS>(
                buf,
                count,
                #[inline(always)]
                |offsets, codes, live| f(start, offsets, codes, live),
            );
        }
    }
}

/// Carried entry `at`: its row, and its code (0 where the compaction is not coded).
///
/// # Safety
/// `at` is one of `carry`'s entries.
#[inline(always)]
unsafe fn carried_at<const CODE_BITS: u32>(carry: Carry, at: usize) -> (u32, u32) {
    const { assert!(CODE_BITS <= 8, "carried codes are bytes") };
    // SAFETY: forwarded.
    unsafe {
        let code = if CODE_BITS == 0 {
            0
        } else {
            carry.codes.read(at) as u32
        };
        (carry.rows.read(at), code)
    }
}

/// Shared-memory entries a block of `NT` threads needs for a [`TailQueue`] of rounds of `R`
/// rows per lane: fewer than a round held, and the 32 rows one push adds.
pub const fn tail_slots(nt: usize, r: usize) -> usize {
    nt * (r + 1)
}

/// A warp's rows that passed a probe's first steps, each with a word (its group slot so
/// far), queued for the rest of the probe's chain until they fill a round.
///
/// A probe whose rounds are tied to a tile (a compressed walk's header table holds that
/// tile's entries only) runs its first steps at once and the rest here, by row: the tile's
/// rounds then end after their first lookup, and the rows that still qualify, far fewer,
/// pay the rest of the chain of dependent loads once per full round, not once per tile.
#[derive(Clone, Copy)]
pub struct TailQueue {
    /// Rows.
    pub rows: Shared<u32>,
    /// Each row's word.
    pub words: Shared<u32>,
}

impl TailQueue {
    /// A queue of no entries, for a probe that never defers (its survivors queued across
    /// tiles whole).
    #[inline(always)]
    pub fn unused() -> Self {
        // SAFETY: no entry, none read or written.
        let none = unsafe { Shared::from_raw(core::ptr::null_mut(), 0) };
        TailQueue {
            rows: none,
            words: none,
        }
    }

    /// Appends the warp's flagged slots `(rows[k], words[k])` to its `held` entries and runs
    /// `f(rows, words, live)` over each round that fills: `R` rows per lane (entry
    /// `s * 32 + lane` is slot `s` of a lane), every one live, in slots of `S` (those from
    /// `R` on dead, known at compile time, so that their work folds away: a round of one
    /// row per lane keeps the chain's registers down). Entries are in no particular order.
    ///
    /// # Safety
    /// Called by every lane of the warp, with the same `held`; the queue holds
    /// [`tail_slots`]`(NT, R)` entries of each, of which the warp's first `held` (fewer than
    /// a round) are its own.
    #[inline(always)]
    pub unsafe fn push<const K: usize, const R: usize, const S: usize>(
        self,
        held: &mut u32,
        rows: &[u32; K],
        words: &[u32; K],
        flags: &[bool; K],
        mut f: impl FnMut(&[u32; S], &[u32; S], &[bool; S]),
    ) {
        const { assert!(R >= 1 && R <= S) };
        let round = (32 * R) as u32;
        let mine = thread_idx() / 32 * 32 * (R + 1);
        let lane = lane_id();
        let below = lanemask_lt();
        for k in 0..K {
            // A push adds at most 32 entries to fewer than a round: within the warp's part.
            let mask = ballot(flags[k]);
            if flags[k] {
                let at = mine + (*held + popc(mask & below)) as usize;
                // SAFETY: at < held + 32 <= the warp's 32 * (R + 1) entries.
                unsafe {
                    self.rows.write(at, rows[k]);
                    self.words.write(at, words[k]);
                }
            }
            *held += popc(mask);
            sync_warp();
            if *held >= round {
                let mut r = [0u32; S];
                let mut w = [0u32; S];
                for s in 0..S {
                    let at = mine + s.min(R - 1) * 32 + lane as usize;
                    // SAFETY: a round's entries, all written (a dead slot rereads a live one).
                    unsafe { (r[s], w[s]) = (self.rows.read(at), self.words.read(at)) };
                }
                // The entries past the round, at most 31, move to the front: read before
                // any lane writes.
                let j = round + lane;
                let rest = if j < *held {
                    // SAFETY: j < held, within the warp's part.
                    Some(unsafe {
                        let at = mine + j as usize;
                        (self.rows.read(at), self.words.read(at))
                    })
                } else {
                    None
                };
                sync_warp();
                if let Some((row, word)) = rest {
                    // SAFETY: lane < 32, within the warp's part.
                    unsafe {
                        self.rows.write(mine + lane as usize, row);
                        self.words.write(mine + lane as usize, word);
                    }
                }
                *held -= round;
                sync_warp();
                f(&r, &w, &core::array::from_fn(|s| s < R));
            }
        }
    }

    /// The last, partial round of the warp's `held` entries: `f(rows, words, live)` with slot
    /// `s` of a lane live where `s < R` and `s * 32 + lane < held` (a dead slot repeats the
    /// first entry's row, so that reads at it stay in rows the columns hold). Nothing when
    /// none is held.
    ///
    /// # Safety
    /// As for [`TailQueue::push`], which left `held`.
    #[inline(always)]
    pub unsafe fn flush<const R: usize, const S: usize>(
        self,
        held: u32,
        mut f: impl FnMut(&[u32; S], &[u32; S], &[bool; S]),
    ) {
        if held == 0 {
            return;
        }
        let mine = thread_idx() / 32 * 32 * (R + 1);
        let lane = lane_id();
        // SAFETY: held >= 1 entries of the warp's part.
        let own = unsafe { self.rows.read(mine) };
        let mut r = [own; S];
        let mut w = [0u32; S];
        let mut live = [false; S];
        for s in 0..R.min(S) {
            let j = s as u32 * 32 + lane;
            live[s] = j < held;
            if live[s] {
                // SAFETY: j < held entries of the warp's part.
                unsafe {
                    (r[s], w[s]) = (
                        self.rows.read(mine + j as usize),
                        self.words.read(mine + j as usize),
                    )
                };
            }
        }
        f(&r, &w, &live);
    }
}
