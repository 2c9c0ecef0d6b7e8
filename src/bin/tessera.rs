//! The tessera command line: `info`, the benchmark suites and the Star Schema Benchmark.
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tessera::Gpu;
#[cfg(feature = "plot")]
use tessera::bench::plot::PlotArgs;
#[cfg(feature = "arrow")]
use tessera::bench::transfer::TransferArgs;
use tessera::bench::{
    compress::CompressArgs, groupby::GroupByArgs, join::JoinArgs, ops::OpsArgs,
    ordered::OrderedArgs, sort::SortArgs, topk::TopKArgs, topk_tweets::TweetsArgs,
};
use tessera::ssb::cli::SsbCmd;

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
        /// Also draw the suite's JSON report as SVG figures into this directory, as `tessera
        /// bench plot REPORT --out DIR` would after the run.
        #[cfg(feature = "plot")]
        #[arg(long, global = true, value_name = "DIR")]
        plot: Option<std::path::PathBuf>,
        #[command(subcommand)]
        suite: Suite,
    },
    /// Star Schema Benchmark: generate, load, run.
    Ssb {
        #[command(subcommand)]
        cmd: SsbCmd,
    },
}

#[derive(Subcommand)]
enum Suite {
    /// Select, project, bandwidth probes, three-kernel baseline and PyTorch (thesis ch. 3).
    Ops(OpsArgs),
    /// Hash join and primary-key join (thesis Figure 3-12, seed 002).
    Join(JoinArgs),
    /// Radix partition and radix sort (thesis Figure 3-13), with PyTorch's sort.
    Sort(SortArgs),
    /// Top-k: the thesis' Figures 4-10 to 4-16 (k, distributions, types, sizes, CPU) with
    /// PyTorch's topk on the same keys.
    Topk(TopKArgs),
    /// The four tweet queries (thesis §4.5.8): top-k fused with a filter and with a ranking
    /// of two columns against filter-then-top-k and project-then-top-k, and GROUP BY user
    /// by sort, count_runs and top-k.
    Tweets(TweetsArgs),
    /// Compression (thesis §5.6.2-5.6.3): decode-and-sum and decompression of every scheme
    /// with GPU decoders at every bit width and on the distributions D1-D3, against reading
    /// the compressed bytes, and the plain sum of the same values.
    Compress(CompressArgs),
    /// Group-by (issue 22): count and 64-bit sum of 2^27 rows over 2 to 10^8 groups against
    /// one read of the input, PyTorch's index_add_ and unique and DuckDB's GROUP BY on the
    /// same rows.
    Groupby(GroupByArgs),
    /// Ordered aggregation (issue 22, seeds 003 and 004): the atomics micro-benchmark, the
    /// atomic variants on sorted keys by shape, group count and distribution, the five-,
    /// three- and two-kernel pipelines, and sort plus the variants against the group-bys.
    Ordered(OrderedArgs),
    /// Host-device transfers: uploads of Arrow arrays the ordinary way and page-locked in
    /// place, downloads by every path (`to_vec`'s staged one among them), against the link's
    /// bandwidth measured in the same run.
    #[cfg(feature = "arrow")]
    Transfer(TransferArgs),
    /// Draws the suites' JSON reports as SVG figures: time against the model and the anchors
    /// over the swept parameter, one figure per experiment, and an index.md listing them.
    #[cfg(feature = "plot")]
    Plot(PlotArgs),
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
            match Gpu::new_with_notice(tessera::ssb::cli::jit_notice) {
                Ok(gpu) => {
                    println!(
                        "GPU: {} ({} SMs), kernels built for {}: {}",
                        gpu.name(),
                        gpu.sm_count(),
                        gpu.arch(),
                        gpu.kernel_code()
                    );
                    let families: Vec<_> = gpu.kernel_families().into_iter().map(|f| f.0).collect();
                    println!(
                        "kernel families, each loaded at its first launch: {}",
                        families.join(", ")
                    );
                }
                Err(e) => println!("GPU: none ({e})"),
            }
            println!(
                "CPU: {} threads for the CPU implementations (ssb run --device cpu)",
                rayon::current_num_threads()
            );
        }
        #[cfg(feature = "plot")]
        Cmd::Bench {
            plot: Some(out),
            suite,
        } => {
            // Checked before the suite runs, so that a bad directory costs no measurement.
            let json = suite.json().ok_or(
                "--plot draws a suite's report after its run; `bench plot` takes --out instead",
            )?;
            tessera::bench::plot::check_out(&out, "--plot")?;
            let before = tessera::bench::reports_written();
            run_suite(suite)?;
            // A suite that skipped (no GPU) writes no report; an older one there is not this run's.
            if tessera::bench::reports_written() > before {
                let args = PlotArgs {
                    json: vec![json],
                    out,
                };
                tessera::bench::plot::run(&args)?;
            } else {
                println!("--plot: the suite wrote no report in this run; nothing drawn");
            }
        }
        Cmd::Bench { suite, .. } => run_suite(suite)?,
        Cmd::Ssb { cmd } => tessera::ssb::cli::run(cmd)?,
    }
    Ok(())
}

impl Suite {
    /// The JSON report the suite writes (`None` for `plot`, which writes none).
    #[cfg_attr(not(feature = "plot"), allow(dead_code))]
    fn json(&self) -> Option<std::path::PathBuf> {
        let path = match self {
            Suite::Ops(a) => &a.json,
            Suite::Join(a) => &a.json,
            Suite::Sort(a) => &a.json,
            Suite::Topk(a) => &a.json,
            Suite::Tweets(a) => &a.json,
            Suite::Compress(a) => &a.json,
            Suite::Groupby(a) => &a.json,
            Suite::Ordered(a) => &a.json,
            #[cfg(feature = "arrow")]
            Suite::Transfer(a) => &a.json,
            #[cfg(feature = "plot")]
            Suite::Plot(_) => return None,
        };
        Some(path.clone())
    }
}

fn run_suite(suite: Suite) -> Result<(), Box<dyn std::error::Error>> {
    match suite {
        Suite::Ops(args) => tessera::bench::ops::run(&args)?,
        Suite::Join(args) => tessera::bench::join::run(&args)?,
        Suite::Sort(args) => tessera::bench::sort::run(&args)?,
        Suite::Topk(args) => tessera::bench::topk::run(&args)?,
        Suite::Tweets(args) => tessera::bench::topk_tweets::run(&args)?,
        Suite::Compress(args) => tessera::bench::compress::run(&args)?,
        Suite::Groupby(args) => tessera::bench::groupby::run(&args)?,
        Suite::Ordered(args) => tessera::bench::ordered::run(&args)?,
        #[cfg(feature = "arrow")]
        Suite::Transfer(args) => tessera::bench::transfer::run(&args)?,
        #[cfg(feature = "plot")]
        Suite::Plot(args) => tessera::bench::plot::run(&args)?,
    }
    Ok(())
}
