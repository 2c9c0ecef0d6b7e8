//! `tessera bench join`.

/// Options of `tessera bench join`.
#[derive(Clone, Debug, clap::Args)]
pub struct JoinArgs {}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(_args: &JoinArgs) -> Result<(), Box<dyn std::error::Error>> {
    Err("tessera bench join: not built yet".into())
}
