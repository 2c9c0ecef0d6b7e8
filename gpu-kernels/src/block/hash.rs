//! Block-wide hash-table build and lookup (Crystal's BlockBuild / BlockLookup), over the four
//! table forms of [`crate::hash`]: linear probing or perfect hashing, key + payload or key only.
//!
//! A table is a small `Copy` view ([`HashMap`], [`HashSet`], [`PerfectMap`], [`PerfectSet`])
//! made by the kernel from its arguments; the block functions are generic over
//! [`DeviceTable`]. Items follow the tile layout of [`crate::layout`]: `keys[k]`, `values[k]` and
//! `flags[k]` describe the same row, so columns loaded with the same item width line up. Only
//! flagged items are built or probed; invalid items of a partial tile must be unflagged (as
//! [`super::block_pred`] leaves them).
//!
//! Probes issue the first slot load of all `IPT` items before resolving any of them, so a thread
//! has `IPT` independent random accesses in flight; a perfect-hash probe is exactly that one
//! load. Build and probe of the same table must be in different kernels (or separated by a grid
//! barrier): a probe reads slots with plain loads.
use crate::arch::{Atomic, load_if};
use crate::hash::{EMPTY_KEY, HashKey, Slot, home_slot, next_slot, perfect_pos, perfect_slot};

/// What a build saw, to be reported to the host (see [`crate::hash::state`]).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStatus {
    /// An inserted key was already in the table.
    pub duplicate: bool,
    /// A key found no slot (table full, or outside a perfect table's range).
    pub overflow: bool,
    /// A key equal to [`EMPTY_KEY`] was offered (and skipped).
    pub sentinel: bool,
}

impl BuildStatus {
    #[inline(always)]
    fn merge(self, o: BuildStatus) -> BuildStatus {
        BuildStatus {
            duplicate: self.duplicate | o.duplicate,
            overflow: self.overflow | o.overflow,
            sentinel: self.sentinel | o.sentinel,
        }
    }

    /// Sets the state words of [`crate::hash::state`] for what this thread saw (no traffic in
    /// the common case of nothing to report).
    ///
    /// # Safety
    /// `state` points to [`crate::hash::state::WORDS`] global words.
    #[inline(always)]
    pub unsafe fn record(self, state: *mut u32) {
        use crate::hash::state::{DUPLICATE, OVERFLOW, SENTINEL};
        // SAFETY: in bounds by contract; atomics because many threads may report.
        unsafe {
            if self.duplicate {
                u32::atomic_max(state.add(DUPLICATE), 1);
            }
            if self.overflow {
                u32::atomic_max(state.add(OVERFLOW), 1);
            }
            if self.sentinel {
                u32::atomic_max(state.add(SENTINEL), 1);
            }
        }
    }
}

/// One slot visited by a probe: its position, the stored key bits and payload.
#[derive(Clone, Copy, Default)]
pub struct Probe<V> {
    /// Slot index.
    pub pos: u32,
    /// Stored key bits ([`EMPTY_KEY`] for a free slot or a key that cannot be present).
    pub key: u32,
    /// Stored payload (meaningless unless `key` matched).
    pub value: V,
}

/// A device hash table view the block functions build and probe.
pub trait DeviceTable: Copy {
    /// Payload type (`()` for key-only tables).
    type Value: Copy + Default;

    /// Inserts `key` (bits, not [`EMPTY_KEY`]) with `value`.
    ///
    /// # Safety
    /// The view describes a live, cleared-or-built table in global memory.
    unsafe fn insert(self, key: u32, value: Self::Value) -> BuildStatus;

    /// The first slot a probe for `key` visits (one load; none when it cannot be present, or
    /// when not `live`: the probe then misses). Branch-free ([`crate::arch::load_if`]), so the
    /// first probes of a thread's items issue their loads together.
    ///
    /// # Safety
    /// As for [`DeviceTable::insert`], with no concurrent build.
    unsafe fn first(self, key: u32, live: bool) -> Probe<Self::Value>;

    /// The slot after `p` on the walk, or `None` where walks end after one slot.
    ///
    /// # Safety
    /// As for [`DeviceTable::first`].
    unsafe fn next(self, p: &Probe<Self::Value>) -> Option<Probe<Self::Value>>;

    /// Most slots a walk can visit (a bound that guarantees termination even on a full table).
    fn walk_len(self) -> u32;
}

/// Linear-probing table of [`Slot<V>`] (key + payload).
#[derive(Clone, Copy)]
pub struct HashMap<V> {
    /// The slots, `capacity` of them.
    pub slots: *mut Slot<V>,
    /// Number of slots (> 0).
    pub capacity: u32,
}

/// Linear-probing set of keys.
#[derive(Clone, Copy)]
pub struct HashSet {
    /// The slots (key bits), `capacity` of them.
    pub keys: *mut u32,
    /// Number of slots (> 0).
    pub capacity: u32,
}

/// Perfect-hash table of [`Slot<V>`] over keys `min .. min + len`: slot `key - min`.
#[derive(Clone, Copy)]
pub struct PerfectMap<V> {
    /// The slots, `len` of them.
    pub slots: *mut Slot<V>,
    /// Smallest key (bits).
    pub min: u32,
    /// Number of slots.
    pub len: u32,
}

/// Perfect-hash set of keys over `min .. min + len`.
#[derive(Clone, Copy)]
pub struct PerfectSet {
    /// The slots (key bits), `len` of them.
    pub keys: *mut u32,
    /// Smallest key (bits).
    pub min: u32,
    /// Number of slots.
    pub len: u32,
}

/// Claims a free key word for `key`: the previous contents.
#[inline(always)]
unsafe fn claim(p: *mut u32, key: u32) -> u32 {
    // SAFETY: the caller passes a slot of a live table.
    unsafe { u32::atomic_cas(p, EMPTY_KEY, key) }
}

const MISS: u32 = EMPTY_KEY;

impl<V: Copy + Default> DeviceTable for HashMap<V> {
    type Value = V;

    /// Every row takes its own slot (all build rows of a duplicate key are kept); a duplicate
    /// is reported when the walk passes a slot holding the same key, which the later of two
    /// equal inserts always does.
    #[inline(always)]
    unsafe fn insert(self, key: u32, value: V) -> BuildStatus {
        let mut st = BuildStatus::default();
        let mut s = home_slot(key, self.capacity);
        for _ in 0..self.capacity {
            // SAFETY: s < capacity.
            let slot = unsafe { self.slots.add(s as usize) };
            // SAFETY: as above; the payload word belongs to whoever claimed the key word.
            let old = unsafe { claim(&raw mut (*slot).key, key) };
            if old == EMPTY_KEY {
                // SAFETY: this thread claimed the slot; probes run in a later kernel.
                unsafe { (&raw mut (*slot).value).write(value) };
                return st;
            }
            st.duplicate |= old == key;
            s = next_slot(s, self.capacity);
        }
        st.overflow = true;
        st
    }

    #[inline(always)]
    unsafe fn first(self, key: u32, live: bool) -> Probe<V> {
        let pos = home_slot(key, self.capacity);
        // SAFETY: pos < capacity; a slot is 8 bytes and valid as zero bits.
        let slot = unsafe { load_if(live, self.slots.add(pos as usize)) };
        Probe {
            pos,
            key: if live { slot.key } else { MISS },
            value: slot.value,
        }
    }

    #[inline(always)]
    unsafe fn next(self, p: &Probe<V>) -> Option<Probe<V>> {
        let pos = next_slot(p.pos, self.capacity);
        // SAFETY: pos < capacity.
        let slot = unsafe { self.slots.add(pos as usize).read() };
        Some(Probe {
            pos,
            key: slot.key,
            value: slot.value,
        })
    }

    #[inline(always)]
    fn walk_len(self) -> u32 {
        self.capacity
    }
}

impl DeviceTable for HashSet {
    type Value = ();

    /// Set semantics: inserting a key that is present changes nothing.
    #[inline(always)]
    unsafe fn insert(self, key: u32, _: ()) -> BuildStatus {
        let mut s = home_slot(key, self.capacity);
        for _ in 0..self.capacity {
            // SAFETY: s < capacity.
            let old = unsafe { claim(self.keys.add(s as usize), key) };
            if old == EMPTY_KEY || old == key {
                return BuildStatus {
                    duplicate: old == key,
                    ..BuildStatus::default()
                };
            }
            s = next_slot(s, self.capacity);
        }
        BuildStatus {
            overflow: true,
            ..BuildStatus::default()
        }
    }

    #[inline(always)]
    unsafe fn first(self, key: u32, live: bool) -> Probe<()> {
        let pos = home_slot(key, self.capacity);
        // SAFETY: pos < capacity.
        let stored = unsafe { load_if(live, self.keys.add(pos as usize)) };
        Probe {
            pos,
            key: if live { stored } else { MISS },
            value: (),
        }
    }

    #[inline(always)]
    unsafe fn next(self, p: &Probe<()>) -> Option<Probe<()>> {
        let pos = next_slot(p.pos, self.capacity);
        Some(Probe {
            pos,
            // SAFETY: pos < capacity.
            key: unsafe { self.keys.add(pos as usize).read() },
            value: (),
        })
    }

    #[inline(always)]
    fn walk_len(self) -> u32 {
        self.capacity
    }
}

impl<V: Copy + Default> DeviceTable for PerfectMap<V> {
    type Value = V;

    /// A second insert of a key keeps the first payload and reports a duplicate.
    #[inline(always)]
    unsafe fn insert(self, key: u32, value: V) -> BuildStatus {
        let Some(s) = perfect_slot(key, self.min, self.len) else {
            return BuildStatus {
                overflow: true,
                ..BuildStatus::default()
            };
        };
        // SAFETY: s < len.
        let slot = unsafe { self.slots.add(s as usize) };
        // SAFETY: as above; the payload word belongs to whoever claimed the key word.
        let old = unsafe { claim(&raw mut (*slot).key, key) };
        if old == EMPTY_KEY {
            // SAFETY: this thread claimed the slot; probes run in a later kernel.
            unsafe { (&raw mut (*slot).value).write(value) };
        }
        BuildStatus {
            duplicate: old != EMPTY_KEY,
            ..BuildStatus::default()
        }
    }

    #[inline(always)]
    unsafe fn first(self, key: u32, live: bool) -> Probe<V> {
        let (s, inside) = perfect_pos(key, self.min, self.len);
        // SAFETY: loaded only when s < len; a slot is 8 bytes and valid as zero bits.
        let slot = unsafe { load_if(live && inside, self.slots.wrapping_add(s as usize)) };
        Probe {
            pos: s,
            key: if live && inside { slot.key } else { MISS },
            value: slot.value,
        }
    }

    #[inline(always)]
    unsafe fn next(self, _: &Probe<V>) -> Option<Probe<V>> {
        None
    }

    #[inline(always)]
    fn walk_len(self) -> u32 {
        1
    }
}

impl DeviceTable for PerfectSet {
    type Value = ();

    #[inline(always)]
    unsafe fn insert(self, key: u32, _: ()) -> BuildStatus {
        match perfect_slot(key, self.min, self.len) {
            Some(s) => {
                // SAFETY: s < len.
                let old = unsafe { claim(self.keys.add(s as usize), key) };
                BuildStatus {
                    duplicate: old != EMPTY_KEY,
                    ..BuildStatus::default()
                }
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
        // SAFETY: loaded only when s < len.
        let stored = unsafe { load_if(live && inside, self.keys.wrapping_add(s as usize)) };
        Probe {
            pos: s,
            key: if live && inside { stored } else { MISS },
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

/// BlockBuild: inserts every flagged `(keys[k], values[k])` into `table`. Keys equal to
/// [`EMPTY_KEY`] are skipped and reported as `sentinel`. Returns
/// what this thread saw; record it with [`BuildStatus::record`].
///
/// # Safety
/// `table` describes a live table in global memory, cleared to [`EMPTY_KEY`] or built before.
#[inline(always)]
pub unsafe fn block_build<K: HashKey, T: DeviceTable, const NT: usize, const IPT: usize>(
    keys: &[K; IPT],
    values: &[T::Value; IPT],
    flags: &[bool; IPT],
    table: T,
) -> BuildStatus {
    let mut st = BuildStatus::default();
    for k in 0..IPT {
        if flags[k] {
            let key = keys[k].bits();
            st = st.merge(if key == EMPTY_KEY {
                BuildStatus {
                    sentinel: true,
                    ..BuildStatus::default()
                }
            } else {
                // SAFETY: forwarded.
                unsafe { table.insert(key, values[k]) }
            });
        }
    }
    st
}

/// BlockBuild for key-only tables ([`HashSet`], [`PerfectSet`]).
///
/// # Safety
/// As for [`block_build`].
#[inline(always)]
pub unsafe fn block_build_keys<
    K: HashKey,
    T: DeviceTable<Value = ()>,
    const NT: usize,
    const IPT: usize,
>(
    keys: &[K; IPT],
    flags: &[bool; IPT],
    table: T,
) -> BuildStatus {
    // SAFETY: forwarded.
    unsafe { block_build::<K, T, NT, IPT>(keys, &[(); IPT], flags, table) }
}

/// First slot of every flagged item, all loads issued before any is used.
#[inline(always)]
unsafe fn first_probes<K: HashKey, T: DeviceTable, const IPT: usize>(
    keys: &[K; IPT],
    flags: &[bool; IPT],
    table: T,
) -> [Probe<T::Value>; IPT] {
    let mut p = [Probe::<T::Value>::default(); IPT];
    for k in 0..IPT {
        // SAFETY: forwarded.
        p[k] = unsafe { table.first(keys[k].bits(), flags[k]) };
    }
    p
}

/// BlockLookup: for every flagged item, the payload of the first slot holding its key goes to
/// `values[k]`; flags of misses are cleared (unflagged items keep their value). This is the
/// probe for tables with distinct keys (dimension tables on their primary key); a perfect-hash
/// probe is one load.
///
/// # Safety
/// `table` describes a built table in global memory that no thread modifies during the probe.
#[inline(always)]
pub unsafe fn block_lookup<K: HashKey, T: DeviceTable, const NT: usize, const IPT: usize>(
    keys: &[K; IPT],
    flags: &mut [bool; IPT],
    table: T,
    values: &mut [T::Value; IPT],
) {
    let mut found = [false; IPT];
    // SAFETY: forwarded.
    unsafe {
        walk::<K, T, IPT>(keys, flags, table, true, |k, v| {
            values[k] = v;
            found[k] = true;
        })
    };
    for k in 0..IPT {
        flags[k] &= found[k];
    }
}

/// BlockLookup for key-only tables (a semi-join filter): clears flags of keys not in `table`.
///
/// # Safety
/// As for [`block_lookup`].
#[inline(always)]
pub unsafe fn block_probe<
    K: HashKey,
    T: DeviceTable<Value = ()>,
    const NT: usize,
    const IPT: usize,
>(
    keys: &[K; IPT],
    flags: &mut [bool; IPT],
    table: T,
) {
    let mut unit = [(); IPT];
    // SAFETY: forwarded.
    unsafe { block_lookup::<K, T, NT, IPT>(keys, flags, table, &mut unit) }
}

/// Probe with "all matches" semantics: calls `f(k, payload)` once per slot holding the key of
/// flagged item `k`, so a probe row meets every build row with its key. With `distinct` (the
/// build reported no duplicate, see [`crate::hash::state::DUPLICATE`]) walks stop at the first
/// match, which is then the only one. Flags are left as they are.
///
/// # Safety
/// As for [`block_lookup`].
#[inline(always)]
pub unsafe fn block_lookup_each<K: HashKey, T: DeviceTable, const NT: usize, const IPT: usize>(
    keys: &[K; IPT],
    flags: &[bool; IPT],
    table: T,
    distinct: bool,
    f: impl FnMut(usize, T::Value),
) {
    // SAFETY: forwarded.
    unsafe { walk::<K, T, IPT>(keys, flags, table, distinct, f) }
}

/// The probe walk of all flagged items in lock step: round `r` examines slot `r` of every walk
/// still going and loads the next slots of all of them before examining any, so a thread keeps
/// its items' random accesses in flight together, and the per-item loop has a constant trip
/// count (it unrolls and the tile stays in registers).
#[inline(always)]
unsafe fn walk<K: HashKey, T: DeviceTable, const IPT: usize>(
    keys: &[K; IPT],
    flags: &[bool; IPT],
    table: T,
    distinct: bool,
    mut f: impl FnMut(usize, T::Value),
) {
    // SAFETY: forwarded.
    let mut p = unsafe { first_probes::<K, T, IPT>(keys, flags, table) };
    let mut going = *flags;
    for _ in 0..table.walk_len() {
        let mut any = false;
        for k in 0..IPT {
            // One structured body without early exits, so the loop unrolls.
            if going[k] {
                let stored = p[k].key;
                // Empty first: a probe for EMPTY_KEY itself must miss.
                let hit = stored != EMPTY_KEY && stored == keys[k].bits();
                if hit {
                    f(k, p[k].value);
                }
                going[k] = false;
                if stored != EMPTY_KEY && !(hit && distinct) {
                    // SAFETY: forwarded.
                    if let Some(q) = unsafe { table.next(&p[k]) } {
                        p[k] = q;
                        going[k] = true;
                        any = true;
                    }
                }
            }
        }
        if !any {
            break;
        }
    }
}
