//! `cargo xtask build-ptx [--arch sm_80|sm_90] [--check]` and `cargo xtask bench <suite>`.
//!
//! This program is also the PTX linker: rustc calls it back with `TESSERA_PTX_LINK` set.
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

mod barriers;
mod calls;
mod ptxas;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "tessera's project automation")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the kernel crate to PTX (`target/ptx/<arch>/...`); --check also assembles it with
    /// ptxas and prints registers, spills and shared memory per kernel, and fails on any
    /// bar.sync under a thread-dependent branch.
    BuildPtx {
        /// sm_80 or sm_90; both when omitted.
        #[arg(long)]
        arch: Option<String>,
        /// Assemble with ptxas -arch=sm_90 (fetched from PyPI's nvidia-cuda-nvcc on first use).
        #[arg(long)]
        check: bool,
        /// With --check, also write the sm_90 assembly to this file: a cubin that a host built
        /// with the `dev-module` feature loads from `TESSERA_DEV_MODULE` instead of the
        /// embedded PTX (kernel variants on a device without the driver's JIT).
        #[arg(long, value_name = "FILE", requires = "check")]
        cubin: Option<PathBuf>,
        /// Show cargo's output.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Run a benchmark suite in release mode (table on stdout, JSON under target/bench/).
    Bench {
        /// Suite: ops, join, sort, topk, tweets, compress, groupby or ordered.
        suite: String,
        /// Extra arguments for `tessera bench <suite>` (see `tessera bench --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// The checkout this xtask runs for. `cargo run` sets `CARGO_MANIFEST_DIR` when it runs the
/// binary too, and that one names this run's checkout: a binary that cargo reuses from a
/// `CARGO_TARGET_DIR` shared by several checkouts (kernel variants) was compiled in any of
/// them, and `env!` names that one.
fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn main() -> ExitCode {
    tessera_ptx_build::run_as_linker_if_requested();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::BuildPtx {
            arch,
            check,
            cubin,
            verbose,
        } => build_ptx(arch, check, cubin, verbose),
        Cmd::Bench { suite, args } => bench(&suite, &args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn build_ptx(
    arch: Option<String>,
    check: bool,
    cubin: Option<PathBuf>,
    verbose: bool,
) -> Result<(), String> {
    let root = workspace_root();
    let archs: Vec<String> = match arch {
        Some(a) => vec![a],
        None => tessera_ptx_build::ARCHS
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    if cubin.is_some() && archs.iter().any(|a| a != "sm_90") {
        return Err("--cubin is assembled for sm_90: add --arch sm_90".into());
    }
    let linker = std::env::current_exe().map_err(|e| format!("cannot locate xtask: {e}"))?;
    for arch in archs {
        let opts = tessera_ptx_build::PtxOptions {
            workspace: root.clone(),
            target_dir: root.join("target/ptx"),
            arch: arch.clone(),
            // Every kernel, so that --check assembles the test and sweep kernels too.
            features: tessera_ptx_build::FEATURES.map(String::from).to_vec(),
            linker: linker.clone(),
            verbose,
        };
        let ptx = tessera_ptx_build::build(&opts).map_err(|e| e.to_string())?;
        let src = std::fs::read_to_string(&ptx).map_err(|e| format!("{}: {e}", ptx.display()))?;
        let kernels = src.matches(".entry ").count();
        println!("{arch}: {} ({kernels} kernels)", ptx.display());
        if check {
            ptxas::check(&root, &ptx, cubin.as_deref())?;
            barriers::check(&ptx, &src)?;
            calls::check(&ptx, &src)?;
        }
    }
    Ok(())
}

fn bench(suite: &str, args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&root)
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "tessera",
            "--bin",
            "tessera",
            "--",
            "bench",
            suite,
        ])
        .args(args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("benchmark suite {suite} failed"))
    }
}
