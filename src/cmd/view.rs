//! `stardust view STORE ID`: print a view's result (SPEC §19) as of the store's current seq,
//! exactly the bytes the mount shows at the view's path. Exit 1 when the result is the view's
//! error object (printed all the same).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use stardust_core::analysis::Analysis;
use stardust_core::query::MAX_BINDINGS;
use stardust_core::store::{OpenOptions, Store, StoreError, read_log};
use stardust_core::views;

pub(crate) fn run(store: &Path, id: &str) -> anyhow::Result<ExitCode> {
    let (analysis, seq) =
        match Store::open(store, OpenOptions { watch: false, ..OpenOptions::default() }) {
            // Opening records edits made outside Stardust, so the result is current.
            Ok(opened) => {
                let snapshot = opened.snapshot();
                (snapshot.analysis.clone(), snapshot.seq)
            }
            Err(StoreError::Busy { .. }) => {
                // Another process owns the store: read it as it is on disk, as of the last
                // transaction in its log.
                let seq = read_log(store, 0, usize::MAX)?.last().map_or(0, |t| t.seq);
                (Analysis::load(store)?, seq)
            }
            Err(err) => return Err(err.into()),
        };
    let all = analysis.views();
    let Some(def) = all.get(id) else {
        let known: Vec<&str> = all.list.iter().map(|d| d.id.as_str()).collect();
        let hint = if known.is_empty() {
            "the store defines no view; add an entity of type view".to_owned()
        } else {
            format!("the views are {}", known.join(", "))
        };
        return Err(
            stardust_core::Error::NotFound(format!("no view has the id '{id}'; {hint}")).into()
        );
    };
    let result = views::compute(&analysis, def, seq, MAX_BINDINGS);
    std::io::stdout().lock().write_all(&result.bytes)?;
    Ok(if result.error.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
