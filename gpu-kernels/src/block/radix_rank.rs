//! Block-wide radix digit ranking for the one-sweep sort and the partition passes.
