//! The Star Schema Benchmark: generator, columnar format, dbgen loader, queries, CLI.
//!
//! * [`data`]: the in-memory model ([`SsbData`]: one `Vec<i32>` per column, strings encoded
//!   with the fixed, sorted dictionaries of [`dict`]);
//! * [`generator`]: the parallel, deterministic generator;
//! * [`format`](mod@format): tessera's columnar files (one checksummed file per column);
//! * [`tbl`]: dbgen's `.tbl` files (streaming parallel loader and writer);
//! * [`query`]: the 13 queries, their parameters ([`QueryParams`]) and results;
//! * [`engine`](mod@engine): the [`Engine`] boundary, the choice of the CPU or GPU engine;
//! * [`storage`]: the compressed footprint of every column (thesis §5.6.4).

pub mod calendar;
pub mod cli;
pub mod cpu;
pub mod data;
pub mod dict;
pub mod engine;
pub mod format;
pub mod generator;
pub mod gpu;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod query;
mod rng;
pub mod storage;
pub mod tbl;
pub mod validate;

pub use data::{Customer, Date, Lineorder, Meta, Part, SsbData, Supplier};
pub use dict::{Dict, Dicts, dicts};
pub use engine::{Device, Engine, engine, gpu_engine};
pub use generator::{Cardinalities, GenConfig, generate};
pub use query::{Agg, GroupCol, Pred, Query, QueryParams, QueryResult, Row};
