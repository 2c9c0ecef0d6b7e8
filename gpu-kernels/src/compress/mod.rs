//! Lightweight integer compression (thesis chapter 5): the formats of GPU-FOR, GPU-DFOR and
//! RFOR and of the baselines (NSF, NSV, RLE, the vertical SIMD-BP128 layout), shared by the
//! host's encoders and CPU decoders and by the GPU decoders, so both sides read a buffer with
//! the very same index arithmetic. [`format`] holds the headers, the constants and that
//! arithmetic; it is target-independent and compiles for the host too.
pub mod format;
#[cfg(target_arch = "nvptx64")]
pub mod load;
