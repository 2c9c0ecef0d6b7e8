//! Radix partition and radix sort.
