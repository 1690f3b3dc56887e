//! One module per subcommand; each returns the process exit code.

pub(crate) mod check;
pub(crate) mod eval;
pub(crate) mod fmt;
pub(crate) mod log;
pub(crate) mod lsp;
pub(crate) mod mount;
pub(crate) mod query;

use std::process::ExitCode;

/// Print an error as `error[<code>]: message` on stderr and choose the exit code: 2 for usage
/// and configuration errors, 1 otherwise.
pub(crate) fn report(err: &anyhow::Error) -> ExitCode {
    let code = match err.downcast_ref::<stardust_core::store::StoreError>() {
        Some(e) => e.code(),
        None => err.downcast_ref::<stardust_core::Error>().map_or("internal", |e| e.code()),
    };
    eprintln!("error[{code}]: {err:#}");
    match code {
        "config-invalid" | "invalid-arguments" | "outside-store" => ExitCode::from(2),
        _ => ExitCode::from(1),
    }
}
