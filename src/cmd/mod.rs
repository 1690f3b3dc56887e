//! One module per subcommand; each returns the process exit code.

pub(crate) mod apply;
pub(crate) mod backup;
pub(crate) mod check;
pub(crate) mod db;
pub(crate) mod eval;
pub(crate) mod fmt;
pub(crate) mod history;
pub(crate) mod init;
pub(crate) mod log;
pub(crate) mod lsp;
pub(crate) mod mcp;
pub(crate) mod mount;
pub(crate) mod query;
pub(crate) mod sdk;
pub(crate) mod serve;
pub(crate) mod trust;
pub(crate) mod view;

use std::process::ExitCode;

/// Print an error as `error[<code>]: message` on stderr and choose the exit code: 2 for usage
/// and configuration errors, 1 otherwise.
pub(crate) fn report(err: &anyhow::Error) -> ExitCode {
    use stardust_core::Code;
    let code = if let Some(e) = err.downcast_ref::<stardust_core::store::StoreError>() {
        e.code()
    } else if let Some(e) = err.downcast_ref::<stardust_core::service::CommandError>() {
        e.code()
    } else if let Some(e) = err.downcast_ref::<stardust_core::backup::BackupError>() {
        e.code()
    } else if let Some(e) = err.downcast_ref::<stardust_core::init::InitError>() {
        e.code()
    } else if let Some(e) = err.downcast_ref::<stardust_daemon::attach::RemoteError>() {
        e.code
    } else {
        err.downcast_ref::<stardust_core::Error>().map_or(Code::Internal, |e| e.code())
    };
    eprintln!("{}", stardust_core::error::error_line(code, &format!("{err:#}")));
    if code.is_usage() { ExitCode::from(2) } else { ExitCode::from(1) }
}

/// How long a core started in the background by an attacher waits with no client before it
/// exits: `STARDUST_IDLE_EXIT` seconds, else five minutes.
pub(crate) fn idle_exit() -> std::time::Duration {
    let seconds = std::env::var("STARDUST_IDLE_EXIT").ok().and_then(|s| s.parse().ok());
    std::time::Duration::from_secs(seconds.unwrap_or(300))
}

/// Serve standard input and output by the core of the store at `root` (canonical), starting
/// one in the background when none runs: passed to it, or relayed when they cannot be. Returns
/// once the core ends the session. `Ok(false)` when no core can run there (another kind of
/// process owns the store): the caller then serves the store from its own process.
pub(crate) fn attach_stdio(
    root: &std::path::Path,
    hello: &stardust_daemon::Hello,
) -> anyhow::Result<bool> {
    let exe = std::env::current_exe()?;
    let start = stardust_daemon::attach::Autostart { exe: &exe, idle_exit: idle_exit() };
    match stardust_daemon::attach::connect_stdio(root, hello, Some(start)) {
        Ok(attached) => {
            attached.run()?;
            Ok(true)
        }
        Err(err) => {
            tracing::warn!("{err:#}; serving the store from this process");
            Ok(false)
        }
    }
}

/// The language servers of this process's core (SPEC §17): supervised by this executable
/// re-run as `stardust __supervise`.
pub(crate) fn code_host() -> anyhow::Result<std::sync::Arc<dyn stardust_core::codefiles::CodeHost>>
{
    let program = stardust_servers::SupervisorProgram::stardust()
        .map_err(|err| anyhow::anyhow!("cannot find the stardust executable: {err}"))?;
    Ok(std::sync::Arc::new(stardust_servers::Host::new(program)))
}
