//! The cost model of the top-k algorithms (thesis §4.6), from the device's read and write
//! bandwidth and launch latency: [`choose`](super::choose) picks by it, and the benchmark
//! prints it next to each measurement with the bandwidth measured in the same run.
use super::{SAMPLE_TARGET, THRESHOLD_MAX_K, TopKAlgorithm};
use tessera_kernels::ops::topk::{DIGIT_BITS, SAMPLE_RUN};

/// What the model needs of a device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TopKDevice {
    /// Global-memory read bandwidth, GB/s.
    pub read_gbps: f64,
    /// Global-memory write bandwidth, GB/s.
    pub write_gbps: f64,
    /// Shared-memory bandwidth of the whole device, GB/s.
    pub shared_gbps: f64,
    /// One kernel launch, back to back on a stream, ms.
    pub launch_ms: f64,
}

impl TopKDevice {
    /// An H100 (SXM): the read and write bandwidth and launch latency `tessera bench`
    /// measures there, and shared memory at 128 bytes per clock on each of 132 SMs at
    /// 1.755 GHz. [`choose`](super::choose) uses these when no measurement is at hand; the
    /// choice depends on their ratios more than on their values.
    pub const H100: TopKDevice = TopKDevice {
        read_gbps: 3200.0,
        write_gbps: 2800.0,
        shared_gbps: 29_650.0,
        launch_ms: 0.007,
    };

    /// Milliseconds to read `bytes`.
    fn read(&self, bytes: f64) -> f64 {
        bytes / self.read_gbps / 1e6
    }

    /// Milliseconds to write `bytes`.
    fn write(&self, bytes: f64) -> f64 {
        bytes / self.write_gbps / 1e6
    }
}

/// The host's share of a sort-and-choose call (a read-back and the allocations), fitted to
/// the measurements at 2^21 keys in `docs/perf-log.md`.
const SORT_HOST_MS: f64 = 0.12;

/// Modelled milliseconds of `algorithm` for `k` of `n` keys of `key_bytes` bytes;
/// infinite where the algorithm does not take the input.
pub fn model_ms(
    algorithm: TopKAlgorithm,
    n: usize,
    key_bytes: usize,
    k: usize,
    dev: &TopKDevice,
) -> f64 {
    let (nf, d) = (n as f64, (n * key_bytes) as f64);
    let digits = (8 * key_bytes) as f64 / f64::from(DIGIT_BITS);
    // The candidates' select: one round per digit of the (rank, row) composite.
    let composite = digits + 32.0 / f64::from(DIGIT_BITS);
    match algorithm {
        // One read of the keys, the sample (one sector per run of adjacent keys), and one
        // small launch per select round; the candidates are too few to count.
        TopKAlgorithm::Threshold if k <= THRESHOLD_MAX_K => {
            let sample = nf.min(SAMPLE_TARGET as f64) / SAMPLE_RUN as f64 * 32.0;
            dev.read(d) + dev.read(sample) + dev.launch_ms * (3.0 + digits + composite)
        }
        TopKAlgorithm::Threshold => f64::INFINITY,
        // One read of the keys per digit, then the filter's read (§4.6.1 without the
        // clustering writes: every round reads the whole input).
        TopKAlgorithm::RadixSelect => {
            (digits + 1.0) * dev.read(d) + dev.launch_ms * (digits + composite + 3.0)
        }
        // A histogram read, then per 8-bit digit a read and a write of keys and row ids, and
        // the host's part: the sort reads its histogram back before the passes, and sort and
        // choose allocates its buffers (rows, sorted keys, the sort's temporaries) per call.
        TopKAlgorithm::Sort if key_bytes == 4 => {
            let pass = d + 4.0 * nf;
            dev.read(d)
                + digits * (dev.read(pass) + dev.write(pass))
                + dev.launch_ms * digits
                + SORT_HOST_MS
        }
        TopKAlgorithm::Sort => f64::INFINITY,
    }
}

/// Modelled milliseconds of Bitonic Top-K (§4.6.2) for `k` of `n` keys: each reducer kernel
/// costs the larger of its global traffic (read its input, write a sixteenth) and its
/// shared-memory traffic (a read and a write of its input per combined step of four
/// bitonic steps); the SortReducer's steps are the local sort's `L (L + 1) / 2` and the
/// merges' and rebuilds' `4 (L + 1)` for `L = log2 k`, a BitonicReducer's only the latter,
/// on a sixteenth of the input each. Infinite above `k = 1024`.
pub fn bitonic_model_ms(n: usize, key_bytes: usize, k: usize, dev: &TopKDevice) -> f64 {
    if k > 1024 {
        return f64::INFINITY;
    }
    // Items carry their row: a 32-bit key moves as 8 bytes.
    let item = (key_bytes + 4) as f64;
    let l = (k.next_power_of_two().max(16) as f64).log2();
    let kernel = |items: f64, steps: f64| {
        let global = dev.read(items * key_bytes as f64) + dev.write(items * item / 16.0);
        let shared = steps / 4.0 * 2.0 * items * item / dev.shared_gbps / 1e6;
        dev.launch_ms + global.max(shared)
    };
    let mut t = kernel(n as f64, l * (l + 1.0) / 2.0 + 4.0 * (l + 1.0));
    let mut rest = n as f64 / 16.0;
    while rest > k as f64 {
        t += kernel(rest, 4.0 * (l + 1.0));
        rest /= 16.0;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_orders_the_algorithms_as_measured() {
        let d = TopKDevice::H100;
        let n = 1 << 29;
        for k in [1, 32, 256, 1024] {
            let t = model_ms(TopKAlgorithm::Threshold, n, 4, k, &d);
            let r = model_ms(TopKAlgorithm::RadixSelect, n, 4, k, &d);
            let s = model_ms(TopKAlgorithm::Sort, n, 4, k, &d);
            let b = bitonic_model_ms(n, 4, k, &d);
            // Bitonic beats radix select for small k (the thesis' Figure 4-18 puts the
            // crossover at 256 on a GPU whose shared memory was 11.6x its DRAM; on the H100's
            // 9.3x it comes earlier).
            let bitonic_first = if k <= 32 { b < r } else { r < b };
            assert!(
                t < b.min(r) && bitonic_first && r < s,
                "k={k}: {t} {b} {r} {s}"
            );
            // The threshold filter: one read and its select rounds' launches.
            assert!(t < 1.2 * d.read((4 * n) as f64));
        }
        assert!(model_ms(TopKAlgorithm::Sort, n, 8, 32, &d).is_infinite());
        assert!(bitonic_model_ms(n, 4, 2048, &d).is_infinite());
    }
}
