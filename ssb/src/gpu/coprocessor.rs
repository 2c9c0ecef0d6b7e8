//! Coprocessor mode (thesis §3.3): the columns live in pinned host memory and every query
//! ships what it reads over PCIe: the dimension columns it builds from, then lineorder's
//! columns in chunks, double-buffered on a copy stream so that the probe of chunk `i` runs
//! while chunk `i + 1` is in flight. The builds and probes are the resident engine's; the
//! time is bound below by the shipped bytes over the PCIe bandwidth.
use std::cell::RefCell;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, PinnedHostSlice};
use tessera_kernels::ssb::plan as P;

use super::{Events, FactCol, QueryPlan, Scratch, TableLayout, dim_columns, dim_preds};
use crate::data::SsbData;
use crate::engine::Engine;
use crate::query::{Query, QueryResult};
use tessera_host::runtime::{Gpu, median};
use tessera_host::{Error, Result};

/// Lineorder rows per shipped chunk (16 MB per 4-byte column).
pub const CHUNK_ROWS: usize = 1 << 22;

/// Most lineorder columns one query reads (flight 4).
const MAX_FACT_COLS: usize = 6;

fn pinned(gpu: &Gpu, data: &[i32]) -> Result<PinnedHostSlice<i32>> {
    // A zero-byte pinned allocation is refused by the driver: keep one item of room.
    // SAFETY: the memory is written below before any use.
    let mut p = unsafe { gpu.context().alloc_pinned::<i32>(data.len().max(1)) }.map_err(
        Error::driver("allocating pinned host memory", data.len() * 4),
    )?;
    p.as_mut_slice()
        .map_err(Error::driver("writing pinned host memory", 0))?[..data.len()]
        .copy_from_slice(data);
    Ok(p)
}

/// The GPU engine in coprocessor mode.
pub struct CoprocessorEngine<'g> {
    gpu: &'g Gpu,
    copy: Arc<CudaStream>,
    fact: Vec<PinnedHostSlice<i32>>,
    dims: Vec<Vec<PinnedHostSlice<i32>>>,
    dim_rows: Vec<usize>,
    staged: RefCell<Staging>,
    plans: Vec<QueryPlan>,
    scratch: RefCell<Scratch>,
    events: Events,
    rows: usize,
}

/// Device buffers the shipped columns land in.
struct Staging {
    dims: Vec<Vec<CudaSlice<i32>>>,
    chunks: [Vec<CudaSlice<i32>>; 2],
}

impl<'g> CoprocessorEngine<'g> {
    /// Copies `data`'s query columns into pinned host memory and sets up the device buffers
    /// (dimension columns, two sets of chunk buffers) and a copy stream.
    pub fn new(gpu: &'g Gpu, data: &SsbData) -> Result<CoprocessorEngine<'g>> {
        data.validate()?;
        let layout = TableLayout::of(data)?;
        let plans: Vec<QueryPlan> = Query::ALL
            .iter()
            .map(|&q| QueryPlan::new(q, data, &layout))
            .collect();
        let fact = FactCol::ALL
            .iter()
            .map(|c| pinned(gpu, c.of(data)))
            .collect::<Result<Vec<_>>>()?;
        let dims = (0..P::DIMS)
            .map(|d| {
                dim_columns(data, d)
                    .into_iter()
                    .map(|c| pinned(gpu, c))
                    .collect()
            })
            .collect::<Result<Vec<Vec<_>>>>()?;
        let dim_rows: Vec<usize> = (0..P::DIMS)
            .map(|d| dim_columns(data, d)[0].len())
            .collect();
        let s = gpu.stream();
        let alloc = |n: usize| {
            s.alloc_zeros::<i32>(n.max(1))
                .map_err(Error::driver("allocating coprocessor buffers", n * 4))
        };
        let staged_dims = (0..P::DIMS)
            .map(|d| dims[d].iter().map(|_| alloc(dim_rows[d])).collect())
            .collect::<Result<Vec<Vec<_>>>>()?;
        let chunk = CHUNK_ROWS.min(data.lineorder.len());
        let set = || {
            (0..MAX_FACT_COLS)
                .map(|_| alloc(chunk))
                .collect::<Result<Vec<_>>>()
        };
        let chunks = [set()?, set()?];
        let copy = gpu
            .context()
            .new_stream()
            .map_err(Error::driver("creating a copy stream", 0))?;
        // The builds read the staged dimension columns, which stay where they are.
        let staged_refs: Vec<Vec<CudaView<i32>>> = staged_dims
            .iter()
            .map(|cols| cols.iter().map(|c| c.slice(..)).collect())
            .collect();
        let rows = std::array::from_fn(|d| dim_rows[d]);
        let scratch = Scratch::new(gpu, layout, &plans, &staged_refs, rows)?;
        Ok(CoprocessorEngine {
            scratch: RefCell::new(scratch),
            events: Events::new(gpu)?,
            staged: RefCell::new(Staging {
                dims: staged_dims,
                chunks,
            }),
            gpu,
            copy,
            fact,
            dims,
            dim_rows,
            plans,
            rows: data.lineorder.len(),
        })
    }

    /// Dimension columns a query ships for dimension `d`: the key, the columns its
    /// predicates restrict and its group column.
    fn shipped_dim_columns(&self, plan: &QueryPlan, d: usize) -> Vec<usize> {
        let preds = dim_preds(&plan.query.params(), d);
        let mut cols = vec![0];
        cols.extend(
            (0..preds.len())
                .filter(|&c| !preds[c].is_any())
                .map(|c| c + 1),
        );
        if let Some(g) = plan.group_column(d) {
            cols.push(g);
        }
        cols.sort_unstable();
        cols.dedup();
        cols
    }

    /// Bytes query `q` ships to the device.
    pub fn shipped_bytes(&self, q: Query) -> u64 {
        let plan = &self.plans[q as usize];
        let dims: usize = plan
            .builds
            .iter()
            .map(|&d| self.shipped_dim_columns(plan, d).len() * self.dim_rows[d])
            .sum();
        4 * (dims + plan.flight.columns().len() * self.rows) as u64
    }

    fn queue(&self, q: Query) -> Result<()> {
        let gpu = self.gpu;
        let plan = &self.plans[q as usize];
        let err = |what| Error::driver(what, 0);
        let mut st = self.staged.borrow_mut();
        let st = &mut *st;
        let mut s = self.scratch.borrow_mut();
        // Device slices carry events (cudarc's multi-stream tracking): a build or probe waits
        // for the copies into its inputs, and a copy into a chunk buffer waits for the probe
        // that read it before.
        for &d in &plan.builds {
            for c in self.shipped_dim_columns(plan, d) {
                let host = self.dims[d][c]
                    .as_slice()
                    .map_err(err("reading pinned memory"))?;
                let rows = self.dim_rows[d];
                self.copy
                    .memcpy_htod(&host[..rows], &mut st.dims[d][c].slice_mut(..rows))
                    .map_err(err("shipping a dimension column"))?;
            }
        }
        s.prepare(gpu, plan)?;
        // The build kernel finds the staged columns through the job table, where cudarc's
        // tracking does not see them: it waits for their copies by this event.
        let shipped = self
            .copy
            .record_event(None)
            .map_err(err("recording the shipped dimensions"))?;
        gpu.stream()
            .wait(&shipped)
            .map_err(err("waiting for the shipped dimensions"))?;
        s.build(gpu, plan)?;
        let fact_cols = plan.flight.columns();
        for (i, start) in (0..self.rows).step_by(CHUNK_ROWS).enumerate() {
            let len = CHUNK_ROWS.min(self.rows - start);
            let set = &mut st.chunks[i % 2];
            for (j, &c) in fact_cols.iter().enumerate() {
                let host = self.fact[c as usize]
                    .as_slice()
                    .map_err(err("reading pinned memory"))?;
                self.copy
                    .memcpy_htod(&host[start..start + len], &mut set[j].slice_mut(..len))
                    .map_err(err("shipping a lineorder chunk"))?;
            }
            let cols: Vec<CudaView<i32>> = set[..fact_cols.len()]
                .iter()
                .map(|c| c.slice(..len))
                .collect();
            s.probe(gpu, plan, super::FactView::Plain(&cols), len)?;
        }
        Ok(())
    }
}

impl Engine for CoprocessorEngine<'_> {
    fn name(&self) -> &str {
        "gpu-coprocessor"
    }

    fn run(&self, q: Query) -> Result<QueryResult> {
        self.run_timed(q).map(|(r, _)| r)
    }

    /// Times everything from the first shipped byte to the end of the last probe.
    fn run_timed(&self, q: Query) -> Result<(QueryResult, f64)> {
        let gpu = self.gpu;
        let start = self.events.start(gpu)?;
        self.copy
            .wait(start)
            .map_err(Error::driver("ordering the copy stream", 0))?;
        self.queue(q)?;
        let ms = self.events.stop_ms(gpu)?;
        let r = self.scratch.borrow().result(gpu, q)?;
        Ok((r, ms))
    }
}

/// Host-to-device bandwidth from pinned memory in GB/s, shipped as the engine ships: the
/// median of `reps` transfers of 256 MB in chunks of [`CHUNK_ROWS`] 4-byte rows, from a
/// buffer the host has written (as it writes the columns: the pages then lie where the
/// columns' do, and an unwritten buffer ships measurably slower than the engine does).
pub fn h2d_bandwidth(gpu: &Gpu, reps: usize) -> Result<f64> {
    let n = 1usize << 26;
    let host = pinned(gpu, &vec![0i32; n])?;
    let host = host
        .as_slice()
        .map_err(Error::driver("reading pinned memory", 0))?;
    let mut dev = gpu
        .stream()
        .alloc_zeros::<i32>(n)
        .map_err(Error::driver("allocating a device buffer", n * 4))?;
    let ms: Vec<f64> = gpu
        .time(1, reps.max(1), || {
            for start in (0..n).step_by(CHUNK_ROWS) {
                let end = (start + CHUNK_ROWS).min(n);
                gpu.stream()
                    .memcpy_htod(&host[start..end], &mut dev.slice_mut(start..end))
                    .map_err(Error::driver("copying to the device", (end - start) * 4))?;
            }
            Ok(())
        })?
        .samples_ms;
    Ok(4.0 * n as f64 / median(&ms) / 1e6)
}
