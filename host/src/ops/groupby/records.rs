//! What the GPU group-bys hand back: the groups' records in key order on the device
//! ([`k::record_words`] `u64` words each after a [`k::RECORDS_HEADER`]: key bits, count,
//! accumulator words), and the host result they make.
use cudarc::driver::DevicePtr;
use tessera_kernels::ops::groupby::{self as k, GROUPBY_MAX_AGGS, acc_result, code};
use tessera_kernels::spec::KernelSpec;

use super::keys::{KeyDecode, PreparedKey, check_key_count, prepare};
use super::{Agg, DeviceKeyColumn, DeviceValueColumn, Grouped, ResultColumn, check_shape};
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, DeviceItem, Gpu, append_staged, collect_indexed, grid_per_sm};

/// Groups whose records a variant reads back with its header, in its one copy.
pub(super) const EAGER_GROUPS: usize = 256;

/// The key column a GPU variant groups by (see [`super::keys`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum GpuKey<'a> {
    /// `u32` keys.
    U32(&'a DeviceColumn<u32>),
    /// `i32` keys.
    I32(&'a DeviceColumn<i32>),
    /// `u64` keys (packed, of more than 32 bits).
    U64(&'a DeviceColumn<u64>),
}

/// A GPU grouping checked before any work: its rows, its key columns and its accumulators
/// (their key decoding as the columns' types say, until [`Checked::key`] packs them).
pub(super) struct Checked<'a, 'k> {
    pub(super) n: usize,
    pub(super) keys: &'k [DeviceKeyColumn<'a>],
    pub(super) accs: Accumulators,
}

impl<'a> Checked<'a, '_> {
    /// The key the variants group by (for `n > 0` rows), with the accumulators told how its
    /// bits decode.
    pub(super) fn key(&mut self, gpu: &Gpu, name: &str) -> Result<PreparedKey<'a>> {
        let (key, decode) = prepare(gpu, name, self.keys, self.n)?;
        self.accs.key = decode;
        Ok(key)
    }
}

/// Checks a GPU grouping (what [`super::check_group_by`] checks, the key column count and the
/// accumulators) for the call `name`.
pub(super) fn check<'a, 'k>(
    name: &str,
    keys: &'k [DeviceKeyColumn<'a>],
    values: &[DeviceValueColumn],
    aggs: &[Agg],
) -> Result<Checked<'a, 'k>> {
    let key_lens: Vec<usize> = keys.iter().map(DeviceKeyColumn::len).collect();
    let value_lens: Vec<usize> = values.iter().map(DeviceValueColumn::len).collect();
    let n = check_shape(&key_lens, &value_lens, aggs)?;
    check_key_count(name, keys)?;
    let mut accs = Accumulators::new(name, values, aggs)?;
    accs.key = KeyDecode::of_types(keys);
    Ok(Checked { n, keys, accs })
}

/// The device address of a column.
pub(super) fn ptr<T: DeviceItem>(gpu: &Gpu, c: &DeviceColumn<T>) -> u64 {
    c.view().device_ptr(gpu.stream()).0
}

/// The device address of a value column.
pub(super) fn value_ptr(gpu: &Gpu, v: DeviceValueColumn) -> u64 {
    match v {
        DeviceValueColumn::U32(c) => ptr(gpu, c),
        DeviceValueColumn::I32(c) => ptr(gpu, c),
        DeviceValueColumn::F32(c) => ptr(gpu, c),
        DeviceValueColumn::F64(c) => ptr(gpu, c),
    }
}

/// The `u32` value column every accumulator reads, if there is one: a sort can move its values
/// with the keys instead of row ids.
pub(super) fn payload_column<'a>(
    values: &[DeviceValueColumn<'a>],
    accs: &Accumulators,
) -> Option<&'a DeviceColumn<u32>> {
    let &(c, _) = accs.list.first()?;
    if !accs.list.iter().all(|&(x, _)| x == c) {
        return None;
    }
    match values[c] {
        DeviceValueColumn::U32(col) => Some(col),
        _ => None,
    }
}

/// A variant's kernel for these accumulators: `none`; for a single one, `one` indexed by its
/// code (the kernel's dispatch on it folds away); else `more` for two, three or four.
pub(super) fn kernel_for<A>(
    list: &[(usize, u32)],
    none: KernelSpec<A>,
    one: [KernelSpec<A>; 12],
    more: [KernelSpec<A>; 3],
) -> KernelSpec<A> {
    match list {
        [] => none,
        [(_, c)] => one[*c as usize],
        _ => more[list.len().min(GROUPBY_MAX_AGGS) - 2],
    }
}

/// The accumulators a list of aggregates needs (each distinct (value column, code) once),
/// which one each aggregate reads, and the key's type: all a result needs from its inputs.
#[derive(Clone, Debug)]
pub(super) struct Accumulators {
    /// (value column, code) of each accumulator.
    pub(super) list: Vec<(usize, u32)>,
    /// Each aggregate with its accumulator's index and code (none for `Count`).
    aggs: Vec<(Agg, Option<(usize, u32)>)>,
    /// How a record's key bits become the key columns.
    key: KeyDecode,
}

impl Accumulators {
    pub(super) fn new(name: &str, values: &[DeviceValueColumn], aggs: &[Agg]) -> Result<Self> {
        let mut list = Vec::new();
        for &a in aggs {
            if let Some(acc) = Self::of(values, a)
                && !list.contains(&acc)
            {
                list.push(acc);
            }
        }
        if list.len() > GROUPBY_MAX_AGGS {
            return Err(Error::invalid(format!(
                "{name}: these aggregates need {} accumulators (a sum or mean, a min, a max per \
                 value column), at most {GROUPBY_MAX_AGGS} run in one call; split the \
                 aggregates over several calls",
                list.len()
            )));
        }
        let aggs = aggs
            .iter()
            .map(|&a| {
                let acc = Self::of(values, a)
                    .map(|acc| (list.iter().position(|&x| x == acc).unwrap_or(0), acc.1));
                (a, acc)
            })
            .collect();
        Ok(Accumulators {
            list,
            aggs,
            key: KeyDecode::U32,
        })
    }

    /// The accumulator of `a` (none for `Count`).
    fn of(values: &[DeviceValueColumn], a: Agg) -> Option<(usize, u32)> {
        let c = a.column()?;
        let ty = match values[c] {
            DeviceValueColumn::U32(_) => code::U32,
            DeviceValueColumn::I32(_) => code::I32,
            DeviceValueColumn::F32(_) => code::F32,
            DeviceValueColumn::F64(_) => code::F64,
        };
        let op = match a {
            Agg::Min(_) => code::MIN,
            Agg::Max(_) => code::MAX,
            _ => code::SUM,
        };
        Some((c, op | ty))
    }

    /// Words of a record.
    pub(super) fn words(&self) -> usize {
        k::record_words(self.list.len())
    }

    /// The grouping's result from the groups' records in key order, as records or (`by_field`)
    /// field by field (a large result gathered on all cores: it can hold as many groups as
    /// rows).
    fn result(&self, data: &[u64], by_field: bool) -> Grouped {
        let w = self.words();
        let g = data.len() / w;
        let word = |f: usize, i: usize| {
            if by_field {
                data[f * g + i]
            } else {
                data[i * w + f]
            }
        };
        let keys = self.key.columns(g, |i| word(0, i));
        // The counts a mean divides by, gathered once where a mean asks for them.
        let any_mean = self.aggs.iter().any(|(a, _)| matches!(a, Agg::Mean(_)));
        let counts: Vec<u64> = if any_mean {
            collect_indexed(g, |i| word(1, i))
        } else {
            Vec::new()
        };
        let aggregates = self
            .aggs
            .iter()
            .map(|&(a, acc)| {
                let Some((at, c)) = acc else {
                    return ResultColumn::U64(collect_indexed(g, |i| word(1, i)));
                };
                let w = |i: usize| acc_result(c, word(2 + at, i));
                let float = matches!(c & code::TYPE, code::F32 | code::F64);
                match a {
                    Agg::Mean(_) => ResultColumn::F64(collect_indexed(g, |i| {
                        let s = w(i);
                        let s = match c & code::TYPE {
                            code::U32 => s as f64,
                            code::I32 => s as i64 as f64,
                            _ => f64::from_bits(s),
                        };
                        s / counts[i] as f64
                    })),
                    Agg::Sum(_) if float => {
                        ResultColumn::F64(collect_indexed(g, |i| f64::from_bits(w(i))))
                    }
                    Agg::Sum(_) if c & code::TYPE == code::I32 => {
                        ResultColumn::I64(collect_indexed(g, |i| w(i) as i64))
                    }
                    Agg::Sum(_) => ResultColumn::U64(collect_indexed(g, w)),
                    _ => match c & code::TYPE {
                        code::U32 => ResultColumn::U32(collect_indexed(g, |i| w(i) as u32)),
                        code::I32 => ResultColumn::I32(collect_indexed(g, |i| w(i) as u32 as i32)),
                        code::F32 => {
                            ResultColumn::F32(collect_indexed(g, |i| f32::from_bits(w(i) as u32)))
                        }
                        _ => ResultColumn::F64(collect_indexed(g, |i| f64::from_bits(w(i)))),
                    },
                }
            })
            .collect();
        Grouped { keys, aggregates }
    }
}

/// A grouping's result on the device: the groups' records in key order, which
/// [`DeviceGrouped::to_host`] brings back as a [`Grouped`]. The first groups may already be on
/// the host (they come back with the count the call reads anyway).
#[derive(Debug)]
pub struct DeviceGrouped {
    accs: Accumulators,
    groups: usize,
    /// The header and the records (none for an empty result).
    records: Option<DeviceColumn<u64>>,
    /// The first groups' records, already on the host.
    host: Vec<u64>,
}

impl DeviceGrouped {
    /// `groups` records in `records` (after the header), the first of them already in `host`.
    pub(super) fn new(
        accs: Accumulators,
        groups: usize,
        records: Option<DeviceColumn<u64>>,
        mut host: Vec<u64>,
    ) -> Self {
        host.truncate(groups * accs.words());
        DeviceGrouped {
            accs,
            groups,
            records,
            host,
        }
    }

    /// An empty result.
    pub(super) fn empty(accs: Accumulators) -> Self {
        Self::new(accs, 0, None, Vec::new())
    }

    /// The number of groups.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// The result on the host (one copy of the records not already there).
    pub fn to_host(&self, gpu: &Gpu) -> Result<Grouped> {
        let end = self.groups * self.accs.words();
        let have = self.host.len();
        if have >= end {
            return Ok(self.accs.result(&self.host[..end], false));
        }
        let Some(dev) = &self.records else {
            return Err(Error::invalid(
                "group_by: a result without records on the device (internal)",
            ));
        };
        // The records field by field first, where the device has room (one pass there): each
        // result column then comes from consecutive words, where from the records every
        // column's pass would read all of them.
        let (g, w) = (self.groups, self.accs.words());
        if let Ok(mut fields) = gpu.scratch::<u64>(end) {
            let spec = k::GROUPBY_RECORD_FIELDS;
            let (g32, w32) = (g as u32, w as u32);
            // SAFETY: the header and `g` records of `w` words; room for their `g * w` words.
            unsafe {
                gpu.launch(
                    &spec,
                    grid_per_sm(gpu, &spec, end, 8)?,
                    (dev, &g32, &w32, &mut fields),
                )
            }?;
            let mut data = Vec::with_capacity(end);
            append_staged(gpu, &fields.view(), &mut data)?;
            return Ok(self.accs.result(&data, true));
        }
        let mut records = Vec::with_capacity(end);
        records.extend_from_slice(&self.host);
        let rest = k::RECORDS_HEADER + have..k::RECORDS_HEADER + end;
        append_staged(gpu, &dev.view().slice(rest), &mut records)?;
        Ok(self.accs.result(&records, false))
    }
}

/// Items `range` of a column, synchronizing.
pub(super) fn read_range(
    gpu: &Gpu,
    c: &DeviceColumn<u64>,
    range: std::ops::Range<usize>,
) -> Result<Vec<u64>> {
    let mut v = Vec::with_capacity(range.len());
    append_staged(gpu, &c.view().slice(range), &mut v)?;
    Ok(v)
}

/// Reads the header and the first [`EAGER_GROUPS`] records of `records` (room for `most`
/// groups) in one copy: the group count, whether the records are not the grouping's
/// ([`k::HEAD_RETRY`]: a hash table overflowed, or a key lay outside a sampled range), and
/// those records.
pub(super) fn read_head(
    gpu: &Gpu,
    records: &DeviceColumn<u64>,
    most: usize,
    words: usize,
) -> Result<(usize, bool, Vec<u64>)> {
    let first = k::RECORDS_HEADER + most.min(EAGER_GROUPS) * words;
    let mut head = read_range(gpu, records, 0..first)?;
    let (groups, overflow) = (head[k::HEAD_GROUPS] as usize, head[k::HEAD_RETRY] != 0);
    head.drain(..k::RECORDS_HEADER);
    Ok((groups, overflow, head))
}

#[cfg(test)]
mod tests {
    use super::kernel_for;
    use tessera_kernels::ops::groupby_sort::{
        GROUPBY_RUNS_0, GROUPBY_RUNS_2, GROUPBY_RUNS_3, GROUPBY_RUNS_4, GROUPBY_RUNS_ONE,
    };

    #[test]
    fn a_kernel_per_accumulator_count_and_single_code() {
        let more = [GROUPBY_RUNS_2, GROUPBY_RUNS_3, GROUPBY_RUNS_4];
        let pick =
            |list: &[(usize, u32)]| kernel_for(list, GROUPBY_RUNS_0, GROUPBY_RUNS_ONE, more).name();
        assert_eq!(pick(&[]), "groupby_runs_0");
        for c in 0..12 {
            assert_eq!(pick(&[(0, c)]), GROUPBY_RUNS_ONE[c as usize].name());
        }
        assert_eq!(pick(&[(0, 0), (1, 4)]), "groupby_runs_2");
        assert_eq!(pick(&[(0, 0), (1, 4), (2, 8)]), "groupby_runs_3");
        assert_eq!(pick(&[(0, 0), (1, 4), (2, 8), (3, 1)]), "groupby_runs_4");
    }
}
