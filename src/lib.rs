//! tessera: GPU data analytics in Rust, from the device code up.
//!
//! This root crate re-exports the host library ([`tessera_host`]) so that users and the
//! integration tests write `tessera::Gpu`, `tessera::ops::select`, and so on.
pub use tessera_host::*;
