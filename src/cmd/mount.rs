//! `stardust mount STORE DIR`: show the store at DIR in the foreground until SIGINT or
//! SIGTERM, then unmount and exit 0.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use nix::sys::signal::{SigSet, Signal};
use stardust_core::service::Service;
use stardust_core::store::{OpenOptions, Store};
use stardust_fuse::MountOptions;

pub(crate) fn run(store: &Path, dir: &Path, options: MountOptions) -> anyhow::Result<ExitCode> {
    // Block the stop signals before any thread starts: every thread inherits the mask, so the
    // signals wait for this thread's `sigwait` instead of killing the process mid-commit.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block()?;

    // A core of its own: the mount's saves of code files ask the language servers it
    // supervises (SPEC §18).
    let service = Arc::new(
        Service::new(Store::open(store, OpenOptions::default())?)
            .with_code_host(super::code_host()?),
    );
    service.install_code_saves();
    let store = service.store_arc();
    // A mount that ends from outside (`fusermount3 -u`) stops this process the same way.
    let on_end = || {
        let _ = nix::sys::signal::kill(nix::unistd::getpid(), Signal::SIGTERM);
    };
    let mount = stardust_fuse::mount(store.clone(), dir, &options, on_end).map_err(|e| {
        // A folder that is missing or inside the store is the caller's to fix.
        match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidInput => {
                anyhow::Error::from(stardust_core::Error::InvalidArguments(e.to_string()))
            }
            _ => anyhow::Error::from(e).context(format!("cannot mount at {}", dir.display())),
        }
    })?;
    tracing::info!(
        "mounted {} at {}; stop with Ctrl-C or SIGTERM",
        store.root().display(),
        mount.dir().display()
    );
    let signal = signals.wait()?;
    tracing::info!("{signal}: unmounting {}", mount.dir().display());
    mount.unmount()?;
    service.shutdown_code_servers();
    Ok(ExitCode::SUCCESS)
}
