//! [`Gpu`]: one device, its context, a stream, and the embedded kernels, loaded as one module
//! per kernel family when the family's first kernel is launched.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;
use tessera_kernels::spec::KernelShape;

use crate::error::{Error, Result};

/// A family of kernels as the binary embeds it: for each of [`ARCHS`], its PTX and its cubin
/// (empty where the build had no ptxas), both deflated by the build script (see `inflate`).
pub(crate) struct Family {
    name: &'static str,
    ptx: [&'static [u8]; ARCHS.len()],
    cubin: [&'static [u8]; ARCHS.len()],
}

mod embedded {
    use super::Family;
    // `ARCHS`, the architectures the binary embeds kernels for; `FAMILIES`, the core family
    // first; `KERNELS`, each kernel's family by name, sorted.
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}
use embedded::{ARCHS, FAMILIES, KERNELS};

/// The index in [`FAMILIES`] of the family of kernel `name`, if the binary has that kernel.
fn family_of(name: &str) -> Option<usize> {
    KERNELS
        .binary_search_by(|(k, _)| (*k).cmp(name))
        .ok()
        .map(|i| KERNELS[i].1 as usize)
}

/// One of the embedded files, inflated.
fn inflate(what: &str, arch: &str, packed: &[u8]) -> Result<Vec<u8>> {
    miniz_oxide::inflate::decompress_to_vec(packed).map_err(|e| {
        Error::Data(format!(
            "the embedded {arch} {what} does not inflate ({e:?}): the binary is damaged; rebuild it"
        ))
    })
}

/// `work()`, with `notice()` called on another thread if it has not returned after `after`.
fn notice_if_slow<T>(
    after: std::time::Duration,
    work: impl FnOnce() -> T,
    notice: impl FnOnce() + Send,
) -> T {
    let (done, wait) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // `done` is dropped, never sent on: a disconnection is the work's end.
            if wait.recv_timeout(after) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                notice();
            }
        });
        let out = work();
        drop(done);
        out
    })
}

/// How a [`Gpu`]'s kernels were loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelCode {
    /// Machine code assembled when the binary was built (no JIT).
    Cubin,
    /// The PTX, compiled by the driver when loaded (cached by the driver after the first
    /// time); `why` says why no cubin was used.
    Ptx {
        /// Why the binary's cubin was not loaded.
        why: String,
    },
    /// A development build's `TESSERA_DEV_MODULE` file.
    DevModule,
}

impl std::fmt::Display for KernelCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelCode::Cubin => f.write_str("cubin, assembled when the binary was built"),
            KernelCode::Ptx { why } => write!(f, "PTX, compiled by the driver ({why})"),
            KernelCode::DevModule => f.write_str("the module TESSERA_DEV_MODULE names"),
        }
    }
}

/// Whether a cubin assembled for `arch` runs on a GPU of compute capability `major.x`: machine
/// code runs on its own major version at its minor version or later, and both cubins are of
/// minor version 0.
fn cubin_runs_on(arch: &str, major: i32) -> bool {
    match arch {
        "sm_90" => major == 9,
        "sm_80" => major == 8,
        _ => false,
    }
}

/// Loads `family`'s kernels for `arch` on `ctx`: the embedded cubin where there is one for the
/// GPU (`capability`) and the driver takes it, else the PTX. `TESSERA_JIT=1` skips the cubin.
fn load_family(
    ctx: &Arc<CudaContext>,
    (arch, device): (&'static str, &str),
    family: &Family,
    capability: (i32, i32),
) -> Result<(Arc<CudaModule>, KernelCode)> {
    let a = ARCHS
        .iter()
        .position(|x| *x == arch)
        .expect("an embedded arch");
    let (ptx, cubin) = (family.ptx[a], family.cubin[a]);
    let what = |kind: &str| format!("{} {kind}", family.name);
    let why = if cubin.is_empty() {
        "this binary was built without ptxas".to_string()
    } else if std::env::var_os("TESSERA_JIT").is_some_and(|v| v == "1") {
        "TESSERA_JIT=1".to_string()
    } else if !cubin_runs_on(arch, capability.0) {
        let (major, minor) = capability;
        format!("the {arch} cubin does not run on compute capability {major}.{minor}")
    } else {
        // A driver older than the ptxas refuses its cubin: the PTX then goes to its JIT,
        // whose own error (a PTX too new for it) is the one to report.
        match ctx.load_module(Ptx::from_binary(inflate(&what("cubin"), arch, cubin)?)) {
            Ok(module) => return Ok((module, KernelCode::Cubin)),
            Err(e) => format!("the driver refused the {arch} cubin: {e}"),
        }
    };
    let text = String::from_utf8(inflate(&what("PTX"), arch, ptx)?).map_err(|_| {
        Error::Data(format!(
            "the embedded {arch} {} PTX is not UTF-8: the binary is damaged; rebuild it",
            family.name
        ))
    })?;
    let module = ctx
        .load_module(Ptx::from_src(text))
        .map_err(Error::ptx_load(arch, device))?;
    Ok((module, KernelCode::Ptx { why }))
}

/// A CUDA device with tessera's kernels loaded. Operations are queued on one stream; results
/// that reach the host (downloads, counts) synchronize it.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Each kernel family's module and how it was loaded ([`FAMILIES`]' order): the core
    /// family's when the `Gpu` opens, every other's at the first launch of one of its kernels.
    modules: Vec<OnceLock<(Arc<CudaModule>, KernelCode)>>,
    /// Held while a family loads, so that two threads do not both load it.
    loading: Mutex<()>,
    /// Called once, the first time a family's load takes [`Gpu::SLOW_LOAD`].
    notice: Option<Box<dyn Fn() + Send + Sync>>,
    noticed: AtomicBool,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    /// Blocks of each kernel resident on one SM with so many bytes of dynamic shared memory,
    /// asked once.
    resident_per_sm: Mutex<HashMap<(&'static str, usize), u32>>,
    /// The dynamic shared memory each kernel was allowed, once.
    smem_allowed: Mutex<HashMap<&'static str, usize>>,
    name: String,
    arch: &'static str,
    capability: (i32, i32),
    sm_count: u32,
    /// Shared memory: a block's opt-in limit, an SM's, and what the driver reserves per block
    /// (bytes; asked once, as the launches' sizing reads them on every call).
    smem: SharedMemory,
    /// Most blocks of a persistent grid; 0: as many as are resident at once.
    resident_cap: std::sync::atomic::AtomicU32,
    /// The staged downloads' page-locked buffer (`runtime::download`), made on first use.
    pub(super) staging: Mutex<Option<cudarc::driver::PinnedHostSlice<u8>>>,
    /// The page-locked words of [`Gpu::host_words`], made on first use.
    pub(super) mapped: Mutex<Option<super::mapped::MappedWords>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("name", &self.name)
            .field("arch", &self.arch)
            .finish()
    }
}

impl Gpu {
    /// Opens device 0.
    pub fn new() -> Result<Gpu> {
        Gpu::with_device(0)
    }

    /// [`Gpu::new`], calling `notice` once if loading a family of kernels, when the `Gpu`
    /// opens or at a family's first launch, is still going after [`Gpu::SLOW_LOAD`]: where the
    /// driver compiles the PTX (a binary without a cubin for the GPU, on a machine whose
    /// driver has not cached it), that takes a while, and a program can say so instead of
    /// seeming to hang.
    pub fn new_with_notice(notice: impl Fn() + Send + Sync + 'static) -> Result<Gpu> {
        Gpu::open(0, Some(Box::new(notice)))
    }

    /// How long a family's load takes before [`Gpu::new_with_notice`]'s notice.
    pub const SLOW_LOAD: std::time::Duration = std::time::Duration::from_secs(5);

    /// What a program may say when [`Gpu::new_with_notice`] calls its notice.
    pub const JIT_NOTICE: &'static str = "loading tessera's kernels: the CUDA driver is \
        compiling them for this GPU, which takes a while the first time on a machine (it \
        caches them); a release build on a machine with ptxas embeds them ready (README: \
        kernel code at start-up)";

    /// Whether a CUDA driver and at least one device are present.
    pub fn available() -> bool {
        Gpu::device_count().is_ok_and(|n| n > 0)
    }

    /// Number of CUDA devices; [`Error::NoDriver`] without a driver.
    pub fn device_count() -> Result<usize> {
        // SAFETY: only probes whether the driver library can be loaded; cudarc panics on use
        // when it cannot, so this check must come first.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let n = CudaContext::device_count()
            .map_err(|e| Error::NoDevice(format!("the driver reports: {e}")))?;
        Ok(n.max(0) as usize)
    }

    /// Opens device `ordinal` with the kernels built for its architecture (sm_90 on compute
    /// capability 9.0 and newer, sm_80 on 8.x): the binary's cubin where it has one for the
    /// GPU and the driver takes it, else the PTX, which the driver compiles (a while the first
    /// time; the driver caches it). The kernels come in families, one module each: the core
    /// family (selection, projection, joins, the bandwidth probes) loads here, so that a GPU
    /// that cannot take the kernels fails here; every other family at the first launch of
    /// one of its kernels, or at [`Gpu::load_all_kernels`]. [`Gpu::kernel_code`] says how.
    pub fn with_device(ordinal: usize) -> Result<Gpu> {
        Gpu::open(ordinal, None)
    }

    fn open(ordinal: usize, notice: Option<Box<dyn Fn() + Send + Sync>>) -> Result<Gpu> {
        let count = Gpu::device_count()?;
        if ordinal >= count {
            return Err(Error::NoDevice(format!(
                "device {ordinal} requested, {count} present"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(Error::driver("creating a context", 0))?;
        // SAFETY: cudarc's tracking gives each allocation two events (created and destroyed
        // with it) to order its uses across streams. The library queues all its work on the
        // one stream below, where the driver orders it; code that adds a stream of its own
        // (the SSB coprocessor's copy stream) orders its uses with explicit events, as
        // `Gpu::context` documents.
        unsafe { ctx.disable_event_tracking() };
        keep_freed_memory(&ctx);
        let name = ctx.name().unwrap_or_else(|_| "unknown device".into());
        let (major, minor) = ctx
            .compute_capability()
            .map_err(Error::driver("querying the compute capability", 0))?;
        let arch = match major {
            9.. => "sm_90",
            8 => "sm_80",
            _ => {
                return Err(Error::NoDevice(format!(
                    "{name} has compute capability {major}.x; tessera needs 8.0 or newer"
                )));
            }
        };
        let sm_count = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(Error::driver("querying the SM count", 0))? as u32;
        let smem = SharedMemory::of(&ctx)?;
        let stream = ctx.default_stream();
        let gpu = Gpu {
            ctx,
            stream,
            modules: FAMILIES.iter().map(|_| OnceLock::new()).collect(),
            loading: Mutex::new(()),
            notice,
            noticed: AtomicBool::new(false),
            functions: Mutex::new(HashMap::new()),
            resident_per_sm: Mutex::new(HashMap::new()),
            smem_allowed: Mutex::new(HashMap::new()),
            resident_cap: std::sync::atomic::AtomicU32::new(0),
            staging: Mutex::new(None),
            mapped: Mutex::new(None),
            name,
            arch,
            capability: (major, minor),
            sm_count,
            smem,
        };
        // A development build (the `dev-module` feature) loads every kernel from the file
        // `TESSERA_DEV_MODULE` names. That file must come from the same kernel sources'
        // parameter layouts (a variant of their code, not of their signatures): the host
        // launches its kernels as it would the embedded ones.
        #[cfg(feature = "dev-module")]
        if let Some(path) = std::env::var_os("TESSERA_DEV_MODULE") {
            let module = gpu
                .ctx
                .load_module(Ptx::from_file(path))
                .map_err(Error::ptx_load(arch, &gpu.name))?;
            for slot in &gpu.modules {
                let _ = slot.set((module.clone(), KernelCode::DevModule));
            }
        }
        gpu.module(0)?;
        Ok(gpu)
    }

    /// The module of family `family` (an index in [`FAMILIES`]), loaded on first use.
    fn module(&self, family: usize) -> Result<Arc<CudaModule>> {
        let slot = &self.modules[family];
        if let Some((module, _)) = slot.get() {
            return Ok(module.clone());
        }
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((module, _)) = slot.get() {
            return Ok(module.clone());
        }
        let load = || {
            load_family(
                &self.ctx,
                (self.arch, &self.name),
                &FAMILIES[family],
                self.capability,
            )
        };
        let loaded = match &self.notice {
            Some(notice) => notice_if_slow(Gpu::SLOW_LOAD, load, || {
                if !self.noticed.swap(true, Ordering::Relaxed) {
                    notice();
                }
            }),
            None => load(),
        }?;
        let module = loaded.0.clone();
        let _ = slot.set(loaded);
        Ok(module)
    }

    /// Loads every family of kernels that is not loaded yet, so that no later launch waits
    /// for one (a benchmark that must not time a load, a program that would rather wait when
    /// it starts).
    pub fn load_all_kernels(&self) -> Result<()> {
        (0..FAMILIES.len()).try_for_each(|f| self.module(f).map(|_| ()))
    }

    /// Each family of kernels by name, with how it was loaded, or `None` while none of its
    /// kernels has been launched.
    pub fn kernel_families(&self) -> Vec<(&'static str, Option<KernelCode>)> {
        FAMILIES
            .iter()
            .zip(&self.modules)
            .map(|(family, slot)| (family.name, slot.get().map(|(_, code)| code.clone())))
            .collect()
    }

    /// Device name as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Architecture of the loaded kernels (`sm_80` or `sm_90`).
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    /// How the kernels were loaded: the binary's cubin or the driver's JIT of the PTX, as the
    /// core family was when the `Gpu` opened (the other families follow the same rule;
    /// [`Gpu::kernel_families`] has each).
    pub fn kernel_code(&self) -> &KernelCode {
        &self.modules[0].get().expect("loaded when the Gpu opened").1
    }

    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Caps the kernels that size their grid to the GPU (the SSB probes, which walk tiles in a
    /// loop) at `blocks` blocks, `None` to lift the cap. Results do not depend on it; a small
    /// cap makes each block walk many tiles, which tests use to reach the loop's later
    /// iterations on small inputs.
    pub fn set_resident_block_cap(&self, blocks: Option<u32>) {
        let cap = blocks.map_or(0, |b| b.max(1));
        self.resident_cap
            .store(cap, std::sync::atomic::Ordering::Relaxed);
    }

    /// The cap of [`Gpu::set_resident_block_cap`], if any.
    pub(crate) fn resident_block_cap(&self) -> Option<u32> {
        match self.resident_cap.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            cap => Some(cap),
        }
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(Error::driver("synchronizing", 0))
    }

    /// The stream every operation of this `Gpu` is queued on (for applications that manage
    /// device memory of their own).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA context of the device.
    ///
    /// Device memory allocated through a `Gpu` carries no cudarc events (its tracking is
    /// off: every allocation would otherwise create and destroy two): work queued on
    /// [`Gpu::stream`] is ordered by the driver, but a caller that uses memory on another
    /// stream of this context must order that stream against [`Gpu::stream`] with events
    /// itself (record on one, wait on the other).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The loaded function for `spec` (looked up once, then cached).
    pub(crate) fn function(&self, spec: &KernelShape) -> Result<CudaFunction> {
        let lock = || self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = lock().get(spec.name()) {
            return Ok(f.clone());
        }
        let missing = DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_FOUND);
        // The functions' lock is not held while a family loads, which may take a while.
        let family = family_of(spec.name()).ok_or_else(|| Error::launch(spec.name())(missing))?;
        let f = self
            .module(family)?
            .load_function(spec.name())
            .map_err(Error::launch(spec.name()))?;
        lock().insert(spec.name(), f.clone());
        Ok(f)
    }

    /// Blocks of `spec` resident on one SM at once without dynamic shared memory (at least
    /// one); see [`Gpu::blocks_per_sm`].
    pub(crate) fn resident_blocks_per_sm(&self, spec: &KernelShape) -> Result<u32> {
        Ok(self.blocks_per_sm(spec, 0)?.max(1))
    }

    /// Blocks of `spec` resident on one SM at once with `smem` bytes of dynamic shared memory
    /// (0 where one does not fit): the driver's occupancy figure, asked once per kernel and
    /// size (the query costs microseconds, which a launch would otherwise pay every time).
    pub(crate) fn blocks_per_sm(&self, spec: &KernelShape, smem: usize) -> Result<u32> {
        let key = (spec.name(), smem);
        let cached = self
            .resident_per_sm
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .copied();
        if let Some(b) = cached {
            return Ok(b);
        }
        let b = self
            .function(spec)?
            .occupancy_max_active_blocks_per_multiprocessor(spec.threads(), smem, None)
            .map_err(Error::launch(spec.name()))?;
        self.resident_per_sm
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, b);
        Ok(b)
    }

    /// The most dynamic shared memory `spec` can launch with on this GPU (the device's opt-in
    /// limit less the kernel's static shared memory), allowed for the kernel once and for all.
    /// Above 48 KB the driver needs that allowance per kernel; it is set to the limit rather
    /// than to one launch's size so that launches of other sizes from other threads never
    /// lower it under each other.
    pub(crate) fn allow_max_dynamic_smem(&self, spec: &KernelShape) -> Result<usize> {
        // Held across the driver calls, so that the allowance is set once (three calls that
        // cost microseconds each, which every group-by and join paid before).
        let mut allowed = self.smem_allowed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&limit) = allowed.get(spec.name()) {
            return Ok(limit);
        }
        let limit = self.max_dynamic_smem(spec)?;
        self.function(spec)?
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                limit as i32,
            )
            .map_err(Error::driver("allowing a kernel's shared memory", limit))?;
        allowed.insert(spec.name(), limit);
        Ok(limit)
    }

    /// The most dynamic shared memory `spec` can launch with where `per_sm` of its blocks
    /// share an SM (and allows it): the SM's shared memory less each block's reservation,
    /// split `per_sm` ways, less the kernel's static shared memory, at most what one block
    /// may take.
    pub(crate) fn dynamic_smem_sharing(&self, spec: &KernelShape, per_sm: usize) -> Result<usize> {
        let one = self.allow_max_dynamic_smem(spec)?;
        Ok(self.smem.sharing(one, per_sm))
    }

    /// The most dynamic shared memory `spec` can launch with on this GPU: the device's opt-in
    /// limit less the kernel's static shared memory.
    pub(crate) fn max_dynamic_smem(&self, spec: &KernelShape) -> Result<usize> {
        let fixed = self
            .function(spec)?
            .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .map_err(Error::driver("querying a kernel's shared memory", 0))?;
        Ok(self.smem.optin.saturating_sub(fixed.max(0) as usize))
    }
}

/// A device's shared memory limits, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SharedMemory {
    /// The most one block may take (opt-in), static and dynamic together.
    optin: usize,
    /// An SM's.
    per_sm: usize,
    /// What the driver reserves per resident block.
    reserved: usize,
}

impl SharedMemory {
    fn of(ctx: &CudaContext) -> Result<SharedMemory> {
        use cudarc::driver::sys::CUdevice_attribute as Attr;
        let attr = |a, what| {
            ctx.attribute(a)
                .map(|v| v.max(0) as usize)
                .map_err(Error::driver(what, 0))
        };
        Ok(SharedMemory {
            optin: attr(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                "querying the shared memory per block",
            )?,
            per_sm: attr(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                "querying the shared memory per SM",
            )?,
            reserved: attr(
                Attr::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                "querying the shared memory reserved per block",
            )?,
        })
    }

    /// The dynamic shared memory of a kernel that may take `one` bytes of it alone (the
    /// opt-in limit less its static memory) where `per_sm` of its blocks share an SM: the
    /// SM's memory split `per_sm` ways, less each block's reservation and static memory.
    fn sharing(&self, one: usize, per_sm: usize) -> usize {
        let fixed = self.optin.saturating_sub(one);
        (self.per_sm / per_sm.max(1))
            .saturating_sub(self.reserved + fixed)
            .min(one)
    }
}

/// Lets the device's default memory pool, which stream-ordered allocations come from, keep
/// what is freed instead of returning it to the driver at each synchronization: an operator's
/// scratch buffers then cost no mapping of fresh memory on its next call. Where the driver
/// has no pools (allocations are then synchronous) this does nothing.
fn keep_freed_memory(ctx: &CudaContext) {
    use cudarc::driver::sys;
    if !ctx.has_async_alloc() {
        return;
    }
    let mut pool = std::mem::MaybeUninit::<sys::CUmemoryPool>::uninit();
    // SAFETY: the device handle is the context's; the driver writes the pool on success.
    let got = unsafe { sys::cuDeviceGetDefaultMemPool(pool.as_mut_ptr(), ctx.cu_device()) };
    if got != sys::CUresult::CUDA_SUCCESS {
        return;
    }
    let mut threshold = u64::MAX;
    // SAFETY: the pool is valid (queried above); the release threshold is a u64 the driver
    // reads. Failure leaves the default, which is only slower.
    let _ = unsafe {
        sys::cuMemPoolSetAttribute(
            pool.assume_init(),
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_sharing_an_sm_split_its_memory() {
        // An H100's or H200's limits; a kernel with 8,368 bytes of static shared memory.
        let h = SharedMemory {
            optin: 232_448,
            per_sm: 233_472,
            reserved: 1_024,
        };
        let one = 232_448 - 8_368;
        assert_eq!(h.sharing(one, 1), one);
        assert_eq!(h.sharing(one, 2), 116_736 - 1_024 - 8_368);
        assert_eq!(h.sharing(one, 4), 58_368 - 1_024 - 8_368);
        assert_eq!(h.sharing(one, 0), one);
        // Static memory past an SM's share leaves none.
        assert_eq!(h.sharing(1_000, 64), 0);
    }

    #[test]
    fn the_notice_comes_only_when_the_work_is_slow() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Duration;
        let said = AtomicBool::new(false);
        let say = || said.store(true, Ordering::SeqCst);
        assert_eq!(notice_if_slow(Duration::from_secs(60), || 7, say), 7);
        assert!(!said.load(Ordering::SeqCst));
        let slow = || std::thread::sleep(Duration::from_millis(300));
        notice_if_slow(Duration::from_millis(10), slow, say);
        assert!(said.load(Ordering::SeqCst));
    }

    #[test]
    fn cubins_run_on_their_own_major_version_only() {
        assert!(cubin_runs_on("sm_90", 9));
        assert!(cubin_runs_on("sm_80", 8));
        assert!(!cubin_runs_on("sm_90", 10));
        assert!(!cubin_runs_on("sm_90", 12));
        assert!(!cubin_runs_on("sm_80", 9));
        assert!(!cubin_runs_on("sm_80", 7));
    }

    #[test]
    fn embedded_files_inflate() {
        // Every family's PTX is there for both architectures; its cubin only where the build
        // found ptxas, and then it must inflate to an ELF image.
        for family in &FAMILIES {
            for (a, arch) in ARCHS.iter().enumerate() {
                let text = String::from_utf8(inflate("PTX", arch, family.ptx[a]).unwrap()).unwrap();
                assert!(
                    text.contains(&format!(".target {arch}")),
                    "{} {arch} PTX",
                    family.name
                );
                let cubin = family.cubin[a];
                if !cubin.is_empty() {
                    let image = inflate("cubin", arch, cubin).unwrap();
                    assert_eq!(&image[..4], b"\x7fELF", "{} {arch} cubin", family.name);
                }
            }
        }
        assert!(inflate("cubin", "sm_90", b"not deflate").is_err());
    }

    #[test]
    fn every_kernel_has_one_family_whose_ptx_holds_it() {
        assert_eq!(FAMILIES[0].name, "core");
        assert!(
            KERNELS.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, each once"
        );
        let sm90 = ARCHS.iter().position(|a| *a == "sm_90").unwrap();
        let texts: Vec<String> = FAMILIES
            .iter()
            .map(|f| String::from_utf8(inflate("PTX", "sm_90", f.ptx[sm90]).unwrap()).unwrap())
            .collect();
        let mut entries: Vec<(&str, usize)> = texts
            .iter()
            .enumerate()
            .flat_map(|(f, text)| {
                text.lines()
                    .filter_map(|l| l.strip_prefix(".visible .entry "))
                    .map(move |l| (l.trim_end_matches('('), f))
            })
            .collect();
        entries.sort();
        let kernels: Vec<(&str, usize)> = KERNELS.iter().map(|&(k, f)| (k, f as usize)).collect();
        assert_eq!(entries, kernels, "each kernel in its family's PTX alone");
        for (name, f) in KERNELS {
            assert_eq!(family_of(name), Some(f as usize));
        }
        assert_eq!(family_of("no_such_kernel"), None);
        // The kernels a program of each kind starts with are in the small core family, and the
        // SSB queries' in their own.
        for name in ["bw_read_u32", "select_u32"] {
            assert_eq!(family_of(name), Some(0), "{name}");
        }
        let ssb = family_of("ssb_flight1").unwrap();
        assert_eq!(FAMILIES[ssb].name, "ssb");
        let total: usize = texts.iter().map(String::len).sum();
        assert!(texts[ssb].len() * 4 < total);
        assert!(
            texts[0].len() * 8 < total,
            "the core family, which every Gpu loads when it opens, holds {} of the kernels' {} \
             bytes of PTX: give large new kernels a family of their own \
             (xtask/ptx-build/src/split.rs)",
            texts[0].len(),
            total
        );
    }
}
