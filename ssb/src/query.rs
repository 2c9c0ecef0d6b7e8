//! The 13 SSB queries: their names, their parameters (the one table of query constants that
//! every engine reads, already encoded as dictionary codes) and their results.
use std::fmt;
use std::str::FromStr;

use super::data::{Customer, Date, Part, Supplier};
use super::dict::{Dict, dicts};
use tessera_host::{Error, Result};

/// One of the 13 queries of the Star Schema Benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// Flight 1: revenue of discounts in 1993.
    Q1_1,
    /// Flight 1: in January 1994.
    Q1_2,
    /// Flight 1: in week 6 of 1994.
    Q1_3,
    /// Flight 2: revenue by year and brand, category MFGR#12, suppliers in AMERICA.
    Q2_1,
    /// Flight 2: brands MFGR#2221..MFGR#2228, suppliers in ASIA.
    Q2_2,
    /// Flight 2: brand MFGR#2221, suppliers in EUROPE.
    Q2_3,
    /// Flight 3: revenue by customer and supplier nation and year, ASIA, 1992-1997.
    Q3_1,
    /// Flight 3: by city, UNITED STATES.
    Q3_2,
    /// Flight 3: cities UNITED KI1 and UNITED KI5.
    Q3_3,
    /// Flight 3: those cities in December 1997.
    Q3_4,
    /// Flight 4: profit by year and customer nation, AMERICA, MFGR#1/MFGR#2.
    Q4_1,
    /// Flight 4: by year, supplier nation and category, 1997-1998.
    Q4_2,
    /// Flight 4: by year, supplier city and brand, UNITED STATES, MFGR#14.
    Q4_3,
}

impl Query {
    /// All 13, in the specification's order.
    pub const ALL: [Query; 13] = [
        Query::Q1_1,
        Query::Q1_2,
        Query::Q1_3,
        Query::Q2_1,
        Query::Q2_2,
        Query::Q2_3,
        Query::Q3_1,
        Query::Q3_2,
        Query::Q3_3,
        Query::Q3_4,
        Query::Q4_1,
        Query::Q4_2,
        Query::Q4_3,
    ];

    /// `q1.1` .. `q4.3`.
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 13] = [
            "q1.1", "q1.2", "q1.3", "q2.1", "q2.2", "q2.3", "q3.1", "q3.2", "q3.3", "q3.4", "q4.1",
            "q4.2", "q4.3",
        ];
        NAMES[self as usize]
    }

    /// `all` or a comma-separated list of query names.
    pub fn parse_list(s: &str) -> Result<Vec<Query>> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(Query::ALL.to_vec());
        }
        s.split(',').map(|q| q.trim().parse()).collect()
    }

    /// The query's constants and shape.
    pub fn params(self) -> QueryParams {
        QueryParams::of(self)
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Query {
    type Err = Error;
    fn from_str(s: &str) -> Result<Query> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix('q').unwrap_or(&t);
        Query::ALL
            .into_iter()
            .find(|q| &q.name()[1..] == t)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown query '{s}': expected all or one of q1.1, q1.2, q1.3, q2.1, q2.2, \
                     q2.3, q3.1, q3.2, q3.3, q3.4, q4.1, q4.2, q4.3"
                ))
            })
    }
}

/// A predicate on one 4-byte column (a dictionary code or an integer attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pred {
    /// No restriction.
    Any,
    /// `= v`.
    Eq(i32),
    /// `BETWEEN lo AND hi` (inclusive).
    Between(i32, i32),
    /// `IN (a, b)`.
    Either(i32, i32),
}

impl Pred {
    /// Whether `v` satisfies the predicate.
    #[inline]
    pub fn matches(self, v: i32) -> bool {
        match self {
            Pred::Any => true,
            Pred::Eq(x) => v == x,
            Pred::Between(lo, hi) => lo <= v && v <= hi,
            Pred::Either(a, b) => v == a || v == b,
        }
    }

    /// Whether it restricts nothing.
    pub fn is_any(self) -> bool {
        self == Pred::Any
    }
}

/// A dimension table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// `date`, joined on lo_orderdate = d_datekey.
    Date,
    /// `part`, joined on lo_partkey = p_partkey.
    Part,
    /// `supplier`, joined on lo_suppkey = s_suppkey.
    Supplier,
    /// `customer`, joined on lo_custkey = c_custkey.
    Customer,
}

/// A group-by column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupCol {
    /// d_year (an integer, not a code).
    DYear,
    /// p_brand1.
    PBrand1,
    /// p_category.
    PCategory,
    /// c_nation.
    CNation,
    /// s_nation.
    SNation,
    /// c_city.
    CCity,
    /// s_city.
    SCity,
}

impl GroupCol {
    /// Column name as in the specification.
    pub fn name(self) -> &'static str {
        match self {
            GroupCol::DYear => "d_year",
            GroupCol::PBrand1 => "p_brand1",
            GroupCol::PCategory => "p_category",
            GroupCol::CNation => "c_nation",
            GroupCol::SNation => "s_nation",
            GroupCol::CCity => "c_city",
            GroupCol::SCity => "s_city",
        }
    }

    /// The dimension it comes from.
    pub fn dim(self) -> Dim {
        match self {
            GroupCol::DYear => Dim::Date,
            GroupCol::PBrand1 | GroupCol::PCategory => Dim::Part,
            GroupCol::CNation | GroupCol::CCity => Dim::Customer,
            GroupCol::SNation | GroupCol::SCity => Dim::Supplier,
        }
    }

    /// The dictionary of its values (`None` for d_year).
    pub fn dict(self) -> Option<&'static Dict> {
        let d = dicts();
        match self {
            GroupCol::DYear => None,
            GroupCol::PBrand1 => Some(&d.brand1),
            GroupCol::PCategory => Some(&d.category),
            GroupCol::CNation | GroupCol::SNation => Some(&d.nation),
            GroupCol::CCity | GroupCol::SCity => Some(&d.city),
        }
    }

    /// A value as the query prints it.
    pub fn decode(self, v: i32) -> String {
        self.dict().map_or_else(|| v.to_string(), |d| d.decode(v))
    }
}

/// The aggregate, a sum over the qualifying lineorder rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    /// `sum(lo_extendedprice * lo_discount) as revenue` (flight 1).
    DiscountedPrice,
    /// `sum(lo_revenue)` (flights 2 and 3).
    Revenue,
    /// `sum(lo_revenue - lo_supplycost) as profit` (flight 4).
    Profit,
}

impl Agg {
    /// Output column name.
    pub fn name(self) -> &'static str {
        match self {
            Agg::DiscountedPrice | Agg::Revenue => "revenue",
            Agg::Profit => "profit",
        }
    }

    /// The summed value of one row.
    #[inline]
    pub fn value(self, extendedprice: i32, discount: i32, revenue: i32, supplycost: i32) -> i64 {
        match self {
            Agg::DiscountedPrice => i64::from(extendedprice) * i64::from(discount),
            Agg::Revenue => i64::from(revenue),
            Agg::Profit => i64::from(revenue) - i64::from(supplycost),
        }
    }
}

/// The specification's ORDER BY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// By the group columns, in order, ascending.
    Groups,
    /// `d_year asc, revenue desc` (flight 3; ties broken by the other group columns, so the
    /// order is total).
    YearThenAggDesc,
}

/// Everything that defines one query: its predicates (as dictionary codes or integers), its
/// group-by columns, aggregate and order. Engines read only this; a predicate left
/// [`Pred::Any`] restricts nothing, and a dimension is joined when one of its predicates or
/// group columns is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryParams {
    /// Which query.
    pub query: Query,
    /// Fact-table filter (flight 1).
    pub lo_discount: Pred,
    /// Fact-table filter (flight 1).
    pub lo_quantity: Pred,
    /// Date filters.
    pub d_year: Pred,
    /// `yyyymm`.
    pub d_yearmonthnum: Pred,
    /// Code of `dicts().yearmonth`.
    pub d_yearmonth: Pred,
    /// dbgen's week number.
    pub d_weeknuminyear: Pred,
    /// Code of `dicts().mfgr`.
    pub p_mfgr: Pred,
    /// Code of `dicts().category`.
    pub p_category: Pred,
    /// Code of `dicts().brand1`.
    pub p_brand1: Pred,
    /// Code of `dicts().region`.
    pub s_region: Pred,
    /// Code of `dicts().nation`.
    pub s_nation: Pred,
    /// Code of `dicts().city`.
    pub s_city: Pred,
    /// Code of `dicts().region`.
    pub c_region: Pred,
    /// Code of `dicts().nation`.
    pub c_nation: Pred,
    /// Code of `dicts().city`.
    pub c_city: Pred,
    /// GROUP BY columns, in the order the result shows them (aggregate last).
    pub group_by: &'static [GroupCol],
    /// The aggregate.
    pub agg: Agg,
    /// ORDER BY.
    pub order: Order,
}

impl QueryParams {
    /// The parameters of `q`, from the specification.
    ///
    /// Every literal is the SSB specification's (P. O'Neil, E. O'Neil, X. Chen, *Star Schema
    /// Benchmark*, Revision 3, 2009, section 3) and Crystal's (`src/ssb/q*.cu`, whose figures
    /// the thesis reports): q1.1 `d_year = 1993`, discount 1..3, quantity < 25; q1.2
    /// `d_yearmonthnum = 199401`, discount 4..6, quantity 26..35; q1.3 week 6 of 1994,
    /// discount 5..7, quantity 26..35; q2.1 `p_category = 'MFGR#12'`, AMERICA; q2.2 brands
    /// `'MFGR#2221'..'MFGR#2228'`, ASIA; q2.3 `p_brand1 = 'MFGR#2221'`, EUROPE; flight 3 years
    /// 1992..1997, q3.1 ASIA, q3.2 UNITED STATES, q3.3 and q3.4 cities `'UNITED KI1'` and
    /// `'UNITED KI5'`, q3.4 `d_yearmonth = 'Dec1997'`; flight 4 AMERICA and `p_mfgr` MFGR#1 or
    /// MFGR#2, q4.2 and q4.3 years 1997..1998, q4.3 `s_nation = 'UNITED STATES'` and
    /// `p_category = 'MFGR#14'`. Some later suites (ClickHouse's SSB among them) filter q2.3
    /// on `'MFGR#2239'` instead; tessera follows the specification, so its q2.3 answers
    /// compare with Crystal's and the thesis'.
    pub fn of(q: Query) -> QueryParams {
        use GroupCol::*;
        let d = dicts();
        let base = QueryParams {
            query: q,
            lo_discount: Pred::Any,
            lo_quantity: Pred::Any,
            d_year: Pred::Any,
            d_yearmonthnum: Pred::Any,
            d_yearmonth: Pred::Any,
            d_weeknuminyear: Pred::Any,
            p_mfgr: Pred::Any,
            p_category: Pred::Any,
            p_brand1: Pred::Any,
            s_region: Pred::Any,
            s_nation: Pred::Any,
            s_city: Pred::Any,
            c_region: Pred::Any,
            c_nation: Pred::Any,
            c_city: Pred::Any,
            group_by: &[],
            agg: Agg::Revenue,
            order: Order::Groups,
        };
        let region = |s| Pred::Eq(d.region.known(s));
        let nation = |s| Pred::Eq(d.nation.known(s));
        let cities = Pred::Either(d.city.known("UNITED KI1"), d.city.known("UNITED KI5"));
        let flight1 = QueryParams {
            agg: Agg::DiscountedPrice,
            ..base
        };
        let flight2 = QueryParams {
            group_by: &[DYear, PBrand1],
            ..base
        };
        let flight3 = QueryParams {
            d_year: Pred::Between(1992, 1997),
            order: Order::YearThenAggDesc,
            group_by: &[CCity, SCity, DYear],
            ..base
        };
        let flight4 = QueryParams {
            agg: Agg::Profit,
            c_region: region("AMERICA"),
            s_region: region("AMERICA"),
            p_mfgr: Pred::Between(d.mfgr.known("MFGR#1"), d.mfgr.known("MFGR#2")),
            ..base
        };
        match q {
            Query::Q1_1 => QueryParams {
                d_year: Pred::Eq(1993),
                lo_discount: Pred::Between(1, 3),
                lo_quantity: Pred::Between(i32::MIN, 24),
                ..flight1
            },
            Query::Q1_2 => QueryParams {
                d_yearmonthnum: Pred::Eq(199401),
                lo_discount: Pred::Between(4, 6),
                lo_quantity: Pred::Between(26, 35),
                ..flight1
            },
            Query::Q1_3 => QueryParams {
                d_weeknuminyear: Pred::Eq(6),
                d_year: Pred::Eq(1994),
                lo_discount: Pred::Between(5, 7),
                lo_quantity: Pred::Between(26, 35),
                ..flight1
            },
            Query::Q2_1 => QueryParams {
                p_category: Pred::Eq(d.category.known("MFGR#12")),
                s_region: region("AMERICA"),
                ..flight2
            },
            Query::Q2_2 => QueryParams {
                p_brand1: Pred::Between(d.brand1.known("MFGR#2221"), d.brand1.known("MFGR#2228")),
                s_region: region("ASIA"),
                ..flight2
            },
            Query::Q2_3 => QueryParams {
                p_brand1: Pred::Eq(d.brand1.known("MFGR#2221")),
                s_region: region("EUROPE"),
                ..flight2
            },
            Query::Q3_1 => QueryParams {
                c_region: region("ASIA"),
                s_region: region("ASIA"),
                group_by: &[CNation, SNation, DYear],
                ..flight3
            },
            Query::Q3_2 => QueryParams {
                c_nation: nation("UNITED STATES"),
                s_nation: nation("UNITED STATES"),
                ..flight3
            },
            Query::Q3_3 => QueryParams {
                c_city: cities,
                s_city: cities,
                ..flight3
            },
            Query::Q3_4 => QueryParams {
                c_city: cities,
                s_city: cities,
                d_yearmonth: Pred::Eq(d.yearmonth.known("Dec1997")),
                d_year: Pred::Any,
                ..flight3
            },
            Query::Q4_1 => QueryParams {
                group_by: &[DYear, CNation],
                ..flight4
            },
            Query::Q4_2 => QueryParams {
                d_year: Pred::Between(1997, 1998),
                group_by: &[DYear, SNation, PCategory],
                ..flight4
            },
            Query::Q4_3 => QueryParams {
                d_year: Pred::Between(1997, 1998),
                s_region: Pred::Any,
                s_nation: nation("UNITED STATES"),
                p_mfgr: Pred::Any,
                p_category: Pred::Eq(d.category.known("MFGR#14")),
                group_by: &[DYear, SCity, PBrand1],
                ..flight4
            },
        }
    }

    /// Whether the query joins `dim` (filters on it or groups by one of its columns).
    pub fn joins(&self, dim: Dim) -> bool {
        let preds: &[Pred] = match dim {
            Dim::Date => &[
                self.d_year,
                self.d_yearmonthnum,
                self.d_yearmonth,
                self.d_weeknuminyear,
            ],
            Dim::Part => &[self.p_mfgr, self.p_category, self.p_brand1],
            Dim::Supplier => &[self.s_region, self.s_nation, self.s_city],
            Dim::Customer => &[self.c_region, self.c_nation, self.c_city],
        };
        preds.iter().any(|p| !p.is_any()) || self.group_by.iter().any(|g| g.dim() == dim)
    }

    /// Whether date row `i` qualifies.
    pub fn date_matches(&self, t: &Date, i: usize) -> bool {
        self.d_year.matches(t.d_year[i])
            && self.d_yearmonthnum.matches(t.d_yearmonthnum[i])
            && self.d_yearmonth.matches(t.d_yearmonth[i])
            && self.d_weeknuminyear.matches(t.d_weeknuminyear[i])
    }

    /// Whether part row `i` qualifies.
    pub fn part_matches(&self, t: &Part, i: usize) -> bool {
        self.p_mfgr.matches(t.p_mfgr[i])
            && self.p_category.matches(t.p_category[i])
            && self.p_brand1.matches(t.p_brand1[i])
    }

    /// Whether supplier row `i` qualifies.
    pub fn supplier_matches(&self, t: &Supplier, i: usize) -> bool {
        self.s_region.matches(t.s_region[i])
            && self.s_nation.matches(t.s_nation[i])
            && self.s_city.matches(t.s_city[i])
    }

    /// Whether customer row `i` qualifies.
    pub fn customer_matches(&self, t: &Customer, i: usize) -> bool {
        self.c_region.matches(t.c_region[i])
            && self.c_nation.matches(t.c_nation[i])
            && self.c_city.matches(t.c_city[i])
    }

    /// Flight 1's date predicate as a range of lo_orderdate (as Crystal applies it, without
    /// a join): `Some((lo, hi))` when the qualifying date keys are exactly the date table's
    /// keys in `lo..=hi`; `None` when no date qualifies or they are not contiguous.
    pub fn orderdate_range(&self, t: &Date) -> Option<(i32, i32)> {
        let keys = &t.d_datekey;
        let hits: Vec<usize> = (0..keys.len())
            .filter(|&i| self.date_matches(t, i))
            .collect();
        let lo = hits.iter().map(|&i| keys[i]).min()?;
        let hi = hits.iter().map(|&i| keys[i]).max()?;
        let inside = keys.iter().filter(|&&k| lo <= k && k <= hi).count();
        (inside == hits.len()).then_some((lo, hi))
    }
}

/// One result row: the group values (codes, or the year) and the aggregate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Row {
    /// Values of [`QueryResult::group_by`], in that order.
    pub groups: Vec<i32>,
    /// The sum.
    pub value: i64,
}

/// A query's result, rows in the specification's ORDER BY order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryResult {
    /// Which query.
    pub query: Query,
    /// Group columns.
    pub group_by: Vec<GroupCol>,
    /// The aggregate.
    pub agg: Agg,
    /// Rows, ordered. Flight 1 has one row, or none when no lineorder row qualifies (where
    /// SQL's SUM would give one NULL).
    pub rows: Vec<Row>,
}

impl QueryResult {
    /// A result from unordered rows: sorts them as the specification says.
    pub fn new(query: Query, rows: Vec<Row>) -> QueryResult {
        let p = query.params();
        let mut r = QueryResult {
            query,
            group_by: p.group_by.to_vec(),
            agg: p.agg,
            rows,
        };
        r.sort(p.order);
        r
    }

    /// Sorts the rows. Codes sort like their strings (the dictionaries are sorted), so
    /// sorting by codes is sorting by the printed values.
    fn sort(&mut self, order: Order) {
        let year = self.group_by.iter().position(|&g| g == GroupCol::DYear);
        self.rows.sort_by(|a, b| match (order, year) {
            (Order::YearThenAggDesc, Some(y)) => a.groups[y]
                .cmp(&b.groups[y])
                .then(b.value.cmp(&a.value))
                .then_with(|| a.groups.cmp(&b.groups)),
            _ => a.groups.cmp(&b.groups),
        });
    }

    /// Column names, aggregate last.
    pub fn header(&self) -> Vec<&'static str> {
        self.group_by
            .iter()
            .map(|g| g.name())
            .chain(std::iter::once(self.agg.name()))
            .collect()
    }

    /// Rows with decoded strings, aggregate last.
    pub fn decoded(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                self.group_by
                    .iter()
                    .zip(&r.groups)
                    .map(|(g, &v)| g.decode(v))
                    .chain(std::iter::once(r.value.to_string()))
                    .collect()
            })
            .collect()
    }

    /// One line per row, values separated by `|` (the form the DuckDB cross-check compares).
    pub fn to_lines(&self) -> Vec<String> {
        self.decoded().into_iter().map(|r| r.join("|")).collect()
    }

    /// Each column's type, aggregate last, by its Arrow name: `int32` for `d_year`, `utf8`
    /// for the dictionary-coded columns, `int64` for the sum.
    pub fn column_types(&self) -> Vec<&'static str> {
        self.group_by
            .iter()
            .map(|g| if g.dict().is_some() { "utf8" } else { "int32" })
            .chain(std::iter::once("int64"))
            .collect()
    }

    /// The result as JSON: `{"query", "columns": [{"name", "type"}], "rows": [[...]]}`, each
    /// row's values as numbers or strings by their column's type.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Value, json};
        let columns: Vec<Value> = self
            .header()
            .iter()
            .zip(self.column_types())
            .map(|(n, t)| json!({ "name": n, "type": t }))
            .collect();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let groups = self.group_by.iter().zip(&r.groups).map(|(g, &v)| {
                    g.dict()
                        .map_or_else(|| json!(v), |d| Value::String(d.decode(v)))
                });
                Value::Array(groups.chain(std::iter::once(json!(r.value))).collect())
            })
            .collect();
        json!({ "query": self.query.name(), "columns": columns, "rows": rows })
    }

    /// The result as CSV: a header of the column names, then one line per row (fields quoted
    /// as RFC 4180 says where they hold a comma, a quote or a line break; lines end in `\n`).
    pub fn to_csv(&self) -> String {
        let field = |v: &str| {
            if v.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", v.replace('"', "\"\""))
            } else {
                v.to_string()
            }
        };
        let line = |cells: Vec<String>| {
            cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",") + "\n"
        };
        let header = line(self.header().iter().map(|h| h.to_string()).collect());
        header + &self.decoded().into_iter().map(line).collect::<String>()
    }
}

impl fmt::Display for QueryResult {
    /// An aligned table without borders (numbers right-aligned), with the row count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use comfy_table::{CellAlignment, Table, presets::NOTHING};
        let header = self.header();
        let mut table = Table::new();
        table.load_style(NOTHING).set_header(header.iter().copied());
        for r in self.decoded() {
            table.add_row(r);
        }
        let numeric = |c: usize| c + 1 == header.len() || self.group_by[c] == GroupCol::DYear;
        for (c, col) in table.column_iter_mut().enumerate() {
            // Two spaces between columns, none before the first.
            col.set_padding((0, 2));
            if numeric(c) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        for line in table.lines() {
            writeln!(f, "{}", line.trim_end())?;
        }
        write!(f, "({} rows)", self.rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_round_trip() {
        for q in Query::ALL {
            assert_eq!(q.name().parse::<Query>().unwrap(), q);
            assert_eq!(q.to_string(), q.name());
        }
        assert_eq!("Q2.3".parse::<Query>().unwrap(), Query::Q2_3);
        assert_eq!("4.1".parse::<Query>().unwrap(), Query::Q4_1);
        assert_eq!(Query::parse_list("all").unwrap().len(), 13);
        assert_eq!(
            Query::parse_list("q1.1, q3.4").unwrap(),
            [Query::Q1_1, Query::Q3_4]
        );
        let e = "q5.1".parse::<Query>().unwrap_err().to_string();
        assert!(e.contains("unknown query 'q5.1'"), "{e}");
        assert!(Query::parse_list("q1.1,").is_err());
    }

    #[test]
    fn parameters_encode_the_specification() {
        let d = dicts();
        let p = Query::Q2_2.params();
        let Pred::Between(lo, hi) = p.p_brand1 else {
            panic!("q2.2 brand range: {:?}", p.p_brand1)
        };
        let brands: Vec<&str> = (lo..=hi).map(|c| d.brand1.get(c).unwrap()).collect();
        assert_eq!(
            brands,
            [
                "MFGR#2221",
                "MFGR#2222",
                "MFGR#2223",
                "MFGR#2224",
                "MFGR#2225",
                "MFGR#2226",
                "MFGR#2227",
                "MFGR#2228"
            ]
        );
        let p = Query::Q4_1.params();
        assert!(p.joins(Dim::Part) && p.joins(Dim::Customer) && p.joins(Dim::Supplier));
        let Pred::Between(lo, hi) = p.p_mfgr else {
            panic!()
        };
        assert_eq!(
            (d.mfgr.get(lo), d.mfgr.get(hi)),
            (Some("MFGR#1"), Some("MFGR#2"))
        );
        let p = Query::Q1_1.params();
        assert!(!p.joins(Dim::Part) && p.joins(Dim::Date));
        assert!(p.lo_quantity.matches(24) && !p.lo_quantity.matches(25));
        // q2.3 is the specification's and Crystal's brand, not the later suites' MFGR#2239.
        let q23 = Query::Q2_3.params();
        assert_eq!(q23.p_brand1, Pred::Eq(d.brand1.known("MFGR#2221")));
        assert_eq!(q23.s_region, Pred::Eq(d.region.known("EUROPE")));
        let q13 = Query::Q1_3.params();
        assert_eq!(
            (q13.d_weeknuminyear, q13.d_year),
            (Pred::Eq(6), Pred::Eq(1994))
        );
        assert_eq!(
            (q13.lo_discount, q13.lo_quantity),
            (Pred::Between(5, 7), Pred::Between(26, 35))
        );
        let q34 = Query::Q3_4.params();
        assert_eq!(q34.d_yearmonth, Pred::Eq(d.yearmonth.known("Dec1997")));
        assert_eq!(
            q34.c_city,
            Pred::Either(d.city.known("UNITED KI1"), d.city.known("UNITED KI5"))
        );
        let q43 = Query::Q4_3.params();
        assert_eq!(q43.c_region, Pred::Eq(d.region.known("AMERICA")));
        assert!(q43.s_region.is_any());
        assert_eq!(
            Query::Q3_1.params().group_by,
            [GroupCol::CNation, GroupCol::SNation, GroupCol::DYear]
        );
    }

    #[test]
    fn orderdate_ranges_of_flight_1() {
        let mut t = Date::default();
        super::super::generator::gen_date(&mut t);
        let r = |q: Query| q.params().orderdate_range(&t);
        assert_eq!(r(Query::Q1_1), Some((19930101, 19931231)));
        assert_eq!(r(Query::Q1_2), Some((19940101, 19940131)));
        assert_eq!(r(Query::Q1_3), Some((19940204, 19940210)));
    }

    #[test]
    fn results_sort_as_the_specification_says() {
        let d = dicts();
        let (us, uk) = (
            d.nation.known("UNITED STATES"),
            d.nation.known("UNITED KINGDOM"),
        );
        let row = |g: Vec<i32>, v| Row {
            groups: g,
            value: v,
        };
        let r = QueryResult::new(
            Query::Q3_1,
            vec![
                row(vec![us, us, 1993], 5),
                row(vec![uk, us, 1992], 1),
                row(vec![us, uk, 1992], 7),
                row(vec![uk, uk, 1992], 7),
            ],
        );
        assert_eq!(
            r.to_lines(),
            [
                "UNITED KINGDOM|UNITED KINGDOM|1992|7",
                "UNITED STATES|UNITED KINGDOM|1992|7",
                "UNITED KINGDOM|UNITED STATES|1992|1",
                "UNITED STATES|UNITED STATES|1993|5",
            ]
        );
        let text = r.to_string();
        assert!(
            text.starts_with("c_nation        s_nation        d_year  revenue"),
            "{text}"
        );
        assert!(text.ends_with("(4 rows)"));
    }
}
