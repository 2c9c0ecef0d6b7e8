//! The tessera command line.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tessera_host::bench::ops::{self, OpsConfig};
use tessera_host::{Gpu, gpu_or_skip};

#[derive(Parser)]
#[command(name = "tessera", version, about = "GPU data analytics in Rust")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show the GPU tessera would use.
    Info,
    /// Run a benchmark suite.
    Bench {
        #[command(subcommand)]
        suite: Suite,
    },
    /// Star Schema Benchmark: generate, load, run.
    Ssb {
        #[command(subcommand)]
        cmd: tessera_host::ssb::cli::SsbCmd,
    },
}

#[derive(Subcommand)]
enum Suite {
    /// Select, project, bandwidth probes, three-kernel baseline and PyTorch (thesis ch. 3).
    Ops {
        /// log2 of the items per column.
        #[arg(long, default_value_t = 29)]
        log2n: u32,
        /// Timed repetitions per point.
        #[arg(long, default_value_t = 20)]
        reps: usize,
        /// Only s = 0.5 and the default tile (skip the sweeps).
        #[arg(long)]
        quick: bool,
        /// Skip the CPU implementations.
        #[arg(long)]
        no_cpu: bool,
        /// PyTorch script; "none" to skip.
        #[arg(long, default_value = "benches/torch_ops.py")]
        torch: String,
        /// Where to write the JSON report.
        #[arg(long, default_value = "target/bench/ops.json")]
        json: PathBuf,
    },
    /// Hash join and primary-key join (thesis Figure 3-12, seed 002).
    Join(tessera_host::bench::join::JoinArgs),
    /// Radix partition and radix sort (thesis Figure 3-13), with PyTorch's sort.
    Sort(tessera_host::bench::sort::SortArgs),
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.cmd {
        Cmd::Info => {
            let gpu = Gpu::new()?;
            println!(
                "{} ({} SMs), kernels built for {}",
                gpu.name(),
                gpu.sm_count(),
                gpu.arch()
            );
        }
        Cmd::Bench {
            suite:
                Suite::Ops {
                    log2n,
                    reps,
                    quick,
                    no_cpu,
                    torch,
                    json,
                },
        } => {
            if !(10..=31).contains(&log2n) {
                return Err(format!("--log2n {log2n} is outside 10..=31").into());
            }
            let cfg = OpsConfig {
                log2n,
                reps: reps.max(1),
                sweeps: !quick,
                cpu: !no_cpu,
                torch_script: (torch != "none").then(|| PathBuf::from(torch)),
            };
            let report = match gpu_or_skip("tessera bench ops") {
                Some(gpu) => ops::run_gpu(&gpu, &cfg)?,
                None => {
                    println!("notice: no GPU found; timing the CPU implementations only");
                    ops::run_cpu(&cfg)
                }
            };
            ops::print_report(&report);
            if let Some(dir) = json.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&json, serde_json::to_string_pretty(&report)?)?;
            println!("\nJSON: {}", json.display());
        }
        Cmd::Bench {
            suite: Suite::Join(args),
        } => tessera_host::bench::join::run(&args)?,
        Cmd::Bench {
            suite: Suite::Sort(args),
        } => tessera_host::bench::sort::run(&args)?,
        Cmd::Ssb { cmd } => tessera_host::ssb::cli::run(cmd)?,
    }
    Ok(())
}
