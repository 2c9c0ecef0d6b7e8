//! Block-wide hash-table build and lookup (Crystal's BlockBuild / BlockLookup).
