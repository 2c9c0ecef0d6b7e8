//! The test harness of the test files that need a GPU or DuckDB (`harness = false` in
//! Cargo.toml): libtest's command line and output (`libtest-mimic`), with a test that cannot
//! run here reported as **ignored**, with the reason, instead of a test that returns early and
//! passes.
//!
//! * GPU tests take the binary's one [`Gpu`], opened by the first GPU test that runs (module
//!   load JIT-compiles every kernel once). Without a GPU each of them reports
//!   `ignored (needs a GPU)`; under `TESSERA_REQUIRE_GPU=1` they fail instead.
//! * DuckDB tests need `python3 -c 'import duckdb'`; without it they are ignored the same way,
//!   under `TESSERA_REQUIRE_DUCKDB=1` (set in CI) they fail.
//! * After libtest's summary the binary prints, outside any capture, one `note:` line per
//!   reason with how many tests it ignored (or failed).
//! * `--list` and a filter that selects no GPU test never open the GPU. `--ignored` and
//!   `--include-ignored` concern the tests ignored whatever the machine has (benchmarks).
//! * libtest-mimic captures no output: `--nocapture` is accepted, and what a test prints
//!   always shows.
use std::process::{Command, ExitCode};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use libtest_mimic::{Arguments, Completion, Trial};
use tessera::Gpu;

/// What a test needs beyond the CPU.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Nothing,
    Gpu,
    DuckDb,
}

impl Need {
    /// What is needed, the variable that makes its absence a failure, and how many tests of
    /// this binary found it missing.
    fn what(self) -> (&'static str, &'static str, &'static AtomicUsize) {
        static GPU: AtomicUsize = AtomicUsize::new(0);
        static DUCKDB: AtomicUsize = AtomicUsize::new(0);
        static NOTHING: AtomicUsize = AtomicUsize::new(0);
        match self {
            Need::Gpu => ("GPU", "TESSERA_REQUIRE_GPU", &GPU),
            Need::DuckDb => ("DuckDB", "TESSERA_REQUIRE_DUCKDB", &DUCKDB),
            Need::Nothing => ("nothing", "", &NOTHING),
        }
    }

    /// `Err` with the reason where what this test needs is missing.
    fn probe(self) -> Result<(), &'static str> {
        match self {
            Need::Nothing => Ok(()),
            Need::Gpu => gpu_probe().as_ref().map(|_| ()).map_err(String::as_str),
            Need::DuckDb => duckdb_probe().as_ref().map(|_| ()).map_err(String::as_str),
        }
    }
}

enum Body {
    Cpu(fn()),
    Gpu(fn(&Gpu)),
}

/// One test of a harness file.
pub struct Test {
    name: &'static str,
    need: Need,
    body: Body,
    /// Ignored whatever the machine has (a benchmark run on request), with the reason.
    ignored: Option<&'static str>,
}

impl Test {
    /// A test that runs everywhere.
    pub fn cpu(name: &'static str, f: fn()) -> Test {
        Test::new(name, Need::Nothing, Body::Cpu(f))
    }

    /// A test that needs a GPU.
    pub fn gpu(name: &'static str, f: fn(&Gpu)) -> Test {
        Test::new(name, Need::Gpu, Body::Gpu(f))
    }

    /// A test that needs DuckDB's Python module.
    pub fn duckdb(name: &'static str, f: fn()) -> Test {
        Test::new(name, Need::DuckDb, Body::Cpu(f))
    }

    /// The same test, ignored unless asked for (`--ignored`), for `reason`.
    pub fn ignored(self, reason: &'static str) -> Test {
        self.ignored_if(true, reason)
    }

    /// The same test, ignored for `reason` when `cond` holds.
    pub fn ignored_if(self, cond: bool, reason: &'static str) -> Test {
        Test {
            ignored: cond.then_some(reason).or(self.ignored),
            ..self
        }
    }

    fn new(name: &'static str, need: Need, body: Body) -> Test {
        Test {
            name,
            need,
            body,
            ignored: None,
        }
    }

    /// The trial: it checks the test's need when it runs, and reports it ignored (or failed,
    /// under the need's `TESSERA_REQUIRE_*`) where the need is missing.
    fn trial(self) -> Trial {
        let (need, body) = (self.need, self.body);
        Trial::ignorable_test(self.name, move || {
            if let Err(why) = need.probe() {
                let (what, var, count) = need.what();
                count.fetch_add(1, Ordering::Relaxed);
                if required(var) {
                    return Err(format!("{var}=1 and no {what}: {why}").into());
                }
                let article = if need == Need::Gpu { "a " } else { "" };
                return Ok(Completion::ignored_with(format!("needs {article}{what}")));
            }
            match body {
                Body::Cpu(f) => f(),
                Body::Gpu(f) => f(gpu_probe().as_ref().expect("probed")),
            }
            Ok(Completion::Completed)
        })
        .with_ignored_flag(self.ignored.is_some())
    }
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// The binary's GPU, opened once: `Err` with the reason where there is none.
fn gpu_probe() -> &'static Result<Gpu, String> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new().map_err(|e| e.to_string()))
}

fn duckdb_probe() -> &'static Result<(), String> {
    static DUCKDB: OnceLock<Result<(), String>> = OnceLock::new();
    DUCKDB.get_or_init(|| {
        match Command::new("python3")
            .args(["-c", "import duckdb"])
            .output()
        {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "python3 has no duckdb module ({})",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
            Err(e) => Err(format!("python3 cannot run: {e}")),
        }
    })
}

/// Runs `tests` as libtest would, with the command line's filters and options, then prints to
/// stderr, after the summary, why tests were ignored (or failed for a missing GPU or DuckDB).
pub fn run(tests: Vec<Test>) -> ExitCode {
    let args = Arguments::from_args();
    let mut notes = Vec::new();
    let trials: Vec<Trial> = tests
        .into_iter()
        .map(|t| {
            let reason = t.ignored;
            let trial = t.trial();
            if let Some(reason) = reason
                && !args.is_filtered_out(&trial)
                && args.is_ignored(&trial)
            {
                notes.push(format!("note: {} ignored: {reason}", trial.name()));
            }
            trial
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    if !args.list {
        for need in [Need::Gpu, Need::DuckDb] {
            let (what, var, count) = need.what();
            let n = count.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            let why = need.probe().expect_err("counted where missing");
            let (tests, them) = if n == 1 {
                ("test", "it")
            } else {
                ("tests", "them")
            };
            notes.push(if required(var) {
                format!("note: {n} {what} {tests} FAILED under {var}=1: {why}")
            } else {
                format!(
                    "note: {n} {what} {tests} ignored: {why}; {var}=1 makes {them} fail instead"
                )
            });
        }
        notes.iter().for_each(|n| eprintln!("{n}"));
    }
    conclusion.exit_code()
}

/// `fn main` of a harness file: `harness! { gpu: [a, b], cpu: [c], duckdb: [d], extra: [e] }`,
/// any of the lists, in any order; `extra` takes [`Test`] values (an ignored benchmark).
#[macro_export]
macro_rules! harness {
    (@one gpu $f:expr) => { Test::gpu(stringify!($f), $f) };
    (@one cpu $f:expr) => { Test::cpu(stringify!($f), $f) };
    (@one duckdb $f:expr) => { Test::duckdb(stringify!($f), $f) };
    (@one extra $t:expr) => { $t };
    ($($kind:ident: [$($t:expr),* $(,)?]),* $(,)?) => {
        fn main() -> std::process::ExitCode {
            use common::harness::Test;
            common::harness::run(vec![$($(harness!(@one $kind $t),)*)*])
        }
    };
}
