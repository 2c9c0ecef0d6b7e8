//! CPU radix partition and sort.
