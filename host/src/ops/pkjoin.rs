//! Primary-key join by sample sort.
