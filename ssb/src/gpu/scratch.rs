//! The device buffers every query reuses ([`Scratch`]): the dimension tables and bitmaps, the
//! 13 plans, the group table and the builds' job table; and the steps of a query over them:
//! clear, build, probe, read back.
use cudarc::driver::{CudaSlice, CudaView, DevicePtr, LaunchConfig};
use tessera_kernels::spec::{KernelShape, KernelSpec};
use tessera_kernels::ssb::build::SSB_BUILD;
use tessera_kernels::ssb::plan::{self as P, GroupLayout};
use tessera_kernels::ssb::plan::{DimJob, FLIGHT_COLS, PackedCol, PackedCols, Plan};
use tessera_kernels::ssb::queries as kq;

use super::plan::{Flight, QueryPlan, TableLayout, group_source};
use crate::query::{Query, QueryResult, Row};
use tessera_host::runtime::{ByValue, Gpu, PodBuffer, resident_grid, resident_grid_smem};
use tessera_host::{Error, Result};

/// The lineorder columns a probe reads: plain, in [`Flight::columns`] order, or the
/// descriptors of the flight's compressed columns.
pub(crate) enum FactView<'a> {
    /// `i32` columns.
    Plain(&'a [CudaView<'a, i32>]),
    /// Compressed columns.
    Packed(&'a PackedFlight),
}

/// A flight's compressed columns on the device: their descriptors ([`PackedCol`] per column,
/// passed to the probe by value) and the probe their kinds take, chosen once at upload, for
/// each order of the keys a plan may take ([`QueryPlan::part_first`]).
pub(crate) struct PackedFlight {
    /// In [`Flight::columns`] order, then (flight 4) with its key columns swapped.
    orders: Vec<PackedOrder>,
}

/// A flight's compressed columns in one order, and the probes their kinds take.
struct PackedOrder {
    cols: ByValue<PackedCols>,
    probe: PackedProbe,
    /// The probe for queries with a selective first test ([`QueryPlan::queued`]), where the
    /// kinds have one that queues its survivors across tiles.
    queued: Option<PackedProbe>,
}

impl PackedOrder {
    fn new(flight: Flight, cols: &[PackedCol]) -> PackedOrder {
        let kinds: Vec<u32> = cols.iter().map(|c| c.kind).collect();
        // The probes specialized for these kinds, if any; else the one that reads them at
        // run time, which queues nothing.
        let (probe, queued) = specialized(flight)
            .iter()
            .find(|s| s.kinds == kinds.as_slice())
            .map_or((any(flight), None), |s| (s.probe, Some(s.queued)));
        let mut descs = PackedCols::default();
        descs.cols[..cols.len()].copy_from_slice(cols);
        PackedOrder {
            cols: ByValue(descs),
            probe,
            queued,
        }
    }
}

impl PackedFlight {
    /// The descriptors `cols` of `flight`'s columns, in [`Flight::columns`] order.
    pub(crate) fn new(flight: Flight, cols: &[PackedCol]) -> Result<PackedFlight> {
        if cols.len() > FLIGHT_COLS {
            return Err(Error::invalid(format!(
                "{} compressed columns for one probe; its kernels take at most {FLIGHT_COLS}",
                cols.len()
            )));
        }
        let mut orders = vec![PackedOrder::new(flight, cols)];
        if flight == Flight::Four {
            let mut swapped = cols.to_vec();
            swapped.swap(Flight::FIRST_KEY, Flight::FIRST_KEY + 1);
            orders.push(PackedOrder::new(flight, &swapped));
        }
        Ok(PackedFlight { orders })
    }

    /// The columns in the plan's order.
    fn order(&self, plan: &QueryPlan) -> &PackedOrder {
        let i = usize::from(plan.part_first()).min(self.orders.len() - 1);
        &self.orders[i]
    }

    /// The probe the plan takes over these columns.
    fn probe_for(&self, plan: &QueryPlan) -> PackedProbe {
        let order = self.order(plan);
        match order.queued {
            Some(queued) if plan.queued => queued,
            _ => order.probe,
        }
    }

    /// Whether the plan's probe queues its survivors across tiles (its `_QUEUED` form).
    fn queues(&self, plan: &QueryPlan) -> bool {
        self.order(plan).queued.is_some() && plan.queued
    }

    /// Bytes of dynamic shared memory the plan's probe takes: its header table, and where it
    /// is a probe of flights 2-4 that does not queue its survivors, its tail queue.
    fn dynamic_bytes(&self, plan: &QueryPlan) -> usize {
        let probe = self.probe_for(plan);
        let threads = probe.shape().threads() as usize;
        let tail = match probe {
            PackedProbe::Other(_) if !self.queues(plan) => P::tail_queue_bytes(threads),
            _ => 0,
        };
        P::head_table_bytes(threads) + tail
    }

    /// The name of the probe kernel the plan takes over these columns.
    pub(crate) fn probe_name(&self, plan: &QueryPlan) -> &'static str {
        self.probe_for(plan).shape().name()
    }
}

/// Compressed probes specialized for their columns' kinds (their tests of the kinds fold away
/// at compile time, with the code of every other kind): the kinds, in the flight's column
/// order, the probe, and its form that queues survivors across tiles.
struct Specialized {
    kinds: &'static [u32],
    probe: PackedProbe,
    queued: PackedProbe,
}

/// The specialized probes of `flight` ([`P::column::probes`]).
fn specialized(flight: Flight) -> &'static [Specialized] {
    use P::column::probes;
    use PackedProbe::{One, Other};
    const fn s(kinds: &'static [u32], probe: PackedProbe, queued: PackedProbe) -> Specialized {
        Specialized {
            kinds,
            probe,
            queued,
        }
    }
    const ONE: &[Specialized] = &[s(
        &probes::FLIGHT1,
        One(&kq::SSB_FLIGHT1_PACKED_NFFF),
        One(&kq::SSB_FLIGHT1_PACKED_NFFF_QUEUED),
    )];
    const TWO: &[Specialized] = &[
        s(
            &probes::FLIGHT23,
            Other(&kq::SSB_FLIGHT2_PACKED_FFNF),
            Other(&kq::SSB_FLIGHT2_PACKED_FFNF_QUEUED),
        ),
        s(
            &probes::FLIGHT23_SUPP,
            Other(&kq::SSB_FLIGHT2_PACKED_NFNF),
            Other(&kq::SSB_FLIGHT2_PACKED_NFNF_QUEUED),
        ),
    ];
    const THREE: &[Specialized] = &[
        s(
            &probes::FLIGHT23,
            Other(&kq::SSB_FLIGHT3_PACKED_FFNF),
            Other(&kq::SSB_FLIGHT3_PACKED_FFNF_QUEUED),
        ),
        s(
            &probes::FLIGHT23_SUPP,
            Other(&kq::SSB_FLIGHT3_PACKED_NFNF),
            Other(&kq::SSB_FLIGHT3_PACKED_NFNF_QUEUED),
        ),
    ];
    const FOUR: &[Specialized] = &[
        s(
            &probes::FLIGHT4,
            Other(&kq::SSB_FLIGHT4_PACKED_FFFNFF),
            Other(&kq::SSB_FLIGHT4_PACKED_FFFNFF_QUEUED),
        ),
        s(
            &probes::FLIGHT4_SUPP,
            Other(&kq::SSB_FLIGHT4_PACKED_NFFNFF),
            Other(&kq::SSB_FLIGHT4_PACKED_NFFNFF_QUEUED),
        ),
    ];
    match flight {
        Flight::One => ONE,
        Flight::Two => TWO,
        Flight::Three => THREE,
        Flight::Four => FOUR,
    }
}

/// The probe of `flight` that reads its columns' kinds at run time.
fn any(flight: Flight) -> PackedProbe {
    match flight {
        Flight::One => PackedProbe::One(&kq::SSB_FLIGHT1_PACKED),
        Flight::Two => PackedProbe::Other(&kq::SSB_FLIGHT2_PACKED),
        Flight::Three => PackedProbe::Other(&kq::SSB_FLIGHT3_PACKED),
        Flight::Four => PackedProbe::Other(&kq::SSB_FLIGHT4_PACKED),
    }
}

/// Flight 1's compressed probes' parameters.
type Packed1Args = (PackedCols, u32, *mut u16, *mut Plan, *mut u64, *mut u32);
/// Flights 2-4's compressed probes' parameters.
type PackedArgs = (
    PackedCols,
    u32,
    *mut u16,
    *mut u32,
    *mut Plan,
    *mut u64,
    *mut u32,
);

/// A compressed probe kernel: flight 1's or one of flights 2-4's.
#[derive(Clone, Copy)]
enum PackedProbe {
    One(&'static KernelSpec<Packed1Args>),
    Other(&'static KernelSpec<PackedArgs>),
}

impl PackedProbe {
    fn shape(&self) -> KernelShape {
        match self {
            PackedProbe::One(spec) => spec.shape(),
            PackedProbe::Other(spec) => spec.shape(),
        }
    }
}

/// Device buffers every query reuses: dimension tables, plans, group table, and the builds'
/// job table.
pub(crate) struct Scratch {
    layout: TableLayout,
    payload: CudaSlice<u16>,
    bits: CudaSlice<u32>,
    /// Every query's plan (in [`Query::ALL`] order), uploaded once: a run's writes to its
    /// plan (the group ranges, the status flags) are the same in every run over the same
    /// data, so a plan never needs restoring.
    plans: PodBuffer<Plan>,
    jobs: PodBuffer<DimJob>,
    /// Rows per dimension, as in the job table.
    dim_rows: [usize; P::DIMS],
    sums: CudaSlice<u64>,
    counts: CudaSlice<u32>,
    /// Group slots from this one on are zero: the last query's table size once its result
    /// was read, all of them while a query may still be adding.
    groups_dirty: std::cell::Cell<usize>,
}

impl Scratch {
    /// Buffers for `plans` (one per query of [`Query::ALL`]) whose builds read the columns
    /// `dims` (per dimension, in [`dim_columns`] order). The columns must outlive the engine
    /// and keep their place: the job table holds their addresses.
    pub(crate) fn new(
        gpu: &Gpu,
        layout: TableLayout,
        plans: &[QueryPlan],
        dims: &[Vec<CudaView<'_, i32>>],
        dim_rows: [usize; P::DIMS],
    ) -> Result<Scratch> {
        let s = gpu.stream();
        let alloc = |what| Error::driver(what, 0);
        let plans: Vec<Plan> = plans.iter().map(|p| p.plan).collect();
        let mut jobs = [DimJob::default(); P::DIMS];
        for ((job, cols), rows) in jobs.iter_mut().zip(dims).zip(dim_rows) {
            for (slot, col) in job.cols.iter_mut().zip(cols) {
                *slot = col.device_ptr(s).0;
            }
            job.rows = rows as u64;
        }
        Ok(Scratch {
            payload: s
                .alloc_zeros::<u16>(layout.payload_slots)
                .map_err(alloc("allocating SSB dimension tables"))?,
            bits: s
                .alloc_zeros::<u32>(layout.bit_words)
                .map_err(alloc("allocating SSB dimension bitmaps"))?,
            plans: PodBuffer::upload(gpu, &plans)?,
            jobs: PodBuffer::upload(gpu, &jobs)?,
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
        let bits = plan.builds.iter().map(|&d| {
            let l = self.layout.dims[d];
            let end = if plan.plan.dims[d].codes != P::NO_CODES {
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
        let mut pl = self.plans.item_mut(plan.query as usize)?;
        // SAFETY: the job table names each built dimension's columns with their row counts,
        // the grid covers their tiles (and the `clear` group slots), and the payload and
        // bitmap buffers hold every dimension's slots at the plan's offsets.
        unsafe {
            gpu.launch(
                &SSB_BUILD,
                cfg,
                (jobs, pay, bits, &mut pl, sums, counts, &clear),
            )
        }
    }

    /// Queues the probe kernel of the plan's flight over `rows` rows of its columns.
    pub(crate) fn probe(
        &mut self,
        gpu: &Gpu,
        plan: &QueryPlan,
        cols: FactView<'_>,
        rows: usize,
    ) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        let n = u32::try_from(rows)
            .ok()
            .filter(|&n| n <= P::MAX_PROBE_ROWS)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{}: {rows} lineorder rows in one probe, more than the GPU engine's {}; \
                     run it in coprocessor mode, whose chunks are smaller",
                    plan.query,
                    P::MAX_PROBE_ROWS
                ))
            })?;
        let cfg = match cols {
            FactView::Plain(_) => resident_grid(gpu, &plan.flight.shape(), rows)?,
            FactView::Packed(p) => {
                let shape = p.probe_for(plan).shape();
                resident_grid_smem(gpu, &shape, rows, p.dynamic_bytes(plan))?
            }
        };
        let pl = &mut self.plans.item_mut(plan.query as usize)?;
        let (pay, bits, sums, counts) = (
            &mut self.payload,
            &mut self.bits,
            &mut self.sums,
            &mut self.counts,
        );
        // SAFETY (each arm): the probe kernels are persistent (any grid): every column holds
        // `rows` rows (a compressed one as its descriptor says, its arrays held by the
        // engine), the plan was built for these buffers, and the group tables hold
        // GLOBAL_GROUPS slots.
        match (cols, plan.flight) {
            (FactView::Plain(c), Flight::One) => {
                let args = (&c[0], &c[1], &c[2], &c[3], &n, pay, pl, sums, counts);
                // SAFETY: as above.
                unsafe { gpu.launch(&kq::SSB_FLIGHT1, cfg, args) }
            }
            (FactView::Plain(c), Flight::Two) => {
                let args = (&c[0], &c[1], &c[2], &c[3], &n, pay, bits, pl, sums, counts);
                // SAFETY: as above.
                unsafe { gpu.launch(&kq::SSB_FLIGHT2, cfg, args) }
            }
            (FactView::Plain(c), Flight::Three) => {
                let args = (&c[0], &c[1], &c[2], &c[3], &n, pay, bits, pl, sums, counts);
                // SAFETY: as above.
                unsafe { gpu.launch(&kq::SSB_FLIGHT3, cfg, args) }
            }
            (FactView::Plain(c), Flight::Four) => {
                let (k, j) = (Flight::FIRST_KEY, Flight::FIRST_KEY + 1);
                let (c1, c2) = if plan.part_first() {
                    (&c[j], &c[k])
                } else {
                    (&c[k], &c[j])
                };
                let (c0, c3, c4, c5) = (&c[0], &c[3], &c[4], &c[5]);
                let args = (c0, c1, c2, c3, c4, c5, &n, pay, bits, pl, sums, counts);
                // SAFETY: as above.
                unsafe { gpu.launch(&kq::SSB_FLIGHT4, cfg, args) }
            }
            (FactView::Packed(p), _) => match p.probe_for(plan) {
                PackedProbe::One(spec) => {
                    let args = (&p.order(plan).cols, &n, pay, pl, sums, counts);
                    // SAFETY: as above; the kernel's kinds are the columns'.
                    unsafe { gpu.launch(spec, cfg, args) }
                }
                PackedProbe::Other(spec) => {
                    let args = (&p.order(plan).cols, &n, pay, bits, pl, sums, counts);
                    // SAFETY: as above; the kernel's kinds are the columns'.
                    unsafe { gpu.launch(spec, cfg, args) }
                }
            },
        }
    }

    /// Downloads the group table and decodes it into the query's result (synchronizes).
    pub(crate) fn result(&self, gpu: &Gpu, q: Query) -> Result<QueryResult> {
        let s = gpu.stream();
        let err = |what| Error::driver(what, 0);
        let w = self.plans.read(gpu, q as usize)?;
        if w.status.bad_dimension != 0 {
            return Err(Error::invalid(format!(
                "{q}: a dimension key lies outside its table or a group value exceeds {}",
                P::MAX_PAYLOAD
            )));
        }
        let layout = GroupLayout::from_ranges(|d| (w.dims[d].group_min, w.dims[d].group_max));
        if w.status.groups_overflow != 0 || layout.total > P::GLOBAL_GROUPS as u64 {
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
