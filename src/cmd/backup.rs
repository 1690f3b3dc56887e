//! `stardust backup run|verify|restore` (SPEC §10): archive a store by a backup definition,
//! check an archive, restore one; a progress bar on stderr when it is a terminal.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use stardust_core::backup::{self, Phase, Progress};
use stardust_core::service::BACKUP_RUN;
use stardust_core::store::{OpenOptions, Store};
use stardust_daemon::attach::{self, Client};
use stardust_daemon::{Front, Hello};

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
            let written = run_backup(&store, &id, &bar);
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

/// Archive through the store's running core when there is one (it owns the store: opening
/// it here would be `busy`, and the core has it loaded already), else on the store opened
/// here.
fn run_backup(store: &Path, id: &str, bar: &Bar) -> anyhow::Result<backup::Written> {
    if let Ok(root) = store.canonicalize()
        && attach::running(&root)
    {
        let stream = attach::connect(&root, &Hello::new(Front::Cli, "cli"), None)?;
        let mut client = Client::new(stream)?;
        let mut progress = |step: &Value| {
            let number = |key: &str| step[key].as_u64().unwrap_or_default();
            let phase = step["phase"].as_str().unwrap_or_default();
            bar.show(phase, number("done"), number("total"), step["path"].as_str().unwrap_or(""));
        };
        let answer = client.call_with_progress(BACKUP_RUN, json!({"id": id}), &mut progress)?;
        return written(&answer);
    }
    let store = Store::open(store, OpenOptions { watch: false, ..OpenOptions::default() })?;
    Ok(backup::run(&store, id, &mut |p| bar.report(p))?)
}

/// What a run through the core wrote, from its answer.
fn written(answer: &Value) -> anyhow::Result<backup::Written> {
    let bad = || anyhow::anyhow!("the core's answer to {BACKUP_RUN} is not a backup: {answer}");
    let path = |v: &Value| v.as_str().map(PathBuf::from);
    Ok(backup::Written {
        archive: path(&answer["archive"]).ok_or_else(bad)?,
        seq: answer["seq"].as_u64().ok_or_else(bad)?,
        entries: answer["entries"].as_u64().ok_or_else(bad)? as usize,
        bytes: answer["bytes"].as_u64().ok_or_else(bad)?,
        removed: answer["removed"]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|v| path(v).ok_or_else(bad))
            .collect::<anyhow::Result<_>>()?,
    })
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
        self.show(phase, progress.done, progress.total, progress.path);
    }

    fn show(&self, phase: &str, done: u64, total: u64, path: &str) {
        self.0.set_prefix(phase.to_owned());
        self.0.set_length(total);
        self.0.set_position(done);
        self.0.set_message(path.to_owned());
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
