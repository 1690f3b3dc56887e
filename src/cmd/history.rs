//! `stardust show`, `stardust diff` and `stardust revert` (SPEC §26): the history commands of
//! the registry for people, through the store's running core when there is one.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::apply::{Core, Outcome, preview_or_confirm};
use crate::OutputFormat;

/// `stardust show STORE PATH [--at SEQ]`: the file's text as of the seq, byte for byte.
pub(crate) fn show(store: &Path, path: &str, at: Option<u64>) -> anyhow::Result<ExitCode> {
    let mut core = Core::open(store)?;
    let seq = match at {
        Some(seq) => seq,
        None => core.call("stardust.status", json!({}))?["seq"].as_u64().unwrap_or(0),
    };
    let found = core.call("stardust.document.at", json!({"path": path, "seq": seq}))?;
    let mut out = std::io::stdout().lock();
    out.write_all(found["text"].as_str().unwrap_or_default().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `SEQ` or `FIRST..LAST`.
fn seq_range(given: &str) -> anyhow::Result<(u64, u64)> {
    let number = |s: &str| {
        s.trim().parse::<u64>().map_err(|_| {
            stardust_core::Error::InvalidArguments(format!(
                "'{given}' is not a seq or a range of seqs; give SEQ or FIRST..LAST, e.g. 4..9"
            ))
        })
    };
    Ok(match given.split_once("..") {
        Some((first, last)) => (number(first)?, number(last)?),
        None => (number(given)?, number(given)?),
    })
}

/// `stardust diff STORE SEQ[..SEQ] [PATH...]`.
pub(crate) fn diff(
    store: &Path,
    seqs: &str,
    paths: &[String],
    format: OutputFormat,
) -> anyhow::Result<ExitCode> {
    let (seq, to) = seq_range(seqs)?;
    let mut args = json!({"seq": seq, "toSeq": to});
    if !paths.is_empty() {
        args["paths"] = json!(paths);
    }
    let mut core = Core::open(store)?;
    let answer = core.call("stardust.transaction.diff", args)?;
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?,
        OutputFormat::Text => {
            for doc in answer["documents"].as_array().into_iter().flatten() {
                out.write_all(doc["diff"].as_str().unwrap_or_default().as_bytes())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `stardust revert STORE SEQ [--yes]`: the preview, or with `--yes` its commit.
pub(crate) fn revert(
    store: &Path,
    seq: u64,
    yes: bool,
    format: OutputFormat,
) -> anyhow::Result<ExitCode> {
    let mut core = Core::open(store)?;
    let args = json!({"seq": seq});
    let command = "stardust.transaction.revert";
    let confirmed = match preview_or_confirm(&mut core, command, args, "revert", yes, format)? {
        Outcome::Previewed(code) => return Ok(code),
        Outcome::Confirmed(confirmed) => confirmed,
    };
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Json => writeln!(out, "{confirmed}")?,
        OutputFormat::Text => {
            writeln!(out, "reverted seq {seq}: committed as seq {}", confirmed["seq"])?
        }
    }
    Ok(ExitCode::SUCCESS)
}
