//! The `tessera` binary as a user runs it: every subcommand's happy path at a tiny size, and
//! every refusal of bad input with its exit code and a message naming the value and the fix.
//! CPU only: where a GPU is present, the GPU paths run instead and the no-GPU assertions are
//! left out.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test: cargo's build of it, or, where the test executable was copied to
/// another machine (`gpu-bundle` puts binaries in `../bins/` beside `tests/`), that copy;
/// `TESSERA_BIN` overrides both.
fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("TESSERA_BIN") {
        return bin.into();
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    if built.exists() {
        return built;
    }
    let exe = std::env::current_exe().unwrap();
    let bundled = exe.parent().unwrap().join("../bins/tessera");
    assert!(
        bundled.exists(),
        "no tessera binary at {} or {}: set TESSERA_BIN",
        built.display(),
        bundled.display()
    );
    bundled
}

/// Runs the binary with the whitespace-separated arguments of `line` (and `env`) in the
/// repository root.
fn tessera_env(line: &str, env: &[(&str, &str)]) -> Output {
    Command::new(binary())
        .args(line.split_whitespace())
        .envs(env.iter().copied())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the tessera binary runs")
}

fn tessera(line: &str) -> Output {
    tessera_env(line, &[])
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts success and returns stdout and stderr.
fn ok(o: Output) -> String {
    let t = text(&o);
    assert!(
        o.status.success(),
        "expected success, got {:?}:\n{t}",
        o.status
    );
    t
}

/// Asserts exit code `code` and that the message holds every one of `needles`.
fn fails(o: Output, code: i32, needles: &[&str]) -> String {
    let t = text(&o);
    assert_eq!(o.status.code(), Some(code), "exit code; output:\n{t}");
    for n in needles {
        assert!(t.contains(n), "message lacks {n:?}:\n{t}");
    }
    t
}

/// A fresh directory under the target directory, removed first if a previous run left it.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    assert!(
        !dir.to_string_lossy().contains(char::is_whitespace),
        "command lines are split at whitespace: {}",
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn has_gpu() -> bool {
    !ok(tessera("info")).contains("GPU: none")
}

#[test]
fn help_and_info() {
    let help = ok(tessera("--help"));
    for sub in ["info", "bench", "ssb"] {
        assert!(help.contains(sub), "{help}");
    }
    let info = ok(tessera("info"));
    assert!(info.contains("GPU: ") && info.contains("CPU: "), "{info}");
    ok(tessera("ssb run --help"));
}

#[test]
fn ssb_gen_run_and_json() {
    let dir = scratch("gen-run");
    let data = dir.join("sf").display().to_string();
    ok(tessera(&format!("ssb gen --sf 0.01 --out {data} --quiet")));
    let json = dir.join("records.json");
    let results = dir.join("results.txt");
    let out = ok(tessera(&format!(
        "ssb run --data {data} --device cpu --repeat 1 --quiet --json {} --results {}",
        json.display(),
        results.display()
    )));
    assert!(
        out.contains("q4.3") && out.contains("geometric mean"),
        "{out}"
    );
    let records: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(records.as_array().map(Vec::len), Some(13), "{records}");
    let results = std::fs::read_to_string(&results).unwrap();
    let headers: Vec<&str> = results.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(headers.len(), 13, "{results}");
    assert_eq!(headers[0], "== q1.1");
    let q11 = results.lines().nth(1);
    assert!(q11.is_some_and(|l| l.parse::<i64>().is_ok()), "{results}");
    // The same results as JSON (names, types, typed values) and one query's as CSV.
    let pipe_rows = |q: &str| -> Vec<String> {
        let header = format!("== {q}");
        results
            .lines()
            .skip_while(|l| *l != header)
            .skip(1)
            .take_while(|l| !l.starts_with("== "))
            .map(str::to_string)
            .collect()
    };
    let as_json = dir.join("results.json");
    ok(tessera(&format!(
        "ssb run --data {data} --device cpu --repeat 1 --quiet --no-results --results {} \
         --results-format json",
        as_json.display()
    )));
    let all: serde_json::Value = serde_json::from_slice(&std::fs::read(&as_json).unwrap()).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 13);
    for q in all {
        let name = q["query"].as_str().unwrap();
        let rows: Vec<String> = q["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let cells = r.as_array().unwrap().iter();
                let cells = cells.map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
                cells.collect::<Vec<_>>().join("|")
            })
            .collect();
        assert_eq!(rows, pipe_rows(name), "{name}");
    }
    assert_eq!(
        all[3]["columns"],
        serde_json::json!([
            {"name": "d_year", "type": "int32"},
            {"name": "p_brand1", "type": "utf8"},
            {"name": "revenue", "type": "int64"},
        ]),
        "q2.1's columns"
    );
    let as_csv = dir.join("q2.1.csv");
    ok(tessera(&format!(
        "ssb run --data {data} --device cpu --repeat 1 --quiet --query q2.1 --results {} \
         --results-format csv",
        as_csv.display()
    )));
    let csv = std::fs::read_to_string(&as_csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("d_year,p_brand1,revenue"));
    let want: Vec<String> = pipe_rows("q2.1")
        .iter()
        .map(|l| l.replace('|', ","))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(lines.map(str::to_string).collect::<Vec<_>>(), want);
    // The same forms on the standard output, which then holds the results alone: the report
    // (timings, notices) goes to the standard error.
    let stdout = |form: &str, query: &str| {
        let o = tessera(&format!(
            "ssb run --data {data} --device cpu --repeat 1 --quiet --query {query} --output {form}"
        ));
        assert!(o.status.success(), "--output {form}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(err.contains("geometric mean"), "--output {form}: {err}");
        o.stdout
    };
    assert_eq!(stdout("csv", "q2.1"), csv.as_bytes());
    assert_eq!(stdout("json", "all"), std::fs::read(&as_json).unwrap());
    assert_eq!(stdout("pipe", "all"), results.as_bytes());
    // The default stays the tables, with the report, on the standard output.
    let o = ok(tessera(&format!(
        "ssb run --data {data} --device cpu --repeat 1 --quiet --query q2.1"
    )));
    assert!(
        o.contains("== q2.1 (cpu) ==") && o.contains("geometric mean"),
        "{o}"
    );
    // The default device runs the GPU where there is one and says when it falls back.
    let out = ok(tessera(&format!(
        "ssb run --data {data} --query q1.1 --repeat 1 --quiet"
    )));
    assert!(has_gpu() || out.contains("notice: no GPU"), "{out}");
    // The storage table: every lineorder column, the totals, a fraction below 1, the JSON.
    let json = dir.join("storage.json");
    let out = ok(tessera(&format!(
        "ssb storage --data {data} --json {}",
        json.display()
    )));
    assert!(
        out.contains("lo_revenue") && out.contains("GPU-DFOR MB") && out.contains("total"),
        "{out}"
    );
    let fraction: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("chosen / uncompressed: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|f| f.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(fraction > 0.0 && fraction < 1.0, "{out}");
    let table: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        table["schemes"].as_array().map(Vec::len),
        Some(4),
        "{table}"
    );
    fails(
        tessera(&format!(
            "ssb storage --data {} ",
            dir.join("missing").display()
        )),
        1,
        &["missing"],
    );
    // --compressed: the query columns written beside the data set, one file each; the CPU
    // engine refuses the flag before any work.
    let packed = dir.join("packed").display().to_string();
    let out = ok(tessera(&format!(
        "ssb gen --sf 0.01 --out {packed} --compressed --quiet"
    )));
    assert!(out.contains("compressed query columns"), "{out}");
    let files = std::fs::read_dir(dir.join("packed/compressed/lineorder"))
        .unwrap()
        .count();
    assert_eq!(files, 9);
    fails(
        tessera(&format!(
            "ssb run --data {packed} --device cpu --compressed --repeat 1"
        )),
        1,
        &["--compressed", "--device cpu"],
    );
    // --schemes narrows the compressed columns' schemes: only with --compressed, and only
    // the schemes the probes read.
    fails(
        tessera(&format!(
            "ssb run --data {packed} --device cpu --schemes none --repeat 1"
        )),
        2,
        &["--compressed"],
    );
    fails(
        tessera(&format!(
            "ssb run --data {packed} --device gpu --compressed --schemes gpu-dfor --repeat 1"
        )),
        2,
        &["gpu-dfor", "none, nsf, gpu-for"],
    );
}

#[test]
fn ssb_run_refuses_bad_counts_and_outputs_before_work() {
    let dir = scratch("run-refusals");
    let data = dir.join("never-generated");
    let run = |extra: &str| {
        tessera(&format!(
            "ssb run --gen-if-missing --sf 0.01 --quiet --data {} --device cpu {extra}",
            data.display()
        ))
    };
    fails(
        run("--repeat 0"),
        2,
        &["--repeat", "0 is not in 1..=100000"],
    );
    fails(
        run("--repeat 100000000000"),
        2,
        &["--repeat", "100000000000"],
    );
    let missing = dir.join("no/such/dir/r.json").display().to_string();
    fails(
        run(&format!("--json {missing}")),
        1,
        &[&missing, "does not exist", "mkdir -p"],
    );
    fails(
        run(&format!("--results {}", dir.display())),
        1,
        &["--results", "is a directory"],
    );
    fails(run("--query q5.1"), 1, &["unknown query 'q5.1'"]);
    let csv = dir.join("all.csv").display().to_string();
    fails(
        run(&format!("--results {csv} --results-format csv")),
        1,
        &["--output csv holds one query's result", "13 queries"],
    );
    fails(
        run("--output csv"),
        1,
        &["--output csv holds one query's result", "--query"],
    );
    fails(run("--coprocessor"), 1, &["--coprocessor runs on the GPU"]);
    assert!(!data.exists(), "a refused run must not generate data");
}

#[test]
fn ssb_run_without_a_gpu_says_so_at_once() {
    if has_gpu() {
        eprintln!("a GPU is present: the no-GPU refusal cannot be shown here");
        return;
    }
    let dir = scratch("no-gpu");
    let data = dir.join("sf");
    let o = tessera(&format!(
        "ssb run --gen-if-missing --sf 0.01 --data {} --device gpu",
        data.display()
    ));
    fails(o, 1, &["--device gpu", "--device cpu"]);
    assert!(
        !data.exists(),
        "the refusal must come before data generation"
    );
}

#[test]
fn ssb_gen_refuses_what_cannot_fit() {
    let dir = scratch("gen-refusals");
    let out = dir.join("sf");
    let gen_sf = |sf: &str| format!("ssb gen --sf {sf} --out {}", out.display());
    fails(
        tessera(&gen_sf("5000")),
        1,
        &["scale factor 5000", "(0, 300]"],
    );
    // 1 GiB of memory cannot hold SF 50.
    let o = tessera_env(&gen_sf("50"), &[("TESSERA_MEMORY_BYTES", "1073741824")]);
    fails(
        o,
        1,
        &["SF 50 needs about", "1.0 GiB available", "smaller --sf"],
    );
    assert!(!out.exists(), "nothing may be written");
}

#[test]
fn bench_suites_check_ranges_and_outputs() {
    fails(
        tessera("bench join --cpu-log2-probe 40"),
        2,
        &["--cpu-log2-probe", "40 is not in 10..=31"],
    );
    fails(tessera("bench ops --reps 0"), 2, &["--reps"]);
    fails(tessera("bench sort --log2n 64"), 2, &["--log2n"]);
    fails(tessera("bench tweets --rows 0"), 2, &["--rows"]);
    fails(
        tessera("bench ops --log2n 12 --json /dev/null/x.json"),
        1,
        &["/dev/null"],
    );
    let o = tessera_env(
        "bench sort --log2n 31 --torch none",
        &[("TESSERA_MEMORY_BYTES", "1073741824")],
    );
    fails(o, 1, &["--log2n 31", "needs about", "smaller --log2n"]);
}

#[test]
fn bench_suites_run_at_a_tiny_size() {
    let dir = scratch("bench");
    for (suite, extra) in [
        ("ops", "--log2n 12 --quick --torch none"),
        ("sort", "--log2n 12 --quick --torch none"),
        ("tweets", "--rows 5000 --quick"),
        (
            "join",
            "--log2-probe 12 --cpu-log2-probe 12 --max-table-mb 1 --no-pk",
        ),
    ] {
        let json = dir.join(format!("{suite}.json"));
        let out = ok(tessera(&format!(
            "bench {suite} --reps 1 --json {} {extra}",
            json.display()
        )));
        assert!(out.contains("JSON:"), "{suite}: {out}");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(
            v["records"].as_array().is_some_and(|r| !r.is_empty()),
            "{suite}: {v}"
        );
    }
}

/// `bench <suite> --plot DIR` draws the run's own report; a directory that cannot be one is
/// refused before the suite runs.
#[cfg(feature = "plot")]
#[test]
fn bench_plot_flag_draws_the_run() {
    let dir = scratch("bench-plot");
    let (json, plots) = (dir.join("ops.json"), dir.join("plots"));
    let line = |plots: &std::path::Path| {
        format!(
            "bench ops --log2n 12 --quick --torch none --reps 1 --json {} --plot {}",
            json.display(),
            plots.display()
        )
    };
    let out = ok(tessera(&line(&plots)));
    let index = std::fs::read_to_string(plots.join("index.md")).unwrap();
    assert!(index.contains("(ops-project.svg)"), "{out}\n{index}");
    assert!(plots.join("ops-project.svg").is_file());
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    std::fs::remove_file(&json).unwrap();
    let out = fails(
        tessera(&line(&file)),
        1,
        &["--plot", "is a file", "a directory"],
    );
    assert!(!json.exists(), "the suite ran before the refusal: {out}");
    fails(
        tessera(&format!(
            "bench plot {} --plot {}",
            json.display(),
            plots.display()
        )),
        1,
        &["--plot draws a suite's report", "--out"],
    );
}

/// `bench <suite> --plot DIR` draws nothing when the suite wrote no report in this run (one that
/// measures GPU kernels only, without a GPU), even with an older report at its `--json` path.
#[cfg(feature = "plot")]
#[test]
fn bench_plot_flag_draws_nothing_when_the_suite_skips() {
    if has_gpu() {
        eprintln!("a GPU is present: a suite that skips for want of one cannot be shown here");
        return;
    }
    let dir = scratch("bench-plot-skip");
    let (json, plots) = (dir.join("compress.json"), dir.join("plots"));
    let older = r#"{"suite": "compress", "records": []}"#;
    std::fs::write(&json, older).unwrap();
    let out = ok(tessera(&format!(
        "bench compress --quick --json {} --plot {}",
        json.display(),
        plots.display()
    )));
    assert!(
        out.contains("wrote no report in this run; nothing drawn"),
        "{out}"
    );
    assert!(!plots.join("index.md").exists(), "{out}");
    assert_eq!(std::fs::read_to_string(&json).unwrap(), older, "{out}");
}

/// `bench plot` draws a report (here a synthetic group-by sweep, no GPU needed) as one SVG per
/// experiment and an index, and names a missing report with the fix.
#[cfg(feature = "plot")]
#[test]
fn bench_plot_draws_a_report_into_svg_and_an_index() {
    let dir = scratch("plot");
    let records: Vec<serde_json::Value> = [2u64, 100, 10_000, 1_000_000]
        .iter()
        .flat_map(|&g| {
            let param = format!("G={g} ({g} present)");
            [
                serde_json::json!({"experiment": "groupby_count_sum",
                    "implementation": "tessera group_by (hash)", "param": param, "n": 4096,
                    "median_ms": 1.0 + g as f64 / 1e5, "model_ms": 0.8, "ratio": 1.25}),
                serde_json::json!({"experiment": "groupby_count_sum",
                    "implementation": "pytorch index_add_", "param": param, "n": 4096,
                    "median_ms": 3.0, "model_ms": null, "ratio": null}),
            ]
        })
        .collect();
    let report = serde_json::json!({"device": "cpu", "n": 4096, "bandwidth": null,
        "records": records});
    let json = dir.join("groupby.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    let out = dir.join("plots");
    let printed = ok(tessera(&format!(
        "bench plot {} --out {}",
        json.display(),
        out.display()
    )));
    let svg = out.join("groupby-groupby_count_sum.svg");
    assert!(printed.contains(&svg.display().to_string()), "{printed}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    for text in [
        "tessera group_by (hash)",
        "pytorch index_add_",
        "\nmodel\n",
        "\nG\n",
    ] {
        assert!(svg.contains(text), "the SVG lacks {text:?}");
    }
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(index.contains("(groupby-groupby_count_sum.svg)"), "{index}");
    let missing = dir.join("none.json").display().to_string();
    fails(
        tessera(&format!("bench plot {missing} --out {}", out.display())),
        1,
        &[&missing, "tessera bench <suite> --json"],
    );
}

#[test]
fn writers_refuse_an_existing_data_set_without_force() {
    let dir = scratch("force");
    let data = dir.join("sf").display().to_string();
    ok(tessera(&format!(
        "ssb gen --sf 0.01 --out {data} --tbl --quiet"
    )));
    let meta = std::fs::read(dir.join("sf/meta.json")).unwrap();
    fails(
        tessera(&format!("ssb gen --sf 0.02 --out {data} --quiet")),
        1,
        &["already holds a data set", "--force"],
    );
    assert_eq!(std::fs::read(dir.join("sf/meta.json")).unwrap(), meta);
    // The .tbl files load into a new directory, then only with --force over it.
    let tbl = dir.join("sf/tbl").display().to_string();
    let loaded = dir.join("loaded").display().to_string();
    let out = ok(tessera(&format!(
        "ssb load-tbl {tbl} --out {loaded} --quiet"
    )));
    assert!(out.contains("loaded"), "{out}");
    fails(
        tessera(&format!("ssb load-tbl {tbl} --out {loaded} --quiet")),
        1,
        &["already holds a data set", "--force"],
    );
    ok(tessera(&format!(
        "ssb load-tbl {tbl} --out {loaded} --quiet --force"
    )));
    ok(tessera(&format!(
        "ssb gen --sf 0.02 --out {data} --quiet --force"
    )));
    assert_ne!(std::fs::read(dir.join("sf/meta.json")).unwrap(), meta);
}

/// A data set exported as Parquet loads back with the same answers; the export and the load
/// refuse to overwrite without `--force`.
#[test]
fn parquet_export_and_load_round_trip() {
    let dir = scratch("parquet");
    let data = dir.join("sf").display().to_string();
    let pq = dir.join("pq").display().to_string();
    let back = dir.join("back").display().to_string();
    ok(tessera(&format!("ssb gen --sf 0.01 --out {data} --quiet")));
    let out = ok(tessera(&format!(
        "ssb export --data {data} --out {pq} --format parquet --quiet"
    )));
    assert!(out.contains("parquet files"), "{out}");
    fails(
        tessera(&format!(
            "ssb export --data {data} --out {pq} --format parquet --quiet"
        )),
        1,
        &["lineorder.parquet already exists", "--force"],
    );
    ok(tessera(&format!(
        "ssb load-parquet {pq} --out {back} --quiet"
    )));
    fails(
        tessera(&format!("ssb load-parquet {pq} --out {back} --quiet")),
        1,
        &["already holds a data set", "--force"],
    );
    let results = |d: &str, f: &str| {
        let path = dir.join(f);
        ok(tessera(&format!(
            "ssb run --data {d} --query all --device cpu --results {} --quiet",
            path.display()
        )));
        std::fs::read_to_string(path).unwrap()
    };
    assert_eq!(results(&data, "a.txt"), results(&back, "b.txt"));
    // A query's result as Parquet: one query at a time.
    let file = dir.join("q21.parquet").display().to_string();
    fails(
        tessera(&format!(
            "ssb run --data {data} --device cpu --results {file} --output parquet"
        )),
        1,
        &["--output parquet holds one query's result", "13 queries"],
    );
    ok(tessera(&format!(
        "ssb run --data {data} --query q2.1 --device cpu --results {file} --results-format parquet"
    )));
    let written = std::fs::read(&file).unwrap();
    assert!(written.starts_with(b"PAR1"), "not a Parquet file");
    // The same file on the standard output (not a terminal here), the report on stderr.
    let o = tessera(&format!(
        "ssb run --data {data} --query q2.1 --device cpu --quiet --output parquet"
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(o.stdout, written);
    assert!(String::from_utf8_lossy(&o.stderr).contains("geometric mean"));
}

#[test]
fn inconsistent_data_is_refused_before_queries() {
    let dir = scratch("inconsistent");
    let data = dir.join("sf");
    ok(tessera(&format!(
        "ssb gen --sf 0.01 --out {} --quiet --tbl",
        data.display()
    )));
    // Two column files swapped by hand: the first of them in column order is named.
    let (a, b) = (
        data.join("lineorder/lo_revenue.col"),
        data.join("lineorder/lo_discount.col"),
    );
    let tmp = data.join("lineorder/swap");
    std::fs::rename(&a, &tmp).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(&tmp, &b).unwrap();
    fails(
        tessera(&format!("ssb run --data {} --device cpu", data.display())),
        1,
        &["lo_discount.col: holds column lineorder.lo_revenue"],
    );
    // An empty dimension table in the .tbl files.
    let tbl = data.join("tbl");
    std::fs::write(tbl.join("customer.tbl"), "").unwrap();
    fails(
        tessera(&format!(
            "ssb load-tbl {} --out {} --quiet",
            tbl.display(),
            dir.join("loaded").display()
        )),
        1,
        &["customer"],
    );
    assert!(!dir.join("loaded").exists(), "nothing half-written");
}

/// A copy of the committed dbgen fixture in a scratch directory.
fn dbgen_fixture(name: &str) -> PathBuf {
    let dir = scratch(name).join("tbl");
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dbgen");
    for table in ["lineorder", "part", "supplier", "customer", "date"] {
        let file = format!("{table}.tbl");
        std::fs::copy(fixture.join(&file), dir.join(&file)).unwrap();
    }
    dir
}

fn append(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(line.as_bytes()).unwrap();
}

#[test]
fn load_tbl_reads_dbgen_and_says_what_differs() {
    let tbl = dbgen_fixture("load-dbgen");
    let out = tbl.with_file_name("data");
    let text = ok(tessera(&format!(
        "ssb load-tbl {} --out {} --quiet",
        tbl.display(),
        out.display()
    )));
    assert!(
        text.contains("departures from the SSB specification"),
        "{text}"
    );
    assert!(
        text.contains("'Augest' read as the specification's 'August'"),
        "{text}"
    );
    assert!(text.contains("'4-NOT SPECI'"), "{text}");
    let q = ok(tessera(&format!(
        "ssb run --data {} --device cpu --repeat 1 --query q1.1",
        out.display()
    )));
    assert!(q.contains("q1.1"), "{q}");
}

#[test]
fn load_tbl_refuses_duplicates_dangling_keys_and_invisible_bytes() {
    let load = |tbl: &Path| {
        tessera(&format!(
            "ssb load-tbl {} --out {} --quiet",
            tbl.display(),
            tbl.with_file_name("data").display()
        ))
    };
    // A second supplier 1: DuckDB would count its rows twice, tessera kept the last.
    let tbl = dbgen_fixture("dup-key");
    append(
        &tbl.join("supplier.tbl"),
        "1|Supplier#000000001|x|PERU     2|PERU|AMERICA|27-989-741-2988|\n",
    );
    fails(load(&tbl), 1, &["s_suppkey", "1"]);
    assert!(!tbl.with_file_name("data").exists());
    // A lineorder row whose supplier does not exist.
    let tbl = dbgen_fixture("dangling");
    let lines = std::fs::read_to_string(tbl.join("lineorder.tbl")).unwrap();
    let mut fields: Vec<&str> = lines.lines().next().unwrap().split('|').collect();
    fields[4] = "99";
    append(&tbl.join("lineorder.tbl"), &(fields.join("|") + "\n"));
    fails(load(&tbl), 1, &["lo_suppkey", "99"]);
    // A byte-order mark inside a value is shown, escaped.
    let tbl = dbgen_fixture("bom");
    let text = std::fs::read_to_string(tbl.join("supplier.tbl")).unwrap();
    std::fs::write(
        tbl.join("supplier.tbl"),
        text.replace("|AMERICA|", "|\u{feff}AMERICA|"),
    )
    .unwrap();
    fails(load(&tbl), 1, &["supplier.tbl:1", "'\\u{feff}AMERICA'"]);
    // Endless bytes: refused before any parsing.
    let tbl = dbgen_fixture("endless");
    std::fs::remove_file(tbl.join("customer.tbl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", tbl.join("customer.tbl")).unwrap();
    fails(load(&tbl), 1, &["customer.tbl"]);
}
