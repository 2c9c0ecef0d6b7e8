//! `tessera bench sort`.

/// Options of `tessera bench sort`.
#[derive(Clone, Debug, clap::Args)]
pub struct SortArgs {}

/// Runs the suite, prints its table and writes its JSON.
pub fn run(_args: &SortArgs) -> Result<(), Box<dyn std::error::Error>> {
    Err("tessera bench sort: not built yet".into())
}
