//! `stardust init [DIR]` (SPEC §27): turn an existing folder into a store. The core decides
//! what to write (`stardust_core::init`); this prints what it did and what to paste where.

use std::path::Path;
use std::process::ExitCode;

pub(crate) fn run(dir: &Path) -> anyhow::Result<ExitCode> {
    let path_var = std::env::var_os("PATH");
    let report = stardust_core::init::init(dir, path_var.as_deref())?;
    print!("{}", stardust_core::init::instructions(&report));
    Ok(ExitCode::SUCCESS)
}
