//! `tessera ssb ...`.

/// `tessera ssb` subcommands.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum SsbCmd {}

/// Runs one `tessera ssb` subcommand.
pub fn run(cmd: SsbCmd) -> Result<(), Box<dyn std::error::Error>> {
    match cmd {}
}
