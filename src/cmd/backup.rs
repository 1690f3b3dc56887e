//! `stardust backup run|verify|restore` (SPEC §10): archive a store by a backup definition,
//! check an archive, restore one; a progress bar on stderr when it is a terminal.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use stardust_core::backup::{self, Phase, Progress};
use stardust_core::store::{OpenOptions, Store};

use crate::OutputFormat;

#[derive(Subcommand)]
pub(crate) enum BackupCommand {
    /// Archive the store as of one seq by the backup definition ID, then keep only the
    /// definition's newest `keep` archives in its target.
    Run {
        /// The store directory.
        store: PathBuf,
        /// The id of a `backup` entity, e.g. backup/nightly.
        id: String,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Check every byte of an archive against its manifest; fail naming the first damage.
    Verify {
        archive: PathBuf,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Restore an archive into DIR byte for byte (DIR must be empty or missing).
    Restore {
        archive: PathBuf,
        dir: PathBuf,
        /// Restore into a non-empty DIR, replacing the archive's files there and leaving
        /// other files alone.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
}

pub(crate) fn run(command: BackupCommand) -> anyhow::Result<ExitCode> {
    let bar = Bar::new();
    let mut report = |p: &Progress<'_>| bar.report(p);
    let mut out = std::io::stdout().lock();
    match command {
        BackupCommand::Run { store, id, format } => {
            let store =
                Store::open(&store, OpenOptions { watch: false, ..OpenOptions::default() })?;
            let written = backup::run(&store, &id, &mut report);
            bar.finish();
            let written = written?;
            match format {
                OutputFormat::Text => {
                    writeln!(
                        out,
                        "wrote {} ({id} as of seq {}: {} entries, {} bytes)",
                        written.archive.display(),
                        written.seq,
                        written.entries,
                        written.bytes
                    )?;
                    for old in &written.removed {
                        writeln!(out, "removed {}", old.display())?;
                    }
                }
                OutputFormat::Json => writeln!(
                    out,
                    "{}",
                    json!({
                        "archive": written.archive,
                        "seq": written.seq,
                        "entries": written.entries,
                        "bytes": written.bytes,
                        "removed": written.removed,
                    })
                )?,
            }
        }
        BackupCommand::Verify { archive, format } => {
            let verified = backup::verify(&archive, &mut report);
            bar.finish();
            let verified = verified?;
            let m = &verified.manifest;
            match format {
                OutputFormat::Text => writeln!(
                    out,
                    "ok: {} holds {} entries of {} as of seq {} ({}, made {})",
                    archive.display(),
                    m.entries.len(),
                    m.store,
                    m.seq,
                    m.definition,
                    m.created
                )?,
                OutputFormat::Json => writeln!(out, "{}", summary(&archive, m, verified.bytes))?,
            }
        }
        BackupCommand::Restore { archive, dir, force, format } => {
            let restored = backup::restore(&archive, &dir, force, &mut report);
            bar.finish();
            let restored = restored?;
            let m = &restored.manifest;
            match format {
                OutputFormat::Text => writeln!(
                    out,
                    "restored {} entries of {} as of seq {} into {}",
                    restored.entries,
                    m.definition,
                    m.seq,
                    dir.display()
                )?,
                OutputFormat::Json => {
                    let mut value = summary(&archive, m, 0);
                    value["dir"] = json!(dir);
                    value.as_object_mut().map(|o| o.remove("bytes"));
                    writeln!(out, "{value}")?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn summary(archive: &Path, m: &backup::Manifest, bytes: u64) -> serde_json::Value {
    json!({
        "archive": archive,
        "definition": m.definition,
        "store": m.store,
        "seq": m.seq,
        "created": m.created,
        "entries": m.entries.len(),
        "bytes": bytes,
    })
}

/// The progress bar: drawn on stderr only when stderr is a terminal, so logs and scripts
/// that capture stderr never see it.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar(ProgressBar::hidden());
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix:>9} [{bar:30}] {bytes}/{total_bytes} ({eta}) {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        Bar(bar)
    }

    fn report(&self, progress: &Progress<'_>) {
        let phase = match progress.phase {
            Phase::Archiving => "archiving",
            Phase::Verifying => "verifying",
            Phase::Restoring => "restoring",
        };
        self.0.set_prefix(phase);
        self.0.set_length(progress.total);
        self.0.set_position(progress.done);
        self.0.set_message(progress.path.to_owned());
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
