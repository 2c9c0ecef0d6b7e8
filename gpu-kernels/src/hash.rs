//! Hash functions and slot arithmetic shared by the hash-table kernels and the host.
