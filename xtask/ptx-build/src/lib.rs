//! Builds the `tessera-kernels` crate to PTX with upstream rustc's `nvptx64-nvidia-cuda` target.
//!
//! rustc links nvptx `cdylib`s through the `llvm-bitcode-linker` component, which cannot be
//! downloaded. We pass `-C linker=<this program>` instead, with [`LINK_ENV`] set: the program that
//! calls [`build`] (the xtask binary or the host crate's build script) must start with
//! [`run_as_linker_if_requested`], and then acts as the linker: `llvm-link` the bitcode objects and
//! rlib members, `opt` (internalize all but the kernels, then O3) and `llc` to PTX, all from the
//! toolchain's own `llvm-tools` component.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod bounds;
mod cubin;
mod link;
mod split;

pub use cubin::{FETCHED_PTXAS, assemble, cubin_sm, find_ptxas};
pub use link::run_as_linker_if_requested;
pub use split::{CORE, FAMILIES, Part, family_names, family_of, split};

/// Environment variable that turns the calling program into the PTX linker.
pub const LINK_ENV: &str = "TESSERA_PTX_LINK";
/// The device target triple.
pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// Architectures we build for. PTX for sm_80 also runs (JIT-compiled) on sm_90.
pub const ARCHS: [&str; 2] = ["sm_80", "sm_90"];
/// The toolchain pinned in `rust-toolchain.toml`; named in error messages.
pub const TOOLCHAIN: &str = "nightly-2026-04-02";

/// A failure of the PTX build, with the command that fixes it where there is one.
#[derive(Debug)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

fn err<T>(msg: impl Into<String>) -> Result<T, BuildError> {
    Err(BuildError(msg.into()))
}

/// The kernel crate's optional kernel sets: `testing` (kernels only tests call) and `sweeps`
/// (the benchmarks' tile-configuration sweeps). Without them the PTX holds the product kernels.
pub const FEATURES: [&str; 2] = ["testing", "sweeps"];

/// What to build.
#[derive(Clone, Debug)]
pub struct PtxOptions {
    /// Workspace root (holds `Cargo.toml` and `gpu-kernels/`).
    pub workspace: PathBuf,
    /// Cargo target directory for the nested kernel build.
    pub target_dir: PathBuf,
    /// `sm_80` or `sm_90`.
    pub arch: String,
    /// Features of the kernel crate beyond the product kernels ([`FEATURES`]).
    pub features: Vec<String>,
    /// Program to run as the linker (it must call [`run_as_linker_if_requested`] first).
    pub linker: PathBuf,
    /// Print cargo's output instead of capturing it.
    pub verbose: bool,
}

/// The toolchain's sysroot (`rustc --print sysroot`), using `$RUSTC` when cargo set it.
pub fn sysroot() -> Result<PathBuf, BuildError> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| BuildError(format!("cannot run {rustc:?}: {e}")))?;
    if !out.status.success() {
        return err(format!(
            "`rustc --print sysroot` failed: {}\nInstall the pinned toolchain: run `rustup toolchain install --no-self-update` in the project root",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Directory holding `llvm-link`, `opt` and `llc` from the `llvm-tools` component.
pub fn llvm_bin_dir(sysroot: &Path) -> Result<PathBuf, BuildError> {
    let lib = sysroot.join("lib/rustlib");
    let host = std::fs::read_dir(&lib)
        .map_err(|e| BuildError(format!("cannot read {}: {e}", lib.display())))?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .find(|bin| bin.join("llvm-link").exists());
    match host {
        Some(bin) => Ok(bin),
        None => err(format!(
            "the `llvm-tools` component is missing from {}; run `rustup component add llvm-tools --toolchain {TOOLCHAIN}` (or `rustup toolchain install --no-self-update` in the project root)",
            sysroot.display()
        )),
    }
}

/// Checks that the nvptx target's standard library and the LLVM tools are installed, with an
/// error that names the `rustup` command that fixes it.
pub fn check_toolchain() -> Result<(), BuildError> {
    let sysroot = sysroot()?;
    if !sysroot
        .join("lib/rustlib")
        .join(TARGET)
        .join("lib")
        .exists()
    {
        return err(format!(
            "the `{TARGET}` target is not installed for {}; run `rustup target add {TARGET} --toolchain {TOOLCHAIN}` (or `rustup toolchain install --no-self-update` in the project root)",
            sysroot.display()
        ));
    }
    llvm_bin_dir(&sysroot).map(|_| ())
}

/// Environment variables that the outer cargo sets for build scripts and that must not leak
/// into the nested kernel build (wrappers such as clippy-driver, host rustflags, target dirs).
fn scrub(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks = (key.starts_with("CARGO_")
            && !matches!(key, "CARGO_HOME" | "CARGO_NET_OFFLINE")
            && !key.starts_with("CARGO_REGISTRIES")
            && !key.starts_with("CARGO_HTTP"))
            || matches!(
                key,
                "RUSTC_WRAPPER"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "RUSTFLAGS"
                    | "RUSTDOCFLAGS"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "NUM_JOBS"
                    | "RUSTC_LINKER"
                    | "CARGO"
            );
        if leaks {
            cmd.env_remove(key);
        }
    }
}

/// Builds the kernel crate for `opts.arch` and returns the path of the PTX file.
pub fn build(opts: &PtxOptions) -> Result<PathBuf, BuildError> {
    if !ARCHS.contains(&opts.arch.as_str()) {
        return err(format!(
            "unsupported architecture {:?}; use one of {ARCHS:?}",
            opts.arch
        ));
    }
    check_toolchain()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let manifest = opts.workspace.join("gpu-kernels/Cargo.toml");
    if let Some(f) = opts
        .features
        .iter()
        .find(|f| !FEATURES.contains(&f.as_str()))
    {
        return err(format!(
            "unknown kernel feature {f:?}; use some of {FEATURES:?}"
        ));
    }
    // One target dir per arch and feature set: all can then be cached side by side.
    let mut features = opts.features.clone();
    features.sort();
    features.dedup();
    let target_dir = opts.target_dir.join(
        std::iter::once(opts.arch.clone())
            .chain(features.iter().cloned())
            .collect::<Vec<_>>()
            .join("+"),
    );
    let mut cmd = Command::new(cargo);
    scrub(&mut cmd);
    cmd.current_dir(&opts.workspace)
        .args(["rustc", "--manifest-path"])
        .arg(&manifest)
        .args([
            "--profile",
            "ptx",
            "--target",
            TARGET,
            "--crate-type",
            "cdylib",
        ])
        .args(if features.is_empty() {
            vec![]
        } else {
            vec!["--features".to_string(), features.join(",")]
        })
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--")
        // The build's output is shown only when it fails, so warnings would go unseen: the
        // kernel crate is held to the host's `-D warnings` this way.
        .arg("-Dwarnings")
        .arg(format!("-Ctarget-cpu={}", opts.arch))
        .arg(format!("-Clinker={}", opts.linker.display()))
        .env(LINK_ENV, "1");
    let out = if opts.verbose {
        cmd.status()
            .map(|s| (s, String::new()))
            .map_err(|e| BuildError(format!("cannot run cargo: {e}")))?
    } else {
        let o = cmd
            .output()
            .map_err(|e| BuildError(format!("cannot run cargo: {e}")))?;
        (o.status, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    if !out.0.success() {
        return err(format!(
            "building the kernel crate for {} failed:\n{}",
            opts.arch, out.1
        ));
    }
    let ptx = target_dir
        .join(TARGET)
        .join("ptx")
        .join("tessera_kernels.ptx");
    if !ptx.exists() {
        return err(format!(
            "the kernel build succeeded but {} is missing",
            ptx.display()
        ));
    }
    Ok(ptx)
}
