//! Radix partition and one-sweep radix sort kernels.
