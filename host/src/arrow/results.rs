//! The operators' inputs and results in Arrow form: group-by key and value columns read from
//! Arrow arrays in place, and each result as a record batch whose columns take over the
//! result's buffers (`into_record_batch`), or are downloaded once (`to_record_batch` of a
//! result on the device).
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, PrimitiveArray, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{Field, Schema};

use super::column::array_of;
use super::{ArrowItem, check_no_nulls, downcast};
use crate::error::{Error, Result};
use crate::ops::{Grouped, KeyColumn, ResultColumn, ValueColumn};
use crate::ops::{JoinPairs, PkJoinRows, TopKRows};
use crate::runtime::Gpu;

/// A record batch of named, null-free columns.
fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), false))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| Error::Data(format!("building an Arrow record batch: {e}")))
}

/// A null-free Arrow array taking over `values`.
fn array<T: ArrowItem>(values: Vec<T>) -> Result<ArrayRef> {
    Ok(Arc::new(array_of(ScalarBuffer::from(values))?))
}

/// The values of a null-free primitive array of `T`.
fn values<'a, T: ArrowItem>(array: &'a dyn Array, what: &str) -> Result<&'a [T]> {
    check_no_nulls(array, what)?;
    let typed: &PrimitiveArray<T::Arrow> = downcast::<T>(array, what)?;
    Ok(typed.values())
}

impl<'a> KeyColumn<'a> {
    /// A key column over an Arrow array's values (no copy): `UInt32`, `Int32` or `Int64`,
    /// without nulls.
    pub fn from_arrow(array: &'a dyn Array) -> Result<KeyColumn<'a>> {
        use arrow_schema::DataType as D;
        const WHAT: &str = "group-by key column";
        Ok(match array.data_type() {
            D::UInt32 => KeyColumn::U32(values(array, WHAT)?),
            D::Int32 => KeyColumn::I32(values(array, WHAT)?),
            D::Int64 => KeyColumn::I64(values(array, WHAT)?),
            t => {
                return Err(Error::invalid(format!(
                    "{WHAT}: the Arrow array is {t}; keys are UInt32, Int32 or Int64: cast \
                     it first (arrow's `cast`)"
                )));
            }
        })
    }
}

impl<'a> ValueColumn<'a> {
    /// A value column over an Arrow array's values (no copy): `UInt32`, `Int32`, `Float32`
    /// or `Float64`, without nulls.
    pub fn from_arrow(array: &'a dyn Array) -> Result<ValueColumn<'a>> {
        use arrow_schema::DataType as D;
        const WHAT: &str = "group-by value column";
        Ok(match array.data_type() {
            D::UInt32 => ValueColumn::U32(values(array, WHAT)?),
            D::Int32 => ValueColumn::I32(values(array, WHAT)?),
            D::Float32 => ValueColumn::F32(values(array, WHAT)?),
            D::Float64 => ValueColumn::F64(values(array, WHAT)?),
            t => {
                return Err(Error::invalid(format!(
                    "{WHAT}: the Arrow array is {t}; values are UInt32, Int32, Float32 or \
                     Float64: cast it first (arrow's `cast`)"
                )));
            }
        })
    }
}

impl ResultColumn {
    /// The column as an Arrow array, taking over its buffer.
    pub fn into_arrow(self) -> Result<ArrayRef> {
        match self {
            ResultColumn::U32(v) => array(v),
            ResultColumn::I32(v) => array(v),
            ResultColumn::I64(v) => array(v),
            ResultColumn::U64(v) => array(v),
            ResultColumn::F32(v) => array(v),
            ResultColumn::F64(v) => array(v),
        }
    }
}

impl Grouped {
    /// The result as a record batch: the key columns, then one column per aggregate, named
    /// by `names` in that order (as many names as columns, else an error).
    pub fn into_record_batch(self, names: &[&str]) -> Result<RecordBatch> {
        let columns = self.keys.len() + self.aggregates.len();
        if names.len() != columns {
            return Err(Error::invalid(format!(
                "Grouped::into_record_batch: {} names for {columns} columns ({} keys, {} \
                 aggregates): name every column",
                names.len(),
                self.keys.len(),
                self.aggregates.len()
            )));
        }
        let arrays = self.keys.into_iter().chain(self.aggregates);
        let named = names
            .iter()
            .zip(arrays)
            .map(|(n, c)| Ok((*n, c.into_arrow()?)))
            .collect::<Result<Vec<_>>>()?;
        batch(named)
    }
}

impl<K: ArrowItem> TopKRows<K> {
    /// The result as a record batch `key` (best first), `row` (`UInt32`), taking over its
    /// buffers.
    pub fn into_record_batch(self) -> Result<RecordBatch> {
        batch(vec![("key", array(self.keys)?), ("row", array(self.rows)?)])
    }
}

impl<K: ArrowItem, A: ArrowItem, B: ArrowItem> PkJoinRows<K, A, B> {
    /// The result as a record batch `key`, `a`, `b`, taking over its buffers.
    pub fn into_record_batch(self) -> Result<RecordBatch> {
        batch(vec![
            ("key", array(self.keys)?),
            ("a", array(self.a)?),
            ("b", array(self.b)?),
        ])
    }
}

impl JoinPairs {
    /// The pairs as a record batch `probe_row`, `payload` (`UInt32` both), one download each.
    pub fn to_record_batch(&self, gpu: &Gpu) -> Result<RecordBatch> {
        batch(vec![
            ("probe_row", Arc::new(self.probe_rows.to_arrow(gpu)?)),
            ("payload", Arc::new(self.payloads.to_arrow(gpu)?)),
        ])
    }
}
