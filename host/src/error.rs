//! The error type of every fallible tessera call.
use cudarc::driver::DriverError;
use cudarc::driver::sys::CUresult;

/// What went wrong, with a message that names the problem.
///
/// New variants may be added: match with a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda.so`) could not be loaded.
    #[error("no CUDA driver: libcuda could not be loaded (is an NVIDIA driver installed?)")]
    NoDriver,
    /// The driver loaded but there is no usable device.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// The embedded PTX could not be loaded on this device.
    #[error("loading the {arch} kernels on {device} failed: {source}")]
    PtxLoad {
        /// Architecture of the PTX that was loaded.
        arch: &'static str,
        /// Device name.
        device: String,
        /// Driver error.
        source: DriverError,
    },
    /// A kernel launch or its execution failed.
    #[error("kernel {kernel} failed: {source}")]
    Launch {
        /// Kernel name.
        kernel: &'static str,
        /// Driver error.
        source: DriverError,
    },
    /// A device allocation did not fit.
    #[error("out of device memory allocating {bytes} bytes")]
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
    },
    /// An argument is invalid (length mismatch, length over the limit, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A file or directory could not be opened, read, written or renamed.
    #[error("{}: {action}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What tessera was doing: "cannot open", "write failed", ...
        action: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A value in a data file did not parse; `at` names the file (and the line and column of a
    /// text file), `what` the value.
    #[error("{at}: {what}: {source}")]
    Parse {
        /// Where: the file, and the line and column of a text file.
        at: String,
        /// What was being parsed, with the offending value.
        what: String,
        /// The parser's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A data file's contents are malformed or inconsistent; the message names the file and
    /// the problem (and the line and column of a text file, or the first offending row).
    #[error("{0}")]
    Data(String),
    /// Any other driver error, with what tessera was doing.
    #[error("CUDA driver error while {context}: {source}")]
    Driver {
        /// What tessera was doing.
        context: &'static str,
        /// Driver error.
        source: DriverError,
    },
}

/// `Result` with tessera's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps a driver error, turning out-of-memory into [`Error::OutOfMemory`].
    pub fn driver(context: &'static str, bytes: usize) -> impl FnOnce(DriverError) -> Error {
        move |source| {
            if source.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                Error::OutOfMemory { bytes }
            } else {
                Error::Driver { context, source }
            }
        }
    }

    /// Wraps the driver's refusal of the `arch` kernels on `device`.
    pub fn ptx_load(arch: &'static str, device: &str) -> impl FnOnce(DriverError) -> Error {
        let device = device.to_string();
        move |source| Error::PtxLoad {
            arch,
            device,
            source,
        }
    }

    /// Wraps a launch error for `kernel`.
    pub fn launch(kernel: &'static str) -> impl FnOnce(DriverError) -> Error {
        move |source| Error::Launch { kernel, source }
    }

    /// An [`Error::InvalidArgument`] with `msg`, which names the value and the fix.
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    /// Wraps an I/O error on `path` with what tessera was doing.
    pub fn io(
        path: impl AsRef<std::path::Path>,
        action: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.as_ref().to_path_buf();
        move |source| Error::Io {
            path,
            action,
            source,
        }
    }
}
