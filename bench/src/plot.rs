//! `tessera bench plot`: the suites' JSON reports drawn as SVG figures, one per experiment:
//! the median time of every implementation over the swept parameter, with the bandwidth model
//! as a dashed black line, so that the distance to the model reads off the figure as it does
//! off the ratio column of the tables.
//!
//! The swept parameter is read back from each record's `param` text (`G=100`, `k=2^10`,
//! `s=0.5`, `16 bits`, `H=64KB`), from its `n` where the param stays the same (the size
//! sweeps), or else the params become categories in the records' order (tile shapes,
//! distributions). Text is left to the SVG viewer's fonts, so drawing needs no font files.
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Deserialize;
use tessera_host::{Error, Result};

/// Options of `tessera bench plot`.
#[derive(Clone, Debug, clap::Args)]
pub struct PlotArgs {
    /// JSON reports of `tessera bench <suite>` runs.
    #[arg(required = true, num_args = 1..)]
    pub json: Vec<PathBuf>,
    /// Directory for the SVG files.
    #[arg(long, default_value = "target/bench/plots")]
    pub out: PathBuf,
}

/// Makes `out`, the directory for the SVG files (given as `flag`), where it does not exist;
/// an error naming it where it is a file or cannot be made.
pub fn check_out(out: &Path, flag: &str) -> Result<()> {
    if out.is_file() {
        return Err(Error::invalid(format!(
            "{flag} {}: is a file; pass a directory for the SVG files",
            out.display()
        )));
    }
    std::fs::create_dir_all(out).map_err(Error::io(out, "cannot create"))
}

/// Draws every experiment of every report in `args.json` as `<out>/<suite>-<experiment>.svg`
/// and lists them in `<out>/index.md`. All reports are read and checked before anything is
/// written, so a bad path among several leaves no half-drawn directory behind.
pub fn run(args: &PlotArgs) -> Result<()> {
    let reports = args
        .json
        .iter()
        .map(|p| Report::load(p))
        .collect::<Result<Vec<_>>>()?;
    check_out(&args.out, "--out")?;
    let mut names = HashSet::new();
    let mut sections = Vec::new();
    for report in &reports {
        let suite = unique(&mut names, &file_name(&report.suite));
        let mut files = Vec::new();
        for (experiment, points) in report.experiments() {
            let Some(figure) = Figure::new(report, experiment, &points) else {
                eprintln!(
                    "note: {}: experiment {experiment} has no record with a finite median_ms; \
                     not drawn",
                    report.path.display()
                );
                continue;
            };
            let name = unique(&mut names, &format!("{suite}-{}", file_name(experiment)));
            let file = args.out.join(format!("{name}.svg"));
            let svg = figure.render().map_err(|e| {
                Error::Data(format!(
                    "{}: drawing {experiment} failed: {e}",
                    report.path.display()
                ))
            })?;
            std::fs::write(&file, svg).map_err(Error::io(&file, "write failed"))?;
            println!("{}", file.display());
            files.push((figure.title, format!("{name}.svg")));
        }
        sections.push((report, files));
    }
    let index = args.out.join("index.md");
    std::fs::write(&index, index_markdown(&sections)).map_err(Error::io(&index, "write failed"))?;
    println!("{}", index.display());
    Ok(())
}

/// A report larger than this is not one a suite wrote (theirs are a few hundred KB at most);
/// the cap keeps a wrong path such as `/dev/zero` from filling memory.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// How a suite's report is named in the messages that refuse a file.
const WHAT_REPORTS_ARE: &str = "`tessera bench plot` draws the JSON reports that \
     `tessera bench <suite> --json FILE` writes";

/// One record as the suites serialize [`crate::Record`]: NaN times are written as `null`,
/// so the times are options; `ratio` and unknown fields are ignored.
#[derive(Clone, Debug, Deserialize)]
struct Point {
    experiment: String,
    implementation: String,
    #[serde(default)]
    param: String,
    #[serde(default)]
    n: Option<f64>,
    #[serde(default)]
    median_ms: Option<f64>,
    #[serde(default)]
    model_ms: Option<f64>,
}

/// A report's records and what the figures name: the suite (the file's stem) and the device.
#[derive(Debug)]
struct Report {
    path: PathBuf,
    suite: String,
    device: Option<String>,
    points: Vec<Point>,
}

impl Report {
    /// Reads and checks `path`: a JSON object with a non-empty `records` array of records.
    fn load(path: &Path) -> Result<Report> {
        let text = read_capped(path)?;
        if text.iter().all(u8::is_ascii_whitespace) {
            return Err(Error::Data(format!(
                "{}: the file is empty; {WHAT_REPORTS_ARE}",
                path.display()
            )));
        }
        let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| Error::Parse {
            at: path.display().to_string(),
            what: format!("not JSON ({WHAT_REPORTS_ARE})"),
            source: Box::new(e),
        })?;
        let Some(records) = value.get("records").and_then(|r| r.as_array()) else {
            return Err(Error::Data(format!(
                "{}: no `records` array; {WHAT_REPORTS_ARE}",
                path.display()
            )));
        };
        if records.is_empty() {
            return Err(Error::Data(format!(
                "{}: `records` is empty, nothing to draw; rerun the suite (did it skip every \
                 implementation?)",
                path.display()
            )));
        }
        let points = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Point::deserialize(r).map_err(|e| Error::Parse {
                    at: format!("{}: records[{i}]", path.display()),
                    what: "a benchmark record (experiment, implementation, param, n, \
                           median_ms, model_ms)"
                        .into(),
                    source: Box::new(e),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let suite = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let device = value
            .get("device")
            .and_then(|d| d.as_str())
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        Ok(Report {
            path: path.to_path_buf(),
            suite,
            device,
            points,
        })
    }

    /// The records grouped by experiment, experiments and records in the report's order.
    fn experiments(&self) -> Vec<(&str, Vec<&Point>)> {
        let mut order: Vec<(&str, Vec<&Point>)> = Vec::new();
        let mut at = HashMap::new();
        for p in &self.points {
            let i = *at.entry(p.experiment.as_str()).or_insert_with(|| {
                order.push((p.experiment.as_str(), Vec::new()));
                order.len() - 1
            });
            order[i].1.push(p);
        }
        order
    }
}

/// The bytes of `path`, refused with the fix when it cannot be read or is too large.
fn read_capped(path: &Path) -> Result<Vec<u8>> {
    const ACTION: &str = "cannot read the report (pass the JSON file that \
                          `tessera bench <suite> --json FILE` wrote)";
    let file = std::fs::File::open(path).map_err(Error::io(path, ACTION))?;
    let mut bytes = Vec::new();
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io(path, ACTION))?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(Error::Data(format!(
            "{}: over {} MiB, not a benchmark report; {WHAT_REPORTS_ARE}",
            path.display(),
            MAX_REPORT_BYTES >> 20
        )));
    }
    Ok(bytes)
}

/// `name` with every character but ASCII letters, digits, `-` and `_` replaced by `_` (runs
/// of them by one), so that experiments such as `k_sweep_f32 (cost model)` make file
/// names that need no quoting in a shell or a Markdown link.
fn file_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out: String = out.trim_matches('_').chars().take(100).collect();
    if out.is_empty() { "figure".into() } else { out }
}

/// `name`, or `name-2`, `name-3`, ... if taken: two reports with the same stem, or two
/// experiments whose names sanitize alike, must not overwrite each other's figures.
fn unique(taken: &mut HashSet<String>, name: &str) -> String {
    let mut candidate = name.to_string();
    let mut i = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{name}-{i}");
        i += 1;
    }
    candidate
}

/// `index.md`: a section per report with a Markdown image link per figure.
fn index_markdown(sections: &[(&Report, Vec<(String, String)>)]) -> String {
    let mut md = String::from("# Benchmark figures\n\nDrawn by `tessera bench plot`.\n");
    for (report, files) in sections {
        md.push_str(&format!(
            "\n## {} (`{}`{})\n\n",
            report.suite,
            report.path.display(),
            report
                .device
                .as_ref()
                .map(|d| format!(", {d}"))
                .unwrap_or_default()
        ));
        if files.is_empty() {
            md.push_str("No experiment with a finite median.\n");
        }
        for (title, file) in files {
            // Brackets in a device name would end the link text early.
            let alt = title.replace('[', "(").replace(']', ")");
            md.push_str(&format!("![{alt}]({file})\n\n"));
        }
    }
    md
}

/// The swept parameter of one record, read from its `param`.
#[derive(Clone, Debug, PartialEq)]
struct Swept {
    /// The parameter's name: the key of `G=100`, else the word after or before the number
    /// (`16 bits`, `alpha 2`), else empty.
    name: String,
    /// The number, in bytes where it had a byte unit (`H=64KB`).
    value: f64,
    /// Whether the number had a byte unit.
    bytes: bool,
    /// The param with its number replaced by `#` (`uniform k=#`): records of one experiment
    /// share an axis only where their forms agree.
    form: String,
}

/// The one number of `param`, its name and the param's form; `None` where the param has no
/// number or several (`NT=128 IPT=4`), which makes the experiment's axis categorical.
/// Parenthesized remarks such as `G=100 (37 present)` do not count.
fn parse_param(param: &str) -> Option<Swept> {
    let text = strip_remarks(param);
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut found = None;
    for (i, token) in tokens.iter().enumerate() {
        let token = token.trim_end_matches([',', ';']);
        let (key, value) = match token.split_once('=') {
            Some((k, v)) => (Some(k), v),
            None => (None, token),
        };
        if let Some((value, bytes)) = parse_number(value) {
            if found.is_some() {
                return None;
            }
            found = Some((i, key, value, bytes));
        }
    }
    let (i, key, value, bytes) = found?;
    let is_word = |t: &&&str| t.starts_with(|c: char| c.is_alphabetic());
    let name = match key {
        Some(k) => k.to_string(),
        None => tokens
            .get(i + 1)
            .filter(is_word)
            .or_else(|| i.checked_sub(1).and_then(|j| tokens.get(j)).filter(is_word))
            .map(|t| t.trim_end_matches([',', ';']).to_string())
            .unwrap_or_default(),
    };
    let placeholder = format!(
        "{}#{}",
        key.map(|k| format!("{k}=")).unwrap_or_default(),
        if bytes { "B" } else { "" }
    );
    let form = tokens
        .iter()
        .enumerate()
        .map(|(j, t)| if j == i { placeholder.as_str() } else { t })
        .collect::<Vec<_>>()
        .join(" ");
    Some(Swept {
        name,
        value,
        bytes,
        form,
    })
}

/// `text` without its parenthesized parts (an unmatched `)` is kept).
fn strip_remarks(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// A number as the suites print them: `100`, `0.5`, `1e6`, `2^10`, optionally followed by a
/// binary byte unit (`64KB`, `8MB`, `1GiB`, as `size_label` of the join suite writes sizes).
/// Returns the value (in bytes where there was a unit) and whether there was one. Words that
/// Rust's float parser would take (`inf`, `NaN`) are not numbers here.
fn parse_number(text: &str) -> Option<(f64, bool)> {
    let starts_numeric = {
        let mut c = text.chars();
        match c.next() {
            Some(d) if d.is_ascii_digit() => true,
            Some('-' | '+' | '.') => c.next().is_some_and(|d| d.is_ascii_digit() || d == '.'),
            _ => false,
        }
    };
    if !starts_numeric {
        return None;
    }
    const UNITS: [(&str, f64); 6] = [
        ("KiB", 1024.0),
        ("MiB", 1048576.0),
        ("GiB", 1073741824.0),
        ("KB", 1024.0),
        ("MB", 1048576.0),
        ("GB", 1073741824.0),
    ];
    let (digits, scale) = UNITS
        .iter()
        .find_map(|&(u, s)| text.strip_suffix(u).map(|d| (d, Some(s))))
        .unwrap_or((text, None));
    let value = match digits.split_once('^') {
        Some((base, exp)) => base.parse::<f64>().ok()?.powf(exp.parse::<f64>().ok()?),
        None => digits.parse::<f64>().ok()?,
    };
    let value = value * scale.unwrap_or(1.0);
    value.is_finite().then_some((value, scale.is_some()))
}

/// Whether an axis over `values` is drawn logarithmically: all positive and spanning at
/// least 100x, as the thesis draws its k, size and group-count sweeps.
fn use_log(values: &[f64]) -> bool {
    let (lo, hi) = min_max(values);
    values.iter().all(|v| v.is_finite() && *v > 0.0) && !values.is_empty() && hi >= 100.0 * lo
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// What a numeric axis' numbers are: plain numbers, or bytes labelled `64KB`, `8MB`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Plain,
    Bytes,
}

/// How an experiment's records are placed along x.
#[derive(Debug, PartialEq)]
enum XSpec {
    /// The number of each record's `param`, named by the param.
    Param { name: String, unit: Unit },
    /// Each record's `n`: the param is the same throughout (a size sweep).
    Size,
    /// Each distinct `param` in the records' order.
    Categories(Vec<String>),
}

/// The x axis of `points` and each point's x value.
fn place_x(points: &[&Point]) -> (XSpec, Vec<f64>) {
    let parsed: Option<Vec<Swept>> = points.iter().map(|p| parse_param(&p.param)).collect();
    let parsed = parsed.filter(|s| s.windows(2).all(|w| w[0].form == w[1].form));
    let distinct = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v.len()
    };
    let one_param = points.windows(2).all(|w| w[0].param == w[1].param);
    let sizes: Option<Vec<f64>> = points
        .iter()
        .map(|p| p.n.filter(|n| n.is_finite() && *n > 0.0))
        .collect();
    if let Some(swept) = &parsed {
        let xs: Vec<f64> = swept.iter().map(|s| s.value).collect();
        if distinct(&xs) > 1 {
            let unit = if swept.iter().any(|s| s.bytes) {
                Unit::Bytes
            } else {
                Unit::Plain
            };
            let name = swept.first().map(|s| s.name.clone()).unwrap_or_default();
            return (XSpec::Param { name, unit }, xs);
        }
    }
    if let Some(sizes) = sizes.filter(|s| (one_param || parsed.is_some()) && distinct(s) > 1) {
        return (XSpec::Size, sizes);
    }
    let mut labels: Vec<String> = Vec::new();
    let xs = points
        .iter()
        .map(|p| {
            let label = if p.param.is_empty() {
                "-"
            } else {
                p.param.as_str()
            };
            let i = labels.iter().position(|l| l == label).unwrap_or_else(|| {
                labels.push(label.to_string());
                labels.len() - 1
            });
            i as f64
        })
        .collect();
    (XSpec::Categories(labels), xs)
}

/// One axis: where values go (their log10 on a log axis, so that both axes are plain `f64`
/// ranges for plotters and the tick positions are ours), the ticks with their labels, the
/// light grid lines and the description.
#[derive(Clone, Debug)]
struct Axis {
    log: bool,
    range: Range<f64>,
    ticks: Vec<(f64, String)>,
    minor: Vec<f64>,
    desc: String,
}

impl Axis {
    /// The axis position of value `v`.
    fn pos(&self, v: f64) -> f64 {
        if self.log { v.log10() } else { v }
    }

    /// The label of the tick at axis position `at` (plotters asks for the tick positions it
    /// was given, so the nearest tick is that one).
    fn label(&self, at: f64) -> String {
        self.ticks
            .iter()
            .min_by(|a, b| (a.0 - at).abs().total_cmp(&(b.0 - at).abs()))
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }

    /// An axis over `values` (finite, at least one): logarithmic where [`use_log`] says so,
    /// with ticks at powers of two where every value is one, else at powers of ten; linear
    /// from zero where `from_zero` and the values are not negative.
    fn numeric(values: &[f64], desc: String, unit: Unit, from_zero: bool) -> Axis {
        let (lo, hi) = min_max(values);
        if use_log(values) {
            let (a, b) = (lo.log10(), hi.log10());
            let pad = (b - a) * 0.05;
            let range = a - pad..b + pad;
            let (ticks, minor) = if values.iter().all(|&v| is_pow2(v)) {
                pow2_ticks(&range, unit)
            } else {
                pow10_ticks(&range, unit)
            };
            return Axis {
                log: true,
                range,
                ticks,
                minor,
                desc,
            };
        }
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            // One value: a range around it that still shows it.
            let half = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
            (lo - half, hi + half)
        };
        let pad = (hi - lo) * 0.05;
        let start = if from_zero && lo >= 0.0 {
            0.0
        } else {
            lo - pad
        };
        let range = start..hi + pad;
        let ticks = linear_ticks(&range, unit);
        Axis {
            log: false,
            range,
            ticks,
            minor: Vec::new(),
            desc,
        }
    }

    /// Categories at 0, 1, 2, ...; every m-th labelled, m as small as lets the labels stand
    /// apart (the others get a light line).
    fn categorical(labels: &[String], desc: String) -> Axis {
        let labels: Vec<String> = labels.iter().map(|l| shorten(l, MAX_CATEGORY)).collect();
        let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
        let every = (labels.len() * (widest * CHAR_PX + 12))
            .div_ceil(PLOT_PX)
            .max(1);
        let range = -0.5..labels.len() as f64 - 0.5;
        let mut ticks = Vec::new();
        let mut minor = Vec::new();
        for (i, label) in labels.into_iter().enumerate() {
            if i % every == 0 {
                ticks.push((i as f64, label));
            } else {
                minor.push(i as f64);
            }
        }
        Axis {
            log: false,
            range,
            ticks,
            minor,
            desc,
        }
    }
}

/// The axis as plotters' coordinate: a linear map of `range` whose grid lines and tick labels
/// are ours (plotters' own key points know neither powers of two nor categories).
impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let t = if span > 0.0 {
            (value - self.range.start) / span
        } else {
            0.5
        };
        // Saturating: a far-off value lands off the canvas, never wraps around.
        (f64::from(limit.0) + t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.ticks.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, value: &f64) -> String {
        self.label(*value)
    }
}

fn is_pow2(v: f64) -> bool {
    v > 0.0 && v.is_finite() && {
        let k = v.log2().round();
        (k.exp2() - v).abs() <= v * 1e-9
    }
}

/// Ticks at the powers of two in `range` (log10 space), at most about 12 labelled (every
/// m-th power, the others as light lines); labels are the integers below 10^5 and `2^k`
/// above, or byte sizes.
fn pow2_ticks(range: &Range<f64>, unit: Unit) -> (Vec<(f64, String)>, Vec<f64>) {
    let to_log2 = std::f64::consts::LOG2_10;
    let (a, b) = (
        (range.start * to_log2).ceil() as i64,
        (range.end * to_log2).floor() as i64,
    );
    let count = (b - a + 1).max(1);
    let every = ((count + 11) / 12).max(1);
    let as_powers = (b as f64).exp2() >= 1e5;
    let mut ticks = Vec::new();
    let mut minor = Vec::new();
    for k in a..=b {
        let v = (k as f64).exp2();
        let at = v.log10();
        if k.rem_euclid(every) != 0 {
            minor.push(at);
            continue;
        }
        let label = match unit {
            Unit::Bytes => fmt_bytes(v),
            Unit::Plain if as_powers && k >= 0 => format!("2^{k}"),
            Unit::Plain => fmt_number(v),
        };
        ticks.push((at, label));
    }
    (ticks, minor)
}

/// Ticks at the powers of ten in `range` (log10 space), with 2 and 5 times them labelled
/// where the range spans at most two decades and every other multiple as a light line;
/// at most about 12 decades labelled.
fn pow10_ticks(range: &Range<f64>, unit: Unit) -> (Vec<(f64, String)>, Vec<f64>) {
    let (a, b) = (range.start.floor() as i64, range.end.ceil() as i64);
    let decades = (b - a).max(1);
    let every = ((decades + 11) / 12).max(1);
    let mut ticks = Vec::new();
    let mut minor = Vec::new();
    for d in a..=b {
        for m in 1..=9 {
            let v = m as f64 * 10f64.powi(d as i32);
            let at = v.log10();
            if at < range.start || at > range.end {
                continue;
            }
            let major = if m == 1 {
                d.rem_euclid(every) == 0
            } else {
                decades <= 2 && (m == 2 || m == 5)
            };
            if major {
                let label = match unit {
                    Unit::Bytes => fmt_bytes(v),
                    Unit::Plain => fmt_number(v),
                };
                ticks.push((at, label));
            } else if every == 1 {
                minor.push(at);
            }
        }
    }
    (ticks, minor)
}

/// About six ticks at a step of 1, 2 or 5 times a power of ten.
fn linear_ticks(range: &Range<f64>, unit: Unit) -> Vec<(f64, String)> {
    let raw = (range.end - range.start) / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if !step.is_finite() || step <= 0.0 {
        return Vec::new();
    }
    let decimals = (-step.log10().floor()).clamp(0.0, 12.0) as usize;
    let first = (range.start / step).ceil() as i64;
    let last = (range.end / step).floor() as i64;
    (first..=last)
        .take(100)
        .map(|i| {
            let v = i as f64 * step;
            let label = match unit {
                Unit::Bytes => fmt_bytes(v),
                Unit::Plain if v != 0.0 && (v.abs() >= 1e4 || v.abs() < 1e-3) => fmt_number(v),
                Unit::Plain => format!("{v:.decimals$}"),
            };
            (v, label)
        })
        .collect()
}

/// A tick value: plain below 10^4 with the decimals it needs (up to six), `1e6` style above
/// and below 10^-3.
fn fmt_number(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e4).contains(&a) {
        let s = format!("{v:.2e}");
        return match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", trim_zeros(m)),
            None => s,
        };
    }
    let decimals = (-a.log10().floor()).clamp(0.0, 6.0) as usize + 2;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

/// `1.50` -> `1.5`, `2.00` -> `2`.
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A size in bytes as the join suite labels its tables: `64KB`, `8MB`, `1GB` (binary units).
fn fmt_bytes(v: f64) -> String {
    const UNITS: [(&str, f64); 3] = [("GB", 1073741824.0), ("MB", 1048576.0), ("KB", 1024.0)];
    for (unit, size) in UNITS {
        if v.abs() >= size {
            return format!("{}{unit}", trim_zeros(&format!("{:.2}", v / size)));
        }
    }
    format!("{}B", trim_zeros(&format!("{v:.2}")))
}

/// `text`, cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// One implementation's times: (x, median ms), in x order.
#[derive(Debug)]
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

/// Everything one SVG shows, in data units (the axes map them).
#[derive(Debug)]
struct Figure {
    title: String,
    x: Axis,
    y: Axis,
    series: Vec<Series>,
    model: Vec<(f64, f64)>,
}

impl Figure {
    /// The figure of one experiment; `None` where no record has a finite median.
    fn new(report: &Report, experiment: &str, points: &[&Point]) -> Option<Figure> {
        let points: Vec<&Point> = points
            .iter()
            .copied()
            .filter(|p| p.median_ms.is_some_and(f64::is_finite))
            .collect();
        if points.is_empty() {
            return None;
        }
        let (spec, xs) = place_x(&points);
        let series = series_of(&points, &xs);
        let model = model_of(&points, &xs);
        let mut ys: Vec<f64> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        ys.extend(model.iter().map(|p| p.1));
        let x = match spec {
            XSpec::Param { name, unit } => {
                let desc = if name.is_empty() {
                    "param".into()
                } else {
                    name
                };
                Axis::numeric(&xs, desc, unit, false)
            }
            XSpec::Size => Axis::numeric(&xs, "n".into(), Unit::Plain, false),
            XSpec::Categories(labels) => Axis::categorical(&labels, "param".into()),
        };
        let y = Axis::numeric(&ys, "median ms".into(), Unit::Plain, true);
        let title = match &report.device {
            Some(d) => format!("{}: {experiment} on {d}", report.suite),
            None => format!("{}: {experiment}", report.suite),
        };
        Some(Figure {
            title,
            x,
            y,
            series,
            model,
        })
    }
}

/// One series per implementation, in the order they first appear, each sorted by x.
fn series_of(points: &[&Point], xs: &[f64]) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for (p, &x) in points.iter().zip(xs) {
        let Some(y) = p.median_ms else { continue };
        let i = match series.iter().position(|s| s.name == p.implementation) {
            Some(i) => i,
            None => {
                series.push(Series {
                    name: p.implementation.clone(),
                    points: Vec::new(),
                });
                series.len() - 1
            }
        };
        series[i].points.push((x, y));
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// The model at every x where a record has a finite, positive one: tessera's (the
/// implementation whose name starts with `tessera`, the smallest of those if several), else
/// the smallest, since anchors such as PyTorch are timed against the same bytes but some
/// records carry a model of other work.
fn model_of(points: &[&Point], xs: &[f64]) -> Vec<(f64, f64)> {
    let mut best: Vec<(f64, bool, f64)> = Vec::new();
    for (p, &x) in points.iter().zip(xs) {
        let Some(m) = p.model_ms.filter(|m| m.is_finite() && *m > 0.0) else {
            continue;
        };
        let ours = p.implementation.starts_with("tessera");
        match best.iter_mut().find(|b| b.0 == x) {
            Some(b) => {
                if (ours && !b.1) || (ours == b.1 && m < b.2) {
                    *b = (x, ours, m);
                }
            }
            None => best.push((x, ours, m)),
        }
    }
    let mut model: Vec<(f64, f64)> = best.into_iter().map(|(x, _, m)| (x, m)).collect();
    model.sort_by(|a, b| a.0.total_cmp(&b.0));
    model
}

/// Tableau's ten colours: distinct on screen and in print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const FONT: &str = "sans-serif";
const PLOT_SIZE: (u32, u32) = (820, 560);
const LEGEND_ROW: i32 = 22;
/// The width of the plotting area inside [`PLOT_SIZE`] (less the margins and the y labels).
const PLOT_PX: usize = 700;
/// About the width of a character of the 13 px tick labels.
const CHAR_PX: usize = 7;
/// Longest category label; longer params are cut with an ellipsis.
const MAX_CATEGORY: usize = 24;

/// The label of the model series in the legend.
const MODEL_LABEL: &str = "model";

impl Figure {
    /// The figure as SVG text: the chart on the left, the legend on the right of it.
    fn render(&self) -> std::result::Result<String, String> {
        let names: Vec<String> = self
            .series
            .iter()
            .map(|s| shorten(&s.name, 48))
            .chain((!self.model.is_empty()).then(|| MODEL_LABEL.to_string()))
            .collect();
        let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let legend_w = (longest * CHAR_PX + 64).clamp(140, 420) as u32;
        let rows = names.len() as u32;
        let height = PLOT_SIZE.1.max(80 + rows * LEGEND_ROW as u32);
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (PLOT_SIZE.0 + legend_w, height))
                .into_drawing_area();
            root.fill(&WHITE).map_err(fail)?;
            let (main, legend) = root.split_horizontally(PLOT_SIZE.0);
            self.draw_chart(&main)?;
            self.draw_legend(&legend, &names)?;
            root.present().map_err(fail)?;
        }
        Ok(svg)
    }

    /// The axes, their grid and labels, the series as lines with markers and the model as a
    /// dashed black line with dots (a dot alone shows where the model has one point).
    fn draw_chart(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
    ) -> std::result::Result<(), String> {
        let (x, y) = (&self.x, &self.y);
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, 20))
            .margin(14)
            .x_label_area_size(52)
            .y_label_area_size(76)
            .build_cartesian_2d(x.clone(), y.clone())
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc(x.desc.as_str())
            .y_desc(y.desc.as_str())
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 15))
            .bold_line_style(RGBColor(205, 205, 205))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(fail)?;
        let at = |p: &(f64, f64)| (x.pos(p.0), y.pos(p.1));
        let plot = chart.plotting_area();
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = s.points.iter().map(at).collect();
            plot.draw(&PathElement::new(pts.clone(), color.stroke_width(2)))
                .map_err(fail)?;
            for p in pts {
                draw_marker(plot, p, marker_kind(i), color)?;
            }
        }
        if !self.model.is_empty() {
            let pts: Vec<(f64, f64)> = self.model.iter().map(at).collect();
            plot.draw(&DashedPathElement::new(
                pts.clone(),
                8,
                5,
                BLACK.stroke_width(2),
            ))
            .map_err(fail)?;
            for p in pts {
                plot.draw(&Circle::new(p, 3, BLACK.filled()))
                    .map_err(fail)?;
            }
        }
        Ok(())
    }

    /// The legend as rows of a line sample, a marker and the name; drawn beside the chart
    /// rather than inside it, so that it never hides a point.
    fn draw_legend(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
        names: &[String],
    ) -> std::result::Result<(), String> {
        let text = (FONT, 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, name) in names.iter().enumerate() {
            let y = 60 + i as i32 * LEGEND_ROW;
            let line = [(4, y), (36, y)];
            if i < self.series.len() {
                let color = PALETTE[i % PALETTE.len()];
                area.draw(&PathElement::new(line, color.stroke_width(2)))
                    .map_err(fail)?;
                draw_marker(area, (20, y), marker_kind(i), color)?;
            } else {
                area.draw(&DashedPathElement::new(line, 6, 4, BLACK.stroke_width(2)))
                    .map_err(fail)?;
                area.draw(&Circle::new((20, y), 3, BLACK.filled()))
                    .map_err(fail)?;
            }
            area.draw(&Text::new(name.clone(), (44, y), text.clone()))
                .map_err(fail)?;
        }
        Ok(())
    }
}

/// The marker of series `i`: the shape changes with the colour and again when the palette
/// repeats, so that series 0 and 10 differ.
fn marker_kind(i: usize) -> usize {
    i + i / PALETTE.len()
}

/// A marker of shape `kind` (circle, triangle, square or cross, cycling), so that series
/// stay apart in grey print too.
fn draw_marker<CT: CoordTranslate>(
    area: &DrawingArea<SVGBackend<'_>, CT>,
    at: CT::From,
    kind: usize,
    color: RGBColor,
) -> std::result::Result<(), String>
where
    CT::From: Clone + 'static,
{
    let style = color.filled();
    match kind % 4 {
        0 => area.draw(&Circle::new(at, 4, style)),
        1 => area.draw(&TriangleMarker::new(at, 5, style)),
        2 => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], style))),
        _ => area.draw(&Cross::new(at, 4, color.stroke_width(2))),
    }
    .map_err(fail)
}

/// A drawing error as text, for [`Error::Data`].
fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swept(param: &str) -> Option<(String, f64)> {
        parse_param(param).map(|s| (s.name, s.value))
    }

    fn some(name: &str, value: f64) -> Option<(String, f64)> {
        Some((name.to_string(), value))
    }

    #[test]
    fn params_of_every_suite_parse() {
        // groupby, with and without the count of groups present.
        assert_eq!(swept("G=100"), some("G", 100.0));
        assert_eq!(swept("G=100000000 (99 present)"), some("G", 1e8));
        // topk and tweets: k, with a distribution's prefix; selectivities.
        assert_eq!(swept("k=1024"), some("k", 1024.0));
        assert_eq!(swept("k=2^10"), some("k", 1024.0));
        assert_eq!(swept("uniform k=32"), some("k", 32.0));
        assert_eq!(swept("s=0.5"), some("s", 0.5));
        assert_eq!(swept("q1 s=0.5"), some("s", 0.5));
        assert_eq!(swept("N=1e6"), some("N", 1e6));
        // sort and compress: bit widths; compress' distributions.
        assert_eq!(swept("16 bits"), some("bits", 16.0));
        assert_eq!(swept("bits=16"), some("bits", 16.0));
        assert_eq!(swept("D1 2^14 distinct"), some("distinct", 16384.0));
        assert_eq!(swept("D2 mean 2^10"), some("mean", 1024.0));
        assert_eq!(swept("D3 alpha 2"), some("alpha", 2.0));
        // join: table sizes in binary units.
        let h = parse_param("H=64KB");
        assert_eq!(
            h.as_ref().map(|h| (h.value, h.bytes)),
            Some((65536.0, true))
        );
        assert_eq!(swept("H=8MB"), some("H", 8.0 * 1048576.0));
        assert_eq!(
            parse_param("H=64KB").map(|h| h.form),
            parse_param("H=8MB").map(|h| h.form)
        );
        // Several numbers, none, or not a number: no numeric value.
        for param in [
            "NT=128 IPT=4",
            "128x4",
            "",
            "q4",
            "s=0.5*0.5",
            "N=1e6 x N=1e6, ~80% match",
            "u32 key + u32 value",
            "inf",
            "k=NaN",
        ] {
            assert_eq!(parse_param(param), None, "{param}");
        }
    }

    #[test]
    fn forms_tell_prefixes_apart() {
        let form = |p: &str| parse_param(p).map(|s| s.form);
        assert_eq!(form("k=32"), form("k=1024"));
        assert_ne!(form("uniform k=32"), form("normal k=32"));
        assert_eq!(form("G=2 (2 present)"), form("G=100"));
    }

    #[test]
    fn log_axes_where_values_span_100x() {
        assert!(use_log(&[1.0, 100.0]));
        assert!(use_log(&[2.0, 100.0, 1e8]));
        assert!(!use_log(&[1.0, 99.0]));
        assert!(!use_log(&[0.0, 1000.0]));
        assert!(!use_log(&[-1.0, 1000.0]));
        assert!(!use_log(&[f64::NAN, 1.0, 1000.0]));
        assert!(!use_log(&[]));
    }

    #[test]
    fn log_ticks_are_powers() {
        let ks: Vec<f64> = (0..=10).map(|k| f64::from(1 << k)).collect();
        let axis = Axis::numeric(&ks, "k".into(), Unit::Plain, false);
        assert!(axis.log);
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024"
            ]
        );
        let sizes: Vec<f64> = (21..=29).map(|e| f64::from(1 << e)).collect();
        let axis = Axis::numeric(&sizes, "n".into(), Unit::Plain, false);
        assert_eq!(axis.ticks.first().map(|t| t.1.as_str()), Some("2^21"));
        let groups = [2.0, 100.0, 1e4, 1e6, 1e8];
        let axis = Axis::numeric(&groups, "G".into(), Unit::Plain, false);
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            ["1", "10", "100", "1000", "1e4", "1e5", "1e6", "1e7", "1e8"]
        );
        let tables = [16384.0, 65536.0, 1048576.0, 536870912.0];
        let axis = Axis::numeric(&tables, "H".into(), Unit::Bytes, false);
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert!(
            labels.contains(&"64KB") && labels.contains(&"1MB"),
            "{labels:?}"
        );
        // Every tick lies inside the range it labels.
        assert!(axis.ticks.iter().all(|t| axis.range.contains(&t.0)));
    }

    #[test]
    fn linear_axes_start_at_zero_for_times() {
        let axis = Axis::numeric(&[1.5, 13.0], "median ms".into(), Unit::Plain, true);
        assert!(!axis.log);
        assert_eq!(axis.range.start, 0.0);
        assert_eq!(axis.ticks.first().map(|t| t.1.as_str()), Some("0"));
        // One value still makes a range.
        let one = Axis::numeric(&[0.5], "s".into(), Unit::Plain, false);
        assert!(one.range.start < 0.5 && one.range.end > 0.5);
    }

    fn point(experiment: &str, implementation: &str, param: &str, n: f64) -> Point {
        Point {
            experiment: experiment.into(),
            implementation: implementation.into(),
            param: param.into(),
            n: Some(n),
            median_ms: Some(1.0),
            model_ms: None,
        }
    }

    #[test]
    fn x_is_the_param_the_size_or_categories() {
        let ks = [point("e", "a", "k=1", 8.0), point("e", "a", "k=64", 8.0)];
        let refs: Vec<&Point> = ks.iter().collect();
        let (spec, xs) = place_x(&refs);
        assert_eq!(
            spec,
            XSpec::Param {
                name: "k".into(),
                unit: Unit::Plain
            }
        );
        assert_eq!(xs, [1.0, 64.0]);
        let sizes = [point("e", "a", "k=64", 1e6), point("e", "a", "k=64", 1e8)];
        let refs: Vec<&Point> = sizes.iter().collect();
        assert_eq!(place_x(&refs), (XSpec::Size, vec![1e6, 1e8]));
        let mixed = [
            point("e", "a", "uniform k=32", 8.0),
            point("e", "a", "normal k=32", 8.0),
            point("e", "b", "uniform k=32", 8.0),
        ];
        let refs: Vec<&Point> = mixed.iter().collect();
        let labels = vec!["uniform k=32".to_string(), "normal k=32".to_string()];
        assert_eq!(
            place_x(&refs),
            (XSpec::Categories(labels), vec![0.0, 1.0, 0.0])
        );
    }

    #[test]
    fn model_prefers_tessera_else_the_smallest() {
        let mut pts = [
            point("e", "pytorch", "k=1", 1.0),
            point("e", "tessera auto", "k=1", 1.0),
            point("e", "pytorch", "k=2", 1.0),
            point("e", "duckdb", "k=2", 1.0),
        ];
        for (p, m) in pts.iter_mut().zip([1.0, 3.0, 2.0, 1.5]) {
            p.model_ms = Some(m);
        }
        let refs: Vec<&Point> = pts.iter().collect();
        let (_, xs) = place_x(&refs);
        assert_eq!(model_of(&refs, &xs), [(1.0, 3.0), (2.0, 1.5)]);
    }

    #[test]
    fn file_names_are_safe_and_unique() {
        assert_eq!(
            file_name("k_sweep_f32 (cost model)"),
            "k_sweep_f32_cost_model"
        );
        assert_eq!(file_name("../x/y"), "x_y");
        assert_eq!(file_name("a.b"), "a_b");
        assert_eq!(file_name(""), "figure");
        let mut taken = HashSet::new();
        assert_eq!(unique(&mut taken, "a"), "a");
        assert_eq!(unique(&mut taken, "a"), "a-2");
    }

    /// A fresh directory under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tessera-plot-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    }

    /// A report as the topk suite writes it: a k sweep with a model and a PyTorch anchor
    /// without one (NaN, serialized as null), a size sweep, and an experiment with no finite
    /// median.
    fn synthetic_report() -> serde_json::Value {
        let mut records = Vec::new();
        for k in [1, 4, 16, 64, 256, 1024] {
            for (name, ms, model) in [
                ("tessera top_k", 1.2 + f64::from(k) / 1000.0, Some(1.0)),
                ("radix select", 1.5 + f64::from(k) / 500.0, Some(1.0)),
                ("pytorch topk", 3.0 + f64::from(k) / 100.0, None),
            ] {
                records.push(serde_json::json!({
                    "experiment": "k_sweep_f32", "implementation": name, "param": format!("k={k}"),
                    "n": 1 << 20, "median_ms": ms, "model_ms": model, "ratio": null,
                }));
            }
        }
        for e in [16, 20, 24] {
            records.push(serde_json::json!({
                "experiment": "size_sweep_k64", "implementation": "tessera top_k",
                "param": "k=64", "n": 1u64 << e, "median_ms": f64::from(1 << e) / 1e6,
                "model_ms": f64::from(1 << e) / 2e6, "ratio": 2.0,
            }));
        }
        records.push(serde_json::json!({
            "experiment": "failed", "implementation": "x", "param": "", "n": 1,
            "median_ms": null, "model_ms": null, "ratio": null,
        }));
        serde_json::json!({
            "device": "Test GPU", "n": 1 << 20, "bandwidth": null, "records": records,
            "torch_missing": null,
        })
    }

    #[test]
    fn a_report_renders_to_svg_files_and_an_index() {
        let dir = scratch("render");
        let json = dir.join("topk.json");
        let text = serde_json::to_string_pretty(&synthetic_report()).expect("serializes");
        std::fs::write(&json, text).expect("writes");
        let out = dir.join("plots");
        run(&PlotArgs {
            json: vec![json],
            out: out.clone(),
        })
        .expect("the report draws");
        let svg = std::fs::read_to_string(out.join("topk-k_sweep_f32.svg")).expect("the figure");
        for text in [
            "tessera top_k",
            "radix select",
            "pytorch topk",
            "\nmodel\n",
            "topk: k_sweep_f32 on Test GPU",
            "median ms",
            "\n1024\n",
        ] {
            assert!(svg.contains(text), "the SVG lacks {text:?}");
        }
        // The model's dashes: short black strokes (the axes are thinner).
        let dashes = svg
            .matches(r##"stroke="#000000" stroke-width="2""##)
            .count();
        assert!(dashes >= 10, "{dashes} dashes");
        let sizes = std::fs::read_to_string(out.join("topk-size_sweep_k64.svg")).expect("sizes");
        assert!(sizes.contains("\n2^20\n") && sizes.contains("\nn\n"));
        assert!(!out.join("topk-failed.svg").exists());
        let index = std::fs::read_to_string(out.join("index.md")).expect("the index");
        assert!(index.contains("(topk-k_sweep_f32.svg)"), "{index}");
        assert!(index.contains("(topk-size_sweep_k64.svg)"), "{index}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn refusal(name: &str, contents: Option<&str>) -> String {
        let dir = scratch(name);
        let json = dir.join("report.json");
        if let Some(c) = contents {
            std::fs::write(&json, c).expect("writes");
        }
        let out = dir.join("plots");
        let err = run(&PlotArgs {
            json: vec![json],
            out: out.clone(),
        })
        .expect_err("refused");
        assert!(!out.exists(), "nothing is written for a refused report");
        let _ = std::fs::remove_dir_all(&dir);
        err.to_string()
    }

    #[test]
    fn bad_reports_are_refused_with_the_file_and_the_fix() {
        let missing = refusal("missing", None);
        assert!(
            missing.contains("report.json") && missing.contains("tessera bench <suite> --json"),
            "{missing}"
        );
        let no_records = refusal("no-records", Some(r#"{"device": "x", "n": 1}"#));
        assert!(
            no_records.contains("report.json") && no_records.contains("no `records` array"),
            "{no_records}"
        );
        let ssb = refusal("array", Some("[1, 2]"));
        assert!(ssb.contains("no `records` array"), "{ssb}");
        let not_json = refusal("not-json", Some("median,ms\n1,2\n"));
        assert!(
            not_json.contains("report.json") && not_json.contains("not JSON"),
            "{not_json}"
        );
        let empty = refusal("empty", Some(""));
        assert!(empty.contains("the file is empty"), "{empty}");
        let no_points = refusal("empty-records", Some(r#"{"records": []}"#));
        assert!(no_points.contains("`records` is empty"), "{no_points}");
        let bad = refusal("bad-record", Some(r#"{"records": [{"experiment": 3}]}"#));
        assert!(bad.contains("records[0]"), "{bad}");
    }
}
