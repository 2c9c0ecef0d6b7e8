//! The TPC-H `lineitem` columns that seed 004 aggregates, generated in parallel following the
//! TPC-H specification's domains (clause 4.2.3), deterministic for a seed whatever the thread
//! count:
//!
//! * orders in key order, each with 1 to 7 lines (uniform); order keys sparse as dbgen makes
//!   them (the first 8 of every 32 keys), so `l_orderkey` is sorted with runs of 1 to 7;
//! * `l_linenumber` 1 ..= the order's lines; `l_quantity` uniform in 1 ..= 50;
//! * `l_partkey` uniform in 1 ..= SF * 200 000, and `l_extendedprice` (in cents) the quantity
//!   times the part's retail price `(90000 + (partkey / 10) mod 20001 + 100 (partkey mod
//!   1000)) / 100`;
//! * `o_orderdate` uniform from 1992-01-01 to 151 days before 1998-12-31; `l_shipdate` the
//!   order date plus 1 ..= 121 days, `l_receiptdate` the ship date plus 1 ..= 30;
//!   `l_returnflag` R or A (even odds) when received by 1995-06-17, else N; `l_linestatus` O
//!   when shipped after 1995-06-17, else F.
//!
//! Dates are days since 1992-01-01. The scale factor follows from the rows asked for (about 6
//! million lines per unit).
use rand::{Rng, SeedableRng, rngs::StdRng};
use rayon::prelude::*;

/// The `lineitem` columns of seed 004's aggregations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lineitem {
    /// `l_orderkey`: sorted, runs of 1 to 7.
    pub orderkey: Vec<u32>,
    /// `l_linenumber`: 1 ..= 7.
    pub linenumber: Vec<u32>,
    /// `l_partkey`: 1 ..= SF * 200 000.
    pub partkey: Vec<u32>,
    /// `l_quantity`: 1 ..= 50.
    pub quantity: Vec<u32>,
    /// `l_extendedprice` in cents.
    pub extendedprice: Vec<u32>,
    /// `l_shipdate`, days since 1992-01-01.
    pub shipdate: Vec<u32>,
    /// `l_returnflag` and `l_linestatus` as one code: `2 * flag + status`, flag A = 0, N = 1,
    /// R = 2, status F = 0, O = 1 (TPC-H Q1's groups, in its order).
    pub flag_status: Vec<u32>,
}

/// Lines per scale factor unit (1.5 million orders of four lines on average).
pub const LINES_PER_SF: f64 = 6_000_000.0;

/// Days from 1992-01-01 to 1998-12-31 (the last order date plus 151).
const END_DAY: u32 = 2556;
/// Days from 1992-01-01 to 1995-06-17 (the specification's CURRENTDATE).
const CURRENT_DAY: u32 = 1263;

/// Orders per parallel chunk (each with its own seeded generator).
const CHUNK: usize = 1 << 16;

/// The sparse order key of the `i`-th order (from 1): dbgen keeps the first 8 of every 32.
pub fn order_key(i: u64) -> u64 {
    ((i >> 3) << 5) | (i & 7)
}

/// A part's retail price in cents.
pub fn retail_cents(partkey: u32) -> u32 {
    90_000 + (partkey / 10) % 20_001 + 100 * (partkey % 1000)
}

impl Lineitem {
    /// The scale factor of `n` lines (at least one order's worth of parts: 1 / 200 000).
    pub fn scale_factor(n: usize) -> f64 {
        (n as f64 / LINES_PER_SF).max(1.0 / 200_000.0)
    }

    /// `n` lines for `seed`.
    pub fn generate(n: usize, seed: u64) -> Lineitem {
        let parts = (Self::scale_factor(n) * 200_000.0).ceil() as u32;
        // Orders enough for `n` lines on average plus a margin; more chunks run if short.
        let mut chunks: Vec<Lineitem> = Vec::new();
        let mut lines = 0;
        while lines < n {
            let orders_left = (n - lines) / 4 + (n - lines) / 16 + 8;
            let first = chunks.len();
            let more: Vec<Lineitem> = (first..first + orders_left.div_ceil(CHUNK))
                .into_par_iter()
                .map(|c| Self::chunk(c, parts, seed))
                .collect();
            lines += more.iter().map(|c| c.orderkey.len()).sum::<usize>();
            chunks.extend(more);
        }
        let cat = |f: fn(&Lineitem) -> &Vec<u32>| -> Vec<u32> {
            let mut v: Vec<u32> = chunks
                .par_iter()
                .flat_map_iter(|c| f(c).iter().copied())
                .collect();
            v.truncate(n);
            v
        };
        Lineitem {
            orderkey: cat(|c| &c.orderkey),
            linenumber: cat(|c| &c.linenumber),
            partkey: cat(|c| &c.partkey),
            quantity: cat(|c| &c.quantity),
            extendedprice: cat(|c| &c.extendedprice),
            shipdate: cat(|c| &c.shipdate),
            flag_status: cat(|c| &c.flag_status),
        }
    }

    /// The lines of orders `c * CHUNK + 1 ..= (c + 1) * CHUNK` among `parts` parts.
    fn chunk(c: usize, parts: u32, seed: u64) -> Lineitem {
        let mut rng = StdRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut out = Lineitem::default();
        for o in 0..CHUNK as u64 {
            let key = order_key((c * CHUNK) as u64 + o + 1) as u32;
            let orderdate = rng.random_range(0..=END_DAY - 151);
            for line in 1..=rng.random_range(1..=7u32) {
                let partkey = rng.random_range(1..=parts);
                let quantity = rng.random_range(1..=50u32);
                let ship = orderdate + rng.random_range(1..=121u32);
                let receipt = ship + rng.random_range(1..=30u32);
                let flag = if receipt <= CURRENT_DAY {
                    if rng.random_bool(0.5) { 2 } else { 0 }
                } else {
                    1
                };
                let status = u32::from(ship > CURRENT_DAY);
                out.orderkey.push(key);
                out.linenumber.push(line);
                out.partkey.push(partkey);
                out.quantity.push(quantity);
                out.extendedprice.push(quantity * retail_cents(partkey));
                out.shipdate.push(ship);
                out.flag_status.push(2 * flag + status);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_specification_domains() {
        for n in [0, 1, 7, 1000, 200_003] {
            let l = Lineitem::generate(n, 4);
            for c in [
                &l.orderkey,
                &l.linenumber,
                &l.partkey,
                &l.quantity,
                &l.extendedprice,
                &l.shipdate,
                &l.flag_status,
            ] {
                assert_eq!(c.len(), n);
            }
            let parts = (Lineitem::scale_factor(n) * 200_000.0).ceil() as u32;
            for i in 0..n {
                // Keys sorted; a new order starts at line 1, an order's lines count up.
                if i > 0 {
                    let same = l.orderkey[i] == l.orderkey[i - 1];
                    assert!(l.orderkey[i] >= l.orderkey[i - 1]);
                    let want = if same { l.linenumber[i - 1] + 1 } else { 1 };
                    assert_eq!(l.linenumber[i], want);
                }
                assert!(l.orderkey[i] % 32 < 8 && l.orderkey[i] > 0);
                assert!((1..=7).contains(&l.linenumber[i]));
                assert!((1..=parts).contains(&l.partkey[i]));
                assert!((1..=50).contains(&l.quantity[i]));
                assert_eq!(
                    l.extendedprice[i],
                    l.quantity[i] * retail_cents(l.partkey[i])
                );
                assert!(l.shipdate[i] >= 1 && l.shipdate[i] <= END_DAY - 151 + 121);
                let (flag, status) = (l.flag_status[i] / 2, l.flag_status[i] % 2);
                assert!(flag <= 2);
                assert_eq!(status == 1, l.shipdate[i] > CURRENT_DAY);
                // Received after the current date: N; so shipped after it: N too.
                if status == 1 {
                    assert_eq!(flag, 1);
                }
            }
            if n == 200_003 {
                // Both flags of the returned lines occur, and four-ish lines an order.
                assert!(l.flag_status.contains(&0) && l.flag_status.contains(&4));
                let orders = 1 + l.orderkey.windows(2).filter(|w| w[0] != w[1]).count();
                let per = n as f64 / orders as f64;
                assert!((3.8..4.2).contains(&per), "{per} lines an order");
            }
        }
        // Deterministic for the seed.
        assert_eq!(Lineitem::generate(5000, 9), Lineitem::generate(5000, 9));
        assert_eq!(order_key(1), 1);
        assert_eq!(order_key(8), 32);
        assert_eq!(retail_cents(1), 90_100);
    }
}
