//! The GPU engine: the 13 queries as fused kernels over columns resident in device memory
//! (the thesis' "standalone GPU"), and the same kernels fed through PCIe per query
//! ([`CoprocessorEngine`], §3.3).
//!
//! A query runs on its plan (tessera_kernels::ssb::plan: table placement and predicates, as
//! codes from [`QueryParams`]; all 13 plans are uploaded with the columns): clear the joined
//! dimensions' tables (two memsets), build them all in one `ssb_build` launch (per dimension
//! a perfect-hash table of `u16` payloads and a bitmap of qualifying keys; the same launch
//! clears the group table), then one probe kernel over lineorder for the query's flight,
//! which adds into the group table. Four operations the host queues per query, as few as the
//! steps allow: a query takes well under a millisecond, so every launch counts. The result is
//! the group table's non-empty slots, decoded with the group layout the builds recorded in the
//! plan.
use std::borrow::Borrow;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaView, DevicePtr, LaunchConfig};
use tessera_kernels::spec::KernelSpec;
use tessera_kernels::ssb::plan::{self as P, GroupLayout, dim, fact, job, pred, status};
use tessera_kernels::ssb::{build::SSB_BUILD, queries as kq};

mod coprocessor;
mod model;

pub use coprocessor::{CHUNK_ROWS, CoprocessorEngine, h2d_bandwidth};
pub use model::{QueryModel, model};

use super::data::SsbData;
use super::engine::Engine;
use super::query::{GroupCol, Pred, Query, QueryParams, QueryResult, Row};
use crate::error::{Error, Result};
use crate::ops::launch;
use crate::runtime::{DeviceColumn, Gpu, resident_grid};

/// The lineorder columns the probe kernels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactCol {
    /// lo_orderdate.
    OrderDate,
    /// lo_discount.
    Discount,
    /// lo_quantity.
    Quantity,
    /// lo_extendedprice.
    ExtendedPrice,
    /// lo_suppkey.
    SuppKey,
    /// lo_partkey.
    PartKey,
    /// lo_custkey.
    CustKey,
    /// lo_revenue.
    Revenue,
    /// lo_supplycost.
    SupplyCost,
}

impl FactCol {
    /// All of them (the resident engine's upload).
    pub const ALL: [FactCol; 9] = [
        FactCol::OrderDate,
        FactCol::Discount,
        FactCol::Quantity,
        FactCol::ExtendedPrice,
        FactCol::SuppKey,
        FactCol::PartKey,
        FactCol::CustKey,
        FactCol::Revenue,
        FactCol::SupplyCost,
    ];

    /// The column's data.
    pub fn of(self, data: &SsbData) -> &[i32] {
        let lo = &data.lineorder;
        match self {
            FactCol::OrderDate => &lo.lo_orderdate,
            FactCol::Discount => &lo.lo_discount,
            FactCol::Quantity => &lo.lo_quantity,
            FactCol::ExtendedPrice => &lo.lo_extendedprice,
            FactCol::SuppKey => &lo.lo_suppkey,
            FactCol::PartKey => &lo.lo_partkey,
            FactCol::CustKey => &lo.lo_custkey,
            FactCol::Revenue => &lo.lo_revenue,
            FactCol::SupplyCost => &lo.lo_supplycost,
        }
    }
}

/// A query flight: which probe kernel runs and which columns it reads, in its argument order
/// (which is also the order it reads them in, but for flight 4's part and customer keys,
/// whose order the plan picks: [`model::part_first`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flight {
    One,
    Two,
    Three,
    Four,
}

impl Flight {
    pub(crate) fn of(q: Query) -> Flight {
        match q.name().as_bytes()[1] {
            b'1' => Flight::One,
            b'2' => Flight::Two,
            b'3' => Flight::Three,
            _ => Flight::Four,
        }
    }

    pub(crate) fn columns(self) -> &'static [FactCol] {
        use FactCol::*;
        match self {
            Flight::One => &[OrderDate, Discount, Quantity, ExtendedPrice],
            Flight::Two => &[SuppKey, PartKey, OrderDate, Revenue],
            Flight::Three => &[SuppKey, CustKey, OrderDate, Revenue],
            Flight::Four => &[SuppKey, CustKey, PartKey, OrderDate, Revenue, SupplyCost],
        }
    }

    fn spec(self) -> KernelSpec {
        match self {
            Flight::One => kq::SSB_FLIGHT1,
            Flight::Two => kq::SSB_FLIGHT2,
            Flight::Three => kq::SSB_FLIGHT3,
            Flight::Four => kq::SSB_FLIGHT4,
        }
    }
}

/// The columns of dimension `d` the builds read: key first, then the predicate columns in
/// the plan's order.
pub(crate) fn dim_columns(data: &SsbData, d: usize) -> Vec<&[i32]> {
    match d {
        P::DATE => {
            let t = &data.date;
            vec![
                &t.d_datekey,
                &t.d_year,
                &t.d_yearmonthnum,
                &t.d_yearmonth,
                &t.d_weeknuminyear,
            ]
        }
        P::PART => {
            let t = &data.part;
            vec![&t.p_partkey, &t.p_mfgr, &t.p_category, &t.p_brand1]
        }
        P::SUPPLIER => {
            let t = &data.supplier;
            vec![&t.s_suppkey, &t.s_region, &t.s_nation, &t.s_city]
        }
        _ => {
            let t = &data.customer;
            vec![&t.c_custkey, &t.c_region, &t.c_nation, &t.c_city]
        }
    }
}

/// Predicates of dimension `d`, one per column after the key.
pub(crate) fn dim_preds(p: &QueryParams, d: usize) -> Vec<Pred> {
    match d {
        P::DATE => vec![p.d_year, p.d_yearmonthnum, p.d_yearmonth, p.d_weeknuminyear],
        P::PART => vec![p.p_mfgr, p.p_category, p.p_brand1],
        P::SUPPLIER => vec![p.s_region, p.s_nation, p.s_city],
        _ => vec![p.c_region, p.c_nation, p.c_city],
    }
}

/// The dimension index of a group column and the position of its column in
/// [`dim_columns`].
pub(crate) fn group_source(g: GroupCol) -> (usize, usize) {
    match g {
        GroupCol::DYear => (P::DATE, 1),
        GroupCol::PCategory => (P::PART, 2),
        GroupCol::PBrand1 => (P::PART, 3),
        GroupCol::SNation => (P::SUPPLIER, 2),
        GroupCol::SCity => (P::SUPPLIER, 3),
        GroupCol::CNation => (P::CUSTOMER, 2),
        GroupCol::CCity => (P::CUSTOMER, 3),
    }
}

fn pred_words(p: Pred) -> [u32; 3] {
    match p {
        Pred::Any => [pred::ANY, 0, 0],
        Pred::Eq(v) => [pred::BETWEEN, v as u32, v as u32],
        Pred::Between(a, b) => [pred::BETWEEN, a as u32, b as u32],
        Pred::Either(a, b) => [pred::EITHER, a as u32, b as u32],
    }
}

/// Key range of one dimension's tables and where they lie in the shared buffers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DimLayout {
    key_min: u32,
    len: u32,
    payload: u32,
    bits: u32,
    /// Where its code map lies in the bitmap buffer (the supplier's only; see
    /// [`P::dim::CODES`]), else [`P::NO_CODES`].
    codes: u32,
}

/// The placement of all dimension tables, from the data's key ranges.
#[derive(Clone, Debug)]
pub(crate) struct TableLayout {
    dims: [DimLayout; P::DIMS],
    payload_slots: usize,
    bit_words: usize,
}

impl TableLayout {
    /// Perfect hashing needs dense keys: a key span of at most four times the rows (plus
    /// room for the calendar's gaps in yyyymmdd date keys).
    pub(crate) fn of(data: &SsbData) -> Result<TableLayout> {
        let mut dims = [DimLayout::default(); P::DIMS];
        let (mut payload, mut bits) = (0usize, 0usize);
        for (d, name) in ["date", "part", "supplier", "customer"].iter().enumerate() {
            let keys = dim_columns(data, d)[0];
            let (Some(&lo), Some(&hi)) = (keys.iter().min(), keys.iter().max()) else {
                continue;
            };
            let span = i64::from(hi) - i64::from(lo) + 1;
            if span > 4 * keys.len() as i64 + 65_536 || lo < 0 {
                return Err(Error::invalid(format!(
                    "SSB {name} keys {lo}..={hi} are not dense enough for the GPU engine's \
                     perfect hashing ({} rows)",
                    keys.len()
                )));
            }
            dims[d] = DimLayout {
                key_min: lo as u32,
                len: span as u32,
                payload: payload as u32,
                bits: bits as u32,
                codes: P::NO_CODES,
            };
            payload += span as usize;
            // Keep every table's start 16-byte aligned.
            payload = payload.next_multiple_of(8);
            bits += (span as usize).div_ceil(32).next_multiple_of(4);
            // The supplier is the probes' first test: a query grouping by it reads its code
            // map, which lies right after its bitmap (one clear covers both).
            if d == P::SUPPLIER {
                dims[d].codes = bits as u32;
                bits += P::code_words(span as usize).next_multiple_of(4);
            }
        }
        Ok(TableLayout {
            dims,
            payload_slots: payload.max(8),
            bit_words: bits.max(4),
        })
    }
}

/// A query's plan: its words, the dimensions it builds, its flight.
pub(crate) struct QueryPlan {
    pub(crate) query: Query,
    pub(crate) words: [u32; P::WORDS],
    pub(crate) builds: Vec<usize>,
    pub(crate) flight: Flight,
}

impl QueryPlan {
    pub(crate) fn new(q: Query, data: &SsbData, layout: &TableLayout) -> QueryPlan {
        let p = q.params();
        let flight = Flight::of(q);
        let mut w = [0u32; P::WORDS];
        let mut builds = Vec::new();
        // Flight 1 tests lo_orderdate against the qualifying dates' key range (Crystal's
        // join-free plan) when they are contiguous, else it joins the date table.
        let range = (flight == Flight::One)
            .then(|| p.orderdate_range(&data.date))
            .flatten();
        for (at, pr) in [
            (
                fact::ORDERDATE,
                range.map_or(Pred::Any, |(a, b)| Pred::Between(a, b)),
            ),
            (fact::DISCOUNT, p.lo_discount),
            (fact::QUANTITY, p.lo_quantity),
        ] {
            w[P::FACT + at..P::FACT + at + 3].copy_from_slice(&pred_words(pr));
        }
        let date_join = flight == Flight::One && range.is_none();
        w[P::FACT + fact::DATE_JOIN] = date_join as u32;
        w[P::FACT + fact::PART_FIRST] =
            (flight == Flight::Four && model::part_first(data, q)) as u32;
        for d in 0..P::DIMS {
            let base = d * P::DIM_WORDS;
            let dim_kind = [
                super::query::Dim::Date,
                super::query::Dim::Part,
                super::query::Dim::Supplier,
                super::query::Dim::Customer,
            ][d];
            let joined = if flight == Flight::One {
                d == P::DATE && date_join
            } else {
                p.joins(dim_kind)
            };
            let l = layout.dims[d];
            w[base + dim::PAYLOAD] = l.payload;
            w[base + dim::KEY_MIN] = l.key_min;
            w[base + dim::BITS] = l.bits;
            w[base + dim::CODES] = P::NO_CODES;
            if !joined {
                continue;
            }
            builds.push(d);
            w[base + dim::LEN] = l.len;
            w[base + dim::GROUP_MIN] = u32::MAX;
            let group = p
                .group_by
                .iter()
                .map(|&g| group_source(g))
                .find(|&(gd, _)| gd == d);
            w[base + dim::HAS_GROUP] = group.is_some() as u32;
            w[base + dim::GROUP_COL] = group.map_or(0, |(_, c)| c as u32);
            if group.is_some() {
                w[base + dim::CODES] = l.codes;
            }
            for (c, pr) in dim_preds(&p, d).into_iter().enumerate() {
                let at = base + dim::PREDS + 3 * c;
                w[at..at + 3].copy_from_slice(&pred_words(pr));
            }
        }
        QueryPlan {
            query: q,
            words: w,
            builds,
            flight,
        }
    }

    /// The group column a build of dimension `d` reads (position in [`dim_columns`]).
    pub(crate) fn group_column(&self, d: usize) -> Option<usize> {
        let base = d * P::DIM_WORDS;
        (self.words[base + dim::HAS_GROUP] != 0).then(|| self.words[base + dim::GROUP_COL] as usize)
    }
}

/// Device buffers every query reuses: dimension tables, plans, group table, and the builds'
/// job table.
pub(crate) struct Scratch {
    layout: TableLayout,
    payload: CudaSlice<u16>,
    bits: CudaSlice<u32>,
    /// Every query's plan ([`P::WORDS`] words each, in [`Query::ALL`] order), uploaded once: a
    /// run's writes to its plan (the group ranges, the status words) are the same in every
    /// run over the same data, so a plan never needs restoring.
    plans: CudaSlice<u32>,
    jobs: CudaSlice<u64>,
    /// Rows per dimension, as in the job table.
    dim_rows: [usize; P::DIMS],
    sums: CudaSlice<u64>,
    counts: CudaSlice<u32>,
    /// Group slots from this one on are zero: the last query's table size once its result
    /// was read, all of them while a query may still be adding.
    groups_dirty: std::cell::Cell<usize>,
}

/// Where query `q`'s plan lies in [`Scratch`]'s plans.
fn plan_words(q: Query) -> std::ops::Range<usize> {
    let at = q as usize * P::WORDS;
    at..at + P::WORDS
}

impl Scratch {
    /// Buffers for `plans` (one per query of [`Query::ALL`]) whose builds read the columns
    /// `dims` (per dimension, in [`dim_columns`] order). The columns must outlive the engine
    /// and keep their place: the job table holds their addresses.
    pub(crate) fn new(
        gpu: &Gpu,
        layout: TableLayout,
        plans: &[QueryPlan],
        dims: &[Vec<&CudaSlice<i32>>],
        dim_rows: [usize; P::DIMS],
    ) -> Result<Scratch> {
        let s = gpu.stream();
        let alloc = |what| Error::driver(what, 0);
        let words: Vec<u32> = plans.iter().flat_map(|p| p.words).collect();
        let mut jobs = vec![0u64; P::DIMS * job::WORDS];
        for (d, cols) in dims.iter().enumerate() {
            for (c, col) in cols.iter().enumerate().take(job::COLS) {
                jobs[d * job::WORDS + c] = col.device_ptr(s).0;
            }
            jobs[d * job::WORDS + job::ROWS] = dim_rows[d] as u64;
        }
        Ok(Scratch {
            payload: s
                .alloc_zeros::<u16>(layout.payload_slots)
                .map_err(alloc("allocating SSB dimension tables"))?,
            bits: s
                .alloc_zeros::<u32>(layout.bit_words)
                .map_err(alloc("allocating SSB dimension bitmaps"))?,
            plans: s
                .clone_htod(&words)
                .map_err(alloc("uploading the SSB plans"))?,
            jobs: s
                .clone_htod(&jobs)
                .map_err(alloc("uploading the SSB build jobs"))?,
            dim_rows,
            sums: s
                .alloc_zeros::<u64>(P::GLOBAL_GROUPS)
                .map_err(alloc("allocating the SSB group table"))?,
            counts: s
                .alloc_zeros::<u32>(P::GLOBAL_GROUPS)
                .map_err(alloc("allocating the SSB group table"))?,
            groups_dirty: std::cell::Cell::new(0),
            layout,
        })
    }
    /// Queues the clearing of the tables the query builds, code maps included (one range over
    /// all of them: the dimensions lie next to each other, and every clear is a launch).
    pub(crate) fn prepare(&mut self, gpu: &Gpu, plan: &QueryPlan) -> Result<()> {
        let s = gpu.stream();
        let err = |what| Error::driver(what, 0);
        let dims = plan.builds.iter().map(|&d| self.layout.dims[d]);
        let payload = dims.map(|l| l.payload as usize..(l.payload + l.len) as usize);
        let words = plan.words;
        let bits = plan.builds.iter().map(|&d| {
            let (l, base) = (self.layout.dims[d], d * P::DIM_WORDS);
            let end = if words[base + dim::CODES] != P::NO_CODES {
                l.codes as usize + P::code_words(l.len as usize)
            } else {
                l.bits as usize + (l.len as usize).div_ceil(32)
            };
            l.bits as usize..end
        });
        if let Some(r) = span(payload) {
            s.memset_zeros(&mut self.payload.slice_mut(r))
                .map_err(err("clearing the SSB dimension tables"))?;
        }
        if let Some(r) = span(bits) {
            s.memset_zeros(&mut self.bits.slice_mut(r))
                .map_err(err("clearing the SSB dimension bitmaps"))?;
        }
        Ok(())
    }

    /// Queues the build of every dimension the plan joins (one launch, which also clears the
    /// group slots the last query used). The job table's columns must hold their rows.
    pub(crate) fn build(&mut self, gpu: &Gpu, plan: &QueryPlan) -> Result<()> {
        let tile = SSB_BUILD.tile() as usize;
        let tiles: usize = plan
            .builds
            .iter()
            .map(|&d| self.dim_rows[d].div_ceil(tile))
            .sum();
        let clear = self.groups_dirty.replace(P::GLOBAL_GROUPS);
        // A thread clears about 8 slots when the build's tiles are fewer.
        let blocks = tiles.max(clear.div_ceil(SSB_BUILD.threads() as usize * 8));
        if blocks == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (SSB_BUILD.threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        let clear = clear as u32;
        let (jobs, pay, bits, sums, counts) = (
            &self.jobs,
            &mut self.payload,
            &mut self.bits,
            &mut self.sums,
            &mut self.counts,
        );
        let mut pl = self.plans.slice_mut(plan_words(plan.query));
        launch!(
            gpu,
            SSB_BUILD,
            cfg,
            [jobs, pay, bits, &mut pl, sums, counts, &clear]
        )
    }

    /// Queues the probe kernel of the plan's flight over `rows` rows of its columns (in
    /// [`Flight::columns`] order).
    pub(crate) fn probe(
        &mut self,
        gpu: &Gpu,
        plan: &QueryPlan,
        cols: &[CudaView<'_, i32>],
        rows: usize,
    ) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        let spec = plan.flight.spec();
        let cfg = resident_grid(gpu, &spec, rows)?;
        let n = rows as u32;
        let pl = &mut self.plans.slice_mut(plan_words(plan.query));
        let (pay, bits, sums, counts) = (
            &mut self.payload,
            &mut self.bits,
            &mut self.sums,
            &mut self.counts,
        );
        let c = cols;
        match plan.flight {
            Flight::One => launch!(
                gpu,
                spec,
                cfg,
                [&c[0], &c[1], &c[2], &c[3], &n, pay, pl, sums, counts]
            ),
            Flight::Two | Flight::Three => launch!(
                gpu,
                spec,
                cfg,
                [&c[0], &c[1], &c[2], &c[3], &n, pay, bits, pl, sums, counts]
            ),
            Flight::Four => launch!(
                gpu,
                spec,
                cfg,
                [
                    &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &n, pay, bits, pl, sums, counts
                ]
            ),
        }
    }

    /// Downloads the group table and decodes it into the query's result (synchronizes).
    pub(crate) fn result(&self, gpu: &Gpu, q: Query) -> Result<QueryResult> {
        let s = gpu.stream();
        let err = |what| Error::driver(what, 0);
        let mut w = [0u32; P::WORDS];
        s.memcpy_dtoh(&self.plans.slice(plan_words(q)), &mut w[..])
            .map_err(err("downloading an SSB plan"))?;
        gpu.synchronize()?;
        if w[P::STATUS + status::BAD_DIMENSION] != 0 {
            return Err(Error::invalid(format!(
                "{q}: a dimension key lies outside its table or a group value exceeds {}",
                P::MAX_PAYLOAD
            )));
        }
        let layout = GroupLayout::from_plan(|i| w[i]);
        if w[P::STATUS + status::GROUPS_OVERFLOW] != 0 || layout.total > P::GLOBAL_GROUPS as u64 {
            return Err(Error::invalid(format!(
                "{q}: the qualifying group values span {} groups, more than the GPU engine's \
                 {}",
                layout.total,
                P::GLOBAL_GROUPS
            )));
        }
        let total = layout.total as usize;
        // The probe added to slots below `total` only.
        self.groups_dirty.set(total);
        let mut sums = vec![0u64; total];
        let mut counts = vec![0u32; total];
        s.memcpy_dtoh(&self.sums.slice(..total), &mut sums[..])
            .map_err(err("downloading SSB groups"))?;
        s.memcpy_dtoh(&self.counts.slice(..total), &mut counts[..])
            .map_err(err("downloading SSB groups"))?;
        gpu.synchronize()?;
        let group_by = q.params().group_by;
        let rows = (0..total)
            .filter(|&i| counts[i] != 0)
            .map(|i| {
                let v = layout.decode(i as u32);
                Row {
                    groups: group_by
                        .iter()
                        .map(|&g| v[group_source(g).0] as i32)
                        .collect(),
                    value: sums[i] as i64,
                }
            })
            .collect();
        Ok(QueryResult::new(q, rows))
    }
}

/// The smallest range covering all of `ranges` (`None` when there are none).
fn span(ranges: impl Iterator<Item = std::ops::Range<usize>>) -> Option<std::ops::Range<usize>> {
    ranges.reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
}

/// A `Gpu` the engine owns or borrows.
enum GpuRef<'g> {
    Owned(Box<Gpu>),
    Borrowed(&'g Gpu),
}

impl Borrow<Gpu> for GpuRef<'_> {
    fn borrow(&self) -> &Gpu {
        match self {
            GpuRef::Owned(g) => g,
            GpuRef::Borrowed(g) => g,
        }
    }
}

/// CUDA events around a query's GPU work.
pub(crate) struct Events {
    start: CudaEvent,
    stop: CudaEvent,
}

impl Events {
    pub(crate) fn new(gpu: &Gpu) -> Result<Events> {
        let ev = || {
            gpu.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(Error::driver("creating a timing event", 0))
        };
        Ok(Events {
            start: ev()?,
            stop: ev()?,
        })
    }

    pub(crate) fn start(&self, gpu: &Gpu) -> Result<&CudaEvent> {
        self.start
            .record(gpu.stream())
            .map_err(Error::driver("recording an event", 0))?;
        Ok(&self.start)
    }

    /// Records the stop event and returns the milliseconds since the start (synchronizes).
    pub(crate) fn stop_ms(&self, gpu: &Gpu) -> Result<f64> {
        self.stop
            .record(gpu.stream())
            .map_err(Error::driver("recording an event", 0))?;
        let ms = self
            .start
            .elapsed_ms(&self.stop)
            .map_err(Error::driver("reading an event", 0))?;
        Ok(f64::from(ms))
    }
}

/// The GPU engine over columns resident in device memory: lineorder's nine query columns and
/// the dimensions' key, predicate and group columns are uploaded once, when it is made.
pub struct GpuEngine<'g> {
    gpu: GpuRef<'g>,
    fact: Vec<DeviceColumn<i32>>,
    /// The dimension columns, held here: the builds find them through the job table.
    _dims: Vec<Vec<DeviceColumn<i32>>>,
    plans: Vec<QueryPlan>,
    scratch: std::cell::RefCell<Scratch>,
    events: Events,
    rows: usize,
}

impl<'g> GpuEngine<'g> {
    /// An engine on `gpu` over `data` (uploads the columns the queries read).
    pub fn new(gpu: &'g Gpu, data: &SsbData) -> Result<GpuEngine<'g>> {
        GpuEngine::with(GpuRef::Borrowed(gpu), data, P::CODE_SLOTS)
    }

    /// An engine on a GPU of its own (device 0).
    pub fn open(data: &SsbData) -> Result<GpuEngine<'static>> {
        GpuEngine::with(GpuRef::Owned(Box::new(Gpu::new()?)), data, P::CODE_SLOTS)
    }

    /// Test hook: an engine whose plans offer only `slots` of the [`P::CODE_SLOTS`] code values
    /// (the others hold a value no group has), so that queries grouping by more supplier
    /// values than that take the probes' fallback (bitmap and lookup) as one grouping by more
    /// than fifteen would. Results must not change.
    #[doc(hidden)]
    pub fn with_code_slots(gpu: &'g Gpu, data: &SsbData, slots: usize) -> Result<GpuEngine<'g>> {
        GpuEngine::with(GpuRef::Borrowed(gpu), data, slots)
    }

    fn with(gpu: GpuRef<'g>, data: &SsbData, code_slots: usize) -> Result<GpuEngine<'g>> {
        data.validate()?;
        let layout = TableLayout::of(data)?;
        let mut plans: Vec<QueryPlan> = Query::ALL
            .iter()
            .map(|&q| QueryPlan::new(q, data, &layout))
            .collect();
        let taken = P::CODE_VALUES + code_slots.min(P::CODE_SLOTS)..P::CODE_VALUES + P::CODE_SLOTS;
        for p in &mut plans {
            p.words[taken.clone()].fill(u32::MAX);
        }
        let g: &Gpu = gpu.borrow();
        let fact = FactCol::ALL
            .iter()
            .map(|c| g.upload(c.of(data)))
            .collect::<Result<_>>()?;
        let dims = (0..P::DIMS)
            .map(|d| {
                dim_columns(data, d)
                    .into_iter()
                    .map(|c| g.upload(c))
                    .collect()
            })
            .collect::<Result<Vec<Vec<_>>>>()?;
        let dim_rows = std::array::from_fn(|d: usize| dim_columns(data, d)[0].len());
        let dim_bufs: Vec<Vec<&CudaSlice<i32>>> = dims
            .iter()
            .map(|cols| cols.iter().map(|c| &c.buf).collect())
            .collect();
        let scratch = Scratch::new(g, layout, &plans, &dim_bufs, dim_rows)?;
        let scratch = std::cell::RefCell::new(scratch);
        let events = Events::new(g)?;
        Ok(GpuEngine {
            fact,
            _dims: dims,
            plans,
            scratch,
            events,
            rows: data.lineorder.len(),
            gpu,
        })
    }

    /// The GPU it runs on.
    pub fn gpu(&self) -> &Gpu {
        self.gpu.borrow()
    }

    fn plan(&self, q: Query) -> &QueryPlan {
        &self.plans[q as usize]
    }

    /// Queues one query: plan, builds, probe.
    fn queue(&self, q: Query) -> Result<()> {
        let gpu = self.gpu();
        let plan = self.plan(q);
        let mut s = self.scratch.borrow_mut();
        s.prepare(gpu, plan)?;
        s.build(gpu, plan)?;
        let cols: Vec<CudaView<i32>> = plan
            .flight
            .columns()
            .iter()
            .map(|&c| self.fact[c as usize].buf.slice(..))
            .collect();
        s.probe(gpu, plan, &cols, self.rows)
    }
}

impl Engine for GpuEngine<'_> {
    fn name(&self) -> &str {
        "gpu"
    }

    fn run(&self, q: Query) -> Result<QueryResult> {
        self.run_timed(q).map(|(r, _)| r)
    }

    /// Times, with CUDA events, what a query queues: the clear of its dimension tables, their
    /// builds and the probe. The plans are on the device from the engine's creation, and the
    /// result's download and decoding follow the timed span.
    fn run_timed(&self, q: Query) -> Result<(QueryResult, f64)> {
        let gpu = self.gpu();
        self.events.start(gpu)?;
        self.queue(q)?;
        let ms = self.events.stop_ms(gpu)?;
        let r = self.scratch.borrow().result(gpu, q)?;
        Ok((r, ms))
    }
}
