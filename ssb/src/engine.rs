//! The boundary between the SSB driver (CLI, tests, benchmarks) and the engines that run the
//! queries: the [`Engine`] trait and the [`Device`] choice.
use std::time::Instant;

use super::cpu::CpuEngine;
use super::data::SsbData;
use super::query::{Query, QueryResult};
use tessera_host::Result;

/// Something that runs SSB queries over one data set. An engine owns whatever it prepared
/// (for a GPU engine: the columns uploaded once, resident on the device), so `run` measures
/// the query alone.
pub trait Engine {
    /// Short name for tables (`cpu`, `gpu`).
    fn name(&self) -> &str;

    /// Runs one query; the result's rows are in the specification's order.
    fn run(&self, q: Query) -> Result<QueryResult>;

    /// Runs one query and returns its time in milliseconds. The default times `run` on the
    /// host's clock; a GPU engine overrides it with CUDA events around its kernels.
    fn run_timed(&self, q: Query) -> Result<(QueryResult, f64)> {
        let t = Instant::now();
        let r = self.run(q)?;
        Ok((r, t.elapsed().as_secs_f64() * 1e3))
    }
}

/// Where queries run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    /// The multi-threaded CPU engine ([`CpuEngine`]).
    Cpu,
    /// The GPU engine ([`gpu_engine`]).
    Gpu,
}

/// The engine for `device` over `data`.
pub fn engine(device: Device, data: &SsbData) -> Result<Box<dyn Engine + '_>> {
    match device {
        Device::Cpu => Ok(Box::new(CpuEngine::new(data))),
        Device::Gpu => gpu_engine(data),
    }
}

/// The GPU engine: the fused query kernels over `data`'s columns, uploaded once.
pub fn gpu_engine(data: &SsbData) -> Result<Box<dyn Engine + '_>> {
    Ok(Box::new(super::gpu::GpuEngine::open(data)?))
}
