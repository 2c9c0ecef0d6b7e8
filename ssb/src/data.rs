//! The in-memory SSB data set: one `Vec<i32>` per column, strings dictionary-encoded with the
//! fixed, sorted dictionaries of [`super::dict`]. This is what the CPU engine reads and what a
//! GPU engine uploads as it is (every column is 4-byte values, as in the thesis).
//!
//! Free-text columns that no query reads and that are not 4-byte values (names, addresses,
//! phones, p_name, d_date) are not stored; the `.tbl` writer synthesizes them.
use super::dict::{Dicts, dicts};
use tessera_host::Result;

/// Declares a table: a struct with one `Vec<i32>` per column, named as in the specification,
/// and its column list in dbgen's order.
macro_rules! table {
    ($(#[$m:meta])* $name:ident, $file:literal, { $($(#[$cm:meta])* $col:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[$cm])* pub $col: Vec<i32>,)+
        }

        impl $name {
            /// The table's name (its `.tbl` file and its directory in a data directory).
            pub const NAME: &'static str = $file;
            /// Column names, in the order of the stored columns.
            pub const COLUMNS: &'static [&'static str] = &[$(stringify!($col)),+];

            /// The columns, in [`Self::COLUMNS`] order.
            pub fn columns(&self) -> Vec<(&'static str, &[i32])> {
                vec![$((stringify!($col), self.$col.as_slice())),+]
            }

            /// The columns, mutably, in [`Self::COLUMNS`] order.
            pub fn columns_mut(&mut self) -> Vec<(&'static str, &mut Vec<i32>)> {
                vec![$((stringify!($col), &mut self.$col)),+]
            }

            /// Rows (the length of the first column; [`SsbData::validate`] checks the rest).
            pub fn len(&self) -> usize {
                self.columns()[0].1.len()
            }

            /// Whether the table has no rows.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }
    };
}

table!(
    /// The fact table (all 17 columns of dbgen's lineorder; priority and ship mode encoded).
    Lineorder, "lineorder", {
        /// Order key (sparse, as dbgen's).
        lo_orderkey,
        /// 1..=7 within the order.
        lo_linenumber,
        /// Foreign key to customer.
        lo_custkey,
        /// Foreign key to part.
        lo_partkey,
        /// Foreign key to supplier.
        lo_suppkey,
        /// Foreign key to date (`yyyymmdd`).
        lo_orderdate,
        /// Code in `dicts().orderpriority`.
        lo_orderpriority,
        /// Always 0 in dbgen's data.
        lo_shippriority,
        /// 1..=50.
        lo_quantity,
        /// quantity x retail price, in cents.
        lo_extendedprice,
        /// The order's total price, in cents.
        lo_ordtotalprice,
        /// 0..=10 (percent).
        lo_discount,
        /// extendedprice x (100 - discount) / 100.
        lo_revenue,
        /// 6 x retail price / 10.
        lo_supplycost,
        /// 0..=8 (percent).
        lo_tax,
        /// orderdate + 30..=90 days (`yyyymmdd`).
        lo_commitdate,
        /// Code in `dicts().shipmode`.
        lo_shipmode,
    }
);

table!(
    /// The part dimension (without p_name).
    Part, "part", {
        /// 1..=N.
        p_partkey,
        /// Code in `dicts().mfgr`.
        p_mfgr,
        /// Code in `dicts().category`.
        p_category,
        /// Code in `dicts().brand1`.
        p_brand1,
        /// Code in `dicts().color`.
        p_color,
        /// Code in `dicts().p_type`.
        p_type,
        /// 1..=50.
        p_size,
        /// Code in `dicts().container`.
        p_container,
    }
);

table!(
    /// The supplier dimension (without name, address, phone).
    Supplier, "supplier", {
        /// 1..=N.
        s_suppkey,
        /// Code in `dicts().city`.
        s_city,
        /// Code in `dicts().nation`.
        s_nation,
        /// Code in `dicts().region`.
        s_region,
    }
);

table!(
    /// The customer dimension (without name, address, phone).
    Customer, "customer", {
        /// 1..=N.
        c_custkey,
        /// Code in `dicts().city`.
        c_city,
        /// Code in `dicts().nation`.
        c_nation,
        /// Code in `dicts().region`.
        c_region,
        /// Code in `dicts().mktsegment`.
        c_mktsegment,
    }
);

table!(
    /// The date dimension (without the d_date text, which follows from the key).
    Date, "date", {
        /// `yyyymmdd`.
        d_datekey,
        /// Code in `dicts().dayofweek`.
        d_dayofweek,
        /// Code in `dicts().month`.
        d_month,
        /// Year.
        d_year,
        /// `yyyymm`.
        d_yearmonthnum,
        /// Code in `dicts().yearmonth`.
        d_yearmonth,
        /// 1 = Sunday .. 7.
        d_daynuminweek,
        /// 1..=31.
        d_daynuminmonth,
        /// 1..=366.
        d_daynuminyear,
        /// 1..=12.
        d_monthnuminyear,
        /// dbgen's `daynuminyear / 7 + 1`.
        d_weeknuminyear,
        /// Code in `dicts().sellingseason`.
        d_sellingseason,
        /// 0 / 1.
        d_lastdayinweekfl,
        /// 0 / 1.
        d_lastdayinmonthfl,
        /// 0 / 1.
        d_holidayfl,
        /// 0 / 1.
        d_weekdayfl,
    }
);

/// Where a data set came from (kept with it in `meta.json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    /// Scale factor (`None` when loaded from `.tbl` files).
    pub scale_factor: Option<f64>,
    /// Generator seed (`None` when loaded from `.tbl` files).
    pub seed: Option<u64>,
    /// `generated` or `tbl:<directory>`.
    pub source: String,
}

/// The whole SSB data set.
#[derive(Clone, Debug, PartialEq)]
pub struct SsbData {
    /// Provenance.
    pub meta: Meta,
    /// Fact table.
    pub lineorder: Lineorder,
    /// Part dimension.
    pub part: Part,
    /// Supplier dimension.
    pub supplier: Supplier,
    /// Customer dimension.
    pub customer: Customer,
    /// Date dimension.
    pub date: Date,
}

/// A borrowed view of one table: its name and columns.
pub type TableRef<'a> = (&'static str, Vec<(&'static str, &'a [i32])>);
/// A mutable view of one table.
pub type TableMut<'a> = (&'static str, Vec<(&'static str, &'a mut Vec<i32>)>);

impl SsbData {
    /// The dictionaries that decode the string columns.
    pub fn dicts(&self) -> &'static Dicts {
        dicts()
    }

    /// Every table with its columns (lineorder, part, supplier, customer, date).
    pub fn tables(&self) -> [TableRef<'_>; 5] {
        [
            (Lineorder::NAME, self.lineorder.columns()),
            (Part::NAME, self.part.columns()),
            (Supplier::NAME, self.supplier.columns()),
            (Customer::NAME, self.customer.columns()),
            (Date::NAME, self.date.columns()),
        ]
    }

    /// Every table, mutably.
    pub fn tables_mut(&mut self) -> [TableMut<'_>; 5] {
        [
            (Lineorder::NAME, self.lineorder.columns_mut()),
            (Part::NAME, self.part.columns_mut()),
            (Supplier::NAME, self.supplier.columns_mut()),
            (Customer::NAME, self.customer.columns_mut()),
            (Date::NAME, self.date.columns_mut()),
        ]
    }

    /// An empty data set with the given provenance.
    pub fn empty(meta: Meta) -> SsbData {
        SsbData {
            meta,
            lineorder: Lineorder::default(),
            part: Part::default(),
            supplier: Supplier::default(),
            customer: Customer::default(),
            date: Date::default(),
        }
    }

    /// Checks what the engines rely on (see [`super::validate`]): the columns of a table
    /// have equal lengths, every dictionary-encoded value is a valid code, dimension keys are
    /// unique and dense (`1..=N`; consecutive days for `d_datekey`), and every lineorder
    /// foreign key has its dimension row. An empty lineorder passes (its results are empty).
    pub fn validate(&self) -> Result<()> {
        super::validate::consistent(self)
    }

    /// [`Self::validate`], and no table is empty: what a data set written to or read from
    /// disk must be (the writers and loaders check it).
    pub fn validate_complete(&self) -> Result<()> {
        super::validate::complete(self)
    }
}
