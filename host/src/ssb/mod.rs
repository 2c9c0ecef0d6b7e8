//! The Star Schema Benchmark: generator, columnar format, dbgen loader, queries, CLI.

pub mod cli;
