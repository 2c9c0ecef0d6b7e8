//! `tessera bench tweets`: the thesis' four top-k queries on the tweets table (§4.5.8), each
//! fused (one read of the columns it needs, `ops::top_k_query`) against the pipeline a user of
//! the other operators would write, on the synthetic table of [`super::tweets`]:
//!
//! * Q1 `WHERE tweet_time < X ORDER BY retweets DESC LIMIT 50`, selectivity 0.1 to 1.0 (the
//!   time column is in row order, so `X` keeps a prefix); pipeline: two ordered selections
//!   (`ops::Selection::launch2`: the keys and a row-id column where `time < X`), then `top_k`.
//! * Q2 `ORDER BY retweets + 0.5 * likes DESC LIMIT k`; pipeline: `project_linear` into an
//!   `f32` column, then `top_k` (the `u32` to `f32` casts are made at load, untimed, which
//!   favours the pipeline).
//! * Q3 `WHERE lang IN ('en', 'es') ORDER BY retweets DESC LIMIT k`; the selections have no
//!   `IN`, so the pipeline selects each language (keys and row ids), takes the top-k of each
//!   and merges the two on the host.
//! * Q4 `GROUP BY user ORDER BY COUNT(*) DESC LIMIT 50`: radix sort of the user ids,
//!   `count_runs`, `top_k` of the counts, each step timed.
//!
//! The selections take `i32` columns: the same values (all below 2^31), uploaded as `i32`.
//! Every row is a median of CUDA-event timings against the bytes the query must read once at
//! the read bandwidth measured in the same run; fused rows also give their speedup over the
//! pipeline. Every GPU answer is checked against the CPU twin on the full table, and the
//! CPU twins' own times close the table (alone where there is no GPU).
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::tweets::{FULL_ROWS, Tweets};
use super::{Bandwidth, Record, WARMUP, measure_bandwidth};
use tessera_host::cpu;
use tessera_host::ops::{
    self, Keep, Order, Predicate, RadixSort, RowFilter, SelectTopK, Selection, SortTopK,
    TopKAlgorithm, TopKOrder, TopKQuery, TopKRows, TopKey, choose, count_runs,
};
use tessera_host::runtime::{DeviceColumn, Gpu};
use tessera_host::{Error, Result, gpu_or_skip};

/// Options of `tessera bench tweets`.
#[derive(Clone, Debug, clap::Args)]
pub struct TweetsArgs {
    /// Tweets in the table (the thesis' 250 million by default).
    #[arg(long, default_value_t = FULL_ROWS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000_000))]
    pub rows: usize,
    /// Timed repetitions per point (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = super::reps_parser())]
    pub reps: usize,
    /// At most 2^24 rows and fewer points (selectivities 0.1, 0.5, 1; k = 32).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/bench/tweets.json")]
    pub json: PathBuf,
}

/// Fused against its pipeline at one point.
#[derive(Clone, Debug, Serialize)]
pub struct Speedup {
    /// Experiment (`q1`, `q2`, `q3`).
    pub experiment: String,
    /// The point (`s=0.5`, `k=32`).
    pub param: String,
    /// Fused median, ms.
    pub fused_ms: f64,
    /// Pipeline median, ms.
    pub pipeline_ms: f64,
    /// `pipeline_ms / fused_ms`.
    pub speedup: f64,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct TweetsReport {
    /// Device name, or "cpu".
    pub device: String,
    /// Tweets.
    pub rows: u64,
    /// Bandwidth measured in this run (GPU runs only).
    pub bandwidth: Option<Bandwidth>,
    /// All figures; `model_ms` is the bytes the query must read once at this run's read
    /// bandwidth.
    pub records: Vec<Record>,
    /// Fused against pipeline.
    pub speedups: Vec<Speedup>,
    /// How the answers were checked.
    pub checked: String,
}

/// The k of Q2 and Q3.
const KS: [usize; 3] = [32, 256, 1024];
/// The LIMIT of Q1 and Q4.
const LIMIT: usize = 50;
/// Rows at most under `--quick`.
const QUICK_ROWS: usize = 1 << 24;

/// The table on the device: the columns as the fused queries read them (`u32`), as the
/// selections read them (`i32`) and as the projection reads them (`f32`).
struct Table {
    time: DeviceColumn<u32>,
    retweets: DeviceColumn<u32>,
    likes: DeviceColumn<u32>,
    lang: DeviceColumn<u32>,
    user: DeviceColumn<u32>,
    time_i: DeviceColumn<i32>,
    retweets_i: DeviceColumn<i32>,
    lang_i: DeviceColumn<i32>,
    rows_i: DeviceColumn<i32>,
    retweets_f: DeviceColumn<f32>,
    likes_f: DeviceColumn<f32>,
}

impl Table {
    fn upload(gpu: &Gpu, t: &Tweets) -> Result<Table> {
        let as_i32 = |v: &[u32]| gpu.upload(bytemuck::cast_slice::<u32, i32>(v));
        let as_f32 = |v: &[u32]| gpu.upload(&v.iter().map(|&x| x as f32).collect::<Vec<_>>());
        let rows: Vec<i32> = (0..t.len() as i32).collect();
        Ok(Table {
            time: gpu.upload(&t.time)?,
            retweets: gpu.upload(&t.retweets)?,
            likes: gpu.upload(&t.likes)?,
            lang: gpu.upload(&t.lang)?,
            user: gpu.upload(&t.user)?,
            time_i: as_i32(&t.time)?,
            retweets_i: as_i32(&t.retweets)?,
            lang_i: as_i32(&t.lang)?,
            rows_i: gpu.upload(&rows)?,
            retweets_f: as_f32(&t.retweets)?,
            likes_f: as_f32(&t.likes)?,
        })
    }
}

/// The suite's state: the device, its bandwidth, the reusable operators and the figures.
struct Bench<'a> {
    gpu: &'a Gpu,
    bw: Bandwidth,
    reps: usize,
    n: usize,
    fused: SelectTopK,
    sel: SelectTopK,
    keys: Selection<i32>,
    rows: Selection<i32>,
    records: Vec<Record>,
    speedups: Vec<Speedup>,
    mismatches: Vec<String>,
}

impl Bench<'_> {
    /// Records `ms` against `bytes` read once.
    fn record(&mut self, experiment: &str, name: &str, param: &str, ms: f64, bytes: f64) {
        let model = self.bw.model_ms(bytes, 0.0);
        let n = self.n as u64;
        self.records
            .push(Record::new(experiment, name, param, n, ms, model));
    }

    /// Records a fused time and its pipeline's, and the speedup.
    fn record_pair(
        &mut self,
        experiment: &str,
        param: &str,
        fused: f64,
        pipeline: f64,
        bytes: f64,
    ) {
        self.record(experiment, "fused top_k_query", param, fused, bytes);
        self.record(experiment, "pipeline", param, pipeline, bytes);
        self.speedups.push(Speedup {
            experiment: experiment.into(),
            param: param.into(),
            fused_ms: fused,
            pipeline_ms: pipeline,
            speedup: pipeline / fused,
        });
    }

    /// The fused query's median time for the `k` largest, and its answer.
    fn fused<K: TopKey>(&mut self, q: &TopKQuery<'_, K>, k: usize) -> Result<(f64, TopKRows<K>)> {
        let (gpu, reps, f) = (self.gpu, self.reps, &mut self.fused);
        let ms = b_time(gpu, reps, || {
            f.run_query(gpu, q, k, TopKOrder::Largest).map(drop)
        })?;
        Ok((ms, f.run_query(gpu, q, k, TopKOrder::Largest)?))
    }

    /// Notes a GPU answer that differs from the CPU twin's.
    fn check<K: PartialEq>(&mut self, what: &str, got: &TopKRows<K>, want: &TopKRows<K>) {
        if got.rows != want.rows || got.keys != want.keys {
            self.mismatches.push(what.to_string());
        }
    }

    /// `WHERE p(x)`: the selected retweets and their row ids, in table order; returns how
    /// many.
    fn select(&mut self, t: &Table, x: &DeviceColumn<i32>, p: Predicate<i32>) -> Result<usize> {
        let all = Predicate::between(i32::MIN, i32::MAX);
        self.keys.launch2(self.gpu, x, p, &t.retweets_i, all)?;
        self.rows.launch2(self.gpu, x, p, &t.rows_i, all)?;
        self.keys.finish(self.gpu)?;
        self.rows.finish(self.gpu)
    }

    /// Filter then top-k: the selection, then the top `k` of its keys (row ids are the
    /// selection's rows; [`Bench::table_rows`] maps them).
    fn filter_then_top_k(
        &mut self,
        t: &Table,
        x: &DeviceColumn<i32>,
        p: Predicate<i32>,
        k: usize,
    ) -> Result<TopKRows<i32>> {
        let m = self.select(t, x, p)?;
        if m == 0 {
            return Ok(TopKRows {
                keys: Vec::new(),
                rows: Vec::new(),
            });
        }
        top_k_reusing(self.gpu, &mut self.sel, self.keys.output(), k.min(m))
    }

    /// The table's rows of a top-k over the last selection (a download of the row ids, for
    /// the check only).
    fn table_rows(&self, r: TopKRows<i32>) -> Result<TopKRows<u32>> {
        let ids = self.rows.output().to_vec(self.gpu)?;
        Ok(TopKRows {
            keys: r.keys.iter().map(|&x| x as u32).collect(),
            rows: r.rows.iter().map(|&i| ids[i as usize] as u32).collect(),
        })
    }
}

/// `top_k` of `keys` by its own choice of algorithm, with `sel`'s buffers.
fn top_k_reusing<K: TopKey>(
    gpu: &Gpu,
    sel: &mut SelectTopK,
    keys: &DeviceColumn<K>,
    k: usize,
) -> Result<TopKRows<K>> {
    match choose::<K>(keys.len(), k) {
        TopKAlgorithm::Sort => SortTopK::new().run(gpu, keys, k, TopKOrder::Largest),
        a => sel.run(gpu, keys, k, TopKOrder::Largest, a),
    }
}

/// Bytes of `column` (4-byte items) in the 32-byte sectors that hold a row `keep` keeps: what
/// a filtered read of it must fetch.
fn sectors_read(keep: impl Fn(usize) -> bool + Sync, n: usize) -> f64 {
    use rayon::prelude::*;
    let sectors = (0..n.div_ceil(8))
        .into_par_iter()
        .filter(|&s| (8 * s..n.min(8 * s + 8)).any(&keep))
        .count();
    32.0 * sectors as f64
}

/// Q1 at each selectivity.
fn q1(b: &mut Bench<'_>, t: &Tweets, d: &Table, quick: bool) -> Result<()> {
    let n = t.len();
    let tenths: Vec<u32> = if quick {
        vec![1, 5, 10]
    } else {
        (1..=10).collect()
    };
    for s in tenths {
        let at = n * s as usize / 10;
        let x = t.time.get(at).copied().unwrap_or(u32::MAX);
        let param = format!("s={:.1}", s as f64 / 10.0);
        let q = TopKQuery::column(&d.retweets).filter(RowFilter::lt(&d.time, x));
        let (fused, got) = b.fused(&q, LIMIT)?;
        // The selections compare as i32; every time is below 2^31, and u32::MAX (keep all)
        // becomes i32::MAX, above every time.
        let p = Predicate::lt(x.min(i32::MAX as u32) as i32);
        let pipeline =
            b.time_pipeline(|b| b.filter_then_top_k(d, &d.time_i, p, LIMIT).map(drop))?;
        let live = t.time.partition_point(|&v| v < x);
        let bytes = 4.0 * n as f64 + sectors_read(|i| i < live, n);
        b.record_pair(
            "q1 where time < X, top 50 retweets",
            &param,
            fused,
            pipeline,
            bytes,
        );
        let want = cpu::top_k_where(
            &t.retweets,
            &t.time,
            &Keep::lt(x),
            LIMIT,
            TopKOrder::Largest,
        )?;
        b.check(&format!("q1 {param} fused"), &got, &want);
        let piped = b.filter_then_top_k(d, &d.time_i, p, LIMIT)?;
        let piped = b.table_rows(piped)?;
        b.check(&format!("q1 {param} pipeline"), &piped, &want);
    }
    Ok(())
}

/// Q2 at each k.
fn q2(b: &mut Bench<'_>, t: &Tweets, d: &Table, quick: bool) -> Result<()> {
    let n = t.len();
    let mut proj = b.gpu.zeros::<f32>(n)?;
    let q = TopKQuery::linear(&d.retweets, 1.0, &d.likes, 0.5);
    for k in if quick { &KS[..1] } else { &KS[..] } {
        let k = *k;
        let gpu = b.gpu;
        let (fused, got) = b.fused(&q, k)?;
        let pipeline = {
            let sel = &mut b.sel;
            b_time(gpu, b.reps, || {
                ops::project_linear_into(gpu, &d.retweets_f, &d.likes_f, 1.0, 0.5, &mut proj)?;
                top_k_reusing(gpu, sel, &proj, k).map(drop)
            })?
        };
        let param = format!("k={k}");
        b.record_pair(
            "q2 top k of retweets + 0.5 likes",
            &param,
            fused,
            pipeline,
            8.0 * n as f64,
        );
        let want = cpu::top_k_linear(&t.retweets, 1.0, &t.likes, 0.5, k, TopKOrder::Largest)?;
        b.check(&format!("q2 {param} fused"), &got, &want);
        ops::project_linear_into(gpu, &d.retweets_f, &d.likes_f, 1.0, 0.5, &mut proj)?;
        let piped = top_k_reusing(gpu, &mut b.sel, &proj, k)?;
        b.check(&format!("q2 {param} pipeline"), &piped, &want);
    }
    Ok(())
}

/// Q3 at each k.
fn q3(b: &mut Bench<'_>, t: &Tweets, d: &Table, quick: bool) -> Result<()> {
    let n = t.len();
    let langs: Vec<u32> = ["en", "es"]
        .iter()
        .map(|l| Tweets::lang_code(l).ok_or_else(|| Error::invalid(format!("no language {l}"))))
        .collect::<Result<_>>()?;
    let q = TopKQuery::column(&d.retweets).filter(RowFilter::is_in(&d.lang, &langs));
    let bytes = 4.0 * n as f64 + sectors_read(|i| langs.contains(&t.lang[i]), n);
    for k in if quick { &KS[..1] } else { &KS[..] } {
        let k = *k;
        let (fused, got) = b.fused(&q, k)?;
        let pipeline = b.time_pipeline(|b| union_top_k(b, d, &langs, k, false).map(drop))?;
        let param = format!("k={k}");
        b.record_pair(
            "q3 where lang in (en, es), top k retweets",
            &param,
            fused,
            pipeline,
            bytes,
        );
        let keep = Keep::In(langs.clone());
        let want = cpu::top_k_where(&t.retweets, &t.lang, &keep, k, TopKOrder::Largest)?;
        b.check(&format!("q3 {param} fused"), &got, &want);
        let piped = union_top_k(b, d, &langs, k, true)?;
        b.check(&format!("q3 {param} pipeline"), &piped, &want);
    }
    Ok(())
}

/// Q3's pipeline: per language, the selection and its top `k`, merged on the host (the
/// selections' rows mapped to the table's where `map_rows`, which downloads the row ids, for
/// the check; the timed runs merge by selection row, which costs the same).
fn union_top_k(
    b: &mut Bench<'_>,
    d: &Table,
    langs: &[u32],
    k: usize,
    map_rows: bool,
) -> Result<TopKRows<u32>> {
    let mut all: Vec<(u32, u32)> = Vec::new();
    for &l in langs {
        let r = b.filter_then_top_k(d, &d.lang_i, Predicate::eq(l as i32), k)?;
        let r = if map_rows {
            b.table_rows(r)?
        } else {
            TopKRows {
                keys: r.keys.iter().map(|&x| x as u32).collect(),
                rows: r.rows,
            }
        };
        all.extend(r.keys.into_iter().zip(r.rows));
    }
    all.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    Ok(TopKRows {
        keys: all.iter().map(|p| p.0).collect(),
        rows: all.iter().map(|p| p.1).collect(),
    })
}

/// Q4: sort, count the runs, top 50 of the counts; each step and the whole.
fn q4(b: &mut Bench<'_>, t: &Tweets, d: &Table) -> Result<()> {
    let n = t.len();
    let gpu = b.gpu;
    let mut sort = RadixSort::<u32>::new(gpu, n, false)?;
    let mut sorted = gpu.zeros::<u32>(n)?;
    let t_sort = b_time(gpu, b.reps, || {
        sort.sort_keys(gpu, &d.user, &mut sorted, Order::Ascending)
    })?;
    let t_runs = b_time(gpu, b.reps, || count_runs(gpu, &sorted).map(drop))?;
    let runs = count_runs(gpu, &sorted)?;
    let k = LIMIT.min(runs.counts.len());
    let t_top = {
        let sel = &mut b.sel;
        b_time(gpu, b.reps, || {
            top_k_reusing(gpu, sel, &runs.counts, k).map(drop)
        })?
    };
    let t_all = {
        let sel = &mut b.sel;
        b_time(gpu, b.reps, || {
            sort.sort_keys(gpu, &d.user, &mut sorted, Order::Ascending)?;
            let r = count_runs(gpu, &sorted)?;
            top_k_reusing(gpu, sel, &r.counts, k).map(drop)
        })?
    };
    let e = "q4 group by user, top 50 counts";
    let words = 4.0 * n as f64;
    b.record(e, "radix sort", "", t_sort, words);
    b.record(e, "count_runs", "", t_runs, words);
    b.record(
        e,
        "top_k of counts",
        &format!("{} runs", runs.counts.len()),
        t_top,
        4.0 * runs.counts.len() as f64,
    );
    b.record(e, "sort + count_runs + top_k", "", t_all, words);
    // The check: users and counts of the CPU's answer.
    let got = top_k_reusing(gpu, &mut b.sel, &runs.counts, k)?;
    let values = runs.values.to_vec(gpu)?;
    let got = TopKRows {
        keys: got.keys,
        rows: got.rows.iter().map(|&r| values[r as usize]).collect(),
    };
    let mut users = t.user.clone();
    {
        use rayon::slice::ParallelSliceMut;
        users.par_sort_unstable();
    }
    let (cpu_users, counts) = cpu::count_runs(&users);
    let want = cpu::top_k(&counts, k, TopKOrder::Largest)?;
    let want = TopKRows {
        keys: want.keys,
        rows: want.rows.iter().map(|&r| cpu_users[r as usize]).collect(),
    };
    b.check("q4", &got, &want);
    Ok(())
}

/// Median of `work` over `reps` repetitions after the warm-up, ms (for closures that borrow
/// parts of the suite's state).
fn b_time(gpu: &Gpu, reps: usize, work: impl FnMut() -> Result<()>) -> Result<f64> {
    Ok(gpu.time(WARMUP, reps, work)?.median_ms())
}

impl Bench<'_> {
    /// Times a pipeline that needs the whole suite state.
    fn time_pipeline(&mut self, mut work: impl FnMut(&mut Self) -> Result<()>) -> Result<f64> {
        let (gpu, reps) = (self.gpu, self.reps);
        b_time(gpu, reps, || work(self))
    }
}

/// The CPU twins of the four queries on all cores (Q1 at selectivity 0.5, Q2 and Q3 at
/// k = 32), a few repetitions each.
fn cpu_records(t: &Tweets, reps: usize) -> Result<Vec<Record>> {
    let threads = rayon::current_num_threads();
    let n = t.len();
    let x = t.time[n / 2];
    let langs = Keep::In(
        ["en", "es"]
            .iter()
            .filter_map(|l| Tweets::lang_code(l))
            .collect(),
    );
    let order = TopKOrder::Largest;
    let mut records = Vec::new();
    let mut time = |what: &str, f: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let mut samples = Vec::new();
        for _ in 0..reps.clamp(1, 3) {
            let start = Instant::now();
            f()?;
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let name = format!("cpu twin ({threads} threads)");
        let ms = tessera_host::runtime::median(&samples);
        records.push(Record::new("cpu", &name, what, n as u64, ms, f64::NAN));
        Ok(())
    };
    time("q1 s=0.5", &mut || {
        cpu::top_k_where(&t.retweets, &t.time, &Keep::lt(x), LIMIT, order).map(drop)
    })?;
    time("q2 k=32", &mut || {
        cpu::top_k_linear(&t.retweets, 1.0, &t.likes, 0.5, 32, order).map(drop)
    })?;
    time("q3 k=32", &mut || {
        cpu::top_k_where(&t.retweets, &t.lang, &langs, 32, order).map(drop)
    })?;
    time("q4", &mut || {
        use rayon::slice::ParallelSliceMut;
        let mut users = t.user.clone();
        users.par_sort_unstable();
        let (_, counts) = cpu::count_runs(&users);
        cpu::top_k(&counts, LIMIT.min(counts.len()), order).map(drop)
    })?;
    Ok(records)
}

/// Prints the fused queries' speedups over their pipelines (nothing without a GPU).
fn print_speedups(speedups: &[Speedup]) {
    if speedups.is_empty() {
        return;
    }
    println!("\n## fused over pipeline");
    let rows = speedups.iter().map(|s| {
        vec![
            s.experiment.clone(),
            s.param.clone(),
            super::fixed(s.fused_ms, 3),
            super::fixed(s.pipeline_ms, 3),
            format!("{:.2}x", s.speedup),
        ]
    });
    let header = ["experiment", "param", "fused ms", "pipeline ms", "speedup"];
    println!("{}", super::markdown_table(&header, rows, 2));
}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(args: &TweetsArgs) -> Result<()> {
    super::prepare_json(&args.json)?;
    let n = if args.quick {
        args.rows.min(QUICK_ROWS)
    } else {
        args.rows
    };
    // The five columns, the casts and row ids, and the CPU check's sorted copy: about nine
    // columns of 4 bytes on the host.
    tessera_host::preflight::check_memory(
        36 * n as u64,
        &format!("bench tweets --rows {n}"),
        "pass a smaller --rows",
    )?;
    let gpu = gpu_or_skip("tessera bench tweets");
    let t = Tweets::generate(n, 1, true);
    let mut mismatches = Vec::new();
    let report = match &gpu {
        Some(gpu) => {
            let (bw, mut records) = measure_bandwidth(gpu, args.reps)?;
            let d = Table::upload(gpu, &t)?;
            let mut b = Bench {
                gpu,
                bw,
                reps: args.reps,
                n,
                fused: SelectTopK::new(gpu)?,
                sel: SelectTopK::new(gpu)?,
                keys: Selection::new(gpu, n)?,
                rows: Selection::new(gpu, n)?,
                records: Vec::new(),
                speedups: Vec::new(),
                mismatches: Vec::new(),
            };
            q1(&mut b, &t, &d, args.quick)?;
            q2(&mut b, &t, &d, args.quick)?;
            q3(&mut b, &t, &d, args.quick)?;
            q4(&mut b, &t, &d)?;
            records.append(&mut b.records);
            records.append(&mut cpu_records(&t, args.reps)?);
            mismatches = b.mismatches;
            TweetsReport {
                device: gpu.name().to_string(),
                rows: n as u64,
                bandwidth: Some(bw),
                records,
                speedups: b.speedups,
                checked: "every GPU answer (fused and pipeline) against the CPU twin on the \
                          full table"
                    .into(),
            }
        }
        None => {
            println!("notice: no GPU found; timing the CPU twins only");
            TweetsReport {
                device: "cpu".into(),
                rows: n as u64,
                bandwidth: None,
                records: cpu_records(&t, args.reps)?,
                speedups: Vec::new(),
                checked: "nothing (no GPU)".into(),
            }
        }
    };
    super::print_report(
        "tweets",
        &report.device,
        n as u64,
        report.bandwidth.as_ref(),
        &report.records,
        None,
    );
    print_speedups(&report.speedups);
    super::write_json(&args.json, &report)?;
    if mismatches.is_empty() {
        println!("checked: {}", report.checked);
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "GPU answers differ from the CPU's: {}",
            mismatches.join(", ")
        )))
    }
}
