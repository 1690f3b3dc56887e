//! `stardust db migrate STORE`, `stardust import STORE DIR`, `stardust export STORE DIR`: a
//! team store's database (SPEC §22) made ready, and stores moved between a folder and a
//! database byte for byte.

use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;
use stardust_core::config::Config;
use stardust_core::store::{OpenOptions, Store};

#[derive(Subcommand)]
pub(crate) enum DbCommand {
    /// Create or upgrade the tables of the store's database ([store] url or
    /// STARDUST_DATABASE_URL); refuses a database of a newer schema than this stardust.
    Migrate {
        /// The store directory (its stardust.toml names the database).
        store: std::path::PathBuf,
    },
}

pub(crate) fn run(command: DbCommand) -> anyhow::Result<ExitCode> {
    match command {
        DbCommand::Migrate { store } => migrate(&store),
    }
}

fn migrate(store: &Path) -> anyhow::Result<ExitCode> {
    let config = Config::load(store)?;
    let url = config.backend.required_url()?;
    let migrated = stardust_pg::migrate(&url)?;
    let shown = stardust_pg::shown(&url);
    if migrated.from == migrated.to {
        println!("the database {shown} is at schema {}: nothing to do", migrated.to);
    } else {
        println!("migrated the database {shown} from schema {} to {}", migrated.from, migrated.to);
    }
    Ok(ExitCode::SUCCESS)
}

fn open(store: &Path) -> anyhow::Result<Store> {
    Ok(Store::open(store, OpenOptions { watch: false, ..OpenOptions::default() })?)
}

/// `stardust import STORE DIR`: the store's documents become exactly those of the folder
/// store DIR, as one transaction.
pub(crate) fn import(store: &Path, dir: &Path) -> anyhow::Result<ExitCode> {
    let store = open(store)?;
    match store.import(dir)? {
        Some(txn) => println!(
            "imported {}: seq {} changed {} document(s)",
            dir.display(),
            txn.seq,
            txn.documents.len()
        ),
        None => println!("the store already holds exactly the documents of {}", dir.display()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `stardust export STORE DIR`: the store's documents as of its current seq written into the
/// new folder store DIR.
pub(crate) fn export(store: &Path, dir: &Path) -> anyhow::Result<ExitCode> {
    let exported = open(store)?.export(dir)?;
    println!(
        "exported {} document(s) as of seq {} to {}",
        exported.documents,
        exported.seq,
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
