//! Multi-key top-k (thesis §4.5.6, the KV, KKV and KKKV tuples): the `k` best rows by one to
//! three key columns compared lexicographically, with a value column gathered for them. As
//! the thesis advises, the kernels move row ids, and the tuples are assembled at the end from
//! the chosen rows.
//!
//! **Order.** Rows compare by their first key, then the second, then the third, each as
//! [`TopKey::rank`] orders it and all by one [`TopKOrder`]; rows equal on every key keep the
//! smaller row first. The result is one exact list, the CPU's
//! ([`crate::cpu::top_k_multi`]) bit for bit.
//!
//! **Paths** ([`MultiPath`]). One key column is the single-key [`super::top_k`] and a gather of
//! the values. With more:
//! 1. *Threshold*: the single-key kernels' sample select estimates a threshold on the first
//!    key that about `2k` rows reach, made inclusive (rows tied at it are kept); the threshold
//!    filter keeps, in one read of the first key alone, the rows reaching it (a superset of the
//!    answer when at least `k` do); the generalized select of
//!    [`tessera_kernels::ops::topk_multi`] then chooses exactly `k` of those candidates,
//!    reading the other keys only for them.
//! 2. *Exact threshold*, when the sample misled (fewer than `k` rows reached it, or more than
//!    the candidates' room): the exact `k`-th best first key by [`super::top_k`], then the same
//!    filter and select.
//! 3. *All rows*, when even the exact threshold keeps too many (heavy ties on the first key,
//!    all first keys equal): the generalized select over every row, without a candidate
//!    buffer. Always exact; it reads the keys once per digit round.
use tessera_kernels::ops::topk::{self as kt, Candidate, SelectState, TopKState};
use tessera_kernels::ops::topk_multi::{
    self as km, LEVELS, MAX_KEYS, MultiEmitArgs, MultiHistArgs, start_states,
};
use tessera_kernels::spec::KernelSpec;

use super::buffers::grow;
use super::select::{Feed, select_sample};
use super::{SamplePlan, TopKOrder, TopKey, check_top_k};
use crate::error::{Error, Result};
use crate::ops::check_same_len;
use crate::runtime::{DeviceColumn, DeviceItem, Gpu, PodBuffer, bits_of, grid_per_sm};

/// Key types of the multi-key top-k: `f32`, `f64`, `i32`, `u32` (every [`TopKey`]). Sealed
/// through [`TopKey`].
pub trait MultiKey: TopKey {
    /// A level round of the generalized select.
    #[doc(hidden)]
    const MULTI_HIST: KernelSpec<MultiHistArgs<Self>>;
    /// The emit of the chosen rows.
    #[doc(hidden)]
    const MULTI_EMIT: KernelSpec<MultiEmitArgs<Self>>;
}

macro_rules! multi_key {
    ($($t:ty: $h:ident, $e:ident;)*) => {$(
        impl MultiKey for $t {
            const MULTI_HIST: KernelSpec<MultiHistArgs<$t>> = km::$h;
            const MULTI_EMIT: KernelSpec<MultiEmitArgs<$t>> = km::$e;
        }
    )*};
}
multi_key! {
    f32: TOPK_MULTI_HIST_F32, TOPK_MULTI_EMIT_F32;
    f64: TOPK_MULTI_HIST_F64, TOPK_MULTI_EMIT_F64;
    i32: TOPK_MULTI_HIST_I32, TOPK_MULTI_EMIT_I32;
    u32: TOPK_MULTI_HIST_U32, TOPK_MULTI_EMIT_U32;
}

/// The result of a multi-key top-k: the chosen rows best first, with their keys and values.
#[derive(Clone, Debug, PartialEq)]
pub struct TopKMultiRows<K, V> {
    /// `keys[c][i]`: key column `c` of the `i`-th best row.
    pub keys: Vec<Vec<K>>,
    /// The value of each chosen row.
    pub values: Vec<V>,
    /// The rows, best first.
    pub rows: Vec<u32>,
}

/// How a multi-key top-k found its rows (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiPath {
    /// One key column: the single-key top-k.
    SingleKey,
    /// The sampled threshold's candidates.
    Threshold,
    /// The exact threshold's candidates.
    ExactThreshold,
    /// The select over every row.
    AllRows,
}

/// Where the rows of the generalized select come from.
#[derive(Clone, Copy)]
enum Mode {
    /// Candidates of the threshold estimated from a sample.
    Sample(SamplePlan),
    /// Candidates of an exact threshold: the first key's rank and the candidates' room.
    Exact { rank: u64, cap: usize },
    /// Every row.
    AllRows,
}

/// A reusable multi-key top-k: device buffers grown to the largest call so far.
pub struct TopKMulti {
    /// The first key's threshold select, the filter's counts and the levels' selects.
    states: PodBuffer<TopKState>,
    hist: DeviceColumn<u32>,
    sample: DeviceColumn<u64>,
    cands: PodBuffer<Candidate>,
    /// The filter's per-tile tie counts (written only for thresholds that tie, which the
    /// inclusive threshold never does; sized all the same).
    tie_counts: DeviceColumn<u32>,
    chosen: DeviceColumn<u32>,
    words: DeviceColumn<u32>,
    path: Option<MultiPath>,
}

impl TopKMulti {
    /// Small buffers; they grow with the calls.
    pub fn new(gpu: &Gpu) -> Result<TopKMulti> {
        Ok(TopKMulti {
            states: PodBuffer::zeroed(gpu, LEVELS)?,
            hist: gpu.zeros(kt::HIST_WORDS)?,
            sample: gpu.zeros(1)?,
            cands: PodBuffer::zeroed(gpu, 1)?,
            tie_counts: gpu.zeros(1)?,
            chosen: gpu.zeros(1)?,
            words: gpu.zeros(1)?,
            path: None,
        })
    }

    /// The path the last successful call took.
    pub fn path(&self) -> Option<MultiPath> {
        self.path
    }

    /// The `k` best rows of `keys` (1 to 3 columns of equal length, compared
    /// lexicographically, first key most significant) by `order`, best first, with their keys
    /// and their items of `values` (as long as the keys). `Err` before any work for 0 or more
    /// than 3 key columns, columns of different lengths, or `k` outside `1..=n`.
    pub fn run<K: MultiKey, V: DeviceItem>(
        &mut self,
        gpu: &Gpu,
        keys: &[&DeviceColumn<K>],
        values: &DeviceColumn<V>,
        k: usize,
        order: TopKOrder,
    ) -> Result<TopKMultiRows<K, V>> {
        let lens: Vec<usize> = keys.iter().map(|c| c.len()).collect();
        check_top_k_multi(&lens, values.len(), k)?;
        self.path = None;
        if let [key] = keys {
            let top = super::top_k(gpu, key, k, order)?;
            let rows = gpu.upload(&top.rows)?;
            let values = gather(gpu, &mut self.words, values, &rows)?;
            self.path = Some(MultiPath::SingleKey);
            return Ok(TopKMultiRows {
                keys: vec![top.keys],
                values,
                rows: top.rows,
            });
        }
        let path = self.choose_rows(gpu, keys, k, order)?;
        let rows = self.chosen.to_vec(gpu)?;
        let mut cols = Vec::with_capacity(keys.len());
        for key in keys {
            cols.push(gather(gpu, &mut self.words, key, &self.chosen)?);
        }
        let vals = gather(gpu, &mut self.words, values, &self.chosen)?;
        self.path = Some(path);
        Ok(order_tuples(&cols, &vals, &rows, order))
    }

    /// Leaves the `k` best rows, unordered, in `self.chosen`: by the sampled threshold, the
    /// exact one, or over every row, the first that holds.
    fn choose_rows<K: MultiKey>(
        &mut self,
        gpu: &Gpu,
        keys: &[&DeviceColumn<K>],
        k: usize,
        order: TopKOrder,
    ) -> Result<MultiPath> {
        let n = keys[0].len();
        let plan = SamplePlan::new(n, k);
        if self.attempt(gpu, keys, k, order, Mode::Sample(plan))? {
            return Ok(MultiPath::Threshold);
        }
        let first = super::top_k(gpu, keys[0], k, order)?;
        let kth = first.keys[k - 1];
        let mode = Mode::Exact {
            rank: kt::rank_of(kth, order == TopKOrder::Smallest),
            cap: plan.capacity.max(4 * k + 4096).min(n),
        };
        if self.attempt(gpu, keys, k, order, mode)? {
            return Ok(MultiPath::ExactThreshold);
        }
        if self.attempt(gpu, keys, k, order, Mode::AllRows)? {
            return Ok(MultiPath::AllRows);
        }
        Err(Error::invalid(
            "top_k_multi: the select over every row chose a wrong number of rows",
        ))
    }

    /// One try of `mode`: the threshold and the filter (not for every row), the levels'
    /// rounds and the emit, then one read of the counts. `false` when the threshold kept
    /// fewer than `k` rows or more than the candidates' room.
    fn attempt<K: MultiKey>(
        &mut self,
        gpu: &Gpu,
        keys: &[&DeviceColumn<K>],
        k: usize,
        order: TopKOrder,
        mode: Mode,
    ) -> Result<bool> {
        let n = keys[0].len();
        let width = 8 * size_of::<K>() as u32;
        let smallest = order == TopKOrder::Smallest;
        let j = match mode {
            Mode::Sample(plan) => plan.j,
            _ => k,
        };
        for (l, st) in start_states(j as u32, width, k as u32).iter().enumerate() {
            self.states.write(gpu, l, st)?;
        }
        grow(gpu, &mut self.chosen, k)?;
        let cap = match mode {
            Mode::Sample(plan) => {
                self.sample_threshold(gpu, keys[0], smallest, &plan)?;
                Some(plan.capacity.min(n))
            }
            Mode::Exact { rank, cap } => {
                let mut st = start_states(j as u32, width, k as u32)[0];
                st.ranks = SelectState {
                    prefix_rank: rank,
                    resolved: 1,
                    last_shift: 32,
                    ..st.ranks
                };
                self.states.write(gpu, 0, &st)?;
                Some(cap)
            }
            Mode::AllRows => None,
        };
        if let Some(cap) = cap {
            self.filter(gpu, keys[0], smallest, cap)?;
        }
        self.select(gpu, keys, smallest, cap, k)?;
        let counts = self.states.read(gpu, 0)?.counts;
        let (passed, emitted) = (counts.passed as usize, counts.emitted as usize);
        if let Some(cap) = cap
            && (passed < k || passed > cap)
        {
            return Ok(false);
        }
        if emitted != k {
            return Err(Error::invalid(format!(
                "top_k_multi: the select chose {emitted} rows, not {k}"
            )));
        }
        Ok(true)
    }

    /// The sample's `j`-th best first-key rank in the first state's rank select, made
    /// inclusive.
    fn sample_threshold<K: MultiKey>(
        &mut self,
        gpu: &Gpu,
        first: &DeviceColumn<K>,
        smallest: bool,
        plan: &SamplePlan,
    ) -> Result<()> {
        Feed::column(first).sample(gpu, plan, smallest, &mut self.sample)?;
        select_sample(
            gpu,
            &self.sample,
            plan.samples,
            8 * size_of::<K>() as u32,
            &mut self.states,
            &mut self.hist,
        )?;
        let one = grid_per_sm(gpu, &km::TOPK_MULTI_INCLUSIVE, 1, 1)?;
        // SAFETY: one thread updates the valid first state.
        unsafe { gpu.launch(&km::TOPK_MULTI_INCLUSIVE, one, (&mut self.states,)) }
    }

    /// The threshold filter of the single-key top-k over the first key: the rows whose
    /// first key reaches the first state's (inclusive) threshold, up to `cap` of them.
    fn filter<K: MultiKey>(
        &mut self,
        gpu: &Gpu,
        first: &DeviceColumn<K>,
        smallest: bool,
        cap: usize,
    ) -> Result<()> {
        if self.cands.len() < cap {
            self.cands = PodBuffer::zeroed(gpu, cap)?;
        }
        let (cands, counts) = (&mut self.cands, &mut self.tie_counts);
        Feed::column(first).filter(gpu, smallest, &mut self.states, cands, cap, counts)
    }

    /// The levels' rounds over the candidates (`cap` of room; `None`: every row), then the
    /// emit of the chosen rows into `self.chosen`.
    fn select<K: MultiKey>(
        &mut self,
        gpu: &Gpu,
        keys: &[&DeviceColumn<K>],
        smallest: bool,
        cap: Option<usize>,
        k: usize,
    ) -> Result<()> {
        let n = keys[0].len();
        let (k1, k2, k3) = (keys[0], keys.get(1).copied(), keys.get(2).copied());
        let nkeys = keys.len() as u32;
        let wide = size_of::<K>() == 8;
        let (smallest, n32, k32) = (smallest as u32, n as u32, k as u32);
        let listed = cap.unwrap_or(n);
        let (cands, cap32) = (cap.map(|_| &self.cands), listed as u32);
        // The parameters both kernels share, then each one's own.
        macro_rules! args {
            ($($own:expr),*) => {
                (k1, k2, k3, &nkeys, &smallest, cands, &cap32, &n32, &mut self.states, $($own),*)
            };
        }
        let grid = grid_per_sm(gpu, &K::MULTI_HIST, listed, 8)?;
        let one = grid_per_sm(gpu, &km::TOPK_MULTI_NEXT, 1, 1)?;
        for level in 0..km::levels(nkeys, wide) {
            let l32 = level as u32;
            if level > 0 {
                // SAFETY: one thread reads and writes the valid states.
                unsafe { gpu.launch(&km::TOPK_MULTI_NEXT, one, (&mut self.states, &l32)) }?;
            }
            for _ in 0..km::rounds(nkeys, wide, level) {
                // SAFETY: `nkeys` columns of `n` keys (checked equal); the candidates hold
                // `cap` (or every row is listed); the states and the histogram (zero between
                // rounds) are valid; any grid size works.
                unsafe { gpu.launch(&K::MULTI_HIST, grid, args!(&l32, &mut self.hist)) }?;
            }
        }
        let grid = grid_per_sm(gpu, &K::MULTI_EMIT, listed, 8)?;
        // SAFETY: as for the rounds; `chosen` holds `k` rows.
        unsafe { gpu.launch(&K::MULTI_EMIT, grid, args!(&mut self.chosen, &k32)) }
    }
}

/// The tuples of `rows` (keys `cols[c][i]`, values `vals[i]`) ordered best first: by the
/// keys' ranks lexicographically, then the smaller row.
pub(crate) fn order_tuples<K: TopKey, V: Copy>(
    cols: &[Vec<K>],
    vals: &[V],
    rows: &[u32],
    order: TopKOrder,
) -> TopKMultiRows<K, V> {
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    idx.sort_unstable_by_key(|&i| {
        let rank = |c: usize| cols.get(c).map_or(0, |col| order.oriented_rank(col[i]));
        (std::cmp::Reverse([rank(0), rank(1), rank(2)]), rows[i])
    });
    TopKMultiRows {
        keys: cols
            .iter()
            .map(|col| idx.iter().map(|&i| col[i]).collect())
            .collect(),
        values: idx.iter().map(|&i| vals[i]).collect(),
        rows: idx.iter().map(|&i| rows[i]).collect(),
    }
}

/// The multi-key top-k of `k` rows by `keys` with `values` on the GPU (see
/// [`TopKMulti::run`]).
pub fn top_k_multi<K: MultiKey, V: DeviceItem>(
    gpu: &Gpu,
    keys: &[&DeviceColumn<K>],
    values: &DeviceColumn<V>,
    k: usize,
    order: TopKOrder,
) -> Result<TopKMultiRows<K, V>> {
    TopKMulti::new(gpu)?.run(gpu, keys, values, k, order)
}

/// Checks a multi-key top-k before any work: 1 to [`MAX_KEYS`] key columns of one length
/// `n`, values of that length, `1 <= k <= n`.
pub(crate) fn check_top_k_multi(key_lens: &[usize], values_len: usize, k: usize) -> Result<()> {
    let op = "top_k_multi";
    let Some(&n) = key_lens.first() else {
        return Err(Error::invalid(format!(
            "{op}: no key columns; pass 1 to {MAX_KEYS}"
        )));
    };
    if key_lens.len() > MAX_KEYS {
        return Err(Error::invalid(format!(
            "{op}: {} key columns; pass 1 to {MAX_KEYS}",
            key_lens.len()
        )));
    }
    for (c, &len) in key_lens.iter().enumerate().skip(1) {
        check_same_len(op, &format!("key column {c}"), len, n)?;
    }
    check_same_len(op, "the value column", values_len, n)?;
    check_top_k(n, k)
}

/// `col`'s items at `rows`, in that order, through `words` (grown to fit).
fn gather<T: DeviceItem>(
    gpu: &Gpu,
    words: &mut DeviceColumn<u32>,
    col: &DeviceColumn<T>,
    rows: &DeviceColumn<u32>,
) -> Result<Vec<T>> {
    let (k, per) = (rows.len(), size_of::<T>() / 4);
    grow(gpu, words, k * per)?;
    let (k32, per32) = (k as u32, per as u32);
    let cfg = grid_per_sm(gpu, &km::TOPK_GATHER, k * per, 8)?;
    // SAFETY: `rows` holds `k` rows of `col` (chosen among its items); `words` holds `k * per`
    // words, and `col`'s items are `per` words each.
    unsafe {
        gpu.launch(
            &km::TOPK_GATHER,
            cfg,
            (&bits_of(&col.buf), rows, &k32, &per32, &mut *words),
        )
    }?;
    let bits = words.to_vec(gpu)?;
    let mut items = vec![T::default(); k];
    bytemuck::cast_slice_mut::<T, u8>(&mut items).copy_from_slice(bytemuck::cast_slice(&bits));
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_checked() {
        assert!(check_top_k_multi(&[], 0, 1).is_err());
        let e = check_top_k_multi(&[5, 5, 5, 5], 5, 1).unwrap_err();
        assert!(e.to_string().contains("4 key columns"), "{e}");
        let e = check_top_k_multi(&[5, 4], 5, 1).unwrap_err();
        assert!(e.to_string().contains("key column 1"), "{e}");
        let e = check_top_k_multi(&[5, 5], 4, 1).unwrap_err();
        assert!(e.to_string().contains("value column"), "{e}");
        assert!(check_top_k_multi(&[5], 5, 0).is_err());
        assert!(check_top_k_multi(&[5], 5, 6).is_err());
        assert!(check_top_k_multi(&[5, 5, 5], 5, 5).is_ok());
    }

    #[test]
    fn tuples_order_by_keys_then_row() {
        let cols = vec![vec![1.0f32, 2.0, 1.0, 2.0], vec![0.0, -1.0, 5.0, -1.0]];
        let by = |order| order_tuples(&cols, &[10u32, 11, 12, 13], &[4, 1, 0, 3], order);
        let t = by(TopKOrder::Largest);
        assert_eq!(t.rows, [1, 3, 0, 4]);
        assert_eq!(t.values, [11, 13, 12, 10]);
        assert_eq!(t.keys[1], [-1.0, -1.0, 5.0, 0.0]);
        assert_eq!(by(TopKOrder::Smallest).rows, [4, 0, 1, 3]);
    }
}
