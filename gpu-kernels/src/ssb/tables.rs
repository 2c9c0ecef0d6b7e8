//! The dimension tables of the SSB kernels, as [`DeviceTable`]s the block-wide build and
//! lookup functions work on.
//!
//! * [`DenseMap`]: perfect hashing on the dimension key (slot `key - min`), one `u16` per slot
//!   holding `payload + 1`, 0 for keys that are absent or fail the query's predicates. Against
//!   the `(key, payload)` slots of [`crate::block::PerfectMap`] this quarters the table (part at
//!   SF 20: 2 MB instead of 8 MB), so more of it stays in L1 and L2; a probe is one load.
//! * [`BitFilter`]: one bit per key slot, set for qualifying keys: the first probe of the fact
//!   table, staged in shared memory (supplier at SF 20: 5 KB).
use crate::arch::{Shared, atomic_or_u32, load_if, sync_threads, thread_idx};
use crate::block::{BuildStatus, DeviceTable, Probe};
use crate::hash::{EMPTY_KEY, perfect_pos, perfect_slot};
use crate::ssb::plan::{self, MAX_PAYLOAD, dim};

/// Reads plan word `i`.
///
/// # Safety
/// `plan` holds [`plan::WORDS`] words.
#[inline(always)]
pub(crate) unsafe fn word(plan: *const u32, i: usize) -> u32 {
    // SAFETY: by contract.
    unsafe { plan.add(i).read() }
}

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
    pub unsafe fn of(plan: *const u32, d: usize, payload: *mut u16) -> DenseMap {
        let base = d * plan::DIM_WORDS;
        // SAFETY: by contract.
        unsafe {
            DenseMap {
                slots: payload.add(word(plan, base + dim::PAYLOAD) as usize),
                min: word(plan, base + dim::KEY_MIN),
                len: word(plan, base + dim::LEN),
            }
        }
    }
}

impl DeviceTable for DenseMap {
    type Value = u32;

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
    pub unsafe fn of(plan: *const u32, d: usize, bits: *mut u32) -> BitFilter {
        let base = d * plan::DIM_WORDS;
        // SAFETY: by contract.
        unsafe {
            BitFilter {
                words: bits.add(word(plan, base + dim::BITS) as usize),
                min: word(plan, base + dim::KEY_MIN),
                len: word(plan, base + dim::LEN),
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
        let n = Self::words_for(self.len);
        if n > shared.len() {
            return Staged::Global(self);
        }
        let mut i = thread_idx();
        while i < n {
            // SAFETY: i < n words of the bitmap and of the shared buffer.
            unsafe { shared.write(i, self.words.add(i).read()) };
            i += NT;
        }
        sync_threads();
        Staged::Shared(SharedBits {
            words: shared,
            min: self.min,
            len: self.len,
        })
    }
}

/// A [`BitFilter`] where [`BitFilter::staged`] left it.
#[derive(Clone, Copy)]
pub enum Staged {
    /// Copied to shared memory.
    Shared(SharedBits),
    /// Too large for it: probed in global memory.
    Global(BitFilter),
}

impl Staged {
    /// Clears the flags of the items whose key is not in the filter.
    ///
    /// # Safety
    /// As for [`crate::block::block_probe`].
    #[inline(always)]
    pub unsafe fn probe<const NT: usize, const IPT: usize>(
        self,
        keys: &[i32; IPT],
        flags: &mut [bool; IPT],
    ) {
        match self {
            Staged::Shared(f) => f.probe(keys, flags),
            // SAFETY: forwarded.
            Staged::Global(f) => unsafe {
                crate::block::block_probe::<i32, BitFilter, NT, IPT>(keys, flags, f)
            },
        }
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
    /// Clears the flags of the items whose key is not in the filter.
    #[inline(always)]
    pub fn probe<const IPT: usize>(self, keys: &[i32; IPT], flags: &mut [bool; IPT]) {
        for k in 0..IPT {
            let (s, inside) = perfect_pos(keys[k] as u32, self.min, self.len);
            let hit = flags[k] && inside && {
                // SAFETY: s < len, so word s / 32 was staged.
                let w = unsafe { self.words.read(s as usize / 32) };
                w >> (s % 32) & 1 != 0
            };
            flags[k] = hit;
        }
    }
}

impl DeviceTable for BitFilter {
    type Value = ();

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

/// A column predicate `(kind, a, b)` of the plan (see [`plan::pred`]).
#[derive(Clone, Copy)]
pub struct ColPred {
    /// Kind.
    pub kind: u32,
    /// First constant.
    pub a: i32,
    /// Second constant.
    pub b: i32,
}

impl ColPred {
    /// The predicate at plan word `at`.
    ///
    /// # Safety
    /// `plan` is a plan and `at + 3 <= plan::WORDS`.
    #[inline(always)]
    pub unsafe fn at(plan: *const u32, at: usize) -> ColPred {
        // SAFETY: by contract.
        unsafe {
            ColPred {
                kind: word(plan, at),
                a: word(plan, at + 1) as i32,
                b: word(plan, at + 2) as i32,
            }
        }
    }

    /// Whether it restricts anything.
    #[inline(always)]
    pub fn is_any(self) -> bool {
        self.kind == plan::pred::ANY
    }

    /// Whether `v` satisfies it.
    #[inline(always)]
    pub fn matches(self, v: i32) -> bool {
        plan::pred::matches(self.kind, self.a, self.b, v)
    }
}
