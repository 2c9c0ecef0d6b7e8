//! Hash join: device hash tables on `u32`, `i32` or `u64` keys ([`JoinKey`]) with `u32`
//! payloads, the join that returns row pairs, the fused probe-and-aggregate of the thesis' Q4,
//! and the semi-join.
//!
//! Tables are flat arrays of slots (see [`tessera_kernels::hash`]): linear probing at a chosen
//! fill, or perfect hashing (`slot = key - min`) for dense 32-bit keys. One key per type marks
//! free slots and is rejected as a key ([`JoinKey::RESERVED`]): `u32::MAX`, `-1` for `i32`
//! (its bits are `u32::MAX`: `i32` keys share the 32-bit tables) and `u64::MAX`. `u64` keys take
//! 64-bit key slots and linear probing only: asking for a perfect table of `u64` keys fails.
//!
//! **Duplicate build keys** have "all matches" semantics: every build row is kept, and a probe
//! row meets every build row with its key ([`join`] emits one pair, [`join_sum`] adds one term
//! per match), as SQL's inner join does. Builds detect duplicates; probes of a table without them
//! stop at the first match.
use cudarc::driver::{CudaSlice, CudaView, LaunchConfig};
use tessera_kernels::hash::{self, BuildState, DEFAULT_FILL, EMPTY_KEY, HashKey, MAX_FILL};
use tessera_kernels::ops::join as k;
use tessera_kernels::ops::join::{
    BuildArgs, BuildKeysArgs, ProbeCountArgs, ProbeSharedArgs, ProbeSumArgs, ProbeWriteArgs,
    SemiJoinArgs,
};
use tessera_kernels::ops::select::state_words;
use tessera_kernels::spec::KernelSpec;

use super::{Predicate, check_same_len, scan::exclusive_scan_into};
use crate::error::{Error, Result};
use crate::runtime::{
    DeviceColumn, DeviceItem, Gpu, MAX_COLUMN_LEN, PodBuffer, Scratch, grid_per_sm, tile_grid,
};

/// Key types of the hash join: `u32`, `i32` and `u64` (payloads are `u32`).
///
/// Sealed, like [`DeviceItem`]: the join kernels exist for these types only. Keys are stored as
/// their bits: `u32` and `i32` keys in 32-bit key slots (so `i32` shares the `u32` tables and
/// probes), `u64` keys in 64-bit ones. Each type reserves the key whose bits mark an empty slot,
/// [`JoinKey::RESERVED`]; inserting it fails.
pub trait JoinKey:
    DeviceItem + HashKey<Bits: DeviceItem> + std::fmt::Display + sealed::JoinKernels
{
    /// The type's name in messages.
    const NAME: &'static str;
    /// The key that marks empty slots and cannot be inserted: `u32::MAX`, `-1` (whose bits are
    /// `u32::MAX`) for `i32`, `u64::MAX`.
    const RESERVED: Self;
    /// The least and greatest keys (a predicate between them takes every row).
    const MIN: Self;
    /// See [`JoinKey::MIN`].
    const MAX: Self;
}

mod sealed {
    use tessera_kernels::hash::HashKey;
    use tessera_kernels::ops::join::{
        BuildArgs, BuildKeysArgs, ProbeCountArgs, ProbeSharedArgs, ProbeSumArgs, ProbeWriteArgs,
        SemiJoinArgs,
    };
    use tessera_kernels::spec::KernelSpec;

    /// The probe kernels' key parameter: the key's stored bits (`i32` keys probe with the
    /// `u32` kernels, which compare bits).
    type W<K> = <K as HashKey>::Bits;

    /// The kernels of a key type, and what keeps [`JoinKey`](super::JoinKey) to this crate's
    /// types. One constant per kernel: kernels of different signatures are never grouped.
    pub trait JoinKernels: HashKey {
        /// `u32` words of a key + payload slot.
        const MAP_WORDS: usize;
        /// `u32` words of a key-only slot.
        const SET_WORDS: usize;
        const HASH_BUILD: KernelSpec<BuildArgs<Self>>;
        const HASH_BUILD_ROWS: KernelSpec<BuildArgs<Self>>;
        const HASH_SET_BUILD: KernelSpec<BuildKeysArgs<Self>>;
        const HASH_JOIN_SUM: KernelSpec<ProbeSumArgs<W<Self>>>;
        const HASH_JOIN_COUNT: KernelSpec<ProbeCountArgs<W<Self>>>;
        const HASH_JOIN_WRITE: KernelSpec<ProbeWriteArgs<W<Self>>>;
        const HASH_JOIN_SUM_SHARED: KernelSpec<ProbeSharedArgs<W<Self>>>;
        const HASH_SEMI_JOIN: KernelSpec<SemiJoinArgs<W<Self>>>;
        /// Perfect-hash kernels: none for 64-bit keys.
        const PERFECT_BUILD: Option<KernelSpec<BuildArgs<Self>>>;
        const PERFECT_BUILD_ROWS: Option<KernelSpec<BuildArgs<Self>>>;
        const PERFECT_SET_BUILD: Option<KernelSpec<BuildKeysArgs<Self>>>;
        const PERFECT_JOIN_SUM: Option<KernelSpec<ProbeSumArgs<W<Self>>>>;
        const PERFECT_JOIN_COUNT: Option<KernelSpec<ProbeCountArgs<W<Self>>>>;
        const PERFECT_JOIN_WRITE: Option<KernelSpec<ProbeWriteArgs<W<Self>>>>;
        const PERFECT_JOIN_SUM_SHARED: Option<KernelSpec<ProbeSharedArgs<W<Self>>>>;
        const PERFECT_SEMI_JOIN: Option<KernelSpec<SemiJoinArgs<W<Self>>>>;
        /// `(smallest key's bits, slots)` of a perfect table over `min ..= max`, or `None`
        /// when there is none (an empty range, too many slots, or 64-bit keys).
        fn perfect_span(min: Self, max: Self) -> Option<(u32, u32)>;
    }
}

impl JoinKey for u32 {
    const NAME: &'static str = "u32";
    const RESERVED: Self = EMPTY_KEY;
    const MIN: Self = u32::MIN;
    const MAX: Self = u32::MAX;
}

impl JoinKey for i32 {
    const NAME: &'static str = "i32";
    const RESERVED: Self = EMPTY_KEY as i32;
    const MIN: Self = i32::MIN;
    const MAX: Self = i32::MAX;
}

impl JoinKey for u64 {
    const NAME: &'static str = "u64";
    const RESERVED: Self = hash::EMPTY_KEY64;
    const MIN: Self = u64::MIN;
    const MAX: Self = u64::MAX;
}

/// The probe kernels of the 32-bit tables, shared by `u32` and `i32` keys (they compare bits).
macro_rules! probes32 {
    () => {
        const MAP_WORDS: usize = 2;
        const SET_WORDS: usize = 1;
        const HASH_JOIN_SUM: KernelSpec<ProbeSumArgs<u32>> = k::HASH_JOIN_SUM;
        const HASH_JOIN_COUNT: KernelSpec<ProbeCountArgs<u32>> = k::HASH_JOIN_COUNT;
        const HASH_JOIN_WRITE: KernelSpec<ProbeWriteArgs<u32>> = k::HASH_JOIN_WRITE;
        const HASH_JOIN_SUM_SHARED: KernelSpec<ProbeSharedArgs<u32>> = k::HASH_JOIN_SUM_SHARED;
        const HASH_SEMI_JOIN: KernelSpec<SemiJoinArgs<u32>> = k::HASH_SEMI_JOIN;
        const PERFECT_JOIN_SUM: Option<KernelSpec<ProbeSumArgs<u32>>> = Some(k::PERFECT_JOIN_SUM);
        const PERFECT_JOIN_COUNT: Option<KernelSpec<ProbeCountArgs<u32>>> =
            Some(k::PERFECT_JOIN_COUNT);
        const PERFECT_JOIN_WRITE: Option<KernelSpec<ProbeWriteArgs<u32>>> =
            Some(k::PERFECT_JOIN_WRITE);
        const PERFECT_JOIN_SUM_SHARED: Option<KernelSpec<ProbeSharedArgs<u32>>> =
            Some(k::PERFECT_JOIN_SUM_SHARED);
        const PERFECT_SEMI_JOIN: Option<KernelSpec<SemiJoinArgs<u32>>> = Some(k::PERFECT_SEMI_JOIN);
    };
}

impl sealed::JoinKernels for u32 {
    probes32!();
    const HASH_BUILD: KernelSpec<BuildArgs<Self>> = k::HASH_BUILD;
    const HASH_BUILD_ROWS: KernelSpec<BuildArgs<Self>> = k::HASH_BUILD_ROWS;
    const HASH_SET_BUILD: KernelSpec<BuildKeysArgs<Self>> = k::HASH_SET_BUILD;
    const PERFECT_BUILD: Option<KernelSpec<BuildArgs<Self>>> = Some(k::PERFECT_BUILD);
    const PERFECT_BUILD_ROWS: Option<KernelSpec<BuildArgs<Self>>> = Some(k::PERFECT_BUILD_ROWS);
    const PERFECT_SET_BUILD: Option<KernelSpec<BuildKeysArgs<Self>>> = Some(k::PERFECT_SET_BUILD);
    /// The reserved key cannot be the largest (its slot could never be filled, and
    /// `0..=u32::MAX` would need 2^32 slots).
    fn perfect_span(min: u32, max: u32) -> Option<(u32, u32)> {
        (min <= max && max != EMPTY_KEY).then(|| (min, max - min + 1))
    }
}

impl sealed::JoinKernels for i32 {
    probes32!();
    const HASH_BUILD: KernelSpec<BuildArgs<Self>> = k::HASH_BUILD_I32;
    const HASH_BUILD_ROWS: KernelSpec<BuildArgs<Self>> = k::HASH_BUILD_ROWS_I32;
    const HASH_SET_BUILD: KernelSpec<BuildKeysArgs<Self>> = k::HASH_SET_BUILD_I32;
    const PERFECT_BUILD: Option<KernelSpec<BuildArgs<Self>>> = Some(k::PERFECT_BUILD_I32);
    const PERFECT_BUILD_ROWS: Option<KernelSpec<BuildArgs<Self>>> = Some(k::PERFECT_BUILD_ROWS_I32);
    const PERFECT_SET_BUILD: Option<KernelSpec<BuildKeysArgs<Self>>> =
        Some(k::PERFECT_SET_BUILD_I32);
    /// The range in `i32` order; the slot of `key` is `key - min`, which the kernels compute
    /// on the bits with a wrapping subtraction (exact for keys in range, at least the slot
    /// count for all others). A range may hold `-1`: its slot just stays empty. Only
    /// `i32::MIN..=i32::MAX` (2^32 slots) has no table.
    fn perfect_span(min: i32, max: i32) -> Option<(u32, u32)> {
        let slots = i64::from(max) - i64::from(min) + 1;
        (min <= max)
            .then_some(slots)
            .and_then(|s| u32::try_from(s).ok())
            .map(|s| (min.bits(), s))
    }
}

impl sealed::JoinKernels for u64 {
    const MAP_WORDS: usize = 4;
    const SET_WORDS: usize = 2;
    const HASH_BUILD: KernelSpec<BuildArgs<Self>> = k::HASH_BUILD_U64;
    const HASH_BUILD_ROWS: KernelSpec<BuildArgs<Self>> = k::HASH_BUILD_ROWS_U64;
    const HASH_SET_BUILD: KernelSpec<BuildKeysArgs<Self>> = k::HASH_SET_BUILD_U64;
    const HASH_JOIN_SUM: KernelSpec<ProbeSumArgs<u64>> = k::HASH_JOIN_SUM_U64;
    const HASH_JOIN_COUNT: KernelSpec<ProbeCountArgs<u64>> = k::HASH_JOIN_COUNT_U64;
    const HASH_JOIN_WRITE: KernelSpec<ProbeWriteArgs<u64>> = k::HASH_JOIN_WRITE_U64;
    const HASH_JOIN_SUM_SHARED: KernelSpec<ProbeSharedArgs<u64>> = k::HASH_JOIN_SUM_SHARED_U64;
    const HASH_SEMI_JOIN: KernelSpec<SemiJoinArgs<u64>> = k::HASH_SEMI_JOIN_U64;
    const PERFECT_BUILD: Option<KernelSpec<BuildArgs<Self>>> = None;
    const PERFECT_BUILD_ROWS: Option<KernelSpec<BuildArgs<Self>>> = None;
    const PERFECT_SET_BUILD: Option<KernelSpec<BuildKeysArgs<Self>>> = None;
    const PERFECT_JOIN_SUM: Option<KernelSpec<ProbeSumArgs<u64>>> = None;
    const PERFECT_JOIN_COUNT: Option<KernelSpec<ProbeCountArgs<u64>>> = None;
    const PERFECT_JOIN_WRITE: Option<KernelSpec<ProbeWriteArgs<u64>>> = None;
    const PERFECT_JOIN_SUM_SHARED: Option<KernelSpec<ProbeSharedArgs<u64>>> = None;
    const PERFECT_SEMI_JOIN: Option<KernelSpec<SemiJoinArgs<u64>>> = None;
    fn perfect_span(_: u64, _: u64) -> Option<(u32, u32)> {
        None
    }
}

/// The error for a build that offered the reserved key of `K`.
pub(crate) fn reserved_key_error<K: JoinKey>() -> Error {
    let bits = if K::NAME == "i32" {
        "the bits of u32::MAX".to_string()
    } else {
        format!("{}::MAX", K::NAME)
    };
    Error::invalid(format!(
        "hash table insert: key {} ({bits}) is reserved to mark empty slots and cannot be a {} \
         key",
        K::RESERVED,
        K::NAME
    ))
}

/// A predicate every key satisfies.
pub(crate) fn all_keys<K: JoinKey>() -> Predicate<K> {
    Predicate::between(K::MIN, K::MAX)
}

/// The perfect-hash kernel `spec` (`None` for key types without perfect tables, which
/// [`join_perfect_layout`] already refuses).
fn perfect_spec<A>(spec: Option<KernelSpec<A>>) -> Result<KernelSpec<A>> {
    spec.ok_or_else(|| Error::invalid("perfect hash tables take 32-bit keys"))
}

/// Probe keys as the words the probe kernels compare (`i32` keys as their `u32` bits).
fn key_words<K: JoinKey>(keys: &DeviceColumn<K>) -> CudaView<'_, K::Bits> {
    crate::runtime::view_as(&keys.view())
}

/// Items per tile of the probe kernels (one block per tile).
pub const JOIN_TILE: usize = k::HASH_JOIN_SUM.tile() as usize;

/// Where a table of `K` keys puts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableLayout<K = u32> {
    /// Open addressing with linear probing over `capacity` slots.
    Linear {
        /// Number of slots.
        capacity: u32,
    },
    /// Perfect hashing: key `k` in slot `k - min` (in `K`'s order), for keys `min ..= max`.
    /// 32-bit keys only.
    Perfect {
        /// Smallest key.
        min: K,
        /// Largest key.
        max: K,
    },
}

impl<K: JoinKey> TableLayout<K> {
    /// Number of slots (0 for a perfect layout that no table can have, such as any of `u64`
    /// keys).
    pub fn slots(&self) -> usize {
        match *self {
            TableLayout::Linear { capacity } => capacity as usize,
            TableLayout::Perfect { .. } => self.args().1 as usize,
        }
    }

    /// The `(ta, tb)` kernel arguments (see [`tessera_kernels::ops::join`]); `ta` and `tb`
    /// of a perfect table are the smallest key's bits and the number of slots.
    pub(crate) fn args(&self) -> (u32, u32) {
        match *self {
            TableLayout::Linear { capacity } => (capacity, 0),
            TableLayout::Perfect { min, max } => K::perfect_span(min, max).unwrap_or((0, 0)),
        }
    }

    /// The layout, or why a table cannot have it.
    pub(crate) fn check(self) -> Result<Self> {
        match self {
            TableLayout::Linear { capacity: 0 } => {
                Err(Error::invalid("hash table capacity 0 is not in 1..2^32"))
            }
            TableLayout::Linear { .. } => Ok(self),
            TableLayout::Perfect { min, max } => join_perfect_layout(min, max),
        }
    }
}

/// How large a linear-probing table to make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableOptions {
    /// Rows / slots once built, in `(0, 0.9]` (default 0.5, the thesis' setting).
    pub fill: f64,
    /// An explicit number of slots (overrides `fill`).
    pub capacity: Option<usize>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            fill: DEFAULT_FILL,
            capacity: None,
        }
    }
}

impl TableOptions {
    /// Slots for `rows` rows.
    pub(crate) fn capacity_for(&self, rows: usize) -> Result<u32> {
        if let Some(c) = self.capacity {
            return u32::try_from(c).ok().filter(|&c| c > 0).ok_or_else(|| {
                Error::invalid(format!("hash table capacity {c} is not in 1..2^32"))
            });
        }
        if !(self.fill > 0.0 && self.fill <= MAX_FILL) {
            return Err(Error::invalid(format!(
                "hash table fill {} is outside (0, {MAX_FILL}]",
                self.fill
            )));
        }
        hash::capacity_for(rows as u64, self.fill).ok_or_else(|| {
            Error::invalid(format!(
                "a hash table for {rows} rows at fill {} needs more than 2^32 slots",
                self.fill
            ))
        })
    }
}

/// A build kernel of a table's layout with what it stores beside the keys.
#[derive(Clone, Copy)]
enum Build<'a, K> {
    /// Key + payload: the payloads from a column, or (`None`, the `_rows` kernels) the build
    /// row index.
    Pairs(KernelSpec<BuildArgs<K>>, Option<&'a DeviceColumn<u32>>),
    /// Key-only table.
    Keys(KernelSpec<BuildKeysArgs<K>>),
}

/// What the last build reported.
struct BuildReport {
    duplicate: bool,
    overflow: bool,
    sentinel: bool,
    inserted: usize,
}

/// The storage and bookkeeping shared by tables with and without payloads.
struct Table<K> {
    /// `words_per_slot` words per slot, all bits set (the empty key word of either width).
    words: CudaSlice<u32>,
    layout: TableLayout<K>,
    rows: usize,
    duplicates: bool,
    state: Option<PodBuffer<BuildState>>,
}

impl<K: JoinKey> Table<K> {
    fn new(gpu: &Gpu, layout: TableLayout<K>, words_per_slot: usize) -> Result<Table<K>> {
        let layout = layout.check()?;
        let n = layout.slots() * words_per_slot;
        if n > MAX_COLUMN_LEN {
            return Err(Error::invalid(format!(
                "hash table of {} slots exceeds the limit of {MAX_COLUMN_LEN} words",
                layout.slots()
            )));
        }
        let words = gpu
            .stream()
            .alloc_zeros::<u32>(n)
            .map_err(Error::driver("allocating a hash table", n * 4))?;
        let mut t = Table {
            words,
            layout,
            rows: 0,
            duplicates: false,
            state: None,
        };
        t.clear(gpu)?;
        Ok(t)
    }

    /// Sets every word to [`EMPTY_KEY`] (all bits set: a free slot of 32- or 64-bit keys).
    fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        let n = self.words.len();
        let (n32, empty) = (n as u32, EMPTY_KEY);
        let cfg = tile_grid(&k::JOIN_FILL, n, 0)?;
        // SAFETY: one block per tile of the table's `n` words.
        unsafe { gpu.launch(&k::JOIN_FILL, cfg, (&mut self.words, &n32, &empty)) }?;
        self.rows = 0;
        self.duplicates = false;
        Ok(())
    }

    /// Launches `build` (a build kernel of this table's layout) on `keys` and checks the
    /// report.
    fn insert(
        &mut self,
        gpu: &Gpu,
        build: Build<K>,
        keys: &DeviceColumn<K>,
        pred: Predicate<K>,
    ) -> Result<()> {
        let n = keys.len();
        if let Build::Pairs(_, Some(p)) = build {
            check_same_len("hash table insert", "payloads", p.len(), n)?;
        }
        // Every row of an unfiltered insert takes a slot: refuse before touching the table.
        if let TableLayout::Linear { capacity } = self.layout
            && pred == all_keys::<K>()
            && self.rows + n >= capacity as usize
        {
            return Err(Error::invalid(format!(
                "hash table too full: {} rows + {n} new ones need more than its {capacity} slots \
                 (one slot always stays empty); build a larger table",
                self.rows
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let mut st = match self.state.take() {
            Some(mut st) => {
                st.write(gpu, 0, &BuildState::default())?;
                st
            }
            None => PodBuffer::upload(gpu, &[BuildState::default()])?,
        };
        let (n32, op, (ta, tb)) = (n as u32, pred.op.code(), self.layout.args());
        let (p, a, b) = (&pred.a, &pred.b, &mut self.words);
        let (ta, tb, state) = (&ta, &tb, &mut st.item_mut(0)?);
        // SAFETY (both arms): one block per tile of the `n` keys (and payloads), into this
        // table's slots as its layout describes them, with zeroed build state.
        match build {
            Build::Pairs(spec, payloads) => {
                let cfg = tile_grid(&spec, n, 0)?;
                let args = (keys, payloads, &n32, &op, p, a, b, ta, tb, state);
                // SAFETY: as above; the `_rows` kernels ignore the null payloads.
                unsafe { gpu.launch(&spec, cfg, args) }
            }
            Build::Keys(spec) => {
                let cfg = tile_grid(&spec, n, 0)?;
                let args = (keys, &n32, &op, p, a, b, ta, tb, state);
                // SAFETY: as above.
                unsafe { gpu.launch(&spec, cfg, args) }
            }
        }?;
        let report = read_report(gpu, &st)?;
        self.state = Some(st);
        self.rows += report.inserted;
        self.duplicates |= report.duplicate;
        if report.sentinel {
            return Err(reserved_key_error::<K>());
        }
        match self.layout {
            TableLayout::Linear { capacity } => {
                if report.overflow || self.rows >= capacity as usize {
                    return Err(Error::invalid(format!(
                        "hash table too full: {} rows in {capacity} slots (one slot must stay \
                         empty); build a larger table",
                        self.rows
                    )));
                }
            }
            TableLayout::Perfect { min, max } => {
                if report.overflow {
                    return Err(Error::invalid(format!(
                        "perfect hash table: a key lies outside its range {min}..={max}"
                    )));
                }
            }
        }
        Ok(())
    }
}

fn read_report(gpu: &Gpu, st: &PodBuffer<BuildState>) -> Result<BuildReport> {
    let s = st.read(gpu, 0)?;
    Ok(BuildReport {
        duplicate: s.duplicate != 0,
        overflow: s.overflow != 0,
        sentinel: s.sentinel != 0,
        inserted: s.inserted as usize,
    })
}

/// The perfect layout for keys `min ..= max`, or why there is none.
pub(crate) fn join_perfect_layout<K: JoinKey>(min: K, max: K) -> Result<TableLayout<K>> {
    if K::PERFECT_BUILD.is_none() {
        return Err(Error::invalid(format!(
            "perfect hash tables take 32-bit keys (u32, i32), not {}: build a linear-probing \
             table",
            K::NAME
        )));
    }
    if K::perfect_span(min, max).is_none() {
        return Err(Error::invalid(if K::NAME == "u32" {
            format!(
                "perfect hash table key range {min}..={max} is empty or includes the reserved \
                 key {EMPTY_KEY}"
            )
        } else {
            format!(
                "perfect hash table key range {min}..={max} of {} keys is empty or needs 2^32 \
                 slots",
                K::NAME
            )
        }));
    }
    Ok(TableLayout::Perfect { min, max })
}

/// A device hash table from `K` keys (`u32`, `i32` or `u64`) to `u32` payloads (key and
/// payload side by side: one 8-byte access per probe of a 32-bit key, 16 bytes for `u64`).
pub struct HashTable<K: JoinKey = u32> {
    t: Table<K>,
}

impl<K: JoinKey> std::fmt::Debug for HashTable<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashTable")
            .field("key", &K::NAME)
            .field("layout", &self.t.layout)
            .field("rows", &self.t.rows)
            .field("duplicates", &self.t.duplicates)
            .finish()
    }
}

impl<K: JoinKey> HashTable<K> {
    /// An empty linear-probing table of `capacity` slots (it holds at most `capacity - 1`
    /// rows).
    pub fn with_capacity(gpu: &Gpu, capacity: usize) -> Result<HashTable<K>> {
        let opts = TableOptions {
            capacity: Some(capacity),
            ..TableOptions::default()
        };
        let capacity = opts.capacity_for(0)?;
        Ok(HashTable {
            t: Table::new(gpu, TableLayout::Linear { capacity }, K::MAP_WORDS)?,
        })
    }

    /// An empty perfect-hash table for keys `min ..= max` (`max - min + 1` slots, the range in
    /// `K`'s order). Keys must be distinct. 32-bit keys only: fails for `u64`.
    pub fn perfect(gpu: &Gpu, min: K, max: K) -> Result<HashTable<K>> {
        Ok(HashTable {
            t: Table::new(gpu, join_perfect_layout(min, max)?, K::MAP_WORDS)?,
        })
    }

    /// Builds a linear-probing table from `keys` and their `payloads` (`None`: the payload of a
    /// row is its index, so [`join`] returns row pairs), sized by `opts`.
    pub fn build(
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        payloads: Option<&DeviceColumn<u32>>,
        opts: TableOptions,
    ) -> Result<HashTable<K>> {
        let capacity = opts.capacity_for(keys.len())?;
        let mut t = HashTable {
            t: Table::new(gpu, TableLayout::Linear { capacity }, K::MAP_WORDS)?,
        };
        t.insert(gpu, keys, payloads)?;
        Ok(t)
    }

    /// Inserts rows (payloads as in [`HashTable::build`]). Fails when a key is
    /// [`JoinKey::RESERVED`], when a linear-probing table would have no empty slot left, or
    /// when a perfect-hash table gets a key outside its range or twice; after an error the
    /// contents are unspecified.
    pub fn insert(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        payloads: Option<&DeviceColumn<u32>>,
    ) -> Result<()> {
        self.insert_where(gpu, keys, payloads, all_keys::<K>())
    }

    /// Inserts the rows whose key satisfies `pred` (the selective build; in `K`'s order).
    pub fn insert_where(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        payloads: Option<&DeviceColumn<u32>>,
        pred: Predicate<K>,
    ) -> Result<()> {
        let perfect = matches!(self.t.layout, TableLayout::Perfect { .. });
        let spec = match (perfect, payloads.is_some()) {
            (false, true) => K::HASH_BUILD,
            (false, false) => K::HASH_BUILD_ROWS,
            (true, true) => perfect_spec(K::PERFECT_BUILD)?,
            (true, false) => perfect_spec(K::PERFECT_BUILD_ROWS)?,
        };
        self.t
            .insert(gpu, Build::Pairs(spec, payloads), keys, pred)?;
        if perfect && self.t.duplicates {
            return Err(Error::invalid(
                "perfect hash table: a key was inserted twice (perfect hashing needs distinct keys)",
            ));
        }
        Ok(())
    }

    /// Empties the table (keeps its slots).
    pub fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        self.t.clear(gpu)
    }

    /// Rows inserted.
    pub fn len(&self) -> usize {
        self.t.rows
    }

    /// Whether no row was inserted.
    pub fn is_empty(&self) -> bool {
        self.t.rows == 0
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.t.layout.slots()
    }

    /// Bytes of device memory the slots take (8 per slot for 32-bit keys, 16 for `u64`).
    pub fn bytes(&self) -> usize {
        self.slots() * K::MAP_WORDS * 4
    }

    /// The table's layout.
    pub fn layout(&self) -> TableLayout<K> {
        self.t.layout
    }

    /// Whether some key was inserted more than once.
    pub fn has_duplicates(&self) -> bool {
        self.t.duplicates
    }

    fn probe_args(&self) -> (u32, u32, u32) {
        let (ta, tb) = self.t.layout.args();
        (ta, tb, (!self.t.duplicates) as u32)
    }

    fn is_perfect(&self) -> bool {
        matches!(self.t.layout, TableLayout::Perfect { .. })
    }

    /// The probe-and-aggregate kernel of this table (one block per tile).
    fn sum_spec(&self) -> Result<KernelSpec<ProbeSumArgs<K::Bits>>> {
        match self.is_perfect() {
            false => Ok(K::HASH_JOIN_SUM),
            true => perfect_spec(K::PERFECT_JOIN_SUM),
        }
    }

    /// The first pass of the pair join on this table.
    fn count_spec(&self) -> Result<KernelSpec<ProbeCountArgs<K::Bits>>> {
        match self.is_perfect() {
            false => Ok(K::HASH_JOIN_COUNT),
            true => perfect_spec(K::PERFECT_JOIN_COUNT),
        }
    }

    /// The second pass of the pair join on this table.
    fn write_spec(&self) -> Result<KernelSpec<ProbeWriteArgs<K::Bits>>> {
        match self.is_perfect() {
            false => Ok(K::HASH_JOIN_WRITE),
            true => perfect_spec(K::PERFECT_JOIN_WRITE),
        }
    }
}

/// A device set of `K` keys (key-only table) for semi-joins.
pub struct KeySet<K: JoinKey = u32> {
    t: Table<K>,
}

impl<K: JoinKey> KeySet<K> {
    /// Builds a linear-probing set of `keys` (repeated keys are stored once), sized by `opts`.
    pub fn build(gpu: &Gpu, keys: &DeviceColumn<K>, opts: TableOptions) -> Result<KeySet<K>> {
        let capacity = opts.capacity_for(keys.len())?;
        let mut s = KeySet {
            t: Table::new(gpu, TableLayout::Linear { capacity }, K::SET_WORDS)?,
        };
        s.insert_where(gpu, keys, all_keys::<K>())?;
        Ok(s)
    }

    /// An empty perfect-hash set for keys `min ..= max` (32-bit keys only).
    pub fn perfect(gpu: &Gpu, min: K, max: K) -> Result<KeySet<K>> {
        Ok(KeySet {
            t: Table::new(gpu, join_perfect_layout(min, max)?, K::SET_WORDS)?,
        })
    }

    /// Inserts the keys that satisfy `pred`; errors as for [`HashTable::insert`] (repeated keys
    /// are fine in a set).
    pub fn insert_where(
        &mut self,
        gpu: &Gpu,
        keys: &DeviceColumn<K>,
        pred: Predicate<K>,
    ) -> Result<()> {
        let spec = match self.t.layout {
            TableLayout::Linear { .. } => K::HASH_SET_BUILD,
            TableLayout::Perfect { .. } => perfect_spec(K::PERFECT_SET_BUILD)?,
        };
        self.t.insert(gpu, Build::Keys(spec), keys, pred)
    }

    /// The table's layout.
    pub fn layout(&self) -> TableLayout<K> {
        self.t.layout
    }
}

/// The result of [`join`]: one entry per (probe row, matching build row), ordered by probe
/// row; the matches of one probe row come in table order.
#[derive(Debug)]
pub struct JoinPairs {
    /// Index of the probe row.
    pub probe_rows: DeviceColumn<u32>,
    /// Payload of the matching build row (its row index when built without payloads).
    pub payloads: DeviceColumn<u32>,
}

/// `SELECT probe.row, build.payload FROM probe, build WHERE probe.key = build.key`: two passes
/// (count the matches per tile, scan, then write), so the output is exact and ordered.
pub fn join<K: JoinKey>(
    gpu: &Gpu,
    table: &HashTable<K>,
    probe_keys: &DeviceColumn<K>,
) -> Result<JoinPairs> {
    let n = probe_keys.len();
    let (count_spec, write_spec) = (table.count_spec()?, table.write_spec()?);
    let (ta, tb, distinct) = table.probe_args();
    if n == 0 {
        return Ok(JoinPairs {
            probe_rows: gpu.zeros(0)?,
            payloads: gpu.zeros(0)?,
        });
    }
    let tiles = count_spec.tiles(n as u64) as usize;
    let mut tile_counts = gpu.zeros::<u32>(tiles)?;
    let mut total = Scratch::zeroed(gpu, 1, None)?;
    let n32 = n as u32;
    let cfg = tile_grid(&count_spec, n, 0)?;
    let (keys, slots) = (&key_words(probe_keys), &table.t.words);
    let (ta, tb, distinct) = (&ta, &tb, &distinct);
    let args = (
        keys,
        &n32,
        slots,
        ta,
        tb,
        distinct,
        &mut tile_counts,
        &mut total.words,
    );
    // SAFETY: one block per tile of the `n` probe keys, one count per tile, a zeroed total;
    // the table's slots are as its layout describes them.
    unsafe { gpu.launch(&count_spec, cfg, args) }?;
    let matches = total.read(gpu, 0)? as usize;
    if matches > MAX_COLUMN_LEN {
        return Err(Error::invalid(format!(
            "join: {matches} result rows exceed the column limit of {MAX_COLUMN_LEN}"
        )));
    }
    let mut offsets = gpu.zeros::<u32>(tiles)?;
    exclusive_scan_into(gpu, &tile_counts, &mut offsets, None)?;
    let mut probe_rows = gpu.zeros::<u32>(matches)?;
    let mut payloads = gpu.zeros::<u32>(matches)?;
    if matches > 0 {
        let cfg = tile_grid(&write_spec, n, 0)?;
        let out = (&mut probe_rows, &mut payloads);
        let args = (keys, &n32, slots, ta, tb, distinct, &offsets, out.0, out.1);
        // SAFETY: the same tiles; the scanned counts place each tile's matches within the
        // `matches` rows of both outputs.
        unsafe { gpu.launch(&write_spec, cfg, args) }?;
    }
    Ok(JoinPairs {
        probe_rows,
        payloads,
    })
}

/// Result of the probe-and-aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinSum {
    /// `SUM(A.v + B.v)` over all matches, exact modulo 2^64.
    pub sum: u64,
    /// Number of matches.
    pub count: u64,
}

/// Where the fused probe-and-aggregate reads the hash table from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProbePath {
    /// [`ProbePath::Shared`] when the table fits in one block's shared memory (at most
    /// [`shared_table_limit`] bytes) and the probe side is at least as many bytes as all
    /// blocks' copies of the table together, else [`ProbePath::Global`].
    #[default]
    Auto,
    /// Probes read the table in global memory (served by L1 / L2 as it happens to be
    /// cached), one block per probe tile.
    Global,
    /// Persistent blocks (as many as fit on the GPU at once) each copy the table into their
    /// shared memory, then probe their share of the tiles against the copy: a small table
    /// then costs shared-memory accesses instead of L1 misses, and the probe streams its
    /// columns at the bandwidth roof.
    Shared,
}

/// The shared-memory probe kernel of `table`'s layout.
fn shared_spec<K: JoinKey>(table: &HashTable<K>) -> Result<KernelSpec<ProbeSharedArgs<K::Bits>>> {
    match table.t.layout {
        TableLayout::Linear { .. } => Ok(K::HASH_JOIN_SUM_SHARED),
        TableLayout::Perfect { .. } => perfect_spec(K::PERFECT_JOIN_SUM_SHARED),
    }
}

/// Largest hash table, in bytes, that [`ProbePath::Shared`] can stage on `gpu`: the opt-in
/// shared memory per block less the probe kernel's own (static) shared memory. 227 KB less
/// 544 bytes on an H100. The same for every key type (the kernels' static shared memory is
/// the same; a table of `u64` keys takes 16 bytes a slot).
pub fn shared_table_limit(gpu: &Gpu) -> Result<usize> {
    gpu.allow_max_dynamic_smem(&k::HASH_JOIN_SUM_SHARED)
}

/// The persistent launch of the shared-memory probe of `table` over `n` probe rows: `None`
/// when the table does not fit.
fn shared_launch<K: JoinKey>(
    gpu: &Gpu,
    table: &HashTable<K>,
    n: usize,
) -> Result<Option<LaunchConfig>> {
    let bytes = table.bytes();
    let spec = shared_spec(table)?;
    if bytes > gpu.allow_max_dynamic_smem(&spec)? {
        return Ok(None);
    }
    let per_sm = gpu.blocks_per_sm(&spec, bytes)?;
    if per_sm == 0 {
        return Ok(None);
    }
    let grid = (per_sm as u64 * gpu.sm_count() as u64).min(spec.tiles(n as u64).max(1));
    Ok(Some(LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: bytes as u32,
    }))
}

/// Blocks per SM of the probe-and-sum kernel on a table in global memory. The probe is bound
/// by its random loads into the table, and every resident block streams probe rows through the
/// same caches: past shared memory, more blocks evict more of the table's lines than they hide
/// latency. Chosen from a sweep on the H100, in docs/perf-log.md.
const PROBE_BLOCKS_PER_SM: u64 = 2;

/// The thesis' Q4, `SELECT SUM(A.v + B.v) FROM A, B WHERE A.k = B.k`, fused into the probe:
/// `A` is the probe side `(keys, values)`, `B` the table (key, payload). Reusable output so that
/// repeated queries allocate nothing.
pub struct JoinAggregate {
    out: CudaSlice<u64>,
    path: ProbePath,
}

impl JoinAggregate {
    /// Allocates the output; the probe path is chosen per query ([`ProbePath::Auto`]).
    pub fn new(gpu: &Gpu) -> Result<JoinAggregate> {
        Self::with_path(gpu, ProbePath::Auto)
    }

    /// Allocates the output; queries take `path` (a query with [`ProbePath::Shared`] fails when
    /// the table does not fit in shared memory).
    pub fn with_path(gpu: &Gpu, path: ProbePath) -> Result<JoinAggregate> {
        Ok(JoinAggregate {
            out: gpu
                .stream()
                .alloc_zeros::<u64>(2)
                .map_err(Error::driver("allocating the join sum", 16))?,
            path,
        })
    }

    /// The path (never [`ProbePath::Auto`]) and, for [`ProbePath::Shared`], the launch a query
    /// of `table` with `n` probe rows takes.
    fn plan<K: JoinKey>(
        &self,
        gpu: &Gpu,
        table: &HashTable<K>,
        n: usize,
    ) -> Result<(ProbePath, Option<LaunchConfig>)> {
        if self.path == ProbePath::Global {
            return Ok((ProbePath::Global, None));
        }
        let cfg = shared_launch(gpu, table, n)?;
        match (self.path, cfg) {
            (ProbePath::Shared, None) => Err(Error::invalid(format!(
                "join_sum: a hash table of {} bytes does not fit in shared memory (at most {}                  bytes); use ProbePath::Global or Auto",
                table.bytes(),
                shared_table_limit(gpu)?
            ))),
            (ProbePath::Shared, Some(c)) => Ok((ProbePath::Shared, Some(c))),
            // Auto: the copies (one per block, mostly L2 hits) must not outweigh the probe
            // columns (key and value bytes per row) they save L1 misses on.
            (_, Some(c)) if c.grid_dim.0 as usize * table.bytes() <= (size_of::<K>() + 4) * n => {
                Ok((ProbePath::Shared, Some(c)))
            }
            _ => Ok((ProbePath::Global, None)),
        }
    }

    /// The path a query of `table` with `n` probe rows takes ([`ProbePath::Global`] or
    /// [`ProbePath::Shared`]).
    pub fn path_for<K: JoinKey>(
        &self,
        gpu: &Gpu,
        table: &HashTable<K>,
        n: usize,
    ) -> Result<ProbePath> {
        Ok(self.plan(gpu, table, n)?.0)
    }

    /// Queues the query; [`JoinAggregate::finish`] waits for it.
    pub fn launch<K: JoinKey>(
        &mut self,
        gpu: &Gpu,
        table: &HashTable<K>,
        keys: &DeviceColumn<K>,
        values: &DeviceColumn<u32>,
    ) -> Result<()> {
        let n = keys.len();
        check_same_len("join_sum", "probe values", values.len(), n)?;
        let plan = self.plan(gpu, table, n)?;
        gpu.stream()
            .memset_zeros(&mut self.out)
            .map_err(Error::driver("zeroing the join sum", 16))?;
        if n == 0 {
            return Ok(());
        }
        let (ta, tb, distinct) = table.probe_args();
        let n32 = n as u32;
        if let (ProbePath::Shared, Some(cfg)) = plan {
            let words = table.t.words.len() as u32;
            let (keys, slots) = (&key_words(keys), &table.t.words);
            let args = (
                keys,
                values,
                &n32,
                slots,
                &ta,
                &tb,
                &words,
                &distinct,
                &mut self.out,
            );
            // SAFETY: a persistent grid over the `n` keys and values, with the dynamic shared
            // memory `plan` sized for the table's `words` words; `out` holds the two sums.
            return unsafe { gpu.launch(&shared_spec(table)?, cfg, args) };
        }
        let spec = table.sum_spec()?;
        let cfg = grid_per_sm(gpu, &spec, n, PROBE_BLOCKS_PER_SM)?;
        let (keys, slots) = (&key_words(keys), &table.t.words);
        let args = (
            keys,
            values,
            &n32,
            slots,
            &ta,
            &tb,
            &distinct,
            &mut self.out,
        );
        // SAFETY: a persistent grid over the `n` keys and values; `out` holds the two sums.
        unsafe { gpu.launch(&spec, cfg, args) }
    }

    /// Waits for the last query and returns its result.
    pub fn finish(&self, gpu: &Gpu) -> Result<JoinSum> {
        let mut v = [0u64; 2];
        gpu.stream()
            .memcpy_dtoh(&self.out, &mut v[..])
            .map_err(Error::driver("reading the join sum", 16))?;
        gpu.synchronize()?;
        Ok(JoinSum {
            sum: v[0],
            count: v[1],
        })
    }
}

/// `SELECT SUM(A.v + B.v), COUNT(*) FROM A, B WHERE A.k = B.k` with `A = (keys, values)` and
/// `B` the table (probe path chosen as [`ProbePath::Auto`] says).
pub fn join_sum<K: JoinKey>(
    gpu: &Gpu,
    table: &HashTable<K>,
    keys: &DeviceColumn<K>,
    values: &DeviceColumn<u32>,
) -> Result<JoinSum> {
    let mut q = JoinAggregate::new(gpu)?;
    q.launch(gpu, table, keys, values)?;
    q.finish(gpu)
}

/// The indices of the probe rows whose key is in `set`, in row order (`WHERE key IN set`).
pub fn semi_join<K: JoinKey>(
    gpu: &Gpu,
    set: &KeySet<K>,
    probe_keys: &DeviceColumn<K>,
) -> Result<DeviceColumn<u32>> {
    let n = probe_keys.len();
    let spec = match set.t.layout {
        TableLayout::Linear { .. } => K::HASH_SEMI_JOIN,
        TableLayout::Perfect { .. } => perfect_spec(K::PERFECT_SEMI_JOIN)?,
    };
    let mut out = gpu.zeros::<u32>(n)?;
    if n == 0 {
        return Ok(out);
    }
    let mut st = Scratch::zeroed(gpu, state_words(spec.tiles(n as u64)) as usize, None)?;
    let (ta, tb) = set.t.layout.args();
    let n32 = n as u32;
    let cfg = tile_grid(&spec, n, 0)?;
    let keys = &key_words(probe_keys);
    let args = (keys, &n32, &set.t.words, &ta, &tb, &mut out, &mut st.words);
    // SAFETY: one block per tile of the `n` probe keys, an output of `n` rows, selection state
    // zeroed for these tiles.
    unsafe { gpu.launch(&spec, cfg, args) }?;
    let count = Scratch::count(Some(&st), gpu)?;
    out.set_len(count);
    Ok(out)
}

/// Reads an L2-resident buffer repeatedly with the L2 probe kernel: returns (bytes read,
/// milliseconds) per launch for the benchmark's cache model.
#[doc(hidden)]
pub fn l2_read_bandwidth(gpu: &Gpu, bytes: usize, reps: usize) -> Result<(f64, f64)> {
    let spec = k::JOIN_L2_READ;
    let grid = 4 * gpu.sm_count() as usize;
    let chunk = grid * spec.threads() as usize * 4;
    let n = (bytes / 4).div_ceil(chunk) * chunk;
    let rounds = 64u32;
    let data = gpu.zeros::<u32>(n)?;
    let mut sum = gpu.zeros::<u64>(1)?;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: 0,
    };
    let n32 = n as u32;
    let t = gpu
        .time(3, reps, || {
            // SAFETY: `n` words, a multiple of the grid's threads times 4; one sum word.
            unsafe { gpu.launch(&spec, cfg, (&data, &n32, &rounds, &mut sum)) }
        })?
        .median_ms();
    Ok((n as f64 * 4.0 * rounds as f64, t))
}
