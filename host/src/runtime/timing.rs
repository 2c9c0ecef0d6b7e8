//! Timing with CUDA events: warm-up, repetitions, median.
use cudarc::driver::sys::CUevent_flags;

use super::Gpu;
use crate::error::{Error, Result};

/// Times of repeated runs of one piece of GPU work, in milliseconds.
#[derive(Clone, Debug)]
pub struct Timing {
    /// Each repetition's time.
    pub samples_ms: Vec<f64>,
}

impl Timing {
    /// Median time.
    pub fn median_ms(&self) -> f64 {
        median(&self.samples_ms)
    }
}

/// Median of `xs` (NaN for none).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

impl Gpu {
    /// Runs `work` `warmup` times, then `reps` times between events (timing flag set: cudarc's
    /// default events cannot time).
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut work: impl FnMut() -> Result<()>,
    ) -> Result<Timing> {
        let ev = || {
            self.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(Error::driver("creating a timing event", 0))
        };
        let (start, stop) = (ev()?, ev()?);
        for _ in 0..warmup {
            work()?;
        }
        self.synchronize()?;
        let mut samples_ms = Vec::with_capacity(reps);
        for _ in 0..reps {
            start
                .record(self.stream())
                .map_err(Error::driver("recording an event", 0))?;
            work()?;
            stop.record(self.stream())
                .map_err(Error::driver("recording an event", 0))?;
            let ms = start
                .elapsed_ms(&stop)
                .map_err(Error::driver("reading an event", 0))?;
            samples_ms.push(ms as f64);
        }
        Ok(Timing { samples_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
