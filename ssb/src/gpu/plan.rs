//! What a query needs on the device: the fact columns its flight reads, where each dimension's
//! table lies ([`TableLayout`]), and its plan ([`QueryPlan`]: predicates as codes, table
//! placement and the group layout the kernels read).
use tessera_kernels::spec::KernelShape;
use tessera_kernels::ssb::plan::{self as P, ColPred, Plan, pred};
use tessera_kernels::ssb::queries as kq;

use crate::data::SsbData;
use crate::query::{Dim, GroupCol, Pred, Query, QueryParams};
use tessera_host::{Error, Result};

/// The lineorder columns the probe kernels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactCol {
    /// lo_orderdate.
    OrderDate,
    /// lo_discount.
    Discount,
    /// lo_quantity.
    Quantity,
    /// lo_extendedprice.
    ExtendedPrice,
    /// lo_suppkey.
    SuppKey,
    /// lo_partkey.
    PartKey,
    /// lo_custkey.
    CustKey,
    /// lo_revenue.
    Revenue,
    /// lo_supplycost.
    SupplyCost,
}

impl FactCol {
    /// All of them (the resident engine's upload).
    pub const ALL: [FactCol; 9] = [
        FactCol::OrderDate,
        FactCol::Discount,
        FactCol::Quantity,
        FactCol::ExtendedPrice,
        FactCol::SuppKey,
        FactCol::PartKey,
        FactCol::CustKey,
        FactCol::Revenue,
        FactCol::SupplyCost,
    ];

    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            FactCol::OrderDate => "lo_orderdate",
            FactCol::Discount => "lo_discount",
            FactCol::Quantity => "lo_quantity",
            FactCol::ExtendedPrice => "lo_extendedprice",
            FactCol::SuppKey => "lo_suppkey",
            FactCol::PartKey => "lo_partkey",
            FactCol::CustKey => "lo_custkey",
            FactCol::Revenue => "lo_revenue",
            FactCol::SupplyCost => "lo_supplycost",
        }
    }

    /// The column's data.
    pub fn of(self, data: &SsbData) -> &[i32] {
        let lo = &data.lineorder;
        match self {
            FactCol::OrderDate => &lo.lo_orderdate,
            FactCol::Discount => &lo.lo_discount,
            FactCol::Quantity => &lo.lo_quantity,
            FactCol::ExtendedPrice => &lo.lo_extendedprice,
            FactCol::SuppKey => &lo.lo_suppkey,
            FactCol::PartKey => &lo.lo_partkey,
            FactCol::CustKey => &lo.lo_custkey,
            FactCol::Revenue => &lo.lo_revenue,
            FactCol::SupplyCost => &lo.lo_supplycost,
        }
    }
}

/// A query flight: which probe kernel runs and which columns it reads, in its argument order,
/// which is also the order it reads them in. Flight 4 lists lo_custkey before lo_partkey; its
/// probe takes them in the plan's join order, so a plan that joins part first
/// ([`QueryPlan::part_first`]) swaps them at the launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flight {
    One,
    Two,
    Three,
    Four,
}

impl Flight {
    pub(crate) fn of(q: Query) -> Flight {
        match q.name().as_bytes()[1] {
            b'1' => Flight::One,
            b'2' => Flight::Two,
            b'3' => Flight::Three,
            _ => Flight::Four,
        }
    }

    /// Where flight 4's keys start in [`Flight::columns`]: lo_custkey, then lo_partkey.
    pub(crate) const FIRST_KEY: usize = 1;

    pub(crate) fn columns(self) -> &'static [FactCol] {
        use FactCol::*;
        match self {
            Flight::One => &[OrderDate, Discount, Quantity, ExtendedPrice],
            Flight::Two => &[SuppKey, PartKey, OrderDate, Revenue],
            Flight::Three => &[SuppKey, CustKey, OrderDate, Revenue],
            Flight::Four => &[SuppKey, CustKey, PartKey, OrderDate, Revenue, SupplyCost],
        }
    }

    /// The flight's probe kernel's name and tile.
    pub(super) fn shape(self) -> KernelShape {
        match self {
            Flight::One => kq::SSB_FLIGHT1.shape(),
            Flight::Two => kq::SSB_FLIGHT2.shape(),
            Flight::Three => kq::SSB_FLIGHT3.shape(),
            Flight::Four => kq::SSB_FLIGHT4.shape(),
        }
    }
}

/// The columns of dimension `d` the builds read: key first, then the predicate columns in
/// the plan's order.
pub(crate) fn dim_columns(data: &SsbData, d: usize) -> Vec<&[i32]> {
    match d {
        P::DATE => {
            let t = &data.date;
            vec![
                &t.d_datekey,
                &t.d_year,
                &t.d_yearmonthnum,
                &t.d_yearmonth,
                &t.d_weeknuminyear,
            ]
        }
        P::PART => {
            let t = &data.part;
            vec![&t.p_partkey, &t.p_mfgr, &t.p_category, &t.p_brand1]
        }
        P::SUPPLIER => {
            let t = &data.supplier;
            vec![&t.s_suppkey, &t.s_region, &t.s_nation, &t.s_city]
        }
        _ => {
            let t = &data.customer;
            vec![&t.c_custkey, &t.c_region, &t.c_nation, &t.c_city]
        }
    }
}

/// Predicates of dimension `d`, one per column after the key.
pub(crate) fn dim_preds(p: &QueryParams, d: usize) -> Vec<Pred> {
    match d {
        P::DATE => vec![p.d_year, p.d_yearmonthnum, p.d_yearmonth, p.d_weeknuminyear],
        P::PART => vec![p.p_mfgr, p.p_category, p.p_brand1],
        P::SUPPLIER => vec![p.s_region, p.s_nation, p.s_city],
        _ => vec![p.c_region, p.c_nation, p.c_city],
    }
}

/// The dimension index of a group column and the position of its column in
/// [`dim_columns`].
pub(crate) fn group_source(g: GroupCol) -> (usize, usize) {
    match g {
        GroupCol::DYear => (P::DATE, 1),
        GroupCol::PCategory => (P::PART, 2),
        GroupCol::PBrand1 => (P::PART, 3),
        GroupCol::SNation => (P::SUPPLIER, 2),
        GroupCol::SCity => (P::SUPPLIER, 3),
        GroupCol::CNation => (P::CUSTOMER, 2),
        GroupCol::CCity => (P::CUSTOMER, 3),
    }
}

fn col_pred(p: Pred) -> ColPred {
    let (kind, a, b) = match p {
        Pred::Any => return ColPred::ANY,
        Pred::Eq(v) => (pred::BETWEEN, v, v),
        Pred::Between(a, b) => (pred::BETWEEN, a, b),
        Pred::Either(a, b) => (pred::EITHER, a, b),
    };
    ColPred { kind, a, b }
}

/// Key range of one dimension's tables and where they lie in the shared buffers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DimLayout {
    pub(super) key_min: u32,
    pub(super) len: u32,
    pub(super) payload: u32,
    pub(super) bits: u32,
    /// Where its code map lies in the bitmap buffer (the supplier's only; see
    /// [`P::DimPlan::codes`]), else [`P::NO_CODES`].
    pub(super) codes: u32,
}

/// The placement of all dimension tables, from the data's key ranges.
#[derive(Clone, Debug)]
pub(crate) struct TableLayout {
    pub(super) dims: [DimLayout; P::DIMS],
    pub(super) payload_slots: usize,
    pub(super) bit_words: usize,
}

impl TableLayout {
    /// Perfect hashing needs dense keys: a key span of at most four times the rows (plus
    /// room for the calendar's gaps in yyyymmdd date keys).
    pub(crate) fn of(data: &SsbData) -> Result<TableLayout> {
        let mut dims = [DimLayout::default(); P::DIMS];
        let (mut payload, mut bits) = (0usize, 0usize);
        for (d, name) in ["date", "part", "supplier", "customer"].iter().enumerate() {
            let keys = dim_columns(data, d)[0];
            let (Some(&lo), Some(&hi)) = (keys.iter().min(), keys.iter().max()) else {
                continue;
            };
            let span = i64::from(hi) - i64::from(lo) + 1;
            if span > 4 * keys.len() as i64 + 65_536 || lo < 0 {
                return Err(Error::invalid(format!(
                    "SSB {name} keys {lo}..={hi} are not dense enough for the GPU engine's \
                     perfect hashing ({} rows)",
                    keys.len()
                )));
            }
            dims[d] = DimLayout {
                key_min: lo as u32,
                len: span as u32,
                payload: payload as u32,
                bits: bits as u32,
                codes: P::NO_CODES,
            };
            payload += span as usize;
            // Keep every table's start 16-byte aligned.
            payload = payload.next_multiple_of(8);
            bits += (span as usize).div_ceil(32).next_multiple_of(4);
            // The supplier is the probes' first test: a query grouping by it reads its code
            // map, which lies right after its bitmap (one clear covers both).
            if d == P::SUPPLIER {
                dims[d].codes = bits as u32;
                bits += P::code_words(span as usize).next_multiple_of(4);
            }
        }
        Ok(TableLayout {
            dims,
            payload_slots: payload.max(8),
            bit_words: bits.max(4),
        })
    }
}

/// A query's plan: what the kernels read, the dimensions it builds, its flight.
pub(crate) struct QueryPlan {
    pub(crate) query: Query,
    pub(crate) plan: Plan,
    pub(crate) builds: Vec<usize>,
    pub(crate) flight: Flight,
    /// Whether the compressed probe queues its survivors across tiles: the first test keeps
    /// less than [`QUEUE_BELOW`] of the rows.
    pub(crate) queued: bool,
}

/// The share of lineorder rows below which a query's first test (the date range, or the
/// supplier filter) is selective enough for the compressed probes that queue their survivors
/// across tiles: their later columns, read by row, cost each survivor three dependent loads
/// per GPU-FOR column, which pays where survivors are few (1 in 25 and fewer) and not where a
/// year (1 in 7) or a region (1 in 5) qualifies (the perf log, 2026-12-05).
pub(crate) const QUEUE_BELOW: f64 = 0.1;

impl QueryPlan {
    /// Whether flight 4 joins part before customer (its filter is the narrower one,
    /// [`model::part_first`]): its probe then takes lo_partkey before lo_custkey.
    pub(crate) fn part_first(&self) -> bool {
        self.plan.fact.part_first != 0
    }

    pub(crate) fn new(q: Query, data: &SsbData, layout: &TableLayout) -> QueryPlan {
        let p = q.params();
        let flight = Flight::of(q);
        let mut w = Plan::default();
        let mut builds = Vec::new();
        // Flight 1 tests lo_orderdate against the qualifying dates' key range (Crystal's
        // join-free plan) when they are contiguous, else it joins the date table.
        let range = (flight == Flight::One)
            .then(|| p.orderdate_range(&data.date))
            .flatten();
        w.fact.orderdate = col_pred(range.map_or(Pred::Any, |(a, b)| Pred::Between(a, b)));
        w.fact.discount = col_pred(p.lo_discount);
        w.fact.quantity = col_pred(p.lo_quantity);
        let date_join = flight == Flight::One && range.is_none();
        w.fact.date_join = date_join as u32;
        w.fact.part_first = (flight == Flight::Four && super::model::part_first(data, q)) as u32;
        for d in 0..P::DIMS {
            let dim = &mut w.dims[d];
            let dim_kind = [Dim::Date, Dim::Part, Dim::Supplier, Dim::Customer][d];
            let joined = if flight == Flight::One {
                d == P::DATE && date_join
            } else {
                p.joins(dim_kind)
            };
            let l = layout.dims[d];
            dim.payload = l.payload;
            dim.key_min = l.key_min;
            dim.bits = l.bits;
            dim.codes = P::NO_CODES;
            if !joined {
                continue;
            }
            builds.push(d);
            dim.len = l.len;
            dim.group_min = u32::MAX;
            let group = p
                .group_by
                .iter()
                .map(|&g| group_source(g))
                .find(|&(gd, _)| gd == d);
            dim.has_group = group.is_some() as u32;
            dim.group_col = group.map_or(0, |(_, c)| c as u32);
            if group.is_some() {
                dim.codes = l.codes;
            }
            for (slot, pr) in dim.preds.iter_mut().zip(dim_preds(&p, d)) {
                *slot = col_pred(pr);
            }
        }
        QueryPlan {
            query: q,
            plan: w,
            builds,
            flight,
            queued: super::model::first_share(data, q) < QUEUE_BELOW,
        }
    }

    /// The group column a build of dimension `d` reads (position in [`dim_columns`]).
    pub(crate) fn group_column(&self, d: usize) -> Option<usize> {
        let dim = &self.plan.dims[d];
        (dim.has_group != 0).then_some(dim.group_col as usize)
    }
}
