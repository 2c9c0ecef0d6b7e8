//! Ordered aggregation (issue 22; seeds 003 and 004): the count and the 64-bit sum of a `u32`
//! column over each run of equal adjacent keys, for input already in key order, with the
//! pipelines of seed 004 and the atomic variants of seed 003 selectable by name (kernels and
//! their description in `tessera_kernels::ops::aggregate_ordered`).
//!
//! The result holds one group per run, in row order: sorted keys give one group per distinct
//! key in key order; keys that are not sorted are not refused (checking would cost a pass),
//! they give one group per run, as `reduce_by_key` does. [`crate::cpu::aggregate_runs`] is the
//! CPU version.
use cudarc::driver::LaunchConfig;
use tessera_kernels::layout::STATUS_STRIDE;
use tessera_kernels::ops::aggregate_ordered::{
    self as k, NAIVE, ORDERED_MAX_CHUNK, ORDERED_SHARED_ROWS, ORDERED_STAGED_ROWS, OrderedParams,
    PRIVATE_ARRAY, PRIVATE_VARIABLE, ordered_dynamic_bytes,
};
use tessera_kernels::spec as k_spec;

use super::records::ptr;
use crate::error::{Error, Result};
use crate::ops::check_same_len;
use crate::ops::scan::exclusive_scan_into;
use crate::runtime::{DeviceColumn, Gpu, PodBuffer};

/// How an ordered aggregation finds each row's group (seed 004).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderedPipeline {
    /// Map, partial prefix sum per chunk, offsets (a device scan), offset addition,
    /// aggregation: five kernels.
    Five,
    /// Map, partial sum and offsets fused (the look-back over the blocks), offset addition,
    /// aggregation: three kernels.
    Three,
    /// The chunks' offsets, then the aggregation finding the groups from the keys: two
    /// kernels.
    Two,
}

/// How an ordered aggregation adds the rows up (seed 003).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderedVariant {
    /// One atomic per row and accumulator.
    Naive,
    /// One atomic flush per group of a thread's chunk.
    PrivateVariable,
    /// Atomic flushes for a chunk's first and last group, plain stores for those in between.
    PrivateArray,
}

/// Where an ordered aggregation's flushes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicTarget {
    /// The result in device memory.
    Global,
    /// A table of the block's groups in shared memory, merged into the result by the block
    /// (atomics for its first and last group only).
    Shared,
}

/// How the lanes of an ordered aggregation read their chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderedLoads {
    /// From device memory, consecutive lanes `chunk` rows apart (the seeds' layout).
    Direct,
    /// Each warp copies its rows to shared memory with coalesced loads first; at most
    /// [`ORDERED_STAGED_ROWS`] rows per block.
    Staged,
}

/// One configuration of the ordered aggregation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OrderedPlan {
    /// Kernels.
    pub pipeline: OrderedPipeline,
    /// Atomics.
    pub variant: OrderedVariant,
    /// Where they go.
    pub target: AtomicTarget,
    /// Threads per block: a multiple of 32 from 32 to 1024.
    pub threads: u32,
    /// Rows per thread: a power of two from 1 to [`ORDERED_MAX_CHUNK`]; with a shared
    /// target, `threads * chunk` at most [`ORDERED_SHARED_ROWS`].
    pub chunk: u32,
    /// How the lanes read their chunks.
    pub loads: OrderedLoads,
}

impl Default for OrderedPlan {
    /// The two-kernel pipeline with private arrays in device memory, 256 threads of 8 rows
    /// read directly (the best shape of the sweep at 10^6 groups on an H100).
    fn default() -> Self {
        OrderedPlan {
            pipeline: OrderedPipeline::Two,
            variant: OrderedVariant::PrivateArray,
            target: AtomicTarget::Global,
            threads: 256,
            chunk: 8,
            loads: OrderedLoads::Direct,
        }
    }
}

impl OrderedPlan {
    /// Checks the block shape, naming what is wrong.
    pub fn check(&self) -> Result<()> {
        let (t, c) = (self.threads as usize, self.chunk as usize);
        if !(32..=1024).contains(&t) || t % 32 != 0 {
            return Err(Error::invalid(format!(
                "aggregate_sorted: {t} threads per block; use a multiple of 32 from 32 to 1024"
            )));
        }
        if !c.is_power_of_two() || c > ORDERED_MAX_CHUNK {
            return Err(Error::invalid(format!(
                "aggregate_sorted: a chunk of {c} rows per thread; use a power of two from 1 \
                 to {ORDERED_MAX_CHUNK}"
            )));
        }
        if self.target == AtomicTarget::Shared && t * c > ORDERED_SHARED_ROWS {
            return Err(Error::invalid(format!(
                "aggregate_sorted: {t} threads of {c} rows hold {} rows per block, more than \
                 a shared-memory table takes ({ORDERED_SHARED_ROWS}); use fewer threads or \
                 rows, or AtomicTarget::Global",
                t * c
            )));
        }
        if self.loads == OrderedLoads::Staged && t * c > ORDERED_STAGED_ROWS {
            return Err(Error::invalid(format!(
                "aggregate_sorted: {t} threads of {c} rows hold {} rows per block, more than \
                 staged loads take ({ORDERED_STAGED_ROWS}); use fewer threads or rows, or \
                 OrderedLoads::Direct",
                t * c
            )));
        }
        Ok(())
    }
}

/// The groups of an ordered aggregation on the host: each run's key, row count and sum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderedAggregates {
    /// Each group's key.
    pub keys: Vec<u32>,
    /// Each group's rows.
    pub counts: Vec<u32>,
    /// Each group's sum of values.
    pub sums: Vec<u64>,
}

/// The groups of an ordered aggregation on the device.
pub struct DeviceOrderedAggregates {
    /// Each group's key.
    pub keys: DeviceColumn<u32>,
    /// Each group's rows.
    pub counts: DeviceColumn<u32>,
    /// Each group's sum of values.
    pub sums: DeviceColumn<u64>,
}

impl DeviceOrderedAggregates {
    /// Groups.
    pub fn groups(&self) -> usize {
        self.keys.len()
    }

    /// The groups on the host.
    pub fn to_host(&self, gpu: &Gpu) -> Result<OrderedAggregates> {
        Ok(OrderedAggregates {
            keys: self.keys.to_vec(gpu)?,
            counts: self.counts.to_vec(gpu)?,
            sums: self.sums.to_vec(gpu)?,
        })
    }
}

/// Counts and sums `values` over each run of equal adjacent `keys` (one group per distinct key
/// for sorted keys) as `plan` says, the result on the device. Errors before any work for
/// columns of different lengths or a plan [`OrderedPlan::check`] refuses.
pub fn aggregate_sorted(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    values: &DeviceColumn<u32>,
    plan: &OrderedPlan,
) -> Result<DeviceOrderedAggregates> {
    let n = keys.len();
    let p_staged = plan.loads == OrderedLoads::Staged;
    check_same_len("aggregate_sorted", "values", values.len(), n)?;
    plan.check()?;
    if n == 0 {
        return Ok(DeviceOrderedAggregates {
            keys: gpu.zeros(0)?,
            counts: gpu.zeros(0)?,
            sums: gpu.zeros(0)?,
        });
    }
    let (nt, c) = (plan.threads as usize, plan.chunk as usize);
    let chunks = n.div_ceil(c);
    let blocks = chunks.div_ceil(nt);
    let shape = |grid: usize, smem: usize| LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (nt as u32, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let (per_row, per_chunk) = (shape(n.div_ceil(nt), 0), shape(blocks, 0));
    // The dynamic shared memory of a kernel over chunks, allowed for it.
    let dynamic = |spec: &k_spec::KernelSpec<k::OrderedArgs>,
                   shared: bool,
                   columns: usize|
     -> Result<LaunchConfig> {
        let staged = if p_staged { columns } else { 0 };
        let bytes = ordered_dynamic_bytes(nt * c, shared, staged);
        if bytes > 0 {
            let most = gpu.allow_max_dynamic_smem(spec)?;
            if bytes > most {
                return Err(Error::invalid(format!(
                    "aggregate_sorted: {} rows per block need {bytes} bytes of shared memory, \
                     this GPU gives a block {most}; use fewer threads or rows",
                    nt * c
                )));
            }
        }
        Ok(shape(blocks, bytes))
    };
    // The aggregation's kernel and shared memory, checked before any work.
    let v = match plan.variant {
        OrderedVariant::Naive => NAIVE,
        OrderedVariant::PrivateVariable => PRIVATE_VARIABLE,
        OrderedVariant::PrivateArray => PRIVATE_ARRAY,
    } as usize;
    let shared = plan.target == AtomicTarget::Shared;
    let table = if plan.pipeline == OrderedPipeline::Two {
        k::ORDERED_AGG_KEYS
    } else {
        k::ORDERED_AGG
    };
    let spec = table[v][shared as usize];
    let cfg = dynamic(&spec, shared, 2)?;
    let mut p = OrderedParams {
        keys: ptr(gpu, keys),
        values: ptr(gpu, values),
        n: n as u32,
        chunk: c as u32,
        staged: p_staged as u32,
        ..OrderedParams::default()
    };
    let mut offsets = gpu.scratch::<u32>(chunks)?;
    p.offsets = ptr(gpu, &offsets);
    // Buffers of the five- and three-kernel pipelines, kept until the aggregation has run.
    let mut kept: Vec<DeviceColumn<u32>> = Vec::new();
    let heads = match plan.pipeline {
        OrderedPipeline::Five => {
            let (flags, partial, positions) = (
                gpu.scratch::<u32>(n)?,
                gpu.scratch::<u32>(n)?,
                gpu.scratch::<u32>(n)?,
            );
            let totals = gpu.scratch::<u32>(chunks)?;
            (p.flags, p.partial, p.positions, p.totals) = (
                ptr(gpu, &flags),
                ptr(gpu, &partial),
                ptr(gpu, &positions),
                ptr(gpu, &totals),
            );
            let buf = PodBuffer::upload(gpu, std::slice::from_ref(&p))?;
            // SAFETY: one thread per row of the n keys and flags.
            unsafe { gpu.launch(&k::ORDERED_MAP, per_row, (&buf,)) }?;
            // SAFETY: one thread per chunk of the n flags and partial sums; a total per chunk.
            unsafe { gpu.launch(&k::ORDERED_PARTIAL, per_chunk, (&buf,)) }?;
            let state = exclusive_scan_into(gpu, &totals, &mut offsets, None)?;
            let heads = state.read(gpu, 1)? as u32;
            // SAFETY: one thread per row of the n partial sums and positions; an offset per
            // chunk.
            unsafe { gpu.launch(&k::ORDERED_OFFSET_ADD, per_row, (&buf,)) }?;
            kept.extend([flags, partial, positions, totals]);
            heads
        }
        OrderedPipeline::Three | OrderedPipeline::Two => {
            let three = plan.pipeline == OrderedPipeline::Three;
            let status = gpu.zeros::<u64>(blocks * STATUS_STRIDE)?;
            let heads = gpu.zeros::<u32>(1)?;
            (p.status, p.heads) = (ptr(gpu, &status), ptr(gpu, &heads));
            if three {
                let (partial, positions) = (gpu.scratch::<u32>(n)?, gpu.scratch::<u32>(n)?);
                (p.partial, p.positions) = (ptr(gpu, &partial), ptr(gpu, &positions));
                kept.extend([partial, positions]);
            }
            let buf = PodBuffer::upload(gpu, std::slice::from_ref(&p))?;
            let first = if three {
                k::ORDERED_PARTIAL_OFFSETS
            } else {
                k::ORDERED_OFFSETS
            };
            // SAFETY: one thread per chunk of the n keys (and partial sums), an offset per
            // chunk, zeroed status words for every block, the heads word;
            // the staged keys' shared memory.
            unsafe { gpu.launch(&first, dynamic(&first, false, 1)?, (&buf,)) }?;
            if three {
                // SAFETY: one thread per row of the n partial sums and positions.
                unsafe { gpu.launch(&k::ORDERED_OFFSET_ADD, per_row, (&buf,)) }?;
            }
            let h = heads.to_vec(gpu)?[0];
            drop(status);
            h
        }
    };
    let groups = heads as usize + 1;
    if groups > n {
        return Err(Error::invalid(format!(
            "aggregate_sorted: {groups} groups among {n} rows (internal)"
        )));
    }
    let out = DeviceOrderedAggregates {
        keys: gpu.scratch(groups)?,
        counts: gpu.zeros(groups)?,
        sums: gpu.zeros(groups)?,
    };
    (p.out_keys, p.counts, p.sums) = (
        ptr(gpu, &out.keys),
        ptr(gpu, &out.counts),
        ptr(gpu, &out.sums),
    );
    let buf = PodBuffer::upload(gpu, std::slice::from_ref(&p))?;
    // SAFETY: one thread per chunk of the n keys and values (positions, offsets), zeroed
    // counts and sums for every group, the shared table's and the staged columns' bytes.
    unsafe { gpu.launch(&spec, cfg, (&buf,)) }?;
    drop(kept);
    Ok(out)
}
