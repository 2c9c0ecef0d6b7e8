//! The dimension tables of the SSB kernels, as [`DeviceTable`]s the block-wide build and
//! lookup functions work on.
//!
//! * [`DenseMap`]: perfect hashing on the dimension key (slot `key - min`), one `u16` per slot
//!   holding `payload + 1`, 0 for keys that are absent or fail the query's predicates. Against
//!   the `(key, payload)` slots of [`crate::block::PerfectMap`] this quarters the table (part at
//!   SF 20: 2 MB instead of 8 MB), so more of it stays in L1 and L2; a probe is one load.
//! * [`BitFilter`]: one bit per key slot, set for qualifying keys: the first probe of the fact
//!   table, staged in shared memory (supplier at SF 20: 5 KB).
//! * [`CodeMap`]: four bits per key slot, the code of a qualifying key's group value: the first
//!   probe when the query groups by the supplier (SF 20: 20 KB), so that the survivors carry
//!   their supplier's group value from shared memory instead of each looking it up in global
//!   memory: the queries that group by the supplier are bound by L2 requests, and that lookup
//!   is a large share of them.
use crate::arch::{
    Atomic, Shared, atomic_or_u32, load_if, load_relaxed_u32, sync_threads, thread_idx,
};
use crate::block::{BuildStatus, DeviceTable, Probe};
use crate::hash::{EMPTY_KEY, perfect_clamped, perfect_pos, perfect_slot};
use crate::ssb::plan::{CODE_BITS, CODE_SLOTS, MAX_PAYLOAD, NO_CODES, Plan, code_words};

/// Perfect-hash map from a dimension key to a `u16` payload (stored `+ 1`, 0 = no row).
#[derive(Clone, Copy)]
pub struct DenseMap {
    /// The slots.
    pub slots: *mut u16,
    /// Smallest key (bits).
    pub min: u32,
    /// Number of slots.
    pub len: u32,
}

impl DenseMap {
    /// The table of dimension `d` as the plan places it in `payload`.
    ///
    /// # Safety
    /// `plan` is a plan; `payload` is the buffer it describes.
    #[inline(always)]
    pub unsafe fn of(plan: *const Plan, d: usize, payload: *mut u16) -> DenseMap {
        // SAFETY: by contract.
        unsafe {
            let dim = &raw const (*plan).dims[d];
            DenseMap {
                slots: payload.add((*dim).payload as usize),
                min: (*dim).key_min,
                len: (*dim).len,
            }
        }
    }
}

impl DeviceTable for DenseMap {
    type Value = u32;
    type Bits = u32;

    /// A plain store: dimension keys are primary keys, each row has its own slot.
    #[inline(always)]
    unsafe fn insert(self, key: u32, value: u32) -> BuildStatus {
        match perfect_slot(key, self.min, self.len) {
            Some(s) if value <= MAX_PAYLOAD => {
                // SAFETY: s < len.
                unsafe { self.slots.add(s as usize).write(value as u16 + 1) };
                BuildStatus::default()
            }
            _ => BuildStatus {
                overflow: true,
                ..BuildStatus::default()
            },
        }
    }

    #[inline(always)]
    unsafe fn first(self, key: u32, live: bool) -> Probe<u32> {
        let (s, inside) = perfect_pos(key, self.min, self.len);
        // SAFETY: loaded only when s < len; 0 (no row) otherwise.
        let stored = unsafe { load_if(live && inside, self.slots.wrapping_add(s as usize)) };
        Probe {
            pos: 0,
            key: if stored != 0 { key } else { EMPTY_KEY },
            value: (stored as u32).wrapping_sub(1),
        }
    }

    #[inline(always)]
    unsafe fn next(self, _: &Probe<u32>) -> Option<Probe<u32>> {
        None
    }

    #[inline(always)]
    fn walk_len(self) -> u32 {
        1
    }
}

/// Set of qualifying dimension keys: bit `key - min` of `words`.
#[derive(Clone, Copy)]
pub struct BitFilter {
    /// The bitmap (global or shared memory, through a generic pointer).
    pub words: *mut u32,
    /// Smallest key (bits).
    pub min: u32,
    /// Number of key slots.
    pub len: u32,
}

impl BitFilter {
    /// Words of a bitmap over `len` keys.
    #[inline(always)]
    pub fn words_for(len: u32) -> usize {
        (len as usize).div_ceil(32)
    }

    /// The bitmap of dimension `d` as the plan places it in `bits`.
    ///
    /// # Safety
    /// `plan` is a plan; `bits` is the buffer it describes.
    #[inline(always)]
    pub unsafe fn of(plan: *const Plan, d: usize, bits: *mut u32) -> BitFilter {
        // SAFETY: by contract.
        unsafe {
            let dim = &raw const (*plan).dims[d];
            BitFilter {
                words: bits.add((*dim).bits as usize),
                min: (*dim).key_min,
                len: (*dim).len,
            }
        }
    }

    /// The filter with its words copied to `shared` when they fit (all threads call this; it
    /// ends with a barrier), else the filter itself.
    ///
    /// # Safety
    /// The bitmap is built and not modified during the kernel.
    #[inline(always)]
    pub unsafe fn staged<const NT: usize>(self, shared: Shared<u32>) -> Staged {
        // One slot more than the keys: slot `len` reads 0 (see `SharedBits::codes`).
        let staged = Self::words_for(self.len.saturating_add(1));
        if staged > shared.len() {
            return Staged::Global(self);
        }
        // SAFETY: the bitmap's words, then zeros, which fit the buffer.
        unsafe { copy_words::<NT>(self.words, Self::words_for(self.len), shared, staged) };
        Staged::Shared(SharedBits {
            words: shared,
            min: self.min,
            len: self.len,
        })
    }
}

/// Copies the `n` words of `words` to `shared` and zeroes it up to `staged` words, then a
/// barrier (all threads call this).
///
/// # Safety
/// `words` holds `n` words and `shared` `staged >= n`.
#[inline(always)]
unsafe fn copy_words<const NT: usize>(
    words: *const u32,
    n: usize,
    shared: Shared<u32>,
    staged: usize,
) {
    let mut i = thread_idx();
    while i < staged {
        // SAFETY: i < staged, and word i of `words` exists where i < n.
        unsafe { shared.write(i, if i < n { words.add(i).read() } else { 0 }) };
        i += NT;
    }
    sync_threads();
}

/// The first test of a probe on dimension `d`: its code map in shared memory when the plan
/// gives it one that is complete and fits `words` (with the code values in `values`, 16
/// entries), else its bitmap as [`BitFilter::staged`] leaves it. All threads call this; it
/// ends with a barrier.
///
/// # Safety
/// `plan` is a built plan describing `bits`; its tables are not modified during the kernel.
#[inline(always)]
pub unsafe fn stage_first<const NT: usize>(
    plan: *const Plan,
    d: usize,
    bits: *mut u32,
    words: Shared<u32>,
    values: Shared<u32>,
) -> Staged {
    // SAFETY: by contract; every thread reads the same words, so the branches are uniform.
    unsafe {
        if let Some(codes) = CodeMap::of(plan, d, bits)
            && (*plan).status.codes_overflow == 0
            && CodeMap::words_for(codes.len.saturating_add(1)) <= words.len()
            && values.len() > CODE_SLOTS
        {
            let t = thread_idx();
            if t <= CODE_SLOTS {
                // Entry c holds code c's value (stored + 1 in the plan); entry 0 is unused.
                let v = if t == 0 {
                    0
                } else {
                    (*plan).code_values[t - 1].wrapping_sub(1)
                };
                values.write(t, v);
            }
            // One slot more than the keys: slot `len` reads 0 (see `SharedCodes::codes`).
            let staged = CodeMap::words_for(codes.len.saturating_add(1));
            copy_words::<NT>(codes.words, CodeMap::words_for(codes.len), words, staged);
            return Staged::Codes(SharedCodes {
                words,
                values,
                min: codes.min,
                len: codes.len,
            });
        }
        BitFilter::of(plan, d, bits).staged::<NT>(words)
    }
}

/// A first test where [`stage_first`] left it.
#[derive(Clone, Copy)]
pub enum Staged {
    /// The code map, in shared memory.
    Codes(SharedCodes),
    /// The bitmap, copied to shared memory.
    Shared(SharedBits),
    /// The bitmap, too large for it: probed in global memory.
    Global(BitFilter),
}

impl Staged {
    /// Each flagged item's code: not 0 where its key qualifies (the key's code from the code
    /// map, else 1), 0 where it does not or the item is not flagged.
    ///
    /// # Safety
    /// As for [`crate::block::block_probe`].
    #[inline(always)]
    pub unsafe fn codes<const NT: usize, const IPT: usize>(
        self,
        keys: &[i32; IPT],
        flags: &[bool; IPT],
    ) -> [u32; IPT] {
        match self {
            Staged::Codes(c) => c.codes(keys, flags),
            Staged::Shared(f) => f.codes(keys, flags),
            // SAFETY: forwarded.
            Staged::Global(f) => unsafe {
                let mut hit = *flags;
                crate::block::block_probe::<i32, BitFilter, NT, IPT>(keys, &mut hit, f);
                hit.map(u32::from)
            },
        }
    }

    /// The code map, if it is the one staged.
    #[inline(always)]
    pub fn code_map(self) -> Option<SharedCodes> {
        match self {
            Staged::Codes(c) => Some(c),
            _ => None,
        }
    }
}

/// A dimension's code map: four bits per key slot (see [`DimPlan::codes`](crate::ssb::plan::DimPlan::codes)).
#[derive(Clone, Copy)]
pub struct CodeMap {
    /// The map's words.
    pub words: *mut u32,
    /// Smallest key (bits).
    pub min: u32,
    /// Number of key slots.
    pub len: u32,
}

impl CodeMap {
    /// Words of a code map over `len` keys.
    #[inline(always)]
    pub fn words_for(len: u32) -> usize {
        code_words(len as usize)
    }

    /// Word and bit position of key slot `s`'s code.
    #[inline(always)]
    fn place(s: u32) -> (usize, u32) {
        const PER_WORD: u32 = 32 / CODE_BITS;
        ((s / PER_WORD) as usize, s % PER_WORD * CODE_BITS)
    }

    /// The code map of dimension `d` in `bits`, if the plan gives it one.
    ///
    /// # Safety
    /// `plan` is a plan; `bits` is the buffer it describes.
    #[inline(always)]
    pub unsafe fn of(plan: *const Plan, d: usize, bits: *mut u32) -> Option<CodeMap> {
        // SAFETY: by contract.
        unsafe {
            let dim = &raw const (*plan).dims[d];
            ((*dim).codes != NO_CODES).then(|| CodeMap {
                words: bits.add((*dim).codes as usize),
                min: (*dim).key_min,
                len: (*dim).len,
            })
        }
    }

    /// Records the code of `value` for the qualifying `key` (a key outside the table is the
    /// [`DenseMap`]'s to report). False when `value` has no code: the plan's code values are
    /// all taken by others, or it is too large to store.
    ///
    /// # Safety
    /// `plan` is the plan whose code values these are; the map's words are zeroed before the
    /// build.
    #[inline(always)]
    pub unsafe fn insert(self, plan: *mut Plan, key: u32, value: u32) -> bool {
        let Some(s) = perfect_slot(key, self.min, self.len) else {
            return true;
        };
        let (w, shift) = Self::place(s);
        // SAFETY: forwarded; s < len, so word w lies within the map.
        unsafe {
            match intern(plan, value) {
                Some(c) => {
                    atomic_or_u32(self.words.add(w), (c + 1) << shift);
                    true
                }
                None => false,
            }
        }
    }
}

/// The code slot of `value` among the plan's code values, taking a free one if it has none.
/// A slot once taken keeps its value (a compare-and-swap from 0), so every thread that
/// interns a value gets the same slot, in this run and later ones.
///
/// # Safety
/// `plan` is a plan.
#[inline(always)]
unsafe fn intern(plan: *mut Plan, value: u32) -> Option<u32> {
    if value > MAX_PAYLOAD {
        return None;
    }
    let stored = value + 1;
    for c in 0..CODE_SLOTS {
        // SAFETY: slot c of the plan's code values.
        unsafe {
            let slot = (&raw mut (*plan).code_values).cast::<u32>().add(c);
            let mut seen = load_relaxed_u32(slot);
            if seen == 0 {
                seen = u32::atomic_cas(slot, 0, stored);
                if seen == 0 {
                    return Some(c as u32);
                }
            }
            if seen == stored {
                return Some(c as u32);
            }
        }
    }
    None
}

/// A [`CodeMap`] in shared memory, with its code values.
#[derive(Clone, Copy)]
pub struct SharedCodes {
    words: Shared<u32>,
    /// Entry `c`: the group value of code `c` (entry 0 unused).
    values: Shared<u32>,
    min: u32,
    len: u32,
}

impl SharedCodes {
    /// Each flagged item's code (0 where its key does not qualify or it is not flagged).
    ///
    /// Without a branch: a key outside the map reads slot `len`, which staging zeroed, and
    /// the load is unconditional (a branch around it, with its bounds test, multiplies the
    /// instructions of a tile's probe, and flight 3 is bound by instruction issue).
    #[inline(always)]
    pub fn codes<const IPT: usize>(self, keys: &[i32; IPT], flags: &[bool; IPT]) -> [u32; IPT] {
        // A loop, not `core::array::from_fn`: with several copies of a probe's tile body LLVM
        // stops inlining that (`#[inline]` only) and the kernel calls it.
        let mut out = [0u32; IPT];
        for k in 0..IPT {
            let s = perfect_clamped(keys[k] as u32, self.min, self.len);
            let (w, shift) = CodeMap::place(s);
            // SAFETY: s <= len, and staging staged the words of slots 0..=len.
            let code = unsafe { self.words.read(w) } >> shift & CODE_SLOTS as u32;
            out[k] = if flags[k] { code } else { 0 };
        }
        out
    }

    /// The group values of codes `codes` (0 for code 0).
    #[inline(always)]
    pub fn values<const S: usize>(self, codes: &[u32; S]) -> [u32; S] {
        // SAFETY: codes are CODE_BITS wide, entries 0..=CODE_SLOTS were staged.
        core::array::from_fn(|s| unsafe { self.values.read(codes[s] as usize & CODE_SLOTS) })
    }
}

/// A bit filter in shared memory, read with `ld.shared`: through the generic pointer of a
/// [`BitFilter`] every probe paid the generic path's address-space resolution.
#[derive(Clone, Copy)]
pub struct SharedBits {
    words: Shared<u32>,
    min: u32,
    len: u32,
}

impl SharedBits {
    /// 1 for each flagged item whose key is in the filter, else 0; without a branch, as
    /// [`SharedCodes::codes`].
    #[inline(always)]
    pub fn codes<const IPT: usize>(self, keys: &[i32; IPT], flags: &[bool; IPT]) -> [u32; IPT] {
        let mut out = [0u32; IPT];
        for k in 0..IPT {
            let s = perfect_clamped(keys[k] as u32, self.min, self.len);
            // SAFETY: s <= len, and staging staged the words of slots 0..=len.
            let hit = unsafe { self.words.read(s as usize / 32) } >> (s % 32) & 1;
            out[k] = if flags[k] { hit } else { 0 };
        }
        out
    }
}

impl DeviceTable for BitFilter {
    type Value = ();
    type Bits = u32;

    #[inline(always)]
    unsafe fn insert(self, key: u32, _: ()) -> BuildStatus {
        match perfect_slot(key, self.min, self.len) {
            Some(s) => {
                // SAFETY: s < len, word s / 32 within the bitmap.
                unsafe { atomic_or_u32(self.words.add(s as usize / 32), 1 << (s % 32)) };
                BuildStatus::default()
            }
            None => BuildStatus {
                overflow: true,
                ..BuildStatus::default()
            },
        }
    }

    #[inline(always)]
    unsafe fn first(self, key: u32, live: bool) -> Probe<()> {
        let (s, inside) = perfect_pos(key, self.min, self.len);
        // SAFETY: loaded only when s < len, word s / 32 of the bitmap; 0 (no key) otherwise.
        let w = unsafe { load_if(live && inside, self.words.wrapping_add(s as usize / 32)) };
        let hit = w >> (s % 32) & 1 != 0;
        Probe {
            pos: 0,
            key: if hit { key } else { EMPTY_KEY },
            value: (),
        }
    }

    #[inline(always)]
    unsafe fn next(self, _: &Probe<()>) -> Option<Probe<()>> {
        None
    }

    #[inline(always)]
    fn walk_len(self) -> u32 {
        1
    }
}
