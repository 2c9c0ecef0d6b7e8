//! The baseline schemes' columns on the device and their decoders (thesis §5.6): NSF, NSV,
//! RLE and the vertical GPU-SIMDBP128 layout of §5.3.3, each with decompression to a plain
//! column and decode-and-sum, as GPU-FOR's in `ops::decompress`. A device column is uploaded
//! from its host column, which is valid by construction (encoded here, or checked when read,
//! see [`crate::compress::validate`]), so the kernels' reads stay within its arrays.
//!
//! Three columns carry an index that the upload derives on the GPU: an NSV column its tiles'
//! first bytes (the lengths' sum per tile, then an exclusive scan), an RLE or RFOR column its
//! runs' first positions (the exclusive scan of the lengths), which its expansion searches.
use tessera_kernels::compress::format::{VERTICAL_BLOCK, VERTICAL_LANES};
use tessera_kernels::ops::decompress_base as k;
use tessera_kernels::spec::KernelSpec;

use crate::compress::{
    Compressed, Encoded, NsfColumn, NsvColumn, RforColumn, RleColumn, Scheme, VerticalColumn,
};
use crate::error::{Error, Result};
use crate::ops::decompress::{BlockArrays, decompressed, has_work, summed};
use crate::ops::{
    DeviceDforColumn, DeviceForColumn, ForTile, decompress_dfor, decompress_dfor_into,
    decompress_for, decompress_for_into, exclusive_scan, sum_dfor, sum_dfor_into, sum_for,
    sum_for_into,
};
use crate::runtime::{DeviceColumn, Gpu, resident_grid, tile_grid};

/// Values per tile of the NSF, NSV and RLE decoders (and runs per tile of RLE's sum).
pub const BASELINE_TILE: usize = k::NSF_DECOMPRESS_B1.tile() as usize;

// The decoders share one tile, and the NSV decoders the one its per-tile offsets count.
const _: () = {
    let tiles = [
        k::NSF_DECOMPRESS_B2.tile(),
        k::NSF_DECOMPRESS_B4.tile(),
        k::NSF_SUM_B1.tile(),
        k::NSF_SUM_B2.tile(),
        k::NSF_SUM_B4.tile(),
        k::NSV_TILE_BYTES.tile(),
        k::NSV_DECOMPRESS.tile(),
        k::NSV_SUM.tile(),
        k::RLE_DECOMPRESS.tile(),
        k::RLE_SUM.tile(),
        k::RFOR_DECOMPRESS.tile(),
    ];
    let mut i = 0;
    while i < tiles.len() {
        assert!(tiles[i] as usize == BASELINE_TILE);
        i += 1;
    }
    assert!(BASELINE_TILE == k::NSV_TILE);
    assert!(k::VERTICAL_DECOMPRESS.tile() as usize == VERTICAL_BLOCK);
    assert!(k::VERTICAL_SUM.threads() as usize == VERTICAL_LANES);
};

/// The NSF decoders' argument lists: data, count, reference, and the output.
type NsfDecompressArgs = (*const u32, u32, u32, *mut u32);
type NsfSumArgs = (*const u32, u32, u32, *mut u64);

/// An NSF column in device memory: its byte stream, as words.
pub struct DeviceNsfColumn {
    len: usize,
    value_bytes: u32,
    reference: u32,
    data: DeviceColumn<u32>,
    decompress: &'static KernelSpec<NsfDecompressArgs>,
    sum: &'static KernelSpec<NsfSumArgs>,
}

impl DeviceNsfColumn {
    /// Uploads `col` (one host-to-device copy).
    pub fn upload(gpu: &Gpu, col: &NsfColumn) -> Result<DeviceNsfColumn> {
        let value_bytes = col.header().value_bytes;
        let (decompress, sum) = match value_bytes {
            1 => (&k::NSF_DECOMPRESS_B1, &k::NSF_SUM_B1),
            2 => (&k::NSF_DECOMPRESS_B2, &k::NSF_SUM_B2),
            4 => (&k::NSF_DECOMPRESS_B4, &k::NSF_SUM_B4),
            // A valid column cannot get here: its header was checked.
            b => {
                return Err(Error::Data(format!(
                    "NSF: {b} bytes per value, expected 1, 2 or 4"
                )));
            }
        };
        Ok(DeviceNsfColumn {
            len: col.len(),
            value_bytes,
            reference: col.header().reference,
            data: gpu.upload(col.data())?,
            decompress,
            sum,
        })
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes per value: 1, 2 or 4.
    pub fn value_bytes(&self) -> u32 {
        self.value_bytes
    }

    /// The reference added to every stored value (0 in the thesis' NSF).
    pub fn reference(&self) -> u32 {
        self.reference
    }

    /// Bytes a decoder reads: the data.
    pub fn compressed_bytes(&self) -> usize {
        4 * self.data.len()
    }
}

/// The values of `col` as a plain device column.
pub fn decompress_nsf(gpu: &Gpu, col: &DeviceNsfColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| decompress_nsf_into(gpu, col, out))
}

/// Queues the decompression of `col` into `out`, which holds `col.len()` values.
pub fn decompress_nsf_into(
    gpu: &Gpu,
    col: &DeviceNsfColumn,
    out: &mut DeviceColumn<u32>,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_nsf", "out", out.len(), n, n)? {
        return Ok(());
    }
    let cfg = resident_grid(gpu, col.decompress, n)?;
    let n32 = n as u32;
    // SAFETY: a valid NSF column of `n` values of the kernel's width (see
    // `DeviceNsfColumn`), in its own allocation; room for `n` in `out`; any grid.
    unsafe { gpu.launch(col.decompress, cfg, (&col.data, &n32, &col.reference, out)) }
}

/// The sum of the values of `col`.
pub fn sum_nsf(gpu: &Gpu, col: &DeviceNsfColumn) -> Result<u64> {
    summed(gpu, |sum| sum_nsf_into(gpu, col, sum))
}

/// Queues the decode-and-sum of `col`, adding into `sum[0]` (the caller zeroes it).
pub fn sum_nsf_into(gpu: &Gpu, col: &DeviceNsfColumn, sum: &mut DeviceColumn<u64>) -> Result<()> {
    let n = col.len();
    if !has_work("sum_nsf", "sum", sum.len(), 1, n)? {
        return Ok(());
    }
    let cfg = resident_grid(gpu, col.sum, n)?;
    let n32 = n as u32;
    // SAFETY: a valid NSF column of `n` values of the kernel's width; one word at `sum`; any
    // grid.
    unsafe { gpu.launch(col.sum, cfg, (&col.data, &n32, &col.reference, sum)) }
}

/// An NSV column in device memory: its length codes, its byte stream as words, and the first
/// byte of each tile of [`BASELINE_TILE`] values (computed on the GPU at upload).
pub struct DeviceNsvColumn {
    len: usize,
    lengths: DeviceColumn<u32>,
    data: DeviceColumn<u32>,
    offsets: DeviceColumn<u32>,
}

impl DeviceNsvColumn {
    /// Uploads `col` (two host-to-device copies) and computes its tiles' first bytes: a
    /// kernel sums each tile's lengths, an exclusive scan turns the sums into offsets. The
    /// format stores no such index; with it every tile decodes on its own. The scan's total
    /// is read back (a synchronization) and checked against the header.
    pub fn upload(gpu: &Gpu, col: &NsvColumn) -> Result<DeviceNsvColumn> {
        let n = col.len();
        let lengths = gpu.upload(col.lengths())?;
        let data = gpu.upload(col.data())?;
        let offsets = if n == 0 {
            gpu.zeros(0)?
        } else {
            let spec = &k::NSV_TILE_BYTES;
            let mut bytes = gpu.zeros::<u32>(n.div_ceil(k::NSV_TILE))?;
            let cfg = tile_grid(spec, n, 0)?;
            let n32 = n as u32;
            // SAFETY: one block per tile of a valid NSV column of `n` values; one word per
            // tile at `bytes`.
            unsafe { gpu.launch(spec, cfg, (&lengths, &n32, &mut bytes)) }?;
            // The sums fit: the whole column's bytes are counted in 32 bits.
            let (offsets, total) = exclusive_scan(gpu, &bytes)?;
            let want = col.header().data_bytes;
            if total != want {
                return Err(Error::Data(format!(
                    "NSV: the GPU's tile byte counts sum to {total}, the header says {want}"
                )));
            }
            offsets
        };
        Ok(DeviceNsvColumn {
            len: n,
            lengths,
            data,
            offsets,
        })
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes a decoder reads: the length codes, the data and the tiles' offsets.
    pub fn compressed_bytes(&self) -> usize {
        4 * (self.lengths.len() + self.data.len() + self.offsets.len())
    }
}

/// The values of `col` as a plain device column.
pub fn decompress_nsv(gpu: &Gpu, col: &DeviceNsvColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| decompress_nsv_into(gpu, col, out))
}

/// Queues the decompression of `col` into `out`, which holds `col.len()` values.
pub fn decompress_nsv_into(
    gpu: &Gpu,
    col: &DeviceNsvColumn,
    out: &mut DeviceColumn<u32>,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_nsv", "out", out.len(), n, n)? {
        return Ok(());
    }
    let spec = &k::NSV_DECOMPRESS;
    let cfg = resident_grid(gpu, spec, n)?;
    let n32 = n as u32;
    // SAFETY: a valid NSV column of `n` values with its tiles' first bytes (see
    // `DeviceNsvColumn::upload`); room for `n` in `out`; any grid.
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (&col.lengths, &col.data, &col.offsets, &n32, out),
        )
    }
}

/// The sum of the values of `col`.
pub fn sum_nsv(gpu: &Gpu, col: &DeviceNsvColumn) -> Result<u64> {
    summed(gpu, |sum| sum_nsv_into(gpu, col, sum))
}

/// Queues the decode-and-sum of `col`, adding into `sum[0]` (the caller zeroes it).
pub fn sum_nsv_into(gpu: &Gpu, col: &DeviceNsvColumn, sum: &mut DeviceColumn<u64>) -> Result<()> {
    let n = col.len();
    if !has_work("sum_nsv", "sum", sum.len(), 1, n)? {
        return Ok(());
    }
    let spec = &k::NSV_SUM;
    let cfg = resident_grid(gpu, spec, n)?;
    let n32 = n as u32;
    // SAFETY: a valid NSV column of `n` values with its tiles' first bytes; one word at
    // `sum`; any grid.
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (&col.lengths, &col.data, &col.offsets, &n32, sum),
        )
    }
}

/// An RLE column in device memory: its run values and lengths, and each run's first position
/// (the exclusive scan of the lengths, computed on the GPU at upload), which the expansion
/// searches; the sum reads the lengths.
pub struct DeviceRleColumn {
    len: usize,
    values: DeviceColumn<u32>,
    lengths: DeviceColumn<u32>,
    starts: DeviceColumn<u32>,
}

impl DeviceRleColumn {
    /// Uploads `col` (two host-to-device copies) and scans its run lengths into the runs'
    /// first positions; the scan's total is read back (a synchronization) and checked against
    /// the header.
    pub fn upload(gpu: &Gpu, col: &RleColumn) -> Result<DeviceRleColumn> {
        let values = gpu.upload(col.values())?;
        let lengths = gpu.upload(col.lengths())?;
        let starts = run_starts(gpu, "RLE", &lengths, col.len())?;
        Ok(DeviceRleColumn {
            len: col.len(),
            values,
            lengths,
            starts,
        })
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs in the column.
    pub fn runs(&self) -> usize {
        self.values.len()
    }

    /// Bytes of the encoded arrays, the run values and lengths: what the sum reads (the
    /// expansion reads the run starts in place of the lengths, as many bytes).
    pub fn compressed_bytes(&self) -> usize {
        4 * (self.values.len() + self.lengths.len())
    }
}

/// The runs' first positions of a run-length column of `len` values: the exclusive scan of its
/// run `lengths` on the GPU, whose total is read back (a synchronization) and checked against
/// `len`, so that a corrupt column is an `Err` before an expansion searches the starts.
fn run_starts(
    gpu: &Gpu,
    scheme: &str,
    lengths: &DeviceColumn<u32>,
    len: usize,
) -> Result<DeviceColumn<u32>> {
    // The lengths sum to the column's count, below 2^32: the scan does not wrap.
    let (starts, total) = exclusive_scan(gpu, lengths)?;
    if total as usize != len {
        return Err(Error::Data(format!(
            "{scheme}: the GPU's run lengths sum to {total}, the header says {len}"
        )));
    }
    Ok(starts)
}

/// The values of `col` as a plain device column.
pub fn decompress_rle(gpu: &Gpu, col: &DeviceRleColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| decompress_rle_into(gpu, col, out))
}

/// Queues the expansion of `col` into `out`, which holds `col.len()` values.
pub fn decompress_rle_into(
    gpu: &Gpu,
    col: &DeviceRleColumn,
    out: &mut DeviceColumn<u32>,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_rle", "out", out.len(), n, n)? {
        return Ok(());
    }
    let spec = &k::RLE_DECOMPRESS;
    // Resident blocks, each expanding a contiguous range of tiles: one search for its first
    // run, then its tiles in order.
    let cfg = resident_grid(gpu, spec, n)?;
    let (runs, n32) = (col.runs() as u32, n as u32);
    // SAFETY: a valid RLE column of `runs` runs and `n` values with its runs' first positions
    // (see `DeviceRleColumn::upload`); room for `n` in `out`; any grid.
    unsafe { gpu.launch(spec, cfg, (&col.values, &col.starts, &runs, &n32, out)) }
}

/// The sum of the values of `col`: each run's value times its length, no run expanded.
pub fn sum_rle(gpu: &Gpu, col: &DeviceRleColumn) -> Result<u64> {
    summed(gpu, |sum| sum_rle_into(gpu, col, sum))
}

/// Queues the decode-and-sum of `col`, adding into `sum[0]` (the caller zeroes it).
pub fn sum_rle_into(gpu: &Gpu, col: &DeviceRleColumn, sum: &mut DeviceColumn<u64>) -> Result<()> {
    let runs = col.runs();
    if !has_work("sum_rle", "sum", sum.len(), 1, runs)? {
        return Ok(());
    }
    let spec = &k::RLE_SUM;
    let cfg = resident_grid(gpu, spec, runs)?;
    let runs32 = runs as u32;
    // SAFETY: `runs` run values and lengths, each in its own allocation; one word at `sum`;
    // any grid.
    unsafe { gpu.launch(spec, cfg, (&col.values, &col.lengths, &runs32, sum)) }
}

/// An RFOR column in device memory: its run values and lengths as GPU-FOR columns, and each
/// run's first position (the exclusive scan of the lengths, decoded and scanned on the GPU at
/// upload), which the expansion searches while it decodes the run values it needs; the sum
/// decodes the values and lengths tile by tile.
pub struct DeviceRforColumn {
    len: usize,
    values: DeviceForColumn,
    lengths: DeviceForColumn,
    starts: DeviceColumn<u32>,
}

impl DeviceRforColumn {
    /// Uploads `col` (four host-to-device copies), decodes its run lengths on the GPU and
    /// scans them into the runs' first positions; the scan's total is read back (a
    /// synchronization) and checked against the header.
    pub fn upload(gpu: &Gpu, col: &RforColumn) -> Result<DeviceRforColumn> {
        let values = DeviceForColumn::upload(gpu, col.values())?;
        let lengths = DeviceForColumn::upload(gpu, col.lengths())?;
        if values.len() != lengths.len() {
            return Err(Error::Data(format!(
                "RFOR: {} run values, {} run lengths",
                values.len(),
                lengths.len()
            )));
        }
        let starts = run_starts(gpu, "RFOR", &decompress_for(gpu, &lengths)?, col.len())?;
        Ok(DeviceRforColumn {
            len: col.len(),
            values,
            lengths,
            starts,
        })
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs in the column.
    pub fn runs(&self) -> usize {
        self.values.len()
    }

    /// Bytes of the encoded arrays, the run values and lengths in GPU-FOR: what the sum reads
    /// (the expansion reads the run starts, 4 bytes a run, in place of the lengths).
    pub fn compressed_bytes(&self) -> usize {
        self.values.compressed_bytes() + self.lengths.compressed_bytes()
    }
}

/// The values of `col` as a plain device column.
pub fn decompress_rfor(gpu: &Gpu, col: &DeviceRforColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| decompress_rfor_into(gpu, col, out))
}

/// Queues the expansion of `col` into `out`, which holds `col.len()` values.
pub fn decompress_rfor_into(
    gpu: &Gpu,
    col: &DeviceRforColumn,
    out: &mut DeviceColumn<u32>,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_rfor", "out", out.len(), n, n)? {
        return Ok(());
    }
    let spec = &k::RFOR_DECOMPRESS;
    // As RLE's: resident blocks, each expanding a contiguous range of tiles.
    let cfg = resident_grid(gpu, spec, n)?;
    let (runs, n32) = (col.runs() as u32, n as u32);
    let v = &col.values.arrays;
    // SAFETY: a valid RFOR column of `runs` runs and `n` values (its values a validated
    // GPU-FOR column of `runs` values) with its runs' first positions (see
    // `DeviceRforColumn::upload`); room for `n` in `out`; any grid.
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (&v.data, &v.starts, &col.starts, &runs, &n32, out),
        )
    }
}

/// The sum of the values of `col`: each run's value times its length, no run expanded.
pub fn sum_rfor(gpu: &Gpu, col: &DeviceRforColumn) -> Result<u64> {
    summed(gpu, |sum| sum_rfor_into(gpu, col, sum))
}

/// Queues the decode-and-sum of `col`, adding into `sum[0]` (the caller zeroes it).
pub fn sum_rfor_into(gpu: &Gpu, col: &DeviceRforColumn, sum: &mut DeviceColumn<u64>) -> Result<()> {
    let runs = col.runs();
    if !has_work("sum_rfor", "sum", sum.len(), 1, runs)? {
        return Ok(());
    }
    let spec = &k::RFOR_SUM;
    let cfg = resident_grid(gpu, spec, runs)?;
    let runs32 = runs as u32;
    let (v, l) = (&col.values.arrays, &col.lengths.arrays);
    // SAFETY: two validated GPU-FOR columns of `runs` values each, each array in its own
    // allocation (16-byte aligned); one word at `sum`; any grid.
    unsafe {
        gpu.launch(
            spec,
            cfg,
            (&v.data, &v.starts, &l.data, &l.starts, &runs32, sum),
        )
    }
}

/// A vertical (GPU-SIMDBP128) column in device memory.
pub struct DeviceVerticalColumn {
    arrays: BlockArrays,
}

impl DeviceVerticalColumn {
    /// Uploads `col` (two host-to-device copies: its block starts and its data).
    pub fn upload(gpu: &Gpu, col: &VerticalColumn) -> Result<DeviceVerticalColumn> {
        let arrays = BlockArrays::upload(gpu, col.len(), col.block_starts(), col.data())?;
        Ok(DeviceVerticalColumn { arrays })
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
pub fn decompress_vertical(gpu: &Gpu, col: &DeviceVerticalColumn) -> Result<DeviceColumn<u32>> {
    decompressed(gpu, col.len(), |out| {
        decompress_vertical_into(gpu, col, out)
    })
}

/// Queues the decompression of `col` into `out`, which holds `col.len()` values.
pub fn decompress_vertical_into(
    gpu: &Gpu,
    col: &DeviceVerticalColumn,
    out: &mut DeviceColumn<u32>,
) -> Result<()> {
    let n = col.len();
    if !has_work("decompress_vertical", "out", out.len(), n, n)? {
        return Ok(());
    }
    let spec = &k::VERTICAL_DECOMPRESS;
    let cfg = resident_grid(gpu, spec, n)?;
    let n32 = n as u32;
    // SAFETY: a valid vertical column of `n` values (see `DeviceVerticalColumn`); room for
    // `n` in `out`; any grid.
    unsafe { gpu.launch(spec, cfg, (&col.arrays.data, &col.arrays.starts, &n32, out)) }
}

/// The sum of the values of `col`.
pub fn sum_vertical(gpu: &Gpu, col: &DeviceVerticalColumn) -> Result<u64> {
    summed(gpu, |sum| sum_vertical_into(gpu, col, sum))
}

/// Queues the decode-and-sum of `col`, adding into `sum[0]` (the caller zeroes it).
pub fn sum_vertical_into(
    gpu: &Gpu,
    col: &DeviceVerticalColumn,
    sum: &mut DeviceColumn<u64>,
) -> Result<()> {
    let n = col.len();
    if !has_work("sum_vertical", "sum", sum.len(), 1, n)? {
        return Ok(());
    }
    let spec = &k::VERTICAL_SUM;
    let cfg = resident_grid(gpu, spec, n)?;
    let n32 = n as u32;
    // SAFETY: a valid vertical column of `n` values; one word at `sum`; any grid.
    unsafe { gpu.launch(spec, cfg, (&col.arrays.data, &col.arrays.starts, &n32, sum)) }
}

/// A compressed column in device memory, of any scheme with GPU decoders
/// ([`DeviceEncoded::SCHEMES`]).
pub enum DeviceEncoded {
    /// A [`DeviceForColumn`].
    For(DeviceForColumn),
    /// A [`DeviceDforColumn`].
    Dfor(DeviceDforColumn),
    /// A [`DeviceNsfColumn`].
    Nsf(DeviceNsfColumn),
    /// A [`DeviceNsvColumn`].
    Nsv(DeviceNsvColumn),
    /// A [`DeviceRleColumn`].
    Rle(DeviceRleColumn),
    /// A [`DeviceRforColumn`].
    Rfor(DeviceRforColumn),
    /// A [`DeviceVerticalColumn`].
    Vertical(DeviceVerticalColumn),
}

/// `$body` with `$c` bound to the column inside `$e`, whatever its variant.
macro_rules! each_device_column {
    ($e:expr, $c:ident => $body:expr) => {
        match $e {
            DeviceEncoded::For($c) => $body,
            DeviceEncoded::Dfor($c) => $body,
            DeviceEncoded::Nsf($c) => $body,
            DeviceEncoded::Nsv($c) => $body,
            DeviceEncoded::Rle($c) => $body,
            DeviceEncoded::Rfor($c) => $body,
            DeviceEncoded::Vertical($c) => $body,
        }
    };
}

impl DeviceEncoded {
    /// The schemes with GPU decoders.
    pub const SCHEMES: [Scheme; 7] = [
        Scheme::For,
        Scheme::Dfor,
        Scheme::Nsf,
        Scheme::Nsv,
        Scheme::Rle,
        Scheme::Rfor,
        Scheme::Vertical,
    ];

    /// Uploads `col`; `Err` for a scheme without GPU decoders.
    pub fn upload(gpu: &Gpu, col: &Encoded) -> Result<DeviceEncoded> {
        Ok(match col {
            Encoded::For(c) => DeviceEncoded::For(DeviceForColumn::upload(gpu, c)?),
            Encoded::Dfor(c) => DeviceEncoded::Dfor(DeviceDforColumn::upload(gpu, c)?),
            Encoded::Nsf(c) => DeviceEncoded::Nsf(DeviceNsfColumn::upload(gpu, c)?),
            Encoded::Nsv(c) => DeviceEncoded::Nsv(DeviceNsvColumn::upload(gpu, c)?),
            Encoded::Rle(c) => DeviceEncoded::Rle(DeviceRleColumn::upload(gpu, c)?),
            Encoded::Rfor(c) => DeviceEncoded::Rfor(DeviceRforColumn::upload(gpu, c)?),
            Encoded::Vertical(c) => DeviceEncoded::Vertical(DeviceVerticalColumn::upload(gpu, c)?),
            other => return Err(no_gpu_decoder(other.scheme())),
        })
    }

    /// The column's scheme.
    pub fn scheme(&self) -> Scheme {
        match self {
            DeviceEncoded::For(_) => Scheme::For,
            DeviceEncoded::Dfor(_) => Scheme::Dfor,
            DeviceEncoded::Nsf(_) => Scheme::Nsf,
            DeviceEncoded::Nsv(_) => Scheme::Nsv,
            DeviceEncoded::Rle(_) => Scheme::Rle,
            DeviceEncoded::Rfor(_) => Scheme::Rfor,
            DeviceEncoded::Vertical(_) => Scheme::Vertical,
        }
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        each_device_column!(self, c => c.len())
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes a decoder reads (each column type's `compressed_bytes`).
    pub fn compressed_bytes(&self) -> usize {
        each_device_column!(self, c => c.compressed_bytes())
    }

    /// The values as a plain device column.
    pub fn decompress(&self, gpu: &Gpu) -> Result<DeviceColumn<u32>> {
        match self {
            DeviceEncoded::For(c) => decompress_for(gpu, c),
            DeviceEncoded::Dfor(c) => decompress_dfor(gpu, c),
            DeviceEncoded::Nsf(c) => decompress_nsf(gpu, c),
            DeviceEncoded::Nsv(c) => decompress_nsv(gpu, c),
            DeviceEncoded::Rle(c) => decompress_rle(gpu, c),
            DeviceEncoded::Rfor(c) => decompress_rfor(gpu, c),
            DeviceEncoded::Vertical(c) => decompress_vertical(gpu, c),
        }
    }

    /// The sum of the values.
    pub fn sum(&self, gpu: &Gpu) -> Result<u64> {
        match self {
            DeviceEncoded::For(c) => sum_for(gpu, c),
            DeviceEncoded::Dfor(c) => sum_dfor(gpu, c),
            DeviceEncoded::Nsf(c) => sum_nsf(gpu, c),
            DeviceEncoded::Nsv(c) => sum_nsv(gpu, c),
            DeviceEncoded::Rle(c) => sum_rle(gpu, c),
            DeviceEncoded::Rfor(c) => sum_rfor(gpu, c),
            DeviceEncoded::Vertical(c) => sum_vertical(gpu, c),
        }
    }

    /// Queues the decompression into `out`, which holds [`DeviceEncoded::len`] values (GPU-FOR's
    /// with [`ForTile::DECOMPRESS`], GPU-DFOR's [`ForTile::DFOR`], as
    /// [`DeviceEncoded::decompress`]): no allocation, so a benchmark times the decoder alone.
    pub fn decompress_into(&self, gpu: &Gpu, out: &mut DeviceColumn<u32>) -> Result<()> {
        match self {
            DeviceEncoded::For(c) => decompress_for_into(gpu, c, out, ForTile::DECOMPRESS),
            DeviceEncoded::Dfor(c) => decompress_dfor_into(gpu, c, out, ForTile::DFOR),
            DeviceEncoded::Nsf(c) => decompress_nsf_into(gpu, c, out),
            DeviceEncoded::Nsv(c) => decompress_nsv_into(gpu, c, out),
            DeviceEncoded::Rle(c) => decompress_rle_into(gpu, c, out),
            DeviceEncoded::Rfor(c) => decompress_rfor_into(gpu, c, out),
            DeviceEncoded::Vertical(c) => decompress_vertical_into(gpu, c, out),
        }
    }

    /// Queues the decode-and-sum, adding into `sum[0]` (the caller zeroes it; GPU-FOR's with
    /// [`ForTile::SUM`], GPU-DFOR's [`ForTile::DFOR`], as [`DeviceEncoded::sum`]).
    pub fn sum_into(&self, gpu: &Gpu, sum: &mut DeviceColumn<u64>) -> Result<()> {
        match self {
            DeviceEncoded::For(c) => sum_for_into(gpu, c, sum, ForTile::SUM),
            DeviceEncoded::Dfor(c) => sum_dfor_into(gpu, c, sum, ForTile::DFOR),
            DeviceEncoded::Nsf(c) => sum_nsf_into(gpu, c, sum),
            DeviceEncoded::Nsv(c) => sum_nsv_into(gpu, c, sum),
            DeviceEncoded::Rle(c) => sum_rle_into(gpu, c, sum),
            DeviceEncoded::Rfor(c) => sum_rfor_into(gpu, c, sum),
            DeviceEncoded::Vertical(c) => sum_vertical_into(gpu, c, sum),
        }
    }
}

/// The error of a scheme without GPU decoders.
fn no_gpu_decoder(scheme: Scheme) -> Error {
    Error::invalid(format!(
        "{} columns have no GPU decoder (those with one: {})",
        scheme.name(),
        DeviceEncoded::SCHEMES.map(Scheme::name).join(", ")
    ))
}

/// Whether `scheme` has GPU decoders, or the error [`DeviceEncoded::upload`] gives for it.
pub fn check_gpu_decodable(scheme: Scheme) -> Result<()> {
    if DeviceEncoded::SCHEMES.contains(&scheme) {
        Ok(())
    } else {
        Err(no_gpu_decoder(scheme))
    }
}
