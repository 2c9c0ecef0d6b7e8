//! The test harness of the test files that need a GPU or DuckDB (`harness = false` in
//! Cargo.toml): libtest's command line and output (`libtest-mimic`), with a test that cannot
//! run here reported as **ignored**, and the reason printed once before the run, instead of a
//! test that returns early and passes.
//!
//! * GPU tests take the binary's one [`Gpu`] (module load JIT-compiles every kernel once).
//!   Without a GPU they are ignored; under `TESSERA_REQUIRE_GPU=1` they run and fail.
//! * DuckDB tests need `python3 -c 'import duckdb'`; without it they are ignored, under
//!   `TESSERA_REQUIRE_DUCKDB=1` (set in CI) they run and fail.
//! * `--include-ignored` runs them anyway (and they fail where their need is missing).
use std::process::{Command, ExitCode};
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed, Trial};
use tessera::Gpu;

/// What a test needs beyond the CPU.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Nothing,
    Gpu,
    DuckDb,
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
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// The binary's GPU, opened once: `Err` with the reason where there is none.
fn gpu_probe() -> &'static Result<Gpu, String> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new().map_err(|e| e.to_string()))
}

/// The binary's GPU, for a test that needs one; a test failure naming the reason otherwise.
pub fn gpu() -> Result<&'static Gpu, Failed> {
    gpu_probe()
        .as_ref()
        .map_err(|e| format!("this test needs a GPU: {e}").into())
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

/// Why a test with `need` cannot run here (`None` when it can, or when its variable demands
/// that it run and fail).
fn missing(need: Need) -> Option<(String, &'static str)> {
    let (probe, var) = match need {
        Need::Nothing => return None,
        Need::Gpu => (gpu_probe().as_ref().err(), "TESSERA_REQUIRE_GPU"),
        Need::DuckDb => (duckdb_probe().as_ref().err(), "TESSERA_REQUIRE_DUCKDB"),
    };
    match probe {
        Some(why) if !required(var) => Some((why.clone(), var)),
        _ => None,
    }
}

/// Runs `tests` as libtest would, with the command line's filters and options. Prints, before
/// the run and outside any capture, how many tests are ignored and why.
pub fn run(tests: Vec<Test>) -> ExitCode {
    let args = Arguments::from_args();
    let mut notes: Vec<(Need, usize, String, &'static str)> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    let trials = tests
        .into_iter()
        .map(|t| {
            let skip = t.ignored.is_some() || missing(t.need).is_some();
            if let Some(reason) = t.ignored {
                reasons.push(format!("note: {} ignored: {reason}", t.name));
            }
            if t.ignored.is_none()
                && let Some((why, var)) = missing(t.need)
            {
                match notes.iter_mut().find(|n| n.0 == t.need) {
                    Some(n) => n.1 += 1,
                    None => notes.push((t.need, 1, why, var)),
                }
            }
            let body = t.body;
            Trial::test(t.name, move || match body {
                Body::Cpu(f) => {
                    f();
                    Ok(())
                }
                Body::Gpu(f) => {
                    f(gpu()?);
                    Ok(())
                }
            })
            .with_ignored_flag(skip)
        })
        .collect();
    if !args.list {
        reasons.iter().for_each(|r| println!("{r}"));
        for (need, n, why, var) in &notes {
            let what = if *need == Need::Gpu { "GPU" } else { "DuckDB" };
            println!("note: {n} {what} test(s) ignored: {why}; {var}=1 makes them fail instead");
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
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
