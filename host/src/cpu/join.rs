//! CPU hash join without partitioning (the thesis' "CPU Scalar"): all threads build one shared
//! table with compare-and-swap, then probe it in parallel, each thread keeping a local sum.
//! The table uses the GPU's hash, slot maths and layouts ([`tessera_kernels::hash`]) and the
//! same semantics: keys of any [`JoinKey`] type (`u32`, `i32`, `u64`) with `u32` payloads,
//! duplicate build keys give all matches, the reserved key ([`JoinKey::RESERVED`]) is rejected.
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use rayon::prelude::*;
use tessera_kernels::hash::{KeyBits, next_slot, perfect_slot};

use crate::error::{Error, Result};
use crate::ops::{JoinKey, JoinSum, Predicate, TableLayout, TableOptions, all_keys};

/// The slots of a table: for 32-bit keys one word per slot packed as `key | payload << 32`
/// (one 64-bit CAS claims key and payload together); for 64-bit keys a key word claimed by
/// CAS and a payload word its claimer then writes (probes run after the build has joined).
enum Slots {
    Packed(Vec<AtomicU64>),
    Wide(Vec<AtomicU64>, Vec<AtomicU32>),
}

/// The packed empty slot of a 32-bit table: the empty key word, payload 0.
const EMPTY32: u64 = <u32 as KeyBits>::EMPTY as u64;

impl Slots {
    fn new(n: usize, wide: bool) -> Slots {
        if wide {
            Slots::Wide(
                (0..n).map(|_| AtomicU64::new(u64::MAX)).collect(),
                (0..n).map(|_| AtomicU32::new(0)).collect(),
            )
        } else {
            Slots::Packed((0..n).map(|_| AtomicU64::new(EMPTY32)).collect())
        }
    }

    /// Claims slot `s` for `key` (bits, widened) and `payload`; the stored key on failure.
    #[inline]
    fn claim(&self, s: usize, key: u64, payload: u32) -> std::result::Result<(), u64> {
        match self {
            Slots::Packed(w) => w[s]
                .compare_exchange(EMPTY32, key | (payload as u64) << 32, Relaxed, Relaxed)
                .map(|_| ())
                .map_err(|old| old as u32 as u64),
            Slots::Wide(k, p) => {
                k[s].compare_exchange(u64::MAX, key, Relaxed, Relaxed)?;
                p[s].store(payload, Relaxed);
                Ok(())
            }
        }
    }

    /// The key (bits, widened) and payload of slot `s`.
    #[inline]
    fn get(&self, s: usize) -> (u64, u32) {
        match self {
            Slots::Packed(w) => {
                let w = w[s].load(Relaxed);
                (w as u32 as u64, (w >> 32) as u32)
            }
            Slots::Wide(k, p) => (k[s].load(Relaxed), p[s].load(Relaxed)),
        }
    }
}

/// The empty key word of `K`, widened.
fn empty<K: JoinKey>() -> u64 {
    <K::Bits as KeyBits>::EMPTY.into()
}

/// A hash table from `K` keys to `u32` payloads in host memory, built in parallel.
pub struct CpuHashTable<K: JoinKey = u32> {
    slots: Slots,
    layout: TableLayout<K>,
    rows: usize,
    duplicates: bool,
}

impl<K: JoinKey> CpuHashTable<K> {
    /// A linear-probing table of `keys` and `payloads` (`None`: row indices), sized by `opts`.
    pub fn build(keys: &[K], payloads: Option<&[u32]>, opts: TableOptions) -> Result<Self> {
        let capacity = opts.capacity_for(keys.len())?;
        Self::build_where(
            keys,
            payloads,
            TableLayout::Linear { capacity },
            all_keys::<K>(),
        )
    }

    /// A perfect-hash table over keys `min ..= max` (distinct 32-bit keys).
    pub fn perfect(keys: &[K], payloads: Option<&[u32]>, min: K, max: K) -> Result<Self> {
        Self::build_where(
            keys,
            payloads,
            crate::ops::join_perfect_layout(min, max)?,
            all_keys::<K>(),
        )
    }

    /// A table of the rows whose key satisfies `pred`, with the errors of
    /// [`crate::ops::HashTable::insert`].
    pub fn build_where(
        keys: &[K],
        payloads: Option<&[u32]>,
        layout: TableLayout<K>,
        pred: Predicate<K>,
    ) -> Result<Self> {
        if let Some(p) = payloads {
            crate::ops::check_same_len("hash table insert", "payloads", p.len(), keys.len())?;
        }
        let layout = layout.check()?;
        let n_slots = layout.slots();
        if let TableLayout::Linear { capacity } = layout
            && pred == all_keys::<K>()
            && keys.len() >= capacity as usize
        {
            return Err(Error::invalid(format!(
                "hash table too full: {} rows need more than its {capacity} slots (one slot \
                 always stays empty); build a larger table",
                keys.len()
            )));
        }
        let (ta, tb) = layout.args();
        let slots = Slots::new(n_slots, size_of::<K::Bits>() == 8);
        let (dup, overflow, sentinel) = (
            AtomicBool::new(false),
            AtomicBool::new(false),
            AtomicBool::new(false),
        );
        let rows = AtomicUsize::new(0);
        keys.par_iter().enumerate().for_each(|(i, &key)| {
            if !pred.eval(key) {
                return;
            }
            rows.fetch_add(1, Relaxed);
            let bits = key.bits();
            let wide: u64 = bits.into();
            if wide == empty::<K>() {
                sentinel.store(true, Relaxed);
                return;
            }
            let payload = payloads.map_or(i as u32, |p| p[i]);
            match layout {
                TableLayout::Linear { capacity } => {
                    let mut s = bits.home_slot(capacity);
                    for _ in 0..capacity {
                        match slots.claim(s as usize, wide, payload) {
                            Ok(()) => return,
                            Err(old) => {
                                if old == wide {
                                    dup.store(true, Relaxed);
                                }
                            }
                        }
                        s = next_slot(s, capacity);
                    }
                    overflow.store(true, Relaxed);
                }
                TableLayout::Perfect { .. } => match perfect_slot(wide as u32, ta, tb) {
                    Some(s) => {
                        if slots.claim(s as usize, wide, payload).is_err() {
                            dup.store(true, Relaxed);
                        }
                    }
                    None => overflow.store(true, Relaxed),
                },
            }
        });
        let rows = rows.into_inner();
        if sentinel.into_inner() {
            return Err(crate::ops::reserved_key_error::<K>());
        }
        let duplicates = dup.into_inner();
        match layout {
            TableLayout::Linear { capacity } => {
                if overflow.into_inner() || rows >= capacity as usize {
                    return Err(Error::invalid(format!(
                        "hash table too full: {rows} rows in {capacity} slots (one slot must stay \
                         empty); build a larger table"
                    )));
                }
            }
            TableLayout::Perfect { min, max } => {
                if overflow.into_inner() {
                    return Err(Error::invalid(format!(
                        "perfect hash table: a key lies outside its range {min}..={max}"
                    )));
                }
                if duplicates {
                    return Err(Error::invalid(
                        "perfect hash table: a key was inserted twice (perfect hashing needs \
                         distinct keys)",
                    ));
                }
            }
        }
        Ok(CpuHashTable {
            slots,
            layout,
            rows,
            duplicates,
        })
    }

    /// Rows inserted.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was inserted.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Whether some key was inserted more than once.
    pub fn has_duplicates(&self) -> bool {
        self.duplicates
    }

    /// Calls `f(payload)` for every row with `key`, in table order.
    #[inline]
    pub fn for_each_match(&self, key: K, mut f: impl FnMut(u32)) {
        let bits = key.bits();
        let wide: u64 = bits.into();
        if wide == empty::<K>() {
            return;
        }
        match self.layout {
            TableLayout::Linear { capacity } => {
                let mut s = bits.home_slot(capacity);
                for _ in 0..capacity {
                    let (stored, payload) = self.slots.get(s as usize);
                    if stored == empty::<K>() {
                        return;
                    }
                    if stored == wide {
                        f(payload);
                        if !self.duplicates {
                            return;
                        }
                    }
                    s = next_slot(s, capacity);
                }
            }
            TableLayout::Perfect { .. } => {
                let (ta, tb) = self.layout.args();
                if let Some(s) = perfect_slot(wide as u32, ta, tb) {
                    let (stored, payload) = self.slots.get(s as usize);
                    if stored == wide {
                        f(payload);
                    }
                }
            }
        }
    }
}

/// `(probe rows, payloads)` of every match, ordered by probe row (the matches of one row in
/// table order), as [`crate::ops::join`] returns them.
pub fn join<K: JoinKey>(table: &CpuHashTable<K>, probe_keys: &[K]) -> (Vec<u32>, Vec<u32>) {
    let chunks: Vec<Vec<(u32, u32)>> = probe_keys
        .par_chunks(1 << 16)
        .enumerate()
        .map(|(c, keys)| {
            let mut out = Vec::new();
            for (i, &k) in keys.iter().enumerate() {
                let row = (c << 16) as u32 + i as u32;
                table.for_each_match(k, |p| out.push((row, p)));
            }
            out
        })
        .collect();
    chunks.into_iter().flatten().unzip()
}

/// The thesis' Q4: `SUM(A.v + B.v)` and `COUNT(*)` over `A = (keys, values)` joined with the
/// table (wrapping u64, as on the GPU).
pub fn join_sum<K: JoinKey>(
    table: &CpuHashTable<K>,
    keys: &[K],
    values: &[u32],
) -> Result<JoinSum> {
    crate::ops::check_same_len("join_sum", "probe values", values.len(), keys.len())?;
    Ok(keys
        .par_iter()
        .zip(values)
        .fold(
            || JoinSum { sum: 0, count: 0 },
            |mut acc, (&k, &v)| {
                table.for_each_match(k, |b| {
                    acc.sum = acc.sum.wrapping_add(v as u64 + b as u64);
                    acc.count += 1;
                });
                acc
            },
        )
        .reduce(
            || JoinSum { sum: 0, count: 0 },
            |a, b| JoinSum {
                sum: a.sum.wrapping_add(b.sum),
                count: a.count + b.count,
            },
        ))
}

/// Indices of the probe rows whose key is one of `set_keys`, in row order.
pub fn semi_join<K: JoinKey>(set_keys: &[K], probe_keys: &[K]) -> Result<Vec<u32>> {
    if set_keys.contains(&K::RESERVED) {
        return Err(crate::ops::reserved_key_error::<K>());
    }
    let bits = |k: &K| -> u64 { k.bits().into() };
    let set: std::collections::HashSet<u64> = set_keys.iter().map(bits).collect();
    Ok(probe_keys
        .par_iter()
        .enumerate()
        .filter(|(_, k)| set.contains(&bits(k)))
        .map(|(i, _)| i as u32)
        .collect())
}
