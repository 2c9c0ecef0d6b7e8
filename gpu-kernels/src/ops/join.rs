//! Hash join kernels: build, probe, probe-and-aggregate.
