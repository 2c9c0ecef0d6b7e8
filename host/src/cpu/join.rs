//! CPU hash join without partitioning (the thesis' "CPU Scalar"): all threads build one shared
//! table with compare-and-swap, then probe it in parallel, each thread keeping a local sum.
//! The table uses the GPU's hash, slot maths and layouts ([`tessera_kernels::hash`]) and the
//! same semantics: duplicate build keys give all matches, [`EMPTY_KEY`] is rejected.
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use rayon::prelude::*;
use tessera_kernels::hash::{EMPTY_KEY, home_slot, next_slot, perfect_slot};

use crate::error::{Error, Result};
use crate::ops::{JoinSum, Predicate, TableLayout, TableOptions};

/// A slot packed as `key | payload << 32`; one 64-bit CAS claims key and payload together.
const EMPTY: u64 = EMPTY_KEY as u64;

/// A hash table from `u32` keys to `u32` payloads in host memory, built in parallel.
pub struct CpuHashTable {
    slots: Vec<AtomicU64>,
    layout: TableLayout,
    rows: usize,
    duplicates: bool,
}

impl CpuHashTable {
    /// A linear-probing table of `keys` and `payloads` (`None`: row indices), sized by `opts`.
    pub fn build(keys: &[u32], payloads: Option<&[u32]>, opts: TableOptions) -> Result<Self> {
        let capacity = opts.capacity_for(keys.len())?;
        Self::build_where(
            keys,
            payloads,
            TableLayout::Linear { capacity },
            Predicate::between(0, u32::MAX),
        )
    }

    /// A perfect-hash table over keys `min ..= max` (distinct keys).
    pub fn perfect(keys: &[u32], payloads: Option<&[u32]>, min: u32, max: u32) -> Result<Self> {
        Self::build_where(
            keys,
            payloads,
            crate::ops::join_perfect_layout(min, max)?,
            Predicate::between(0, u32::MAX),
        )
    }

    /// A table of the rows whose key satisfies `pred`, with the errors of
    /// [`crate::ops::HashTable::insert`].
    pub fn build_where(
        keys: &[u32],
        payloads: Option<&[u32]>,
        layout: TableLayout,
        pred: Predicate<u32>,
    ) -> Result<Self> {
        if let Some(p) = payloads {
            crate::ops::check_same_len("hash table insert", "payloads", p.len(), keys.len())?;
        }
        let n_slots = layout.slots();
        if let TableLayout::Linear { capacity } = layout
            && pred == Predicate::between(0, u32::MAX)
            && keys.len() >= capacity as usize
        {
            return Err(Error::invalid(format!(
                "hash table too full: {} rows need more than its {capacity} slots (one slot \
                 always stays empty); build a larger table",
                keys.len()
            )));
        }
        let slots: Vec<AtomicU64> = (0..n_slots).map(|_| AtomicU64::new(EMPTY)).collect();
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
            if key == EMPTY_KEY {
                sentinel.store(true, Relaxed);
                return;
            }
            let payload = payloads.map_or(i as u32, |p| p[i]);
            let word = key as u64 | (payload as u64) << 32;
            match layout {
                TableLayout::Linear { capacity } => {
                    let mut s = home_slot(key, capacity);
                    for _ in 0..capacity {
                        match slots[s as usize].compare_exchange(EMPTY, word, Relaxed, Relaxed) {
                            Ok(_) => return,
                            Err(old) => {
                                if old as u32 == key {
                                    dup.store(true, Relaxed);
                                }
                            }
                        }
                        s = next_slot(s, capacity);
                    }
                    overflow.store(true, Relaxed);
                }
                TableLayout::Perfect { min, max } => match perfect_slot(key, min, max - min + 1) {
                    Some(s) => {
                        if slots[s as usize]
                            .compare_exchange(EMPTY, word, Relaxed, Relaxed)
                            .is_err()
                        {
                            dup.store(true, Relaxed);
                        }
                    }
                    None => overflow.store(true, Relaxed),
                },
            }
        });
        let rows = rows.into_inner();
        if sentinel.into_inner() {
            return Err(Error::invalid(format!(
                "hash table insert: key {EMPTY_KEY} (u32::MAX) is reserved to mark empty slots \
                 and cannot be a key"
            )));
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
    pub fn for_each_match(&self, key: u32, mut f: impl FnMut(u32)) {
        if key == EMPTY_KEY {
            return;
        }
        match self.layout {
            TableLayout::Linear { capacity } => {
                let mut s = home_slot(key, capacity);
                for _ in 0..capacity {
                    let w = self.slots[s as usize].load(Relaxed);
                    if w as u32 == EMPTY_KEY {
                        return;
                    }
                    if w as u32 == key {
                        f((w >> 32) as u32);
                        if !self.duplicates {
                            return;
                        }
                    }
                    s = next_slot(s, capacity);
                }
            }
            TableLayout::Perfect { min, max } => {
                if let Some(s) = perfect_slot(key, min, max - min + 1) {
                    let w = self.slots[s as usize].load(Relaxed);
                    if w as u32 == key {
                        f((w >> 32) as u32);
                    }
                }
            }
        }
    }
}

/// `(probe rows, payloads)` of every match, ordered by probe row (the matches of one row in
/// table order), as [`crate::ops::join`] returns them.
pub fn join(table: &CpuHashTable, probe_keys: &[u32]) -> (Vec<u32>, Vec<u32>) {
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
pub fn join_sum(table: &CpuHashTable, keys: &[u32], values: &[u32]) -> Result<JoinSum> {
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
pub fn semi_join(set_keys: &[u32], probe_keys: &[u32]) -> Result<Vec<u32>> {
    if set_keys.contains(&EMPTY_KEY) {
        return Err(Error::invalid(format!(
            "hash table insert: key {EMPTY_KEY} (u32::MAX) is reserved to mark empty slots and \
             cannot be a key"
        )));
    }
    let set: std::collections::HashSet<u32> = set_keys.iter().copied().collect();
    Ok(probe_keys
        .par_iter()
        .enumerate()
        .filter(|(_, k)| set.contains(k))
        .map(|(i, _)| i as u32)
        .collect())
}
