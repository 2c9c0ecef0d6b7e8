//! The primary-key join figures (seed 002): sample-sort join against the hash join.
