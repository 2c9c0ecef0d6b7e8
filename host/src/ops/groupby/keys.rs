//! The key a GPU group-by groups by: one `u32` or `i32` column as it is, or several columns
//! (and `i64` ones) packed into one `u32` or `u64` key per row (kernels in
//! `tessera_kernels::ops::groupby_keys`). A packed key holds each column's offset from its
//! least value in as many bits as the column's range needs, the first column highest, so that
//! its unsigned order is the columns' lexicographic order and one group per packed key is one
//! group per composite key. Keys of up to 32 bits take every variant; wider ones, up to 64,
//! the sort-based one.
use tessera_kernels::ops::groupby_keys::{
    GROUPBY_KEY_PACK32, GROUPBY_KEY_PACK64, GROUPBY_KEY_RANGE, GROUPBY_MAX_KEYS, KeyPackParams,
    key_type, unordered_key,
};

use super::records::{GpuKey, ptr};
use super::{DeviceKeyColumn, ResultColumn};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, Gpu, PodBuffer, collect_indexed, grid_per_sm};

/// One key column's place in a packed key: its type, least ordered value, shift and width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyField {
    ty: u32,
    min: u64,
    shift: u32,
    width: u32,
}

impl KeyField {
    /// This column's bits of a packed key, from the column's ordered value (a constant
    /// column's offset is 0, whatever its shift).
    pub(crate) fn pack(&self, ordered: u64) -> u64 {
        (ordered - self.min).wrapping_shl(self.shift)
    }
}

/// The packed key's layout, which the GPU's packing and the CPU's sort share: for each column
/// (its type and its least and greatest ordered value, `(u64::MAX, 0)` for no rows) its offset
/// from the least in as many bits as its range needs, the first column highest; and the bits
/// of the whole key.
pub(crate) fn key_layout(columns: impl Iterator<Item = (u32, u64, u64)>) -> (Vec<KeyField>, u32) {
    let mut fields: Vec<KeyField> = columns
        .map(|(ty, lo, hi)| {
            let (min, width) = if lo > hi {
                (0, 0)
            } else {
                (lo, 64 - (hi - lo).leading_zeros())
            };
            KeyField {
                ty,
                min,
                shift: 0,
                width,
            }
        })
        .collect();
    let total = fields.iter().map(|f| f.width).sum();
    let mut shift = total;
    for f in &mut fields {
        shift -= f.width;
        f.shift = shift;
    }
    (fields, total)
}

/// How a group's key bits become its key columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum KeyDecode {
    /// One `u32` column.
    U32,
    /// One `i32` column (its bits).
    I32,
    /// Packed columns, first column first.
    Packed(Vec<KeyField>),
}

impl KeyDecode {
    /// What the key columns' types alone say: right for a direct key, and for a packed one
    /// with no rows.
    pub(super) fn of_types(keys: &[DeviceKeyColumn]) -> Self {
        match keys {
            [DeviceKeyColumn::U32(_)] => KeyDecode::U32,
            [DeviceKeyColumn::I32(_)] => KeyDecode::I32,
            _ => KeyDecode::Packed(
                keys.iter()
                    .map(|&c| KeyField {
                        ty: type_of(c),
                        min: 0,
                        shift: 0,
                        width: 0,
                    })
                    .collect(),
            ),
        }
    }

    /// The key columns of `g` groups, group `i`'s key bits `bits(i)`.
    pub(super) fn columns(
        &self,
        g: usize,
        bits: impl Fn(usize) -> u64 + Sync + Send,
    ) -> Vec<ResultColumn> {
        match self {
            KeyDecode::U32 => vec![ResultColumn::U32(collect_indexed(g, |i| bits(i) as u32))],
            KeyDecode::I32 => vec![ResultColumn::I32(collect_indexed(g, |i| {
                bits(i) as u32 as i32
            }))],
            KeyDecode::Packed(fields) => fields
                .iter()
                .map(|&f| {
                    let mask = if f.width == 64 {
                        u64::MAX
                    } else {
                        (1u64 << f.width) - 1
                    };
                    let word = |i: usize| {
                        unordered_key(
                            f.ty,
                            (bits(i).checked_shr(f.shift).unwrap_or(0) & mask) + f.min,
                        )
                    };
                    match f.ty {
                        key_type::U32 => ResultColumn::U32(collect_indexed(g, |i| word(i) as u32)),
                        key_type::I32 => {
                            ResultColumn::I32(collect_indexed(g, |i| word(i) as u32 as i32))
                        }
                        _ => ResultColumn::I64(collect_indexed(g, |i| word(i) as i64)),
                    }
                })
                .collect(),
        }
    }
}

/// The kernels' type code of a key column.
fn type_of(c: DeviceKeyColumn) -> u32 {
    match c {
        DeviceKeyColumn::U32(_) => key_type::U32,
        DeviceKeyColumn::I32(_) => key_type::I32,
        DeviceKeyColumn::I64(_) => key_type::I64,
    }
}

/// Refuses more key columns than a packed key takes (before any work).
pub(super) fn check_key_count(name: &str, keys: &[DeviceKeyColumn]) -> Result<()> {
    if keys.len() > GROUPBY_MAX_KEYS {
        return Err(Error::invalid(format!(
            "{name}: {} key columns, more than the {GROUPBY_MAX_KEYS} a GPU grouping takes; \
             group by fewer columns (or combine some first)",
            keys.len()
        )));
    }
    Ok(())
}

/// The key a variant groups by: a column of the input, or the packed keys it owns.
pub(super) enum PreparedKey<'a> {
    /// One `u32` or `i32` key column, as it is.
    Direct(GpuKey<'a>),
    /// Packed keys of up to 32 bits.
    Packed32(DeviceColumn<u32>),
    /// Packed keys of 33 to 64 bits.
    Packed64(DeviceColumn<u64>),
}

impl PreparedKey<'_> {
    /// The key column the variant reads.
    pub(super) fn key(&self) -> GpuKey<'_> {
        match self {
            PreparedKey::Direct(k) => *k,
            PreparedKey::Packed32(c) => GpuKey::U32(c),
            PreparedKey::Packed64(c) => GpuKey::U64(c),
        }
    }
}

/// The key of `n > 0` rows of `keys` (checked: same lengths, at most
/// [`GROUPBY_MAX_KEYS`]) and how its bits decode: one `u32` or `i32` column as it is; else
/// the columns' ranges (one read of them, one synchronization), then one pass packing them.
/// An `Err` naming the columns' widths when their ranges need more than 64 bits together.
pub(super) fn prepare<'a>(
    gpu: &Gpu,
    name: &str,
    keys: &[DeviceKeyColumn<'a>],
    n: usize,
) -> Result<(PreparedKey<'a>, KeyDecode)> {
    match keys {
        [DeviceKeyColumn::U32(c)] => {
            return Ok((PreparedKey::Direct(GpuKey::U32(c)), KeyDecode::U32));
        }
        [DeviceKeyColumn::I32(c)] => {
            return Ok((PreparedKey::Direct(GpuKey::I32(c)), KeyDecode::I32));
        }
        _ => {}
    }
    let mut params = KeyPackParams {
        keys: keys.len() as u32,
        n: n as u32,
        ..KeyPackParams::default()
    };
    for (i, &c) in keys.iter().enumerate() {
        params.columns[i] = match c {
            DeviceKeyColumn::U32(c) => ptr(gpu, c),
            DeviceKeyColumn::I32(c) => ptr(gpu, c),
            DeviceKeyColumn::I64(c) => ptr(gpu, c),
        };
        params.types[i] = type_of(c);
    }
    let mut range = gpu.upload(&[u64::MAX, 0].repeat(keys.len()))?;
    let buf = PodBuffer::upload(gpu, std::slice::from_ref(&params))?;
    let cfg = grid_per_sm(gpu, &GROUPBY_KEY_RANGE, n, 8)?;
    // SAFETY: the parameters name `keys.len()` columns of `n` rows of their types; two words
    // per column, set to the neutral values; any grid size.
    unsafe { gpu.launch(&GROUPBY_KEY_RANGE, cfg, (&buf, &mut range)) }?;
    let range = range.to_vec(gpu)?;
    let columns = range.chunks(2).zip(params.types);
    let (fields, total) = key_layout(columns.map(|(mm, ty)| (ty, mm[0], mm[1])));
    if total > 64 {
        let each: Vec<String> = fields.iter().map(|f| f.width.to_string()).collect();
        return Err(Error::invalid(format!(
            "{name}: the key columns' ranges need {} = {total} bits together, more than the 64 \
             a GPU grouping packs them into; group by fewer or narrower key columns, or with \
             cpu::group_by",
            each.join(" + ")
        )));
    }
    for (i, f) in fields.iter().enumerate() {
        (params.mins[i], params.shifts[i]) = (f.min, f.shift);
    }
    let buf = PodBuffer::upload(gpu, std::slice::from_ref(&params))?;
    let key = if total <= 32 {
        let mut out = gpu.scratch::<u32>(n)?;
        let cfg = grid_per_sm(gpu, &GROUPBY_KEY_PACK32, n, 8)?;
        // SAFETY: as above; `n` outputs; the shifts fit every key in 32 bits.
        unsafe { gpu.launch(&GROUPBY_KEY_PACK32, cfg, (&buf, &mut out)) }?;
        PreparedKey::Packed32(out)
    } else {
        let mut out = gpu.scratch::<u64>(n)?;
        let cfg = grid_per_sm(gpu, &GROUPBY_KEY_PACK64, n, 8)?;
        // SAFETY: as above; `n` outputs.
        unsafe { gpu.launch(&GROUPBY_KEY_PACK64, cfg, (&buf, &mut out)) }?;
        PreparedKey::Packed64(out)
    };
    Ok((key, KeyDecode::Packed(fields)))
}
