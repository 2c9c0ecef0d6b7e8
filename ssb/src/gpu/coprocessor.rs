//! Coprocessor mode (thesis §3.3): the columns live in pinned host memory and every query
//! ships what it reads over PCIe: the dimension columns it builds from, then lineorder's
//! columns in chunks, double-buffered on a copy stream so that the probe of chunk `i` runs
//! while chunk `i + 1` is in flight. The builds and probes are the resident engine's; the
//! time is bound below by the shipped bytes over the PCIe bandwidth.
//!
//! Over compressed columns ([`CoprocessorEngine::compressed`], thesis §5.6.5) a chunk ships
//! each column's compressed words of its rows (for GPU-FOR, its whole blocks, their entries
//! in the column's block index, `PackedCol::index`, and their starts), which the compressed
//! probes decode where they read them: fewer bytes over the bus, the same answers.
use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::PinnedHostSlice;
use cudarc::driver::ValidAsZeroBits;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr};
use tessera_host::compress::Encoded;
use tessera_kernels::compress::format::BLOCK;
use tessera_kernels::ssb::plan::{self as P, PackedCol, column};

use super::packed::{Parts, check_columns, parts};
use super::{
    Events, FactCol, Flight, PackedFlight, QueryPlan, Scratch, TableLayout, dim_columns, dim_preds,
};
use crate::data::SsbData;
use crate::engine::Engine;
use crate::query::{Query, QueryResult};
use tessera_host::runtime::{Gpu, median};
use tessera_host::{Error, Result};

/// Lineorder rows per shipped chunk (16 MB per 4-byte column); whole GPU-FOR blocks.
pub const CHUNK_ROWS: usize = 1 << 22;
const _: () = assert!(CHUNK_ROWS.is_multiple_of(BLOCK));

/// The chunks `(start, len)` of `rows` rows, `chunk_rows` each but the last.
fn chunks(rows: usize, chunk_rows: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..rows)
        .step_by(chunk_rows)
        .map(move |start| (start, chunk_rows.min(rows - start)))
}

/// Most lineorder columns one query reads (flight 4).
const MAX_FACT_COLS: usize = 6;

fn pinned<T: DeviceRepr + ValidAsZeroBits + Copy>(
    gpu: &Gpu,
    data: &[T],
) -> Result<PinnedHostSlice<T>> {
    // A zero-byte pinned allocation is refused by the driver: keep one item of room.
    // SAFETY: the memory is written below before any use.
    let mut p = unsafe { gpu.context().alloc_pinned::<T>(data.len().max(1)) }.map_err(
        Error::driver("allocating pinned host memory", std::mem::size_of_val(data)),
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
    fact: HostFact,
    dims: Vec<Vec<PinnedHostSlice<i32>>>,
    dim_rows: Vec<usize>,
    staged: RefCell<Staging>,
    plans: Vec<QueryPlan>,
    scratch: RefCell<Scratch>,
    events: Events,
    rows: usize,
    chunk_rows: usize,
}

/// Lineorder's query columns in pinned host memory, in [`FactCol::ALL`] order.
enum HostFact {
    Plain(Vec<PinnedHostSlice<i32>>),
    Packed(Packed),
}

/// The compressed query columns, their device chunk buffers and the descriptors of each
/// flight's columns in each chunk.
struct Packed {
    cols: Vec<HostPacked>,
    /// Two sets of chunk buffers.
    chunks: RefCell<[ChunkSet; 2]>,
    /// Per [`Flight`], per chunk: the descriptors of the flight's columns there.
    descs: Vec<Vec<PackedFlight>>,
}

/// Per column, a chunk's arrays on the device ([`Arrays`]).
type ChunkSet = Vec<Arrays<CudaSlice<u32>>>;

/// A compressed column's arrays, in the order of [`PackedCol`]'s: data words, GPU-FOR's
/// block index and its block starts (empty for the other kinds).
type Arrays<T> = [T; 3];

/// A compressed query column in pinned host memory, and what each chunk ships of it.
struct HostPacked {
    kind: u32,
    /// NSF's reference ([`PackedCol::reference`]).
    reference: u32,
    /// Its data words, GPU-FOR's block index ([`PackedCol::index`]) and block starts
    /// ([`PackedCol::starts`]).
    arrays: Arrays<PinnedHostSlice<u32>>,
    /// Per chunk, the range of each array it ships ([`chunk_ranges`]).
    ranges: Vec<Arrays<Range<usize>>>,
}

/// What ships of column `p` for the rows `start..start + len` (`start` a multiple of
/// [`BLOCK`]): the range of each of its [`Arrays`] (the last two empty but for GPU-FOR).
fn chunk_ranges(p: &Parts, start: usize, len: usize) -> Arrays<Range<usize>> {
    let end = start + len;
    match p.kind {
        column::GPU_FOR => {
            let (b0, b1) = (start / BLOCK, end.div_ceil(BLOCK));
            let last = p.starts.get(b1).map_or(p.data.len(), |&s| s as usize);
            [
                p.starts[b0] as usize..last,
                b0 * P::INDEX_WORDS..b1 * P::INDEX_WORDS,
                b0..b1,
            ]
        }
        column::NSF1 => [start / 4..end.div_ceil(4), 0..0, 0..0],
        column::NSF2 => [start / 2..end.div_ceil(2), 0..0, 0..0],
        _ => [start..end, 0..0, 0..0],
    }
}

/// Device buffers the shipped columns land in.
struct Staging {
    dims: Vec<Vec<CudaSlice<i32>>>,
    /// Two sets of chunk buffers for the plain columns (empty over compressed ones).
    chunks: [Vec<CudaSlice<i32>>; 2],
}

impl<'g> CoprocessorEngine<'g> {
    /// Copies `data`'s query columns into pinned host memory and sets up the device buffers
    /// (dimension columns, two sets of chunk buffers) and a copy stream.
    pub fn new(gpu: &'g Gpu, data: &SsbData) -> Result<CoprocessorEngine<'g>> {
        CoprocessorEngine::with_chunks(gpu, data, None, CHUNK_ROWS)
    }

    /// Coprocessor mode over compressed lineorder columns: `encoded`, the nine query
    /// columns in [`FactCol::ALL`] order, each in one of
    /// [`PACKED_SCHEMES`](super::PACKED_SCHEMES) (`Err` otherwise), as
    /// [`GpuEngine::compressed_from`](super::GpuEngine::compressed_from) takes them; they
    /// must hold `data`'s values, which the caller vouches for. Each chunk ships its rows'
    /// compressed words.
    pub fn compressed(
        gpu: &'g Gpu,
        data: &SsbData,
        encoded: &[Encoded],
    ) -> Result<CoprocessorEngine<'g>> {
        CoprocessorEngine::with_chunks(gpu, data, Some(encoded), CHUNK_ROWS)
    }

    /// [`CoprocessorEngine::new`] (`encoded` `None`) or [`CoprocessorEngine::compressed`]
    /// shipping lineorder in chunks of `chunk_rows` rows rather than [`CHUNK_ROWS`]: a positive
    /// multiple of 128 (a GPU-FOR block), else `Err`.
    pub fn with_chunks(
        gpu: &'g Gpu,
        data: &SsbData,
        encoded: Option<&[Encoded]>,
        chunk_rows: usize,
    ) -> Result<CoprocessorEngine<'g>> {
        if chunk_rows == 0 || !chunk_rows.is_multiple_of(BLOCK) {
            return Err(Error::invalid(format!(
                "coprocessor chunks of {chunk_rows} rows: use a positive multiple of {BLOCK} \
                 (a GPU-FOR block), such as {CHUNK_ROWS}"
            )));
        }
        data.validate()?;
        let layout = TableLayout::of(data)?;
        let plans: Vec<QueryPlan> = Query::ALL
            .iter()
            .map(|&q| QueryPlan::new(q, data, &layout))
            .collect();
        let rows = data.lineorder.len();
        if let Some(e) = encoded {
            check_columns(e, rows)?;
        }
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
        let chunk = chunk_rows.min(rows);
        let set = || {
            (0..MAX_FACT_COLS)
                .map(|_| alloc(chunk))
                .collect::<Result<Vec<_>>>()
        };
        let (fact, chunks) = match encoded {
            None => {
                let fact = FactCol::ALL
                    .iter()
                    .map(|c| pinned(gpu, c.of(data)))
                    .collect::<Result<Vec<_>>>()?;
                (HostFact::Plain(fact), [set()?, set()?])
            }
            Some(e) => (
                HostFact::Packed(Packed::new(gpu, e, rows, chunk_rows)?),
                [Vec::new(), Vec::new()],
            ),
        };
        let copy = gpu
            .context()
            .new_stream()
            .map_err(Error::driver("creating a copy stream", 0))?;
        // The builds read the staged dimension columns, which stay where they are.
        let staged_refs: Vec<Vec<CudaView<i32>>> = staged_dims
            .iter()
            .map(|cols| cols.iter().map(|c| c.slice(..)).collect())
            .collect();
        let dim_counts = std::array::from_fn(|d| dim_rows[d]);
        let scratch = Scratch::new(gpu, layout, &plans, &staged_refs, dim_counts)?;
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
            rows,
            chunk_rows,
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
        let fact = match &self.fact {
            HostFact::Plain(_) => plan.flight.columns().len() * self.rows,
            HostFact::Packed(p) => plan
                .flight
                .columns()
                .iter()
                .flat_map(|&c| &p.cols[c as usize].ranges)
                .map(|r| r.iter().map(Range::len).sum::<usize>())
                .sum(),
        };
        4 * (dims + fact) as u64
    }

    fn queue(&self, q: Query) -> Result<()> {
        let gpu = self.gpu;
        let plan = &self.plans[q as usize];
        let err = |what| Error::driver(what, 0);
        let mut st = self.staged.borrow_mut();
        let st = &mut *st;
        let mut s = self.scratch.borrow_mut();
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
        // The builds wait for the staged columns' copies (device slices carry no events).
        compute_waits_for_copies(&self.copy, gpu)?;
        s.build(gpu, plan)?;
        let fact = match &self.fact {
            HostFact::Plain(fact) => fact,
            HostFact::Packed(p) => return self.ship_packed(p, plan, &mut s),
        };
        let fact_cols = plan.flight.columns();
        let mut order = ChunkOrder::default();
        for (i, (start, len)) in chunks(self.rows, self.chunk_rows).enumerate() {
            let set = i % 2;
            order.reuse(&self.copy, set)?;
            let bufs = &mut st.chunks[set];
            for (j, &c) in fact_cols.iter().enumerate() {
                let host = fact[c as usize]
                    .as_slice()
                    .map_err(err("reading pinned memory"))?;
                self.copy
                    .memcpy_htod(&host[start..start + len], &mut bufs[j].slice_mut(..len))
                    .map_err(err("shipping a lineorder chunk"))?;
            }
            compute_waits_for_copies(&self.copy, gpu)?;
            let cols: Vec<CudaView<i32>> = bufs[..fact_cols.len()]
                .iter()
                .map(|c| c.slice(..len))
                .collect();
            s.probe(gpu, plan, super::FactView::Plain(&cols), len)?;
            order.probed(gpu, set)?;
        }
        Ok(())
    }

    /// Ships the compressed columns of `plan`'s flight chunk by chunk and probes each (the
    /// probe finds the chunk buffers through its descriptors), ordered as the plain chunks
    /// ([`ChunkOrder`]).
    fn ship_packed(&self, p: &Packed, plan: &QueryPlan, s: &mut Scratch) -> Result<()> {
        let gpu = self.gpu;
        let err = |what| Error::driver(what, 0);
        let mut bufs = p.chunks.borrow_mut();
        let mut order = ChunkOrder::default();
        for (i, (_, len)) in chunks(self.rows, self.chunk_rows).enumerate() {
            let set = i % 2;
            order.reuse(&self.copy, set)?;
            for &c in plan.flight.columns() {
                let col = &p.cols[c as usize];
                let to = &mut bufs[set][c as usize];
                for ((range, from), to) in col.ranges[i].iter().zip(&col.arrays).zip(to) {
                    if range.is_empty() {
                        continue;
                    }
                    let host = from.as_slice().map_err(err("reading pinned memory"))?;
                    self.copy
                        .memcpy_htod(&host[range.clone()], &mut to.slice_mut(..range.len()))
                        .map_err(err("shipping a compressed chunk"))?;
                }
            }
            compute_waits_for_copies(&self.copy, gpu)?;
            let descs = &p.descs[plan.flight as usize][i];
            s.probe(gpu, plan, super::FactView::Packed(descs), len)?;
            order.probed(gpu, set)?;
        }
        Ok(())
    }
}

/// Makes the compute stream wait for the copies queued so far on `copy`.
fn compute_waits_for_copies(copy: &CudaStream, gpu: &Gpu) -> Result<()> {
    let ev = copy
        .record_event(None)
        .map_err(Error::driver("recording the shipped copies", 0))?;
    gpu.stream()
        .wait(&ev)
        .map_err(Error::driver("waiting for the shipped copies", 0))
}

/// The order between the copy stream and the compute stream over the two sets of chunk
/// buffers. Device slices carry no events of their own ([`Gpu`] turns cudarc's tracking
/// off), so it is kept here: a chunk's probe waits for its copies
/// ([`compute_waits_for_copies`]), and the copies into a set for the probe that read that set
/// before. (Everything queued on the compute stream before a query, the buffers' allocation
/// included, is ordered by the start event [`CoprocessorEngine::run_timed`] makes the copy
/// stream wait for.)
#[derive(Default)]
struct ChunkOrder {
    /// Per set, the end of the last probe that read it.
    read: [Option<CudaEvent>; 2],
}

impl ChunkOrder {
    /// Before copies into `set`: the copy stream waits for the probe that read it last.
    fn reuse(&mut self, copy: &CudaStream, set: usize) -> Result<()> {
        if let Some(ev) = self.read[set].take() {
            copy.wait(&ev)
                .map_err(Error::driver("waiting for a chunk's probe", 0))?;
        }
        Ok(())
    }

    /// After the probe of the chunk in `set` is queued.
    fn probed(&mut self, gpu: &Gpu, set: usize) -> Result<()> {
        let ev = gpu
            .stream()
            .record_event(None)
            .map_err(Error::driver("recording a chunk's probe", 0))?;
        self.read[set] = Some(ev);
        Ok(())
    }
}

impl Packed {
    /// Copies `encoded` (checked) into pinned memory, allocates two sets of chunk buffers,
    /// each column's as large as its largest chunk, and uploads every flight's descriptors
    /// of every chunk.
    fn new(gpu: &Gpu, encoded: &[Encoded], rows: usize, chunk_rows: usize) -> Result<Packed> {
        let cols = encoded
            .iter()
            .map(|e| {
                let p = parts(e)?;
                Ok(HostPacked {
                    kind: p.kind,
                    reference: p.reference,
                    arrays: [
                        pinned(gpu, p.data)?,
                        pinned(gpu, &p.index())?,
                        pinned(gpu, p.block_starts())?,
                    ],
                    ranges: chunks(rows, chunk_rows)
                        .map(|(start, len)| chunk_ranges(&p, start, len))
                        .collect(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let alloc = |n: usize| {
            gpu.stream()
                .alloc_zeros::<u32>(n.max(1))
                .map_err(Error::driver("allocating coprocessor buffers", n * 4))
        };
        let mut sets: [ChunkSet; 2] = [Vec::new(), Vec::new()];
        for col in &cols {
            let most = |a: usize| col.ranges.iter().map(|r| r[a].len()).max().unwrap_or(0);
            // GPU-FOR: words past a chunk's blocks, which its last block's values read and a
            // walk brings into L2 (`PackedCol`).
            let pad = if col.kind == column::GPU_FOR {
                P::FOR_PAD_WORDS
            } else {
                0
            };
            for set in &mut sets {
                set.push([alloc(most(0) + pad)?, alloc(most(1))?, alloc(most(2))?]);
            }
        }
        let ptr = |b: &CudaSlice<u32>| b.device_ptr(gpu.stream()).0;
        let mut descs = Vec::new();
        for flight in [Flight::One, Flight::Two, Flight::Three, Flight::Four] {
            let mut per_chunk = Vec::new();
            for i in 0..chunks(rows, chunk_rows).count() {
                let mut flight_descs = Vec::new();
                for &c in flight.columns() {
                    let col = &cols[c as usize];
                    let words = &col.ranges[i][0];
                    let [data, index, starts] = &sets[i % 2][c as usize];
                    // A GPU-FOR probe adds its block starts, word offsets into the whole
                    // column, to `data`: point it where word 0 would lie. The other kinds
                    // index by the chunk's rows.
                    let rebase = if col.kind == column::GPU_FOR {
                        words.start
                    } else {
                        0
                    };
                    flight_descs.push(PackedCol {
                        data: ptr(data).wrapping_sub(4 * rebase as u64),
                        index: ptr(index),
                        starts: ptr(starts),
                        kind: col.kind,
                        reference: col.reference,
                    });
                }
                per_chunk.push(PackedFlight::new(flight, &flight_descs)?);
            }
            descs.push(per_chunk);
        }
        Ok(Packed {
            cols,
            chunks: RefCell::new(sets),
            descs,
        })
    }
}

impl Drop for CoprocessorEngine<'_> {
    /// The buffers are freed on the compute stream: copies still in flight (after a query
    /// that failed midway) finish first.
    fn drop(&mut self) {
        // An error here leaves nothing to do: the context reports it on its next call.
        let _ = self.copy.synchronize();
    }
}

impl Engine for CoprocessorEngine<'_> {
    fn name(&self) -> &str {
        match self.fact {
            HostFact::Plain(_) => "gpu-coprocessor",
            HostFact::Packed(_) => "gpu-coprocessor-compressed",
        }
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
