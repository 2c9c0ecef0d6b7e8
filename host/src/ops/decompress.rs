//! GPU-FOR columns on the device and their decoders (thesis §5.3.2): decompression to a plain
//! column and decode-and-sum. A [`DeviceForColumn`] is uploaded from a [`ForColumn`], which is
//! valid by construction (encoded here, or checked when read), so the kernels' reads stay
//! within its arrays.
use tessera_kernels::ops::decompress as k;
use tessera_kernels::spec::KernelSpec;

use crate::compress::{Compressed, DforColumn, ForColumn};
use crate::error::{Error, Result};
use crate::ops::check_same_len;
use crate::runtime::{DeviceColumn, Gpu, resident_grid};

/// D, the GPU-FOR blocks a thread block of the decoders decodes (thesis §5.3.2): 128 * D values
/// per tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForTile {
    /// D = 4, the thesis' choice.
    D4,
    /// D = 8.
    D8,
    /// D = 16: [`decompress_for`]'s.
    D16,
    /// D = 32: [`sum_for`]'s, the most values per tile, so the least per-tile work (the
    /// copies' set-up, two barriers) per value.
    D32,
}

/// The decoders' argument lists: data, block starts, count, and the output.
type DecompressArgs = (*const u32, *const u32, u32, *mut u32);
type SumArgs = (*const u32, *const u32, u32, *mut u64);
/// GPU-DFOR's add the group size as a shift: data, block starts, count, log2(D), output.
type DforDecompressArgs = (*const u32, *const u32, u32, u32, *mut u32);
type DforSumArgs = (*const u32, *const u32, u32, u32, *mut u64);

impl ForTile {
    /// The D of [`decompress_for`]: as fast as D = 32 (docs/perf-log.md) with half the
    /// registers.
    pub const DECOMPRESS: ForTile = ForTile::D16;
    /// The D of [`sum_for`], the fastest measured.
    pub const SUM: ForTile = ForTile::D32;
    /// The D of [`decompress_dfor`] and [`sum_dfor`] (for groups of up to 8 blocks), the
    /// fastest measured for both: a tile of 32 blocks takes 219 registers, 16 a barrier-heavy
    /// scan per fewer values.
    pub const DFOR: ForTile = ForTile::D8;

    /// Every D, smallest first.
    pub const ALL: [ForTile; 4] = [ForTile::D4, ForTile::D8, ForTile::D16, ForTile::D32];

    /// D.
    pub fn blocks(self) -> u32 {
        match self {
            ForTile::D4 => 4,
            ForTile::D8 => 8,
            ForTile::D16 => 16,
            ForTile::D32 => 32,
        }
    }

    fn dfor_kernels(
        self,
    ) -> (
        &'static KernelSpec<DforDecompressArgs>,
        &'static KernelSpec<DforSumArgs>,
    ) {
        match self {
            ForTile::D4 => (&k::DFOR_DECOMPRESS_D4, &k::DFOR_SUM_D4),
            ForTile::D8 => (&k::DFOR_DECOMPRESS_D8, &k::DFOR_SUM_D8),
            ForTile::D16 => (&k::DFOR_DECOMPRESS_D16, &k::DFOR_SUM_D16),
            ForTile::D32 => (&k::DFOR_DECOMPRESS_D32, &k::DFOR_SUM_D32),
        }
    }

    fn kernels(
        self,
    ) -> (
        &'static KernelSpec<DecompressArgs>,
        &'static KernelSpec<SumArgs>,
    ) {
        match self {
            ForTile::D4 => (&k::FOR_DECOMPRESS_D4, &k::FOR_SUM_D4),
            ForTile::D8 => (&k::FOR_DECOMPRESS_D8, &k::FOR_SUM_D8),
            ForTile::D16 => (&k::FOR_DECOMPRESS_D16, &k::FOR_SUM_D16),
            ForTile::D32 => (&k::FOR_DECOMPRESS_D32, &k::FOR_SUM_D32),
        }
    }
}

/// The device arrays of a column of bit-packed blocks (GPU-FOR, GPU-DFOR, the vertical
/// layout): its value count, block starts and data words, each in an allocation of its own
/// (the decoders copy the data by 16-byte aligned quads).
pub(crate) struct BlockArrays {
    pub(crate) len: usize,
    pub(crate) starts: DeviceColumn<u32>,
    pub(crate) data: DeviceColumn<u32>,
}

impl BlockArrays {
    /// Uploads a column of `len` values (two host-to-device copies).
    pub(crate) fn upload(gpu: &Gpu, len: usize, starts: &[u32], data: &[u32]) -> Result<Self> {
        Ok(BlockArrays {
            len,
            starts: gpu.upload(starts)?,
            data: gpu.upload(data)?,
        })
    }

    /// Bytes a decoder reads: the data and the block starts.
    pub(crate) fn compressed_bytes(&self) -> usize {
        4 * (self.starts.len() + self.data.len())
    }
}

/// A new column of `len` values, filled by `into`.
pub(crate) fn decompressed(
    gpu: &Gpu,
    len: usize,
    into: impl FnOnce(&mut DeviceColumn<u32>) -> Result<()>,
) -> Result<DeviceColumn<u32>> {
    let mut out = gpu.zeros(len)?;
    into(&mut out)?;
    Ok(out)
}

/// The sum that `into` adds into a zeroed word.
pub(crate) fn summed(
    gpu: &Gpu,
    into: impl FnOnce(&mut DeviceColumn<u64>) -> Result<()>,
) -> Result<u64> {
    let mut sum = gpu.zeros::<u64>(1)?;
    into(&mut sum)?;
    Ok(sum.to_vec(gpu)?[0])
}

/// `Ok(true)` when the decoder `op` has work: `out` has `expected` items and the column is not
/// empty.
pub(crate) fn has_work(
    op: &str,
    what: &str,
    out: usize,
    expected: usize,
    len: usize,
) -> Result<bool> {
    check_same_len(op, what, out, expected)?;
    Ok(len > 0)
}

/// A GPU-FOR column in device memory.
pub struct DeviceForColumn {
    pub(crate) arrays: BlockArrays,
    one_width: bool,
}

impl DeviceForColumn {
    /// Uploads `col` (two host-to-device copies: its block starts and its data).
    pub fn upload(gpu: &Gpu, col: &ForColumn) -> Result<DeviceForColumn> {
        let arrays = BlockArrays::upload(gpu, col.len(), col.block_starts(), col.data())?;
        Ok(DeviceForColumn {
            arrays,
            one_width: col.is_one_width(),
        })
    }

    /// Whether every block has one width (as [`ForColumn::encode_one_width`] writes them).
    pub fn is_one_width(&self) -> bool {
        self.one_width
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.arrays.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes a decoder reads: the data and the block starts.
    pub fn compressed_bytes(&self) -> usize {
        self.arrays.compressed_bytes()
    }
}

/// The values of `col` as a plain device column.
pub fn decompress_for(gpu: &Gpu, col: &DeviceForColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| {
        decompress_for_into(gpu, col, out, ForTile::DECOMPRESS)
    })
}

/// Queues the decompression of `col` into `out`, which holds `col.len()` values, with `tile`'s
/// D.
pub fn decompress_for_into(
    gpu: &Gpu,
    col: &DeviceForColumn,
    out: &mut DeviceColumn<u32>,
    tile: ForTile,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_for", "out", out.len(), n, n)? {
        return Ok(());
    }
    let spec = tile.kernels().0;
    // Resident blocks that loop, so each copies its next tile while it decodes the current.
    let cfg = resident_grid(gpu, spec, n)?;
    let n32 = n as u32;
    // SAFETY: a valid GPU-FOR column of `n` values (see `DeviceForColumn`), room for `n` in
    // `out`; any grid.
    unsafe { gpu.launch(spec, cfg, (&col.arrays.data, &col.arrays.starts, &n32, out)) }
}

/// The sum of the values of `col` (wrapping past 2^64, which 2^32 values cannot reach).
pub fn sum_for(gpu: &Gpu, col: &DeviceForColumn) -> Result<u64> {
    summed(gpu, |sum| sum_for_into(gpu, col, sum, ForTile::SUM))
}

/// Queues the decode-and-sum of `col` with `tile`'s D, adding into `sum[0]` (the caller
/// zeroes it).
pub fn sum_for_into(
    gpu: &Gpu,
    col: &DeviceForColumn,
    sum: &mut DeviceColumn<u64>,
    tile: ForTile,
) -> Result<()> {
    let n = col.len();
    if !has_work("sum_for", "sum", sum.len(), 1, n)? {
        return Ok(());
    }
    let spec = tile.kernels().1;
    // Resident blocks, each adding once: one atomic per tile on the one word would bound a
    // narrow column's time.
    let cfg = resident_grid(gpu, spec, n)?;
    let n32 = n as u32;
    // SAFETY: a valid GPU-FOR column of `n` values, one word at `sum`; any grid.
    unsafe { gpu.launch(spec, cfg, (&col.arrays.data, &col.arrays.starts, &n32, sum)) }
}

/// A GPU-DFOR column in device memory (its data: each group's first value, then its delta
/// blocks).
pub struct DeviceDforColumn {
    arrays: BlockArrays,
    group_blocks: u32,
}

impl DeviceDforColumn {
    /// Uploads `col`. The GPU decoders take a thread block's tile as whole groups, so the
    /// column's D (blocks per group) must be a power of two up to 32: `Err` otherwise, before
    /// any copy.
    pub fn upload(gpu: &Gpu, col: &DforColumn) -> Result<DeviceDforColumn> {
        let d = col.header().group_blocks;
        if !d.is_power_of_two() || d > 32 {
            return Err(Error::invalid(format!(
                "GPU-DFOR: a column of D = {d} blocks per group has no GPU decoder (a tile \
                 decodes whole groups: D must be 1, 2, 4, 8, 16 or 32); encode it with \
                 DforColumn::encode(values, 4)"
            )));
        }
        let arrays = BlockArrays::upload(gpu, col.len(), col.block_starts(), col.data())?;
        Ok(DeviceDforColumn {
            arrays,
            group_blocks: d,
        })
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.arrays.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// D, the blocks per delta group.
    pub fn group_blocks(&self) -> u32 {
        self.group_blocks
    }

    /// Bytes a decoder reads: the data and the block starts.
    pub fn compressed_bytes(&self) -> usize {
        self.arrays.compressed_bytes()
    }

    /// `tile`, or the smallest tile that holds whole groups where `tile` does not.
    fn tile(&self, tile: ForTile) -> ForTile {
        if tile.blocks() >= self.group_blocks {
            tile
        } else {
            // D <= 32 = the largest tile's blocks, and both are powers of two.
            ForTile::ALL
                .into_iter()
                .find(|t| t.blocks() >= self.group_blocks)
                .unwrap_or(ForTile::D32)
        }
    }
}

/// The values of `col` as a plain device column.
pub fn decompress_dfor(gpu: &Gpu, col: &DeviceDforColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| {
        decompress_dfor_into(gpu, col, out, ForTile::DFOR)
    })
}

/// Queues the decompression of `col` into `out`, which holds `col.len()` values, with tiles of
/// `tile`'s D blocks, or of the column's group where that is larger (a tile holds whole
/// groups).
pub fn decompress_dfor_into(
    gpu: &Gpu,
    col: &DeviceDforColumn,
    out: &mut DeviceColumn<u32>,
    tile: ForTile,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_dfor", "out", out.len(), n, n)? {
        return Ok(());
    }
    let spec = col.tile(tile).dfor_kernels().0;
    let cfg = resident_grid(gpu, spec, n)?;
    let (n32, shift) = (n as u32, col.group_blocks.trailing_zeros());
    // SAFETY: a valid GPU-DFOR column of `n` values whose groups divide the tile (see
    // `DeviceDforColumn::tile`), room for `n` in `out`; any grid.
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (&col.arrays.data, &col.arrays.starts, &n32, &shift, out),
        )
    }
}

/// The sum of the values of `col` (wrapping past 2^64, which 2^32 values cannot reach).
pub fn sum_dfor(gpu: &Gpu, col: &DeviceDforColumn) -> Result<u64> {
    summed(gpu, |sum| sum_dfor_into(gpu, col, sum, ForTile::DFOR))
}

/// Queues the decode-and-sum of `col` with `tile`'s D (or the column's group, as
/// [`decompress_dfor_into`]), adding into `sum[0]` (the caller zeroes it).
pub fn sum_dfor_into(
    gpu: &Gpu,
    col: &DeviceDforColumn,
    sum: &mut DeviceColumn<u64>,
    tile: ForTile,
) -> Result<()> {
    let n = col.len();
    if !has_work("sum_dfor", "sum", sum.len(), 1, n)? {
        return Ok(());
    }
    let spec = col.tile(tile).dfor_kernels().1;
    let cfg = resident_grid(gpu, spec, n)?;
    let (n32, shift) = (n as u32, col.group_blocks.trailing_zeros());
    // SAFETY: a valid GPU-DFOR column of `n` values whose groups divide the tile, one word at
    // `sum`; any grid.
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (&col.arrays.data, &col.arrays.starts, &n32, &shift, sum),
        )
    }
}

/// A row of the GPU-FOR decompression ablation (thesis §5.3.2-5.3.3): the base algorithm,
/// then one optimization more per row; see `tessera_kernels::ops::decompress::ablation`.
#[cfg(feature = "sweeps")]
#[derive(Clone, Copy, Debug)]
pub struct ForAblation {
    /// The row's name.
    pub name: &'static str,
    /// D, the GPU-FOR blocks per thread block.
    pub blocks: usize,
    /// Whether the row decodes columns of one width per block only
    /// ([`ForColumn::encode_one_width`]).
    pub one_width: bool,
    spec: KernelSpec<DecompressArgs>,
}

#[cfg(feature = "sweeps")]
impl ForAblation {
    /// Every row, in the thesis' order.
    pub fn all() -> Vec<ForAblation> {
        use tessera_kernels::ops::decompress::ablation as a;
        let row = |name, spec: KernelSpec<DecompressArgs>, one_width| ForAblation {
            name,
            blocks: spec.items_per_thread() as usize,
            one_width,
            spec,
        };
        vec![
            row("base (Algorithm 6)", a::FOR_ABLATE_BASE, false),
            row("+ shared memory", a::FOR_ABLATE_SHARED_D1, false),
            row("+ blocks per thread block", a::FOR_ABLATE_SHARED_D2, false),
            row("+ blocks per thread block", a::FOR_ABLATE_SHARED_D4, false),
            row("+ blocks per thread block", a::FOR_ABLATE_SHARED_D8, false),
            row("+ blocks per thread block", a::FOR_ABLATE_SHARED_D16, false),
            row("+ blocks per thread block", a::FOR_ABLATE_SHARED_D32, false),
            row("+ precomputed offsets", a::FOR_ABLATE_PRE_D4, false),
            row("+ precomputed offsets", a::FOR_ABLATE_PRE_D16, false),
            row("miniblock-free", a::FOR_ABLATE_ONE_D4, true),
            row("miniblock-free", a::FOR_ABLATE_ONE_D16, true),
        ]
    }

    /// Queues this row's decompression of `col` into `out`, which holds `col.len()` values;
    /// `Err` for a miniblock-free row on a column of several widths per block.
    pub fn decompress_into(
        &self,
        gpu: &Gpu,
        col: &DeviceForColumn,
        out: &mut DeviceColumn<u32>,
    ) -> Result<()> {
        if self.one_width && !col.is_one_width() {
            return Err(Error::invalid(format!(
                "GPU-FOR ablation row {:?} decodes columns of one width per block: encode \
                 with ForColumn::encode_one_width",
                self.name
            )));
        }
        let n = col.len();
        if !has_work(self.spec.name(), "out", out.len(), n, n)? {
            return Ok(());
        }
        // One tile of D blocks per thread block, as in the thesis.
        let cfg = crate::runtime::tile_grid(&self.spec, n, 0)?;
        let n32 = n as u32;
        // SAFETY: a valid GPU-FOR column of `n` values (of one width per block for the
        // one-width rows, checked above), room for `n` in `out`; a thread block per tile.
        unsafe {
            gpu.launch(
                &self.spec,
                cfg,
                (&col.arrays.data, &col.arrays.starts, &n32, out),
            )
        }
    }
}
