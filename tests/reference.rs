//! The reference (docs/reference/) cannot drift from the code: every list the code holds is
//! checked against it, and a failure says what to add where.
//!
//! - the command line: every command and subcommand `stardust --help` lists, with each of its
//!   flags and arguments, has a section in cli.md;
//! - `stardust.toml`: every key the parser takes (`stardust_core::config::keys`) is in
//!   configuration.md;
//! - the commands and MCP tools of the registry (core/src/service/contracts.rs) are generated
//!   into commands.md (`UPDATE_REFERENCE=1 cargo test --test reference` rewrites that part);
//! - every diagnostic code (with its severity) and every error code is a row of codes.md;
//! - every `stardust/...` LSP method the LSP front sends or answers is in lsp.md, and every
//!   `stardust://` resource the MCP front serves is in commands.md;
//!
//! and every link of README.md and docs/ resolves inside the repository (files and anchors),
//! and no user-facing page points outside it for the contract.
//!
//! To extend a check to a new list, add it here with a message naming the page and the table.

mod util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stardust_core::service::{Contract, Effect, Front, registry};

fn reference(page: &str) -> String {
    let path = util::repo().join("docs/reference").join(page);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fail_on(problems: Vec<String>) {
    assert!(problems.is_empty(), "the reference is out of date:\n- {}", problems.join("\n- "));
}

// The command line.

/// One command as `--help` shows it.
#[derive(Debug)]
struct CliCommand {
    /// `backup run`.
    path: String,
    flags: Vec<String>,
    /// Positional arguments, as their value names (`STORE`).
    args: Vec<String>,
}

/// Every command reachable from `stardust --help`, depth first, with its flags and arguments.
fn cli_commands() -> Vec<CliCommand> {
    let mut out = Vec::new();
    let mut stack: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = stack.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = util::stardust(&args);
        assert!(help.status.success(), "stardust {}: {}", args.join(" "), util::text(&help.stderr));
        let help = util::text(&help.stdout);
        let mut section = "";
        let (mut flags, mut positional) = (Vec::new(), Vec::new());
        for line in help.lines() {
            if !line.starts_with(' ') && line.ends_with(':') {
                section = line;
                continue;
            }
            let item = line.trim_start();
            // An item starts two spaces in; deeper lines continue its description.
            if line.len() - item.len() > 6 || item.is_empty() {
                continue;
            }
            let word = item.split_whitespace().next().unwrap_or("");
            match section {
                "Commands:" if word != "help" => {
                    let mut sub = path.clone();
                    sub.push(word.to_owned());
                    stack.push(sub);
                }
                "Arguments:" => {
                    positional.push(word.trim_matches(|c| "<>[].".contains(c)).to_owned())
                }
                "Options:" => {
                    let flag = item
                        .split([' ', ','])
                        .find(|w| w.starts_with("--"))
                        .unwrap_or("")
                        .to_owned();
                    if !flag.is_empty() && flag != "--help" && flag != "--version" {
                        flags.push(flag);
                    }
                }
                _ => {}
            }
        }
        if !path.is_empty() {
            out.push(CliCommand { path: path.join(" "), flags, args: positional });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The text of the section of `page` whose heading names `` `name` ``, up to the next heading
/// (a `#` line outside fenced code).
fn section<'p>(page: &'p str, name: &str) -> Option<&'p str> {
    let quoted = format!("`{name}`");
    let (mut at, mut start, mut fenced) = (0, None, false);
    for line in page.split_inclusive('\n') {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if line.starts_with('#') && !fenced {
            if let Some(start) = start {
                return Some(&page[start..at]);
            }
            if line.contains(&quoted) {
                start = Some(at + line.len());
            }
        }
        at += line.len();
    }
    start.map(|start| &page[start..])
}

#[test]
fn every_command_and_flag_of_the_command_line_is_in_the_reference() {
    let page = reference("cli.md");
    let commands = cli_commands();
    assert!(commands.len() >= 20, "the help lists too few commands: {commands:?}");
    let mut problems = Vec::new();
    for command in &commands {
        let name = format!("stardust {}", command.path);
        let Some(text) = section(&page, &name) else {
            problems.push(format!(
                "docs/reference/cli.md has no section for `{name}`: add the heading  ### `{name}`  \
                 saying what it does, with its arguments {:?} and flags {:?}",
                command.args, command.flags
            ));
            continue;
        };
        for flag in &command.flags {
            if !text.contains(&format!("`{flag}")) {
                problems.push(format!(
                    "docs/reference/cli.md, section `{name}`: the flag `{flag}` is not described; \
                     add it to the section's list of flags"
                ));
            }
        }
        for arg in &command.args {
            if !text.contains(arg.as_str()) {
                problems.push(format!(
                    "docs/reference/cli.md, section `{name}`: the argument {arg} is not described"
                ));
            }
        }
    }
    fail_on(problems);
}

// Configuration.

#[test]
fn every_configuration_key_is_in_the_reference() {
    let page = reference("configuration.md");
    let keys = stardust_core::config::keys();
    assert!(keys.len() > 20, "{keys:?}");
    let mut problems = Vec::new();
    for key in &keys {
        let documented = if key.contains('.') {
            page.contains(&format!("`{key}`"))
        } else {
            page.contains(&format!("`[{key}]`"))
                || page.contains(&format!("`[[{key}]]`"))
                || page.contains(&format!("`[{key}.{}]`", stardust_core::config::KEY_NAME))
        };
        if !documented {
            let table = key.split('.').next().unwrap_or(key);
            problems.push(if key.contains('.') {
                format!(
                    "docs/reference/configuration.md: the key `{key}` is not described; add a \
                     row  | `{key}` | type | default | meaning |  to the table of `[{table}]`"
                )
            } else {
                format!(
                    "docs/reference/configuration.md: the table `[{key}]` has no section; add \
                     the heading  ## `[{key}]`  with a row for each of its keys"
                )
            });
        }
    }
    fail_on(problems);
}

// Diagnostic and error codes.

#[test]
fn every_diagnostic_and_error_code_is_in_the_reference() {
    let page = reference("codes.md");
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `")).collect();
    let row = |code: &str| rows.iter().find(|r| r.starts_with(&format!("| `{code}` |"))).copied();
    let mut problems = Vec::new();
    for code in stardust_core::diagnostics::DiagnosticCode::ALL {
        let severity = code.severity().as_str();
        match row(code.as_str()) {
            None => problems.push(format!(
                "docs/reference/codes.md: the diagnostic code `{code}` has no row; add \
                 the row  | `{code}` | {severity} | when it is reported |  to the table of diagnostic codes"
            )),
            Some(r) if !r.contains(&format!("| {severity} |")) => problems.push(format!(
                "docs/reference/codes.md: the row of `{code}` does not say its severity ({severity})"
            )),
            Some(_) => {}
        }
    }
    // No row for a code that does not exist.
    let known: BTreeSet<&str> = stardust_core::diagnostics::DiagnosticCode::ALL
        .iter()
        .map(|c| c.as_str())
        .chain(stardust_core::Code::ALL.iter().map(|c| c.as_str()))
        .collect();
    for r in &rows {
        let code = r.trim_start_matches("| `").split('`').next().unwrap_or("");
        if !known.contains(code) {
            problems.push(format!(
                "docs/reference/codes.md: `{code}` is not a diagnostic or error code of the code; \
                 remove its row"
            ));
        }
    }
    for code in stardust_core::Code::ALL {
        if row(code.as_str()).is_none() {
            problems.push(format!(
                "docs/reference/codes.md: the error code `{code}` has no row; add \
                 the row  | `{code}` | what it means and what to do |  to the table of error codes"
            ));
        }
    }
    fail_on(problems);
}

// Commands and tools: generated.

const BEGIN: &str = "<!-- generated from the registry (core/src/service/contracts.rs): do not edit; \
                     UPDATE_REFERENCE=1 cargo test --test reference rewrites it -->\n";
const END: &str = "<!-- end of the generated part -->\n";

fn fronts(contract: &Contract) -> String {
    let names: Vec<&str> = contract
        .fronts
        .iter()
        .map(|f| match f {
            Front::Lsp | Front::Sdk => "editors and SDKs (LSP)",
            Front::Mcp => "agents (MCP)",
            Front::Cli => "the command line",
        })
        .collect();
    names.join(", ")
}

/// A schema's type in a few words.
fn type_of(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        let types: Vec<String> = any.iter().map(type_of).collect();
        return types.join(" or ");
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => match schema.get("items") {
            Some(items) => format!("array of {}", type_of(items)),
            None => "array".to_owned(),
        },
        Some(t) => t.to_owned(),
        None => "any".to_owned(),
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The generated part of commands.md: one section per contract, in registry order.
fn commands_section() -> String {
    let mut out = String::new();
    for contract in registry() {
        out.push_str(&format!("\n### `{}`\n\n", contract.name));
        let effect = match contract.effect {
            Effect::Read => "reads only",
            Effect::Mutation => "proposes a change: answers with a preview",
            Effect::Preview => "acts on a preview",
            Effect::Operation => "runs at once (no preview)",
        };
        out.push_str(&format!("{}. *{effect}*. For {}", contract.title, fronts(contract)));
        if contract.shown_in(Front::Mcp) {
            out.push_str(&format!("; MCP tool `{}`", stardust_mcp::tool_name(contract.name)));
        }
        out.push_str(".\n");
        if let Some(description) = contract.description {
            out.push_str(&format!("\n{description}\n"));
        }
        let properties = contract.arguments.get("properties").and_then(Value::as_object);
        let required: BTreeSet<&str> = contract
            .arguments
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match properties.filter(|p| !p.is_empty()) {
            None => out.push_str("\nNo arguments: `{}`.\n"),
            Some(properties) => {
                out.push_str("\n| argument | type | required | meaning |\n|---|---|---|---|\n");
                for (name, schema) in properties {
                    let meaning = schema.get("description").and_then(Value::as_str).unwrap_or("");
                    let default = schema
                        .get("default")
                        .map(|d| format!(" (default `{d}`)"))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "| `{name}` | {} | {} | {}{default} |\n",
                        cell(&type_of(schema)),
                        if required.contains(name.as_str()) { "yes" } else { "no" },
                        cell(meaning)
                    ));
                }
            }
        }
        let answers: Vec<String> = contract
            .result
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, _)| format!("`{k}`"))
            .collect();
        if !answers.is_empty() {
            out.push_str(&format!("\nAnswers an object with {}.\n", answers.join(", ")));
        }
    }
    out
}

#[test]
fn the_commands_and_tools_of_the_registry_are_in_the_reference() {
    let path = util::repo().join("docs/reference/commands.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        panic!("docs/reference/commands.md lost its markers:\n{BEGIN}{END}");
    };
    let generated = commands_section();
    let current = &page[begin + BEGIN.len()..end];
    if current == generated {
        return;
    }
    if std::env::var_os("UPDATE_REFERENCE").is_some() {
        let updated =
            format!("{}{BEGIN}{generated}{END}{}", &page[..begin], &page[end + END.len()..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    let listed = |text: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("### `"))
            .map(|l| l.trim_end_matches('`').to_owned())
            .collect()
    };
    let (want, have) = (listed(&generated), listed(current));
    let added: Vec<&String> = want.difference(&have).collect();
    let removed: Vec<&String> = have.difference(&want).collect();
    panic!(
        "docs/reference/commands.md is not what the registry (core/src/service/contracts.rs) \
         says (new: {added:?}; gone: {removed:?}; or a title, description or argument changed): \
         run `UPDATE_REFERENCE=1 cargo test --test reference` and review the diff"
    );
}

/// Every string literal starting with `prefix` in the Rust files of `dir` (not format strings).
fn literals(dir: &Path, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let quoted = format!("\"{prefix}");
                for (at, _) in text.match_indices(&quoted) {
                    let rest = &text[at + 1..];
                    let literal = &rest[..rest.find('"').unwrap_or(rest.len())];
                    // A `format!` string builds something else (a progress token, say).
                    if !literal.contains('{') {
                        out.insert(literal.to_owned());
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_lsp_extension_and_mcp_resource_is_in_the_reference() {
    let mut problems = Vec::new();
    let lsp = reference("lsp.md");
    let methods = literals(&util::repo().join("lsp-front/src"), "stardust/");
    assert!(methods.contains("stardust/entitiesChanged"), "{methods:?}");
    for method in methods {
        if !lsp.contains(&format!("`{method}`")) {
            problems.push(format!(
                "docs/reference/lsp.md: the method `{method}` is not described; add it to the \
                 section on Stardust's own methods and notifications"
            ));
        }
    }
    let commands = reference("commands.md");
    let resources = literals(&util::repo().join("mcp-front/src"), "stardust://");
    assert!(resources.contains("stardust://views/"), "{resources:?}");
    for resource in resources {
        if !commands.contains(&format!("`{resource}")) {
            problems.push(format!(
                "docs/reference/commands.md: the MCP resource `{resource}...` is not described; \
                 add it to the section on resources"
            ));
        }
    }
    fail_on(problems);
}

// Links.

/// The markdown files a user reads: README.md, docs/ and the examples' READMEs.
fn markdown_files() -> Vec<PathBuf> {
    let repo = util::repo();
    let mut out = vec![repo.join("README.md")];
    let mut stack = vec![repo.join("docs"), repo.join("examples")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("node_modules") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The text of `markdown` outside fenced code blocks and code spans.
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            for (i, part) in line.split('`').enumerate() {
                if i % 2 == 0 {
                    out.push_str(part);
                }
            }
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchors of a markdown file's headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 1;
        while out.contains(&unique) {
            unique = format!("{slug}-{n}");
            n += 1;
        }
        out.insert(unique);
    }
    out
}

#[test]
fn every_link_of_the_documentation_resolves_inside_the_repository() {
    let repo = util::repo().canonicalize().unwrap();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(&repo).unwrap_or(&file).display().to_string();
        let prose = prose(&text);
        for (at, _) in prose.match_indices("](") {
            let rest = &prose[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let resolved =
                if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let Ok(resolved) = resolved.canonicalize() else {
                problems.push(format!("{shown}: the link `{target}` names no file"));
                continue;
            };
            if !resolved.starts_with(&repo) {
                problems.push(format!("{shown}: the link `{target}` leads out of the repository"));
                continue;
            }
            if !anchor.is_empty() && resolved.extension().is_some_and(|e| e == "md") {
                let target_text = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&target_text).contains(anchor) {
                    problems.push(format!(
                        "{shown}: the link `{target}` names no heading of {}",
                        resolved.strip_prefix(&repo).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(checked > 30, "only {checked} links found: is the link reader broken?");
    fail_on(problems);
}

/// The pages users read never send them outside the repository for the contract.
#[test]
fn user_documentation_points_to_the_reference_not_outside() {
    let mut problems = Vec::new();
    for file in markdown_files() {
        let shown = file.strip_prefix(util::repo()).unwrap_or(&file).display().to_string();
        // Developers' records may cite the internal contract's sections.
        if ["docs/DECISIONS.md", "docs/BENCHMARKS.md"].contains(&shown.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for needle in ["SPEC.md", "SPEC §", "shared folder", "shared/"] {
            if shown == "docs/ARCHITECTURE.md" && needle == "SPEC §" {
                continue;
            }
            if let Some(line) = text.lines().position(|l| l.contains(needle)) {
                problems.push(format!(
                    "{shown}:{}: `{needle}`: point to the reference (docs/reference/) instead",
                    line + 1
                ));
            }
        }
    }
    fail_on(problems);
}

/// The check's own rules: a section ends at the next heading; anchors follow GitHub's slugs.
#[test]
fn the_checks_read_markdown_as_github_does() {
    let page = "# A\n\n### `stardust log`\n\n`--since` x\n\n### `stardust logs`\n\ny\n";
    assert_eq!(section(page, "stardust log"), Some("\n`--since` x\n\n"));
    let anchors =
        anchors("# `[store]` keys\n## Team stores on PostgreSQL\n## A\n## A\n```\n# no\n```\n");
    let anchors: Vec<&str> = anchors.iter().map(String::as_str).collect();
    assert_eq!(anchors, ["a", "a-1", "store-keys", "team-stores-on-postgresql"]);
    assert_eq!(prose("a `[x](y)` b\n```\n[z](w)\n```\n[k](l)\n"), "a  b\n[k](l)\n");
}
