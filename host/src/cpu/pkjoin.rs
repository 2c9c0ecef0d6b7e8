//! CPU primary-key join (sort-merge), the oracle of the sample-sort join.
