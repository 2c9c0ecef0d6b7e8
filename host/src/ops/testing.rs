//! Host wrappers of the kernels that exercise the device layer and block-wide functions, for
//! the integration tests. Not part of the stable API.
use cudarc::driver::LaunchConfig;
use tessera_kernels::ops::pkjoin::testing::BlockSortArgs;
use tessera_kernels::ops::testing as k;
use tessera_kernels::spec::{KernelShape, KernelSpec};

use crate::error::Result;
use crate::runtime::{DeviceColumn, DeviceItem, Gpu, tile_grid};

pub use k::{ATOMIC_SLOTS, IDS_PER_THREAD, WARP_PER_THREAD};

fn blocks(spec: &KernelShape, blocks: u32, smem: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (spec.threads(), 1, 1),
        shared_mem_bytes: smem,
    }
}

/// [`k::ARCH_IDS`] over `grid` blocks: `IDS_PER_THREAD` values per thread.
pub fn arch_ids(gpu: &Gpu, grid: u32) -> Result<(u32, Vec<u32>)> {
    let nt = k::ARCH_IDS.threads();
    let mut out = gpu.zeros::<u32>((grid * nt) as usize * IDS_PER_THREAD)?;
    // SAFETY: `out` holds IDS_PER_THREAD words for each of the grid's threads.
    unsafe { gpu.launch(&k::ARCH_IDS, blocks(&k::ARCH_IDS, grid, 0), (&mut out.buf,)) }?;
    Ok((nt, out.to_vec(gpu)?))
}

/// [`k::ARCH_WARP`] over `input` (a multiple of 128 items).
pub fn arch_warp(gpu: &Gpu, input: &[u32]) -> Result<Vec<u32>> {
    let nt = k::ARCH_WARP.threads() as usize;
    assert!(input.len().is_multiple_of(nt), "whole blocks only");
    let d = gpu.upload(input)?;
    let mut out = gpu.zeros::<u32>(input.len() * WARP_PER_THREAD)?;
    // SAFETY: whole blocks, one input and WARP_PER_THREAD outputs per thread.
    unsafe {
        gpu.launch(
            &k::ARCH_WARP,
            blocks(&k::ARCH_WARP, (input.len() / nt) as u32, 0),
            (&d.buf, &mut out.buf),
        )
    }?;
    out.to_vec(gpu)
}

/// [`k::ARCH_ATOMICS`]: returns the global region and each block's shared region.
pub fn arch_atomics(
    gpu: &Gpu,
    input: &[u32],
    init: &[u64; ATOMIC_SLOTS],
) -> Result<(Vec<u64>, Vec<u64>)> {
    let nt = k::ARCH_ATOMICS.threads() as usize;
    assert!(input.len().is_multiple_of(nt), "whole blocks only");
    let grid = input.len() / nt;
    let d = gpu.upload(input)?;
    let di = gpu.upload(&init[..])?;
    let mut global = gpu.upload(&init[..])?;
    let mut out = gpu.zeros::<u64>(grid * ATOMIC_SLOTS)?;
    // SAFETY: whole blocks, one input per thread; ATOMIC_SLOTS words of `init` and `global`,
    // and of `out` per block.
    unsafe {
        gpu.launch(
            &k::ARCH_ATOMICS,
            blocks(&k::ARCH_ATOMICS, grid as u32, 0),
            (&d.buf, &di.buf, &mut global.buf, &mut out.buf),
        )
    }?;
    Ok((global.to_vec(gpu)?, out.to_vec(gpu)?))
}

/// [`k::ARCH_SHARED_STATIC`] and [`k::ARCH_SHARED_DYNAMIC`] over `input` (whole blocks).
pub fn arch_shared(gpu: &Gpu, input: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    let nt = k::ARCH_SHARED_STATIC.threads() as usize;
    assert!(input.len().is_multiple_of(nt), "whole blocks only");
    let grid = (input.len() / nt) as u32;
    let d = gpu.upload(input)?;
    let mut a = gpu.zeros::<u32>(input.len())?;
    let mut b = gpu.zeros::<u32>(input.len())?;
    // SAFETY: whole blocks, one item per thread in both buffers.
    unsafe {
        gpu.launch(
            &k::ARCH_SHARED_STATIC,
            blocks(&k::ARCH_SHARED_STATIC, grid, 0),
            (&d.buf, &mut a.buf),
        )
    }?;
    let smem = k::ARCH_SHARED_DYNAMIC.threads() * 4;
    // SAFETY: as above, with the NT words of dynamic shared memory the kernel reverses in.
    unsafe {
        gpu.launch(
            &k::ARCH_SHARED_DYNAMIC,
            blocks(&k::ARCH_SHARED_DYNAMIC, grid, smem),
            (&d.buf, &mut b.buf),
        )
    }?;
    Ok((a.to_vec(gpu)?, b.to_vec(gpu)?))
}

/// [`k::ARCH_VECTOR`] over `grid` blocks: copies of three regions through vector accesses.
pub fn arch_vector(
    gpu: &Gpu,
    a: &[u32],
    b: &[u64],
    c: &[u32],
) -> Result<(Vec<u32>, Vec<u64>, Vec<u32>)> {
    let threads = b.len() / 2;
    let nt = k::ARCH_VECTOR.threads() as usize;
    assert!(a.len() == threads * 4 && c.len() == threads * 2 && threads.is_multiple_of(nt));
    let (da, db, dc) = (gpu.upload(a)?, gpu.upload(b)?, gpu.upload(c)?);
    let (mut oa, mut ob, mut oc) = (
        gpu.zeros::<u32>(a.len())?,
        gpu.zeros::<u64>(b.len())?,
        gpu.zeros::<u32>(c.len())?,
    );
    // SAFETY: one vector per thread in each region (`a` 4, `b` 2, `c` 2 items per thread), and
    // uploads are 256-byte aligned.
    unsafe {
        gpu.launch(
            &k::ARCH_VECTOR,
            blocks(&k::ARCH_VECTOR, (threads / nt) as u32, 0),
            (
                &da.buf,
                &mut oa.buf,
                &db.buf,
                &mut ob.buf,
                &dc.buf,
                &mut oc.buf,
            ),
        )
    }?;
    Ok((oa.to_vec(gpu)?, ob.to_vec(gpu)?, oc.to_vec(gpu)?))
}

/// [`k::ARCH_FENCE_REDUCE`]: the last-arriving block's total.
pub fn arch_fence_reduce(gpu: &Gpu, input: &[u32]) -> Result<u64> {
    let spec = k::ARCH_FENCE_REDUCE;
    let d = gpu.upload(input)?;
    let grid = spec.tiles(input.len() as u64).max(1) as usize;
    let mut partials = gpu.zeros::<u64>(grid)?;
    let mut counter = gpu.zeros::<u32>(1)?;
    let mut result = gpu.zeros::<u64>(1)?;
    if input.is_empty() {
        return Ok(0);
    }
    let n32 = input.len() as u32;
    // SAFETY: one block per tile of the `n` inputs, one partial per block, zeroed counter.
    unsafe {
        gpu.launch(
            &spec,
            tile_grid(&spec, input.len(), 0)?,
            (
                &d.buf,
                &n32,
                &mut partials.buf,
                &mut counter.buf,
                &mut result.buf,
            ),
        )
    }?;
    Ok(result.to_vec(gpu)?[0])
}

/// [`k::ARCH_MATH`]: `(exp(x), sigmoid(x))` per item.
pub fn arch_math(gpu: &Gpu, input: &[f32]) -> Result<(Vec<f32>, Vec<f32>)> {
    let spec = k::ARCH_MATH;
    let d = gpu.upload(input)?;
    let mut e = gpu.zeros::<f32>(input.len())?;
    let mut s = gpu.zeros::<f32>(input.len())?;
    if !input.is_empty() {
        let n32 = input.len() as u32;
        // SAFETY: one block per tile of the `n` items in every buffer.
        unsafe {
            gpu.launch(
                &spec,
                tile_grid(&spec, input.len(), 0)?,
                (&d.buf, &n32, &mut e.buf, &mut s.buf),
            )
        }?;
    }
    Ok((e.to_vec(gpu)?, s.to_vec(gpu)?))
}

/// [`k::BLOCK_PRED_I32`]: `(x < a OR x > b) AND x != c` as 0 / 1 per item.
pub fn block_pred_i32(gpu: &Gpu, input: &[i32], a: i32, b: i32, c: i32) -> Result<Vec<u32>> {
    let spec = k::BLOCK_PRED_I32;
    let d = gpu.upload(input)?;
    let mut out = gpu.zeros::<u32>(input.len())?;
    if !input.is_empty() {
        let n32 = input.len() as u32;
        // SAFETY: one block per tile of the `n` items in every buffer.
        unsafe {
            gpu.launch(
                &spec,
                tile_grid(&spec, input.len(), 0)?,
                (&d.buf, &n32, &a, &b, &c, &mut out.buf),
            )
        }?;
    }
    out.to_vec(gpu)
}

/// [`k::BLOCK_COMPACT`] over `input` (rows survive where non-zero, coded with their low four
/// bits, then flagged): what the survivor rounds added to each row (the code, then 16), and
/// each warp's survivor counts (coded in the low, flagged in the high 16 bits), tile by tile
/// (tiles of [`block_compact_tile_rows`] rows, [`BLOCK_COMPACT_WARPS`] warps each).
pub fn block_compact(gpu: &Gpu, input: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    let spec = k::BLOCK_COMPACT;
    let d = gpu.upload(input)?;
    let mut visits = gpu.zeros::<u32>(input.len())?;
    let tiles = input.len().div_ceil(block_compact_tile_rows());
    let mut counts = gpu.zeros::<u32>(tiles * BLOCK_COMPACT_WARPS)?;
    if !input.is_empty() {
        let n32 = input.len() as u32;
        // SAFETY: one block per tile of the `n` rows; BLOCK_COMPACT_WARPS counts per tile.
        unsafe {
            gpu.launch(
                &spec,
                tile_grid(&spec, input.len(), 0)?,
                (&d.buf, &n32, &mut visits.buf, &mut counts.buf),
            )
        }?;
    }
    Ok((visits.to_vec(gpu)?, counts.to_vec(gpu)?))
}

/// Rows each warp of [`k::BLOCK_TAIL_QUEUE`] pushes.
pub const TAIL_QUEUE_WARP_ROWS: usize = k::TAIL_QUEUE_WARP_ROWS;

/// [`k::BLOCK_TAIL_QUEUE`] over `input` (rows queued where non-zero, each with its input, at
/// most 255, as its word): what its rounds added to each row (the word, then the word shifted
/// 8 bits), and how many round slots broke the queue's liveness promise.
pub fn block_tail_queue(gpu: &Gpu, input: &[u32]) -> Result<(Vec<u32>, u32)> {
    let spec = k::BLOCK_TAIL_QUEUE;
    let warps = spec.threads() as usize / 32;
    queue_visits(gpu, spec, input, k::TAIL_QUEUE_WARP_ROWS * warps)
}

/// A queue test kernel's parameters: `(input, n, visits, bad)`.
type QueueArgs = (*const u32, u32, *mut u32, *mut u32);

/// Runs a queue test kernel over `input`, `block_rows` rows a block: what its rounds added to
/// each row, and how many round slots broke the queue's liveness promise.
fn queue_visits(
    gpu: &Gpu,
    spec: KernelSpec<QueueArgs>,
    input: &[u32],
    block_rows: usize,
) -> Result<(Vec<u32>, u32)> {
    let d = gpu.upload(input)?;
    let mut visits = gpu.zeros::<u32>(input.len())?;
    let mut bad = gpu.zeros::<u32>(1)?;
    if !input.is_empty() {
        let n32 = input.len() as u32;
        let grid = input.len().div_ceil(block_rows) as u32;
        // SAFETY: each block reads its `block_rows` rows below n and adds to their visits;
        // one bad counter.
        unsafe {
            gpu.launch(
                &spec,
                blocks(&spec, grid, 0),
                (&d.buf, &n32, &mut visits.buf, &mut bad.buf),
            )
        }?;
    }
    Ok((visits.to_vec(gpu)?, bad.to_vec(gpu)?[0]))
}

/// Rows per tile of [`k::BLOCK_QUEUED_SURVIVORS`].
pub fn queued_tile_rows() -> usize {
    k::BLOCK_QUEUED_SURVIVORS.tile() as usize
}

/// Rows each block of [`k::BLOCK_QUEUED_SURVIVORS`] walks, tile after tile.
pub fn queued_block_rows() -> usize {
    queued_tile_rows() * k::QUEUED_BLOCK_TILES
}

/// [`k::BLOCK_QUEUED_SURVIVORS`] over `input` (rows queued where non-zero, the low four bits
/// of their input their code): what its rounds added to each row, and how many round slots
/// broke the queue's liveness promise.
pub fn block_queued_survivors(gpu: &Gpu, input: &[u32]) -> Result<(Vec<u32>, u32)> {
    queue_visits(gpu, k::BLOCK_QUEUED_SURVIVORS, input, queued_block_rows())
}

/// Warps per block of [`k::BLOCK_COMPACT`].
pub const BLOCK_COMPACT_WARPS: usize = k::BLOCK_COMPACT.threads() as usize / 32;

/// Rows per tile of [`k::BLOCK_COMPACT`].
pub fn block_compact_tile_rows() -> usize {
    k::BLOCK_COMPACT.tile() as usize
}

/// The warp of [`k::BLOCK_COMPACT`] that holds the row at offset `o` of its tile (the inverse
/// of `tessera_kernels::layout::tile_offset` for its vectors of four `u32`).
pub fn block_compact_warp(o: usize) -> usize {
    let spec = k::BLOCK_COMPACT;
    let v = tessera_kernels::layout::vec_width(4, spec.items_per_thread() as usize);
    o % (spec.threads() as usize * v) / v / 32
}

/// Item types with a block-aggregate test kernel.
pub trait AggregateItem: DeviceItem {
    /// The kernel.
    const SPEC: KernelSpec<k::AggregateArgs<Self>>;
}
macro_rules! aggregate_item {
    ($($t:ty => $s:ident),*) => {$(impl AggregateItem for $t { const SPEC: KernelSpec<k::AggregateArgs<$t>> = k::$s; })*};
}
aggregate_item!(i32 => BLOCK_AGGREGATE_I32, u32 => BLOCK_AGGREGATE_U32, f32 => BLOCK_AGGREGATE_F32,
    i64 => BLOCK_AGGREGATE_I64, u64 => BLOCK_AGGREGATE_U64, f64 => BLOCK_AGGREGATE_F64);

/// Per tile of `T::SPEC`: `[sum, min, max]` and the count of items above zero.
pub fn block_aggregate<T: AggregateItem>(
    gpu: &Gpu,
    input: &[T],
) -> Result<(u32, Vec<T>, Vec<u32>)> {
    let spec = T::SPEC;
    let tiles = spec.tiles(input.len() as u64) as usize;
    let d: DeviceColumn<T> = gpu.upload(input)?;
    let mut out = gpu.zeros::<T>(tiles * 3)?;
    let mut counts = gpu.zeros::<u32>(tiles)?;
    if !input.is_empty() {
        let n32 = input.len() as u32;
        // SAFETY: one block per tile of the `n` items; three outputs and one count per tile.
        unsafe {
            gpu.launch(
                &spec,
                tile_grid(&spec, input.len(), 0)?,
                (&d.buf, &n32, &mut out.buf, &mut counts.buf),
            )
        }?;
    }
    Ok((spec.tile(), out.to_vec(gpu)?, counts.to_vec(gpu)?))
}

/// One of the block-sort test kernels ([`PK_BLOCK_SORT_KERNELS`]): the only kernels
/// [`pk_block_sort_tiles`] launches, so that a safe call cannot launch a kernel of another
/// signature.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct BlockSortKernel {
    spec: KernelSpec<BlockSortArgs>,
    carries_values: bool,
}

impl BlockSortKernel {
    /// The PTX entry name.
    pub fn name(&self) -> &'static str {
        self.spec.name()
    }

    /// Items per tile.
    pub fn tile(&self) -> usize {
        self.spec.tile() as usize
    }

    /// Whether it sorts values with the keys (otherwise keys alone).
    pub fn carries_values(&self) -> bool {
        self.carries_values
    }
}

/// Sorts each tile of `(keys, vals)` with the block-sort test kernel `kernel` by bits
/// `begin .. end`; returns the sorted keys and values (values only for kernels that carry
/// them). For the tests of the block-wise radix sort.
#[doc(hidden)]
pub fn pk_block_sort_tiles(
    gpu: &Gpu,
    kernel: BlockSortKernel,
    keys: &[u32],
    vals: &[u32],
    begin: u32,
    end: u32,
) -> Result<(Vec<u32>, Vec<u32>)> {
    super::check_same_len("pk_block_sort_tiles", "vals", vals.len(), keys.len())?;
    let spec = kernel.spec;
    let (dk, dv) = (gpu.upload(keys)?, gpu.upload(vals)?);
    let mut ok = gpu.zeros::<u32>(keys.len())?;
    let mut ov = gpu.zeros::<u32>(keys.len())?;
    if !keys.is_empty() {
        let n32 = keys.len() as u32;
        // SAFETY: one block per tile of the `n` keys and values in every buffer.
        unsafe {
            gpu.launch(
                &spec,
                tile_grid(&spec, keys.len(), 0)?,
                (
                    &dk.buf,
                    &dv.buf,
                    &n32,
                    &begin,
                    &end,
                    &mut ok.buf,
                    &mut ov.buf,
                ),
            )
        }?;
    }
    Ok((ok.to_vec(gpu)?, ov.to_vec(gpu)?))
}

/// The block-sort test kernels.
#[doc(hidden)]
pub const PK_BLOCK_SORT_KERNELS: [BlockSortKernel; 4] = {
    let all = tessera_kernels::ops::pkjoin::testing::ALL;
    let mut out = [BlockSortKernel {
        spec: all[0].0,
        carries_values: all[0].1,
    }; 4];
    let mut i = 1;
    while i < all.len() {
        out[i] = BlockSortKernel {
            spec: all[i].0,
            carries_values: all[i].1,
        };
        i += 1;
    }
    out
};

/// The partitioned group-by's row count of each partition `(key - base) >> shift` below
/// `2^15` (`GROUPBY_PART_HIST`), or `None` where a key lies past them.
pub fn groupby_joint_bins(
    gpu: &Gpu,
    keys: &DeviceColumn<u32>,
    base: u32,
    shift: u32,
) -> Result<Option<Vec<u32>>> {
    crate::ops::groupby::joint_bins(gpu, keys, base, shift)
}
