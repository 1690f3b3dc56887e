//! `stardust query STORE 'QUERY'`: run a query (SPEC §8) on the store as it is on disk and
//! print one page of rows, aligned for people (`--format table`, the default) or in the
//! result shape of SPEC §8 (`--format json`); `--explain` prints how the query ran instead.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::ValueEnum;
use serde_json::Value;
use stardust_core::analysis::Analysis;
use stardust_core::query::{self, Query, QueryOptions, QueryResult};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Table,
    Json,
}

/// Table cells longer than this are cut (the JSON output is never cut).
const MAX_CELL: usize = 80;

pub(crate) fn run(
    store: &Path,
    text: &str,
    format: Format,
    explain: bool,
) -> anyhow::Result<ExitCode> {
    let text = read_argument(text)?;
    // The query is checked before the store is read: a typo fails fast.
    let parsed = Query::parse(&text)?;
    let analysis = Analysis::load(store)?;
    let options = QueryOptions::default();
    let mut out = std::io::stdout().lock();
    if explain {
        let explained = query::explain(&analysis, &parsed, &options);
        match format {
            Format::Table => write!(out, "{}", explained.to_text())?,
            Format::Json => writeln!(out, "{}", explained.to_json())?,
        }
        return Ok(if explained.result.is_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    let result = query::execute(&analysis, &parsed, &options)?;
    match format {
        Format::Table => write!(out, "{}", table(&result))?,
        Format::Json => writeln!(out, "{}", result.to_json())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `-` reads the text from standard input, for queries too long for a command line.
pub(crate) fn read_argument(text: &str) -> anyhow::Result<String> {
    if text != "-" {
        return Ok(text.to_owned());
    }
    let mut buffer = String::new();
    std::io::stdin().read_to_string(&mut buffer)?;
    Ok(buffer)
}

/// The rows under their column names, columns padded to their widest cell, numbers to the
/// right; then a line saying which rows these are.
fn table(result: &QueryResult) -> String {
    let cells: Vec<Vec<String>> =
        result.rows.iter().map(|row| row.iter().map(cell).collect()).collect();
    let numeric: Vec<bool> = (0..result.columns.len())
        .map(|c| {
            !result.rows.is_empty()
                && result.rows.iter().all(|r| r.get(c).is_some_and(Value::is_number))
        })
        .collect();
    let widths: Vec<usize> = result
        .columns
        .iter()
        .enumerate()
        .map(|(c, name)| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .chain([name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String], align_numbers: bool| {
        let last = values.len().saturating_sub(1);
        let mut out = String::new();
        for (c, value) in values.iter().enumerate() {
            let pad = widths[c].saturating_sub(value.chars().count());
            if align_numbers && numeric[c] {
                out.push_str(&" ".repeat(pad));
                out.push_str(value);
            } else {
                out.push_str(value);
                if c < last {
                    out.push_str(&" ".repeat(pad));
                }
            }
            if c < last {
                out.push_str("  ");
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(&result.columns, false);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&rule, false));
    for row in &cells {
        out.push_str(&line(row, true));
    }
    let shown = result.rows.len() as u64;
    let summary = if shown == 0 {
        format!("no rows of {}", result.total)
    } else {
        let first = result.next_offset.map_or(result.total - shown, |next| next - shown) + 1;
        format!("rows {first}-{} of {}", first + shown - 1, result.total)
    };
    out.push_str(&summary);
    if let Some(next) = result.next_offset {
        out.push_str(&format!("; the next page starts at offset {next}"));
    }
    if let Some(cap) = result.limit_capped {
        out.push_str(&format!(" (limit lowered to {cap}, the most one page holds)"));
    }
    out.push('\n');
    out
}

/// A value for a table cell: strings bare, anything else as compact JSON, one line, cut.
fn cell(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s
            .chars()
            .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
            .collect(),
        other => other.to_string(),
    };
    if text.chars().count() > MAX_CELL {
        text.chars().take(MAX_CELL - 1).collect::<String>() + "…"
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_columns_and_say_which_rows_they_show() {
        let result = QueryResult {
            columns: vec!["?b".into(), "?pages".into(), "?title".into()],
            rows: vec![
                vec![json!("book/dune"), json!(412), json!("Dune")],
                vec![json!("book/a-very-long-id"), json!(8), json!("Zoë\nand more")],
            ],
            total: 5,
            next_offset: Some(4),
            limit_capped: None,
        };
        expect_test::expect![[r#"
            ?b                   ?pages  ?title
            -------------------  ------  -------------
            book/dune               412  Dune
            book/a-very-long-id       8  Zoë\nand more
            rows 3-4 of 5; the next page starts at offset 4
        "#]]
        .assert_eq(&table(&result));
        let empty = QueryResult {
            columns: vec!["?b".into()],
            rows: vec![],
            total: 0,
            next_offset: None,
            limit_capped: Some(1000),
        };
        expect_test::expect![[r#"
            ?b
            --
            no rows of 0 (limit lowered to 1000, the most one page holds)
        "#]]
        .assert_eq(&table(&empty));
    }
}
