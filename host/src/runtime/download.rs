//! Column transfers near the link's bandwidth.
//!
//! A copy into freshly allocated (pageable) memory runs far below the link: the driver stages
//! it through its own page-locked buffer, and every 4 KiB page of the destination is faulted
//! in, one at a time, by the thread that first writes it. The paths here take those costs
//! apart so that `bench transfer` can measure each; [`DeviceColumn::to_vec`] takes the
//! staged path, and [`Gpu::upload`] the staged upload from 1 MiB on.

use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaView, CudaViewMut, DevicePtr, DevicePtrMut};
use rayon::prelude::*;

use super::{DeviceColumn, DeviceItem, Gpu};
use crate::error::{Error, Result};

/// How [`DeviceColumn::to_vec_with`] brings a column to the host.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DownloadPath {
    /// One copy into a new zeroed `Vec`, as the driver does it (staged, faulting pages in).
    Pageable,
    /// The `Vec`'s pages faulted in by all cores first, then the driver's copy.
    Prefault,
    /// Faulted in, then page-locked for the copy (direct DMA) and unlocked.
    PrefaultLocked,
    /// Through two page-locked staging halves kept by the [`Gpu`]: the copy engine fills one
    /// while all cores copy the other into the `Vec` (faulting its pages in in parallel).
    Staged,
}

/// Bytes of each of the two staging halves: large enough that a DMA amortizes its start,
/// small enough that the pair is allocated once without a noticeable pause.
pub(crate) const STAGING_HALF: usize = 16 << 20;

/// Items per parallel chunk of the host-side copies (1 MiB of 4-byte items).
const HOST_CHUNK_BYTES: usize = 1 << 20;

impl<T: DeviceItem> DeviceColumn<T> {
    /// Copies the column to the host by `path` (synchronizes the stream).
    #[doc(hidden)]
    pub fn to_vec_with(&self, gpu: &Gpu, path: DownloadPath) -> Result<Vec<T>> {
        let n = self.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let bytes = n * std::mem::size_of::<T>();
        let err = || Error::driver("downloading a column", bytes);
        match path {
            DownloadPath::Pageable | DownloadPath::Prefault | DownloadPath::PrefaultLocked => {
                let mut v = vec![T::default(); n];
                if path != DownloadPath::Pageable {
                    let per = (HOST_CHUNK_BYTES / std::mem::size_of::<T>()).max(1);
                    v.par_chunks_mut(per).for_each(|c| c.fill(T::default()));
                }
                // SAFETY: `v` lives, unmoved, until it is unlocked below.
                let locked = path == DownloadPath::PrefaultLocked && unsafe { lock(gpu, &v)? };
                let copied = gpu
                    .stream()
                    .memcpy_dtoh(&self.view(), &mut v[..])
                    .map_err(err())
                    .and_then(|()| gpu.synchronize());
                if locked {
                    unlock(gpu.context(), &v);
                }
                copied.map(|()| v)
            }
            DownloadPath::Staged => {
                let mut v = Vec::new();
                append_staged(gpu, &self.view(), &mut v)?;
                Ok(v)
            }
        }
    }
}

/// Page-locks `v`'s buffer in place; `false` where it cannot be (already locked by an
/// overlapping registration, or refused by the system): copies from or to it are then staged
/// by the driver as from any buffer.
///
/// # Safety
/// `v` must stay alive and unmoved until [`unlock`] is called with it.
pub(crate) unsafe fn lock<T: DeviceItem>(gpu: &Gpu, v: &[T]) -> Result<bool> {
    gpu.context()
        .bind_to_thread()
        .map_err(Error::driver("page-locking a buffer", 0))?;
    // SAFETY: the range is `v`, alive until the caller unlocks it (the caller's contract).
    let r = unsafe {
        sys::cuMemHostRegister_v2(
            v.as_ptr() as *mut std::ffi::c_void,
            std::mem::size_of_val(v),
            0,
        )
    };
    Ok(r == CUresult::CUDA_SUCCESS)
}

/// Unlocks a buffer [`lock`] locked, once the copies from or to it have completed. A failure
/// leaves the pages locked until the process ends; there is nothing to report it to.
pub(crate) fn unlock<T>(ctx: &CudaContext, v: &[T]) {
    if ctx.bind_to_thread().is_ok() {
        // SAFETY: `v` was registered by `lock` and is still alive (the caller holds it).
        let _ = unsafe { sys::cuMemHostUnregister(v.as_ptr() as *mut std::ffi::c_void) };
    }
}

/// Appends the items of `src` to `out` by the staged download: DMA of chunk `i` into one
/// half while all cores copy chunk `i - 1` out of the other. Synchronizes the stream.
pub(crate) fn append_staged<T: DeviceItem>(
    gpu: &Gpu,
    src: &CudaView<'_, T>,
    out: &mut Vec<T>,
) -> Result<()> {
    let n = src.len();
    if n == 0 {
        return gpu.synchronize();
    }
    gpu.with_staging(|halves| download_chunks(gpu, src, out, halves))?;
    // SAFETY: the chunks wrote all the bytes of `src`, the `n` items after the old length,
    // each a valid `T` (plain data).
    unsafe { out.set_len(out.len() + n) };
    Ok(())
}

/// The loop of [`append_staged`]: writes `src`'s bytes after `out`'s items, leaving the
/// length to the caller.
fn download_chunks<T: DeviceItem>(
    gpu: &Gpu,
    src: &CudaView<'_, T>,
    out: &mut Vec<T>,
    halves: [&mut [u8]; 2],
) -> Result<()> {
    let n = src.len();
    let total = n * std::mem::size_of::<T>();
    let chunks = total.div_ceil(STAGING_HALF);
    out.reserve(n);
    let dst = &mut out.spare_capacity_mut()[..n];
    huge_pages(dst.as_mut_ptr().cast(), total);
    // SAFETY: viewing the uninitialized items as bytes to write them; nothing reads them
    // before they are written.
    let dst: &mut [std::mem::MaybeUninit<u8>] =
        unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), total) };
    let (src, _sync) = src.device_ptr(gpu.stream());
    let stream = gpu.stream();
    for i in 0..=chunks {
        if i < chunks {
            let (a, len) = (i * STAGING_HALF, STAGING_HALF.min(total - i * STAGING_HALF));
            let half = &mut halves[i % 2][..len];
            // SAFETY: `src + a .. src + a + len` lies inside the column's buffer; `half` is
            // page-locked memory not read until the stream has been synchronized below.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(half, src + a as u64, stream.cu_stream())
            }
            .map_err(Error::driver("downloading a column", total))?;
        }
        if i > 0 {
            let j = i - 1;
            let (a, len) = (j * STAGING_HALF, STAGING_HALF.min(total - j * STAGING_HALF));
            let from = &halves[j % 2][..len];
            // SAFETY: `d` and `s` have the same length (equal chunks of equal slices) and do
            // not overlap (the Vec's buffer and the staging buffer).
            let copy = |(d, s): (&mut [std::mem::MaybeUninit<u8>], &[u8])| unsafe {
                std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_mut_ptr().cast(), s.len())
            };
            if len <= HOST_CHUNK_BYTES {
                copy((&mut dst[a..a + len], from));
            } else {
                dst[a..a + len]
                    .par_chunks_mut(HOST_CHUNK_BYTES)
                    .zip(from.par_chunks(HOST_CHUNK_BYTES))
                    .for_each(copy);
            }
        }
        stream
            .synchronize()
            .map_err(Error::driver("downloading a column", total))?;
    }
    Ok(())
}

/// Uploads below this many bytes go the driver's way: one call, no staging lock.
pub(crate) const STAGED_UPLOAD_MIN: usize = 1 << 20;

/// Copies `data` into `dst` (as many items) through the staging halves: all cores copy chunk
/// `i` into one half while the copy engine reads chunk `i - 1` out of the other. Synchronizes
/// the stream.
pub(crate) fn upload_staged<T: DeviceItem>(
    gpu: &Gpu,
    data: &[T],
    dst: &mut CudaViewMut<'_, T>,
) -> Result<()> {
    let total = std::mem::size_of_val(data);
    let err = || Error::driver("uploading a column", total);
    let src: &[u8] = bytemuck::cast_slice(data);
    gpu.with_staging(|halves| {
        let stream = gpu.stream();
        let (base, _sync) = dst.device_ptr_mut(stream);
        for (i, chunk) in src.chunks(STAGING_HALF).enumerate() {
            let half = &mut halves[i % 2][..chunk.len()];
            // The copy that last read this half (chunk i - 2) completed at the previous
            // iteration's synchronization.
            if chunk.len() <= HOST_CHUNK_BYTES {
                half.copy_from_slice(chunk);
            } else {
                half.par_chunks_mut(HOST_CHUNK_BYTES)
                    .zip(chunk.par_chunks(HOST_CHUNK_BYTES))
                    .for_each(|(d, s)| d.copy_from_slice(s));
            }
            stream.synchronize().map_err(err())?;
            let at = base + (i * STAGING_HALF) as u64;
            // SAFETY: `at .. at + half.len()` lies inside `dst` (the chunks tile `data`, as long
            // as `dst`); `half` is page-locked and not written again before the stream has been
            // synchronized.
            unsafe { cudarc::driver::result::memcpy_htod_async(at, half, stream.cu_stream()) }
                .map_err(err())?;
        }
        stream.synchronize().map_err(err())
    })
}

/// Asks the kernel to back `len` bytes at `ptr` (fresh memory, not yet touched) with
/// transparent huge pages where it can: a 2 MiB page is faulted in and zeroed at memset speed,
/// 512 of the default 4 KiB ones cost 512 faults. A hint only; refusals are ignored.
fn huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside the caller's allocation; MADV_HUGEPAGE changes how
        // its pages are backed, never their contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Fewest items that [`collect_indexed`] builds on all cores: below it, waking the pool's
/// threads costs more than one core's work (figures in docs/perf-log.md).
const PARALLEL_MIN_ITEMS: usize = 1 << 15;

/// `f(i)` for each `i < n`, in order: on the calling thread for few items, else on all cores
/// into fresh memory advised to huge pages (a result column as large as a download faults
/// in 4 KiB pages for longer than the copy into them takes).
pub(crate) fn collect_indexed<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if n < PARALLEL_MIN_ITEMS {
        return (0..n).map(f).collect();
    }
    let mut v = Vec::with_capacity(n);
    huge_pages(
        v.spare_capacity_mut().as_mut_ptr().cast(),
        v.capacity() * std::mem::size_of::<T>(),
    );
    // Keeps the allocation: its capacity suffices.
    (0..n).into_par_iter().map(f).collect_into_vec(&mut v);
    v
}

impl Gpu {
    /// Runs `f` with the two page-locked staging halves of the staged transfers (allocated
    /// on first use), holding them for its duration.
    pub(super) fn with_staging<R>(&self, f: impl FnOnce([&mut [u8]; 2]) -> Result<R>) -> Result<R> {
        // The buffer is scratch with no invariant a panic could break: a poisoned lock is
        // taken as it is.
        let mut guard = self
            .staging
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let staging = match &mut *guard {
            Some(p) => p,
            None => {
                // SAFETY: zeroed below before any read.
                let mut p = unsafe {
                    self.context()
                        .alloc_pinned_with_flags::<u8>(2 * STAGING_HALF, 0)
                }
                .map_err(Error::driver(
                    "allocating the staging buffer",
                    2 * STAGING_HALF,
                ))?;
                p.as_mut_slice()
                    .map_err(Error::driver("allocating the staging buffer", 0))?
                    .fill(0);
                guard.insert(p)
            }
        };
        let halves = staging
            .as_mut_slice()
            .map_err(Error::driver("reading the staging buffer", 0))?;
        let (h0, h1) = halves.split_at_mut(STAGING_HALF);
        f([h0, h1])
    }
}
