//! The stand-alone supervisor of one language server (see `stardust_servers::supervisor`).

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(stardust_servers::supervisor::main(&[], &args));
}
