//! CPU hash joins (no partitioning) and the primary-key join.
