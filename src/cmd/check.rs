//! `stardust check STORE`: every diagnostic of a store, for people or (`--format json`) scripts.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use stardust_core::analysis::{Analysis, Document};
use stardust_core::answers;
use stardust_core::diagnostics::Severity;
use stardust_core::init;
use stardust_core::text::{Encoding, Span};

use crate::OutputFormat;

pub(crate) fn run(store: &Path, format: OutputFormat) -> anyhow::Result<ExitCode> {
    let analysis = Analysis::load(store)?;
    // What the configuration could not apply is not a document's diagnostic: said on stderr,
    // and it does not fail the check.
    for warning in &analysis.config().warnings {
        eprintln!("warning: {warning}");
    }
    let all = analysis.all_diagnostics();
    let (mut errors, mut warnings) = (0usize, 0usize);
    for (_, diags) in &all {
        for d in diags {
            match d.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
            }
        }
    }
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Text => {
            for (path, diags) in &all {
                let doc = analysis.document(path).expect("diagnosed documents exist");
                for d in diags {
                    let (line, col) = line_col(doc, d.span);
                    writeln!(
                        out,
                        "{path}:{line}:{col}: {}[{}] {}",
                        d.severity.as_str(),
                        d.code,
                        d.message
                    )?;
                    for r in &d.related {
                        if let Some(other) = analysis.document(&r.path) {
                            let (line, col) = line_col(other, r.span);
                            writeln!(out, "  {}:{line}:{col}: note: {}", r.path, r.message)?;
                        }
                    }
                }
            }
            writeln!(
                out,
                "{} in {} ({}): {}, {}",
                if errors == 0 { "ok" } else { "failed" },
                plural(analysis.document_count(), "document"),
                plural(analysis.entity_count(), "entity"),
                plural(errors, "error"),
                plural(warnings, "warning"),
            )?;
            if let Some(hint) = init::check_hint(store, errors + warnings) {
                writeln!(out, "{hint}")?;
            }
        }
        OutputFormat::Json => {
            let analysis = &analysis;
            let diagnostics: Vec<_> = all
                .iter()
                .flat_map(|(path, diags)| {
                    let doc = analysis.document(path).expect("diagnosed documents exist");
                    diags.iter().map(move |d| answers::diagnostic_json(analysis, doc, d))
                })
                .collect();
            let report = json!({
                "diagnostics": diagnostics,
                "summary": {
                    "documents": analysis.document_count(),
                    "entities": analysis.entity_count(),
                    "errors": errors,
                    "warnings": warnings,
                },
            });
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
            if let Some(hint) = init::check_hint(store, errors + warnings) {
                eprintln!("{hint}");
            }
        }
    }
    // The process ends here: freeing a large store's analysis would only delay the exit.
    std::mem::forget(analysis);
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// 1-based line and column, the column counted in characters.
fn line_col(doc: &Document, span: Span) -> (u32, u32) {
    let pos = doc.line_index.position(&doc.text, span.start, Encoding::Utf32);
    (pos.line + 1, pos.column + 1)
}

fn plural(n: usize, word: &str) -> String {
    match (n, word.strip_suffix('y')) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}
