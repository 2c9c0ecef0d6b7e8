//! Block-wise radix sort of one tile in shared memory (CUB's BlockRadixSort).
