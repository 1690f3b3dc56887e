//! `stardust eval STORE 'EXPR'`: evaluate an expression (SPEC §8) on the store as it is on
//! disk; `--entity ID` gives a context entity whose fields bare names read.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use stardust_core::analysis::Analysis;
use stardust_core::query;

use crate::OutputFormat;

pub(crate) fn run(
    store: &Path,
    text: &str,
    entity: Option<&str>,
    format: OutputFormat,
) -> anyhow::Result<ExitCode> {
    let text = super::query::read_argument(text)?;
    let analysis = Analysis::load(store)?;
    let value = query::evaluate(&analysis, &text, entity)?;
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Text => writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?,
        OutputFormat::Json => writeln!(out, "{}", json!({ "value": value }))?,
    }
    Ok(ExitCode::SUCCESS)
}
