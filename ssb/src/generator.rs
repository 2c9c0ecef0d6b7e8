//! The SSB data generator: every table at any scale factor, with the cardinalities, domains
//! and distributions of the specification and of the reference dbgen (see `shared/ssb.md`).
//!
//! Parallel and deterministic: every row draws from its own random stream (seeded by the seed
//! and the row), so the output depends on the seed only, never on the thread count. Columns
//! are generated in chunks straight into the final column vectors: generating needs no more
//! memory than the columns themselves.
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::calendar::{self, DATE_ROWS, DateAttrs};
use super::data::{Customer, Date, Lineorder, Meta, Part, SsbData, Supplier};
use super::dict::{
    COLORS, CONTAINER_WORDS, NATIONS, PRIORITIES, REGIONS, SEGMENTS, SHIP_MODES, TYPE_WORDS,
    brand_name, city_name, dicts, yearmonth_name,
};
use super::rng::{Rng, Stream};
use tessera_host::{Error, MAX_COLUMN_LEN, Result};

/// The largest scale factor: lineorder keys and row counts must fit 4-byte columns.
pub const MAX_SCALE_FACTOR: f64 = 300.0;

/// Generator settings.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Scale factor (> 0, at most [`MAX_SCALE_FACTOR`]).
    pub sf: f64,
    /// Seed: the same seed gives the same data on any machine and thread count.
    pub seed: u64,
    /// Show a progress bar (only when stderr is a terminal).
    pub progress: bool,
}

impl GenConfig {
    /// Scale factor `sf` with the default seed and no progress bar.
    pub fn new(sf: f64) -> GenConfig {
        GenConfig {
            sf,
            seed: DEFAULT_SEED,
            progress: false,
        }
    }
}

/// The default seed.
pub const DEFAULT_SEED: u64 = 19920101;

/// Row counts at a scale factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cardinalities {
    /// 30,000 x SF.
    pub customers: usize,
    /// 2,000 x SF.
    pub suppliers: usize,
    /// 200,000 x floor(1 + log2 SF) for SF >= 1, 200,000 x SF below (as dbgen).
    pub parts: usize,
    /// 1,500,000 x SF orders of 1..=7 lines each (lineorder has about 4x as many rows).
    pub orders: usize,
    /// 2,556 days.
    pub dates: usize,
}

impl Cardinalities {
    /// The row counts at scale factor `sf` (at least one row per table).
    pub fn at(sf: f64) -> Result<Cardinalities> {
        if !(sf > 0.0 && sf <= MAX_SCALE_FACTOR) {
            return Err(Error::invalid(format!(
                "scale factor {sf} is outside (0, {MAX_SCALE_FACTOR}]"
            )));
        }
        let scaled = |base: f64| ((base * sf).floor() as usize).max(1);
        let parts = if sf < 1.0 {
            scaled(200_000.0)
        } else {
            200_000 * (1.0 + sf.log2()).floor() as usize
        };
        Ok(Cardinalities {
            customers: scaled(30_000.0),
            suppliers: scaled(2_000.0),
            parts,
            orders: scaled(1_500_000.0),
            dates: DATE_ROWS,
        })
    }
}

/// A progress bar on stderr, hidden unless `show` and stderr is a terminal.
pub(crate) fn progress_bar(len: u64, label: &str, show: bool) -> ProgressBar {
    if !(show && std::io::stderr().is_terminal()) {
        return ProgressBar::hidden();
    }
    let style =
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {percent:>3}% {elapsed} (eta {eta})")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    let bar = ProgressBar::new(len).with_style(style);
    bar.set_message(label.to_string());
    bar
}

/// Dimension rows per parallel chunk.
const DIM_CHUNK: usize = 1 << 14;
/// Orders per parallel chunk (about 4x as many lineorder rows).
const ORDER_CHUNK: usize = 1 << 14;

/// dbgen's retail price of part `k`, in cents.
pub fn retail_price(partkey: i32) -> i32 {
    90_000 + (partkey / 10) % 20_001 + 100 * (partkey % 1_000)
}

/// dbgen's sparse order keys: 8 dense keys out of every 32.
pub fn order_key(order: usize) -> i32 {
    (((order >> 3) << 5) | (order & 7)) as i32
}

/// Dictionary codes of the values the generator picks, by dbgen's value index.
struct Codes {
    nation: [i32; 25],
    region_of_nation: [i32; 25],
    city: [[i32; 10]; 25],
    segment: [i32; 5],
    priority: [i32; 5],
    shipmode: [i32; 7],
    color: [i32; 92],
    p_type: [i32; 150],
    container: [i32; 40],
    mfgr: [i32; 5],
    category: [i32; 25],
    brand: Vec<i32>,
}

impl Codes {
    fn new() -> Codes {
        let d = dicts();
        let (t1, t2, t3) = TYPE_WORDS;
        let (k1, k2) = CONTAINER_WORDS;
        Codes {
            nation: NATIONS.map(|n| d.nation.known(n.0)),
            region_of_nation: NATIONS.map(|n| d.region.known(REGIONS[n.1])),
            city: NATIONS.map(|n| std::array::from_fn(|i| d.city.known(&city_name(n.0, i as u32)))),
            segment: SEGMENTS.map(|s| d.mktsegment.known(s)),
            priority: PRIORITIES.map(|s| d.orderpriority.known(s)),
            shipmode: SHIP_MODES.map(|s| d.shipmode.known(s)),
            color: COLORS.map(|s| d.color.known(s)),
            p_type: std::array::from_fn(|i| {
                d.p_type
                    .known(&format!("{} {} {}", t1[i / 25], t2[i / 5 % 5], t3[i % 5]))
            }),
            container: std::array::from_fn(|i| {
                d.container.known(&format!("{} {}", k1[i / 8], k2[i % 8]))
            }),
            mfgr: std::array::from_fn(|m| d.mfgr.known(&format!("MFGR#{}", m + 1))),
            category: std::array::from_fn(|i| {
                d.category
                    .known(&format!("MFGR#{}{}", i / 5 + 1, i % 5 + 1))
            }),
            brand: (0..1000u32)
                .map(|i| {
                    d.brand1
                        .known(&brand_name(i / 200 + 1, i / 40 % 5 + 1, i % 40 + 1))
                })
                .collect(),
        }
    }
}

/// Splits `s` at the row `bounds` (`[0, b1, .., len]`) into one slice per chunk.
fn split_at_bounds<'a>(mut s: &'a mut [i32], bounds: &[usize]) -> Vec<&'a mut [i32]> {
    bounds
        .windows(2)
        .map(|w| {
            let (chunk, rest) = std::mem::take(&mut s).split_at_mut(w[1] - w[0]);
            s = rest;
            chunk
        })
        .collect()
}

/// Allocates `N` columns of `bounds.last()` rows and fills them chunk by chunk in parallel:
/// `fill(chunk, slices)` writes rows `bounds[chunk]..bounds[chunk + 1]` of every column.
fn fill_columns<const N: usize>(
    cols: [&mut Vec<i32>; N],
    bounds: &[usize],
    fill: impl Fn(usize, [&mut [i32]; N]) + Sync,
) {
    let rows = bounds.last().copied().unwrap_or(0);
    let mut per_col: Vec<_> = cols
        .into_iter()
        .map(|c| {
            // Zeroed allocations are lazily mapped: no page is touched before its chunk.
            *c = vec![0; rows];
            split_at_bounds(c, bounds).into_iter()
        })
        .collect();
    let chunks: Vec<[&mut [i32]; N]> = (1..bounds.len())
        .map(|_| std::array::from_fn(|j| per_col[j].next().expect("one slice per chunk")))
        .collect();
    chunks
        .into_par_iter()
        .enumerate()
        .for_each(|(i, c)| fill(i, c));
}

/// Chunk bounds of `rows` rows in chunks of `chunk`.
fn even_bounds(rows: usize, chunk: usize) -> Vec<usize> {
    (0..rows.div_ceil(chunk))
        .map(|i| i * chunk)
        .chain(std::iter::once(rows))
        .collect()
}

/// Generates the whole data set.
pub fn generate(cfg: &GenConfig) -> Result<SsbData> {
    let card = Cardinalities::at(cfg.sf)?;
    let codes = Codes::new();
    let mut data = SsbData::empty(Meta {
        scale_factor: Some(cfg.sf),
        seed: Some(cfg.seed),
        source: "generated".into(),
    });
    gen_date(&mut data.date);
    gen_customer(&mut data.customer, card.customers, cfg.seed, &codes);
    gen_supplier(&mut data.supplier, card.suppliers, cfg.seed, &codes);
    gen_part(&mut data.part, card.parts, cfg.seed, &codes);
    gen_lineorder(&mut data.lineorder, &card, cfg, &codes)?;
    Ok(data)
}

/// The date dimension: one row per day from 1992-01-01.
pub fn gen_date(t: &mut Date) {
    let d = dicts();
    *t = Date::default();
    for i in 0..DATE_ROWS {
        let a = DateAttrs::of_day(calendar::first_day() + i as i64);
        t.d_datekey.push(a.datekey);
        t.d_dayofweek.push(d.dayofweek.known(a.weekday_name()));
        t.d_month.push(d.month.known(a.month_name()));
        t.d_year.push(a.year);
        t.d_yearmonthnum.push(a.year * 100 + a.month as i32);
        t.d_yearmonth
            .push(d.yearmonth.known(&yearmonth_name(a.year, a.month)));
        t.d_daynuminweek.push(a.daynuminweek as i32);
        t.d_daynuminmonth.push(a.day as i32);
        t.d_daynuminyear.push(a.daynuminyear as i32);
        t.d_monthnuminyear.push(a.month as i32);
        t.d_weeknuminyear.push(a.weeknuminyear as i32);
        t.d_sellingseason
            .push(d.sellingseason.known(super::dict::SEASONS[a.season]));
        t.d_lastdayinweekfl.push(i32::from(a.lastdayinweek));
        t.d_lastdayinmonthfl.push(i32::from(a.lastdayinmonth));
        t.d_holidayfl.push(i32::from(a.holiday));
        t.d_weekdayfl.push(i32::from(a.weekday));
    }
}

fn gen_customer(t: &mut Customer, n: usize, seed: u64, codes: &Codes) {
    let Customer {
        c_custkey,
        c_city,
        c_nation,
        c_region,
        c_mktsegment,
    } = t;
    let cols = [c_custkey, c_city, c_nation, c_region, c_mktsegment];
    let bounds = even_bounds(n, DIM_CHUNK);
    fill_columns(cols, &bounds, |c, [key, city, nation, region, seg]| {
        for (i, k) in (bounds[c] + 1..=bounds[c + 1]).enumerate() {
            let mut rng = Rng::new(seed, Stream::Customer, k as u64);
            let nat = rng.below(25) as usize;
            key[i] = k as i32;
            nation[i] = codes.nation[nat];
            region[i] = codes.region_of_nation[nat];
            city[i] = codes.city[nat][rng.below(10) as usize];
            seg[i] = codes.segment[rng.below(5) as usize];
        }
    });
}

fn gen_supplier(t: &mut Supplier, n: usize, seed: u64, codes: &Codes) {
    let Supplier {
        s_suppkey,
        s_city,
        s_nation,
        s_region,
    } = t;
    let bounds = even_bounds(n, DIM_CHUNK);
    fill_columns(
        [s_suppkey, s_city, s_nation, s_region],
        &bounds,
        |c, [key, city, nation, region]| {
            for (i, k) in (bounds[c] + 1..=bounds[c + 1]).enumerate() {
                let mut rng = Rng::new(seed, Stream::Supplier, k as u64);
                let nat = rng.below(25) as usize;
                key[i] = k as i32;
                nation[i] = codes.nation[nat];
                region[i] = codes.region_of_nation[nat];
                city[i] = codes.city[nat][rng.below(10) as usize];
            }
        },
    );
}

fn gen_part(t: &mut Part, n: usize, seed: u64, codes: &Codes) {
    let Part {
        p_partkey,
        p_mfgr,
        p_category,
        p_brand1,
        p_color,
        p_type,
        p_size,
        p_container,
    } = t;
    let cols = [
        p_partkey,
        p_mfgr,
        p_category,
        p_brand1,
        p_color,
        p_type,
        p_size,
        p_container,
    ];
    let bounds = even_bounds(n, DIM_CHUNK);
    fill_columns(
        cols,
        &bounds,
        |c, [key, mfgr, category, brand, color, ptype, size, container]| {
            for (i, k) in (bounds[c] + 1..=bounds[c + 1]).enumerate() {
                let mut rng = Rng::new(seed, Stream::Part, k as u64);
                let (m, ca, b) = (rng.below(5), rng.below(5), rng.below(40));
                key[i] = k as i32;
                mfgr[i] = codes.mfgr[m as usize];
                category[i] = codes.category[(m * 5 + ca) as usize];
                brand[i] = codes.brand[((m * 5 + ca) * 40 + b) as usize];
                color[i] = codes.color[rng.below(92) as usize];
                ptype[i] = codes.p_type[rng.below(150) as usize];
                size[i] = rng.between(1, 50);
                container[i] = codes.container[rng.below(40) as usize];
            }
        },
    );
}

/// Lines of order `o` (1-based): the first draw of its stream.
fn order_lines(seed: u64, o: usize) -> usize {
    1 + Rng::new(seed, Stream::Order, o as u64).below(7) as usize
}

fn gen_lineorder(
    t: &mut Lineorder,
    card: &Cardinalities,
    cfg: &GenConfig,
    codes: &Codes,
) -> Result<()> {
    let seed = cfg.seed;
    let chunks = card.orders.div_ceil(ORDER_CHUNK);
    let orders_of = |c: usize| c * ORDER_CHUNK + 1..=((c + 1) * ORDER_CHUNK).min(card.orders);
    // Pass 1: rows per chunk (the line counts alone), so every chunk knows where it writes.
    let rows: Vec<usize> = (0..chunks)
        .into_par_iter()
        .map(|c| orders_of(c).map(|o| order_lines(seed, o)).sum())
        .collect();
    let mut bounds = Vec::with_capacity(chunks + 1);
    bounds.push(0usize);
    for r in &rows {
        bounds.push(bounds.last().copied().unwrap_or(0) + r);
    }
    let total = bounds.last().copied().unwrap_or(0);
    if total > MAX_COLUMN_LEN {
        return Err(Error::invalid(format!(
            "{total} lineorder rows exceed the column limit of {MAX_COLUMN_LEN}"
        )));
    }
    // Order dates are day indexes from 1992-01-01; commit dates reach 90 days further.
    let order_days = calendar::order_days();
    let day_keys: Vec<i32> = (0..order_days as i64 + 91)
        .map(|i| DateAttrs::of_day(calendar::first_day() + i).datekey)
        .collect();
    let (customers, parts, suppliers) = (
        card.customers as i32,
        card.parts as u32,
        card.suppliers as u32,
    );
    let bar = progress_bar(card.orders as u64, "lineorder", cfg.progress);
    let Lineorder {
        lo_orderkey,
        lo_linenumber,
        lo_custkey,
        lo_partkey,
        lo_suppkey,
        lo_orderdate,
        lo_orderpriority,
        lo_shippriority,
        lo_quantity,
        lo_extendedprice,
        lo_ordtotalprice,
        lo_discount,
        lo_revenue,
        lo_supplycost,
        lo_tax,
        lo_commitdate,
        lo_shipmode,
    } = t;
    let cols = [
        lo_orderkey,
        lo_linenumber,
        lo_custkey,
        lo_partkey,
        lo_suppkey,
        lo_orderdate,
        lo_orderpriority,
        lo_shippriority,
        lo_quantity,
        lo_extendedprice,
        lo_ordtotalprice,
        lo_discount,
        lo_revenue,
        lo_supplycost,
        lo_tax,
        lo_commitdate,
        lo_shipmode,
    ];
    fill_columns(cols, &bounds, |c, cols| {
        let [
            okey,
            line,
            cust,
            part,
            supp,
            odate,
            prio,
            shipprio,
            qty,
            price,
            total,
            disc,
            rev,
            cost,
            tax,
            cdate,
            mode,
        ] = cols;
        let mut r = 0;
        for o in orders_of(c) {
            let mut rng = Rng::new(seed, Stream::Order, o as u64);
            let lines = 1 + rng.below(7) as usize;
            let day = rng.below(order_days) as usize;
            // Every third customer places no orders: dbgen moves such a key to a neighbour.
            let mut ck = rng.between(1, customers);
            let mut delta = 1;
            while ck % 3 == 0 {
                ck = (ck + delta).min(customers);
                delta = -delta;
            }
            let priority = codes.priority[rng.below(5) as usize];
            let mut order_total = 0i64;
            for l in 0..lines {
                let i = r + l;
                let pk = 1 + rng.below(parts) as i32;
                let q = rng.between(1, 50);
                let d = rng.between(0, 10);
                let tx = rng.between(0, 8);
                let rp = retail_price(pk);
                let ext = rp * q;
                let revenue = (i64::from(ext) * i64::from(100 - d) / 100) as i32;
                okey[i] = order_key(o);
                line[i] = l as i32 + 1;
                cust[i] = ck;
                part[i] = pk;
                supp[i] = 1 + rng.below(suppliers) as i32;
                odate[i] = day_keys[day];
                prio[i] = priority;
                shipprio[i] = 0;
                qty[i] = q;
                price[i] = ext;
                disc[i] = d;
                rev[i] = revenue;
                cost[i] = 6 * rp / 10;
                tax[i] = tx;
                cdate[i] = day_keys[day + rng.between(30, 90) as usize];
                mode[i] = codes.shipmode[rng.below(7) as usize];
                order_total += i64::from(revenue) * i64::from(100 + tx) / 100;
            }
            total[r..r + lines].fill(order_total as i32);
            r += lines;
        }
        debug_assert_eq!(r, okey.len());
        bar.inc(orders_of(c).count() as u64);
    });
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_data_on_any_thread_count_and_other_data_for_another_seed() {
        // SF 0.05: 75,000 orders in 5 chunks.
        let with_threads = |n: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
                .install(|| generate(&GenConfig::new(0.05)).unwrap())
        };
        let one = with_threads(1);
        assert_eq!(one, with_threads(3));
        assert_eq!(one, with_threads(8));
        let other = generate(&GenConfig {
            seed: 7,
            ..GenConfig::new(0.05)
        })
        .unwrap();
        assert_ne!(other.lineorder, one.lineorder);
        assert_ne!(other.part, one.part);
        assert_eq!(other.date, one.date);
    }

    #[test]
    fn dbgen_formulas() {
        // dbgen's first lineorder row at SF 1: part 155190 costs 1245.19.
        assert_eq!(retail_price(155_190), 124_519);
        assert_eq!(6 * retail_price(155_190) / 10, 74_711);
        let keys: Vec<i32> = (1..=10).map(order_key).collect();
        assert_eq!(keys, [1, 2, 3, 4, 5, 6, 7, 32, 33, 34]);
    }
}
