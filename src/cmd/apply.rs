//! `stardust apply STORE PATCH-FILE`: preview a patch (SPEC §9) and, with `--yes`, commit it
//! through the store's save authority, as an SDK client named `cli` would.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};
use stardust_core::service::{Front, Service, Session};
use stardust_core::store::{OpenOptions, Store};
use stardust_daemon::Hello;
use stardust_daemon::attach::{self, Client};

use crate::OutputFormat;

pub(crate) fn run(
    store: &Path,
    patch: &Path,
    yes: bool,
    format: OutputFormat,
) -> anyhow::Result<ExitCode> {
    let text = if patch.as_os_str() == "-" {
        super::query::read_argument("-")?
    } else {
        std::fs::read_to_string(patch).map_err(|e| {
            stardust_core::Error::InvalidArguments(format!(
                "cannot read the patch {}: {e}; give the path of a patch file or - for standard input",
                patch.display()
            ))
        })?
    };
    let mut core = Core::open(store)?;
    let args = json!({ "document": text });
    let confirmed =
        match preview_or_confirm(&mut core, "stardust.patch.apply", args, "patch", yes, format)? {
            Outcome::Previewed(code) => return Ok(code),
            Outcome::Confirmed(confirmed) => confirmed,
        };
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Json => writeln!(out, "{confirmed}")?,
        OutputFormat::Text => {
            writeln!(out, "committed as seq {}", confirmed["seq"])?;
            for (name, id) in confirmed["resolved"].as_object().into_iter().flatten() {
                writeln!(out, "{name} -> {}", id.as_str().unwrap_or_default())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What [`preview_or_confirm`] did.
pub(crate) enum Outcome {
    /// Printed the preview: the exit code says whether it could be committed.
    Previewed(ExitCode),
    /// Confirmed it: the confirmation.
    Confirmed(Value),
}

/// Run the mutation `command` (a preview, as every mutation is); without `yes` print the
/// preview (`what` names it in text), with it confirm the preview through the save authority.
pub(crate) fn preview_or_confirm(
    core: &mut Core,
    command: &str,
    args: Value,
    what: &str,
    yes: bool,
    format: OutputFormat,
) -> anyhow::Result<Outcome> {
    let preview = core.call(command, args)?;
    if !yes {
        let mut out = std::io::stdout().lock();
        match format {
            OutputFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&preview)?)?,
            OutputFormat::Text => write!(out, "{}", preview_text(&preview, what))?,
        }
        let code =
            if preview["committable"] == true { ExitCode::SUCCESS } else { ExitCode::from(1) };
        return Ok(Outcome::Previewed(code));
    }
    let confirmed =
        core.call("stardust.preview.confirm", json!({ "previewId": preview["previewId"] }))?;
    Ok(Outcome::Confirmed(confirmed))
}

/// Where the commands run: through the store's running core when there is one (so this never
/// races it), else on the store opened here.
pub(crate) enum Core {
    Attached(Client),
    // Boxed: a service and a session are much larger than a client.
    Local(Box<(Service, Session)>),
}

impl Core {
    pub(crate) fn open(store: &Path) -> anyhow::Result<Core> {
        if let Ok(root) = store.canonicalize()
            && attach::running(&root)
        {
            let stream = attach::connect(&root, &Hello::new(Front::Cli, "cli"), None)?;
            return Ok(Core::Attached(Client::new(stream)?));
        }
        // A one-shot command: edits made behind the store's back are taken in when it opens.
        let store = Store::open(store, OpenOptions { watch: false, ..OpenOptions::default() })?;
        let service = Service::new(store);
        let session = service.open_session(Front::Cli, "cli");
        Ok(Core::Local(Box::new((service, session))))
    }

    pub(crate) fn call(&mut self, command: &str, arguments: Value) -> anyhow::Result<Value> {
        match self {
            Core::Attached(client) => client.call(command, arguments),
            Core::Local(local) => Ok(local.0.execute(&local.1, command, arguments)?),
        }
    }
}

/// The preview for people: each document's diff, the resolved names, the diagnostics delta,
/// and whether it can be committed.
pub(crate) fn preview_text(preview: &Value, what: &str) -> String {
    let mut out = String::new();
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    for doc in list(&preview["documents"]) {
        out.push_str(doc["diff"].as_str().unwrap_or_default());
    }
    if preview["documents"].as_array().is_none_or(Vec::is_empty) {
        out.push_str(&format!("the {what} changes nothing\n"));
    }
    for (name, id) in preview["resolved"].as_object().into_iter().flatten() {
        out.push_str(&format!("resolved {name} -> {}\n", id.as_str().unwrap_or_default()));
    }
    for (label, key) in [("new", "new"), ("resolved", "resolved")] {
        for d in list(&preview["diagnostics"][key]) {
            out.push_str(&format!(
                "{label}: {}:{}:{}: {}[{}] {}\n",
                d["path"].as_str().unwrap_or_default(),
                d["range"]["line"],
                d["range"]["column"],
                d["severity"].as_str().unwrap_or_default(),
                d["code"].as_str().unwrap_or_default(),
                d["message"].as_str().unwrap_or_default(),
            ));
        }
    }
    if preview["committable"] == true {
        out.push_str("nothing written; run again with --yes to commit\n");
    } else {
        out.push_str(&format!("nothing written; the save authority would refuse this {what}:\n"));
        for reason in list(&preview["reasons"]) {
            out.push_str(&format!("  {}\n", reason.as_str().unwrap_or_default()));
        }
    }
    out
}
