//! Hash join: build, probe, join pairs, probe-and-aggregate.
