//! The GPU engine: the 13 queries as fused kernels over columns resident in device memory
//! (the thesis' "standalone GPU"), and the same kernels fed through PCIe per query
//! ([`CoprocessorEngine`], §3.3).
//!
//! A query runs on its plan (`plan`: table placement and predicates, as codes from
//! [`QueryParams`](super::QueryParams); all 13 plans are uploaded with the columns): clear the
//! joined dimensions' tables (two memsets), build them all in one `ssb_build` launch (per
//! dimension a perfect-hash table of `u16` payloads and a bitmap of qualifying keys; the same
//! launch clears the group table), then one probe kernel over lineorder for the query's flight,
//! which adds into the group table (`scratch`). Four operations the host queues per query, as
//! few as the steps allow: a query takes well under a millisecond, so every launch counts. The
//! result is the group table's non-empty slots, decoded with the group layout the builds
//! recorded in the plan.
use std::borrow::Borrow;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaView};
use tessera_kernels::ssb::plan as P;

mod coprocessor;
mod model;
mod packed;
mod plan;
mod scratch;

pub use coprocessor::{CHUNK_ROWS, CoprocessorEngine, h2d_bandwidth};
pub use model::{QueryModel, model, packed_model};
use packed::PackedFact;
pub use packed::{PACKED_SCHEMES, PackedColumn, encode_fact};
pub use plan::FactCol;
pub(crate) use plan::{Flight, QueryPlan, TableLayout, dim_columns, dim_preds, group_source};
pub(crate) use scratch::{FactView, PackedFlight, Scratch};

use super::data::SsbData;
use super::engine::Engine;
use super::query::{Query, QueryResult};
use tessera_host::compress::{Encoded, Scheme};
use tessera_host::runtime::{DeviceColumn, Gpu};
use tessera_host::{Error, Result};

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

/// Lineorder's query columns on the device.
enum Fact {
    /// As `i32`.
    Plain(Vec<DeviceColumn<i32>>),
    /// Compressed, each in its smallest scheme.
    Packed(PackedFact),
}

/// The GPU engine over columns resident in device memory: lineorder's nine query columns and
/// the dimensions' key, predicate and group columns are uploaded once, when it is made.
/// [`GpuEngine::compressed`] keeps the lineorder columns compressed and decodes them in the
/// probes.
pub struct GpuEngine<'g> {
    gpu: GpuRef<'g>,
    fact: Fact,
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
        GpuEngine::with(GpuRef::Borrowed(gpu), data, P::CODE_SLOTS, None)
    }

    /// An engine on `gpu` over `data` with lineorder's query columns compressed, each in the
    /// smallest of [`PACKED_SCHEMES`] (encoded on all cores, then uploaded); the probes decode
    /// them where they read them. Answers equal [`GpuEngine::new`]'s.
    pub fn compressed(gpu: &'g Gpu, data: &SsbData) -> Result<GpuEngine<'g>> {
        GpuEngine::compressed_in(gpu, data, &PACKED_SCHEMES)
    }

    /// [`GpuEngine::compressed`] with each column in the smallest of `schemes` (a subset of
    /// [`PACKED_SCHEMES`], else `Err`): one scheme alone puts every column in it.
    pub fn compressed_in(
        gpu: &'g Gpu,
        data: &SsbData,
        schemes: &[Scheme],
    ) -> Result<GpuEngine<'g>> {
        let encoded = encode_fact(data, schemes)?;
        GpuEngine::with(GpuRef::Borrowed(gpu), data, P::CODE_SLOTS, Some(&encoded))
    }

    /// [`GpuEngine::compressed`] with lineorder's query columns already encoded (`encoded`, in
    /// [`FactCol::ALL`] order, each in one of [`PACKED_SCHEMES`], as
    /// [`crate::storage::read_compressed`] reads them): `Err` for another scheme, count or
    /// length. The columns must hold `data`'s values; the caller vouches for that.
    pub fn compressed_from(
        gpu: &'g Gpu,
        data: &SsbData,
        encoded: &[Encoded],
    ) -> Result<GpuEngine<'g>> {
        GpuEngine::with(GpuRef::Borrowed(gpu), data, P::CODE_SLOTS, Some(encoded))
    }

    /// An engine on a GPU of its own (device 0).
    pub fn open(data: &SsbData) -> Result<GpuEngine<'static>> {
        GpuEngine::with(
            GpuRef::Owned(Box::new(Gpu::new()?)),
            data,
            P::CODE_SLOTS,
            None,
        )
    }

    /// How each query column is stored: `None` for the uncompressed engine, else the
    /// compressed engine's choice per column (in [`FactCol::ALL`] order).
    pub fn packed_columns(&self) -> Option<&[PackedColumn]> {
        match &self.fact {
            Fact::Plain(_) => None,
            Fact::Packed(p) => Some(&p.columns),
        }
    }

    /// The probe kernel query `q` takes over the compressed columns, by name: one specialized
    /// for their kinds where there is one, and one that queues its survivors across tiles
    /// where the query's first test is selective. `None` for the uncompressed engine.
    pub fn packed_probe(&self, q: Query) -> Option<&'static str> {
        match &self.fact {
            Fact::Plain(_) => None,
            Fact::Packed(p) => {
                let plan = self.plan(q);
                Some(p.flight(plan.flight).probe_name(plan))
            }
        }
    }

    /// Test hook: an engine whose plans offer only `slots` of the [`P::CODE_SLOTS`] code values
    /// (the others hold a value no group has), so that queries grouping by more supplier
    /// values than that take the probes' fallback (bitmap and lookup) as one grouping by more
    /// than fifteen would. Results must not change.
    #[doc(hidden)]
    pub fn with_code_slots(gpu: &'g Gpu, data: &SsbData, slots: usize) -> Result<GpuEngine<'g>> {
        GpuEngine::with(GpuRef::Borrowed(gpu), data, slots, None)
    }

    fn with(
        gpu: GpuRef<'g>,
        data: &SsbData,
        code_slots: usize,
        packed: Option<&[Encoded]>,
    ) -> Result<GpuEngine<'g>> {
        data.validate()?;
        let layout = TableLayout::of(data)?;
        let mut plans: Vec<QueryPlan> = Query::ALL
            .iter()
            .map(|&q| QueryPlan::new(q, data, &layout))
            .collect();
        for p in &mut plans {
            p.plan.code_values[code_slots.min(P::CODE_SLOTS)..].fill(u32::MAX);
        }
        let g: &Gpu = gpu.borrow();
        let fact = match packed {
            None => Fact::Plain(
                FactCol::ALL
                    .iter()
                    .map(|c| g.upload(c.of(data)))
                    .collect::<Result<_>>()?,
            ),
            Some(encoded) => Fact::Packed(PackedFact::new(g, encoded, data.lineorder.len())?),
        };
        let dims = (0..P::DIMS)
            .map(|d| {
                dim_columns(data, d)
                    .into_iter()
                    .map(|c| g.upload(c))
                    .collect()
            })
            .collect::<Result<Vec<Vec<_>>>>()?;
        let dim_rows = std::array::from_fn(|d: usize| dim_columns(data, d)[0].len());
        let dim_bufs: Vec<Vec<CudaView<i32>>> = dims
            .iter()
            .map(|cols| cols.iter().map(|c| c.view()).collect())
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
        match &self.fact {
            Fact::Plain(fact) => {
                let cols: Vec<CudaView<i32>> = plan
                    .flight
                    .columns()
                    .iter()
                    .map(|&c| fact[c as usize].view())
                    .collect();
                s.probe(gpu, plan, FactView::Plain(&cols), self.rows)
            }
            Fact::Packed(p) => s.probe(
                gpu,
                plan,
                FactView::Packed(p.flight(plan.flight)),
                self.rows,
            ),
        }
    }
}

impl Engine for GpuEngine<'_> {
    fn name(&self) -> &str {
        match self.fact {
            Fact::Plain(_) => "gpu",
            Fact::Packed(_) => "gpu-compressed",
        }
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
