//! Block-wide hash-table build and lookup (Crystal's BlockBuild / BlockLookup), over the four
//! table forms of [`crate::hash`]: linear probing or perfect hashing, key + payload or key only.
//! Linear-probing tables store `u32` or `u64` key words ([`KeyBits`]: 32-bit keys `u32`, `i32`,
//! or 64-bit keys `u64`); perfect-hash tables `u32` ones.
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
use crate::hash::{
    BuildState, EMPTY_KEY, HashKey, KeyBits, Slot, next_slot, perfect_pos, perfect_slot,
};

/// What a build saw, to be reported to the host (see [`BuildState`]).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStatus {
    /// An inserted key was already in the table.
    pub duplicate: bool,
    /// A key found no slot (table full, or outside a perfect table's range).
    pub overflow: bool,
    /// A key whose bits are the empty slot's ([`KeyBits::EMPTY`]) was offered (and skipped).
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

    /// Raises the flags of the build's [`BuildState`] for what this thread saw (no traffic in
    /// the common case of nothing to report).
    ///
    /// # Safety
    /// `state` points to the build's state in global memory.
    #[inline(always)]
    pub unsafe fn record(self, state: *mut BuildState) {
        // SAFETY: by contract; atomics because many threads may report.
        unsafe {
            if self.duplicate {
                u32::atomic_max(&raw mut (*state).duplicate, 1);
            }
            if self.overflow {
                u32::atomic_max(&raw mut (*state).overflow, 1);
            }
            if self.sentinel {
                u32::atomic_max(&raw mut (*state).sentinel, 1);
            }
        }
    }
}

/// One slot visited by a probe: its position, the stored key bits and payload.
#[derive(Clone, Copy, Default)]
pub struct Probe<V, B = u32> {
    /// Slot index.
    pub pos: u32,
    /// Stored key bits ([`KeyBits::EMPTY`] for a free slot or a key that cannot be present).
    pub key: B,
    /// Stored payload (meaningless unless `key` matched).
    pub value: V,
}

/// A device hash table view the block functions build and probe.
pub trait DeviceTable: Copy {
    /// Payload type (`()` for key-only tables).
    type Value: Copy + Default;
    /// Stored key words (`u32` for 32-bit keys, `u64` for 64-bit ones).
    type Bits: KeyBits;

    /// Inserts `key` (bits, not [`KeyBits::EMPTY`]) with `value`.
    ///
    /// # Safety
    /// The view describes a live, cleared-or-built table in global memory.
    unsafe fn insert(self, key: Self::Bits, value: Self::Value) -> BuildStatus;

    /// The first slot a probe for `key` visits (one load; none when it cannot be present, or
    /// when not `live`: the probe then misses). Branch-free ([`crate::arch::load_if`]), so the
    /// first probes of a thread's items issue their loads together.
    ///
    /// # Safety
    /// As for [`DeviceTable::insert`], with no concurrent build.
    unsafe fn first(self, key: Self::Bits, live: bool) -> Probe<Self::Value, Self::Bits>;

    /// The slot after `p` on the walk, or `None` where walks end after one slot.
    ///
    /// # Safety
    /// As for [`DeviceTable::first`].
    unsafe fn next(
        self,
        p: &Probe<Self::Value, Self::Bits>,
    ) -> Option<Probe<Self::Value, Self::Bits>>;

    /// Most slots a walk can visit (a bound that guarantees termination even on a full table).
    fn walk_len(self) -> u32;
}

/// Linear-probing table of [`Slot<V, B>`] (key + payload), with key words `B`.
#[derive(Clone, Copy)]
pub struct HashMap<V, B = u32> {
    /// The slots, `capacity` of them.
    pub slots: *mut Slot<V, B>,
    /// Number of slots (> 0).
    pub capacity: u32,
}

/// Linear-probing set of keys, with key words `B`.
#[derive(Clone, Copy)]
pub struct HashSet<B = u32> {
    /// The slots (key bits), `capacity` of them.
    pub keys: *mut B,
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
unsafe fn claim<B: KeyBits + Atomic>(p: *mut B, key: B) -> B {
    // SAFETY: the caller passes a slot of a live table.
    unsafe { B::atomic_cas(p, B::EMPTY, key) }
}

const MISS: u32 = EMPTY_KEY;

impl<V: Copy + Default, B: KeyBits + Atomic> DeviceTable for HashMap<V, B> {
    type Value = V;
    type Bits = B;

    /// Every row takes its own slot (all build rows of a duplicate key are kept); a duplicate
    /// is reported when the walk passes a slot holding the same key, which the later of two
    /// equal inserts always does.
    #[inline(always)]
    unsafe fn insert(self, key: B, value: V) -> BuildStatus {
        let mut st = BuildStatus::default();
        let mut s = key.home_slot(self.capacity);
        for _ in 0..self.capacity {
            // SAFETY: s < capacity.
            let slot = unsafe { self.slots.add(s as usize) };
            // SAFETY: as above; the payload word belongs to whoever claimed the key word.
            let old = unsafe { claim(&raw mut (*slot).key, key) };
            if old == B::EMPTY {
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
    unsafe fn first(self, key: B, live: bool) -> Probe<V, B> {
        let pos = key.home_slot(self.capacity);
        // SAFETY: pos < capacity; a slot (8 or 16 bytes) is valid as zero bits.
        let slot = unsafe { load_if(live, self.slots.add(pos as usize)) };
        Probe {
            pos,
            key: if live { slot.key } else { B::EMPTY },
            value: slot.value,
        }
    }

    #[inline(always)]
    unsafe fn next(self, p: &Probe<V, B>) -> Option<Probe<V, B>> {
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

impl<B: KeyBits + Atomic> DeviceTable for HashSet<B> {
    type Value = ();
    type Bits = B;

    /// Set semantics: inserting a key that is present changes nothing.
    #[inline(always)]
    unsafe fn insert(self, key: B, _: ()) -> BuildStatus {
        let mut s = key.home_slot(self.capacity);
        for _ in 0..self.capacity {
            // SAFETY: s < capacity.
            let old = unsafe { claim(self.keys.add(s as usize), key) };
            if old == B::EMPTY || old == key {
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
    unsafe fn first(self, key: B, live: bool) -> Probe<(), B> {
        let pos = key.home_slot(self.capacity);
        // SAFETY: pos < capacity.
        let stored = unsafe { load_if(live, self.keys.add(pos as usize)) };
        Probe {
            pos,
            key: if live { stored } else { B::EMPTY },
            value: (),
        }
    }

    #[inline(always)]
    unsafe fn next(self, p: &Probe<(), B>) -> Option<Probe<(), B>> {
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
    type Bits = u32;

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
    type Bits = u32;

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

/// BlockBuild: inserts every flagged `(keys[k], values[k])` into `table`. Keys whose bits are
/// [`KeyBits::EMPTY`] are skipped and reported as `sentinel`. Returns
/// what this thread saw; record it with [`BuildStatus::record`].
///
/// # Safety
/// `table` describes a live table in global memory, cleared to [`EMPTY_KEY`] or built before.
#[inline(always)]
pub unsafe fn block_build<
    K: HashKey,
    T: DeviceTable<Bits = K::Bits>,
    const NT: usize,
    const IPT: usize,
>(
    keys: &[K; IPT],
    values: &[T::Value; IPT],
    flags: &[bool; IPT],
    table: T,
) -> BuildStatus {
    let mut st = BuildStatus::default();
    for k in 0..IPT {
        if flags[k] {
            let key = keys[k].bits();
            st = st.merge(if key == K::Bits::EMPTY {
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
    T: DeviceTable<Value = (), Bits = K::Bits>,
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
unsafe fn first_probes<K: HashKey, T: DeviceTable<Bits = K::Bits>, const IPT: usize>(
    keys: &[K; IPT],
    flags: &[bool; IPT],
    table: T,
) -> [Probe<T::Value, K::Bits>; IPT] {
    let mut p = [Probe::<T::Value, K::Bits>::default(); IPT];
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
pub unsafe fn block_lookup<
    K: HashKey,
    T: DeviceTable<Bits = K::Bits>,
    const NT: usize,
    const IPT: usize,
>(
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
    T: DeviceTable<Value = (), Bits = K::Bits>,
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
/// build reported no duplicate, see [`BuildState::duplicate`]) walks stop at the first
/// match, which is then the only one. Flags are left as they are.
///
/// # Safety
/// As for [`block_lookup`].
#[inline(always)]
pub unsafe fn block_lookup_each<
    K: HashKey,
    T: DeviceTable<Bits = K::Bits>,
    const NT: usize,
    const IPT: usize,
>(
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
unsafe fn walk<K: HashKey, T: DeviceTable<Bits = K::Bits>, const IPT: usize>(
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
                // Empty first: a probe for the empty word itself must miss.
                let hit = stored != K::Bits::EMPTY && stored == keys[k].bits();
                if hit {
                    f(k, p[k].value);
                }
                going[k] = false;
                if stored != K::Bits::EMPTY && !(hit && distinct) {
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
