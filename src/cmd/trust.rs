//! `stardust trust [--revoke] STORE`: allow (or stop allowing) the language servers of a
//! store's `stardust.toml` to run (SPEC §17). The rule and the file are the core's
//! (`codefiles::trust_store`, `revoke_store`); this prints what was recorded.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use stardust_core::codefiles;

pub(crate) fn run(store: &Path, revoke: bool) -> anyhow::Result<ExitCode> {
    let Some(dir) = codefiles::user_config_dir(|name| std::env::var_os(name)) else {
        return Err(stardust_core::Error::InvalidArguments(
            "cannot find your configuration folder: set XDG_CONFIG_HOME or HOME to an absolute \
             path"
                .to_owned(),
        )
        .into());
    };
    let mut out = std::io::stdout().lock();
    if revoke {
        let (store, revoked) = codefiles::revoke_store(store, &dir)?;
        if revoked.is_empty() {
            writeln!(out, "{} was not trusted; nothing to revoke", store.display())?;
        } else {
            writeln!(
                out,
                "revoked trust in {} of {}: {}",
                servers(revoked.len()),
                store.display(),
                revoked.join(", ")
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = codefiles::trust_store(store, &dir)?;
    if report.servers.is_empty() {
        writeln!(
            out,
            "nothing to trust: {}/stardust.toml has no [servers.<name>] tables",
            report.store.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "trusted {} of {} (recorded in {}):",
        servers(report.servers.len()),
        report.store.display(),
        report.file.display()
    )?;
    for server in &report.servers {
        let command = std::iter::once(&server.command).chain(&server.args);
        let command: Vec<&str> = command.map(String::as_str).collect();
        let note = if server.shadowed {
            format!(" (not used: your servers.toml defines {})", server.name)
        } else {
            String::new()
        };
        writeln!(out, "  {}: {}{note}", server.name, command.join(" "))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn servers(n: usize) -> String {
    if n == 1 { "1 language server".to_owned() } else { format!("{n} language servers") }
}
