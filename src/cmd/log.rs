//! `stardust log STORE`: the transaction history, for people or (`--format json`) scripts, and
//! `--verify`, which checks every record of the log without changing anything.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use stardust_core::store::{
    OpenOptions, Store, StoreError, Transaction, Verification, read_log, verify_log,
};

use crate::OutputFormat;

/// How many documents a text line names before summing up the rest.
const NAMED: usize = 3;

pub(crate) fn run(store: &Path, since: u64, format: OutputFormat) -> anyhow::Result<ExitCode> {
    let transactions = match Store::open(
        store,
        OpenOptions { watch: false, ..OpenOptions::default() },
    ) {
        // Opening records edits made outside Stardust (and, the first time, every document),
        // so the listing is current.
        Ok(store) => store.transactions(since, usize::MAX)?,
        Err(StoreError::Busy { pid, .. }) => {
            let owner = pid.map_or("another process".to_owned(), |pid| format!("process {pid}"));
            tracing::info!(
                "the store is in use by {owner}; listing the log as it is on disk (edits not yet \
                 recorded by the owner are not shown)"
            );
            read_log(store, since, usize::MAX)?
        }
        Err(err) => return Err(err.into()),
    };
    let mut out = std::io::stdout().lock();
    for txn in &transactions {
        match format {
            OutputFormat::Text => writeln!(out, "{}", line(txn))?,
            OutputFormat::Json => writeln!(out, "{}", txn.to_json())?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn verify(store: &Path, format: OutputFormat) -> anyhow::Result<ExitCode> {
    if !store.is_dir() {
        return Err(stardust_core::Error::InvalidArguments(format!(
            "{} is not a directory; give the store's root folder",
            store.display()
        ))
        .into());
    }
    let v = verify_log(store)?;
    let sound = v.damage.as_ref().is_none_or(|d| !d.in_middle);
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Text => write!(out, "{}", verification_text(store, &v))?,
        OutputFormat::Json => {
            let damage = v.damage.as_ref().map(|d| {
                json!({
                    "offset": d.offset,
                    "seq": d.seq,
                    "reason": d.reason,
                    "torn_tail": !d.in_middle,
                })
            });
            let report = json!({
                "ok": sound,
                "transactions": v.transactions,
                "last_seq": v.last_seq,
                "applied_through": v.applied_through,
                "valid_bytes": v.valid_len,
                "file_bytes": v.file_len,
                "damage": damage,
            });
            writeln!(out, "{report}")?;
        }
    }
    Ok(if sound { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn verification_text(store: &Path, v: &Verification) -> String {
    let before_damage = if v.damage.is_some() { " before the damage" } else { "" };
    let mut text = match v.transactions {
        0 if v.damage.is_some() => "no transaction could be verified".to_owned(),
        0 => "no transactions are recorded".to_owned(),
        n => format!(
            "{n} transaction{} (seq 1 to {}) verified{before_damage}, {} bytes",
            if n == 1 { "" } else { "s" },
            v.last_seq,
            v.valid_len
        ),
    };
    text.push('\n');
    if v.transactions > 0 {
        text.push_str(&match v.applied_through {
            0 => "checkpoint: none yet; the next open redoes every transaction".to_owned(),
            k if k >= v.last_seq => format!("checkpoint: through seq {k}; nothing to redo"),
            k => format!(
                "checkpoint: through seq {k}; the next open redoes seq {} to {}",
                k + 1,
                v.last_seq
            ),
        });
        text.push('\n');
    }
    match &v.damage {
        None => {}
        Some(d) if !d.in_middle => text.push_str(&format!(
            "note: the log ends with an unfinished record ({} bytes at byte {}: {}); it was never \
             acknowledged and is dropped the next time the store is opened\n",
            v.file_len - d.offset,
            d.offset,
            d.reason
        )),
        Some(d) => text.push_str(&format!(
            "damaged: the record of seq {} at byte {} {}, and valid records follow it, so the \
             history from seq {} on cannot be read; the store will not open until \
             {}/.stardust/log is restored from a backup (moving it aside starts a new history; \
             the documents themselves are not affected)\n",
            d.seq,
            d.offset,
            d.reason.strip_prefix("the record ").unwrap_or(&d.reason),
            d.seq,
            store.display()
        )),
    }
    text
}

/// One line for people: seq, time, origin, and what happened to which documents.
fn line(txn: &Transaction) -> String {
    let mut parts: Vec<String> =
        txn.documents.iter().take(NAMED).map(|d| format!("{} {}", d.kind(), d.path)).collect();
    if txn.documents.len() > NAMED {
        parts.push(format!("and {} more", txn.documents.len() - NAMED));
    }
    format!("{:>6}  {}  {}  {}", txn.seq, txn.time, txn.origin, parts.join(", "))
}
