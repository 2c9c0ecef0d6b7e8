//! Words a kernel writes straight to page-locked host memory ([`Gpu::host_words`]), for a
//! decision the host takes while the GPU goes on.
//!
//! A copy to the host queued behind a kernel waits for the kernel's end, then for a copy
//! engine, then for an event; the kernel's own stores to mapped memory land as soon as it
//! makes them. The kernel writes the words, then the sequence number the host waits for with
//! a system-scope release (see [`tessera_kernels::spec::HOST_WORDS`]); the host spins on that
//! number alone.
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, MutexGuard};

use cudarc::driver::{CudaStream, PinnedHostSlice, sys};
use tessera_kernels::spec::HOST_WORDS;

use super::Gpu;
use crate::error::{Error, Result};

/// The page-locked words and where the device sees them.
pub(crate) struct MappedWords {
    /// Freed on drop, after the stream (whose kernels may write the words) is done.
    _mem: PinnedHostSlice<u32>,
    stream: Arc<CudaStream>,
    host: *mut u32,
    device: u64,
    /// The sequence number of the last launch handed the words.
    seq: u32,
}

// SAFETY: the pointer is `_mem`'s, which is `Send` and `Sync`; every access to the words goes
// through the `Gpu`'s mutex around this value.
unsafe impl Send for MappedWords {}
// SAFETY: as above.
unsafe impl Sync for MappedWords {}

impl Drop for MappedWords {
    fn drop(&mut self) {
        // Kernels queued with the words may still write them: `_mem` is freed after them.
        let _ = self.stream.synchronize();
    }
}

/// [`HOST_WORDS`] words one launch may write, the `Gpu`'s lock on them held until dropped.
pub(crate) struct HostWords<'g> {
    _guard: MutexGuard<'g, Option<MappedWords>>,
    host: *mut u32,
    device: u64,
    stream: sys::CUstream,
    seq: u32,
}

/// Spins between two queries of the stream while waiting for [`HostWords`].
const SPINS_PER_QUERY: u32 = 1 << 12;

impl Gpu {
    /// The page-locked words (made on first use) for the next launch that takes them
    /// ([`HostWords::device`], [`HostWords::seq`]), held until the returned value drops:
    /// calls from other threads wait until then.
    pub(crate) fn host_words(&self) -> Result<HostWords<'_>> {
        // Scratch with no invariant a panic could break: a poisoned lock is taken as it is.
        let mut guard = self
            .mapped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let words = match &mut *guard {
            Some(w) => w,
            None => guard.insert(self.map_words()?),
        };
        words.seq = words.seq.wrapping_add(1);
        let (host, device, seq) = (words.host, words.device, words.seq);
        let stream = words.stream.cu_stream();
        Ok(HostWords {
            _guard: guard,
            host,
            device,
            stream,
            seq,
        })
    }

    fn map_words(&self) -> Result<MappedWords> {
        let err = || Error::driver("allocating page-locked words mapped into the device", 0);
        // SAFETY: the words are zeroed below, before any read.
        let mut mem = unsafe {
            self.context()
                .alloc_pinned_with_flags::<u32>(HOST_WORDS, sys::CU_MEMHOSTALLOC_DEVICEMAP)
        }
        .map_err(err())?;
        let host = mem.as_mut_ptr().map_err(err())?;
        // SAFETY: `host` is the allocation's start, HOST_WORDS words long.
        unsafe { host.write_bytes(0, HOST_WORDS) };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP in this context, current
        // on this thread after the allocation.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) }
            .result()
            .map_err(err())?;
        Ok(MappedWords {
            _mem: mem,
            stream: self.stream().clone(),
            host,
            device,
            seq: 0,
        })
    }
}

impl HostWords<'_> {
    /// The device's address of the words, for the launch to write.
    pub(crate) fn device(&self) -> u64 {
        self.device
    }

    /// The sequence number the launch writes to word 0 after the others.
    pub(crate) fn seq(&self) -> u32 {
        self.seq
    }

    /// The first `len` words after the sequence number (at most `HOST_WORDS - 1`), once the
    /// launch handed them has written them; `None` while it has not.
    pub(crate) fn try_words(&self, len: usize) -> Option<Vec<u32>> {
        // SAFETY: word 0 of the allocation, alive while the guard is held, 4-byte aligned,
        // written by the device only with atomic stores.
        let flag = unsafe { AtomicU32::from_ptr(self.host) };
        if flag.load(Ordering::Acquire) != self.seq {
            return None;
        }
        let len = len.min(HOST_WORDS - 1);
        let word = |i: usize| {
            // SAFETY: words 1..=len of the allocation; the acquire above orders these reads
            // after the launch's writes, which it made before the sequence number's release.
            unsafe { self.host.add(i).read_volatile() }
        };
        Some((1..=len).map(word).collect())
    }

    /// Waits (spinning, then yielding the core) for the launch handed the words and returns
    /// the first `len` after the sequence number. An error where the stream ends, or fails,
    /// without them: the launch failed or was not handed these words.
    pub(crate) fn wait(&self, len: usize) -> Result<Vec<u32>> {
        let mut spins = 0u32;
        loop {
            if let Some(w) = self.try_words(len) {
                return Ok(w);
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(SPINS_PER_QUERY) {
                // SAFETY: the `Gpu`'s stream, alive while the guard is held.
                match unsafe { sys::cuStreamQuery(self.stream) } {
                    sys::CUresult::CUDA_ERROR_NOT_READY => {}
                    sys::CUresult::CUDA_SUCCESS => {
                        // The stream is done: the words are there now or never.
                        return self.try_words(len).ok_or_else(|| {
                            Error::invalid(
                                "host_words: the GPU finished without writing the words the \
                                 host waits for (internal)",
                            )
                        });
                    }
                    e => e
                        .result()
                        .map_err(Error::driver("waiting for words from the GPU", 0))?,
                }
            }
            // A long wait (the GPU busy with earlier work) gives the core to other threads.
            if spins > 64 * SPINS_PER_QUERY {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}
