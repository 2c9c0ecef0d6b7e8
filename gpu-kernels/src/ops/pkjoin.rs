//! Primary-key join through a bulk-synchronous sample sort (seed 002).
