//! Group-by and aggregation (issue 22): what a grouping reads and computes, shared by the GPU
//! variants and the CPU implementation ([`crate::cpu::group_by`]), and the checks every one of
//! them makes before any work.
//!
//! A grouping reads N key columns (the composite key, `u32`, `i32` or `i64` each) and K value
//! columns (`u32`, `i32`, `f32`, `f64`) of the same length, and computes a list of aggregates,
//! each a reduction of one value column ([`Agg`]). Its result ([`Grouped`]) holds one row per
//! distinct composite key, ordered by key (lexicographically over the key columns, each in its
//! type's order), with the key columns and one column per aggregate.
//!
//! Result types and semantics:
//! * `Count`: `u64`, the group's rows.
//! * `Sum`: 64-bit: `u32` values sum into `u64`, `i32` into `i64` (neither can overflow: a
//!   column holds fewer than 2^32 values); `f32` and `f64` into `f64`, added in row order (a
//!   GPU variant adds in another order, so float sums agree to rounding).
//! * `Min`, `Max`: the value column's type. For floats, in the total order in which every NaN
//!   (either sign) lies above `+inf`, as DuckDB and PostgreSQL order them: `Max` is NaN when
//!   any value of the group is, `Min` only when all are; a NaN result is the canonical quiet
//!   NaN. `-0.0` lies below `+0.0`.
//! * `Mean`: `f64`, the exact sum (`f64` for float values) divided by the count.
//!
//! Empty input gives an empty result. Zero key columns, zero aggregates, columns of different
//! lengths and an aggregate of a value column that is not there are errors that name what is
//! wrong.
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, MAX_COLUMN_LEN};

mod choose;
mod hash;
mod keys;
pub(crate) use keys::key_layout;
mod ordered;
mod partition;
#[cfg(feature = "testing")]
pub(crate) use partition::joint_bins;
mod records;
mod sort;

pub use choose::{GroupByChoice, GroupByVariant, group_by, group_by_device};
pub use hash::{
    SampleEstimate, group_by_hash, group_by_hash_device, groups_from_sample,
    groups_from_sample_counts, groups_from_sample_keys,
};
pub use ordered::{
    AtomicTarget, DeviceOrderedAggregates, OrderedAggregates, OrderedLoads, OrderedPipeline,
    OrderedPlan, OrderedVariant, aggregate_sorted,
};
pub use partition::{group_by_partitioned, group_by_partitioned_device};
pub use records::DeviceGrouped;
pub use sort::{group_by_sort, group_by_sort_device};
/// Rows the group-by's estimate samples, spread evenly (row `j * n / s` for `j < s`, where
/// `s` is the smaller of this and `n`).
pub use tessera_kernels::ops::groupby::GROUPBY_SAMPLES;

/// A key column of a grouping.
#[derive(Clone, Copy, Debug)]
pub enum KeyColumn<'a> {
    /// `u32` keys.
    U32(&'a [u32]),
    /// `i32` keys.
    I32(&'a [i32]),
    /// `i64` keys.
    I64(&'a [i64]),
}

impl KeyColumn<'_> {
    /// Rows in the column.
    pub fn len(&self) -> usize {
        match self {
            KeyColumn::U32(c) => c.len(),
            KeyColumn::I32(c) => c.len(),
            KeyColumn::I64(c) => c.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A value column of a grouping.
#[derive(Clone, Copy, Debug)]
pub enum ValueColumn<'a> {
    /// `u32` values.
    U32(&'a [u32]),
    /// `i32` values.
    I32(&'a [i32]),
    /// `f32` values.
    F32(&'a [f32]),
    /// `f64` values.
    F64(&'a [f64]),
}

impl ValueColumn<'_> {
    /// Rows in the column.
    pub fn len(&self) -> usize {
        match self {
            ValueColumn::U32(c) => c.len(),
            ValueColumn::I32(c) => c.len(),
            ValueColumn::F32(c) => c.len(),
            ValueColumn::F64(c) => c.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A key column of a grouping on the GPU.
#[derive(Clone, Copy, Debug)]
pub enum DeviceKeyColumn<'a> {
    /// `u32` keys.
    U32(&'a DeviceColumn<u32>),
    /// `i32` keys.
    I32(&'a DeviceColumn<i32>),
    /// `i64` keys.
    I64(&'a DeviceColumn<i64>),
}

impl DeviceKeyColumn<'_> {
    /// Rows in the column.
    pub fn len(&self) -> usize {
        match self {
            DeviceKeyColumn::U32(c) => c.len(),
            DeviceKeyColumn::I32(c) => c.len(),
            DeviceKeyColumn::I64(c) => c.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A value column of a grouping on the GPU.
#[derive(Clone, Copy, Debug)]
pub enum DeviceValueColumn<'a> {
    /// `u32` values.
    U32(&'a DeviceColumn<u32>),
    /// `i32` values.
    I32(&'a DeviceColumn<i32>),
    /// `f32` values.
    F32(&'a DeviceColumn<f32>),
    /// `f64` values.
    F64(&'a DeviceColumn<f64>),
}

impl DeviceValueColumn<'_> {
    /// Rows in the column.
    pub fn len(&self) -> usize {
        match self {
            DeviceValueColumn::U32(c) => c.len(),
            DeviceValueColumn::I32(c) => c.len(),
            DeviceValueColumn::F32(c) => c.len(),
            DeviceValueColumn::F64(c) => c.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An aggregate: a reduction of a value column (its index among the grouping's value
/// columns), or the group's row count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agg {
    /// The group's rows (`COUNT(*)`).
    Count,
    /// The sum of the column's values.
    Sum(usize),
    /// The least value.
    Min(usize),
    /// The greatest value.
    Max(usize),
    /// The mean of the values.
    Mean(usize),
}

impl Agg {
    /// The value column the aggregate reads, if any.
    pub fn column(self) -> Option<usize> {
        match self {
            Agg::Count => None,
            Agg::Sum(c) | Agg::Min(c) | Agg::Max(c) | Agg::Mean(c) => Some(c),
        }
    }

    /// The aggregate as SQL writes it, e.g. `sum(v1)` (value columns named `v0`, `v1`, ...).
    pub fn name(self) -> String {
        match self {
            Agg::Count => "count(*)".into(),
            Agg::Sum(c) => format!("sum(v{c})"),
            Agg::Min(c) => format!("min(v{c})"),
            Agg::Max(c) => format!("max(v{c})"),
            Agg::Mean(c) => format!("mean(v{c})"),
        }
    }
}

/// A column of a grouping's result.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultColumn {
    /// `u32` items.
    U32(Vec<u32>),
    /// `i32` items.
    I32(Vec<i32>),
    /// `i64` items.
    I64(Vec<i64>),
    /// `u64` items.
    U64(Vec<u64>),
    /// `f32` items.
    F32(Vec<f32>),
    /// `f64` items.
    F64(Vec<f64>),
}

impl ResultColumn {
    /// Items in the column.
    pub fn len(&self) -> usize {
        match self {
            ResultColumn::U32(c) => c.len(),
            ResultColumn::I32(c) => c.len(),
            ResultColumn::I64(c) => c.len(),
            ResultColumn::U64(c) => c.len(),
            ResultColumn::F32(c) => c.len(),
            ResultColumn::F64(c) => c.len(),
        }
    }

    /// Whether the column is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A grouping's result: one row per distinct composite key, ordered by key.
#[derive(Clone, Debug, PartialEq)]
pub struct Grouped {
    /// The key columns, in the grouping's order and types.
    pub keys: Vec<ResultColumn>,
    /// One column per aggregate, in the grouping's order (types as the module says).
    pub aggregates: Vec<ResultColumn>,
}

impl Grouped {
    /// The number of groups.
    pub fn groups(&self) -> usize {
        self.keys.first().map_or(0, ResultColumn::len)
    }
}

/// Checks a grouping before any work: at least one key column and one aggregate, every column
/// of the same length (at most [`MAX_COLUMN_LEN`]), every aggregate's column present. Returns
/// the row count.
pub fn check_group_by(keys: &[KeyColumn], values: &[ValueColumn], aggs: &[Agg]) -> Result<usize> {
    let keys: Vec<usize> = keys.iter().map(KeyColumn::len).collect();
    let values: Vec<usize> = values.iter().map(ValueColumn::len).collect();
    check_shape(&keys, &values, aggs)
}

/// [`check_group_by`] on the columns' lengths.
pub(crate) fn check_shape(keys: &[usize], values: &[usize], aggs: &[Agg]) -> Result<usize> {
    let Some(&rows) = keys.first() else {
        return Err(Error::invalid(
            "group_by: no key column; pass at least one (a constant column groups every row \
             into one group)",
        ));
    };
    if aggs.is_empty() {
        return Err(Error::invalid(
            "group_by: no aggregate; ask for at least one, e.g. Agg::Count",
        ));
    }
    if rows > MAX_COLUMN_LEN {
        return Err(Error::invalid(format!(
            "group_by: {rows} rows, more than a column holds ({MAX_COLUMN_LEN}); split the input"
        )));
    }
    let lens = keys
        .iter()
        .map(|&k| ("key", k))
        .chain(values.iter().map(|&v| ("value", v)));
    for (i, (what, len)) in lens.enumerate() {
        if len != rows {
            let i = if what == "key" { i } else { i - keys.len() };
            return Err(Error::invalid(format!(
                "group_by: {what} column {i} has {len} rows, key column 0 has {rows}; every \
                 column must have the same rows"
            )));
        }
    }
    for &a in aggs {
        if let Some(c) = a.column()
            && c >= values.len()
        {
            return Err(Error::invalid(format!(
                "group_by: {} reads value column {c}, but there are {} value columns",
                a.name(),
                values.len()
            )));
        }
    }
    Ok(rows)
}
